"""Dollars through the real CLI on the fake server: --max-cost stops a run cleanly before it
is exceeded, --prices prices models the shipped table does not know, results.json and
--dry-run show dollars per role."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE_SPEC, MODEL_SPEC, read_log, results, run_args
from turnbench.testing.fake_server import FakeServer

# dear on purpose, so that a few requests cost dollars
PRICES = {
    "as_of": "2027-02-01",
    "models": {
        MODEL_SPEC: {"input": 100.0, "output": 400.0},
        JUDGE_SPEC: {"input": 200.0, "output": 800.0},
    },
}
SMALL = ("--max-new-tokens", "64", "--judge-max-tokens", "64", "--max-reasks", "0")


def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES))
    return path


def spent(usage: dict, role: str, model: str) -> float:
    """Dollars of one role from the logged token counts (the price file's prices)."""
    price = PRICES["models"][model]
    return (
        usage[role]["prompt_tokens"] * price["input"]
        + usage[role]["completion_tokens"] * price["output"]
    ) / 1e6


def test_max_cost_stops_before_the_limit_and_a_rerun_continues(env, tmp_path):
    out = tmp_path / "run"
    prices = price_file(tmp_path)
    limit = 0.5
    with FakeServer() as server:
        args = run_args(server.base_url, out, *SMALL, "--prices", str(prices), "-c", "2")
        stopped = run_cli([*args, "--max-cost", str(limit)], env)
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert "--max-cost 0.5 reached" in stopped.stdout
        first = results(out)
        assert first["stopped"] == "budget" and not first["complete"]
        usage = first["usage"]
        model_cost, judge_cost = usage["model"]["cost_usd"], usage["judge"]["cost_usd"]
        # results.json prices what was logged, dated by the price file
        assert model_cost == spent(usage, "model", MODEL_SPEC) > 0
        assert judge_cost == spent(usage, "judge", JUDGE_SPEC)
        assert usage["model"]["prices_as_of"].endswith("2027-02-01")
        # never over the limit, and not stopped at the first request either
        assert model_cost + judge_cost <= limit
        assert usage["model"]["requests_logged"] + usage["judge"]["requests_logged"] >= 4
        # requests in flight finished and were logged: nothing paid for is lost
        logged = [r for r in read_log(out) if r["kind"] in ("answer", "judgment")]
        assert len(logged) == usage["model"]["requests_logged"] + usage["judge"]["requests_logged"]

        again = run_cli([*args, "--max-cost", "100"], env)
        assert again.returncode == 0, again.stdout + again.stderr
    final = results(out)
    assert final["complete"] and final["stopped"] is None
    total = final["usage"]["model"]["cost_usd"] + final["usage"]["judge"]["cost_usd"]
    assert total > model_cost + judge_cost
    # the terminal and the report show what was spent
    shown = f"${final['usage']['judge']['cost_usd']:,.2f}"
    assert f"judgments {shown}" in again.stdout and "Spent: answers $" in again.stdout
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text("utf-8")
    spent_table = page.split("<h3>Spent</h3>")[1].split("</table>")[0]
    assert shown in spent_table and "2027-02-01" in spent_table


def test_max_cost_needs_a_price_for_every_model(env, tmp_path):
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, tmp_path / "run", "--max-cost", "1"), env)
        assert done.returncode == 2
        assert "--max-cost needs the price of openai/model-under-test" in done.stderr
        assert "--prices FILE" in done.stderr and "Traceback" not in done.stderr
        assert server.requests == []  # refused before anything was sent
    assert not (tmp_path / "run" / "log.jsonl").exists()


def test_dry_run_shows_dollars_per_role(env, tmp_path):
    prices = price_file(tmp_path)
    base = run_args("http://127.0.0.1:9/v1", tmp_path / "run", *SMALL, "--dry-run")
    priced = run_cli([*base, "--prices", str(prices)], env)
    assert priced.returncode == 0, priced.stderr
    assert "dollars" in priced.stdout and "Estimated dollars in all: $" in priced.stdout
    rows = [line for line in priced.stdout.splitlines() if "openai/" in line]
    assert len(rows) == 2 and all("$" in row for row in rows)
    unpriced = run_cli(base, env)
    assert unpriced.returncode == 0, unpriced.stderr
    assert "unknown price" in unpriced.stdout
    assert not (tmp_path / "run").exists()


def test_a_malformed_price_file_is_one_clear_error(env, tmp_path):
    bad = tmp_path / "prices.json"
    bad.write_text('{"models": {"openai/x": {"input": "cheap", "output": 1}}}')
    done = run_cli(
        run_args("http://127.0.0.1:9/v1", tmp_path / "run", "--prices", str(bad), "--dry-run"),
        env,
    )
    assert done.returncode == 2 and "prices file" in done.stderr and "Traceback" not in done.stderr
