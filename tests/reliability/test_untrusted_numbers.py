"""Issue 10 items 9 and 10: numbers that cannot be trusted are never counted.

A judgment whose score is no number (`true` was read as 1.0 and averaged) and a record whose
usage is negative or no number (a prompt_tokens of -1e9 made cost_usd -1249.99) are listed
under invalid_records, left out of every score and of the usage sums, and their work is
done again. A server whose usage is missing or invalid on every reply cannot slip past
--max-tokens-total: the budget counts the --dry-run estimate instead, and says so once.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import (
    JUDGE,
    JUDGE_SPEC,
    MODEL_SPEC,
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    read_log,
    results,
    run_args,
)
from turnbench.journal.logindex import record_problem
from turnbench.journal.runlog import parse_record_bytes
from turnbench.record_keys import judgment_key
from turnbench.testing.fake_server import FakeServer, Reply, default_content

PRICES = {
    "as_of": "2027-02-01",
    "models": {
        MODEL_SPEC: {"input": 1.0, "output": 2.0},
        JUDGE_SPEC: {"input": 1.0, "output": 2.0},
    },
}
ESTIMATE_WARNING = "--max-tokens-total counts an estimate for such replies instead"


# -- reading one record ---------------------------------------------------------------------------
JUDGMENT = {
    "kind": "judgment",
    "key": judgment_key("openai/j", "m", 1, 1),
    "judge": "openai/j",
    "model": "m",
    "sample_id": 1,
    "turn": 1,
    "prompt_name": "p",
    "messages": [],
    "outputs": ["Rating: [[5]]"],
    "parser": "rating-strict",
    "status": "scored",
    "score": 5,
    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
}


def _problem(**change: object) -> str | None:
    record = parse_record_bytes(json.dumps({**JUDGMENT, **change}).encode())
    return record_problem(record)


def test_a_sound_record_has_no_problem():
    assert _problem() is None
    assert _problem(score=5.0) is None
    assert _problem(usage={"prompt_tokens": 3.0}) is None  # a whole float is a count


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"score": True}, "its score is true, a boolean, not a number"),
        ({"score": False}, "its score is false, a boolean, not a number"),
        ({"score": "7"}, "its score is a string, not a number"),
        ({"score": {"value": 7}}, "its score is an object, not a number"),
        ({"parsed_score": True}, "its score is true, a boolean, not a number"),
        ({"usage": {"prompt_tokens": -1_000_000_000}}, "usage.prompt_tokens is negative"),
        ({"usage": {"completion_tokens": -7}}, "usage.completion_tokens is negative"),
        ({"usage": {"completion_tokens": math.inf}}, "usage.completion_tokens is negative or"),
        ({"usage": {"prompt_tokens": math.nan}}, "usage.prompt_tokens is negative or not a"),
        ({"usage": {"prompt_tokens": True}}, "usage.prompt_tokens"),
        ({"usage": {"prompt_tokens": "12"}}, "usage.prompt_tokens"),
        ({"usage": {"prompt_tokens": 2.5}}, "usage.prompt_tokens"),
        ({"batch_usage": {"cached_prompt_tokens": -1}}, "batch_usage.cached_prompt_tokens"),
    ],
)
def test_a_score_or_usage_that_is_no_number_is_refused_not_coerced(change, reason):
    """Each of these parses (so it is listed, not skipped as unreadable) and is refused."""
    problem = _problem(**change)
    assert problem is not None and reason in problem


# -- through the CLI ----------------------------------------------------------------------------
def _plant(out, changes: dict[str, list]) -> None:
    """Rewrite records of a finished run's log: `changes` maps a kind to one function per
    record of that kind to change (in log order)."""
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    seen: dict[str, int] = {}
    for index, line in enumerate(lines):
        record = json.loads(line)
        kind = record["kind"]
        position = seen.get(kind, 0)
        seen[kind] = position + 1
        edits = changes.get(kind, [])
        if position < len(edits):
            edits[position](record)
            lines[index] = json.dumps(record)
    (out / "log.jsonl").write_text("\n".join(lines) + "\n", "utf-8")


def _set(path: str, value: object):
    def change(record: dict) -> None:
        *parents, name = path.split(".")
        target = record
        for parent in parents:
            target = target.setdefault(parent, {})
        target[name] = value

    return change


def test_a_bool_score_and_bad_usage_are_listed_left_out_and_redone(env, tmp_path):
    out = tmp_path / "run"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES), "utf-8")
    with FakeServer() as server:
        args = run_args(server.base_url, out, "--prices", str(prices))
        assert run_cli(args, env).returncode == 0
        before = results(out)
        _plant(
            out,
            {
                "judgment": [
                    _set("score", True),  # was read as 1.0 and averaged
                    _set("score", "7"),
                    _set("usage.completion_tokens", math.inf),  # written as Infinity
                    _set("usage.prompt_tokens", -1_000_000_000),
                ],
                "answer": [
                    _set("usage.prompt_tokens", -1_000_000_000),  # made cost_usd negative
                    _set("usage.cached_prompt_tokens", math.nan),
                ],
            },
        )
        sent = len(server.requests)
        again = run_cli(args, env)
        assert again.returncode == 0, again.stdout + again.stderr
        redone = server.requests[sent:]
    # every planted record's work is done again, once: 4 judgments and 2 answers
    assert sum(r["model"] == JUDGE for r in redone) == 4 and len(redone) == 6
    now = results(out)
    reasons = [item["reason"] for item in now["invalid_records"]]
    assert len(reasons) == 6, reasons
    assert "its score is true, a boolean, not a number" in reasons
    assert "its score is a string, not a number" in reasons
    assert sum("usage." in reason for reason in reasons) == 4
    assert "could not be trusted" in again.stdout and "Traceback" not in again.stderr
    # no score moved (a `true` averaged as 1.0 would have pulled the mean down) ...
    for name in ("overall", "by_turn", "by_category", "counts", "complete"):
        assert now[name] == before[name], name
    # ... and the usage sums and dollars hold only the records that can be trusted
    invalid = {item["key"] for item in now["invalid_records"]}
    records = read_log(out)
    planted = _planted(records, invalid)
    for role, kind in (("model", "answer"), ("judge", "judgment")):
        trusted = [r for r in records if r["kind"] == kind and r not in planted]
        usage = now["usage"][role]
        assert usage["requests_logged"] == len(trusted) == 16
        assert usage["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in trusted) > 0
        assert usage["completion_tokens"] == sum(r["usage"]["completion_tokens"] for r in trusted)
        # the planted records are out, their redone twins (same replies) in: the first run's
        assert usage == before["usage"][role] and usage["cost_usd"] > 0
    assert "NaN" not in (out / "results.json").read_text("utf-8")


def _planted(records: list[dict], invalid: set[str]) -> list[dict]:
    """The planted records: the first record of each invalid key (the redone one comes
    after it in the log)."""
    seen: set[str] = set()
    planted = []
    for record in records:
        key = record.get("key")
        if key in invalid and key not in seen and record["kind"] in ("answer", "judgment"):
            seen.add(key)
            planted.append(record)
    return planted


@pytest.mark.parametrize(
    "usage",
    [
        "negative-usage",  # {"prompt_tokens": -1000000, "completion_tokens": -7}
        "bad-usage",  # "12", 3.5 and an object
        "zeros",  # what a reply without usage is read as
    ],
)
def test_max_tokens_total_counts_an_estimate_when_usage_is_invalid(usage, env, tmp_path):
    def responder(request: dict) -> Reply:
        content = default_content(request)
        if usage == "zeros":
            return Reply(content=content, usage={"prompt_tokens": 0, "completion_tokens": 0})
        return Reply(content=content, action=usage)

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        stopped = run_cli(run_args(server.base_url, out, "--max-tokens-total", "50"), env)
        sent = len(server.requests)
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert "--max-tokens-total 50 reached" in stopped.stdout
        assert "Traceback" not in stopped.stderr
        # said once, naming the role whose server sent it
        output = stopped.stdout + stopped.stderr
        assert output.count(ESTIMATE_WARNING) == 1, output
        assert f"{MODEL_SPEC}: the server's token usage is missing or invalid" in output
        result = results(out)
        assert result["stopped"] == "budget" and not result["complete"]
        # one round of the requests in flight at most, not the whole run
        assert 0 < sent < PLANNED_ANSWERS
        # what was sent was logged (nothing paid for is lost), with the usage read as 0
        logged = [r for r in read_log(out) if r["kind"] in ("answer", "judgment")]
        assert len(logged) == sent
        assert all(r["usage"]["prompt_tokens"] == 0 for r in logged)

        finished = run_cli(run_args(server.base_url, out), env)  # no budget: it finishes
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert ESTIMATE_WARNING not in finished.stdout + finished.stderr
    assert results(out)["counts"]["judged"] == PLANNED_JUDGMENTS


def test_valid_usage_is_counted_as_reported_without_a_warning(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, out, "--max-tokens-total", "100000000"), env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ESTIMATE_WARNING not in done.stdout + done.stderr
