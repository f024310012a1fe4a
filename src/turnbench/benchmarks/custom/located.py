"""Pydantic validation of a user's file that reports every problem like a compiler: in the
words meant for the file's author, at the file's line and place, in a fixed order.

A problem travels through pydantic as a `PydanticCustomError` whose context holds a
`Problem` (the exact words shown), so one `ValidationError` gathers them all, and `report`
turns each into `file:line: place: words` with the line of its location in the `Document`.
A `Shape` is a model of one mapping of the file: its unknown keys come first (with a
suggestion), then its fields' problems in declaration order, then those of the mapping as a
whole, which are found whether or not its fields are valid.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from turnbench.benchmarks.custom.document import Document, Where
from turnbench.textio import ErrorCollector

_ERROR = "turnbench_file"


@dataclass(frozen=True)
class Problem:
    """One mistake in the words shown to the file's author. It rides in a pydantic error's
    context rather than its message: the words may quote anything the file holds (a key with
    a lone surrogate, say), which pydantic's own message text cannot carry. `below` places it
    under the value pydantic located it at (an unknown key's own place)."""

    message: str
    below: Where = ()

    def __str__(self) -> str:  # pydantic's `msg` of the error; `report` shows `message`
        return self.message.encode("utf-8", "backslashreplace").decode("utf-8")


def _error(problem: Problem) -> PydanticCustomError:
    return PydanticCustomError(_ERROR, "{problem}", {"problem": problem})


def problem_at(
    words: str, loc: Where = (), value: Any = None, below: Where = ()
) -> InitErrorDetails:
    """A problem at `loc` (relative to the value being validated), to raise with others."""
    return {"type": _error(Problem(words, below)), "loc": loc, "input": value}


#: pydantic's generic error types in the files' words (every other problem is raised in its own)
GENERIC: dict[str, Callable[[Any], str]] = {
    "bool_type": lambda value: f"expected true or false, got {value!r}",
}


def _problem_of(error: Mapping[str, Any]) -> Problem:
    """The problem one pydantic error (an entry of `ValidationError.errors()`) stands for."""
    if error["type"] == _ERROR:
        found: Problem = error["ctx"]["problem"]
        return found
    words = GENERIC.get(error["type"])
    return Problem(words(error["input"]) if words else str(error["msg"]))


def raise_problems(problems: Sequence[InitErrorDetails], title: str) -> NoReturn:
    raise ValidationError.from_exception_data(title, list(problems))


def fail(*messages: str) -> NoReturn:
    """Raise the problems of the value being validated (most often one)."""
    if len(messages) == 1:
        raise _error(Problem(messages[0]))
    raise_problems([problem_at(message) for message in messages], "value")


def validated(handler: Callable[[Any], Any], value: Any) -> tuple[Any, list[InitErrorDetails]]:
    """`handler(value)` and no problems, or None and the problems it raised (to be raised
    again with more)."""
    try:
        return handler(value), []
    except ValidationError as error:
        return None, [
            {"type": _error(_problem_of(item)), "loc": tuple(item["loc"]), "input": item["input"]}
            for item in error.errors()
        ]


def says(words: Callable[[Any], str]) -> WrapValidator:
    """Any failure of the annotated type is the one problem `words(value)`."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise _error(Problem(words(value))) from None

    return WrapValidator(validate)


def null_is(default: Any) -> BeforeValidator:
    """A null value means the field's default, as an absent one does."""
    return BeforeValidator(lambda value: default if value is None else value)


def list_of(what: str, *, empty: bool = False) -> BeforeValidator:
    """The value must be a list (a non-empty one unless `empty`): else `expected {what}`."""

    def validate(value: Any) -> Any:
        if not isinstance(value, list) or not (value or empty):
            fail(f"expected {what}")
        return value

    return BeforeValidator(validate)


def unknown_keys(value: Mapping[Any, Any], allowed: Sequence[str]) -> list[InitErrorDetails]:
    """A problem for each key of `value` not `allowed`, suggesting the closest allowed one."""
    found = []
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            words = f"unknown key '{key}'{hint}; allowed: {', '.join(allowed)}"
            found.append(problem_at(words, (), value[key], below=(key,)))
    return found


class Shape(BaseModel):
    """A mapping of the file, its fields named as its keys. A value that is not a mapping is
    the one problem "expected {what} (a mapping of keys to values)"."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    what: ClassVar[str]

    @classmethod
    def _first(cls, value: dict[Any, Any]) -> tuple[list[InitErrorDetails], bool]:
        """The problems found before the fields', and whether to validate the fields."""
        return unknown_keys(value, tuple(cls.model_fields)), True

    @classmethod
    def _whole(cls, value: dict[Any, Any], info: ValidationInfo) -> list[InitErrorDetails]:
        """The problems of the mapping as a whole, found whether or not its fields are valid."""
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _in_order(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        if not isinstance(value, dict):
            fail(f"expected {cls.what} (a mapping of keys to values)")
        problems, go_on = cls._first(value)
        result = None
        if go_on:
            result, found = validated(handler, value)
            problems += found
        problems += cls._whole(value, info)
        if problems:
            raise_problems(problems, cls.__name__)
        return result


def place(where: Where) -> str:
    """`dialogues[2].turns[0].user` for ("dialogues", 2, "turns", 0, "user")."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def report(error: ValidationError, document: Document, errors: ErrorCollector) -> None:
    """Each problem of `error` added to `errors` at its line, as `place: words`."""
    for item in error.errors():
        found = _problem_of(item)
        where = (*item["loc"], *found.below)
        shown = place(where)
        errors.add(document.line(where), f"{shown}: {found.message}" if shown else found.message)
