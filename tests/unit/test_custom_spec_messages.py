# ruff: noqa: E501 (the recorded messages and files are compared whole, not wrapped)
"""Golden messages of the custom benchmark format: every problem a file can have, reported
byte for byte as it was before the schema became pydantic models (the expected texts were
recorded by running the hand-written validator they replace), and valid files that still
mean exactly the same objects.

Each case is a file name and its text; the whole UserError text is compared, so the order
of the problems, their lines, their places and the count of those not shown all count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnbench.benchmarks.custom import load_spec
from turnbench.errors import UserError

HEAD = "version: 1\nname: t\n"
GOOD = "dialogues:\n  - id: a\n    turns:\n      - user: hi\n        checks: [{contains: x}]\n"
TURN = HEAD + "dialogues:\n  - id: a\n    turns:\n      - user: x\n"
BODY = "    turns: [{user: x, checks: [{exact: x}]}]\n"  # a valid dialogue body


def turn(extra: str) -> str:
    """A file whose one turn has the YAML lines `extra` (indented as the turn's keys)."""
    return TURN + "".join(f"        {line}\n" for line in extra.splitlines())


def check(inline: str) -> str:
    """A file whose one turn has the one check `inline` (YAML flow style)."""
    return turn(f"checks: [{inline}]")


def one_line(value: object) -> str:
    """JSON on a single line: every problem is on line 1, so only their order tells them
    apart."""
    return json.dumps(value)


def good_json_turn(**extra: object) -> dict[str, object]:
    return {"user": "x", "checks": [{"exact": "x"}], **extra}


def json_bench(*dialogues: object, **top: object) -> dict[str, object]:
    return {"version": 1, "name": "t", **top, "dialogues": list(dialogues)}


def many_problems(count: int) -> str:
    dialogues = "".join(
        f"  - id: d{i}\n    turns: [{{user: 5, rubric: ''}}]\n" for i in range(count)
    )
    return "version: 7\nname: 'x y'\nhistory: 9\ndialogues:\n" + dialogues


# (case id, file name, file text)
CASES: list[tuple[str, str, str]] = [
    # -- the file itself ---------------------------------------------------------------------
    ("empty", "bench.yaml", ""),
    ("blank", "bench.yaml", "  \n\n"),
    ("null-document", "bench.yaml", "null\n"),
    ("tilde-document", "bench.yaml", "~\n"),
    ("list-document", "bench.yaml", "- a list\n"),
    ("scalar-document", "bench.yaml", "hello\n"),
    ("number-document", "bench.json", "5"),
    ("bad-yaml", "bench.yaml", "version: 1\nname: [unclosed\n"),
    ("bad-json", "bench.json", '{"version": 1,\n "name": }'),
    ("json-list", "bench.json", "[1, 2]"),
    ("yaml-too-deep", "bench.yaml", HEAD + "description: " + "[" * 120 + "]" * 120 + "\n"),
    ("json-too-deep", "bench.json", '{"version": 1,\n"x": ' + "[" * 120 + "]" * 120 + "}"),
    ("key-twice", "bench.yaml", HEAD + "name: u\n" + GOOD),
    ("key-not-plain", "bench.yaml", HEAD + "? [a, b]\n: 1\n" + GOOD),
    ("unreadable-value", "bench.yaml", HEAD + "description: !!python/object:os.system x\n" + GOOD),
    # -- the top level -----------------------------------------------------------------------
    ("version-missing", "bench.yaml", "name: t\n" + GOOD),
    ("version-null", "bench.yaml", "version: null\nname: t\n" + GOOD),
    ("version-3", "bench.yaml", "version: 3\nname: t\n" + GOOD),
    ("version-text", "bench.yaml", "version: '1'\nname: t\n" + GOOD),
    ("version-true", "bench.yaml", "version: true\nname: t\n" + GOOD),
    ("version-list", "bench.yaml", "version: [1]\nname: t\n" + GOOD),
    ("version-float-2", "bench.yaml", "version: 2.0\nname: t\n" + GOOD),
    ("name-missing", "bench.yaml", "version: 1\n" + GOOD),
    ("name-null", "bench.yaml", "version: 1\nname: ~\n" + GOOD),
    ("name-number", "bench.yaml", "version: 1\nname: 5\n" + GOOD),
    ("name-true", "bench.yaml", "version: 1\nname: true\n" + GOOD),
    ("name-space", "bench.yaml", "version: 1\nname: has space\n" + GOOD),
    ("name-too-long", "bench.yaml", f"version: 1\nname: {'a' * 65}\n" + GOOD),
    ("name-dash-first", "bench.yaml", "version: 1\nname: -x\n" + GOOD),
    ("name-tab", "bench.yaml", 'version: 1\nname: "a\\tb"\n' + GOOD),
    ("name-escape", "bench.yaml", 'version: 1\nname: "a\\x1bb"\n' + GOOD),
    ("name-newline-inside", "bench.yaml", 'version: 1\nname: "a\\nb"\n' + GOOD),
    ("name-reserved", "bench.yaml", "version: 1\nname: mt-bench\n" + GOOD),
    ("name-list", "bench.yaml", "version: 1\nname: [a]\n" + GOOD),
    ("description-number", "bench.yaml", HEAD + "description: 5\n" + GOOD),
    ("description-list", "bench.yaml", HEAD + "description: [a]\n" + GOOD),
    ("description-mapping", "bench.yaml", HEAD + "description: {a: 1}\n" + GOOD),
    ("description-empty", "bench.yaml", HEAD + "description: ''\n" + GOOD),
    ("description-blank", "bench.yaml", HEAD + "description: '   '\n" + GOOD),
    ("description-true", "bench.yaml", HEAD + "description: yes\n" + GOOD),
    ("description-date", "bench.yaml", HEAD + "description: 2024-01-02\n" + GOOD),
    ("description-binary", "bench.yaml", HEAD + "description: !!binary aGk=\n" + GOOD),
    ("history-mine", "bench.yaml", HEAD + "history: mine\n" + GOOD),
    ("history-number", "bench.yaml", HEAD + "history: 5\n" + GOOD),
    ("history-list", "bench.yaml", HEAD + "history: [golden]\n" + GOOD),
    ("score-max", "bench.yaml", HEAD + "dialogue_score: max\n" + GOOD),
    ("score-true", "bench.yaml", HEAD + "dialogue_score: true\n" + GOOD),
    ("system-empty", "bench.yaml", HEAD + "system: ''\n" + GOOD),
    ("system-number", "bench.yaml", HEAD + "system: 3\n" + GOOD),
    ("answer-number", "bench.yaml", HEAD + "answer: 5\n" + GOOD),
    ("answer-list", "bench.yaml", HEAD + "answer: [1]\n" + GOOD),
    ("answer-text", "bench.yaml", HEAD + "answer: x\n" + GOOD),
    (
        "answer-all-wrong",
        "bench.yaml",
        HEAD + "answer: {top_p: 1, temperature: 3, max_new_tokens: 0, seed: 2}\n" + GOOD,
    ),
    ("temperature-true", "bench.yaml", HEAD + "answer: {temperature: true}\n" + GOOD),
    ("temperature-text", "bench.yaml", HEAD + "answer: {temperature: '0.5'}\n" + GOOD),
    ("temperature-nan", "bench.yaml", HEAD + "answer: {temperature: .nan}\n" + GOOD),
    ("temperature-inf", "bench.yaml", HEAD + "answer: {temperature: .inf}\n" + GOOD),
    ("temperature-negative", "bench.yaml", HEAD + "answer: {temperature: -0.1}\n" + GOOD),
    ("temperature-above", "bench.yaml", HEAD + "answer: {temperature: 2.0000001}\n" + GOOD),
    ("temperature-list", "bench.yaml", HEAD + "answer: {temperature: [1]}\n" + GOOD),
    ("temperature-huge", "bench.yaml", HEAD + f"answer: {{temperature: {10**400}}}\n" + GOOD),
    ("tokens-above", "bench.yaml", HEAD + "answer: {max_new_tokens: 1000001}\n" + GOOD),
    ("tokens-float", "bench.yaml", HEAD + "answer: {max_new_tokens: 1.5}\n" + GOOD),
    ("tokens-whole-float", "bench.yaml", HEAD + "answer: {max_new_tokens: 5.0}\n" + GOOD),
    ("tokens-true", "bench.yaml", HEAD + "answer: {max_new_tokens: true}\n" + GOOD),
    ("tokens-text", "bench.yaml", HEAD + "answer: {max_new_tokens: '5'}\n" + GOOD),
    ("tokens-huge", "bench.yaml", HEAD + f"answer: {{max_new_tokens: {10**30}}}\n" + GOOD),
    ("tokens-negative", "bench.yaml", HEAD + "answer: {max_new_tokens: -5}\n" + GOOD),
    ("unknown-close", "bench.yaml", HEAD + "histroy: self\n" + GOOD),
    ("unknown-case", "bench.yaml", HEAD + "Dialogues: 1\n" + GOOD),
    ("unknown-far", "bench.yaml", HEAD + "zzz: 1\n" + GOOD),
    ("unknown-int-key", "bench.yaml", HEAD + "5: x\n" + GOOD),
    ("unknown-float-key", "bench.yaml", HEAD + "1.5: x\n" + GOOD),
    ("unknown-unicode-key", "bench.yaml", HEAD + "naïve: x\n" + GOOD),
    ("unknown-surrogate-key", "bench.yaml", HEAD + '"\\udcff": x\n' + GOOD),
    ("unknown-null-valued", "bench.yaml", HEAD + "extra: ~\n" + GOOD),
    # -- dialogues ---------------------------------------------------------------------------
    ("dialogues-missing", "bench.yaml", HEAD),
    ("dialogues-null", "bench.yaml", HEAD + "dialogues: ~\n"),
    ("dialogues-empty", "bench.yaml", HEAD + "dialogues: []\n"),
    ("dialogues-mapping", "bench.yaml", HEAD + "dialogues: {a: 1}\n"),
    ("dialogues-text", "bench.yaml", HEAD + "dialogues: x\n"),
    ("dialogue-number", "bench.yaml", HEAD + "dialogues: [5]\n"),
    ("dialogue-null", "bench.yaml", HEAD + "dialogues: [~, ~]\n"),
    (
        "id-missing",
        "bench.yaml",
        HEAD + "dialogues:\n  - turns: [{user: x, checks: [{contains: x}]}]\n",
    ),
    ("id-null", "bench.yaml", HEAD + "dialogues:\n  - id: ~\n" + BODY),
    ("id-true", "bench.yaml", HEAD + "dialogues:\n  - id: true\n" + BODY),
    ("id-float", "bench.yaml", HEAD + "dialogues:\n  - id: 1.5\n" + BODY),
    ("id-whole-float", "bench.yaml", HEAD + "dialogues:\n  - id: 1.0\n" + BODY),
    ("id-empty", "bench.yaml", HEAD + "dialogues:\n  - id: ''\n" + BODY),
    ("id-list", "bench.yaml", HEAD + "dialogues:\n  - id: [1]\n" + BODY),
    ("id-mapping", "bench.yaml", HEAD + "dialogues:\n  - id: {a: 1}\n" + BODY),
    ("id-twice", "bench.yaml", HEAD + "dialogues:\n  - id: a\n" + BODY + "  - id: a\n" + BODY),
    (
        "id-three-times",
        "bench.yaml",
        HEAD + "dialogues:\n" + "".join(f"  - id: 7\n{BODY}" for _ in range(3)),
    ),
    ("id-mix", "bench.yaml", HEAD + "dialogues:\n  - id: a\n" + BODY + "  - id: 2\n" + BODY),
    (
        "id-mix-and-twice",
        "bench.yaml",
        HEAD + "dialogues:\n  - id: 1\n" + BODY + "  - id: '1'\n" + BODY + "  - id: 1\n" + BODY,
    ),
    (
        "id-twice-bad-body",
        "bench.yaml",
        HEAD + "dialogues:\n  - id: a\n    turns: 5\n  - id: a\n    turns: []\n",
    ),
    ("tags-text", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    tags: x\n" + BODY),
    ("tags-mapping", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    tags: {a: 1}\n" + BODY),
    (
        "tags-bad-entries",
        "bench.yaml",
        HEAD + "dialogues:\n  - id: a\n    tags: [1, '', ' ', ok, ~, [x], true]\n" + BODY,
    ),
    ("dialogue-unknown", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    title: x\n" + BODY),
    ("dialogue-unknown-close", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turn: x\n" + BODY),
    (
        "dialogue-all-wrong",
        "bench.yaml",
        HEAD + "dialogues:\n  - title: x\n    id: [1]\n    tags: 5\n    turns: []\n",
    ),
    # -- turns -------------------------------------------------------------------------------
    ("turns-missing", "bench.yaml", HEAD + "dialogues:\n  - id: a\n"),
    ("turns-null", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: ~\n"),
    ("turns-empty", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: []\n"),
    ("turns-text", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: hello\n"),
    ("turns-mapping", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: {user: x}\n"),
    ("turn-text", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: [hello]\n"),
    ("turn-null", "bench.yaml", HEAD + "dialogues:\n  - id: a\n    turns: [~, 5]\n"),
    (
        "user-missing",
        "bench.yaml",
        turn("checks: [{exact: x}]").replace("      - user: x\n", "      -\n"),
    ),
    ("user-null", "bench.yaml", turn("checks: [{exact: x}]").replace("user: x", "user: ~")),
    ("user-number", "bench.yaml", turn("checks: [{exact: x}]").replace("user: x", "user: 3")),
    ("user-empty", "bench.yaml", turn("checks: [{exact: x}]").replace("user: x", "user: ''")),
    ("user-blank", "bench.yaml", turn("checks: [{exact: x}]").replace("user: x", "user: '  '")),
    ("user-list", "bench.yaml", turn("checks: [{exact: x}]").replace("user: x", "user: [x]")),
    ("turn-unknown", "bench.yaml", turn("answer: y\nchecks: [{exact: x}]")),
    ("turn-unknown-close", "bench.yaml", turn("chekcs: [{exact: x}]")),
    ("golden-number", "bench.yaml", turn("golden: 4\nchecks: [{exact: x}]")),
    ("golden-list", "bench.yaml", turn("golden: [a]\nchecks: [{exact: x}]")),
    ("reference-empty", "bench.yaml", turn("reference: ''\nchecks: [{exact: x}]")),
    ("reference-number", "bench.yaml", turn("reference: 5\nchecks: [{exact: x}]")),
    ("judged-text", "bench.yaml", turn("judged: no-thanks\nchecks: [{exact: x}]")),
    ("judged-null", "bench.yaml", turn("judged: ~\nchecks: [{exact: x}]")),
    ("judged-zero", "bench.yaml", turn("judged: 0\nchecks: [{exact: x}]")),
    ("judged-text-unscored", "bench.yaml", turn("judged: 'false'")),
    ("needs-scoring", "bench.yaml", TURN),
    ("needs-scoring-and-user", "bench.yaml", TURN.replace("user: x", "user: 5")),
    (
        "not-judged-but-rubric",
        "bench.yaml",
        turn("judged: false\nrubric: r\n") + "      - user: y\n        rubric: r\n",
    ),
    (
        "not-judged-but-all",
        "bench.yaml",
        turn("judged: false\nchecks: [{exact: x}]\nchecklist: [q]\nrubric: r")
        + "      - user: y\n        rubric: r\n",
    ),
    (
        "not-judged-null-rubric",
        "bench.yaml",
        turn("judged: false\nrubric: ~") + "      - user: y\n        rubric: r\n",
    ),
    (
        "not-judged-bad-checks",
        "bench.yaml",
        turn("judged: false\nchecks: 5") + "      - user: y\n        rubric: r\n",
    ),
    ("no-turn-judged", "bench.yaml", turn("judged: false")),
    (
        "no-turn-judged-two",
        "bench.yaml",
        turn("judged: false") + "      - user: y\n        judged: false\n",
    ),
    ("no-turn-judged-bad-rubric", "bench.yaml", turn("judged: false\nrubric: 5")),
    ("no-turn-judged-but-bad-turn", "bench.yaml", turn("judged: false") + "      - 5\n"),
    (
        "golden-needed",
        "bench.yaml",
        "history: golden\n" + turn("judged: false") + "      - user: y\n        rubric: r\n",
    ),
    (
        "golden-needed-twice",
        "bench.yaml",
        "history: golden\n"
        + turn("rubric: r")
        + "      - user: y\n        rubric: r\n      - user: z\n        rubric: r\n"
        + "      - user: w\n        judged: false\n",
    ),
    (
        "golden-wrong-type",
        "bench.yaml",
        "history: golden\n" + turn("golden: 5\nrubric: r") + "      - user: y\n        rubric: r\n",
    ),
    (
        "golden-needed-bad-rubric",
        "bench.yaml",
        "history: golden\n" + turn("rubric: 5") + "      - user: y\n        rubric: r\n",
    ),
    (
        "golden-needed-bad-user",
        "bench.yaml",
        "history: golden\n"
        + turn("rubric: r").replace("user: x", "user: 5")
        + "      - user: y\n        rubric: r\n",
    ),
    (
        "golden-bad-history-value",
        "bench.yaml",
        "history: Golden\n" + turn("rubric: r") + "      - user: y\n        rubric: r\n",
    ),
    # -- rubrics -----------------------------------------------------------------------------
    ("rubric-list", "bench.yaml", turn("rubric: [r]")),
    ("rubric-number", "bench.yaml", turn("rubric: 5")),
    ("rubric-true", "bench.yaml", turn("rubric: true")),
    ("rubric-empty", "bench.yaml", turn("rubric: ''")),
    ("rubric-blank", "bench.yaml", turn("rubric: '  '")),
    ("rubric-no-text", "bench.yaml", turn("rubric: {weight: 2}")),
    ("rubric-text-null", "bench.yaml", turn("rubric: {text: ~}")),
    ("rubric-text-empty", "bench.yaml", turn("rubric: {text: '', weight: 2}")),
    ("rubric-text-number", "bench.yaml", turn("rubric: {text: 5}")),
    ("rubric-unknown", "bench.yaml", turn("rubric: {text: r, wieght: 2}")),
    ("rubric-weight-zero", "bench.yaml", turn("rubric: {text: r, weight: 0}")),
    ("rubric-weight-true", "bench.yaml", turn("rubric: {text: r, weight: true}")),
    ("rubric-weight-nan", "bench.yaml", turn("rubric: {text: r, weight: .nan}")),
    ("rubric-weight-inf", "bench.yaml", turn("rubric: {text: r, weight: .inf}")),
    ("rubric-weight-text-1e7", "bench.yaml", turn("rubric: {text: r, weight: 1e7}")),
    ("rubric-weight-above", "bench.yaml", turn("rubric: {text: r, weight: 1.0e+7}")),
    ("rubric-weight-int-above", "bench.yaml", turn("rubric: {text: r, weight: 1000001}")),
    ("rubric-weight-below", "bench.yaml", turn("rubric: {text: r, weight: 0.0000001}")),
    ("rubric-weight-text", "bench.yaml", turn("rubric: {text: r, weight: '2'}")),
    ("rubric-weight-huge", "bench.yaml", turn(f"rubric: {{text: r, weight: {10**400}}}")),
    ("rubric-weight-list", "bench.yaml", turn("rubric: {text: r, weight: [1]}")),
    ("rubric-all-wrong", "bench.yaml", turn("rubric: {x: 1, text: '', weight: -1}")),
    # -- checklists --------------------------------------------------------------------------
    ("checklist-empty", "bench.yaml", turn("checklist: []")),
    ("checklist-mapping", "bench.yaml", turn("checklist: {question: q}")),
    ("checklist-text", "bench.yaml", turn("checklist: q")),
    ("checklist-number-item", "bench.yaml", turn("checklist: [5]")),
    ("checklist-null-item", "bench.yaml", turn("checklist: [~]")),
    ("checklist-empty-item", "bench.yaml", turn("checklist: ['', ' ']")),
    ("checklist-list-item", "bench.yaml", turn("checklist: [[q]]")),
    ("checklist-no-question", "bench.yaml", turn("checklist: [{weight: 1}]")),
    ("checklist-bad-name", "bench.yaml", turn("checklist: [{question: q, name: 'a b'}]")),
    ("checklist-unknown", "bench.yaml", turn("checklist: [{question: q, why: w}]")),
    (
        "checklist-all-wrong",
        "bench.yaml",
        turn("checklist: [{why: w, question: 5, weight: -1, name: 5}, '', 7]"),
    ),
    # -- checks ------------------------------------------------------------------------------
    ("checks-mapping", "bench.yaml", turn("checks: {contains: x}")),
    ("checks-empty", "bench.yaml", turn("checks: []")),
    ("checks-text", "bench.yaml", turn("checks: contains")),
    ("check-text", "bench.yaml", check("contains")),
    ("check-null", "bench.yaml", turn("checks: [~]")),
    ("check-no-kind", "bench.yaml", check("{name: n}")),
    ("check-empty", "bench.yaml", check("{}")),
    ("check-two-kinds", "bench.yaml", check("{contains: x, regex: y}")),
    (
        "check-two-kinds-unknown",
        "bench.yaml",
        check("{contains: x, regex: y, bogus: 1, wieght: 2}"),
    ),
    ("check-three-kinds", "bench.yaml", check("{exact: x, contains: x, max_words: 3, weight: -1}")),
    ("check-no-kind-unknown", "bench.yaml", check("{regexp: x}")),
    ("check-unknown-option", "bench.yaml", check("{contains: x, flags: [dotall]}")),
    ("check-unknown-close", "bench.yaml", check("{contains: x, nmae: n}")),
    ("check-strip-on-regex", "bench.yaml", check("{regex: a, strip: true}")),
    ("check-flags-on-contains", "bench.yaml", check("{contains: a, flags: 5}")),
    ("check-case-on-count", "bench.yaml", check("{max_words: 3, case_sensitive: 2}")),
    ("regex-bad", "bench.yaml", check("{regex: '('}")),
    ("regex-bad-class", "bench.yaml", check("{not_regex: '[a-'}")),
    ("regex-bad-escape", "bench.yaml", check("{regex: '\\q'}")),
    ("regex-late-flag", "bench.yaml", check("{regex: 'a(?i)'}")),
    ("regex-number", "bench.yaml", check("{regex: 5}")),
    ("regex-empty", "bench.yaml", check("{regex: ''}")),
    ("regex-null", "bench.yaml", check("{regex: ~}")),
    ("regex-list", "bench.yaml", check("{regex: [a]}")),
    ("flags-unknown", "bench.yaml", check("{regex: a, flags: [verbose]}")),
    ("flags-text", "bench.yaml", check("{regex: a, flags: dotall}")),
    ("flags-mixed", "bench.yaml", check("{regex: a, flags: [ignorecase, 5, multiline, ~]}")),
    ("flags-and-bad-regex", "bench.yaml", check("{regex: '(', flags: [bogus]}")),
    ("contains-empty", "bench.yaml", check("{contains: ''}")),
    ("contains-number", "bench.yaml", check("{contains: 5}")),
    ("contains-null", "bench.yaml", check("{contains: ~}")),
    ("exact-list", "bench.yaml", check("{exact: [x]}")),
    ("case-maybe", "bench.yaml", check("{not_contains: x, case_sensitive: maybe}")),
    ("case-null", "bench.yaml", check("{contains: x, case_sensitive: ~}")),
    ("strip-one", "bench.yaml", check("{exact: x, strip: 1}")),
    ("strip-null", "bench.yaml", check("{exact: x, strip: ~}")),
    ("count-float", "bench.yaml", check("{max_words: 2.5}")),
    ("count-whole-float", "bench.yaml", check("{max_words: 2.0}")),
    ("count-true", "bench.yaml", check("{min_words: true}")),
    ("count-negative", "bench.yaml", check("{min_chars: -1}")),
    ("count-text", "bench.yaml", check("{max_chars: '3'}")),
    ("count-null", "bench.yaml", check("{max_chars: ~}")),
    ("valid-json-false", "bench.yaml", check("{valid_json: false}")),
    ("valid-json-one", "bench.yaml", check("{valid_json: 1}")),
    ("valid-json-null", "bench.yaml", check("{valid_json: ~}")),
    ("schema-list", "bench.yaml", check("{json_schema: [1]}")),
    ("schema-text", "bench.yaml", check("{json_schema: x}")),
    ("schema-null", "bench.yaml", check("{json_schema: ~}")),
    ("schema-bad-type", "bench.yaml", check("{json_schema: {type: nope}}")),
    ("schema-bad-inner", "bench.yaml", check("{json_schema: {properties: {a: {type: 5}}}}")),
    ("schema-remote", "bench.yaml", check("{json_schema: {$ref: 'https://example.org/s.json'}}")),
    (
        "schema-remotes",
        "bench.yaml",
        check("{json_schema: {items: [{$ref: b.json}, {$dynamicRef: a.json}, {$ref: b.json}]}}"),
    ),
    ("schema-bad-and-remote", "bench.yaml", check("{json_schema: {type: 5, $ref: x.json}}")),
    ("weight-negative", "bench.yaml", check("{exact: x, weight: -2}")),
    ("weight-null-fine-but-bad-name", "bench.yaml", check("{exact: x, weight: ~, name: 'a/b'}")),
    ("name-empty", "bench.yaml", check("{exact: x, name: ''}")),
    ("name-number-check", "bench.yaml", check("{exact: x, name: 5}")),
    (
        "check-all-wrong",
        "bench.yaml",
        check(
            "{regex: '(', name: 'a b', weight: 0, case_sensitive: 1, strip: 2, flags: [x], o: 1}"
        ),
    ),
    (
        "checks-several-bad",
        "bench.yaml",
        turn("checks:\n  - {max_words: -1}\n  - 5\n  - {regex: '('}\n  - {contains: a, exact: b}"),
    ),
    # -- several problems at once ------------------------------------------------------------
    (
        "all-at-once",
        "bench.yaml",
        "version: 2\nname: t\nhistory: mine\ndialogues:\n  - id: a\n    turns:\n"
        "      - user: x\n        checks: [{max_words: -1}, {regex: '('}]\n"
        "      - user: y\n        rubric: ''\n",
    ),
    (
        "the-documented-example",
        "bench.yaml",
        "version: 2\nname: t\nhistroy: self\ndialogues:\n  - id: a\n    turns:\n"
        "      - user: x\n        rubric: r\n      - user: y\n        checks:\n"
        "          - max_words: many\n",
    ),
    (
        "document-and-spec-problems",
        "bench.yaml",
        "version: 1\nversion: 2\nname: 5\n? [k]\n: v\n" + GOOD,
    ),
    ("sixty-problems", "bench.yaml", many_problems(30)),
    ("fifty-problems", "bench.yaml", many_problems(23)),
    (
        "flow-style-one-line",
        "bench.yaml",
        "{version: 2, name: 'a b', x: 1, history: 3, answer: {temperature: 9, y: 2}, "
        "dialogues: [{id: a, turns: [{user: 5, judged: 2, rubric: '', checks: [{regex: '(', "
        "contains: a}, {exact: ''}]}]}, {id: a, tags: [1], turns: []}, {id: 2, turns: [5]}]}\n",
    ),
    # -- JSON --------------------------------------------------------------------------------
    ("json-valid-but-bad-version", "bench.json", json.dumps(json_bench(version=1.5), indent=2)),
    (
        "json-one-line-top",
        "bench.json",
        one_line(
            {
                "zzz": 1,
                "version": True,
                "name": "mt-bench",
                "description": 5,
                "history": "x",
                "dialogue_score": None,
                "system": "",
                "answer": {"max_new_tokens": 1e3, "temperature": -1, "top_k": 3},
                "dialogues": [],
                "historie": 1,
            }
        ),
    ),
    (
        "json-one-line-dialogues",
        "bench.json",
        one_line(
            json_bench(
                {"id": "a", "turns": [good_json_turn()]},
                {"id": "a", "turns": [good_json_turn(user=5)], "extra": 1},
                {"id": 3, "tags": "t", "turns": [good_json_turn(judged="yes")]},
                {"id": "a", "turns": [5]},
                {"id": 3.5, "turns": None},
            )
        ),
    ),
    (
        "json-one-line-turns",
        "bench.json",
        one_line(
            json_bench(
                {
                    "id": "a",
                    "turns": [
                        {"user": "x", "judged": False, "rubric": "r", "reference": ""},
                        {"golden": 5, "judged": False},
                        {"user": "y", "checklist": [{"question": ""}, 5, ""], "x": 1},
                        {"user": "z", "checks": [{"regex": "(", "flags": ["dotall", "q"]}]},
                    ],
                },
                history="golden",
            )
        ),
    ),
    (
        "json-one-line-golden",
        "bench.json",
        one_line(
            json_bench(
                {
                    "id": "a",
                    "turns": [
                        {"user": "x", "rubric": "r", "x": 1},
                        {"user": "y", "judged": False, "golden": ""},
                        {"user": "z", "rubric": "r"},
                    ],
                },
                {"id": "b", "turns": [{"user": "x", "judged": False}]},
                history="golden",
            )
        ),
    ),
    (
        "json-one-line-checks",
        "bench.json",
        one_line(
            json_bench(
                {
                    "id": "a",
                    "turns": [
                        {
                            "user": "x",
                            "checks": [
                                {"json_schema": {"type": "nope"}, "name": "", "weight": 0},
                                {"max_words": 1.5, "case_sensitive": "x", "strip": None},
                                {"exact": "", "zz": 1, "contains": "a"},
                                {"valid_json": "yes", "flags": "i"},
                                {"name": 5},
                            ],
                        }
                    ],
                }
            )
        ),
    ),
    (
        "json-float-count",
        "bench.json",
        json.dumps(
            json_bench({"id": "a", "turns": [{"user": "x", "checks": [{"max_words": 1e2}]}]}),
            indent="\t",
        ),
    ),
    (
        "json-nan-weight",
        "bench.json",
        '{"version": 1, "name": "t", "dialogues": [{"id": "a", "turns": [{"user": "x", "rubric": {"text": "r", "weight": NaN}}]}]}',
    ),
    (
        "json-big-weight",
        "bench.json",
        '{"version": 1, "name": "t", "dialogues": [{"id": "a", "turns": [{"user": "x", "rubric": {"text": "r", "weight": 1e308}}]}]}',
    ),
    (
        "json-huge-number",
        "bench.json",
        '{"version": 1, "name": "t", "answer": {"temperature": 1e400}, "dialogues": [{"id": "a", "turns": [{"user": "x", "rubric": {"text": "r", "weight": -1e400}}]}]}',
    ),
    ("json-key-twice", "bench.json", '{"version": 1, "name": "t", "name": "u", "dialogues": 5}'),
    ("json-escaped-surrogate", "bench.json", '{"version": 1, "name": "\\udcff", "dialogues": 5}'),
    (
        "json-tabs",
        "bench.json",
        '{\n\t"version": 1,\n\t"name": "t",\n\t"dialogues": [\n\t\t{"id": "a", "turns": []}\n\t]\n}',
    ),
]

# (case id, file name, file text) of valid files
VALID: list[tuple[str, str, str]] = [
    (
        "everything",
        "bench.yaml",
        "version: 1\nname: mine\ndescription: About.\nhistory: golden\ndialogue_score: min\n"
        "system: Be brief.\nanswer: {temperature: 0.5, max_new_tokens: 300}\ndialogues:\n"
        "  - id: 7\n    tags: [a, b, a]\n    turns:\n"
        "      - user: first\n        golden: 'first answer'\n        judged: false\n"
        "      - user: second\n        reference: ideal\n        golden: ''\n"
        "        rubric: {text: Be right., weight: 2}\n        checklist:\n"
        "          - Is it right?\n          - {question: 'Is it short?', weight: 0.5, name: short}\n"
        "        checks:\n"
        "          - {regex: 'x+', flags: [ignorecase, dotall, ignorecase], name: xs, weight: 3}\n"
        "          - {not_regex: 'y', flags: []}\n"
        "          - {exact: 'Y', case_sensitive: false, strip: false}\n"
        "          - {contains: a, case_sensitive: true}\n          - {not_contains: b}\n"
        "          - {max_words: 100000000000000000000000000000}\n          - {min_words: 0}\n"
        "          - {max_chars: 5, weight: 1000000}\n          - {min_chars: 1, weight: 0.000001}\n"
        "          - {valid_json: true, name: j.son_1}\n"
        "          - {json_schema: {type: object, $ref: '#/definitions/x'}}\n"
        "          - {json_schema: true}\n"
        "      - user: third\n        judged: false\n"
        "  - id: 8\n    turns:\n      - {user: u, rubric: r, golden: g}\n      - {user: y, rubric: r}\n",
    ),
    (
        "defaults-and-nulls",
        "bench.yaml",
        "version: 1.0\nname: ok\ndescription: ~\nhistory: ~\ndialogue_score: ~\nsystem: ~\n"
        "answer: ~\ndialogues:\n  - id: ' '\n    tags: ~\n    turns:\n"
        "      - user: x\n        golden: ~\n        reference: ~\n        rubric: ~\n"
        "      - user: y\n        checklist: ~\n        checks: [{contains: ' ', name: ~, weight: ~}, "
        "{regex: x, flags: ~}]\n"
        "      - user: z\n        rubric: {text: r, weight: ~}\n"
        "        checklist: [{question: q, weight: ~, name: ~}]\n",
    ),
    (
        "answer-bounds",
        "bench.yaml",
        "version: 1\nname: a.b-c_d\nanswer: {temperature: 2, max_new_tokens: 1000000}\n" + GOOD,
    ),
    (
        "json",
        "bench.json",
        json.dumps(
            json_bench(
                {"id": 1, "turns": [{"user": "x", "checks": [{"max_words": 100}]}]},
                {"id": 2, "tags": ["t"], "turns": [{"user": "x", "rubric": "r"}]},
                answer={"temperature": 0, "max_new_tokens": 1},
            ),
            indent="\t",
        ),
    ),
    # a trailing newline passes NAME's `$`: accepted before, so accepted still
    ("name-newline-after", "bench.yaml", 'version: 1\nname: "ab\\n"\n' + GOOD),
    (
        "json-weight-float",
        "bench.json",
        '{"version": 1, "name": "t", "dialogues": [{"id": "a", "turns": [{"user": "x", "rubric": {"text": "r", "weight": 1e0}}]}]}',
    ),
]

# recorded by running the hand-written validator (main at e4c5ddf) on CASES and VALID
EXPECTED: dict[str, str] = {
    "empty": "bench.yaml has 1 problem:\nbench.yaml: the file is empty",
    "blank": "bench.yaml has 1 problem:\nbench.yaml: the file is empty",
    "null-document": "bench.yaml has 1 problem:\nbench.yaml:1: expected a benchmark (a mapping of keys to values)",
    "tilde-document": "bench.yaml has 1 problem:\nbench.yaml:1: expected a benchmark (a mapping of keys to values)",
    "list-document": "bench.yaml has 1 problem:\nbench.yaml:1: expected a benchmark (a mapping of keys to values)",
    "scalar-document": "bench.yaml has 1 problem:\nbench.yaml:1: expected a benchmark (a mapping of keys to values)",
    "number-document": "bench.json has 1 problem:\nbench.json:1: expected a benchmark (a mapping of keys to values)",
    "bad-yaml": "bench.yaml has 1 problem:\nbench.yaml:3: not valid YAML: expected ',' or ']', but got '<stream end>'",
    "bad-json": "bench.json has 1 problem:\nbench.json:2: malformed JSON (Expecting value at column 10)",
    "json-list": "bench.json has 1 problem:\nbench.json:1: expected a benchmark (a mapping of keys to values)",
    "yaml-too-deep": "bench.yaml has 1 problem:\nbench.yaml:3: nested more than 100 levels deep",
    "json-too-deep": "bench.json has 1 problem:\nbench.json:2: JSON nested more than 100 levels deep",
    "key-twice": "bench.yaml has 1 problem:\nbench.yaml:3: key 'name' is given twice",
    "key-not-plain": "bench.yaml has 1 problem:\nbench.yaml:3: a key must be a plain name",
    "unreadable-value": "bench.yaml has 1 problem:\nbench.yaml:3: unreadable value (could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system')",
    "version-missing": "bench.yaml has 1 problem:\nbench.yaml:1: version: missing: the file must say which format version it uses (1)",
    "version-null": "bench.yaml has 1 problem:\nbench.yaml:1: version: missing: the file must say which format version it uses (1)",
    "version-3": "bench.yaml has 1 problem:\nbench.yaml:1: version: format version 3 is not supported (this turnbench reads 1)",
    "version-text": "bench.yaml has 1 problem:\nbench.yaml:1: version: format version '1' is not supported (this turnbench reads 1)",
    "version-true": "bench.yaml has 1 problem:\nbench.yaml:1: version: format version True is not supported (this turnbench reads 1)",
    "version-list": "bench.yaml has 1 problem:\nbench.yaml:1: version: format version [1] is not supported (this turnbench reads 1)",
    "version-float-2": "bench.yaml has 1 problem:\nbench.yaml:1: version: format version 2.0 is not supported (this turnbench reads 1)",
    "name-missing": "bench.yaml has 1 problem:\nbench.yaml:1: name: missing: the benchmark needs a name (used in results)",
    "name-null": "bench.yaml has 1 problem:\nbench.yaml:2: name: missing: the benchmark needs a name (used in results)",
    "name-number": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 5",
    "name-true": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got True",
    "name-space": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'has space'",
    "name-too-long": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'",
    "name-dash-first": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got '-x'",
    "name-tab": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a\\tb'",
    "name-escape": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a\\x1bb'",
    "name-newline-inside": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a\\nb'",
    "name-reserved": "bench.yaml has 1 problem:\nbench.yaml:2: name: 'mt-bench' is the name of a built-in benchmark; choose another",
    "name-list": "bench.yaml has 1 problem:\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got ['a']",
    "description-number": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got a number",
    "description-list": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got a list",
    "description-mapping": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got a mapping",
    "description-empty": "bench.yaml has 1 problem:\nbench.yaml:3: description: must not be empty",
    "description-blank": "bench.yaml has 1 problem:\nbench.yaml:3: description: must not be empty",
    "description-true": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got true/false",
    "description-date": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got date",
    "description-binary": "bench.yaml has 1 problem:\nbench.yaml:3: description: expected a text, got bytes",
    "history-mine": "bench.yaml has 1 problem:\nbench.yaml:3: history: must be one of golden, self, got 'mine'",
    "history-number": "bench.yaml has 1 problem:\nbench.yaml:3: history: must be one of golden, self, got 5",
    "history-list": "bench.yaml has 1 problem:\nbench.yaml:3: history: must be one of golden, self, got ['golden']",
    "score-max": "bench.yaml has 1 problem:\nbench.yaml:3: dialogue_score: must be one of mean, min, got 'max'",
    "score-true": "bench.yaml has 1 problem:\nbench.yaml:3: dialogue_score: must be one of mean, min, got True",
    "system-empty": "bench.yaml has 1 problem:\nbench.yaml:3: system: must not be empty",
    "system-number": "bench.yaml has 1 problem:\nbench.yaml:3: system: expected a text, got a number",
    "answer-number": "bench.yaml has 1 problem:\nbench.yaml:3: answer: expected answer settings (a mapping of keys to values)",
    "answer-list": "bench.yaml has 1 problem:\nbench.yaml:3: answer: expected answer settings (a mapping of keys to values)",
    "answer-text": "bench.yaml has 1 problem:\nbench.yaml:3: answer: expected answer settings (a mapping of keys to values)",
    "answer-all-wrong": "bench.yaml has 4 problems:\nbench.yaml:3: answer.top_p: unknown key 'top_p'; allowed: temperature, max_new_tokens\nbench.yaml:3: answer.seed: unknown key 'seed'; allowed: temperature, max_new_tokens\nbench.yaml:3: answer.temperature: a number from 0 to 2, got 3\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got 0",
    "temperature-true": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got True",
    "temperature-text": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got '0.5'",
    "temperature-nan": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got nan",
    "temperature-inf": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got inf",
    "temperature-negative": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got -0.1",
    "temperature-above": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got 2.0000001",
    "temperature-list": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got [1]",
    "temperature-huge": "bench.yaml has 1 problem:\nbench.yaml:3: answer.temperature: a number from 0 to 2, got 10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "tokens-above": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got 1000001",
    "tokens-float": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got 1.5",
    "tokens-whole-float": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got 5.0",
    "tokens-true": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got True",
    "tokens-text": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got '5'",
    "tokens-huge": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got 1000000000000000000000000000000",
    "tokens-negative": "bench.yaml has 1 problem:\nbench.yaml:3: answer.max_new_tokens: a whole number from 1 to 1000000, got -5",
    "unknown-close": "bench.yaml has 1 problem:\nbench.yaml:3: histroy: unknown key 'histroy' (did you mean 'history'?); allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-case": "bench.yaml has 1 problem:\nbench.yaml:3: Dialogues: unknown key 'Dialogues' (did you mean 'dialogues'?); allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-far": "bench.yaml has 1 problem:\nbench.yaml:3: zzz: unknown key 'zzz'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-int-key": "bench.yaml has 1 problem:\nbench.yaml:3: [5]: unknown key '5'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-float-key": "bench.yaml has 1 problem:\nbench.yaml:3: a key must be a plain name",
    "unknown-unicode-key": "bench.yaml has 1 problem:\nbench.yaml:3: naïve: unknown key 'naïve' (did you mean 'name'?); allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-surrogate-key": "bench.yaml has 1 problem:\nbench.yaml:3: \udcff: unknown key '\udcff'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "unknown-null-valued": "bench.yaml has 1 problem:\nbench.yaml:3: extra: unknown key 'extra'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues",
    "dialogues-missing": "bench.yaml has 1 problem:\nbench.yaml:1: dialogues: missing: the benchmark needs a list of dialogues",
    "dialogues-null": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues: missing: the benchmark needs a list of dialogues",
    "dialogues-empty": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues: expected a non-empty list of dialogues",
    "dialogues-mapping": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues: expected a non-empty list of dialogues",
    "dialogues-text": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues: expected a non-empty list of dialogues",
    "dialogue-number": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues[0]: expected a dialogue (a mapping of keys to values)",
    "dialogue-null": "bench.yaml has 2 problems:\nbench.yaml:3: dialogues[0]: expected a dialogue (a mapping of keys to values)\nbench.yaml:3: dialogues[1]: expected a dialogue (a mapping of keys to values)",
    "id-missing": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: missing: every dialogue needs an id",
    "id-null": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: missing: every dialogue needs an id",
    "id-true": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got True",
    "id-float": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got 1.5",
    "id-whole-float": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got 1.0",
    "id-empty": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got ''",
    "id-list": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got [1]",
    "id-mapping": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].id: an id is a text or a whole number, got {'a': 1}",
    "id-twice": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[1].id: id 'a' is used twice (first by dialogues[0])",
    "id-three-times": "bench.yaml has 2 problems:\nbench.yaml:6: dialogues[1].id: id 7 is used twice (first by dialogues[0])\nbench.yaml:8: dialogues[2].id: id 7 is used twice (first by dialogues[0])",
    "id-mix": "bench.yaml has 1 problem:\nbench.yaml:3: dialogues: dialogue ids must be all texts or all whole numbers, not a mix",
    "id-mix-and-twice": "bench.yaml has 2 problems:\nbench.yaml:3: dialogues: dialogue ids must be all texts or all whole numbers, not a mix\nbench.yaml:8: dialogues[2].id: id 1 is used twice (first by dialogues[0])",
    "id-twice-bad-body": "bench.yaml has 3 problems:\nbench.yaml:5: dialogues[0].turns: expected a non-empty list of turns\nbench.yaml:6: dialogues[1].id: id 'a' is used twice (first by dialogues[0])\nbench.yaml:7: dialogues[1].turns: expected a non-empty list of turns",
    "tags-text": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].tags: expected a list of tags",
    "tags-mapping": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].tags: expected a list of tags",
    "tags-bad-entries": "bench.yaml has 6 problems:\nbench.yaml:5: dialogues[0].tags[0]: a tag is a text, got 1\nbench.yaml:5: dialogues[0].tags[1]: a tag is a text, got ''\nbench.yaml:5: dialogues[0].tags[2]: a tag is a text, got ' '\nbench.yaml:5: dialogues[0].tags[4]: a tag is a text, got None\nbench.yaml:5: dialogues[0].tags[5]: a tag is a text, got ['x']\nbench.yaml:5: dialogues[0].tags[6]: a tag is a text, got True",
    "dialogue-unknown": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].title: unknown key 'title'; allowed: id, tags, turns",
    "dialogue-unknown-close": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turn: unknown key 'turn' (did you mean 'turns'?); allowed: id, tags, turns",
    "dialogue-all-wrong": "bench.yaml has 4 problems:\nbench.yaml:4: dialogues[0].title: unknown key 'title'; allowed: id, tags, turns\nbench.yaml:5: dialogues[0].id: an id is a text or a whole number, got [1]\nbench.yaml:6: dialogues[0].tags: expected a list of tags\nbench.yaml:7: dialogues[0].turns: expected a non-empty list of turns",
    "turns-missing": "bench.yaml has 1 problem:\nbench.yaml:4: dialogues[0].turns: missing: every dialogue needs a list of turns",
    "turns-null": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: missing: every dialogue needs a list of turns",
    "turns-empty": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: expected a non-empty list of turns",
    "turns-text": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: expected a non-empty list of turns",
    "turns-mapping": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: expected a non-empty list of turns",
    "turn-text": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns[0]: expected a turn (a mapping of keys to values)",
    "turn-null": "bench.yaml has 2 problems:\nbench.yaml:5: dialogues[0].turns[0]: expected a turn (a mapping of keys to values)\nbench.yaml:5: dialogues[0].turns[1]: expected a turn (a mapping of keys to values)",
    "user-missing": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].user: missing (a text is required)",
    "user-null": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0].user: missing (a text is required)",
    "user-number": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0].user: expected a text, got a number",
    "user-empty": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0].user: must not be empty",
    "user-blank": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0].user: must not be empty",
    "user-list": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0].user: expected a text, got a list",
    "turn-unknown": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].answer: unknown key 'answer' (did you mean 'user'?); allowed: user, golden, reference, judged, rubric, checklist, checks",
    "turn-unknown-close": "bench.yaml has 2 problems:\nbench.yaml:6: dialogues[0].turns[0]: a judged turn needs a rubric, a checklist or checks (or `judged: false` for a turn that is context only)\nbench.yaml:7: dialogues[0].turns[0].chekcs: unknown key 'chekcs' (did you mean 'checks'?); allowed: user, golden, reference, judged, rubric, checklist, checks",
    "golden-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].golden: expected a text, got a number",
    "golden-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].golden: expected a text, got a list",
    "reference-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].reference: must not be empty",
    "reference-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].reference: expected a text, got a number",
    "judged-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].judged: expected true or false, got 'no-thanks'",
    "judged-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].judged: expected true or false, got None",
    "judged-zero": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].judged: expected true or false, got 0",
    "judged-text-unscored": "bench.yaml has 2 problems:\nbench.yaml:6: dialogues[0].turns[0]: a judged turn needs a rubric, a checklist or checks (or `judged: false` for a turn that is context only)\nbench.yaml:7: dialogues[0].turns[0].judged: expected true or false, got 'false'",
    "needs-scoring": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0]: a judged turn needs a rubric, a checklist or checks (or `judged: false` for a turn that is context only)",
    "needs-scoring-and-user": "bench.yaml has 2 problems:\nbench.yaml:6: dialogues[0].turns[0].user: expected a text, got a number\nbench.yaml:6: dialogues[0].turns[0]: a judged turn needs a rubric, a checklist or checks (or `judged: false` for a turn that is context only)",
    "not-judged-but-rubric": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric; remove them or judge the turn",
    "not-judged-but-all": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric, checklist, checks; remove them or judge the turn",
    "not-judged-null-rubric": "bench.yaml has 1 problem:\nbench.yaml:6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric; remove them or judge the turn",
    "not-judged-bad-checks": "bench.yaml has 2 problems:\nbench.yaml:6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has checks; remove them or judge the turn\nbench.yaml:8: dialogues[0].turns[0].checks: expected a non-empty list of checks",
    "no-turn-judged": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: no turn is judged; a dialogue needs at least one judged turn",
    "no-turn-judged-two": "bench.yaml has 1 problem:\nbench.yaml:5: dialogues[0].turns: no turn is judged; a dialogue needs at least one judged turn",
    "no-turn-judged-bad-rubric": "bench.yaml has 3 problems:\nbench.yaml:5: dialogues[0].turns: no turn is judged; a dialogue needs at least one judged turn\nbench.yaml:6: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric; remove them or judge the turn\nbench.yaml:8: dialogues[0].turns[0].rubric: expected a rubric text, or a mapping with text and weight (a mapping of keys to values)",
    "no-turn-judged-but-bad-turn": "bench.yaml has 1 problem:\nbench.yaml:8: dialogues[0].turns[1]: expected a turn (a mapping of keys to values)",
    "golden-needed": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer (later turns are asked after it)",
    "golden-needed-twice": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer (later turns are asked after it)\nbench.yaml:9: dialogues[0].turns[1]: history is golden, so this turn needs a golden answer (later turns are asked after it)",
    "golden-wrong-type": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer (later turns are asked after it)\nbench.yaml:8: dialogues[0].turns[0].golden: expected a text, got a number",
    "golden-needed-bad-rubric": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer (later turns are asked after it)\nbench.yaml:8: dialogues[0].turns[0].rubric: expected a rubric text, or a mapping with text and weight (a mapping of keys to values)",
    "golden-needed-bad-user": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].user: expected a text, got a number",
    "golden-bad-history-value": "bench.yaml has 1 problem:\nbench.yaml:1: history: must be one of golden, self, got 'Golden'",
    "rubric-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric: expected a rubric text, or a mapping with text and weight (a mapping of keys to values)",
    "rubric-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric: expected a rubric text, or a mapping with text and weight (a mapping of keys to values)",
    "rubric-true": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric: expected a rubric text, or a mapping with text and weight (a mapping of keys to values)",
    "rubric-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric: must not be empty",
    "rubric-blank": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric: must not be empty",
    "rubric-no-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.text: missing (a text is required)",
    "rubric-text-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.text: missing (a text is required)",
    "rubric-text-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.text: must not be empty",
    "rubric-text-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.text: expected a text, got a number",
    "rubric-unknown": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.wieght: unknown key 'wieght' (did you mean 'weight'?); allowed: text, weight",
    "rubric-weight-zero": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 0",
    "rubric-weight-true": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got True",
    "rubric-weight-nan": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got nan",
    "rubric-weight-inf": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got inf",
    "rubric-weight-text-1e7": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got '1e7'",
    "rubric-weight-above": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 10000000.0",
    "rubric-weight-int-above": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 1000001",
    "rubric-weight-below": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 1e-07",
    "rubric-weight-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got '2'",
    "rubric-weight-huge": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 10000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "rubric-weight-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got [1]",
    "rubric-all-wrong": "bench.yaml has 3 problems:\nbench.yaml:7: dialogues[0].turns[0].rubric.x: unknown key 'x'; allowed: text, weight\nbench.yaml:7: dialogues[0].turns[0].rubric.text: must not be empty\nbench.yaml:7: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got -1",
    "checklist-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist: expected a non-empty list of yes/no questions",
    "checklist-mapping": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist: expected a non-empty list of yes/no questions",
    "checklist-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist: expected a non-empty list of yes/no questions",
    "checklist-number-item": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0]: expected a question, or a mapping with question, weight, name (a mapping of keys to values)",
    "checklist-null-item": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0]: expected a question, or a mapping with question, weight, name (a mapping of keys to values)",
    "checklist-empty-item": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checklist[0]: must not be empty\nbench.yaml:7: dialogues[0].turns[0].checklist[1]: must not be empty",
    "checklist-list-item": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0]: expected a question, or a mapping with question, weight, name (a mapping of keys to values)",
    "checklist-no-question": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0].question: missing (a text is required)",
    "checklist-bad-name": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a b'",
    "checklist-unknown": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checklist[0].why: unknown key 'why'; allowed: question, weight, name",
    "checklist-all-wrong": "bench.yaml has 6 problems:\nbench.yaml:7: dialogues[0].turns[0].checklist[0].why: unknown key 'why'; allowed: question, weight, name\nbench.yaml:7: dialogues[0].turns[0].checklist[0].question: expected a text, got a number\nbench.yaml:7: dialogues[0].turns[0].checklist[0].weight: a weight is a number from 1e-06 to 1e+06, got -1\nbench.yaml:7: dialogues[0].turns[0].checklist[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 5\nbench.yaml:7: dialogues[0].turns[0].checklist[1]: must not be empty\nbench.yaml:7: dialogues[0].turns[0].checklist[2]: expected a question, or a mapping with question, weight, name (a mapping of keys to values)",
    "checks-mapping": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks: expected a non-empty list of checks",
    "checks-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks: expected a non-empty list of checks",
    "checks-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks: expected a non-empty list of checks",
    "check-text": 'bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: expected a check such as {contains: "refund"} (a mapping of keys to values)',
    "check-null": 'bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: expected a check such as {contains: "refund"} (a mapping of keys to values)',
    "check-no-kind": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found no check kind; kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact",
    "check-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found no check kind; kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact",
    "check-two-kinds": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found 2 kinds (contains, regex); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact",
    "check-two-kinds-unknown": "bench.yaml has 3 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found 2 kinds (contains, regex); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact\nbench.yaml:7: dialogues[0].turns[0].checks[0].bogus: unknown key 'bogus'; allowed: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact, name, weight, flags, case_sensitive, strip\nbench.yaml:7: dialogues[0].turns[0].checks[0].wieght: unknown key 'wieght' (did you mean 'weight'?); allowed: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact, name, weight, flags, case_sensitive, strip",
    "check-three-kinds": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found 3 kinds (exact, contains, max_words); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact",
    "check-no-kind-unknown": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found no check kind; kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact\nbench.yaml:7: dialogues[0].turns[0].checks[0].regexp: unknown key 'regexp' (did you mean 'regex'?); allowed: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact, name, weight, flags, case_sensitive, strip",
    "check-unknown-option": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags: unknown key 'flags'; allowed: contains, name, weight, case_sensitive",
    "check-unknown-close": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].nmae: unknown key 'nmae' (did you mean 'name'?); allowed: contains, name, weight, case_sensitive",
    "check-strip-on-regex": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].strip: unknown key 'strip'; allowed: regex, name, weight, flags",
    "check-flags-on-contains": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags: unknown key 'flags'; allowed: contains, name, weight, case_sensitive\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags: expected a list of flags (ignorecase, multiline, dotall)",
    "check-case-on-count": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: unknown key 'case_sensitive'; allowed: max_words, name, weight\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: expected true or false, got 2",
    "regex-bad": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression: missing ), unterminated subpattern at position 0",
    "regex-bad-class": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].not_regex: not a valid regular expression: unterminated character set at position 0",
    "regex-bad-escape": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression: bad escape \\q at position 0",
    "regex-late-flag": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression: global flags not at the start of the expression at position 1",
    "regex-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: expected a regular expression, got 5",
    "regex-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: expected a regular expression, got ''",
    "regex-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: expected a regular expression, got None",
    "regex-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: expected a regular expression, got ['a']",
    "flags-unknown": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags[0]: unknown flag 'verbose'; flags: ignorecase, multiline, dotall",
    "flags-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags: expected a list of flags (ignorecase, multiline, dotall)",
    "flags-mixed": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags[1]: unknown flag 5; flags: ignorecase, multiline, dotall\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags[3]: unknown flag None; flags: ignorecase, multiline, dotall",
    "flags-and-bad-regex": "bench.yaml has 2 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags[0]: unknown flag 'bogus'; flags: ignorecase, multiline, dotall\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression: missing ), unterminated subpattern at position 0",
    "contains-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].contains: expected a non-empty text, got ''",
    "contains-number": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].contains: expected a non-empty text, got 5",
    "contains-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].contains: expected a non-empty text, got None",
    "exact-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].exact: expected a non-empty text, got ['x']",
    "case-maybe": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: expected true or false, got 'maybe'",
    "case-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: expected true or false, got None",
    "strip-one": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].strip: expected true or false, got 1",
    "strip-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].strip: expected true or false, got None",
    "count-float": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].max_words: expected a whole number from 0, got 2.5",
    "count-whole-float": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].max_words: expected a whole number from 0, got 2.0",
    "count-true": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].min_words: expected a whole number from 0, got True",
    "count-negative": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].min_chars: expected a whole number from 0, got -1",
    "count-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].max_chars: expected a whole number from 0, got '3'",
    "count-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].max_chars: expected a whole number from 0, got None",
    "valid-json-false": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].valid_json: write `valid_json: true`, got False",
    "valid-json-one": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].valid_json: write `valid_json: true`, got 1",
    "valid-json-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].valid_json: write `valid_json: true`, got None",
    "schema-list": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: expected a JSON Schema (a mapping such as {type: object})",
    "schema-text": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: expected a JSON Schema (a mapping such as {type: object})",
    "schema-null": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: expected a JSON Schema (a mapping such as {type: object})",
    "schema-bad-type": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at type: 'nope' is not valid under any of the given schemas",
    "schema-bad-inner": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at properties/a/type: 5 is not valid under any of the given schemas",
    "schema-remote": 'bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: a schema may refer only to its own parts ($ref "#/..."), not to https://example.org/s.json (nothing is fetched)',
    "schema-remotes": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at items: [{'$ref': 'b.json'}, {'$dynamicRef': 'a.json'}, {'$ref': 'b.json'}] is not of type 'object', 'boolean'",
    "schema-bad-and-remote": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at type: 5 is not valid under any of the given schemas",
    "weight-negative": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].weight: a weight is a number from 1e-06 to 1e+06, got -2",
    "weight-null-fine-but-bad-name": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a/b'",
    "name-empty": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got ''",
    "name-number-check": "bench.yaml has 1 problem:\nbench.yaml:7: dialogues[0].turns[0].checks[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 5",
    "check-all-wrong": "bench.yaml has 9 problems:\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: unknown key 'case_sensitive'; allowed: regex, name, weight, flags\nbench.yaml:7: dialogues[0].turns[0].checks[0].strip: unknown key 'strip'; allowed: regex, name, weight, flags\nbench.yaml:7: dialogues[0].turns[0].checks[0].o: unknown key 'o'; allowed: regex, name, weight, flags\nbench.yaml:7: dialogues[0].turns[0].checks[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a b'\nbench.yaml:7: dialogues[0].turns[0].checks[0].weight: a weight is a number from 1e-06 to 1e+06, got 0\nbench.yaml:7: dialogues[0].turns[0].checks[0].case_sensitive: expected true or false, got 1\nbench.yaml:7: dialogues[0].turns[0].checks[0].strip: expected true or false, got 2\nbench.yaml:7: dialogues[0].turns[0].checks[0].flags[0]: unknown flag 'x'; flags: ignorecase, multiline, dotall\nbench.yaml:7: dialogues[0].turns[0].checks[0].regex: not a valid regular expression: missing ), unterminated subpattern at position 0",
    "checks-several-bad": 'bench.yaml has 4 problems:\nbench.yaml:8: dialogues[0].turns[0].checks[0].max_words: expected a whole number from 0, got -1\nbench.yaml:9: dialogues[0].turns[0].checks[1]: expected a check such as {contains: "refund"} (a mapping of keys to values)\nbench.yaml:10: dialogues[0].turns[0].checks[2].regex: not a valid regular expression: missing ), unterminated subpattern at position 0\nbench.yaml:11: dialogues[0].turns[0].checks[3]: a check has exactly one kind, found 2 kinds (contains, exact); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact',
    "all-at-once": "bench.yaml has 5 problems:\nbench.yaml:1: version: format version 2 is not supported (this turnbench reads 1)\nbench.yaml:3: history: must be one of golden, self, got 'mine'\nbench.yaml:8: dialogues[0].turns[0].checks[0].max_words: expected a whole number from 0, got -1\nbench.yaml:8: dialogues[0].turns[0].checks[1].regex: not a valid regular expression: missing ), unterminated subpattern at position 0\nbench.yaml:10: dialogues[0].turns[1].rubric: must not be empty",
    "the-documented-example": "bench.yaml has 3 problems:\nbench.yaml:1: version: format version 2 is not supported (this turnbench reads 1)\nbench.yaml:3: histroy: unknown key 'histroy' (did you mean 'history'?); allowed: version, name, description, history, dialogue_score, system, answer, dialogues\nbench.yaml:11: dialogues[0].turns[1].checks[0].max_words: expected a whole number from 0, got 'many'",
    "document-and-spec-problems": "bench.yaml has 3 problems:\nbench.yaml:2: key 'version' is given twice\nbench.yaml:3: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 5\nbench.yaml:4: a key must be a plain name",
    "sixty-problems": "bench.yaml has 63 problems:\nbench.yaml:1: version: format version 7 is not supported (this turnbench reads 1)\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'x y'\nbench.yaml:3: history: must be one of golden, self, got 9\nbench.yaml:6: dialogues[0].turns[0].user: expected a text, got a number\nbench.yaml:6: dialogues[0].turns[0].rubric: must not be empty\nbench.yaml:8: dialogues[1].turns[0].user: expected a text, got a number\nbench.yaml:8: dialogues[1].turns[0].rubric: must not be empty\nbench.yaml:10: dialogues[2].turns[0].user: expected a text, got a number\nbench.yaml:10: dialogues[2].turns[0].rubric: must not be empty\nbench.yaml:12: dialogues[3].turns[0].user: expected a text, got a number\nbench.yaml:12: dialogues[3].turns[0].rubric: must not be empty\nbench.yaml:14: dialogues[4].turns[0].user: expected a text, got a number\nbench.yaml:14: dialogues[4].turns[0].rubric: must not be empty\nbench.yaml:16: dialogues[5].turns[0].user: expected a text, got a number\nbench.yaml:16: dialogues[5].turns[0].rubric: must not be empty\nbench.yaml:18: dialogues[6].turns[0].user: expected a text, got a number\nbench.yaml:18: dialogues[6].turns[0].rubric: must not be empty\nbench.yaml:20: dialogues[7].turns[0].user: expected a text, got a number\nbench.yaml:20: dialogues[7].turns[0].rubric: must not be empty\nbench.yaml:22: dialogues[8].turns[0].user: expected a text, got a number\nbench.yaml:22: dialogues[8].turns[0].rubric: must not be empty\nbench.yaml:24: dialogues[9].turns[0].user: expected a text, got a number\nbench.yaml:24: dialogues[9].turns[0].rubric: must not be empty\nbench.yaml:26: dialogues[10].turns[0].user: expected a text, got a number\nbench.yaml:26: dialogues[10].turns[0].rubric: must not be empty\nbench.yaml:28: dialogues[11].turns[0].user: expected a text, got a number\nbench.yaml:28: dialogues[11].turns[0].rubric: must not be empty\nbench.yaml:30: dialogues[12].turns[0].user: expected a text, got a number\nbench.yaml:30: dialogues[12].turns[0].rubric: must not be empty\nbench.yaml:32: dialogues[13].turns[0].user: expected a text, got a number\nbench.yaml:32: dialogues[13].turns[0].rubric: must not be empty\nbench.yaml:34: dialogues[14].turns[0].user: expected a text, got a number\nbench.yaml:34: dialogues[14].turns[0].rubric: must not be empty\nbench.yaml:36: dialogues[15].turns[0].user: expected a text, got a number\nbench.yaml:36: dialogues[15].turns[0].rubric: must not be empty\nbench.yaml:38: dialogues[16].turns[0].user: expected a text, got a number\nbench.yaml:38: dialogues[16].turns[0].rubric: must not be empty\nbench.yaml:40: dialogues[17].turns[0].user: expected a text, got a number\nbench.yaml:40: dialogues[17].turns[0].rubric: must not be empty\nbench.yaml:42: dialogues[18].turns[0].user: expected a text, got a number\nbench.yaml:42: dialogues[18].turns[0].rubric: must not be empty\nbench.yaml:44: dialogues[19].turns[0].user: expected a text, got a number\nbench.yaml:44: dialogues[19].turns[0].rubric: must not be empty\nbench.yaml:46: dialogues[20].turns[0].user: expected a text, got a number\nbench.yaml:46: dialogues[20].turns[0].rubric: must not be empty\nbench.yaml:48: dialogues[21].turns[0].user: expected a text, got a number\nbench.yaml:48: dialogues[21].turns[0].rubric: must not be empty\nbench.yaml:50: dialogues[22].turns[0].user: expected a text, got a number\nbench.yaml:50: dialogues[22].turns[0].rubric: must not be empty\nbench.yaml:52: dialogues[23].turns[0].user: expected a text, got a number\n... and 13 more problem(s)",
    "fifty-problems": "bench.yaml has 49 problems:\nbench.yaml:1: version: format version 7 is not supported (this turnbench reads 1)\nbench.yaml:2: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'x y'\nbench.yaml:3: history: must be one of golden, self, got 9\nbench.yaml:6: dialogues[0].turns[0].user: expected a text, got a number\nbench.yaml:6: dialogues[0].turns[0].rubric: must not be empty\nbench.yaml:8: dialogues[1].turns[0].user: expected a text, got a number\nbench.yaml:8: dialogues[1].turns[0].rubric: must not be empty\nbench.yaml:10: dialogues[2].turns[0].user: expected a text, got a number\nbench.yaml:10: dialogues[2].turns[0].rubric: must not be empty\nbench.yaml:12: dialogues[3].turns[0].user: expected a text, got a number\nbench.yaml:12: dialogues[3].turns[0].rubric: must not be empty\nbench.yaml:14: dialogues[4].turns[0].user: expected a text, got a number\nbench.yaml:14: dialogues[4].turns[0].rubric: must not be empty\nbench.yaml:16: dialogues[5].turns[0].user: expected a text, got a number\nbench.yaml:16: dialogues[5].turns[0].rubric: must not be empty\nbench.yaml:18: dialogues[6].turns[0].user: expected a text, got a number\nbench.yaml:18: dialogues[6].turns[0].rubric: must not be empty\nbench.yaml:20: dialogues[7].turns[0].user: expected a text, got a number\nbench.yaml:20: dialogues[7].turns[0].rubric: must not be empty\nbench.yaml:22: dialogues[8].turns[0].user: expected a text, got a number\nbench.yaml:22: dialogues[8].turns[0].rubric: must not be empty\nbench.yaml:24: dialogues[9].turns[0].user: expected a text, got a number\nbench.yaml:24: dialogues[9].turns[0].rubric: must not be empty\nbench.yaml:26: dialogues[10].turns[0].user: expected a text, got a number\nbench.yaml:26: dialogues[10].turns[0].rubric: must not be empty\nbench.yaml:28: dialogues[11].turns[0].user: expected a text, got a number\nbench.yaml:28: dialogues[11].turns[0].rubric: must not be empty\nbench.yaml:30: dialogues[12].turns[0].user: expected a text, got a number\nbench.yaml:30: dialogues[12].turns[0].rubric: must not be empty\nbench.yaml:32: dialogues[13].turns[0].user: expected a text, got a number\nbench.yaml:32: dialogues[13].turns[0].rubric: must not be empty\nbench.yaml:34: dialogues[14].turns[0].user: expected a text, got a number\nbench.yaml:34: dialogues[14].turns[0].rubric: must not be empty\nbench.yaml:36: dialogues[15].turns[0].user: expected a text, got a number\nbench.yaml:36: dialogues[15].turns[0].rubric: must not be empty\nbench.yaml:38: dialogues[16].turns[0].user: expected a text, got a number\nbench.yaml:38: dialogues[16].turns[0].rubric: must not be empty\nbench.yaml:40: dialogues[17].turns[0].user: expected a text, got a number\nbench.yaml:40: dialogues[17].turns[0].rubric: must not be empty\nbench.yaml:42: dialogues[18].turns[0].user: expected a text, got a number\nbench.yaml:42: dialogues[18].turns[0].rubric: must not be empty\nbench.yaml:44: dialogues[19].turns[0].user: expected a text, got a number\nbench.yaml:44: dialogues[19].turns[0].rubric: must not be empty\nbench.yaml:46: dialogues[20].turns[0].user: expected a text, got a number\nbench.yaml:46: dialogues[20].turns[0].rubric: must not be empty\nbench.yaml:48: dialogues[21].turns[0].user: expected a text, got a number\nbench.yaml:48: dialogues[21].turns[0].rubric: must not be empty\nbench.yaml:50: dialogues[22].turns[0].user: expected a text, got a number\nbench.yaml:50: dialogues[22].turns[0].rubric: must not be empty",
    "flow-style-one-line": "bench.yaml has 16 problems:\nbench.yaml:1: x: unknown key 'x'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues\nbench.yaml:1: version: format version 2 is not supported (this turnbench reads 1)\nbench.yaml:1: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got 'a b'\nbench.yaml:1: history: must be one of golden, self, got 3\nbench.yaml:1: answer.y: unknown key 'y'; allowed: temperature, max_new_tokens\nbench.yaml:1: answer.temperature: a number from 0 to 2, got 9\nbench.yaml:1: dialogues[0].turns[0].user: expected a text, got a number\nbench.yaml:1: dialogues[0].turns[0].judged: expected true or false, got 2\nbench.yaml:1: dialogues[0].turns[0].rubric: must not be empty\nbench.yaml:1: dialogues[0].turns[0].checks[0]: a check has exactly one kind, found 2 kinds (regex, contains); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact\nbench.yaml:1: dialogues[0].turns[0].checks[1].exact: expected a non-empty text, got ''\nbench.yaml:1: dialogues[1].tags[0]: a tag is a text, got 1\nbench.yaml:1: dialogues[1].turns: expected a non-empty list of turns\nbench.yaml:1: dialogues[1].id: id 'a' is used twice (first by dialogues[0])\nbench.yaml:1: dialogues[2].turns[0]: expected a turn (a mapping of keys to values)\nbench.yaml:1: dialogues: dialogue ids must be all texts or all whole numbers, not a mix",
    "json-valid-but-bad-version": "bench.json has 2 problems:\nbench.json:2: version: format version 1.5 is not supported (this turnbench reads 1)\nbench.json:4: dialogues: expected a non-empty list of dialogues",
    "json-one-line-top": "bench.json has 11 problems:\nbench.json:1: zzz: unknown key 'zzz'; allowed: version, name, description, history, dialogue_score, system, answer, dialogues\nbench.json:1: historie: unknown key 'historie' (did you mean 'history'?); allowed: version, name, description, history, dialogue_score, system, answer, dialogues\nbench.json:1: version: format version True is not supported (this turnbench reads 1)\nbench.json:1: name: 'mt-bench' is the name of a built-in benchmark; choose another\nbench.json:1: description: expected a text, got a number\nbench.json:1: history: must be one of golden, self, got 'x'\nbench.json:1: system: must not be empty\nbench.json:1: answer.top_k: unknown key 'top_k'; allowed: temperature, max_new_tokens\nbench.json:1: answer.temperature: a number from 0 to 2, got -1\nbench.json:1: answer.max_new_tokens: a whole number from 1 to 1000000, got 1000.0\nbench.json:1: dialogues: expected a non-empty list of dialogues",
    "json-one-line-dialogues": "bench.json has 10 problems:\nbench.json:1: dialogues[1].extra: unknown key 'extra'; allowed: id, tags, turns\nbench.json:1: dialogues[1].turns[0].user: expected a text, got a number\nbench.json:1: dialogues[1].id: id 'a' is used twice (first by dialogues[0])\nbench.json:1: dialogues[2].tags: expected a list of tags\nbench.json:1: dialogues[2].turns[0].judged: expected true or false, got 'yes'\nbench.json:1: dialogues[3].turns[0]: expected a turn (a mapping of keys to values)\nbench.json:1: dialogues[3].id: id 'a' is used twice (first by dialogues[0])\nbench.json:1: dialogues[4].id: an id is a text or a whole number, got 3.5\nbench.json:1: dialogues[4].turns: missing: every dialogue needs a list of turns\nbench.json:1: dialogues: dialogue ids must be all texts or all whole numbers, not a mix",
    "json-one-line-turns": "bench.json has 10 problems:\nbench.json:1: dialogues[0].turns[0].reference: must not be empty\nbench.json:1: dialogues[0].turns[0]: this turn is not judged (judged: false) but has rubric; remove them or judge the turn\nbench.json:1: dialogues[0].turns[1].user: missing (a text is required)\nbench.json:1: dialogues[0].turns[1].golden: expected a text, got a number\nbench.json:1: dialogues[0].turns[2].x: unknown key 'x'; allowed: user, golden, reference, judged, rubric, checklist, checks\nbench.json:1: dialogues[0].turns[2].checklist[0].question: must not be empty\nbench.json:1: dialogues[0].turns[2].checklist[1]: expected a question, or a mapping with question, weight, name (a mapping of keys to values)\nbench.json:1: dialogues[0].turns[2].checklist[2]: must not be empty\nbench.json:1: dialogues[0].turns[3].checks[0].flags[1]: unknown flag 'q'; flags: ignorecase, multiline, dotall\nbench.json:1: dialogues[0].turns[3].checks[0].regex: not a valid regular expression: missing ), unterminated subpattern at position 0",
    "json-one-line-golden": "bench.json has 3 problems:\nbench.json:1: dialogues[0].turns[0].x: unknown key 'x'; allowed: user, golden, reference, judged, rubric, checklist, checks\nbench.json:1: dialogues[0].turns[0]: history is golden, so this turn needs a golden answer (later turns are asked after it)\nbench.json:1: dialogues[1].turns: no turn is judged; a dialogue needs at least one judged turn",
    "json-one-line-checks": "bench.json has 14 problems:\nbench.json:1: dialogues[0].turns[0].checks[0].name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got ''\nbench.json:1: dialogues[0].turns[0].checks[0].weight: a weight is a number from 1e-06 to 1e+06, got 0\nbench.json:1: dialogues[0].turns[0].checks[0].json_schema: not a valid JSON Schema at type: 'nope' is not valid under any of the given schemas\nbench.json:1: dialogues[0].turns[0].checks[1].case_sensitive: unknown key 'case_sensitive'; allowed: max_words, name, weight\nbench.json:1: dialogues[0].turns[0].checks[1].strip: unknown key 'strip'; allowed: max_words, name, weight\nbench.json:1: dialogues[0].turns[0].checks[1].case_sensitive: expected true or false, got 'x'\nbench.json:1: dialogues[0].turns[0].checks[1].strip: expected true or false, got None\nbench.json:1: dialogues[0].turns[0].checks[1].max_words: expected a whole number from 0, got 1.5\nbench.json:1: dialogues[0].turns[0].checks[2]: a check has exactly one kind, found 2 kinds (exact, contains); kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact\nbench.json:1: dialogues[0].turns[0].checks[2].zz: unknown key 'zz'; allowed: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact, name, weight, flags, case_sensitive, strip\nbench.json:1: dialogues[0].turns[0].checks[3].flags: unknown key 'flags'; allowed: valid_json, name, weight\nbench.json:1: dialogues[0].turns[0].checks[3].flags: expected a list of flags (ignorecase, multiline, dotall)\nbench.json:1: dialogues[0].turns[0].checks[3].valid_json: write `valid_json: true`, got 'yes'\nbench.json:1: dialogues[0].turns[0].checks[4]: a check has exactly one kind, found no check kind; kinds: regex, not_regex, contains, not_contains, max_words, min_words, max_chars, min_chars, valid_json, json_schema, exact",
    "json-float-count": "bench.json has 1 problem:\nbench.json:12: dialogues[0].turns[0].checks[0].max_words: expected a whole number from 0, got 100.0",
    "json-nan-weight": "bench.json has 1 problem:\nbench.json:1: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got nan",
    "json-big-weight": "bench.json has 1 problem:\nbench.json:1: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got 1e+308",
    "json-huge-number": "bench.json has 2 problems:\nbench.json:1: answer.temperature: a number from 0 to 2, got inf\nbench.json:1: dialogues[0].turns[0].rubric.weight: a weight is a number from 1e-06 to 1e+06, got -inf",
    "json-key-twice": "bench.json has 2 problems:\nbench.json:1: key 'name' is given twice\nbench.json:1: dialogues: expected a non-empty list of dialogues",
    "json-escaped-surrogate": "bench.json has 2 problems:\nbench.json:1: name: a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, got '\\udcff'\nbench.json:1: dialogues: expected a non-empty list of dialogues",
    "json-tabs": "bench.json has 1 problem:\nbench.json:5: dialogues[0].turns: expected a non-empty list of turns",
}

EXPECTED_VALID: dict[str, str] = {
    "everything": "BenchmarkSpec(version=1, name='mine', description='About.', history='golden', dialogue_score='min', system='Be brief.', temperature=0.5, max_new_tokens=300, dialogues=(DialogueSpec(id=7, tags=('a', 'b'), turns=(TurnSpec(user='first', golden='first answer', reference=None, judged=False, rubric=None, checklist=(), checks=()), TurnSpec(user='second', golden='', reference='ideal', judged=True, rubric=Rubric(text='Be right.', weight=2.0), checklist=(ChecklistItem(question='Is it right?', weight=1.0, name='checklist'), ChecklistItem(question='Is it short?', weight=0.5, name='short')), checks=(Check(kind='regex', value='x+', name='xs', weight=3.0, case_sensitive=True, flags=re.IGNORECASE|re.DOTALL, strip=True), Check(kind='not_regex', value='y', name='not_regex', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='exact', value='Y', name='exact', weight=1.0, case_sensitive=False, flags=0, strip=False), Check(kind='contains', value='a', name='contains', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='not_contains', value='b', name='not_contains', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='max_words', value=100000000000000000000000000000, name='max_words', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='min_words', value=0, name='min_words', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='max_chars', value=5, name='max_chars', weight=1000000.0, case_sensitive=True, flags=0, strip=True), Check(kind='min_chars', value=1, name='min_chars', weight=1e-06, case_sensitive=True, flags=0, strip=True), Check(kind='valid_json', value=True, name='j.son_1', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='json_schema', value={'type': 'object', '$ref': '#/definitions/x'}, name='json_schema', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='json_schema', value=True, name='json_schema', weight=1.0, case_sensitive=True, flags=0, strip=True))), TurnSpec(user='third', golden=None, reference=None, judged=False, rubric=None, checklist=(), checks=()))), DialogueSpec(id=8, tags=(), turns=(TurnSpec(user='u', golden='g', reference=None, judged=True, rubric=Rubric(text='r', weight=1.0), checklist=(), checks=()), TurnSpec(user='y', golden=None, reference=None, judged=True, rubric=Rubric(text='r', weight=1.0), checklist=(), checks=())))))",
    "defaults-and-nulls": "BenchmarkSpec(version=1, name='ok', description='', history='self', dialogue_score='mean', system=None, temperature=0.0, max_new_tokens=1024, dialogues=(DialogueSpec(id=' ', tags=(), turns=(TurnSpec(user='x', golden=None, reference=None, judged=True, rubric=None, checklist=(), checks=()), TurnSpec(user='y', golden=None, reference=None, judged=True, rubric=None, checklist=(), checks=(Check(kind='contains', value=' ', name='contains', weight=1.0, case_sensitive=True, flags=0, strip=True), Check(kind='regex', value='x', name='regex', weight=1.0, case_sensitive=True, flags=0, strip=True))), TurnSpec(user='z', golden=None, reference=None, judged=True, rubric=Rubric(text='r', weight=1.0), checklist=(ChecklistItem(question='q', weight=1.0, name='checklist'),), checks=()))),))",
    "answer-bounds": "BenchmarkSpec(version=1, name='a.b-c_d', description='', history='self', dialogue_score='mean', system=None, temperature=2.0, max_new_tokens=1000000, dialogues=(DialogueSpec(id='a', tags=(), turns=(TurnSpec(user='hi', golden=None, reference=None, judged=True, rubric=None, checklist=(), checks=(Check(kind='contains', value='x', name='contains', weight=1.0, case_sensitive=True, flags=0, strip=True),)),)),))",
    "json": "BenchmarkSpec(version=1, name='t', description='', history='self', dialogue_score='mean', system=None, temperature=0.0, max_new_tokens=1, dialogues=(DialogueSpec(id=1, tags=(), turns=(TurnSpec(user='x', golden=None, reference=None, judged=True, rubric=None, checklist=(), checks=(Check(kind='max_words', value=100, name='max_words', weight=1.0, case_sensitive=True, flags=0, strip=True),)),)), DialogueSpec(id=2, tags=('t',), turns=(TurnSpec(user='x', golden=None, reference=None, judged=True, rubric=Rubric(text='r', weight=1.0), checklist=(), checks=()),))))",
    "name-newline-after": "BenchmarkSpec(version=1, name='ab\\n', description='', history='self', dialogue_score='mean', system=None, temperature=0.0, max_new_tokens=1024, dialogues=(DialogueSpec(id='a', tags=(), turns=(TurnSpec(user='hi', golden=None, reference=None, judged=True, rubric=None, checklist=(), checks=(Check(kind='contains', value='x', name='contains', weight=1.0, case_sensitive=True, flags=0, strip=True),)),)),))",
    "json-weight-float": "BenchmarkSpec(version=1, name='t', description='', history='self', dialogue_score='mean', system=None, temperature=0.0, max_new_tokens=1024, dialogues=(DialogueSpec(id='a', tags=(), turns=(TurnSpec(user='x', golden=None, reference=None, judged=True, rubric=Rubric(text='r', weight=1.0), checklist=(), checks=()),)),))",
}


def test_every_case_has_a_unique_id():
    ids = [case[0] for case in CASES + VALID]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(("case", "name", "text"), CASES, ids=[c[0] for c in CASES])
def test_problems_are_reported_byte_for_byte(tmp_path, monkeypatch, case, name, text):
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, "utf-8")
    with pytest.raises(UserError) as raised:
        load_spec(Path(name), reserved={"mt-bench", "mt-bench-101", "structflowbench"})
    assert raised.value.message == EXPECTED[case]


@pytest.mark.parametrize(("case", "name", "text"), VALID, ids=[c[0] for c in VALID])
def test_valid_files_mean_the_same_objects(tmp_path, monkeypatch, case, name, text):
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, "utf-8")
    spec = load_spec(Path(name), reserved={"mt-bench"})
    assert repr(spec) == EXPECTED_VALID[case]


def test_a_list_among_the_regex_flags_is_a_problem_not_a_crash(tmp_path, monkeypatch):
    """The hand-written validator looked a flag up in a dict: a list there raised TypeError
    (unhashable type), a traceback instead of a message."""
    monkeypatch.chdir(tmp_path)
    Path("bench.yaml").write_text(check("{regex: a, flags: [[dotall], {a: 1}]}"), "utf-8")
    with pytest.raises(UserError) as raised:
        load_spec(Path("bench.yaml"))
    flags = "flags: ignorecase, multiline, dotall"
    assert raised.value.message == (
        "bench.yaml has 2 problems:\n"
        f"bench.yaml:7: dialogues[0].turns[0].checks[0].flags[0]: unknown flag ['dotall']; {flags}\n"
        f"bench.yaml:7: dialogues[0].turns[0].checks[0].flags[1]: unknown flag {{'a': 1}}; {flags}"
    )
