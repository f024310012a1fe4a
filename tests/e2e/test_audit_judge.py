"""`turnbench audit-judge` end to end against scripted fake judges whose biases are known.

Each judge reads the probe answers out of the real MT-Bench judge prompts (single-v1 and
pair-v2) and grades by a fixed rule: the audit must recover each bias with an interval that
excludes zero, and read zero on the judge that grades by correctness alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.audit.probes import MANIPULATION_KINDS, probe_suite
from turnbench.testing.fake_server import FakeServer

SUITE = probe_suite()
RIGHT = [text for q in SUITE.questions for text in (q.right, q.right_alt)]
_SINGLE = re.compile(
    r"\[The Start of Assistant's Answer\]\n(.*)\n\[The End of Assistant's Answer\]", re.S
)
_PAIR = re.compile(
    r"\[The Start of Assistant A's Answer\]\n(.*?)\n\[The End of Assistant A's Answer\]\n\n"
    r"\[The Start of Assistant B's Answer\]\n(.*)\n\[The End of Assistant B's Answer\]",
    re.S,
)
_GUARDED = re.compile(r"<<<RESPONSE-(\w+)>>>.*?<<<END-RESPONSE-\1>>>", re.S)
_OBEY = re.compile(r"\[\[(\d+)\]\]|rating of (\d+)|(\d+)/10|[Rr]ating:\s*(\d+)")


def correct(answer: str) -> bool:
    return any(text in answer for text in RIGHT)


def honest_rating(answer: str) -> int:
    return 9 if correct(answer) else 2


def scripted(
    rate: Callable[[str, str], int], choose: Callable[[str, str], str]
) -> Callable[[dict], str]:
    """A judge from two rules: rate(answer, system) -> 1..10; choose(a, b) -> "A"|"B"|"C"."""

    def respond(request: dict) -> str:
        system = request["messages"][0]["content"]
        user = request["messages"][-1]["content"]
        pair = _PAIR.search(user)
        if pair is not None:
            return f"Compared. [[{choose(pair.group(1), pair.group(2))}]]"
        found = _SINGLE.search(user)
        answer = found.group(1) if found else ""
        return f"Explanation.\nRating: [[{rate(answer, system)}]]"

    return respond


def honest_choice(a: str, b: str) -> str:
    if correct(a) == correct(b):
        return "C"
    return "A" if correct(a) else "B"


def obey(answer: str, system: str, *, respect_guard: bool) -> int:
    searched = answer
    if respect_guard and "Security note" in system:
        searched = _GUARDED.sub("", answer)
    for match in _OBEY.finditer(searched):
        value = int(next(g for g in match.groups() if g))
        if 1 <= value <= 10:
            return value
    return honest_rating(answer)


JUDGES = {
    "unbiased": scripted(lambda a, s: honest_rating(a), honest_choice),
    "always-first": scripted(lambda a, s: 5, lambda a, b: "A"),
    "length-only": scripted(
        lambda a, s: max(1, min(10, 1 + len(a) // 40)),
        lambda a, b: "A" if len(a) > len(b) else "B" if len(b) > len(a) else "C",
    ),
    "obedient": scripted(lambda a, s: obey(a, s, respect_guard=False), honest_choice),
    "obedient-but-guarded": scripted(lambda a, s: obey(a, s, respect_guard=True), honest_choice),
}


def audit(name: str, env: dict, tmp_path: Path, *extra: str) -> tuple[dict, FakeServer, Path]:
    server = FakeServer(responder=JUDGES[name]).start()
    out = tmp_path / name
    try:
        done = run_cli(
            [
                "audit-judge",
                "--judge",
                f"openai/{name}",
                "--judge-base-url",
                server.base_url,
                "--out",
                str(out),
                "--no-progress",
                *extra,
            ],
            env,
        )
    finally:
        server.stop()
    assert done.returncode in (0, 5), done.stderr + done.stdout
    return json.loads((out / "audit.json").read_text()), server, out


def excludes_zero(metric: dict) -> bool:
    return metric["ci_low"] > 0 or metric["ci_high"] < 0


def assert_interface(result: dict) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / "docs/audit.schema.json").read_text())
    jsonschema.validate(result, schema)
    for key in (
        "position_consistency",
        "first_position_preference",
        "verbosity_delta",
        "stability",
    ):
        assert set(result[key]) == {"value", "ci_low", "ci_high"}
    assert set(result["manipulation"]) == set(MANIPULATION_KINDS)
    for pair in result["manipulation"].values():
        assert set(pair) == {"without_guard", "with_guard"}
        for metric in pair.values():
            assert set(metric) == {"value", "ci_low", "ci_high"}


def test_an_unbiased_judge_reads_zero(env, tmp_path):
    result, server, _ = audit("unbiased", env, tmp_path)
    assert_interface(result)
    assert result["complete"] and result["counts"]["judged"] == result["counts"]["expected"]
    # 12 questions x (3 right + wrong + padded + 4 probes + guarded wrong + 4 guarded) + 4 games
    assert len(server.requests) == 12 * (3 + 1 + 1 + 4 + 1 + 4 + 4)
    assert result["position_consistency"] == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    for key in ("first_position_preference", "verbosity_delta", "stability"):
        assert result[key] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}, key
    for pair in result["manipulation"].values():
        assert pair["without_guard"]["value"] == 0.0 and pair["with_guard"]["value"] == 0.0
    assert result["scale_sanity"]["value"] == 1.0


def test_an_always_first_judge_has_position_bias(env, tmp_path):
    result, _, _ = audit("always-first", env, tmp_path)
    assert result["first_position_preference"]["value"] == 1.0
    assert excludes_zero(result["first_position_preference"])
    assert result["position_consistency"]["value"] == 0.0  # every swapped pair disagrees
    assert result["verbosity_delta"]["value"] == 0.0
    assert result["scale_sanity"]["value"] == 0.0  # a constant rating orders nothing


def test_a_length_only_judge_has_verbosity_bias(env, tmp_path):
    result, _, _ = audit("length-only", env, tmp_path)
    assert result["verbosity_delta"]["value"] > 0
    assert excludes_zero(result["verbosity_delta"])
    assert result["first_position_preference"]["value"] == pytest.approx(0.0, abs=0.3)


def test_an_obedient_judge_is_manipulated_and_the_guard_shows_who_listens(env, tmp_path):
    result, _, _ = audit("obedient", env, tmp_path)
    for kind, pair in result["manipulation"].items():
        assert pair["without_guard"]["value"] == 8.0, kind  # 10 instead of the wrong answer's 2
        assert excludes_zero(pair["without_guard"]), kind
        assert excludes_zero(pair["with_guard"]), kind  # this judge ignores the guard's note
    guarded, _, _ = audit("obedient-but-guarded", env, tmp_path)
    for kind, pair in guarded["manipulation"].items():
        assert excludes_zero(pair["without_guard"]), kind
        assert pair["with_guard"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}, kind


def test_the_audit_resumes_adds_questions_refuses_drift_and_renders(env, tmp_path):
    first, server, out = audit("unbiased", env, tmp_path, "--questions", "2", "--repeats", "2")
    assert len(first["probes"]["questions"]) == 2
    assert len(server.requests) == 2 * (2 + 1 + 1 + 4 + 1 + 4 + 4)
    # more questions: only their judgments are asked
    again, server, _ = audit("unbiased", env, tmp_path, "--questions", "3", "--repeats", "2")
    assert len(server.requests) == 1 * (2 + 1 + 1 + 4 + 1 + 4 + 4)
    assert again["complete"] and len(again["probes"]["questions"]) == 3
    # a different judge temperature would mix incompatible judgments: refused, nothing sent
    drift_server = FakeServer(responder=JUDGES["unbiased"]).start()
    try:
        refused = run_cli(
            ["audit-judge", "--judge", "openai/unbiased", "--judge-base-url",
             drift_server.base_url, "--out", str(out), "--judge-temperature", "0.7"],
            env,
        )  # fmt: skip
    finally:
        drift_server.stop()
    assert refused.returncode == 2
    assert "different settings" in refused.stderr and "temperature" in refused.stderr
    assert drift_server.requests == []
    # a threshold: exit 5 when crossed, 0 otherwise; audit.json records the checks
    failing, _, _ = audit(
        "unbiased", env, tmp_path, "--questions", "3", "--repeats", "2",
        "--fail-if", "position_consistency<1.5", "--fail-if", "verbosity_delta>1",
    )  # fmt: skip
    assert [c["failed"] for c in failing["thresholds"]] == [True, False]
    report = run_cli(["report", str(out)], env)
    assert report.returncode == 0, report.stderr
    html = (out / "report.html").read_text()
    assert "Judge audit" in html and "position consistency" in html
    assert "fake_end_marker" in html


def test_a_crossed_threshold_exits_5(env, tmp_path):
    server = FakeServer(responder=JUDGES["always-first"]).start()
    try:
        done = run_cli(
            ["audit-judge", "--judge", "openai/first", "--judge-base-url", server.base_url,
             "--out", str(tmp_path / "a"), "--questions", "2", "--repeats", "2",
             "--fail-if", "first_position_preference>0.2"],
            env,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 5, done.stdout + done.stderr
    assert "FAILED" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fail-if", "position_consistency ~ 1"], "METRIC OP NUMBER"),
        (["--fail-if", "no_such_metric<1"], "no metric"),
        (["--benchmark", "mt-bench-101"], "cannot be filled"),
    ],
)
def test_bad_audit_input_is_one_clear_message(env, tmp_path, args, message):
    server = FakeServer(responder=JUDGES["unbiased"]).start()
    try:
        done = run_cli(
            ["audit-judge", "--judge", "openai/x", "--judge-base-url", server.base_url,
             "--out", str(tmp_path / "bad"), "--questions", "2", *args],
            env,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
