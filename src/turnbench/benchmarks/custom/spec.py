"""The user-defined benchmark format (version 1), validated with every mistake located.

A benchmark file holds dialogues of turns; each judged turn is scored by any mix of a rubric
(a 1-10 judge rating), a checklist (yes/no questions for the judge) and deterministic checks
that need no judge. The format is documented in docs/custom-benchmarks.md.

The file's shapes are pydantic models (`_Benchmark`, `_Answer`, `_Dialogue`, `_Turn`,
`_Rubric`, `_Question`, `_Check`), the rest of turnbench reads the frozen dataclasses they
build (`BenchmarkSpec` and its parts). Every problem is reported with its line and its place
in the file ("dialogues[2].turns[0].checks[1]: ..."), like a compiler, before anything is
sent; `located` carries the problems through pydantic in their exact words and order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainValidator,
    Strict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic_core import InitErrorDetails

from turnbench.benchmarks.custom.document import Document, load_document
from turnbench.benchmarks.custom.located import (
    Shape,
    fail,
    list_of,
    null_is,
    problem_at,
    raise_problems,
    report,
    says,
    unknown_keys,
    validated,
)
from turnbench.textio import ErrorCollector
from turnbench.types import MAX_TOKEN_LIMIT

FORMAT_VERSIONS = (1,)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
COMMON_CHECK_OPTIONS = ("name", "weight")
#: every deterministic check kind: the type of its value and the options it takes
CHECK_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "regex": ("pattern", ("flags",)),
    "not_regex": ("pattern", ("flags",)),
    "contains": ("text", ("case_sensitive",)),
    "not_contains": ("text", ("case_sensitive",)),
    "max_words": ("count", ()),
    "min_words": ("count", ()),
    "max_chars": ("count", ()),
    "min_chars": ("count", ()),
    "valid_json": ("true", ()),
    "json_schema": ("schema", ()),
    "exact": ("text", ("case_sensitive", "strip")),
}
#: weights are relative: a bounded range keeps every weighted sum of a turn finite (1e308
#: weights would add up to infinity and make the score NaN) and every weight a normal float
MIN_WEIGHT = 1e-6
MAX_WEIGHT = 1e6
REGEX_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}

History = Literal["golden", "self"]
DialogueScore = Literal["mean", "min"]
JudgedPart = Literal["conversation", "final_turn"]
MAX_SIMULATED_TURNS = 50


@dataclass(frozen=True)
class Check:
    """One deterministic check of a turn's answer (`turnbench.benchmarks.custom.checks` runs it)."""

    kind: str
    value: Any  # the pattern, text, count, schema, or True
    name: str
    weight: float = 1.0
    case_sensitive: bool = True
    flags: int = 0
    strip: bool = True


@dataclass(frozen=True)
class ChecklistItem:
    question: str
    weight: float = 1.0
    name: str = "checklist"


@dataclass(frozen=True)
class Rubric:
    text: str
    weight: float = 1.0


@dataclass(frozen=True)
class TurnSpec:
    user: str
    golden: str | None = None
    reference: str | None = None
    judged: bool = True
    rubric: Rubric | None = None
    checklist: tuple[ChecklistItem, ...] = ()
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class SimulatedUserSpec:
    """A scenario's user, played by the user model: who it is, what it wants, what it knows
    (the model under test never sees any of it, only the messages it writes), its first
    message if the file gives one, and the most assistant replies the conversation has."""

    persona: str
    goal: str
    facts: tuple[str, ...] = ()
    opening: str | None = None
    max_turns: int = 4


@dataclass(frozen=True)
class DialogueSpec:
    """A dialogue: scripted turns, or a scenario (`simulated_user`), whose `turns` are then
    `max_turns` slots, the last one carrying the dialogue's rubric, checklist and checks
    (`judge` says whether they read the whole conversation or its final turn)."""

    id: int | str
    tags: tuple[str, ...]
    turns: tuple[TurnSpec, ...]
    simulated_user: SimulatedUserSpec | None = field(default=None, repr=False)
    judge: JudgedPart = field(default="conversation", repr=False)


@dataclass(frozen=True)
class BenchmarkSpec:
    version: int
    name: str
    description: str
    history: History
    dialogue_score: DialogueScore
    system: str | None
    temperature: float
    max_new_tokens: int
    dialogues: tuple[DialogueSpec, ...]
    #: scenarios: a conversation whose score reaches this succeeds (pass^k, success_rate)
    success_threshold: float = field(default=0.5, repr=False)

    @property
    def simulated(self) -> bool:
        return any(dialogue.simulated_user is not None for dialogue in self.dialogues)


# -- the values --------------------------------------------------------------------------------
def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if _number(value):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _text(*, required: bool = False, empty: bool = False) -> PlainValidator:
    """A text; null (or absence, when `required`) is missing; blank only when `empty`."""

    def validate(value: Any) -> str | None:
        if value is None:
            if required:
                fail("missing (a text is required)")
            return None
        if not isinstance(value, str):
            fail(f"expected a text, got {_kind(value)}")
        if not empty and not value.strip():
            fail("must not be empty")
        return value

    return PlainValidator(validate)


def _is_text(value: Any) -> bool:
    """Whether `value` passes `_text(required=True)`."""
    return isinstance(value, str) and bool(value.strip())


def _name_problem(value: Any) -> str | None:
    if isinstance(value, str) and NAME.match(value):
        return None
    return (
        "a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or digit, "
        f"got {value!r}"
    )


def _name(value: Any) -> str:
    problem = _name_problem(value)
    if problem is not None:
        fail(problem)
    return str(value)


def _benchmark_name(value: Any, info: ValidationInfo) -> str:
    """The benchmark's name: required, a name, and not a built-in benchmark's (an invalid or
    missing name is taken as "custom" for that last test)."""
    problems = []
    if value is None:
        problems.append("missing: the benchmark needs a name (used in results)")
        value = "custom"
    problem = _name_problem(value)
    if problem is not None:
        problems.append(problem)
        value = "custom"
    if value in (info.context or {}).get("reserved", ()):
        problems.append(f"{value!r} is the name of a built-in benchmark; choose another")
    if problems:
        fail(*problems)
    return str(value)


def _version(value: Any) -> int:
    if value is None:
        fail(f"missing: the file must say which format version it uses ({FORMAT_VERSIONS[-1]})")
    if value not in FORMAT_VERSIONS or isinstance(value, bool):
        fail(
            f"format version {value!r} is not supported (this turnbench reads "
            f"{', '.join(map(str, FORMAT_VERSIONS))})"
        )
    return FORMAT_VERSIONS[FORMAT_VERSIONS.index(value)]


def _ident_ok(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | str) and value != ""


def _ident(value: Any) -> int | str:
    if value is None:
        fail("missing: every dialogue needs an id")
    if not _ident_ok(value):
        fail(f"an id is a text or a whole number, got {value!r}")
    return value  # type: ignore[no-any-return]


def _tag(value: Any) -> str:
    if not _is_text(value):
        fail(f"a tag is a text, got {value!r}")
    return value  # type: ignore[no-any-return]


def _one_of(allowed: tuple[str, ...]) -> WrapValidator:
    return says(lambda value: f"must be one of {', '.join(allowed)}, got {value!r}")


def _pattern(value: Any, info: ValidationInfo) -> str:
    """A regular expression, compiled with the check's flags (those valid; `_Check` validates
    them first)."""
    if not isinstance(value, str) or not value:
        fail(f"expected a regular expression, got {value!r}")
    try:
        re.compile(value, _flag_bits(info.data.get("flags")))
    except re.error as error:
        fail(f"not a valid regular expression: {error}")
    return value


def _nonempty_text(value: Any) -> str:
    if not isinstance(value, str) or value == "":
        fail(f"expected a non-empty text, got {value!r}")
    return value


def _true(value: Any) -> Literal[True]:
    if value is not True:
        fail(f"write `valid_json: true`, got {value!r}")
    return True


def _schema(value: Any) -> dict[str, Any] | bool:
    """A JSON Schema that refers to nothing outside itself (nothing is ever fetched)."""
    if not isinstance(value, dict | bool):
        fail("expected a JSON Schema (a mapping such as {type: object})")
    import jsonschema

    try:
        jsonschema.validators.validator_for(value).check_schema(value)
    except jsonschema.SchemaError as error:
        inner = "/".join(str(p) for p in error.absolute_path) or "the schema"
        fail(f"not a valid JSON Schema at {inner}: {error.message}")
    remote = sorted(set(_remote_refs(value)))
    if remote:
        fail(
            f'a schema may refer only to its own parts ($ref "#/..."), not to '
            f"{', '.join(remote)} (nothing is fetched)"
        )
    return value


def _remote_refs(schema: Any) -> Iterable[str]:
    """Every `$ref` (or `$dynamicRef`) of a schema that does not point inside it."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                if not value.startswith("#"):
                    yield value
            else:
                yield from _remote_refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _remote_refs(item)


def _flag_bits(flags: Iterable[str] | None) -> int:
    bits = 0
    for flag in flags or ():
        bits |= REGEX_FLAGS[flag]
    return bits


Text = Annotated[str | None, _text()]
Name = Annotated[str, PlainValidator(_name)]
Flag = Annotated[bool, Strict()]
Weight = Annotated[
    float,
    Field(strict=True, ge=MIN_WEIGHT, le=MAX_WEIGHT, allow_inf_nan=False),
    says(lambda v: f"a weight is a number from {MIN_WEIGHT:g} to {MAX_WEIGHT:g}, got {v!r}"),
    null_is(1.0),
]
Count = Annotated[
    int, Field(strict=True, ge=0), says(lambda v: f"expected a whole number from 0, got {v!r}")
]
Pattern = Annotated[str, PlainValidator(_pattern)]
NonEmptyText = Annotated[str, PlainValidator(_nonempty_text)]
Tag = Annotated[str, PlainValidator(_tag)]
RegexFlag = Annotated[
    Literal["ignorecase", "multiline", "dotall"],
    says(lambda v: f"unknown flag {v!r}; flags: {', '.join(REGEX_FLAGS)}"),
]


# -- the shapes --------------------------------------------------------------------------------
class _Answer(Shape):
    what = "answer settings"

    temperature: Annotated[
        float,
        Field(strict=True, ge=0, le=2, allow_inf_nan=False),
        says(lambda v: f"a number from 0 to 2, got {v!r}"),
        null_is(0.0),
    ] = 0.0
    max_new_tokens: Annotated[
        int,
        Field(strict=True, ge=1, le=MAX_TOKEN_LIMIT),
        says(lambda v: f"a whole number from 1 to {MAX_TOKEN_LIMIT}, got {v!r}"),
        null_is(1024),
    ] = 1024


class _Rubric(Shape):
    what = "a rubric text, or a mapping with text and weight"

    text: Annotated[str, _text(required=True)] = Field(None, validate_default=True)
    weight: Weight = 1.0


class _Question(Shape):
    what = "a question, or a mapping with question, weight, name"

    question: Annotated[str, _text(required=True)] = Field(None, validate_default=True)
    weight: Weight = 1.0
    name: Name | None = None


def _shorthand(key: str) -> WrapValidator:
    """A text stands for the mapping {key: text} (a rubric's text, a checklist question)."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, str):
            if not value.strip():
                fail("must not be empty")
            value = {key: value}
        return handler(value)

    return WrapValidator(validate)


_RubricEntry = Annotated[_Rubric, _shorthand("text")]
_ChecklistEntry = Annotated[_Question, _shorthand("question")]


class _Check(Shape):
    what = 'a check such as {contains: "refund"}'

    # the options first: a regex is compiled with its flags
    name: Name | None = None
    weight: Weight = 1.0
    case_sensitive: Flag = True
    strip: Flag = True
    flags: (
        Annotated[
            list[RegexFlag], list_of(f"a list of flags ({', '.join(REGEX_FLAGS)})", empty=True)
        ]
        | None
    ) = None
    # the kinds (CHECK_KINDS); exactly one is given, and given as null it is wrong
    regex: Pattern = None  # type: ignore[assignment]
    not_regex: Pattern = None  # type: ignore[assignment]
    contains: NonEmptyText = None  # type: ignore[assignment]
    not_contains: NonEmptyText = None  # type: ignore[assignment]
    max_words: Count = None  # type: ignore[assignment]
    min_words: Count = None  # type: ignore[assignment]
    max_chars: Count = None  # type: ignore[assignment]
    min_chars: Count = None  # type: ignore[assignment]
    valid_json: Annotated[bool, PlainValidator(_true)] = None  # type: ignore[assignment]
    json_schema: Annotated[Any, PlainValidator(_schema)] = None
    exact: NonEmptyText = None  # type: ignore[assignment]

    @classmethod
    def _first(cls, value: dict[Any, Any]) -> tuple[list[InitErrorDetails], bool]:
        kinds = [key for key in value if key in CHECK_KINDS]
        if len(kinds) != 1:
            found = "no check kind" if not kinds else f"{len(kinds)} kinds ({', '.join(kinds)})"
            words = f"a check has exactly one kind, found {found}; kinds: {', '.join(CHECK_KINDS)}"
            every = (*CHECK_KINDS, *COMMON_CHECK_OPTIONS, "flags", "case_sensitive", "strip")
            return [problem_at(words, (), value), *unknown_keys(value, every)], False
        kind = kinds[0]
        return unknown_keys(value, (kind, *COMMON_CHECK_OPTIONS, *CHECK_KINDS[kind][1])), True

    def spec(self) -> Check:
        kind = next(key for key in CHECK_KINDS if key in self.model_fields_set)
        return Check(
            kind,
            getattr(self, kind),
            self.name if self.name is not None else kind,
            self.weight,
            self.case_sensitive,
            _flag_bits(self.flags),
            self.strip,
        )


def _judged(turn: Mapping[Any, Any]) -> bool:
    """Whether a turn is judged (a `judged` that is no true or false counts as true)."""
    judged = turn.get("judged", True)
    return judged if isinstance(judged, bool) else True


class _Turn(Shape):
    what = "a turn"

    user: Annotated[str, _text(required=True)] = Field(None, validate_default=True)
    golden: Annotated[str | None, _text(empty=True)] = None
    reference: Text = None
    judged: Flag = True
    rubric: _RubricEntry | None = None
    checklist: (
        Annotated[list[_ChecklistEntry], list_of("a non-empty list of yes/no questions")] | None
    ) = None
    checks: Annotated[list[_Check], list_of("a non-empty list of checks")] | None = None

    @classmethod
    def _whole(cls, value: dict[Any, Any], info: ValidationInfo) -> list[InitErrorDetails]:
        given = [key for key in ("rubric", "checklist", "checks") if key in value]
        if _judged(value) and not given:
            words = (
                "a judged turn needs a rubric, a checklist or checks (or `judged: false` for a "
                "turn that is context only)"
            )
            return [problem_at(words, (), value)]
        if not _judged(value) and given:
            words = (
                f"this turn is not judged (judged: false) but has {', '.join(given)}; remove "
                "them or judge the turn"
            )
            return [problem_at(words, (), value)]
        return []

    def spec(self) -> TurnSpec:
        return TurnSpec(
            user=self.user,
            golden=self.golden,
            reference=self.reference,
            judged=self.judged,
            rubric=None if self.rubric is None else Rubric(self.rubric.text, self.rubric.weight),
            checklist=tuple(
                ChecklistItem(
                    item.question, item.weight, "checklist" if item.name is None else item.name
                )
                for item in self.checklist or ()
            ),
            checks=tuple(check.spec() for check in self.checks or ()),
        )


class _SimulatedUser(Shape):
    what = "a simulated user (persona, goal, facts, opening, max_turns)"

    persona: Annotated[str, _text(required=True)] = Field(None, validate_default=True)
    goal: Annotated[str, _text(required=True)] = Field(None, validate_default=True)
    facts: Annotated[list[Tag], list_of("a list of facts (texts)", empty=True)] | None = None
    opening: Text = None
    max_turns: Annotated[
        int,
        Field(strict=True, ge=1, le=MAX_SIMULATED_TURNS),
        says(lambda v: f"a whole number from 1 to {MAX_SIMULATED_TURNS}, got {v!r}"),
        null_is(4),
    ] = 4

    def spec(self) -> SimulatedUserSpec:
        return SimulatedUserSpec(
            persona=self.persona,
            goal=self.goal,
            facts=tuple(self.facts or ()),
            opening=self.opening,
            max_turns=self.max_turns,
        )


def _turns_as_a_whole(turns: list[Any], history: str) -> list[InitErrorDetails]:
    """The problems of a dialogue's turns together, once each turn is a mapping with a user
    message: one of them must be judged, and with golden history every turn before the last
    judged one needs a golden answer."""
    if not all(isinstance(turn, dict) and _is_text(turn.get("user")) for turn in turns):
        return []
    judged = [index for index, turn in enumerate(turns) if _judged(turn)]
    if not judged:
        words = "no turn is judged; a dialogue needs at least one judged turn"
        return [problem_at(words, (), turns)]
    if history != "golden":
        return []
    words = "history is golden, so this turn needs a golden answer (later turns are asked after it)"
    return [
        problem_at(words, (index,), turn)
        for index, turn in enumerate(turns[: judged[-1]])
        if not isinstance(turn.get("golden"), str)
    ]


DIALOGUE_KEYS = ("id", "tags", "turns")
SCENARIO_KEYS = ("id", "tags", "simulated_user", "judge", "rubric", "checklist", "checks")


class _Dialogue(Shape):
    what = "a dialogue"

    id: Annotated[int | str, PlainValidator(_ident)] = Field(None, validate_default=True)
    tags: Annotated[list[Tag], list_of("a list of tags", empty=True)] | None = None
    simulated_user: _SimulatedUser | None = None
    # a scenario's requirements (a dialogue with turns has them per turn)
    rubric: _RubricEntry | None = None
    checklist: (
        Annotated[list[_ChecklistEntry], list_of("a non-empty list of yes/no questions")] | None
    ) = None
    checks: Annotated[list[_Check], list_of("a non-empty list of checks")] | None = None
    judge: Annotated[
        JudgedPart, _one_of(("conversation", "final_turn")), null_is("conversation")
    ] = "conversation"
    turns: list[_Turn] = Field(None, validate_default=True)

    @classmethod
    def _first(cls, value: dict[Any, Any]) -> tuple[list[InitErrorDetails], bool]:
        """A scripted dialogue's keys, or a scenario's (`simulated_user`)."""
        keys = SCENARIO_KEYS if "simulated_user" in value else DIALOGUE_KEYS
        return unknown_keys(value, keys), True

    @classmethod
    def _whole(cls, value: dict[Any, Any], info: ValidationInfo) -> list[InitErrorDetails]:
        if "simulated_user" not in value:
            return []
        given = [key for key in ("rubric", "checklist", "checks") if key in value]
        problems = []
        if "turns" in value:
            words = "a scenario (simulated_user) has no turns: the user model writes them"
            problems.append(problem_at(words, (), value))
        if not given:
            words = "a scenario needs a rubric, a checklist or checks"
            problems.append(problem_at(words, (), value))
        return problems

    @field_validator("turns", mode="wrap")
    @classmethod
    def _turns(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        if value is None and info.data.get("simulated_user") is not None:
            return []  # a scenario: the user model writes its turns
        if value is None:
            fail("missing: every dialogue needs a list of turns")
        if not isinstance(value, list) or not value:
            fail("expected a non-empty list of turns")
        turns, problems = validated(handler, value)
        problems += _turns_as_a_whole(value, (info.context or {}).get("history", "self"))
        if problems:
            raise_problems(problems, "turns")
        return turns

    def spec(self) -> DialogueSpec:
        user = self.simulated_user
        if user is None:
            return DialogueSpec(
                id=self.id,
                tags=tuple(dict.fromkeys(self.tags or ())),
                turns=tuple(turn.spec() for turn in self.turns),
            )
        slot = _Turn.model_construct(
            user=user.opening or "",
            rubric=self.rubric,
            checklist=self.checklist,
            checks=self.checks,
            judged=True,
        ).spec()
        context = TurnSpec(user="", judged=False)
        return DialogueSpec(
            id=self.id,
            tags=tuple(dict.fromkeys(self.tags or ())),
            turns=(*(context,) * (user.max_turns - 1), slot),
            simulated_user=user.spec(),
            judge=self.judge,
        )


def _with_ids(problems: list[InitErrorDetails], dialogues: list[Any]) -> list[InitErrorDetails]:
    """The dialogues' problems with those of their ids: an id used again (told after the
    other problems of its dialogue), then ids of two types."""
    again: dict[int, InitErrorDetails] = {}
    seen: dict[int | str, int] = {}
    types: set[type] = set()
    for index, dialogue in enumerate(dialogues):
        ident = dialogue.get("id") if isinstance(dialogue, dict) else None
        if not _ident_ok(ident):
            continue
        types.add(type(ident))
        if ident in seen:
            words = f"id {ident!r} is used twice (first by dialogues[{seen[ident]}])"
            again[index] = problem_at(words, (index, "id"), ident)
        else:
            seen[ident] = index
    merged: list[InitErrorDetails] = []
    told = sorted(again)
    for found in problems:
        while told and told[0] < found["loc"][0]:  # type: ignore[operator]
            merged.append(again[told.pop(0)])
        merged.append(found)
    merged += [again[index] for index in told]
    if len(types) > 1:
        words = "dialogue ids must be all texts or all whole numbers, not a mix"
        merged.append(problem_at(words, (), dialogues))
    return merged


class _Benchmark(Shape):
    what = "a benchmark"

    version: Annotated[int, PlainValidator(_version)] = Field(None, validate_default=True)
    name: Annotated[str, PlainValidator(_benchmark_name)] = Field(None, validate_default=True)
    description: Text = None
    history: Annotated[History, _one_of(("golden", "self")), null_is("self")] = "self"
    dialogue_score: Annotated[DialogueScore, _one_of(("mean", "min")), null_is("mean")] = "mean"
    system: Text = None
    answer: _Answer | None = None
    success_threshold: Annotated[
        float,
        Field(strict=True, ge=0, le=1, allow_inf_nan=False),
        says(lambda v: f"a number from 0 to 1 (a dialogue's score), got {v!r}"),
        null_is(0.5),
    ] = 0.5
    dialogues: list[_Dialogue] = Field(None, validate_default=True)

    @classmethod
    def _first(cls, value: dict[Any, Any]) -> tuple[list[InitErrorDetails], bool]:
        """The file's keys (`success_threshold` only in a file of scenarios)."""
        dialogues = value.get("dialogues")
        scenarios = isinstance(dialogues, list) and any(
            isinstance(d, dict) and "simulated_user" in d for d in dialogues
        )
        keys = tuple(k for k in cls.model_fields if scenarios or k != "success_threshold")
        return unknown_keys(value, keys), True

    @classmethod
    def _whole(cls, value: dict[Any, Any], info: ValidationInfo) -> list[InitErrorDetails]:
        dialogues = value.get("dialogues")
        if not isinstance(dialogues, list):
            return []
        kinds = {isinstance(d, dict) and "simulated_user" in d for d in dialogues}
        if len(kinds) > 1:
            words = (
                "a file's dialogues are all scripted (turns) or all scenarios "
                "(simulated_user), not a mix"
            )
            return [problem_at(words, ("dialogues",), dialogues)]
        return []

    @field_validator("dialogues", mode="wrap")
    @classmethod
    def _dialogues(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if value is None:
            fail("missing: the benchmark needs a list of dialogues")
        if not isinstance(value, list) or not value:
            fail("expected a non-empty list of dialogues")
        dialogues, problems = validated(handler, value)
        problems = _with_ids(problems, value)
        if problems:
            raise_problems(problems, "dialogues")
        return dialogues

    def spec(self) -> BenchmarkSpec:
        answer = self.answer if self.answer is not None else _Answer()
        return BenchmarkSpec(
            version=self.version,
            name=self.name,
            description=self.description or "",
            history=self.history,
            dialogue_score=self.dialogue_score,
            system=self.system,
            temperature=answer.temperature,
            max_new_tokens=answer.max_new_tokens,
            dialogues=tuple(dialogue.spec() for dialogue in self.dialogues),
            success_threshold=self.success_threshold,
        )


def _history(value: Any) -> str:
    """The history a benchmark's turns are checked against (an invalid one is reported and
    taken as "self")."""
    history = value.get("history") if isinstance(value, dict) else None
    return history if history in ("golden", "self") else "self"


def _spec_of(
    document: Document, errors: ErrorCollector, reserved: Iterable[str] = ()
) -> BenchmarkSpec | None:
    """The benchmark `document` defines, or None with each of its problems added to `errors`
    as `line: place: message`."""
    context = {"reserved": set(reserved), "history": _history(document.value)}
    try:
        return _Benchmark.model_validate(document.value, context=context).spec()
    except ValidationError as error:
        report(error, document, errors)
        return None


def load_spec(path: Path, reserved: Iterable[str] = ()) -> BenchmarkSpec:
    """The benchmark file at `path`, validated; every problem is reported at once (one
    UserError listing each with its line). `reserved`: names it may not take (the built-in
    benchmarks')."""
    errors = ErrorCollector(path, limit=50)
    document = load_document(path, errors)
    spec = _spec_of(document, errors, reserved) if document is not None else None
    errors.raise_if_any()
    assert spec is not None
    return spec
