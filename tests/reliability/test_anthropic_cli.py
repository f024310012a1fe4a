"""Issue 10 for `anthropic/...` judges, through the real CLI: the endpoint check before work,
the reserved `system` field, and the whole-attempt timeout."""

from __future__ import annotations

import json
import time

from tests.conftest import run_cli
from tests.reliability.helpers import PLANNED_JUDGMENTS, results, run_args
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_server import FakeServer

JUDGE = "anthropic/claude-test"
KEY_VAR = "TEST_ANTHROPIC_KEY"


def rated(body: dict) -> str:
    return "Clear and correct. Rating: [[7]]"


def anthropic_env(env: dict[str, str], key: str) -> dict[str, str]:
    return {**env, KEY_VAR: key}


def test_a_dead_anthropic_endpoint_stops_the_run_before_any_answer(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as model:
        args = run_args(
            model.base_url, out, "--judge-api-key-env", KEY_VAR,
            judge=JUDGE, judge_url="http://127.0.0.1:9",
        )  # fmt: skip
        done = run_cli(args, anthropic_env(env, "k-123456"))
        sent = list(model.requests)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the judge endpoint is unreachable: http://127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr and sent == [] and not out.exists()


def test_an_anthropic_judge_runs_end_to_end_and_counts_its_endpoint(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as model, FakeAnthropic(api_key="k-123456", responder=rated) as judge:
        args = run_args(
            model.base_url, out, "--judge-api-key-env", KEY_VAR,
            judge=JUDGE, judge_url=judge.base_url,
        )  # fmt: skip
        done = run_cli(args, anthropic_env(env, "k-123456"))
        asked = judge.counts["messages"]
    assert done.returncode == 0, done.stdout + done.stderr
    summary = results(out)
    assert summary["complete"] and asked == PLANNED_JUDGMENTS
    served = summary["provenance"]["endpoint_requests"]["judge"][JUDGE]
    assert sum(served.values()) == PLANNED_JUDGMENTS


def test_judge_extra_may_not_replace_the_anthropic_system_prompt(env, tmp_path):
    out = tmp_path / "run"
    extra = json.dumps({"system": "HIJACKED SYSTEM", "top_k": 5})
    args = run_args(
        "http://127.0.0.1:9/v1", out, "--judge-extra", extra, judge=JUDGE,
        judge_url="http://127.0.0.1:9",
    )  # fmt: skip
    done = run_cli(args, anthropic_env(env, "k-123456"))
    assert done.returncode == 8, done.stdout + done.stderr
    assert "--judge-extra may not set system" in done.stderr and not out.exists()


def test_a_trickling_anthropic_reply_is_cut_at_the_request_timeout(env, tmp_path):
    """The SDK's own timeout is per socket read; turnbench bounds the whole attempt."""
    out = tmp_path / "run"
    with FakeServer() as model, FakeAnthropic(api_key="k-123456", responder=rated) as judge:
        judge.trickle = 0.4  # one byte of every Messages reply each 0.4 s
        args = run_args(
            model.base_url, out, "--judge-api-key-env", KEY_VAR,
            "--request-timeout", "1", "--retry-max-time", "2", "--max-attempts", "2",
            judge=JUDGE, judge_url=judge.base_url,
        )  # fmt: skip
        started = time.monotonic()
        done = run_cli(args, anthropic_env(env, "k-123456"))
        elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr  # incomplete: judgments pending
    assert elapsed < 25, elapsed
    failures = results(out)["request_failures"]
    assert failures and all("timed out" in f["error"] for f in failures), failures
