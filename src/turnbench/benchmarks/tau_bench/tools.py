"""Calling a domain's tools as upstream's environment does, and safely whatever the model sent.

Upstream runs a tool call as `observation = tool(data, **arguments)`: a tool that raises gives
the observation `Error: <the exception>`, an unknown tool `Unknown action <name>`, and a
terminating tool ends the conversation whether or not it raised. Here the same, and beyond
upstream a call that cannot even be made is an observation the model sees rather than a
crash: arguments that are not JSON as RFC 8259 defines it (NaN and Infinity are not), nested
more than 100 levels deep or not an object, an argument missing or unexpected, or of the
wrong JSON type for the tool's schema. A terminating tool called so still ends the
conversation, as upstream's does when its call raises. The arguments are a fresh copy for
every call (a tool may keep them in the state: they never alias the caller's).

What a call writes must be what a run can keep (`textio.storable_problem`: write to its log
and results.json, hash, read back in the report and the viewer): a call that would store
anything else (an integer of 4,301 digits, a lone surrogate, a value nested 60 levels deep)
is undone and its observation says why, so the conversation goes on and is scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnbench.benchmarks.tau_bench import airline_tools, retail_tools
from turnbench.benchmarks.tau_bench.database import DatabaseState, copy_json
from turnbench.safetext import fix_surrogates
from turnbench.textio import NestingError, loads_strict_json, storable_problem

TERMINATING = frozenset({"transfer_to_human_agents"})
#: the JSON types of the schemas' parameters, as Python types (bool is no number here)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "array": (list,),
    "object": (dict,),
    "boolean": (bool,),
}
#: the longest argument text read (a reply's arguments are untrusted)
MAX_ARGUMENTS_CHARS = 200_000


@dataclass(frozen=True)
class ToolResult:
    """A tool call's observation, whether it ends the conversation, and whether it wrote
    to the state."""

    output: str
    terminal: bool = False
    changed: bool = False


class ToolSet:
    """One domain's tools: what the model is offered (`schemas`) and how a call runs."""

    def __init__(self, schemas: Sequence[dict[str, Any]], tools: Mapping[str, Callable[..., str]]):
        self.schemas: tuple[dict[str, Any], ...] = tuple(schemas)
        self._tools = dict(tools)
        self._parameters = {
            schema["function"]["name"]: schema["function"].get("parameters") or {}
            for schema in self.schemas
        }
        self.terminating = frozenset(TERMINATING & set(self._parameters))

    @classmethod
    def for_domain(
        cls, name: Literal["retail", "airline"], schemas: Sequence[dict[str, Any]]
    ) -> ToolSet:
        tools = {"retail": retail_tools.TOOLS, "airline": airline_tools.TOOLS}[name]
        offered = [schema["function"]["name"] for schema in schemas]
        missing = sorted(set(offered) - set(tools))
        if missing:
            raise ValueError(f"the {name} tools file offers tools turnbench lacks: {missing}")
        return cls(schemas, tools)

    def call(self, db: DatabaseState, name: str, arguments: str | Mapping[str, Any]) -> ToolResult:
        """Run one call on `db` (never raises for anything the model sent)."""
        tool = self._tools.get(name)
        if tool is None or name not in self._parameters:
            return ToolResult(f"Unknown action {name}")
        terminal = name in self.terminating
        given, problem = _arguments(name, arguments)
        if problem is None:
            problem = _mismatch(name, self._parameters[name], given)
        if problem is not None:
            return ToolResult(f"Error: {problem}", terminal)
        before = db.writes
        db.begin()
        try:
            try:
                output = tool(db, **copy_json(given))
            except Exception as error:  # (a tool that raises: upstream's `Error: <exception>`)
                output = f"Error: {error}"
            unkept = next(filter(None, map(storable_problem, db.touched())), None)
            if unkept is not None:
                db.undo()
                return ToolResult(f"Error: {name} would store {unkept}; nothing was changed",
                                  terminal)  # fmt: skip
        finally:
            db.end()
        # (an error may quote an argument, lone surrogates included: the observation is text
        # the next request carries)
        return ToolResult(fix_surrogates(output), terminal, db.writes > before)


def _arguments(name: str, arguments: str | Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    if isinstance(arguments, Mapping):
        return dict(arguments), None
    text = arguments.strip() or "{}"
    if len(text) > MAX_ARGUMENTS_CHARS:
        return {}, f"the arguments of {name} are too long ({len(text)} characters)"
    try:
        value = loads_strict_json(text)
    except NestingError as error:
        return {}, f"the arguments of {name} are {error.msg}"
    except ValueError as error:
        return {}, f"the arguments of {name} are not valid JSON ({error})"
    if not isinstance(value, dict):
        return {}, f"the arguments of {name} must be a JSON object"
    return value, None


def _mismatch(name: str, parameters: Mapping[str, Any], given: Mapping[str, Any]) -> str | None:
    """What is wrong with the arguments for the tool's schema: an argument it does not
    name (upstream's function would raise), one of its `required` missing, or a value of
    another JSON type than its `type` (an integer may be written 2.0, as JSON Schema allows;
    it is passed on as written). Inner values are the tool's to check, as upstream."""
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    unexpected = [key for key in given if key not in properties]
    if unexpected:
        return f"{name} got an unexpected argument {unexpected[0]!r}"
    missing = [key for key in parameters.get("required") or () if key not in given]
    if missing:
        return f"{name} is missing the argument {missing[0]!r}"
    for key, value in given.items():
        expected = (properties[key] or {}).get("type")
        if isinstance(expected, str) and not _typed(value, expected):
            return f"the argument {key!r} of {name} must be of type {expected}"
    return None


def _typed(value: Any, expected: str) -> bool:
    """Whether a JSON value is of a JSON Schema type (a type it does not know: yes)."""
    if isinstance(value, bool):
        return expected == "boolean"
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    types = _TYPES.get(expected)
    return types is None or isinstance(value, types)
