"""Item 1, crash safety: SIGKILL loses at most what was in flight, a torn last line is cut
off with a warning, Ctrl-C stops cleanly, and a re-run finishes without repaying work."""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import (
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    body,
    body_counts,
    finished,
    is_judge,
    log_lines,
    of_kind,
    read_log,
    read_log_tolerant,
    record_body,
    results,
    run_args,
    scores,
    start_cli,
    wait_until,
)
from turnbench.testing.fake_server import FakeServer, Reply, default_content

CONCURRENCY = 4  # per endpoint: at most 2 x 4 requests are in flight at any moment
IN_FLIGHT = 2 * CONCURRENCY
PLANNED = PLANNED_ANSWERS + PLANNED_JUDGMENTS


def _records(out: Path) -> list[dict[str, Any]]:
    return read_log_tolerant(out) if (out / "log.jsonl").exists() else []


# When to pull the plug, as a condition on (server, run directory).
KILL_MOMENTS: dict[str, Callable[[FakeServer, Path], bool]] = {
    # requests are out but nothing has been logged yet
    "first-requests-in-flight": lambda server, out: len(server.requests) >= 3,
    # answers are being generated (and the first judgments started)
    "during-answers": lambda server, out: len(of_kind(_records(out), "answer")) >= 2,
    # most answers are done, judgments are being logged
    "during-judgments": lambda server, out: len(of_kind(_records(out), "judgment")) >= 6,
}


@pytest.mark.parametrize("moment", list(KILL_MOMENTS))
def test_sigkill_loses_at_most_in_flight_work_and_resume_repays_nothing(
    moment, env, tmp_path, reference
):
    out = tmp_path / "run"
    with FakeServer(latency=0.06) as server:
        args = run_args(server.base_url, out, "--concurrency", str(CONCURRENCY))
        child = start_cli(args, env)
        try:
            wait_until(
                lambda: KILL_MOMENTS[moment](server, out),
                what=moment,
                state=lambda: (child.poll(), len(server.requests), len(log_lines(out))),
            )
        finally:
            child.send_signal(signal.SIGKILL)
            stdout, stderr = child.communicate()
        assert child.returncode == -signal.SIGKILL, (child.returncode, stdout, stderr)
        before = finished(read_log_tolerant(out))
        sent_before = len(server.requests)
        # what was sent but is not in the log can only be what was in flight
        assert sent_before - len(before) <= IN_FLIGHT, (sent_before, len(before))

        resumed = run_cli(args, env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        counts = body_counts(server.requests)

    # every answer and judgment logged before the kill was requested exactly once in total
    for record in before:
        assert counts[record_body(record)] == 1, record["key"]
    duplicated = sum(n - 1 for n in counts.values())
    assert duplicated <= IN_FLIGHT
    assert len(server.requests) == PLANNED + duplicated
    # the resumed run is whole and scores exactly like a run that was never killed
    records = read_log(out)
    assert len({r["key"] for r in finished(records)}) == len(finished(records)) == PLANNED
    assert scores(results(out)) == scores(reference.results)


def _tear(path: Path) -> dict[str, Any]:
    """Cut the log's last record in half, as a writer killed mid-line leaves it; return the
    record that was lost. (A killed invocation writes no end record: the finished log's is
    dropped first.)"""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    if json.loads(data[start:])["kind"] == "end":
        data = data[:start]
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    last = data[start:].rstrip(b"\n")
    path.write_bytes(data[:start] + last[: len(last) // 2])
    return json.loads(last)


def _finished_copy(reference, tmp_path: Path) -> Path:
    """A copy of the reference run: a complete log to damage."""
    out = tmp_path / "run"
    shutil.copytree(reference.out, out)
    return out


def _without_configs(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # a resume appends its own config and end records
    return [r for r in records if r["kind"] not in ("config", "end")]


def test_torn_last_record_is_cut_off_with_a_warning_and_redone(env, tmp_path, reference):
    out = _finished_copy(reference, tmp_path)
    lost = _tear(out / "log.jsonl")
    assert lost["kind"] in ("answer", "judgment")
    with FakeServer() as server:
        again = run_cli(run_args(server.base_url, out), env)
        new_requests = list(server.requests)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "last line is incomplete" in again.stdout, again.stdout
    assert "Traceback" not in again.stderr
    # only the torn record's work is redone, once
    assert [body(r) for r in new_requests] == [record_body(lost)]
    records = read_log(out)  # every line parses: the fragment was cut off, not glued onto
    assert len(finished(records)) == len(finished(reference.records))
    assert [r["key"] for r in finished(records)].count(lost["key"]) == 1
    assert scores(results(out)) == scores(reference.results)


def test_partial_line_after_complete_log_is_ignored_and_removed(env, tmp_path, reference):
    out = _finished_copy(reference, tmp_path)
    with (out / "log.jsonl").open("ab") as handle:
        handle.write(b'{"kind": "judgment", "key": "judgment|openai/judge-model|openai/mo')
    with FakeServer() as server:
        again = run_cli(run_args(server.base_url, out), env)
        assert server.requests == []  # nothing was lost, so nothing is requested
    assert again.returncode == 0, again.stdout + again.stderr
    assert "last line is incomplete" in again.stdout
    assert _without_configs(read_log(out)) == _without_configs(reference.records)
    assert scores(results(out)) == scores(reference.results)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_cancels_in_flight_work_and_a_later_run_finishes(stop, env, tmp_path, reference):
    """Ctrl-C (or SIGTERM) while judgments hang: exit at once, non-zero, log whole, results say
    incomplete; the next run requests only what is missing."""

    def answers_fast_judges_hang(request: dict) -> Reply:
        return Reply(content=default_content(request), delay=60.0 if is_judge(request) else 0.0)

    out = tmp_path / "run"
    with FakeServer(responder=answers_fast_judges_hang) as slow:
        child = start_cli(run_args(slow.base_url, out), env)
        try:
            wait_until(
                lambda: (
                    len(of_kind(_records(out), "answer")) == PLANNED_ANSWERS
                    and sum(is_judge(r) for r in slow.requests) >= 8
                ),
                what="all answers logged and judgments in flight",
            )
        except BaseException:
            child.kill()
            raise
        interrupted_at = time.monotonic()
        child.send_signal(stop)
        stdout, stderr = child.communicate(timeout=30)
        stop_seconds = time.monotonic() - interrupted_at

    assert child.returncode == 130
    assert stop_seconds < 15  # in-flight requests (60 s replies) were cancelled, not awaited
    assert "Traceback" not in stderr, stderr
    assert "interrupted" in stdout and "Run incomplete" in stdout, stdout
    records = read_log(out)  # the log is whole
    assert len(of_kind(records, "answer")) == PLANNED_ANSWERS
    assert of_kind(records, "judgment") == []  # the cancelled judgments left no record
    stopped = results(out)
    assert stopped["complete"] is False and stopped["stopped"] == "interrupted"
    assert stopped["counts"]["pending"] == PLANNED_JUDGMENTS

    with FakeServer() as fast:
        done = run_cli(run_args(fast.base_url, out), env)
        resent = list(fast.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    # the later run asks only for the judgments; no answer is requested again
    assert len(resent) == PLANNED_JUDGMENTS and all(is_judge(r) for r in resent)
    assert scores(results(out)) == scores(reference.results)
    assert len(log_lines(out)) == len(read_log(out))
