"""Judge agreement with FastChat's definitions, on a small vote set computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.errors import UserError
from turnbench.stats.vote_agreement import agreement, cohen_kappa, judge_name, load_votes, make_vote

GPT4 = ["gpt-4", "pair-v2"]


def vote(qid, a, b, winner, judge, turn=1, **extra):
    return {
        "question_id": qid,
        "model_a": a,
        "model_b": b,
        "winner": winner,
        "judge": judge,
        "turn": turn,
        **extra,
    }


# Normalised, per key (pair sorted as (x, y) or (x, z); "x" = first model wins):
#   turn 1, q81 (x, y): gpt4 y | expert_0 y | expert_1 tie | author_0 x
#   turn 1, q82 (x, y): gpt4 tie | expert_0 x
#   turn 1, q83 (x, z): gpt4 x | expert_2 x | expert_2 x   (the same voter twice)
#   turn 2, q81 (x, y): gpt4 y | expert_0 x
VOTES = [
    vote(81, "y", "x", "model_a", GPT4, conversation_a=[{"role": "user", "content": "hi"}]),
    vote(81, "x", "y", "model_b", "expert_0"),
    vote(81, "x", "y", "tie (bothbad)", "expert_1"),
    vote(81, "x", "y", "model_a", "author_0"),
    vote(82, "x", "y", "tie", GPT4),
    vote(82, "y", "x", "model_b", "expert_0"),
    vote(83, "x", "z", "model_a", GPT4),
    vote(83, "z", "x", "model_b", "expert_2"),
    vote(83, "x", "z", "model_a", "expert_2"),
    vote(81, "x", "y", "model_b", GPT4, turn=2),
    vote(81, "y", "x", "model_b", "expert_0", turn=2),
]


def stats(agree, total, kappa):
    return {
        "agree": agree,
        "total": total,
        "rate": agree / total if total else None,
        "kappa": kappa,
    }


def empty():
    return stats(0, 0, None)


# Hand computation (labels: 1 = first model of the sorted pair wins, 2 = second, t = tie).
# gpt4-pair|human, turn 1, S1: (2,2) (2,t) (t,1) (1,1) (1,1): 3/5 agree.
#   judge marginals 2:2/5 t:1/5 1:2/5; human 2:1/5 t:1/5 1:3/5 -> pe = (2+1+6)/25 = 9/25
#   kappa = (3/5 - 9/25) / (1 - 9/25) = 0.375
# S2 drops pairs with a tie: (2,2) (1,1) (1,1): 3/3; pe = 1/9 + 4/9 -> kappa 1.
# human|human, turn 1, S1: q81 (2,t), q83 (1,1): 1/2; both orders counted for kappa:
#   marginals 2:1/4 t:1/4 1:2/4 -> pe = 6/16, kappa = (1/2 - 6/16) / (10/16) = 0.2
EXPECTED = {
    "gpt4-pair|author": {
        "1": {"S1": stats(0, 1, 0.0), "S2": stats(0, 1, 0.0)},
        "2": {"S1": empty(), "S2": empty()},
    },
    "gpt4-pair|human": {
        "1": {"S1": stats(3, 5, 0.375), "S2": stats(3, 3, 1.0)},
        "2": {"S1": stats(0, 1, 0.0), "S2": stats(0, 1, 0.0)},
    },
    "author|human": {
        "1": {"S1": stats(0, 2, 0.0), "S2": stats(0, 1, 0.0)},
        "2": {"S1": empty(), "S2": empty()},
    },
    "human|human": {
        "1": {"S1": stats(1, 2, 0.2), "S2": stats(1, 1, None)},
        "2": {"S1": empty(), "S2": empty()},
    },
}


def close(actual, expected):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected)
        for key in expected:
            close(actual[key], expected[key])
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected)
    else:
        assert actual == expected


@pytest.mark.parametrize("form", ["json-list", "jsonl"])
def test_hand_computed_vote_set(tmp_path: Path, form: str):
    path = tmp_path / "votes.json"
    if form == "json-list":
        path.write_text(json.dumps(VOTES, indent=2))
    else:
        path.write_text("\n".join(json.dumps(v) for v in VOTES) + "\n")
    report = agreement(load_votes(path))
    assert list(report) == list(EXPECTED)
    close(report, EXPECTED)


def test_votes_split_over_files_give_the_same_report(tmp_path: Path):
    humans, judge = tmp_path / "human.jsonl", tmp_path / "gpt4_pair.json"
    humans.write_text("\n".join(json.dumps(v) for v in VOTES if v["judge"] != GPT4))
    judge.write_text(json.dumps([v for v in VOTES if v["judge"] == GPT4]))
    close(agreement(load_votes(humans) + load_votes(judge)), EXPECTED)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        (["gpt-4", "pair-v2"], "gpt4-pair"),
        (["gpt-4", "pair-math-v1-multi-turn"], "gpt4-pair"),
        (["gpt-4", "single-v1"], "gpt-4:single-v1"),
        (["gpt-3.5-turbo", "pair-v2"], "gpt-3.5-turbo:pair-v2"),
        ("expert_17", "human"),
        ("author_3", "author"),
        ("openai/gpt-4o", "openai/gpt-4o"),
    ],
)
def test_judge_names(raw, name):
    assert judge_name(raw) == name


@pytest.mark.parametrize(
    ("a", "b", "winner", "outcome"),
    [
        ("x", "y", "model_a", "model_1"),
        ("x", "y", "model_b", "model_2"),
        ("y", "x", "model_a", "model_2"),  # reordered: the winner is flipped
        ("y", "x", "model_b", "model_1"),
        ("y", "x", "tie (bothbad)", "tie"),
        ("x", "y", "tie (inconsistent)", "tie"),
    ],
)
def test_votes_are_keyed_by_the_sorted_pair(a, b, winner, outcome):
    made = make_vote("human", 81, a, b, 1, winner)
    assert (made.model_1, made.model_2, made.winner) == ("x", "y", outcome)


def test_cohen_kappa_textbook_example():
    # 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15 -> po .7, pe .5, k .4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([]) is None
    assert cohen_kappa([("a", "a")]) is None  # chance agreement is 1: undefined


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"question_id": 81}\n', "votes.json:1: missing field"),
        (
            json.dumps(vote(81, "x", "y", "model_a", "expert_0"))
            + "\n"
            + json.dumps(vote(81, "x", "y", "model_c", "expert_0"))
            + "\n",
            "votes.json:2: winner 'model_c'",
        ),
        (
            "[\n  " + json.dumps(vote(81, "x", "y", "model_a", "e")) + ',\n  {"turn": 1}\n]',
            "votes.json:3: missing field",
        ),
        ('[\n  {"a": 1},\n  oops\n]', "votes.json:3: malformed JSON"),
        ('{"question_id": 81,\n', "votes.json:1: malformed JSON"),
        (json.dumps(vote(81, "x", "x", "tie", "expert_0")), "model_a and model_b are both"),
        ("", "the file is empty"),
    ],
)
def test_malformed_vote_files(tmp_path: Path, content: str, message: str):
    path = tmp_path / "votes.json"
    path.write_text(content)
    with pytest.raises(UserError) as caught:
        load_votes(path)
    assert message in caught.value.message
