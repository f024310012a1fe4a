"""Item 6, usage accounting and budgets: tokens per backend summed from the server's `usage`;
--max-requests and --max-tokens-total stop the run cleanly and a re-run continues."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.reliability.helpers import (
    JUDGE,
    MODEL,
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    body_counts,
    finished,
    of_kind,
    read_log,
    record_body,
    results,
    run_args,
    scores,
)
from turnbench.testing.fake_server import FakeServer, Reply, default_content

PLANNED = PLANNED_ANSWERS + PLANNED_JUDGMENTS


def test_usage_per_backend_is_what_the_server_reported(reference):
    usage = reference.results["usage"]
    for role, name in (("model", MODEL), ("judge", JUDGE)):
        reported = reference.usage[name]
        assert reported["prompt_tokens"] > 0 and reported["completion_tokens"] > 0
        counted = {k: usage[role][k] for k in ("prompt_tokens", "completion_tokens")}
        assert counted == {
            "prompt_tokens": reported["prompt_tokens"],
            "completion_tokens": reported["completion_tokens"],
        }
        assert usage[role]["requests_logged"] == 16
        # the fake's model names have no price: no dollars are made up
        assert usage[role]["cost_usd"] is None and usage[role]["prices_as_of"]


def test_usage_of_a_judgment_includes_its_reasks(env, tmp_path):
    def no_rating_at_first(request: dict) -> Reply | str:
        if request["model"] == JUDGE and len(request["messages"]) == 2:
            return "I would rather not say."
        return default_content(request)

    out = tmp_path / "run"
    with FakeServer(responder=no_rating_at_first) as server:
        assert run_cli(run_args(server.base_url, out), env).returncode == 0
        reported = dict(server.usage[JUDGE])
    judge = results(out)["usage"]["judge"]
    assert results(out)["counts"]["reasks"] == PLANNED_JUDGMENTS
    assert (judge["prompt_tokens"], judge["completion_tokens"]) == (
        reported["prompt_tokens"],
        reported["completion_tokens"],
    )


def test_max_requests_stops_cleanly_and_a_rerun_continues(env, tmp_path, reference):
    out = tmp_path / "run"
    with FakeServer(latency=0.05) as server:
        stopped = run_cli(run_args(server.base_url, out, "--max-requests", "5"), env)
        sent_first = list(server.requests)
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert "--max-requests 5 reached" in stopped.stdout
        assert "Run incomplete" in stopped.stdout and "Traceback" not in stopped.stderr
        # exactly the budget was sent, and every request sent was logged (none thrown away)
        records = read_log(out)
        assert len(sent_first) == 5 and len(finished(records)) == 5
        assert {record_body(r) for r in finished(records)} == set(body_counts(sent_first))
        result = results(out)
        assert result["complete"] is False and result["stopped"] == "budget"

        resumed = run_cli(run_args(server.base_url, out), env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        counts = body_counts(server.requests)
    assert len(server.requests) == PLANNED and set(counts.values()) == {1}
    assert scores(results(out)) == scores(reference.results)


def test_max_tokens_total_stops_cleanly_and_a_rerun_continues(env, tmp_path, reference):
    out = tmp_path / "run"
    limit = 600
    with FakeServer(latency=0.05) as server:
        stopped = run_cli(run_args(server.base_url, out, "--max-tokens-total", str(limit)), env)
        sent_first = list(server.requests)
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert f"--max-tokens-total {limit} reached" in stopped.stdout
        records = read_log(out)
        logged = finished(records)
        used = sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in logged)
        assert used >= limit  # it stopped because the budget was reached ...
        assert len(sent_first) < PLANNED  # ... before the end ...
        # ... and what was in flight finished and was logged rather than thrown away
        assert {record_body(r) for r in logged} == set(body_counts(sent_first))
        assert of_kind(records, "failure") == []
        assert results(out)["stopped"] == "budget"

        resumed = run_cli(run_args(server.base_url, out), env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        counts = body_counts(server.requests)
    assert len(server.requests) == PLANNED and set(counts.values()) == {1}
    assert scores(results(out)) == scores(reference.results)
