"""The real CLI in a child process, without paying Python's start-up and turnbench's imports
for every one of the suite's hundreds of commands.

A test that runs `python -m turnbench ...` waits about half a second before the command does
anything: the interpreter starts and imports the CLI. The suite runs the CLI more than a
thousand times, so that wait was a third of `make test`. Here one helper process per test
process (per pytest-xdist worker) imports the CLI once and then forks a fresh child for each
command. The child is a real, separate process: it gets the test's environment, working
directory and arguments, runs `turnbench/__main__.py` as `python -m turnbench` does (runpy),
writes to its own stdout and stderr files, and ends with its own exit status (or signal),
which the helper reports back. What differs from a cold start is only that the modules were
imported before the environment was set: so a command whose environment changes how Python
itself starts (PYTHON*, locale variables) gets a real `python -m turnbench` instead.

`TURNBENCH_TEST_FORKSERVER=0` turns it off (every command a cold `python -m turnbench`);
tests/e2e/test_cli_forkserver.py holds both routes to the same results.
"""

from __future__ import annotations

import io
import json
import locale
import os
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

# Variables read while the interpreter starts (not later by turnbench): with one of these
# set differently from this process, the command starts cold.
_STARTUP_PREFIXES = ("PYTHON", "LC_")
_STARTUP_NAMES = ("LANG", "LANGUAGE")

_HELPER = r"""
import json, os, runpy, sys

import turnbench.cli  # what every command imports first: the point of this process
import turnbench.cli.entry

requests, replies = sys.stdin.buffer, sys.stdout.buffer
while True:
    line = requests.readline()
    if not line:
        break
    ask = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgrp()  # (a timeout kills the command and whatever it started)
            null = os.open(os.devnull, os.O_RDONLY)
            out = os.open(ask["stdout"], os.O_WRONLY | os.O_TRUNC)
            err = os.open(ask["stderr"], os.O_WRONLY | os.O_TRUNC)
            for fd, target in ((null, 0), (out, 1), (err, 2)):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(ask["cwd"])
            os.environ.clear()
            os.environ.update(ask["env"])
            sys.path[0] = ask["cwd"]  # `python -m` puts the working directory first
            sys.argv = ["turnbench", *ask["argv"]]
            runpy.run_module("turnbench", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as done:
            code = done.code
            if code is not None and not isinstance(code, int):
                sys.stderr.write(f"{code}\n")
                code = 1
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code or 0)
    replies.write(f"started {pid}\n".encode())
    replies.flush()
    _, status = os.waitpid(pid, 0)
    replies.write(f"ended {os.waitstatus_to_exitcode(status)}\n".encode())
    replies.flush()
"""


def _startup_environment(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES}


class ForkServer:
    """One helper process; `run` is `subprocess.run([python, -m, turnbench, *argv], ...)`
    with `capture_output=True, text=True`, one command at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="turnbench-forkserver-"))
        self._count = 0

    def _helper(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _HELPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=os.getcwd(),
            )
        return self._process

    def usable_for(self, env: Mapping[str, str]) -> bool:
        return _startup_environment(env) == _startup_environment(os.environ)

    def run(
        self, argv: list[str], env: Mapping[str, str], timeout: float, cwd: Path | None
    ) -> subprocess.CompletedProcess[str]:
        with self._lock:
            self._count += 1
            out = self._folder / f"{self._count}.out"
            err = self._folder / f"{self._count}.err"
            out.touch()
            err.touch()
            helper = self._helper()
            ask = {
                "argv": list(argv),
                "env": dict(env),
                "cwd": str(Path(cwd or os.getcwd()).resolve()),
                "stdout": str(out),
                "stderr": str(err),
            }
            assert helper.stdin is not None and helper.stdout is not None
            helper.stdin.write(json.dumps(ask).encode() + b"\n")
            helper.stdin.flush()
            started = self._reply(helper, 30)
            pid = int(started.removeprefix("started "))
            try:
                ended = self._reply(helper, timeout)
            except subprocess.TimeoutExpired:
                os.killpg(pid, 9)
                self._reply(helper, 30)
                raise subprocess.TimeoutExpired(
                    ["python", "-m", "turnbench", *argv], timeout, _text(out), _text(err)
                ) from None
            code = int(ended.removeprefix("ended "))
            stdout, stderr = _text(out), _text(err)
            out.unlink()
            err.unlink()
        return subprocess.CompletedProcess(
            [sys.executable, "-m", "turnbench", *argv], code, stdout, stderr
        )

    def _reply(self, helper: subprocess.Popen[bytes], timeout: float) -> str:
        assert helper.stdout is not None
        ready, _, _ = select.select([helper.stdout], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("turnbench", timeout)
        line = helper.stdout.readline().decode().strip()
        if not line:
            self._process = None
            raise RuntimeError("the CLI fork server ended unexpectedly")
        return line

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=10)
        for leftover in self._folder.iterdir():
            leftover.unlink()
        self._folder.rmdir()


def _text(path: Path) -> str:
    """What `subprocess.run(..., text=True)` gives: the locale's encoding, universal
    newlines."""
    data = path.read_bytes()
    encoding = locale.getpreferredencoding(False)
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding).read()


_SERVER: ForkServer | None = None


def enabled() -> bool:
    return os.environ.get("TURNBENCH_TEST_FORKSERVER", "1") != "0"


def server() -> ForkServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = ForkServer()
    return _SERVER


def close() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.close()
        _SERVER = None
