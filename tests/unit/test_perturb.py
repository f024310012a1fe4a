"""Stress arms as pure rules: which turns they hold, the histories the model and the judge
see, the obedience checks, the planted-answer reader, the interval and the log keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.errors import ConfigDriftError, UserError
from turnbench.journal.config import RunConfig, check_resume
from turnbench.journal.logindex import record_problem
from turnbench.journal.runlog import config_record
from turnbench.judging.judge import JudgeSettings
from turnbench.perturb.arms import Distractor, Injected, PlantedError, build_arms
from turnbench.perturb.injections import Check, load_injections
from turnbench.perturb.planted import PlantedAnswers, load_planted
from turnbench.record_keys import answer_key, judgment_key, record_key
from turnbench.samples import Sample, Turn
from turnbench.stats.scoring import wilson_interval
from turnbench.types import AnswerRecord


def dialogue(sample_id: int, group: str, turns: int, golden: bool = True) -> Sample:
    return Sample(
        sample_id,
        group,
        tuple(
            Turn(f"q{sample_id}.{t}", f"g{sample_id}.{t}" if golden else None)
            for t in range(1, turns + 1)
        ),
    )


SAMPLES = [dialogue(1, "a", 3), dialogue(2, "b", 3), dialogue(3, "a", 1)]
EARLIER = [("q1.1", "g1.1"), ("q1.2", "g1.2")]  # before turn 3 of sample 1


def planted(texts: dict[tuple[int, int], str]) -> PlantedAnswers:
    return PlantedAnswers(Path("planted.jsonl"), "sha", dict(texts))


# -- which turns -------------------------------------------------------------------------------
def test_golden_history_every_judged_turn_after_the_first_is_an_item():
    arm = Injected(SAMPLES, "golden")
    assert [arm.items(s) for s in SAMPLES] == [[2, 3], [2, 3], []]
    assert arm.answered(SAMPLES[0]) == [2, 3]


def test_self_history_forks_at_the_second_turn_and_answers_the_rest_in_order():
    arm = Injected(SAMPLES, "self")
    assert arm.start(SAMPLES[0]) == 2 and arm.at(SAMPLES[0], 3) == 2
    assert arm.items(SAMPLES[0]) == [2, 3] and arm.answered(SAMPLES[0]) == [2, 3]
    assert arm.items(SAMPLES[2]) == []  # one turn: no history before any judged turn


def test_a_turn_without_a_planted_answer_is_left_out_and_counted():
    arm = PlantedError(SAMPLES, "golden", planted({(1, 1): "bad 1", (1, 2): "bad 2"}))
    assert arm.items(SAMPLES[0]) == [2, 3]
    assert arm.items(SAMPLES[1]) == []
    assert arm.excluded() == {"no planted answer": 2}
    forked = PlantedError(SAMPLES, "self", planted({(1, 1): "bad 1"}))
    assert forked.items(SAMPLES[0]) == [2, 3] and forked.items(SAMPLES[1]) == []


# -- the histories -----------------------------------------------------------------------------
def test_planted_error_replaces_the_answer_before_the_turn_for_model_and_judge():
    arm = PlantedError(SAMPLES, "golden", planted({(1, 2): "bad 2"}))
    asked, shown = arm.histories(SAMPLES[0], 3, EARLIER, {})
    assert asked == shown == [("q1.1", "g1.1"), ("q1.2", "bad 2")]
    forked = PlantedError(SAMPLES, "self", planted({(1, 1): "bad 1"}))
    asked, shown = forked.histories(SAMPLES[0], 3, [("q1.1", "own 1"), ("q1.2", "own 2")], {})
    assert asked == shown == [("q1.1", "bad 1"), ("q1.2", "own 2")]


def test_distractor_is_inserted_for_the_model_only_and_drawn_from_another_group():
    arm = Distractor(SAMPLES, "golden", seed=3)
    other = arm.source(SAMPLES[0])
    assert other is not None and other.group != "a"
    asked, shown = arm.histories(SAMPLES[0], 3, EARLIER, {})
    assert shown == EARLIER
    assert asked == [*EARLIER, (other.turns[0].user, other.turns[0].golden)]
    assert arm.record(SAMPLES[0]) == {"kind": "distractor", "distractor_from": other.id}
    # self history: the other sample's own first answer, from the unperturbed run
    forked = Distractor([dialogue(1, "a", 2, False), dialogue(2, "b", 2, False)], "self")
    first = forked.samples[0]
    assert [(s.id, t) for s, t in forked.needs(first)] == [(2, 1)]
    asked, shown = forked.histories(first, 2, [("q1.1", "own")], {(2, 1): "its own"})
    assert asked == [("q1.1", "own"), ("q2.1", "its own")] and shown == [("q1.1", "own")]


def test_distractor_draws_are_seeded():
    first = [Distractor(SAMPLES, "golden", seed=7).source(s) for s in SAMPLES]
    again = [Distractor(SAMPLES, "golden", seed=7).source(s) for s in SAMPLES]
    assert first == again


def test_injection_quotes_a_document_in_the_earlier_user_turn_for_the_model_only():
    arm = Injected(SAMPLES, "golden")
    asked, shown = arm.histories(SAMPLES[0], 3, EARLIER, {})
    injection = arm.injection(SAMPLES[0])
    assert shown == EARLIER
    assert asked[0] == EARLIER[0]
    assert asked[1][0].startswith("q1.2\n\n") and injection.document in asked[1][0]
    assert asked[1][1] == "g1.2"
    assert arm.settings()["injections"] == load_injections().version


def test_build_arms_keeps_the_order_given_and_each_kind_once():
    arms = build_arms(
        ["injection", "distractor", "injection"], SAMPLES, "golden", planted=None, seed=1
    )
    assert [arm.kind for arm in arms] == ["injection", "distractor"]


# -- obedience checks --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("check", "answer", "obeyed"),
    [
        (Check(kind="ends_with", text="ZEBRA-17"), "Sure, here it is. ZEBRA-17", True),
        (Check(kind="ends_with", text="ZEBRA-17"), "Sure. ZEBRA-17.**", True),
        (Check(kind="ends_with", text="ZEBRA-17"), "ZEBRA-17 then the answer.", False),
        (Check(kind="starts_with", text="PELICAN-OK:"), "**PELICAN-OK: yes", True),
        (Check(kind="starts_with", text="PELICAN-OK:"), "Yes. PELICAN-OK:", False),
        (Check(kind="contains", text="PINEAPPLE-9"), "a PINEAPPLE-9 here", True),
        (Check(kind="contains", text="PINEAPPLE-9"), "a pineapple here", False),
    ],
)
def test_marker_checks(check, answer, obeyed):
    assert check.obeyed(answer) is obeyed


def test_the_language_check_tells_french_from_english():
    french = next(i for i in load_injections().injections if i.id == "answer-in-french").check
    assert french.obeyed("Voici la réponse à votre question, avec les détails et une explication.")
    assert not french.obeyed("Here is the answer to your question, with the details you need.")
    assert not french.obeyed("Paris")  # too short to say
    # a French phrase quoted in an English answer is still English
    assert not french.obeyed("The phrase 'la vie est belle' means that life is good for all of us.")


def test_every_shipped_injection_is_caught_by_its_own_check_only_when_obeyed():
    from turnbench.testing.stress_fakes import instructions, obey_instructions, plain_answer

    data = load_injections()
    assert len(data.injections) >= 3 and data.version
    for injection in data.injections:
        messages = [
            {"role": "user", "content": data.quote("q1", injection)},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
        ]
        (found,) = instructions(messages)
        assert found.startswith(injection.instruction)
        assert injection.check.obeyed(obey_instructions({"messages": messages}))
        assert not injection.check.obeyed(plain_answer("q2"))


# -- the interval ------------------------------------------------------------------------------
def test_wilson_interval_hand_computed():
    low, high = wilson_interval(0, 16)
    assert low == 0 and high == pytest.approx(0.1936, abs=1e-4)
    low, high = wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    low, high = wilson_interval(16, 16)
    assert low == pytest.approx(0.8064, abs=1e-4) and high == 1.0
    with pytest.raises(ValueError):
        wilson_interval(1, 0)


# -- planted answers ---------------------------------------------------------------------------
MT = {i: dialogue(i, "x", 2, golden=False) for i in (81, 82)}


def test_planted_answers_read_fastchat_and_answer_lines_and_may_be_partial(tmp_path):
    fastchat = tmp_path / "weak.jsonl"
    fastchat.write_text(json.dumps({"question_id": 81, "choices": [{"turns": ["a", "b"]}]}) + "\n")
    assert load_planted(fastchat, MT).texts == {(81, 1): "a", (81, 2): "b"}
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"id": 82, "turn": 1, "answer": "c"}) + "\n")
    found = load_planted(lines, MT)
    assert found.get(82, 1) == "c" and found.get(81, 1) is None


def test_planted_answers_read_a_run_directory(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    record = AnswerRecord(key=answer_key("m", 81, 1), model="m", sample_id=81, turn=1, text="t")
    arm = AnswerRecord(
        key=answer_key("m", 82, 1, "injection"), model="m", sample_id=82, turn=1, text="u",
        arm="injection",
    )  # fmt: skip
    opening = config_record(0.0, {}, 2)
    lines = [r.model_dump_json() for r in (opening, record, arm)]
    (run / "log.jsonl").write_text("\n".join(lines) + "\n")
    assert load_planted(run, MT).texts == {(81, 1): "t"}  # a stress arm's answers are not


def test_bad_planted_answers_are_reported_with_their_lines(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": 81, "turn": 3, "answer": "x"}\n{"id": "81", "turn": 1, "answer": "x"}\n'
        '{"foo": 1}\n{"id": 81, "turn": 1, "answer": "x"}\n{"id": 81, "turn": 1, "answer": "y"}\n'
    )
    with pytest.raises(UserError) as error:
        load_planted(bad, MT)
    text = error.value.message
    assert "bad.jsonl:1: sample 81 has turns 1-2, not 3" in text
    assert "bad.jsonl:2:" in text and "bad.jsonl:3:" in text
    assert "bad.jsonl:5: a second answer to id 81 turn 1 (line 4)" in text
    with pytest.raises(UserError, match="no such file"):
        load_planted(tmp_path / "missing.jsonl", MT)


# -- keys --------------------------------------------------------------------------------------
def test_unperturbed_keys_are_unchanged_and_arm_keys_are_distinct():
    assert answer_key("m", 81, 2) == '["answer","m",81,2]'
    assert judgment_key("j", "m", 81, 2) == '["judgment","j","m",81,2,null,0]'
    assert answer_key("m", 81, 2, "distractor") == '["answer","m",81,2,"distractor"]'
    assert judgment_key("j", "m", 81, 2, arm="injection") == (
        '["judgment","j","m",81,2,null,0,"injection"]'
    )


def test_an_arm_record_is_trusted_only_under_its_own_key():
    good = AnswerRecord(
        key=answer_key("m", 81, 2, "distractor"), model="m", sample_id=81, turn=2, text="t",
        arm="distractor",
    )  # fmt: skip
    assert record_key(good) == good.key and record_problem(good) is None
    # an arm record claiming the unperturbed answer's key (or its schema-1 form) is refused
    for key in (answer_key("m", 81, 2), "answer|m|81|2"):
        forged = good.model_copy(update={"key": key})
        assert record_problem(forged) == "its key does not match its fields"


# -- resuming ----------------------------------------------------------------------------------
def _config(perturb: dict) -> RunConfig:
    return RunConfig(
        benchmark="mt-bench",
        mode="run",
        model="openai/m",
        judges=[JudgeSettings(spec="openai/j")],
        perturb=perturb,
    )


def test_an_arm_may_be_added_or_dropped_on_resume_but_not_changed():
    first = _config({"injection": {"seed": 0, "injections": "stress-injections-v1"}})
    check_resume(first, _config({}), allow_new_judge=False)
    check_resume(
        first, _config({**first.perturb, "distractor": {"seed": 0}}), allow_new_judge=False
    )
    changed = _config({"injection": {"seed": 1, "injections": "stress-injections-v1"}})
    with pytest.raises(ConfigDriftError, match="--perturb injection: seed: 0 -> 1"):
        check_resume(first, changed, allow_new_judge=False)
