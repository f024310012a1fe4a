"""Hostile replies, files and logs through the real CLI: nothing crashes, nothing paid is lost,
no untrustworthy record is averaged in, a self-judging endpoint is named."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE_SPEC, MODEL_SPEC, run_args
from turnbench.testing.fake_server import FakeServer, Reply, default_content

JUDGE_NAME = JUDGE_SPEC.split("/", 1)[1]


def is_judge(request: dict) -> bool:
    return request["model"] == JUDGE_NAME


def read_log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text("utf-8").splitlines()]


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text("utf-8"))


@pytest.mark.parametrize("rating", ["[[07]]", "[[\uff17]]", "[[" + "9" * 400 + "]]"])
def test_compat_parser_on_odd_ratings_is_unparseable_not_a_crash(rating, env, tmp_path):
    def responder(request: dict) -> Reply | str:
        return f"Verdict. Rating: {rating}" if is_judge(request) else default_content(request)

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        done = run_cli(run_args(server.base_url, out, "--parser", "compat"), env)
    assert done.returncode == 0, done.stdout + done.stderr  # complete: failures are final
    counts = results(out)["counts"]
    assert counts["failed"] == counts["expected"] == 16 and counts["judged"] == 0
    assert "Traceback" not in done.stderr


def test_a_lone_surrogate_in_an_answer_file_is_judged_not_a_crash(env, tmp_path, data_dir):
    rows = (data_dir / "mt_bench/model_answer/alpaca-13b.jsonl").read_text("utf-8").splitlines()
    first = json.loads(rows[0])
    rows[0] = rows[0].replace(json.dumps(first["choices"][0]["turns"][0])[1:-1], "x \\ud83d y", 1)
    answers = tmp_path / "m.jsonl"
    answers.write_text("\n".join(rows) + "\n", "utf-8")
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(
            ["judge", "--answers", str(answers), "--judge", JUDGE_SPEC, "--judge-base-url",
             server.base_url, "--out", str(out), "--limit", "1", "--no-progress"],
            env,
        )  # fmt: skip
        judged = [r for r in server.requests if "x \ufffd y" in r["messages"][1]["content"]]
    assert done.returncode == 0, done.stdout + done.stderr
    assert judged  # the judge saw the answer, with U+FFFD for the broken character
    answer = next(r for r in read_log(out) if r["kind"] == "answer" and r["turn"] == 1)
    assert "\ufffd" in answer["text"]


def test_a_failed_reask_keeps_the_paid_reply_and_is_not_paid_again(env, tmp_path):
    """The judge's first reply has no rating; its re-ask is refused (400, say for context
    length). The judgment is logged as a parse failure with the first reply and its usage;
    a resume pays nothing again, and the token budget counts what was paid."""

    def responder(request: dict) -> Reply | str:
        if not is_judge(request):
            return default_content(request)
        if len(request["messages"]) > 2:  # a re-ask
            return Reply(status=400, body={"error": {"message": "context length exceeded"}})
        return "I cannot decide."

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        assert run_cli(run_args(server.base_url, out), env).returncode == 0
        sent = len(server.requests)
        judgments = [r for r in read_log(out) if r["kind"] == "judgment"]
        assert len(judgments) == 16 and all(j["status"] == "parse_failed" for j in judgments)
        assert all(j["outputs"] == ["I cannot decide."] for j in judgments)
        assert all("the re-ask failed" in j["parse_error"] for j in judgments)
        assert all(j["usage"]["prompt_tokens"] > 0 for j in judgments)
        assert results(out)["usage"]["judge"]["prompt_tokens"] == sum(
            j["usage"]["prompt_tokens"] for j in judgments
        )
        again = run_cli(run_args(server.base_url, out), env)
        assert again.returncode == 0 and len(server.requests) == sent  # converged


def test_untrustworthy_records_are_listed_and_left_out(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        assert run_cli(run_args(server.base_url, out), env).returncode == 0
        before = results(out)
        lines = (out / "log.jsonl").read_text("utf-8").splitlines()
        judgments = [i for i, line in enumerate(lines) if json.loads(line)["kind"] == "judgment"]
        for index, change in zip(
            judgments[:3], ("score", "nan", "key"), strict=True
        ):  # a score out of range, a NaN, a key naming other work
            record = json.loads(lines[index])
            if change == "score":
                record["score"] = 1000.0
            elif change == "nan":
                record["score"] = math.nan
            else:
                record["key"] = json.dumps(["judgment", "x", "y", 1, 1, None, 0])
            lines[index] = json.dumps(record)
        (out / "log.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
        sent = len(server.requests)
        again = run_cli(run_args(server.base_url, out), env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(server.requests) == sent + 3  # their work is done again
    now = results(out)
    reasons = {item["reason"] for item in now["invalid_records"]}
    assert len(now["invalid_records"]) == 3
    assert any("outside rating-strict's range" in r for r in reasons)
    assert any("non-finite" in r for r in reasons)
    assert any("key does not match" in r for r in reasons)
    assert "NaN" not in (out / "results.json").read_text("utf-8")
    assert now["counts"] == before["counts"] and 1 <= now["overall"] <= 10
    assert "could not be trusted" in again.stdout


def test_a_judge_answering_from_the_models_endpoint_is_named(env, tmp_path):
    """$OPENAI_BASE_URL points both roles at one server that ignores `model`: the replies of
    both name the same model, so the results warn that the model may have judged itself."""

    with FakeServer() as server:
        server.reported_model = "the-only-model"  # every reply names this model
        out = tmp_path / "run"
        args = ["run", "--model", MODEL_SPEC, "--judge", JUDGE_SPEC, "--out", str(out),
                "--limit", "1", "--no-progress"]  # fmt: skip
        done = run_cli(args, {**env, "OPENAI_BASE_URL": server.base_url})
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = results(out)["warnings"]
    assert len(warnings) == 1 and "may have judged its own answers" in warnings[0]
    assert "may have judged its own answers" in done.stderr
    assert f"model {MODEL_SPEC} at {server.base_url}" in done.stdout  # the run's header
    assert f"judge {JUDGE_SPEC} at {server.base_url}" in done.stdout


def test_separate_endpoints_give_no_self_judging_warning(env, tmp_path):
    with FakeServer() as model, FakeServer() as judge:
        out = tmp_path / "run"
        done = run_cli(run_args(model.base_url, out, judge_url=judge.base_url), env)
    assert done.returncode == 0 and results(out)["warnings"] == []
