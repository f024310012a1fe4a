"""The suite's fork server (tests/cli_forkserver.py) runs the CLI as a cold `python -m
turnbench` does: same exit status, same output, same run directory, its own process; a
command past its time limit is killed and reported as `subprocess.run` reports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_forkserver
from tests.conftest import cli_env
from turnbench.testing.fake_server import FakeServer


def cold(args: list[str], env: dict[str, str], cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "turnbench", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def forked():
    server = cli_forkserver.ForkServer()
    yield server
    server.close()


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["run", "--help"],
        ["run", "--benchmark", "no-such-benchmark", "--model", "openai/m"],
        ["report", "/nonexistent/run"],
        ["compare"],
    ],
)
def test_exit_status_and_output_match_a_cold_start(forked, data_dir, tmp_path, args):
    env = cli_env(data_dir, tmp_path)
    want = cold(args, env, cwd=tmp_path)
    got = forked.run(args, env, 300, tmp_path)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    assert want.returncode == 0 or want.stderr  # (the cases hold errors as well)


def test_a_run_writes_the_same_results(forked, data_dir, tmp_path):
    env = cli_env(data_dir, tmp_path)
    with FakeServer() as server:
        results = []
        for route, out in (("cold", tmp_path / "cold"), ("forked", tmp_path / "forked")):
            args = ["run", "--model", "openai/m", "--model-base-url", server.base_url]
            args += ["--judge", "openai/j", "--judge-base-url", server.base_url]
            args += ["--limit", "1", "--out", str(out), "--no-progress"]
            done = cold(args, env) if route == "cold" else forked.run(args, env, 300, None)
            assert done.returncode == 0, done.stderr
            results.append(json.loads((out / "results.json").read_text("utf-8")))
    timing = {"started_at", "finished_at", "wall_seconds", "provenance", "usage", "timing"}
    cold_results, forked_results = (
        {k: v for k, v in r.items() if k not in timing} for r in results
    )
    assert forked_results == cold_results and forked_results["complete"] is True


def test_the_environment_and_working_directory_are_the_commands(forked, data_dir, tmp_path):
    """The environment given, not the helper's: an unknown data folder is reported as the
    given one; a relative --out lands in the given working directory."""
    env = cli_env(data_dir, tmp_path, TURNBENCH_DATA_DIR=str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    done = forked.run(["data", "status"], env, 300, tmp_path)
    want = cold(["data", "status"], env, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (want.returncode, want.stdout)
    assert "missing" in done.stdout  # the given (empty) data folder, not the helper's
    with FakeServer() as server:
        args = ["run", "--model", "openai/m", "--model-base-url", server.base_url]
        args += ["--judge", "openai/j", "--judge-base-url", server.base_url]
        args += ["--limit", "1", "--out", "relative-run", "--no-progress"]
        done = forked.run(args, cli_env(data_dir, tmp_path), 300, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "relative-run" / "results.json").is_file()


def test_a_command_past_its_time_limit_is_killed(forked, data_dir, tmp_path):
    env = cli_env(data_dir, tmp_path, OPENAI_API_KEY="unused")
    with FakeServer(latency=30) as server:
        args = ["run", "--model", "openai/m", "--model-base-url", server.base_url]
        args += ["--judge", "openai/j", "--judge-base-url", server.base_url]
        args += ["--limit", "1", "--out", str(tmp_path / "slow"), "--no-progress"]
        with pytest.raises(subprocess.TimeoutExpired):
            forked.run(args, env, 2, None)
        # the helper is still usable after the kill
        assert forked.run(["--version"], env, 60, None).returncode == 0


def test_a_changed_startup_environment_starts_cold():
    server = cli_forkserver.ForkServer()
    try:
        assert server.usable_for(dict(os.environ))
        assert not server.usable_for({**os.environ, "PYTHONPATH": "/somewhere/else"})
        assert not server.usable_for({**os.environ, "LC_ALL": "C"})
    finally:
        server.close()
