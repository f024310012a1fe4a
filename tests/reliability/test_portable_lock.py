"""Issue 9 item 6, the run-directory lock on every system: flock on Linux and macOS,
msvcrt.locking on Windows, chosen when a run directory is opened.

Windows cannot be run here, so its code path is forced on this machine: a fake `msvcrt` that
keeps byte-range locks per open file (the way LockFile does: per handle, also within one
process), the platform selector set to "nt", and the open flags Windows lacks (O_NOFOLLOW,
O_NONBLOCK) turned off.
"""

from __future__ import annotations

import errno
import functools
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from turnbench.errors import RunLockedError, UserError
from turnbench.journal import runlog
from turnbench.journal.runlog import LOCK_NAME, RunLog


class FakeMsvcrt(types.ModuleType):
    """msvcrt.locking semantics: lock `nbytes` from the file position; a range locked through
    another handle is refused at once with EACCES (LK_NBLCK); unlocking needs the same range
    through the same handle."""

    LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4

    def __init__(self) -> None:
        super().__init__("msvcrt")
        self.held: dict[tuple[int, int, int, int], int] = {}
        self.calls: list[tuple[int, int, int]] = []  # (mode, offset, nbytes)
        self.fail_with: int | None = None

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        info = os.fstat(fd)
        offset = os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((mode, offset, nbytes))
        if self.fail_with is not None:
            raise OSError(self.fail_with, os.strerror(self.fail_with))
        key = (info.st_dev, info.st_ino, offset, nbytes)
        if mode == self.LK_NBLCK:
            if key in self.held:  # also when this handle holds it: LockFile does not nest
                raise PermissionError(errno.EACCES, "Permission denied")
            self.held[key] = fd
        elif mode == self.LK_UNLCK:
            if self.held.get(key) != fd:
                raise PermissionError(errno.EACCES, "Permission denied")
            del self.held[key]
        else:
            raise AssertionError(f"turnbench must never block on a lock (mode {mode})")


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> FakeMsvcrt:
    """This process behaves like Windows as far as the run log can tell."""
    fake = FakeMsvcrt()
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(runlog, "_platform_lock", functools.partial(runlog._platform_lock, "nt"))
    monkeypatch.setattr(runlog, "_O_NOFOLLOW", 0)
    monkeypatch.setattr(runlog, "_O_NONBLOCK", 0)
    return fake


def _open_fds() -> int:
    """Open descriptors of this process (Linux; elsewhere the check is skipped)."""
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def test_selector_picks_msvcrt_on_windows_and_flock_elsewhere(monkeypatch):
    monkeypatch.setitem(sys.modules, "msvcrt", FakeMsvcrt())
    assert isinstance(runlog._platform_lock("nt"), runlog._MsvcrtLock)
    assert isinstance(runlog._platform_lock("posix"), runlog._FlockLock)


def test_windows_lock_refuses_a_second_opener_names_the_holder_and_releases(windows, tmp_path):
    fds_before = _open_fds()
    first = RunLog(tmp_path).open()
    try:
        offset = runlog._WINDOWS_LOCK_OFFSET
        assert windows.calls == [(FakeMsvcrt.LK_NBLCK, offset, 1)]
        # the pid lies outside the locked (on Windows unreadable) byte, and the file is small
        assert offset > 64
        assert (tmp_path / LOCK_NAME).read_bytes() == str(os.getpid()).encode()
        with pytest.raises(RunLockedError, match=f"in use by another .* \\(pid {os.getpid()}\\)"):
            RunLog(tmp_path).open()
        assert len(windows.held) == 1  # the refused opener took nothing
    finally:
        first.close()
    assert windows.calls[-1] == (FakeMsvcrt.LK_UNLCK, offset, 1)
    assert windows.held == {}
    assert _open_fds() == fds_before  # the refused opener closed its descriptor
    with RunLog(tmp_path):  # free again
        assert len(windows.held) == 1


def test_windows_lock_failure_other_than_busy_is_a_clear_error(windows, tmp_path):
    windows.fail_with = errno.EBADF
    with pytest.raises(UserError, match=f"cannot lock {tmp_path / LOCK_NAME}") as caught:
        RunLog(tmp_path).open()
    assert not isinstance(caught.value, RunLockedError)


def test_posix_lock_failure_other_than_busy_is_a_clear_error(tmp_path, monkeypatch):
    import fcntl

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # e.g. an NFS mount without lockd

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(UserError, match=r"cannot lock .*No locks available"):
        RunLog(tmp_path).open()


def test_holder_shown_only_when_the_lock_file_holds_a_pid(tmp_path):
    """The lock file is data anyone could have written: no terminal escapes in the message."""
    with RunLog(tmp_path):
        (tmp_path / LOCK_NAME).write_bytes(b"\x1b]0;owned\x07 12")
        with pytest.raises(RunLockedError, match=r"\(pid unknown\)") as caught:
            RunLog(tmp_path).open()
    assert "\x1b" not in caught.value.message


def test_run_log_imports_and_works_without_fcntl(tmp_path):
    """As on Windows: no fcntl module. Importing must work, and so must a run log when the
    Windows lock is selected (fake msvcrt)."""
    script = f"""
import functools, sys, types
sys.modules["fcntl"] = None  # `import fcntl` now raises ImportError
import turnbench.journal.runlog as runlog
import turnbench.cli; turnbench.cli.load()  # every command imports the run log
fake = types.ModuleType("msvcrt")
fake.LK_NBLCK, fake.LK_UNLCK = 2, 0
fake.locking = lambda fd, mode, nbytes: None
sys.modules["msvcrt"] = fake
select = runlog._platform_lock
runlog._platform_lock = functools.partial(select, "nt")
from turnbench.types import ConfigRecord
with runlog.RunLog(__import__("pathlib").Path({str(tmp_path)!r})) as log:
    log.append(ConfigRecord(turnbench_version="t", config={{}}))
try:
    select("posix")
except ImportError:
    print("flock unavailable, as expected")
"""
    env = {**os.environ, "PYTHONPATH": str(Path(runlog.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "flock unavailable, as expected"
    assert (tmp_path / "log.jsonl").read_text().count('"kind":"config"') == 1
