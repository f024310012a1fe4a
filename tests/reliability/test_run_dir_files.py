"""Issue 10 item 7: the files of a run directory are opened without following links and must
be regular files; a failing disk or a refused permission is one clear message, and whatever
was logged before stays whole and parseable."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.reliability.helpers import (
    assert_clean_error,
    invoke,
    read_log,
    results,
    run_args,
    scores,
)
from turnbench.errors import UserError
from turnbench.journal import runlog
from turnbench.journal.runlog import LOCK_NAME, LOG_NAME, RunLog, read_records
from turnbench.testing.fake_server import FakeServer
from turnbench.types import AnswerRecord, ConfigRecord

# symbolic links, FIFOs, hard links, SIGALRM and RLIMIT_FSIZE: POSIX (the Windows code path
# of the no-follow checks is forced in the tests below with the `platform` fixture)
pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX file system features")

CONFIG = ConfigRecord(turnbench_version="test", config={"benchmark": "mt-bench"})
# another run's log: a link to it must not get its last line cut or records appended
VICTIM = b'{"kind":"config"}\n{"kind":"answer","key":"theirs"}\n{"kind":"answer","ke'


def _answer(key: str, text: str = "") -> AnswerRecord:
    return AnswerRecord(key=key, model="m", sample_id=1, turn=1, text=text or f"text of {key}")


def _write(directory: Path, *keys: str) -> bytes:
    with RunLog(directory) as log:
        log.append(CONFIG)
        for key in keys:
            log.append(_answer(key))
    return (directory / LOG_NAME).read_bytes()


def _keys(directory: Path) -> list[str]:
    records, torn = read_records(directory / LOG_NAME)
    assert torn is None
    return [r.key for r in records if not isinstance(r, ConfigRecord)]


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (opening a FIFO blocks without O_NONBLOCK)."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(params=["posix", "windows"])
def platform(request, monkeypatch) -> str:
    """Both ways of refusing links: O_NOFOLLOW, and lstat checks where it does not exist."""
    if request.param == "windows":
        monkeypatch.setattr(runlog, "_O_NOFOLLOW", 0)
        monkeypatch.setattr(runlog, "_O_NONBLOCK", 0)
    return request.param


# -- links and files that are not regular ---------------------------------------------------
@pytest.mark.parametrize("name", [LOG_NAME, LOCK_NAME])
def test_symlink_in_place_of_a_run_file_is_refused_and_its_target_untouched(
    platform, name, tmp_path
):
    run = tmp_path / "run"
    run.mkdir()
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(VICTIM)
    (run / name).symlink_to(victim)
    with pytest.raises(UserError, match=f"{run / name} is a symbolic link"):
        RunLog(run).open()
    assert victim.read_bytes() == VICTIM
    (run / name).unlink()
    with RunLog(run):  # the refusal released the lock
        pass


@pytest.mark.parametrize("name", [LOG_NAME, LOCK_NAME])
def test_dangling_symlink_is_refused_and_nothing_is_created(platform, name, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    target = tmp_path / "created-through-the-link"
    (run / name).symlink_to(target)
    with pytest.raises(UserError, match="is a symbolic link"):
        RunLog(run).open()
    assert not target.exists()


def test_reading_a_log_does_not_follow_a_symlink(platform, tmp_path):
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(VICTIM)
    (tmp_path / LOG_NAME).symlink_to(victim)
    with pytest.raises(UserError, match="is a symbolic link"):
        read_records(tmp_path / LOG_NAME)


def test_link_swapped_in_between_the_checks_is_refused_without_lstat_flags(tmp_path, monkeypatch):
    """Windows path: the name is checked with lstat, then opened; a link put there in between
    is found by comparing the opened file with the name afterwards."""
    monkeypatch.setattr(runlog, "_O_NOFOLLOW", 0)
    monkeypatch.setattr(runlog, "_O_NONBLOCK", 0)
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(VICTIM)
    run = tmp_path / "run"
    _write(run, "a")
    log_path = run / LOG_NAME
    real_open = os.open

    def swap_then_open(path, flags, mode=0o777, **kwargs):
        if Path(path) == log_path:
            log_path.unlink()
            log_path.symlink_to(victim)
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(runlog.os, "open", swap_then_open)
    with pytest.raises(UserError, match="is a symbolic link"):
        RunLog(run).open()
    assert victim.read_bytes() == VICTIM


@pytest.mark.parametrize("name", [LOG_NAME, LOCK_NAME])
@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda path: os.mkdir(path), "is a directory"),
        (lambda path: os.mkfifo(path), "is a named pipe"),
    ],
    ids=["directory", "fifo"],
)
def test_a_run_file_that_is_not_a_regular_file_is_refused(platform, name, make, expected, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    make(run / name)
    with _deadline(10), pytest.raises(UserError, match=f"{run / name} {expected}"):
        RunLog(run).open()


def test_reading_a_fifo_as_log_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / LOG_NAME)
    with _deadline(10), pytest.raises(UserError, match="is a named pipe"):
        read_records(tmp_path / LOG_NAME)


@pytest.mark.parametrize("name", [LOG_NAME, LOCK_NAME])
def test_a_run_file_with_another_hard_link_is_refused(name, tmp_path):
    run = tmp_path / "run"
    _write(run, "a")
    other = tmp_path / "other-name"
    os.link(run / name, other)
    before = other.read_bytes()
    with pytest.raises(UserError, match="has 2 hard links"):
        RunLog(run).open()
    assert other.read_bytes() == before


# -- a failing disk ----------------------------------------------------------------------------
class FailingWrites:
    """os.write that, once armed, writes the first `partial` bytes of the data (a short
    write, as on a disk filling up) and then fails with `code`."""

    def __init__(self, code: int = errno.ENOSPC, partial: int = 20) -> None:
        self.real = os.write
        self.code, self.partial = code, partial
        self.armed = False
        self.short_written = False

    def __call__(self, fd: int, data) -> int:
        if not self.armed:
            return self.real(fd, data)
        if self.partial and not self.short_written:
            self.short_written = True
            return self.real(fd, bytes(data[: self.partial]))
        raise OSError(self.code, os.strerror(self.code))


def test_disk_full_mid_line_keeps_the_log_whole_and_refuses_further_appends(tmp_path, monkeypatch):
    before = _write(tmp_path, "a")
    writes = FailingWrites()
    monkeypatch.setattr(runlog.os, "write", writes)
    with RunLog(tmp_path) as log:
        writes.armed = True
        with pytest.raises(UserError, match=r"No space left on device \(the disk is full\)"):
            log.append(_answer("b"))
        assert (tmp_path / LOG_NAME).read_bytes() == before  # the half line was cut off
        writes.armed = False  # space again: still refused, the run has to stop
        with pytest.raises(UserError, match="No space left"):
            log.append(_answer("c"))
        assert [r.key for r in log.records[1:]] == ["a"]
    assert (tmp_path / LOG_NAME).read_bytes() == before
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:  # the resume
        log.append(_answer("d"))
    assert warnings == []
    assert _keys(tmp_path) == ["a", "d"]


def test_disk_full_when_the_cut_fails_too_is_repaired_on_the_next_open(tmp_path, monkeypatch):
    before = _write(tmp_path, "a")
    writes = FailingWrites()
    monkeypatch.setattr(runlog.os, "write", writes)

    def no_truncate(fd: int, length: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with RunLog(tmp_path) as log:
        writes.armed = True
        monkeypatch.setattr(runlog.os, "ftruncate", no_truncate)
        with pytest.raises(UserError, match="cut off when you re-run"):
            log.append(_answer("b"))
        with pytest.raises(UserError):  # never glued onto the half line
            log.append(_answer("c"))
    monkeypatch.undo()
    assert (tmp_path / LOG_NAME).read_bytes() == before + b'{"kind":"answer","ke'
    warnings: list[str] = []
    with RunLog(tmp_path, warn=warnings.append) as log:
        log.append(_answer("d"))
    assert len(warnings) == 1 and "last line is incomplete" in warnings[0]
    assert _keys(tmp_path) == ["a", "d"]


def test_a_real_partial_write_is_cut_off(tmp_path):
    """No mock: a file size limit (RLIMIT_FSIZE) makes the kernel write part of the line and
    then fail with EFBIG, as a disk filling up mid-line does."""
    before = _write(tmp_path, "a")
    script = f"""
import resource, signal
from pathlib import Path
from turnbench.errors import UserError
from turnbench.journal.runlog import RunLog
from turnbench.types import AnswerRecord
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
with RunLog(Path({str(tmp_path)!r})) as log:
    resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 100}, resource.RLIM_INFINITY))
    try:
        log.append(AnswerRecord(key="b", model="m", sample_id=1, turn=1, text="x" * 1000))
    except UserError as error:
        print(error.message)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(runlog.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "cannot append to" in done.stdout and "File too large" in done.stdout, done.stdout
    assert (tmp_path / LOG_NAME).read_bytes() == before


def test_disk_full_while_repairing_the_end_is_a_clear_error(tmp_path, monkeypatch):
    whole = _write(tmp_path, "a")
    (tmp_path / LOG_NAME).write_bytes(whole[:-1])  # the newline needs to be added back
    real_write = os.write

    def newline_fails(fd: int, data) -> int:
        if bytes(data) == b"\n":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(runlog.os, "write", newline_fails)
    with pytest.raises(UserError, match=f"cannot repair the end of {tmp_path / LOG_NAME}"):
        RunLog(tmp_path).open()
    monkeypatch.undo()
    assert (tmp_path / LOG_NAME).read_bytes() == whole[:-1]
    with RunLog(tmp_path):  # the failed open released the lock
        pass


# -- permissions -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [LOG_NAME, LOCK_NAME])
def test_permission_denied_is_a_clear_error(name, tmp_path, monkeypatch):
    whole = _write(tmp_path, "a")
    real_open = os.open

    def refuse(path, flags, mode=0o777, **kwargs):
        if Path(path).name == name:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(runlog.os, "open", refuse)
    with pytest.raises(UserError, match=f"cannot open {tmp_path / name}: Permission denied"):
        RunLog(tmp_path).open()
    monkeypatch.undo()
    assert (tmp_path / LOG_NAME).read_bytes() == whole
    with RunLog(tmp_path):
        pass


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes any file")
def test_a_read_only_log_is_a_clear_error(tmp_path):
    _write(tmp_path, "a")
    (tmp_path / LOG_NAME).chmod(0o444)
    with pytest.raises(UserError, match="Permission denied"):
        RunLog(tmp_path).open()


# -- end to end: the CLI -----------------------------------------------------------------------
PLANTED = {
    "lock symlink": lambda run, victim: (run / LOCK_NAME).symlink_to(victim),
    "log symlink": lambda run, victim: (run / LOG_NAME).symlink_to(victim),
    "log directory": lambda run, victim: (run / LOG_NAME).mkdir(),
}
EXPECTED = {
    "lock symlink": f"{LOCK_NAME} is a symbolic link",
    "log symlink": f"{LOG_NAME} is a symbolic link",
    "log directory": f"{LOG_NAME} is a directory",
}


@pytest.mark.parametrize("planted", list(PLANTED))
def test_cli_refuses_a_planted_run_file_with_one_message(
    planted, env, tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    run.mkdir()
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(VICTIM)
    PLANTED[planted](run, victim)
    with FakeServer() as server:
        done = invoke(run_args(server.base_url, run), env, capsys, monkeypatch)
        assert server.requests == []
    assert_clean_error(done, EXPECTED[planted], code=7)
    assert victim.read_bytes() == VICTIM


def test_cli_disk_full_during_a_run_stops_with_one_message_and_resumes(
    env, tmp_path, capsys, monkeypatch, reference
):
    """The disk fills up while judgments are logged: exit 7 with one message, every logged
    line parses, and the same command later finishes with the reference scores."""
    out = tmp_path / "run"
    real_write = os.write
    state = {"judgments": 0}

    def full_after_three_judgments(fd: int, data) -> int:
        if bytes(data[:20]).startswith(b'{"kind":"judgment"'):
            state["judgments"] += 1
            if state["judgments"] > 3:
                real_write(fd, bytes(data[:10]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with FakeServer() as server:
        monkeypatch.setattr(runlog.os, "write", full_after_three_judgments)
        full = invoke(run_args(server.base_url, out), env, capsys, monkeypatch)
        monkeypatch.setattr(runlog.os, "write", real_write)
        assert_clean_error(
            full, f"cannot append to {out / LOG_NAME}", "No space left on device", code=7
        )
        logged = read_log(out)  # every line whole, the file ends with a newline
        assert sum(r["kind"] == "judgment" for r in logged) == 3
        again = invoke(run_args(server.base_url, out), env, capsys, monkeypatch)
    assert again.returncode == 0, again.stdout + again.stderr
    assert scores(results(out)) == scores(reference.results)
    assert [json.dumps(r) for r in read_log(out)[: len(logged)]] == [json.dumps(r) for r in logged]
