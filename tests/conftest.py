"""Shared fixtures: the reference data folder, a fake OpenAI-compatible server, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inprocess import run_in_process
from turnbench.testing.fake_server import FakeServer

REPO = Path(__file__).resolve().parent.parent
CLI_IN_CHILD = os.environ.get("TURNBENCH_TESTS_CLI_PROCESS") == "1"


def shared_data_dir() -> Path:
    configured = os.environ.get("TURNBENCH_DATA_DIR")
    path = Path(configured) if configured else REPO.parent / "shared" / "data"
    if not (path / "mt_bench" / "question.jsonl").is_file():
        pytest.exit(f"benchmark data not found at {path}; set TURNBENCH_DATA_DIR", returncode=2)
    return path.resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return shared_data_dir()


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer().start()
    try:
        yield server
    finally:
        server.stop()


def cli_env(data_dir: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment: our data, a private cache, no real keys or endpoints."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TURNBENCH_", "ANTHROPIC_", "AZURE_OPENAI_"))
    }
    env["TURNBENCH_DATA_DIR"] = str(data_dir)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg-data")
    env["COLUMNS"] = "120"
    env.update(extra)
    return env


def run_cli(
    args: list[str],
    env: dict[str, str],
    timeout: float = 300,
    cwd: Path | None = None,
    *,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The real CLI, `python -m turnbench ARGS` with environment `env` in `cwd` (on its
    import path, as it is for a user). It runs in this process (tests/inprocess.py: the
    same entry function, environment, streams and exit status, without a child's 0.6-1.5 s
    start-up). A real child process runs it with `process=True` (for what only a process
    shows: signals, kills, start-up, exit) and for a call from another thread or from
    inside a running event loop (Playwright's sync API runs one); `timeout` bounds only a
    child process. TURNBENCH_TESTS_CLI_PROCESS=1 in the test process's environment runs every
    command as a child, as before (to check that running in-process hides nothing)."""
    if process or CLI_IN_CHILD or not _in_process_possible():
        return run_cli_process(args, env, timeout=timeout, cwd=cwd)
    return run_in_process(args, env, cwd=cwd)


def _in_process_possible() -> bool:
    """The CLI installs signal handlers (main thread only) and calls asyncio.run (never
    inside a running loop)."""
    import asyncio

    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def run_cli_process(
    args: list[str],
    env: dict[str, str],
    timeout: float = 300,
    cwd: Path | None = None,
    memory_cap: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, as a user would run it (`python -m turnbench`, so
    the working directory `cwd` is on its import path, as it is for a user). `memory_cap`:
    the child's address space in bytes, so that an unbounded read fails with MemoryError
    instead of filling the machine."""

    def cap_memory() -> None:
        import resource

        assert memory_cap is not None
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))

    return subprocess.run(
        [sys.executable, "-m", "turnbench", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=cap_memory if memory_cap is not None else None,
        check=False,
    )


@pytest.fixture
def env(data_dir: Path, tmp_path: Path) -> dict[str, str]:
    return cli_env(data_dir, tmp_path)


@pytest.fixture(scope="session")
def results_schema() -> dict:
    import json

    return json.loads((REPO / "docs" / "results.schema.json").read_text("utf-8"))


@pytest.fixture(autouse=True)
def every_results_json_matches_the_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every results.json a test's run writes must match docs/results.schema.json."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    import json

    import jsonschema

    folder = request.getfixturevalue("tmp_path")  # set up first, so torn down after this
    schema = request.getfixturevalue("results_schema")
    yield
    validator = jsonschema.Draft202012Validator(schema)
    for path in folder.rglob("results.json"):
        errors = sorted(validator.iter_errors(json.loads(path.read_text("utf-8"))), key=str)
        assert not errors, f"{path} does not match the results schema: {errors[0].message}"


def assert_log_keys(log: Path) -> None:
    """Every record of a log has a `kind` and a non-empty `key`, and no two records of one
    kind share a key (the interface issue 9 promises for a fresh run)."""
    import json
    from collections import Counter

    seen: Counter[tuple[str, str]] = Counter()
    for number, line in enumerate(log.read_text("utf-8").splitlines(), 1):
        record = json.loads(line)
        assert isinstance(record.get("kind"), str), (number, record)
        key = record.get("key")
        assert isinstance(key, str) and key, (number, record.get("kind"))
        seen[(record["kind"], key)] += 1
    repeated = [pair for pair, count in seen.items() if count > 1]
    assert not repeated, repeated
