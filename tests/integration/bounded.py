"""Time limits for the tests that drive the real embedded model.

A llama.cpp run that is slow (a loaded machine) or stuck must not turn into a bare
`TimeoutExpired` after many minutes, nor hang the suite: each command runs in its own
process group under a limit, and on expiry the whole group is killed and the test fails
saying how far the run got (the answers and judgments already in its log) and the last
lines it printed. In-process scenarios get the same through `within`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
TAIL_LINES = 15


def log_progress(run_dir: Path | None) -> str:
    """'5 answer, 2 judgment records in log.jsonl' (or why there is nothing to count)."""
    if run_dir is None:
        return "no run directory to inspect"
    log = run_dir / "log.jsonl"
    if not log.is_file():
        return f"no {log} yet (the run had not finished one request)"
    kinds: dict[str, int] = {}
    for line in log.read_text("utf-8", errors="replace").splitlines():
        try:
            kind = str(json.loads(line).get("kind"))
        except (ValueError, AttributeError):
            kind = "unreadable"
        kinds[kind] = kinds.get(kind, 0) + 1
    counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return f"{counted or 'no'} records in {log}"


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_bounded(
    command: list[str],
    *,
    env: dict[str, str],
    limit_s: float,
    run_dir: Path | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`command` to completion within `limit_s` seconds, or a test failure that says how
    far it got. Output goes to files, not pipes, so nothing blocks on a full pipe and the
    last lines are there to show when the limit strikes."""
    with tempfile.TemporaryDirectory(prefix="bounded-") as folder:
        out_path, err_path = Path(folder) / "stdout", Path(folder) / "stderr"
        with out_path.open("w") as out, err_path.open("w") as err:
            started = time.monotonic()
            process = subprocess.Popen(
                command,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                text=True,
                start_new_session=True,  # its own group: the llama.cpp worker goes with it
            )
            try:
                returncode = process.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                returncode = None
            elapsed = time.monotonic() - started
        stdout = out_path.read_text("utf-8", errors="replace")
        stderr = err_path.read_text("utf-8", errors="replace")
    if returncode is None:
        pytest.fail(
            f"{' '.join(command[-8:])!s} did not finish within {limit_s:.0f}s "
            f"(killed after {elapsed:.0f}s); progress: {log_progress(run_dir)}\n"
            f"last stdout:\n{tail(stdout)}\nlast stderr:\n{tail(stderr)}",
            pytrace=False,
        )
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


def turnbench_bounded(
    args: list[str], env: dict[str, str], *, limit_s: float, run_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI (`python -m turnbench ARGS`) under a time limit."""
    return run_bounded(
        [sys.executable, "-m", "turnbench", *args], env=env, limit_s=limit_s, run_dir=run_dir
    )


def within(limit_s: float, scenario: Coroutine[Any, Any, T], steps: list[str]) -> T:
    """Run an in-process scenario under a limit; `steps` is appended to by the scenario as
    it goes, so a failure names the last step reached."""

    async def bounded() -> T:
        return await asyncio.wait_for(scenario, limit_s)

    try:
        return asyncio.run(bounded())
    except TimeoutError:
        reached = steps[-1] if steps else "nothing (the engine did not finish its first step)"
        pytest.fail(
            f"the scenario did not finish within {limit_s:.0f}s; last step done: {reached}",
            pytrace=False,
        )
