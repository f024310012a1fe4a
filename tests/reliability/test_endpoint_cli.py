"""Issues 10 and 14 through the real CLI: the key rule, reserved fields, the endpoint check
before work, replicas, --concurrency auto, whole-attempt timeouts, secrets in URLs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.reliability.helpers import (
    JUDGE_SPEC,
    MODEL,
    PLANNED_ANSWERS,
    PLANNED_JUDGMENTS,
    is_judge,
    of_kind,
    read_log,
    results,
    run_args,
)
from turnbench.testing.fake_server import FakeServer, Reply, default_content

KEY = "sk-cli-SECRET-24680"


def test_the_default_key_is_not_sent_to_a_named_base_url(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, out), {**env, "OPENAI_API_KEY": KEY})
        chat, models = list(server.headers_seen), list(server.models_headers_seen)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(chat) == PLANNED_ANSWERS + PLANNED_JUDGMENTS and set(map(len, chat)) == {0}
    assert models == [{}]  # one check before work (model and judge share the endpoint)


def test_a_named_but_unset_key_variable_is_a_usage_error_before_anything_is_sent(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, out, "--judge-api-key-env", "NO_SUCH_VAR"), env)
        counts = dict(server.counts)
    assert done.returncode == 2, done.stderr
    assert "--judge-api-key-env names $NO_SUCH_VAR, which is unset or empty" in done.stderr
    assert "Traceback" not in done.stderr and counts == {} and not out.exists()


def test_extra_fields_may_not_override_what_the_benchmark_controls(env, tmp_path):
    out = tmp_path / "run"
    extra = json.dumps({"seed": 1, "stream": True, "tools": []})
    done = run_cli(run_args("http://127.0.0.1:9/v1", out, "--judge-extra", extra), env)
    assert done.returncode == 8 and "--judge-extra may not set stream, tools" in done.stderr
    assert not out.exists()


def test_a_dead_judge_endpoint_stops_the_run_before_work(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        args = run_args(server.base_url, out, judge_url="http://127.0.0.1:9/v1?key=URL-SECRET-1")
        done = run_cli(args, env)
        sent = list(server.requests)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the judge endpoint is unreachable: http://127.0.0.1:9/v1?key=***" in done.stderr
    assert "URL-SECRET-1" not in done.stderr + done.stdout and "Traceback" not in done.stderr
    assert sent == [] and not out.exists()


def test_judge_replicas_share_the_work_and_urls_are_recorded_redacted(env, tmp_path):
    out = tmp_path / "run"
    with (
        FakeServer(latency=0.02) as model,
        FakeServer(latency=0.02) as j1,
        FakeServer(latency=0.02) as j2,
    ):
        args = run_args(model.base_url, out, "--concurrency", "2")
        at = args.index("--judge-base-url")
        args[at + 1] = f"{j1.base_url}?token=REPLICA-SECRET-1"
        args += ["--judge-base-url", j2.base_url]
        done = run_cli(args, env)
        served = (len(j1.requests), len(j2.requests))
    assert done.returncode == 0, done.stdout + done.stderr
    assert sum(served) == PLANNED_JUDGMENTS and min(served) >= 4, served
    config = of_kind(read_log(out), "config")[-1]["config"]
    assert config["endpoints"]["judge"] == f"{j1.base_url}?token=***, {j2.base_url}"
    # provenance says how many replies each replica gave (every judgment here is one reply)
    counted = results(out)["provenance"]["endpoint_requests"]
    assert counted["judge"][JUDGE_SPEC] == {
        f"{j1.base_url}?token=***": served[0],
        j2.base_url: served[1],
    }
    assert counted["model"] == {model.base_url: PLANNED_ANSWERS}
    for path in out.rglob("*"):
        if path.is_file():
            assert b"REPLICA-SECRET-1" not in path.read_bytes(), path


def test_concurrency_auto_turns_rate_limits_into_waiting_not_failures(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer(latency=0.02, rate_limit=20, rate_burst=2) as server:
        done = run_cli(
            run_args(server.base_url, out, "--concurrency", "auto", "--max-attempts", "2"), env
        )
        refused = server.counts["429"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert refused > 0  # rate limiting happened, and cost no item
    result = results(out)
    assert result["complete"] and result["request_failures"] == []
    assert of_kind(read_log(out), "config")[-1]["config"]["concurrency"] == "auto"


def test_a_trickling_server_is_cut_at_the_request_timeout(env, tmp_path):
    """Every answer trickles one byte per 0.4 s: with --request-timeout 2 and
    --retry-max-time 5 each request ends within 2 x 2 + 5 s, and so does the run."""

    def trickle(request: dict[str, Any]) -> Reply:
        return Reply(content=default_content(request), action="trickle")

    out = tmp_path / "run"
    args = ["--request-timeout", "2", "--retry-max-time", "5", "--max-attempts", "10"]
    with FakeServer(responder=trickle) as server:
        started = time.monotonic()
        done = run_cli(run_args(server.base_url, out, *args), env, timeout=120)
        elapsed = time.monotonic() - started
        judged = sum(is_judge(r) for r in server.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    failures = of_kind(read_log(out), "failure")
    assert len(failures) == 8 and all("timed out after 2s" in f["error"] for f in failures)
    assert judged == 0
    print(f"\ntrickling server: run ended after {elapsed:.1f}s")
    assert elapsed < 2 * 2 + 5 + 6, elapsed  # 9 s bound plus CLI start-up and the check


def test_a_key_in_the_base_url_query_never_reaches_disk_or_terminal(env, tmp_path):
    secret = "QUERY-KEY-13579"

    def echo(request: dict[str, Any]) -> Reply:
        if request["model"] == MODEL:
            return Reply(content=f"{default_content(request)} (url key {secret})")
        return Reply(content=default_content(request))

    out = tmp_path / "run"
    with FakeServer(responder=echo) as server:
        url = f"{server.base_url}?api-key={secret}"
        done = run_cli(run_args(url, out, judge=JUDGE_SPEC), env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert secret not in done.stdout + done.stderr
    answers = of_kind(read_log(out), "answer")
    assert answers and all(a["text"].endswith("(url key ***)") for a in answers)
    for path in Path(out).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
