"""Shared pieces of the reliability suite: CLI arguments, log reading, request bodies,
copies of a finished run of the test plug-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from turnbench.journal.threads import with_whole_requests

MODEL = "model-under-test"  # the model name the fake server sees
JUDGE = "judge-model"
MODEL_SPEC = f"openai/{MODEL}"
JUDGE_SPEC = f"openai/{JUDGE}"
# --limit 1 on MT-Bench: 8 questions x 2 turns -> 16 answers and 16 judgments
PLANNED_ANSWERS = PLANNED_JUDGMENTS = 16
# fast retries so fault tests take seconds, not minutes
TOY = "tests.toy_bench:ToyBench"  # the test plug-in, as `--benchmark` names it
FAST = ("--retry-initial-wait", "0.01", "--request-timeout", "2", "--no-progress")


def batch_flags(out: Path, *extra: str) -> list[str]:
    """The flags every batch test ends with: fast polling and retries, MT-Bench --limit 1."""
    return [
        "--batch-poll-interval",
        "0.05",
        "--retry-initial-wait",
        "0.01",
        "--out",
        str(out),
        "--limit",
        "1",
        "--no-progress",
        *extra,
    ]


def run_args(
    base_url: str,
    out: Path,
    *extra: str,
    judge_url: str | None = None,
    judge: str = JUDGE_SPEC,
    limit: int | None = 1,
) -> list[str]:
    """`turnbench run` on MT-Bench (--limit 1 by default) with model and judge on fake
    servers."""
    args = [
        "run",
        "--benchmark",
        "mt-bench",
        "--model",
        MODEL_SPEC,
        "--model-base-url",
        base_url,
        "--judge",
        judge,
        "--judge-base-url",
        judge_url or base_url,
        "--out",
        str(out),
        *FAST,
    ]
    if limit is not None:
        args += ["--limit", str(limit)]
    return [*args, *extra]


def start_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """The real CLI as a child process we can signal."""
    return subprocess.Popen(
        [sys.executable, "-m", "turnbench", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(
    condition: Callable[[], bool],
    timeout: float = 60.0,
    what: str = "",
    state: Callable[[], object] | None = None,
) -> None:
    """Poll `condition`; on timeout fail with `what` and the current `state()`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}; state: {state() if state else '?'}")


def log_lines(out: Path) -> list[str]:
    path = out / "log.jsonl"
    return path.read_text("utf-8").splitlines() if path.exists() else []


def read_log(out: Path) -> list[dict[str, Any]]:
    """Every record of a log that must be whole: each line parses, the file ends in a newline.
    A record that keeps only what its step appended to a thread gets its whole request back
    (`journal.threads`), so it compares with what the server received."""
    path = out / "log.jsonl"
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the log does not end with a newline"
    return with_whole_requests(json.loads(line) for line in data.decode("utf-8").splitlines())


def read_log_tolerant(out: Path) -> list[dict[str, Any]]:
    """Records of a log whose writer was killed: a torn last line is allowed (and dropped)."""
    lines = log_lines(out)
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            assert number == len(lines), f"line {number} of {len(lines)} is unreadable"
    return with_whole_requests(records)


def finished(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] in ("answer", "judgment")]


def of_kind(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


def results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text("utf-8"))


def scores(result: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on faults, crashes or retries: every score and count."""
    return {
        key: result[key]
        for key in ("overall", "by_turn", "by_category", "by_category_turn", "counts", "complete")
    }


def body(request: dict[str, Any]) -> str:
    """Identity of a request as the server saw it: model name and messages."""
    return json.dumps([request["model"], request["messages"]], sort_keys=True)


def record_body(record: dict[str, Any]) -> str:
    """The body of the (first) request that produced a logged answer or judgment."""
    name = JUDGE if record["kind"] == "judgment" else MODEL
    return json.dumps([name, record["messages"]], sort_keys=True)


def body_counts(requests: list[dict[str, Any]]) -> Counter[str]:
    return Counter(body(r) for r in requests)


def is_judge(request: dict[str, Any]) -> bool:
    return request["model"] != MODEL


def assert_clean_error(
    done: subprocess.CompletedProcess[str], *expected: str, code: int = 2
) -> None:
    """One clear error: exit `code` (2 for a usage or input error, 7 for a refused run
    directory), `error:` on stderr with the expected text, no traceback."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    for text in expected:
        assert text in done.stderr, f"{text!r} not in:\n{done.stderr}"


def invoke(
    args: list[str],
    env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> subprocess.CompletedProcess[str]:
    """The CLI's entry point run in this process, for checks that end before any request is
    sent (bad input, refused resumes): the same code path as `run_cli`, without paying a
    Python start-up per case. An unexpected exception propagates and fails the test."""
    from turnbench.cli import main

    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", ["turnbench", *args])
    capsys.readouterr()
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def copy_run(toy_run: Path, target: Path, reference: str | None = None) -> Path:
    """A copy of the toy run; with `reference`, one whose results.json and log config record
    name it as their benchmark (what a planted run directory would say)."""
    shutil.copytree(toy_run, target)
    if reference is None:
        return target
    results = json.loads((target / "results.json").read_text("utf-8"))
    results["provenance"]["benchmark_ref"] = reference
    (target / "results.json").write_text(json.dumps(results), "utf-8")
    lines = (target / "log.jsonl").read_text("utf-8").splitlines()
    config = json.loads(lines[0])
    assert config["kind"] == "config" and config["config"]["benchmark_ref"] == TOY
    config["config"]["benchmark_ref"] = reference
    lines[0] = json.dumps(config)
    (target / "log.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return target


def plugin_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a CLI child that must import the test plug-in, as a user's own module."""
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}
