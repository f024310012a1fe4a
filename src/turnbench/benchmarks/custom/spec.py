"""The user-defined benchmark format (version 1), validated with every mistake located.

A benchmark file holds dialogues of turns; each judged turn is scored by any mix of a rubric
(a 1-10 judge rating), a checklist (yes/no questions for the judge) and deterministic checks
that need no judge. The format is documented in docs/custom-benchmarks.md. Validation walks
the whole file and collects every problem with its line and its place in the file
("dialogues[2].turns[0].checks[1]: ..."), like a compiler, before anything is sent.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from turnbench.benchmarks.custom.document import Document, Where, load_document
from turnbench.textio import ErrorCollector
from turnbench.types import MAX_TOKEN_LIMIT

FORMAT_VERSIONS = (1,)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TOP_KEYS = (
    "version",
    "name",
    "description",
    "history",
    "dialogue_score",
    "system",
    "answer",
    "dialogues",
)
ANSWER_KEYS = ("temperature", "max_new_tokens")
DIALOGUE_KEYS = ("id", "tags", "turns")
TURN_KEYS = ("user", "golden", "reference", "judged", "rubric", "checklist", "checks")
RUBRIC_KEYS = ("text", "weight")
ITEM_KEYS = ("question", "weight", "name")
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
class DialogueSpec:
    id: int | str
    tags: tuple[str, ...]
    turns: tuple[TurnSpec, ...]


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


def place(where: Where) -> str:
    """`dialogues[2].turns[0].user` for ("dialogues", 2, "turns", 0, "user")."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Validator:
    def __init__(
        self, document: Document, errors: ErrorCollector, reserved: Iterable[str] = ()
    ) -> None:
        self.document = document
        self.errors = errors
        self.reserved = set(reserved)

    def error(self, where: Where, message: str) -> None:
        shown = place(where)
        self.errors.add(self.document.line(where), f"{shown}: {message}" if shown else message)

    # -- shapes ----------------------------------------------------------------------------
    def mapping(self, value: Any, where: Where, what: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.error(where, f"expected {what} (a mapping of keys to values)")
            return None
        return value

    def known_keys(self, value: Mapping[str, Any], where: Where, known: Iterable[str]) -> None:
        allowed = list(known)
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                self.error(
                    (*where, key), f"unknown key '{key}'{hint}; allowed: {', '.join(allowed)}"
                )

    def text(
        self, value: Any, where: Where, *, required: bool = False, empty: bool = False
    ) -> str | None:
        if value is None:
            if required:
                self.error(where, "missing (a text is required)")
            return None
        if not isinstance(value, str):
            self.error(where, f"expected a text, got {_kind(value)}")
            return None
        if not empty and not value.strip():
            self.error(where, "must not be empty")
            return None
        return value

    def weight(self, value: Any, where: Where) -> float:
        if value is None:
            return 1.0
        if not _number(value) or not MIN_WEIGHT <= value <= MAX_WEIGHT:  # NaN fails too
            self.error(
                where, f"a weight is a number from {MIN_WEIGHT:g} to {MAX_WEIGHT:g}, got {value!r}"
            )
            return 1.0
        return float(value)

    def name(self, value: Any, where: Where, default: str) -> str:
        if value is None:
            return default
        if not isinstance(value, str) or not NAME.match(value):
            self.error(
                where,
                "a name is 1-64 letters, digits, '.', '-' or '_', starting with a letter or "
                f"digit, got {value!r}",
            )
            return default
        return value

    def choice(self, value: Any, where: Where, allowed: tuple[str, ...], default: str) -> str:
        if value is None:
            return default
        if value not in allowed:
            self.error(where, f"must be one of {', '.join(allowed)}, got {value!r}")
            return default
        return str(value)

    # -- the document ----------------------------------------------------------------------
    def benchmark(self) -> BenchmarkSpec | None:
        top = self.mapping(self.document.value, (), "a benchmark")
        if top is None:
            return None
        self.known_keys(top, (), TOP_KEYS)
        version = top.get("version")
        if version is None:
            self.error(
                ("version",),
                f"missing: the file must say which format version it uses ({FORMAT_VERSIONS[-1]})",
            )
        elif version not in FORMAT_VERSIONS or isinstance(version, bool):
            self.error(
                ("version",),
                f"format version {version!r} is not supported (this turnbench reads "
                f"{', '.join(map(str, FORMAT_VERSIONS))})",
            )
        name = top.get("name")
        if name is None:
            self.error(("name",), "missing: the benchmark needs a name (used in results)")
        name = self.name(name, ("name",), "custom")
        if name in self.reserved:
            self.error(("name",), f"{name!r} is the name of a built-in benchmark; choose another")
        description = self.text(top.get("description"), ("description",)) or ""
        history = self.choice(top.get("history"), ("history",), ("golden", "self"), "self")
        score = self.choice(top.get("dialogue_score"), ("dialogue_score",), ("mean", "min"), "mean")
        system = self.text(top.get("system"), ("system",))
        temperature, max_tokens = self.answer(top.get("answer"))
        dialogues = self.dialogues(top.get("dialogues"), history)
        return BenchmarkSpec(
            version=int(version) if isinstance(version, int) else FORMAT_VERSIONS[-1],
            name=name,
            description=description,
            history=history,  # type: ignore[arg-type]
            dialogue_score=score,  # type: ignore[arg-type]
            system=system,
            temperature=temperature,
            max_new_tokens=max_tokens,
            dialogues=tuple(dialogues),
        )

    def answer(self, value: Any) -> tuple[float, int]:
        temperature, max_tokens = 0.0, 1024
        if value is None:
            return temperature, max_tokens
        where: Where = ("answer",)
        block = self.mapping(value, where, "answer settings")
        if block is None:
            return temperature, max_tokens
        self.known_keys(block, where, ANSWER_KEYS)
        given = block.get("temperature")
        if given is not None:
            if _number(given) and 0 <= given <= 2:
                temperature = float(given)
            else:
                self.error((*where, "temperature"), f"a number from 0 to 2, got {given!r}")
        given = block.get("max_new_tokens")
        if given is not None:
            if (
                isinstance(given, int)
                and not isinstance(given, bool)
                and 1 <= given <= MAX_TOKEN_LIMIT
            ):
                max_tokens = given
            else:
                self.error(
                    (*where, "max_new_tokens"),
                    f"a whole number from 1 to {MAX_TOKEN_LIMIT}, got {given!r}",
                )
        return temperature, max_tokens

    def dialogues(self, value: Any, history: str) -> list[DialogueSpec]:
        where: Where = ("dialogues",)
        if value is None:
            self.error(where, "missing: the benchmark needs a list of dialogues")
            return []
        if not isinstance(value, list) or not value:
            self.error(where, "expected a non-empty list of dialogues")
            return []
        found: list[DialogueSpec] = []
        seen: dict[int | str, int] = {}
        id_types: set[type] = set()
        for index, item in enumerate(value):
            ident, dialogue = self.dialogue(item, (*where, index), history)
            if ident is not None:
                id_types.add(type(ident))
                if ident in seen:
                    self.error(
                        (*where, index, "id"),
                        f"id {ident!r} is used twice (first by dialogues[{seen[ident]}])",
                    )
                    continue
                seen[ident] = index
            if dialogue is not None:
                found.append(dialogue)
        if len(id_types) > 1:
            self.error(where, "dialogue ids must be all texts or all whole numbers, not a mix")
        return found

    def dialogue(
        self, value: Any, where: Where, history: str
    ) -> tuple[int | str | None, DialogueSpec | None]:
        """The dialogue's id (when valid) and the dialogue (when entirely valid)."""
        item = self.mapping(value, where, "a dialogue")
        if item is None:
            return None, None
        self.known_keys(item, where, DIALOGUE_KEYS)
        ident = item.get("id")
        if ident is None:
            self.error((*where, "id"), "missing: every dialogue needs an id")
        elif isinstance(ident, bool) or not isinstance(ident, int | str) or ident == "":
            self.error((*where, "id"), f"an id is a text or a whole number, got {ident!r}")
            ident = None
        tags: list[str] = []
        given = item.get("tags")
        if given is not None:
            if not isinstance(given, list):
                self.error((*where, "tags"), "expected a list of tags")
            else:
                for number, tag in enumerate(given):
                    if isinstance(tag, str) and tag.strip():
                        tags.append(tag)
                    else:
                        self.error((*where, "tags", number), f"a tag is a text, got {tag!r}")
        turns = self.turns(item.get("turns"), (*where, "turns"), history)
        if ident is None or turns is None:
            return ident, None
        return ident, DialogueSpec(id=ident, tags=tuple(dict.fromkeys(tags)), turns=tuple(turns))

    def turns(self, value: Any, where: Where, history: str) -> list[TurnSpec] | None:
        if value is None:
            self.error(where, "missing: every dialogue needs a list of turns")
            return None
        if not isinstance(value, list) or not value:
            self.error(where, "expected a non-empty list of turns")
            return None
        turns = [self.turn(item, (*where, index)) for index, item in enumerate(value)]
        if any(turn is None for turn in turns):
            return None
        found = [turn for turn in turns if turn is not None]
        judged = [index for index, turn in enumerate(found) if turn.judged]
        if not judged:
            self.error(where, "no turn is judged; a dialogue needs at least one judged turn")
            return None
        if history == "golden":
            for index, turn in enumerate(found[: judged[-1]]):
                if turn.golden is None:
                    self.error(
                        (*where, index),
                        "history is golden, so this turn needs a golden answer (later turns "
                        "are asked after it)",
                    )
        return found

    def turn(self, value: Any, where: Where) -> TurnSpec | None:
        item = self.mapping(value, where, "a turn")
        if item is None:
            return None
        self.known_keys(item, where, TURN_KEYS)
        user = self.text(item.get("user"), (*where, "user"), required=True)
        golden = self.text(item.get("golden"), (*where, "golden"), empty=True)
        reference = self.text(item.get("reference"), (*where, "reference"))
        judged = item.get("judged", True)
        if not isinstance(judged, bool):
            self.error((*where, "judged"), f"expected true or false, got {judged!r}")
            judged = True
        rubric = self.rubric(item.get("rubric"), (*where, "rubric"))
        checklist = self.checklist(item.get("checklist"), (*where, "checklist"))
        checks = self.checks(item.get("checks"), (*where, "checks"))
        scored = rubric is not None or bool(checklist) or bool(checks)
        given = [k for k in ("rubric", "checklist", "checks") if k in item]
        if judged and not scored and not given:
            self.error(
                where,
                "a judged turn needs a rubric, a checklist or checks (or `judged: false` for a "
                "turn that is context only)",
            )
        if not judged and given:
            self.error(
                where,
                f"this turn is not judged (judged: false) but has {', '.join(given)}; remove "
                "them or judge the turn",
            )
        if user is None:
            return None
        return TurnSpec(
            user=user,
            golden=golden,
            reference=reference,
            judged=judged,
            rubric=rubric,
            checklist=tuple(checklist),
            checks=tuple(checks),
        )

    def rubric(self, value: Any, where: Where) -> Rubric | None:
        if value is None:
            return None
        if isinstance(value, str):
            text = self.text(value, where)
            return Rubric(text) if text is not None else None
        block = self.mapping(value, where, "a rubric text, or a mapping with text and weight")
        if block is None:
            return None
        self.known_keys(block, where, RUBRIC_KEYS)
        text = self.text(block.get("text"), (*where, "text"), required=True)
        weight = self.weight(block.get("weight"), (*where, "weight"))
        return Rubric(text, weight) if text is not None else None

    def checklist(self, value: Any, where: Where) -> list[ChecklistItem]:
        if value is None:
            return []
        if not isinstance(value, list) or not value:
            self.error(where, "expected a non-empty list of yes/no questions")
            return []
        items = []
        for index, entry in enumerate(value):
            at = (*where, index)
            if isinstance(entry, str):
                text = self.text(entry, at)
                if text is not None:
                    items.append(ChecklistItem(text))
                continue
            block = self.mapping(entry, at, "a question, or a mapping with question, weight, name")
            if block is None:
                continue
            self.known_keys(block, at, ITEM_KEYS)
            text = self.text(block.get("question"), (*at, "question"), required=True)
            weight = self.weight(block.get("weight"), (*at, "weight"))
            name = self.name(block.get("name"), (*at, "name"), "checklist")
            if text is not None:
                items.append(ChecklistItem(text, weight, name))
        return items

    def checks(self, value: Any, where: Where) -> list[Check]:
        if value is None:
            return []
        if not isinstance(value, list) or not value:
            self.error(where, "expected a non-empty list of checks")
            return []
        found = []
        for index, entry in enumerate(value):
            check = self.check(entry, (*where, index))
            if check is not None:
                found.append(check)
        return found

    def check(self, value: Any, where: Where) -> Check | None:
        block = self.mapping(value, where, 'a check such as {contains: "refund"}')
        if block is None:
            return None
        kinds = [key for key in block if key in CHECK_KINDS]
        if len(kinds) != 1:
            problem = "no check kind" if not kinds else f"{len(kinds)} kinds ({', '.join(kinds)})"
            self.error(
                where,
                f"a check has exactly one kind, found {problem}; kinds: {', '.join(CHECK_KINDS)}",
            )
            self.known_keys(block, where, [*CHECK_KINDS, *COMMON_CHECK_OPTIONS, "flags",
                                            "case_sensitive", "strip"])  # fmt: skip
            return None
        kind = kinds[0]
        shape, options = CHECK_KINDS[kind]
        self.known_keys(block, where, [kind, *COMMON_CHECK_OPTIONS, *options])
        at = (*where, kind)
        raw = block[kind]
        name = self.name(block.get("name"), (*where, "name"), kind)
        weight = self.weight(block.get("weight"), (*where, "weight"))
        case_sensitive = self.flag(block, where, "case_sensitive", True)
        strip = self.flag(block, where, "strip", True)
        flags = self.regex_flags(block.get("flags"), (*where, "flags"))
        value_ok = self.check_value(shape, raw, at, flags, case_sensitive)
        if not value_ok:
            return None
        return Check(kind, raw, name, weight, case_sensitive, flags, strip)

    def flag(self, block: Mapping[str, Any], where: Where, key: str, default: bool) -> bool:
        value = block.get(key, default)
        if not isinstance(value, bool):
            self.error((*where, key), f"expected true or false, got {value!r}")
            return default
        return value

    def regex_flags(self, value: Any, where: Where) -> int:
        if value is None:
            return 0
        if not isinstance(value, list):
            self.error(where, f"expected a list of flags ({', '.join(REGEX_FLAGS)})")
            return 0
        flags = 0
        for index, flag in enumerate(value):
            if flag in REGEX_FLAGS:
                flags |= REGEX_FLAGS[flag]
            else:
                self.error(
                    (*where, index), f"unknown flag {flag!r}; flags: {', '.join(REGEX_FLAGS)}"
                )
        return flags

    def check_value(self, shape: str, raw: Any, where: Where, flags: int, case: bool) -> bool:
        if shape == "pattern":
            if not isinstance(raw, str) or not raw:
                self.error(where, f"expected a regular expression, got {raw!r}")
                return False
            try:
                re.compile(raw, flags)
            except re.error as error:
                self.error(where, f"not a valid regular expression: {error}")
                return False
            return True
        if shape == "text":
            if not isinstance(raw, str) or raw == "":
                self.error(where, f"expected a non-empty text, got {raw!r}")
                return False
            return True
        if shape == "count":
            if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
                self.error(where, f"expected a whole number from 0, got {raw!r}")
                return False
            return True
        if shape == "true":
            if raw is not True:
                self.error(where, f"write `valid_json: true`, got {raw!r}")
                return False
            return True
        return self.schema(raw, where)

    def schema(self, raw: Any, where: Where) -> bool:
        if not isinstance(raw, dict | bool):
            self.error(where, "expected a JSON Schema (a mapping such as {type: object})")
            return False
        import jsonschema

        try:
            jsonschema.validators.validator_for(raw).check_schema(raw)
        except jsonschema.SchemaError as error:
            inner = "/".join(str(p) for p in error.absolute_path) or "the schema"
            self.error(where, f"not a valid JSON Schema at {inner}: {error.message}")
            return False
        remote = sorted(set(_remote_refs(raw)))
        if remote:
            self.error(
                where,
                f'a schema may refer only to its own parts ($ref "#/..."), not to '
                f"{', '.join(remote)} (nothing is fetched)",
            )
            return False
        return True


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


def load_spec(path: Path, reserved: Iterable[str] = ()) -> BenchmarkSpec:
    """The benchmark file at `path`, validated; every problem is reported at once (one
    UserError listing each with its line). `reserved`: names it may not take (the built-in
    benchmarks')."""
    errors = ErrorCollector(path, limit=50)
    document = load_document(path, errors)
    spec = _Validator(document, errors, reserved).benchmark() if document is not None else None
    errors.raise_if_any()
    assert spec is not None
    return spec
