"""The user-defined benchmark format: what a valid file means, and every mistake reported
with its line before anything is sent."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from turnbench.benchmarks.custom import benchmark_from_file, load_spec
from turnbench.errors import UserError

EXAMPLE = REPO / "examples" / "kitchen-and-travel.yaml"
HEAD = "version: 1\nname: t\n"
TURN = HEAD + "dialogues:\n  - id: a\n    turns:\n      - user: x\n"
ANY = "    turns: [{user: x, checks: [{exact: x}]}]\n"  # a valid dialogue body
ONE_DIALOGUE = (
    "dialogues:\n  - id: a\n    turns:\n      - user: hi\n        checks: [{contains: x}]\n"
)


def write(tmp_path: Path, text: str, name: str = "bench.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), "utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(UserError) as raised:
        load_spec(path, reserved={"mt-bench"})
    lines = raised.value.message.splitlines()
    return [line.removeprefix(f"{path}:") for line in lines[1:]]


def test_the_example_file_is_valid_and_uses_every_check_kind():
    spec = load_spec(EXAMPLE)
    kinds = {c.kind for d in spec.dialogues for t in d.turns for c in t.checks}
    assert kinds == {
        "regex", "not_regex", "contains", "not_contains", "max_words", "min_words",
        "max_chars", "min_chars", "valid_json", "json_schema", "exact",
    }  # fmt: skip
    turns = [t for d in spec.dialogues for t in d.turns]
    assert any(t.rubric for t in turns) and any(t.checklist for t in turns)
    assert any(not t.judged for t in turns) and spec.history == "self"
    assert [d.id for d in spec.dialogues] == [
        "recipe-scaling", "neighbour-wifi", "lisbon-plan", "exact-formats", "user-record",
    ]  # fmt: skip


def test_a_valid_file_means_what_it_says(tmp_path):
    path = write(
        tmp_path,
        """\
        version: 1
        name: mine
        history: golden
        dialogue_score: min
        system: Be brief.
        answer: {temperature: 0.5, max_new_tokens: 300}
        dialogues:
          - id: 7
            tags: [a, b, a]
            turns:
              - user: first
                golden: "first answer"
                judged: false
              - user: second
                reference: ideal
                rubric: {text: Be right., weight: 2}
                checklist:
                  - Is it right?
                  - {question: "Is it short?", weight: 0.5, name: short}
                checks:
                  - {regex: "x+", flags: [ignorecase, dotall], name: xs, weight: 3}
                  - {exact: "Y", case_sensitive: false, strip: false}
        """,
    )
    spec = load_spec(path)
    assert (spec.history, spec.dialogue_score, spec.system) == ("golden", "min", "Be brief.")
    assert (spec.temperature, spec.max_new_tokens) == (0.5, 300)
    (dialogue,) = spec.dialogues
    assert dialogue.id == 7 and dialogue.tags == ("a", "b")
    first, second = dialogue.turns
    assert not first.judged and first.golden == "first answer"
    assert second.rubric is not None and second.rubric.weight == 2.0
    assert [(i.question, i.weight, i.name) for i in second.checklist] == [
        ("Is it right?", 1.0, "checklist"),
        ("Is it short?", 0.5, "short"),
    ]
    regex, exact = second.checks
    assert (regex.name, regex.weight, regex.flags) == ("xs", 3.0, re.IGNORECASE | re.DOTALL)
    assert (exact.name, exact.case_sensitive, exact.strip) == ("exact", False, False)


def test_json_files_read_as_json(tmp_path):
    document = {
        "version": 1,
        "name": "j",
        "dialogues": [{"id": "a", "turns": [{"user": "x", "checks": [{"max_words": 1e2}]}]}],
    }
    # tabs between tokens are fine in JSON (YAML alone would refuse them); 1e2 is a number
    text = json.dumps(document, indent="\t").replace(": 100.0", ": 1e2")
    path = write(tmp_path, text, "bench.json")
    with pytest.raises(UserError, match=r"bench.json:\d+: .*max_words: expected a whole number"):
        load_spec(path)
    document["dialogues"][0]["turns"][0]["checks"] = [{"max_words": 100}]
    path.write_text(json.dumps(document, indent="\t"), "utf-8")
    (dialogue,) = load_spec(path).dialogues
    assert dialogue.turns[0].checks[0].value == 100


# (file text, the expected "LINE: message" of its one problem)
MISTAKES = [
    ("", "the file is empty"),
    ("version: 1\nname: [unclosed\n", "3: not valid YAML"),
    ("- a list\n", "1: expected a benchmark (a mapping of keys to values)"),
    ("name: t\n" + ONE_DIALOGUE, "1: version: missing"),
    ("version: 3\nname: t\n" + ONE_DIALOGUE, "1: version: format version 3 is not supported"),
    ("version: 1\n" + ONE_DIALOGUE, "1: name: missing"),
    ("version: 1\nname: has space\n" + ONE_DIALOGUE, "2: name: a name is 1-64 letters"),
    (
        "version: 1\nname: mt-bench\n" + ONE_DIALOGUE,
        "2: name: 'mt-bench' is the name of a built-in",
    ),
    (
        HEAD + "histroy: self\n" + ONE_DIALOGUE,
        "3: histroy: unknown key 'histroy' (did you mean 'history'?)",
    ),
    (HEAD + "history: mine\n" + ONE_DIALOGUE, "3: history: must be one of golden, self"),
    (HEAD + "dialogue_score: max\n" + ONE_DIALOGUE, "3: dialogue_score: must be one of mean, min"),
    (HEAD + "description: 5\n" + ONE_DIALOGUE, "3: description: expected a text, got a number"),
    (HEAD + "system: ''\n" + ONE_DIALOGUE, "3: system: must not be empty"),
    (HEAD + "answer: 5\n" + ONE_DIALOGUE, "3: answer: expected answer settings"),
    (
        HEAD + "answer: {temperature: 3}\n" + ONE_DIALOGUE,
        "3: answer.temperature: a number from 0 to 2",
    ),
    (
        HEAD + "answer: {max_new_tokens: 0}\n" + ONE_DIALOGUE,
        "3: answer.max_new_tokens: a whole number from 1",
    ),
    (HEAD + "answer: {top_p: 1}\n" + ONE_DIALOGUE, "3: answer.top_p: unknown key 'top_p'"),
    (HEAD, "dialogues: missing"),
    (HEAD + "dialogues: []\n", "3: dialogues: expected a non-empty list of dialogues"),
    (HEAD + "dialogues: [5]\n", "3: dialogues[0]: expected a dialogue"),
    (
        HEAD + "dialogues:\n  - turns: [{user: x, checks: [{contains: x}]}]\n",
        "4: dialogues[0].id: missing",
    ),
    (
        HEAD + "dialogues:\n  - id: [1]\n    turns: [{user: x, checks: [{exact: x}]}]\n",
        "4: dialogues[0].id: an id is a text or a whole number",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n" + ANY + "  - id: a\n" + ANY,
        "6: dialogues[1].id: id 'a' is used twice (first by dialogues[0])",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n" + ANY + "  - id: 2\n" + ANY,
        "3: dialogues: dialogue ids must be all texts or all whole numbers",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n    tags: x\n    turns: [{user: x, checks: [{exact: x}]}]\n",
        "5: dialogues[0].tags: expected a list of tags",
    ),
    (
        HEAD
        + "dialogues:\n  - id: a\n    tags: [1]\n    turns: [{user: x, checks: [{exact: x}]}]\n",
        "5: dialogues[0].tags[0]: a tag is a text",
    ),
    (
        HEAD
        + "dialogues:\n  - id: a\n    title: x\n    turns: [{user: x, checks: [{exact: x}]}]\n",
        "5: dialogues[0].title: unknown key 'title'",
    ),
    (HEAD + "dialogues:\n  - id: a\n", "4: dialogues[0].turns: missing"),
    (
        HEAD + "dialogues:\n  - id: a\n    turns: []\n",
        "5: dialogues[0].turns: expected a non-empty list of turns",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n    turns: [hello]\n",
        "5: dialogues[0].turns[0]: expected a turn",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n    turns:\n      - checks: [{exact: x}]\n",
        "6: dialogues[0].turns[0].user: missing (a text is required)",
    ),
    (
        HEAD + "dialogues:\n  - id: a\n    turns:\n      - user: 3\n        checks: [{exact: x}]\n",
        "6: dialogues[0].turns[0].user: expected a text",
    ),
    (
        TURN + "        answer: y\n        checks: [{exact: x}]\n",
        "7: dialogues[0].turns[0].answer: unknown key 'answer'",
    ),
    (
        TURN + "        golden: 4\n        checks: [{exact: x}]\n",
        "7: dialogues[0].turns[0].golden: expected a text",
    ),
    (
        TURN + "        judged: no-thanks\n        checks: [{exact: x}]\n",
        "7: dialogues[0].turns[0].judged: expected true or false",
    ),
    (
        TURN + "",
        "6: dialogues[0].turns[0]: a judged turn needs a rubric, a checklist or checks",
    ),
    (
        TURN + "        judged: false\n        rubric: r\n      - user: y\n        rubric: r\n",
        "6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric",
    ),
    (
        TURN + "        judged: false\n",
        "5: dialogues[0].turns: no turn is judged",
    ),
    (
        "history: golden\n" + TURN + "        judged: false\n      - user: y\n        rubric: r\n",
        "7: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer",
    ),
    (
        TURN + "        rubric: [r]\n",
        "7: dialogues[0].turns[0].rubric: expected a rubric text",
    ),
    (
        TURN + "        rubric: {weight: 2}\n",
        "7: dialogues[0].turns[0].rubric.text: missing",
    ),
    (
        TURN + "        rubric: {text: r, weight: 0}\n",
        "7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06",
    ),
    (
        TURN + "        checklist: []\n",
        "7: dialogues[0].turns[0].checklist: expected a non-empty list of yes/no questions",
    ),
    (
        TURN + "        checklist: [5]\n",
        "7: dialogues[0].turns[0].checklist[0]: expected a question",
    ),
    (
        TURN + "        checklist: [{weight: 1}]\n",
        "7: dialogues[0].turns[0].checklist[0].question: missing",
    ),
    (
        TURN + "        checklist: [{question: q, name: 'a b'}]\n",
        "7: dialogues[0].turns[0].checklist[0].name: a name is",
    ),
    (
        TURN + "        checklist: [{question: q, why: w}]\n",
        "7: dialogues[0].turns[0].checklist[0].why: unknown key 'why'",
    ),
    (
        TURN + "        checks: {contains: x}\n",
        "7: dialogues[0].turns[0].checks: expected a non-empty list of checks",
    ),
    (
        TURN + "        checks: [contains]\n",
        "7: dialogues[0].turns[0].checks[0]: expected a check",
    ),
    (
        TURN + "        checks: [{name: n}]\n",
        "7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found no check kind",
    ),
    (
        TURN + "        checks: [{contains: x, regex: y}]\n",
        "found 2 kinds (contains, regex)",
    ),
    (
        TURN + "        checks: [{contains: x, flags: [dotall]}]\n",
        "7: dialogues[0].turns[0].checks[0].flags: unknown key 'flags'",
    ),
    (
        TURN + "        checks: [{regex: '('}]\n",
        "7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression",
    ),
    (
        TURN + "        checks: [{regex: 5}]\n",
        "checks[0].regex: expected a regular expression",
    ),
    (
        TURN + "        checks: [{regex: a, flags: [verbose]}]\n",
        "7: dialogues[0].turns[0].checks[0].flags[0]: unknown flag 'verbose'",
    ),
    (
        TURN + "        checks: [{regex: a, flags: dotall}]\n",
        "checks[0].flags: expected a list of flags",
    ),
    (
        TURN + "        checks: [{contains: ''}]\n",
        "checks[0].contains: expected a non-empty text",
    ),
    (
        TURN + "        checks: [{not_contains: x, case_sensitive: maybe}]\n",
        "checks[0].case_sensitive: expected true or false",
    ),
    (
        TURN + "        checks: [{max_words: 2.5}]\n",
        "checks[0].max_words: expected a whole number from 0",
    ),
    (
        TURN + "        checks: [{min_chars: -1}]\n",
        "checks[0].min_chars: expected a whole number from 0",
    ),
    (
        TURN + "        checks: [{valid_json: false}]\n",
        "checks[0].valid_json: write `valid_json: true`",
    ),
    (
        TURN + "        checks: [{json_schema: [1]}]\n",
        "checks[0].json_schema: expected a JSON Schema",
    ),
    (
        TURN + "        checks: [{json_schema: {type: nope}}]\n",
        "7: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at type",
    ),
    (
        TURN + "        checks: [{json_schema: {$ref: 'https://example.org/s.json'}}]\n",
        "7: dialogues[0].turns[0].checks[0].json_schema: a schema may refer only to its own parts",
    ),
    (
        TURN + "        checks: [{exact: x, strip: 1}]\n",
        "checks[0].strip: expected true or false",
    ),
    (
        TURN + "        checks: [{exact: x, weight: -2}]\n",
        "checks[0].weight: a weight is a number from 1e-06 to 1e+06",
    ),
    (
        TURN + "        checks: [{exact: x, name: ''}]\n",
        "checks[0].name: a name is",
    ),
    (
        TURN + "        user: y\n        checks: [{exact: x}]\n",
        "7: key 'user' is given twice",
    ),
    (HEAD + "? [a, b]\n: 1\n" + ONE_DIALOGUE, "3: a key must be a plain name"),
    (HEAD + "description: !!python/object:os.system x\n" + ONE_DIALOGUE, "3: unreadable value"),
]


@pytest.mark.parametrize(("text", "expected"), MISTAKES)
def test_every_mistake_is_reported_with_its_line(tmp_path, text, expected):
    path = tmp_path / "bench.yaml"
    path.write_text(text, "utf-8")
    found = problems(path)
    assert len(found) == 1, found
    assert expected in found[0], found
    line = expected.split(":")[0]
    if line.isdigit():
        assert found[0].startswith(f"{line}: "), found


def test_all_mistakes_are_reported_at_once(tmp_path):
    text = (
        "version: 2\nname: t\nhistory: mine\ndialogues:\n  - id: a\n    turns:\n"
        "      - user: x\n        checks: [{max_words: -1}, {regex: '('}]\n"
        "      - user: y\n        rubric: ''\n"
    )
    path = tmp_path / "bench.yaml"
    path.write_text(text, "utf-8")
    found = problems(path)
    assert [line.split(":")[0] for line in found] == ["1", "3", "8", "8", "10"]


def test_bad_utf8_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bench.yaml"
    path.write_bytes(b"version: 1\nname: \xff\n")
    with pytest.raises(UserError, match=r"bench.yaml:2: not valid UTF-8"):
        load_spec(path)


def test_the_class_is_bound_to_its_file(tmp_path):
    path = write(tmp_path, HEAD + ONE_DIALOGUE)
    cls = benchmark_from_file(path)
    assert cls.name == "t" and cls.source_ref == str(path.resolve())
    assert cls.default_answer_temperature == 0.0 and cls.default_max_new_tokens == 1024


def test_nested_aliases_cannot_blow_up(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1},"
        f" *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(UserError, match="expands to more than"):
        load_spec(path)
