"""User-defined benchmark scores on hand-computed turns: requirements weighted within a turn,
dialogues by min or mean, tags, checks, and turns that cannot be scored."""

from __future__ import annotations

import textwrap

import pytest

from turnbench.benchmarks.base import JudgedTurn, Sample, Turn
from turnbench.benchmarks.custom.scoring import score_tables
from turnbench.benchmarks.custom.spec import load_spec

FILE = """\
version: 1
name: scoring
dialogue_score: {how}
dialogues:
  - id: d1
    tags: [x]
    turns:
      - user: one
        rubric: {{text: r, weight: 2}}
        checklist:
          - q1
          - {{question: q2, weight: 0.5, name: n2}}
        checks: [{{contains: a}}]
      - user: two
        checks: [{{max_words: 2}}]
  - id: d2
    tags: [x, y]
    turns:
      - user: one
        checklist: [q]
        checks: [{{min_chars: 1}}]
  - id: d3
    tags: [y]
    turns:
      - user: one
        checks: [{{exact: ok}}]
      - user: two
        judged: false
  - id: d4
    turns:
      - user: one
        checks: [{{exact: ok}}]
"""


def spec(tmp_path, how: str):
    path = tmp_path / "b.yaml"
    path.write_text(textwrap.dedent(FILE.format(how=how)), "utf-8")
    return load_spec(path)


def sample(dialogue) -> Sample:
    return Sample(dialogue.id, None, tuple(Turn(t.user) for t in dialogue.turns), dialogue)


def judged(loaded) -> list[JudgedTurn]:
    d1, d2, d3, _ = (sample(d) for d in loaded.dialogues)
    return [
        JudgedTurn(d1, 1, "scored", 7.0, answer="abc"),  # the rubric (criterion None)
        JudgedTurn(d1, 1, "scored", 0.6, ("Yes", "No"), criterion="checklist", answer="abc"),
        JudgedTurn(d1, 2, "scored", answer="one two three"),  # checks only
        JudgedTurn(d2, 1, "failed", reason="bad", criterion="checklist", answer="z"),
        JudgedTurn(d3, 1, "scored", answer="ok"),
        # d4 turn 1: no answer yet
    ]


# d1 turn 1: contains 1 (w 1), rubric (7-1)/9 (w 2), q1 Yes (w 1), n2 No (w 0.5)
D1_T1 = (1 + 2 * 6 / 9 + 1 + 0) / 4.5  # = 20/27
D1_T2 = 0.0  # three words > 2


@pytest.mark.parametrize(
    ("how", "d1"),
    [("mean", (D1_T1 + D1_T2) / 2), ("min", 0.0)],
)
def test_scores(tmp_path, how, d1):
    loaded = spec(tmp_path, how)
    tables = score_tables(loaded, loaded.dialogues, judged(loaded))
    assert pytest.approx(20 / 27) == D1_T1
    assert tables["by_dialogue"] == {"d1": pytest.approx(d1), "d2": None, "d3": 1.0, "d4": None}
    assert tables["overall"] == pytest.approx((d1 + 1.0) / 2)
    assert tables["incomplete_dialogue_ids"] == ["d2", "d4"]  # a failed judgment, no answer
    assert tables["by_tag"] == {"x": pytest.approx(d1), "y": 1.0}
    assert tables["by_turn"] == {"1": pytest.approx((D1_T1 + 1.0) / 2), "2": 0.0}
    assert tables["by_check"] == {
        "contains": 1.0,
        "checklist": 1.0,
        "n2": 0.0,
        "max_words": 0.0,
        "min_chars": 1.0,  # the checks of a turn whose judge failed still ran
        "exact": 1.0,
    }
    assert tables["rubric_mean"] == 7.0
    assert tables["counts"] == {
        "dialogues": 4,
        "dialogues_scored": 2,
        "checks_run": 4,
        "checks_passed": 3,
    }
    statuses = {(t["id"], t["turn"]): t["status"] for t in tables["turns"]}
    assert statuses == {
        ("d1", 1): "scored",
        ("d1", 2): "scored",
        ("d2", 1): "failed",
        ("d3", 1): "scored",
        ("d4", 1): "pending",
    }  # d3 turn 2 is not judged: not a turn of the tables
    first = tables["turns"][0]
    assert first["checklist"] == ["Yes", "No"] and first["rubric"] == 7.0
    assert first["checks"] == [
        {"name": "contains", "kind": "contains", "passed": True, "detail": "found"}
    ]
