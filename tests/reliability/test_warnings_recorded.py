"""Issue 22 item 13: every warning printed during a run is also in results.json `warnings`,
and said once on the terminal (as it happened, not again with the results)."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.reliability.helpers import run_args
from turnbench.testing.fake_server import FakeServer, Reply, default_content

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: refused at once


def results(out) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


def test_a_replica_set_aside_at_the_start_is_in_results_warnings(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli([*run_args(server.base_url, out), "--judge-base-url", NOWHERE], env)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = " ".join(done.stdout.split())
    assert "is set aside and the other endpoints take its work" in printed
    warnings = results(out)["warnings"]
    assert [w for w in warnings if NOWHERE in w and "set aside" in w], warnings
    said = (done.stdout + done.stderr).count("set aside and the other endpoints")
    assert said == 1, done.stdout + done.stderr


def test_a_judge_without_logprobs_for_weighted_scoring_is_in_results_warnings(env, tmp_path):
    def responder(request: dict) -> Reply:
        if request["model"] == "judge-model":
            return Reply(content="Rating: [[7]]", logprobs=[])  # the server sends none
        return Reply(content=default_content(request))

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        done = run_cli([*run_args(server.base_url, out), "--judge-scoring", "weighted"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = results(out)["warnings"]
    assert [w for w in warnings if "returned no usable logprobs" in w], warnings
    assert (done.stdout + done.stderr).count("returned no usable logprobs") == 1
