"""Issue 38, class 5: a huge unterminated last line of a run's log was read again at every
poll of the runs page (`pending += chunk`, the offset never advanced past it: a 64 MiB line
cost 1.1-1.5 s a second). `LogTail` promises that every byte of a log is read once: the
start of an unfinished line (at most MAX_LINE_BYTES) is kept between polls and finished
when its newline arrives, a longer line by its start (its kind and key)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from turnbench.view import runs
from turnbench.view.runs import MAX_LINE_BYTES, LogTail

CONFIG = b'{"kind":"config","key":"c1","ts":1.0,"config":{"model":"m"}}\n'
ANSWER = b'{"kind":"answer","key":"a1","text":"short"}\n'


class ReadCounter:
    """os.read as the log tail calls it, counting the bytes it returns."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        real = os.read

        def counting(fd: int, size: int) -> bytes:
            data = real(fd, size)
            self.bytes += len(data)
            return data

        monkeypatch.setattr(runs.os, "read", counting)

    def take(self) -> int:
        done, self.bytes = self.bytes, 0
        return done


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_an_unterminated_huge_line_is_read_once_and_finished_later(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    head = b'{"kind":"answer","key":"huge","text":"'
    body = b"x" * (MAX_LINE_BYTES + (2 << 20))  # 2 MiB beyond what is kept of a line
    log.write_bytes(CONFIG + ANSWER + head + body)
    reads = ReadCounter(monkeypatch)
    tail = LogTail(log)

    tail.poll()
    assert reads.take() == log.stat().st_size  # read once, whole
    assert tail.answers == {"a1"} and tail.config == {"model": "m"}

    tail.poll()  # nothing was appended: nothing is read (before the fix: the whole line)
    assert reads.take() == 0
    assert len(tail.partial) <= MAX_LINE_BYTES  # what is kept of the line is bounded

    more = b"y" * (1 << 20)  # the line grows, still unterminated
    append(log, more)
    tail.poll()
    assert reads.take() == len(more)  # only what was appended
    assert tail.answers == {"a1"}  # (the line is not finished yet)

    rest = (
        b'"}\n{"kind":"judgment","key":"j1","score":7}\n'
        b'{"kind":"end","key":"e1","status":"finished","ts":2.0}\n'
    )
    append(log, rest)
    tail.poll()
    assert reads.take() == len(rest)
    # the huge line counts by its start (kind and key), and what follows it is read
    assert tail.answers == {"a1", "huge"}
    assert tail.judgments == {"j1"} and tail.ended and tail.unreadable == 0
    assert tail.offset == log.stat().st_size and not tail.partial and not tail.partial_cut


def test_an_oversized_record_of_another_kind_is_counted_unreadable_and_skipped(
    tmp_path, monkeypatch
):
    """A line too long to keep whose start is no answer, judgment or failure (a config
    record of many megabytes) cannot be parsed from its start: it is counted unreadable
    once its newline arrives, and the records after it are read."""
    log = tmp_path / "log.jsonl"
    huge_config = b'{"kind":"config","key":"c2","config":{"pad":"' + b"z" * (MAX_LINE_BYTES + 4096)
    log.write_bytes(CONFIG + huge_config)
    reads = ReadCounter(monkeypatch)
    tail = LogTail(log)
    tail.poll()
    tail.poll()
    assert reads.take() == log.stat().st_size  # the second poll read nothing
    append(log, b'"}}\n' + ANSWER)
    tail.poll()
    assert reads.take() == len(b'"}}\n' + ANSWER)
    assert tail.unreadable == 1 and tail.answers == {"a1"}
    assert tail.config == {"model": "m"}  # the unreadable config did not replace it
