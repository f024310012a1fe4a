"""The real CLI run inside the test process, as `python -m turnbench ARGS` would run it.

A child process pays the interpreter's start-up and turnbench's import (0.6-1.5 s on the
2-core machine) for every command; most end-to-end tests are about what a command does, not
about the process around it, and run hundreds of commands. Here the command runs through
`turnbench.cli.main`, the function the console script (`turnbench.cli.entry:main`) calls
after its import, with everything a child would get set up and put back afterwards:

- `sys.argv`, `os.environ` (replaced by the test's environment as a whole, so nothing of the
  test process leaks in), the working directory, and `sys.path` (the working directory and
  `PYTHONPATH` first, as `python -m` puts them; modules imported from there are forgotten
  afterwards, so a plug-in of one test is not found by the next);
- stdin empty, stdout and stderr captured as bytes in the child's encodings (UTF-8, stdout
  with surrogateescape, stderr with backslashreplace) and decoded as `subprocess.run(...,
  text=True)` decodes a pipe (universal newlines);
- warnings shown on stderr under the interpreter's default filters (pytest's own filters
  would hide them), an uncaught exception printed as a traceback with exit status 1, and a
  `SystemExit` read as the interpreter reads it;
- the SIGINT/SIGTERM handlers put back, and the once-per-process warnings forgotten; a
  thread the command started and left running fails the test (in a child it would have
  kept the process alive).

What only a child process shows stays tested in child processes: exit without teardown
(`entry._leave`, tests/unit/test_entry_exit.py), signals and kills, the console script,
`--version` and the import time of start-up. `run_cli(..., process=True)` asks for one.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import traceback
import types
import warnings
from collections.abc import Iterator
from pathlib import Path

# a fresh interpreter's warning filters (python -W / PYTHONWARNINGS not set)
_DEFAULT_FILTERS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
)
_THREAD_GRACE_S = 5.0
_lock = threading.Lock()


def _decoded(data: bytes) -> str:
    """As `subprocess.run(text=True)` reads a pipe: locale encoding, universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _process_state(env: dict[str, str], cwd: Path | None) -> Iterator[None]:
    """os.environ, cwd, sys.path, sys.argv, the std streams and signal handlers, restored."""
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_argv = list(sys.argv)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    saved_modules = set(sys.modules)
    saved_main = sys.modules["__main__"]
    try:
        sys.modules["__main__"] = _main_module()
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [os.getcwd(), *extra]
        yield
    finally:
        sys.modules["__main__"] = saved_main
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for sig, handler in saved_signals.items():
            if handler is not None:
                signal.signal(sig, handler)
        os.chdir(saved_cwd)
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        _forget_modules_from_outside(saved_modules, saved_path)
        _forget_once_per_process_state()


def _forget_once_per_process_state() -> None:
    """turnbench's one module-level record of the process: the warnings the embedded backend
    prints once per process (backends/local.py). A child starts without it."""
    local = sys.modules.get("turnbench.backends.local")
    warned = getattr(local, "_warned", None)
    if isinstance(warned, set):
        warned.clear()


def _main_module() -> types.ModuleType:
    """What `python -m turnbench` has as `__main__` (click names the program from it:
    "Usage: python -m turnbench ...")."""
    import turnbench

    main = types.ModuleType("__main__")
    main.__file__ = str(Path(turnbench.__file__).with_name("__main__.py"))
    main.__package__ = "turnbench"
    return main


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # type: ignore[no-untyped-def]
    """The interpreter's own display of a warning, on the command's stderr."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def _forget_modules_from_outside(before: set[str], path: list[str]) -> None:
    """Drop modules the command imported from a folder that was not on the test process's
    path (a test's plug-in or planted file), so the next command imports its own."""
    roots = [os.path.abspath(p) + os.sep for p in path if p]
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None)
        if file and not any(os.path.abspath(file).startswith(root) for root in roots):
            del sys.modules[name]


def _exit_status(done: SystemExit, stderr: io.TextIOBase) -> int:
    """The status the interpreter exits with for `done` (a message goes to stderr)."""
    code = done.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    stderr.write(f"{code}\n")
    return 1


def _threads_left(before: set[threading.Thread]) -> list[str]:
    left = [t for t in threading.enumerate() if t not in before and not t.daemon]
    for thread in left:
        thread.join(_THREAD_GRACE_S / max(len(left), 1))
    return [t.name for t in left if t.is_alive()]


def run_in_process(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m turnbench ARGS` in this process: its exit status, stdout and stderr."""
    from turnbench.cli import main

    with _lock, _process_state(env, cwd):
        out, err = io.BytesIO(), io.BytesIO()
        stdout = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape")
        stderr = io.TextIOWrapper(
            err, encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
        sys.stdout, sys.stderr = stdout, stderr
        sys.argv[:] = [sys.modules["__main__"].__file__, *args]
        threads_before = set(threading.enumerate())
        with warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.showwarning = _show_warning  # pytest's recorder would swallow it
            for action, category, module in _DEFAULT_FILTERS:
                warnings.filterwarnings(action, category=category, module=module or "", append=True)
            try:
                main()
                status = 0
            except SystemExit as done:
                status = _exit_status(done, stderr)
            except BaseException:  # an uncaught exception: what the interpreter prints
                traceback.print_exc(file=stderr)
                status = 1
        left = _threads_left(threads_before)
        stdout.flush()
        stderr.flush()
        result = subprocess.CompletedProcess(
            ["turnbench", *args], status, _decoded(out.getvalue()), _decoded(err.getvalue())
        )
    if left:
        raise AssertionError(
            f"`turnbench {' '.join(args)}` left threads running: {left}\n{result.stderr}"
        )
    return result
