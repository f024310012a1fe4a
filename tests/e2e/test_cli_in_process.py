"""The in-process CLI of the tests (tests/inprocess.py) behaves as the child process it
stands in for, and leaves the test process as it found it."""

from __future__ import annotations

import os
import sys
import threading

import pytest

import turnbench.cli
from tests.conftest import run_cli
from tests.inprocess import run_in_process

A_RUN = ["run", "--benchmark", "mt-bench", "--model", "openai/m", "--judge", "openai/j"]
COMMANDS = [
    ["--help"],
    ["judge", "--no-such-flag"],  # usage error: exit 2
    ["report", "/nonexistent/run-dir"],  # a user error: one message
    ["data", "status"],
    [*A_RUN, "--limit", "0"],  # a refused value: exit 2
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_in_process_gives_the_child_process_exit_status_and_output(args, env, tmp_path):
    child = run_cli(args, env, cwd=tmp_path, process=True)
    here = run_in_process(args, env, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (
        child.returncode,
        child.stdout,
        child.stderr,
    )


def test_a_plug_in_from_the_working_directory_is_imported_then_forgotten(env, tmp_path):
    (tmp_path / "planted_probe.py").write_text("MARK = 'planted'\n", "utf-8")
    args = ["run", "--benchmark", "planted_probe:Nothing", "--model", "openai/m"]
    args += ["--judge", "openai/j", "--out", str(tmp_path / "run")]
    child = run_cli(args, env, cwd=tmp_path, process=True)
    here = run_in_process(args, env, cwd=tmp_path)
    assert here.returncode == child.returncode == 2
    assert "planted_probe has no Benchmark subclass" in here.stderr  # it was imported
    assert here.stderr == child.stderr
    assert "planted_probe" not in sys.modules


def test_the_test_process_state_is_put_back(env, tmp_path):
    before = (dict(os.environ), os.getcwd(), list(sys.path), list(sys.argv))
    streams = (sys.stdin, sys.stdout, sys.stderr)
    done = run_in_process(["data", "status"], {**env, "PROBE_ONLY_HERE": "1"}, cwd=tmp_path)
    assert done.returncode == 0
    assert (dict(os.environ), os.getcwd(), list(sys.path), list(sys.argv)) == before
    assert (sys.stdin, sys.stdout, sys.stderr) == streams


def test_the_command_sees_only_its_own_environment(env, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_PROCESS_ONLY", "1")
    seen: dict[str, str | None] = {}

    def main() -> None:
        seen["test"] = os.environ.get("TEST_PROCESS_ONLY")
        seen["own"] = os.environ.get("PROBE_ONLY_HERE")
        seen["cwd"] = os.getcwd()
        seen["path0"] = sys.path[0]

    monkeypatch.setattr(turnbench.cli, "main", main)
    done = run_in_process([], {**env, "PROBE_ONLY_HERE": "1"}, cwd=tmp_path)
    assert done.returncode == 0
    assert seen == {"test": None, "own": "1", "cwd": str(tmp_path), "path0": str(tmp_path)}


def test_an_uncaught_exception_prints_a_traceback_and_exits_1(env, monkeypatch):
    def main() -> None:
        print("before", flush=True)
        raise ValueError("boom")

    monkeypatch.setattr(turnbench.cli, "main", main)
    done = run_in_process([], env)
    assert done.returncode == 1 and done.stdout == "before\n"
    assert done.stderr.startswith("Traceback") and "ValueError: boom" in done.stderr


@pytest.mark.parametrize(
    ("code", "status", "stderr"), [(None, 0, ""), (3, 3, ""), ("a message", 1, "a message\n")]
)
def test_system_exit_is_read_as_the_interpreter_reads_it(env, monkeypatch, code, status, stderr):
    def main() -> None:
        sys.exit(code)

    monkeypatch.setattr(turnbench.cli, "main", main)
    done = run_in_process([], env)
    assert (done.returncode, done.stderr) == (status, stderr)


def test_warnings_reach_stderr_as_in_a_fresh_interpreter(env, monkeypatch):
    import warnings

    def main() -> None:
        warnings.warn("shown", UserWarning, stacklevel=1)
        warnings.warn("hidden", DeprecationWarning, stacklevel=1)

    monkeypatch.setattr(turnbench.cli, "main", main)
    done = run_in_process([], env)
    assert "UserWarning: shown" in done.stderr and "hidden" not in done.stderr


def test_a_thread_left_running_fails_the_test(env, monkeypatch):
    release = threading.Event()

    def main() -> None:
        threading.Thread(target=release.wait, name="left-behind").start()

    monkeypatch.setattr(turnbench.cli, "main", main)
    monkeypatch.setattr("tests.inprocess._THREAD_GRACE_S", 0.1)
    try:
        with pytest.raises(AssertionError, match="left-behind"):
            run_in_process([], env)
    finally:
        release.set()


def test_a_warning_printed_once_per_process_is_printed_again_by_the_next_command(env, monkeypatch):
    from turnbench.backends.local import warn_once

    def main() -> None:
        warn_once("once per process")

    monkeypatch.setattr(turnbench.cli, "main", main)
    first, second = run_in_process([], env), run_in_process([], env)
    assert first.stderr == second.stderr == "warning: once per process\n"
