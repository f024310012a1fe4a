"""Item 2, fault tolerance: every injected fault is retried, results equal a fault-free run,
retries are bounded by count and by time, and what finally fails is retried next run."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
import urllib.request
from collections import Counter
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import (
    MODEL,
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    body,
    body_counts,
    finished,
    is_judge,
    of_kind,
    read_log,
    record_body,
    results,
    run_args,
    scores,
)
from turnbench.backends.openai_compat import TransientError
from turnbench.backends.retry import (
    GaveUp,
    RetryPolicy,
    backoff_delay,
    parse_retry_after,
    run_with_retries,
)
from turnbench.errors import RequestFailedError
from turnbench.testing.fake_server import (
    FAULTS,
    SOFT_FAULTS,
    FakeServer,
    Reply,
    default_content,
)

PLANNED = PLANNED_ANSWERS + PLANNED_JUDGMENTS
HANG = 60.0  # a hung request never answers in time; --request-timeout 1 must cut it off


def first_attempt_fails(kinds: tuple[str, ...]):
    """A responder that fails the first request of every body, cycling through `kinds`."""
    seen: dict[str, int] = {}

    def respond(request: dict[str, Any]) -> Reply:
        key = body(request)
        content = default_content(request)
        if key in seen:
            return Reply(content=content)
        seen[key] = len(seen)
        kind = kinds[seen[key] % len(kinds)]
        if kind == "429":
            return Reply(status=429)
        if kind == "429-retry-after":
            return Reply(status=429, headers={"Retry-After": "0"})
        if kind in ("500", "502", "503"):
            return Reply(status=int(kind))
        return Reply(content=content, action=kind)

    return respond


def test_every_fault_kind_is_retried_and_changes_nothing(env, tmp_path, reference):
    out = tmp_path / "run"
    with FakeServer(responder=first_attempt_fails(FAULTS), hang_seconds=HANG) as server:
        done = run_cli(run_args(server.base_url, out, "--request-timeout", "1"), env)
        requests, outcomes = list(server.requests), list(server.outcomes)
    assert done.returncode == 0, done.stdout + done.stderr
    # every fault kind was served at least three times (32 bodies, 10 kinds)
    served = Counter(outcomes)
    assert all(served[kind] >= 3 for kind in FAULTS), served
    # each body failed once, then succeeded once: two requests per planned item
    assert sorted(set(body_counts(requests).values())) == [2]
    assert len(requests) == 2 * PLANNED
    records = read_log(out)
    assert of_kind(records, "failure") == []
    assert all(record["attempts"] == 2 for record in finished(records))
    assert max(record["latency_s"] for record in finished(records)) < HANG / 2
    assert scores(results(out)) == scores(reference.results)


def test_thirty_percent_random_faults_complete_in_one_run_with_equal_results(
    env, tmp_path, record_property
):
    """--limit 3 (96 answers and judgments): a clean run, then the same run with 30% of all
    requests failing at random (every kind in FAULTS, hangs past --request-timeout included)."""
    args = ("--request-timeout", "1", "--concurrency", "8")
    with FakeServer() as clean_server:
        clean = run_cli(run_args(clean_server.base_url, tmp_path / "clean", *args, limit=3), env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    out = tmp_path / "faulty"
    with FakeServer(fault_rate=0.3, faults=FAULTS, seed=11, hang_seconds=HANG) as server:
        done = run_cli(run_args(server.base_url, out, *args, limit=3), env)
        requests, outcomes = list(server.requests), list(server.outcomes)
    assert done.returncode == 0, done.stdout + done.stderr
    result = results(out)
    assert scores(result) == scores(results(tmp_path / "clean"))
    assert result["complete"] and result["request_failures"] == []
    # the same tokens as the clean run; and every failed attempt that may have been billed
    # (not a 429 or 503 refusal) counted as one that returned nothing
    unanswered = {role: row.pop("unanswered_attempts") for role, row in result["usage"].items()}
    clean_usage = results(tmp_path / "clean")["usage"]
    for row in [*result["usage"].values(), *clean_usage.values()]:
        row.pop("unanswered_cost_usd_worst_case")
    assert {role: row.pop("unanswered_attempts") for role, row in clean_usage.items()} == {
        "model": 0,
        "judge": 0,
    }
    assert result["usage"] == clean_usage
    refused = sum(o in ("429", "429-retry-after", "503") for o in outcomes)
    assert sum(unanswered.values()) == len(requests) - 3 * PLANNED - refused > 0

    planned = 3 * PLANNED
    records = read_log(out)
    done_records = finished(records)
    assert len(done_records) == planned
    assert max(record["latency_s"] for record in done_records) < HANG / 2  # hangs were cut
    faults = Counter(o for o in outcomes if o != "200")
    assert len(faults) >= 6, faults  # a broad mix, not one kind
    counts = body_counts(requests)
    # duplicates come only from retries: each body was sent exactly as often as the
    # attempts recorded on its record; no finished work was requested again
    by_body = {record_body(r): r for r in done_records}
    assert set(counts) == set(by_body)
    redone = sum(counts[key] - by_body[key]["attempts"] for key in counts)
    assert redone == 0
    retried = sum(r["attempts"] - 1 for r in done_records)
    assert len(requests) == planned + retried
    share = sum(faults.values()) / len(requests)
    assert 0.2 <= share <= 0.4, share
    summary = {
        "fault_rate": 0.3,
        "faults_served": dict(sorted(faults.items())),
        "requests_sent": len(requests),
        "planned": planned,
        "retried": retried,
        "failed": len(of_kind(records, "failure")),
        "duplicated_by_retry": sum(n - 1 for n in counts.values()),
        "duplicated_by_redo": redone,
    }
    record_property("fault_summary", summary)
    print(f"\nfault summary: {summary}")


def test_finish_reason_length_is_an_answer_and_a_cut_judge_reply_is_reasked(env, tmp_path):
    """A cut answer is kept as the answer (with its finish_reason); a judge reply cut before
    its rating is re-asked, and the raw cut reply is kept."""

    def cut(request: dict[str, Any]) -> Reply:
        content = default_content(request)
        if request["model"] == MODEL or len(request["messages"]) == 2:  # answers, first asks
            return Reply(content=content[: len(content) // 2], finish_reason="length")
        return Reply(content=content)  # the re-ask gets a whole reply

    out = tmp_path / "run"
    with FakeServer(responder=cut) as server:
        done = run_cli(run_args(server.base_url, out), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    records = read_log(out)
    answers = of_kind(records, "answer")
    assert len(answers) == PLANNED_ANSWERS
    for answer in answers:
        full = default_content({"messages": answer["messages"]})
        assert answer["finish_reason"] == "length" and answer["text"] == full[: len(full) // 2]
    judgments = of_kind(records, "judgment")
    assert len(judgments) == PLANNED_JUDGMENTS
    for judgment in judgments:
        assert judgment["status"] == "scored" and len(judgment["outputs"]) == 2
        assert "[[" not in judgment["outputs"][0]  # the cut first reply, kept verbatim
        assert judgment["score"] == float(judgment["outputs"][1].split("[[")[1].split("]]")[0])
    assert sum(is_judge(r) for r in requests) == 2 * PLANNED_JUDGMENTS
    result = results(out)
    assert result["complete"] and result["counts"]["reasks"] == PLANNED_JUDGMENTS


def always(reply: Reply):
    def respond(request: dict[str, Any]) -> Reply:
        return reply

    return respond


def test_retries_are_bounded_by_count_and_failures_are_retried_next_run(env, tmp_path, reference):
    out = tmp_path / "run"
    with FakeServer(responder=always(Reply(status=500))) as broken:
        done = run_cli(run_args(broken.base_url, out, "--max-attempts", "3"), env)
        sent = body_counts(broken.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    # the 8 first-turn answers, each tried exactly --max-attempts times; nothing sent onward
    assert len(sent) == 8 and set(sent.values()) == {3}
    records = read_log(out)
    failures = of_kind(records, "failure")
    assert len(failures) == 8 and {f["attempts"] for f in failures} == {3}
    assert all("HTTP 500" in f["error"] for f in failures)
    assert finished(records) == []
    result = results(out)
    assert result["complete"] is False and len(result["request_failures"]) == 8
    assert "8 request(s) failed after all retries" in done.stdout
    assert "Run incomplete" in done.stdout

    with FakeServer() as healthy:
        again = run_cli(run_args(healthy.base_url, out, "--max-attempts", "3"), env)
        resent = body_counts(healthy.requests)
    assert again.returncode == 0, again.stdout + again.stderr
    assert set(sent) <= set(resent)  # the failed items were retried ...
    assert len(resent) == PLANNED and set(resent.values()) == {1}  # ... and all work, once
    result = results(out)
    assert result["request_failures"] == [] and scores(result) == scores(reference.results)


def test_other_client_errors_are_not_retried(env, tmp_path):
    out = tmp_path / "run"
    reply = Reply(status=400, body={"error": {"message": "unsupported parameter"}})
    with FakeServer(responder=always(reply)) as refusing:
        done = run_cli(run_args(refusing.base_url, out), env)
        sent = body_counts(refusing.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(sent) == 8 and set(sent.values()) == {1}
    failures = of_kind(read_log(out), "failure")
    assert len(failures) == 8 and {f["attempts"] for f in failures} == {1}
    assert all("HTTP 400" in f["error"] and "unsupported parameter" in f["error"] for f in failures)


def test_retries_are_bounded_by_total_time(env, tmp_path):
    """Many allowed attempts, a short --retry-max-time: the time bound ends the retries."""
    out = tmp_path / "run"
    args = ["--max-attempts", "1000", "--retry-max-time", "1", "--retry-initial-wait", "0.1"]
    with FakeServer(responder=always(Reply(status=503))) as broken:
        started = time.monotonic()
        done = run_cli(run_args(broken.base_url, out, *args), env, timeout=60)
        elapsed = time.monotonic() - started
        sent = body_counts(broken.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    failures = of_kind(read_log(out), "failure")
    assert len(failures) == 8
    assert all(2 <= f["attempts"] < 1000 for f in failures), [f["attempts"] for f in failures]
    assert all(sent[key] < 1000 for key in sent)
    assert elapsed < 30


def test_retry_after_longer_than_the_time_budget_gives_up_at_once(env, tmp_path):
    """A server asking for 30 s waits, a 1 s --retry-max-time: no attempt is started (and no
    sleep begun) past the deadline, so the run ends in seconds, not after 30 s sleeps."""
    out = tmp_path / "run"
    reply = Reply(status=429, headers={"Retry-After": "30"})
    with FakeServer(responder=always(reply)) as busy:
        started = time.monotonic()
        done = run_cli(run_args(busy.base_url, out, "--retry-max-time", "1"), env, timeout=60)
        elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    failures = of_kind(read_log(out), "failure")
    assert len(failures) == 8 and {f["attempts"] for f in failures} == {1}
    assert elapsed < 25


def test_retry_after_is_honoured(env, tmp_path, reference):
    """One body is refused with Retry-After: 1, another with a bare 429: the first waits the
    server's second, the second only the (tiny) backoff."""
    arrivals: dict[str, list[float]] = {}
    targets: dict[str, str] = {}

    def respond(request: dict[str, Any]) -> Reply:
        key = body(request)
        arrivals.setdefault(key, []).append(time.monotonic())
        if request["model"] == MODEL and len(targets) < 2 and key not in targets:
            targets[key] = "retry-after" if not targets else "bare"
            if targets[key] == "retry-after":
                return Reply(status=429, headers={"Retry-After": "1"})
            return Reply(status=429)
        return Reply(content=default_content(request))

    out = tmp_path / "run"
    with FakeServer(responder=respond) as server:
        done = run_cli(run_args(server.base_url, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    gaps = {kind: arrivals[key][1] - arrivals[key][0] for key, kind in targets.items()}
    assert gaps["retry-after"] >= 0.95, gaps
    assert gaps["bare"] < 0.9, gaps
    assert scores(results(out)) == scores(reference.results)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the precise one wins
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_values(headers, seconds):
    assert parse_retry_after(headers) == seconds


def test_retry_after_http_date():
    in_a_minute = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (parse_retry_after({"retry-after": in_a_minute}) or 0) <= 61


def test_server_waits_are_capped_and_backoff_is_jittered():
    policy = RetryPolicy(initial_wait=1.0, max_wait=60.0)
    assert backoff_delay(policy, 1, retry_after=3600.0) == 60.0  # capped
    assert backoff_delay(policy, 1, retry_after=0.5) == 0.5
    waits = [backoff_delay(policy, 4) for _ in range(200)]
    assert all(0.0 <= w <= 8.0 for w in waits)  # full jitter within 1 s x 2^3
    assert len(set(waits)) > 100


def test_the_sdk_paths_retry_by_the_same_policy_and_give_up_in_time():
    """The Anthropic and batch clients retry through `retry.run_with_retries` (the one
    retry layer): a transient error is retried, the last attempt's error is the one given
    up with, and a request that cannot succeed keeps its attempt count."""
    policy = RetryPolicy(max_attempts=3, initial_wait=0.001, max_wait=0.001)
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise TransientError(f"503 number {len(calls)}")
        return "ok"

    assert asyncio.run(run_with_retries(flaky, policy)) == ("ok", 3)

    async def always() -> str:
        calls.append(1)
        raise TransientError(f"503 number {len(calls)}")

    calls.clear()
    with pytest.raises(GaveUp) as gave_up:
        asyncio.run(run_with_retries(always, policy))
    assert gave_up.value.attempts == 3 and str(gave_up.value) == "503 number 3"

    async def refused() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise TransientError("429", retry_after=0.0)
        raise RequestFailedError("HTTP 400: bad request", 1)

    calls.clear()
    with pytest.raises(RequestFailedError) as failed:
        asyncio.run(run_with_retries(refused, policy))
    assert failed.value.attempts == 2
    patient = RetryPolicy(max_attempts=100, max_total_seconds=0.05, initial_wait=0.02)
    calls.clear()
    with pytest.raises(GaveUp):
        asyncio.run(run_with_retries(always, patient))
    assert len(calls) < 100  # the total time, not the attempts, ended it


def test_fake_server_length_fault_cuts_the_reply():
    """The fake server's own "length" fault (for benchmarks and manual runs)."""
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Say something."}]}
    with FakeServer(fault_rate=1.0, faults=SOFT_FAULTS) as server:
        http = urllib.request.Request(
            server.base_url + "/chat/completions",
            data=json.dumps(request).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(http, timeout=10) as response:
            reply = json.loads(response.read())
    full = default_content(request)
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["choices"][0]["message"]["content"] == full[: len(full) // 2]
    assert server.outcomes == ["length"]
