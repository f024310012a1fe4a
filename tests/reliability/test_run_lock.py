"""Item 7, concurrency safety: a second process on a run directory in use refuses at once,
and the first one's log stays whole."""

from __future__ import annotations

import threading

from tests.conftest import run_cli
from tests.reliability.helpers import (
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    assert_clean_error,
    body_counts,
    finished,
    is_judge,
    log_lines,
    read_log,
    results,
    run_args,
    scores,
    start_cli,
    wait_until,
)
from turnbench.testing.fake_server import FakeServer, Reply, default_content


def test_second_process_on_the_same_run_directory_refuses(env, tmp_path, reference):
    out = tmp_path / "run"
    second_done = threading.Event()

    def judges_slow_until_the_second_ran(request: dict) -> Reply:
        slow = is_judge(request) and not second_done.is_set()
        return Reply(content=default_content(request), delay=1.0 if slow else 0.0)

    with FakeServer(responder=judges_slow_until_the_second_ran) as server:
        args = run_args(server.base_url, out, "--concurrency", "2", "--request-timeout", "30")
        first = start_cli(args, env)
        try:
            wait_until(
                lambda: len(log_lines(out)) >= 2,
                what="the first run to log work",
                state=lambda: (first.poll(), len(server.requests)),
            )
            second = run_cli(args, env)
            second_done.set()
            assert first.poll() is None, "the first run ended before the second was tried"
        finally:
            stdout, stderr = first.communicate(timeout=120)
        counts = body_counts(server.requests)

        assert_clean_error(second, f"{out} is in use by another turnbench process", code=7)
        assert f"pid {first.pid}" in second.stderr
        assert first.returncode == 0, stdout + stderr
        # the first run's log is whole and holds each piece of work once
        records = read_log(out)
        keys = [r["key"] for r in finished(records)]
        assert len(keys) == len(set(keys)) == PLANNED_ANSWERS + PLANNED_JUDGMENTS
        assert set(counts.values()) == {1}  # the second process sent nothing
        assert scores(results(out)) == scores(reference.results)
