"""--max-cost holds for every attempt, through the real CLI on the fake server.

A request can take up to --max-attempts attempts, and one that timed out or got a 5xx may
still be billed by the provider. So every attempt is admitted against the budget before it
is sent, one that returned nothing counts at its worst case, and a resumed run counts what
its earlier invocations spent. The bound checked here is computed from what the server saw
(`billable`): every POST it answered with a usage at that usage's price, every other POST at
its worst case (its prompt at one token per UTF-8 byte, plus 4 a message and 3 for the
reply; its whole max_tokens), at the price file's prices.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE, MODEL, of_kind, read_log, results, run_args
from tests.reliability.test_max_cost import PRICES, SMALL, price_file
from turnbench.testing.fake_server import FakeServer, Reply, default_content

PRICE_OF = {MODEL: PRICES["models"]["openai/" + MODEL], JUDGE: PRICES["models"]["openai/" + JUDGE]}
ATTEMPTS = ("--max-attempts", "3", "--retry-initial-wait", "0.01")


def worst(request: dict[str, Any]) -> float:
    """The most one POST can be billed, from its body (see the module docstring)."""
    price = PRICE_OF[request["model"]]
    messages = request["messages"]
    prompt = sum(len(m["content"].encode("utf-8")) for m in messages) + 4 * len(messages) + 3
    return (prompt * price["input"] + request["max_tokens"] * price["output"]) / 1e6


def real(server: FakeServer) -> float:
    """What the replies the server answered with a usage cost, by its own tally."""
    return (
        sum(
            (tally["prompt_tokens"] * PRICE_OF[model]["input"])
            + (tally["completion_tokens"] * PRICE_OF[model]["output"])
            for model, tally in server.usage.items()
        )
        / 1e6
    )


def billable(server: FakeServer) -> float:
    """The most the provider could bill for everything the server received."""
    return real(server) + sum(worst(r) for m in PRICE_OF for r in failed_posts(server, m))


def failing(reply: Reply, model: str, *, every: bool = False) -> Callable[[dict[str, Any]], Reply]:
    """A responder that answers `reply` to `model`'s first attempt of each request (to every
    attempt with `every`) and answers everything else normally."""
    seen: set[str] = set()
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> Reply:
        if request.get("model") == model:
            digest = json.dumps(request["messages"], sort_keys=True)
            with lock:
                first = digest not in seen
                seen.add(digest)
            if first or every:
                return reply
        return Reply(content=default_content(request))

    return respond


def failed_posts(server: FakeServer, model: str) -> list[dict[str, Any]]:
    return [
        request
        for request, outcome in zip(server.requests, server.outcomes, strict=True)
        if request.get("model") == model and outcome != "200"
    ]


def test_a_model_that_fails_every_attempt_cannot_spend_more_than_max_cost(env, tmp_path):
    """Every attempt of the model answers 500: each request would take 3 attempts, and the
    budget covers about 6 of them."""
    out = tmp_path / "run"
    limit = 0.3
    with FakeServer(responder=failing(Reply(status=500), MODEL, every=True)) as server:
        args = run_args(
            server.base_url, out, *SMALL, *ATTEMPTS, "--prices", str(price_file(tmp_path))
        )
        done = run_cli([*args, "--max-cost", str(limit)], env)
        assert done.returncode == 1, done.stdout + done.stderr
        posts = list(server.requests)
    spent = sum(worst(r) for r in posts)
    assert spent <= limit, f"{len(posts)} POSTs could cost ${spent:.4f} > ${limit}"
    assert len(posts) >= 3  # the budget was used, not refused at the first request
    assert "--max-cost 0.3 reached" in done.stdout
    usage = results(out)["usage"]["model"]
    # every attempt returned nothing; results.json says so, at its worst case
    assert usage["unanswered_attempts"] == len(posts)
    assert abs(usage["unanswered_cost_usd_worst_case"] - spent) < 1e-9
    assert usage["cost_usd"] == 0.0
    attempts = of_kind(read_log(out), "attempt")
    assert len(attempts) == len(posts) and {a["role"] for a in attempts} == {"model"}
    said = " ".join(done.stdout.split())  # (the terminal wraps long lines)
    assert (
        f"attempts that returned nothing, which a provider may bill: answers {len(posts)}" in said
    )


def test_timed_out_first_attempts_count_at_their_worst_case(env, tmp_path):
    """Every first attempt of the model times out, its retry succeeds: each answer costs two
    attempts, and the budget must cover both."""
    out = tmp_path / "run"
    limit = 0.6
    responder = failing(Reply(action="hang"), MODEL)
    with FakeServer(responder=responder, hang_seconds=3.0) as server:
        args = run_args(
            server.base_url,
            out,
            *SMALL,
            *ATTEMPTS,
            "--request-timeout",
            "1",
            "--prices",
            str(price_file(tmp_path)),
        )
        done = run_cli([*args, "--max-cost", str(limit)], env)
        assert done.returncode == 1, done.stdout + done.stderr
        timed_out = failed_posts(server, MODEL)
        spent = billable(server)
    assert spent <= limit, f"{len(server.requests)} POSTs could cost ${spent:.4f} > ${limit}"
    assert timed_out and all(o in ("hang", "200") for o in server.outcomes)
    usage = results(out)["usage"]
    # (on a loaded machine a reply can come later than the timeout: the client counts that
    # attempt too, so the books hold at least what the server saw time out)
    assert usage["model"]["unanswered_attempts"] >= len(timed_out)
    expected = sum(worst(r) for r in timed_out)
    assert usage["model"]["unanswered_cost_usd_worst_case"] >= expected - 1e-9
    assert usage["judge"]["unanswered_attempts"] == 0
    assert usage["judge"]["unanswered_cost_usd_worst_case"] == 0.0
    # what the books hold never exceeds the limit either: real spend plus the worst case
    total = (
        usage["model"]["cost_usd"]
        + usage["judge"]["cost_usd"]
        + usage["model"]["unanswered_cost_usd_worst_case"]
    )
    assert total <= limit


def test_a_judge_whose_attempts_fail_cannot_spend_more_than_max_cost(env, tmp_path):
    """The model answers; every attempt of the judge answers 502."""
    out = tmp_path / "run"
    limit = 1.0
    with FakeServer(responder=failing(Reply(status=502), JUDGE, every=True)) as server:
        args = run_args(
            server.base_url, out, *SMALL, *ATTEMPTS, "--prices", str(price_file(tmp_path))
        )
        done = run_cli([*args, "--max-cost", str(limit)], env)
        assert done.returncode == 1, done.stdout + done.stderr
        judge_failed = failed_posts(server, JUDGE)
        spent = billable(server)
    assert spent <= limit, f"{len(server.requests)} POSTs could cost ${spent:.4f} > ${limit}"
    assert len(judge_failed) >= 2
    usage = results(out)["usage"]["judge"]
    assert usage["unanswered_attempts"] == len(judge_failed)
    expected = sum(worst(r) for r in judge_failed)
    assert abs(usage["unanswered_cost_usd_worst_case"] - expected) < 1e-9
    said = " ".join(done.stdout.split())  # (the terminal wraps long lines)
    bill = said.split("returned nothing, which a provider may bill:")[1]
    assert f"judgments {len(judge_failed)} (up to $" in bill


def test_a_resumed_run_counts_what_earlier_invocations_spent(env, tmp_path):
    """Stopped by --max-cost, re-run with the same --max-cost: the second invocation may
    spend only what is left, so both together stay within the limit."""
    out = tmp_path / "run"
    limit = 0.6
    with FakeServer(responder=failing(Reply(status=500), MODEL)) as server:
        args = run_args(
            server.base_url, out, *SMALL, *ATTEMPTS, "--prices", str(price_file(tmp_path))
        )
        first = run_cli([*args, "--max-cost", str(limit)], env)
        assert first.returncode == 1, first.stdout + first.stderr
        sent_first = len(server.requests)
        again = run_cli([*args, "--max-cost", str(limit)], env)
        assert again.returncode == 1, again.stdout + again.stderr
        spent = billable(server)
        failed = failed_posts(server, MODEL)
    assert spent <= limit, f"{len(server.requests)} POSTs over two invocations: ${spent:.4f}"
    assert sent_first >= 2
    assert "by earlier invocations of this run" in " ".join(again.stdout.split())
    # results.json counts every invocation's unanswered attempts
    assert results(out)["usage"]["model"]["unanswered_attempts"] == len(failed)


def test_without_max_cost_results_still_report_unanswered_attempts(env, tmp_path):
    """No budget: every first attempt of the model answers 500; results.json counts them
    and prices them at their worst case."""
    out = tmp_path / "run"
    with FakeServer(responder=failing(Reply(status=500), MODEL)) as server:
        args = run_args(
            server.base_url, out, *SMALL, *ATTEMPTS, "--prices", str(price_file(tmp_path))
        )
        done = run_cli(args, env)
        assert done.returncode == 0, done.stdout + done.stderr
        failed = failed_posts(server, MODEL)
    usage = results(out)["usage"]["model"]
    assert usage["unanswered_attempts"] == len(failed) == 16
    assert abs(usage["unanswered_cost_usd_worst_case"] - sum(worst(r) for r in failed)) < 1e-9


def test_an_anthropic_judge_whose_attempts_time_out_cannot_spend_more_than_max_cost(env, tmp_path):
    """The Anthropic backend's retry loop is admitted the same way. Every judge reply
    trickles past --request-timeout. Its prompt tokens are free and its output dear, so
    each attempt's worst case is exactly its 64-token limit: $0.64, three of them in $2."""
    from tests.reliability.test_anthropic_cli import KEY_VAR, anthropic_env, rated
    from turnbench.testing.fake_anthropic import FakeAnthropic

    claude = "anthropic/claude-test"
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "models": {
                    "openai/" + MODEL: {"input": 0.0, "output": 0.0},
                    claude: {"input": 0.0, "output": 10_000.0},
                }
            }
        )
    )
    out = tmp_path / "run"
    limit, each = 2.0, 64 * 10_000.0 / 1e6
    with FakeServer() as model, FakeAnthropic(api_key="k-123456", responder=rated) as judge:
        judge.trickle = 0.5  # one byte each 0.5 s: every attempt times out
        args = run_args(
            model.base_url, out, *SMALL, *ATTEMPTS, "--judge-api-key-env", KEY_VAR,
            "--request-timeout", "1", "--prices", str(prices), "--max-cost", str(limit),
            judge=claude, judge_url=judge.base_url,
        )  # fmt: skip
        done = run_cli(args, anthropic_env(env, "k-123456"))
        posts = judge.counts["messages"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert posts * each <= limit, f"{posts} judge POSTs at ${each} each"
    usage = results(out)["usage"]["judge"]
    # every attempt timed out; one that timed out before the server read it counts too
    attempts = usage["unanswered_attempts"]
    assert attempts >= 1 and posts <= attempts and attempts * each <= limit
    assert abs(usage["unanswered_cost_usd_worst_case"] - attempts * each) < 1e-9
