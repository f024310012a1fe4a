"""Where a tau-bench domain's data files come from, and how the derived ones are made.

Real users download the files from github.com/sierra-research/tau-bench at a pinned commit;
`sources.json` beside this module lists them for both domains (path, upstream URL, sha256,
extractor), and each domain's benchmark package declares its own with `data_files(domain)`.
The databases and the policy (upstream's `wiki.md`) are byte copies. Upstream keeps its task
lists and its tools' schemas as Python code; turnbench never runs downloaded code, so a
literal-only reader (`literal`) turns them into data: a task list is a Python list of
`Task(...)`/`Action(...)` calls with literal arguments, and each tool's schema is the dict
literal its `get_info` returns, in the order of the tools package's `ALL_TOOLS`. Anything
else in those places is refused. The result must equal the pinned JSON (its sha256 is
checked as for any data file), and it is written as the shared copies are:
`json.dumps(value, indent=1, ensure_ascii=False)` and a newline.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from functools import cache
from typing import Any

from turnbench.benchmarks.base import package_sources
from turnbench.benchmarks.datafiles import DataFile
from turnbench.errors import UserError

DOMAINS = ("retail", "airline")


def file_key(domain: str, name: str) -> str:
    """A domain file's path in a data directory (and its key in a benchmark's files)."""
    return f"tau_bench/{domain}/{name}"


@cache
def _pinned() -> tuple[DataFile, ...]:
    return tuple(package_sources("turnbench.benchmarks.tau_bench"))


def data_files(domain: str) -> list[DataFile]:
    """The pinned files of one domain (derived ones name their extractor): what a domain's
    benchmark package returns from its `data_files`."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown tau-bench domain {domain!r}")
    return [entry for entry in _pinned() if entry.path.startswith(file_key(domain, ""))]


# -- the literal-only reader ---------------------------------------------------------------
class LiteralError(UserError):
    """Upstream's Python file holds something other than the literals it should."""


def literal(node: ast.expr, calls: dict[str, Callable[[dict[str, Any]], Any]] | None = None) -> Any:
    """The value of a literal expression: constants, lists, tuples, dicts, a unary minus on a
    number, an implicit concatenation of strings, and calls of the names in `calls` with
    keyword arguments only (each made into a value by its function). Nothing is evaluated."""
    calls = calls or {}
    if isinstance(node, ast.Constant) and isinstance(
        node.value, str | int | float | bool | type(None)
    ):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [literal(item, calls) for item in node.elts]
    if isinstance(node, ast.Dict):
        keys = [literal(key, calls) if key is not None else None for key in node.keys]
        if not all(isinstance(key, str) for key in keys):
            raise LiteralError(f"line {node.lineno}: a dict's keys must be strings (JSON's)")
        return {key: literal(value, calls) for key, value in zip(keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = literal(node.operand, calls)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, calls), literal(node.right, calls)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in calls
        and not node.args
        and all(keyword.arg is not None for keyword in node.keywords)
    ):
        return calls[node.func.id]({k.arg: literal(k.value, calls) for k in node.keywords})  # type: ignore[misc]
    raise LiteralError(
        f"line {getattr(node, 'lineno', '?')}: {type(node).__name__} is not a literal this "
        "reader accepts (nothing in upstream's file is run)"
    )


def _module(raw: bytes, what: str) -> ast.Module:
    try:
        return ast.parse(raw.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError) as error:
        raise LiteralError(f"{what}: not a Python file this reader can read ({error})") from None


def _value(node: ast.expr, what: str, calls: dict[str, Callable[[dict[str, Any]], Any]]) -> Any:
    """`literal`, with a value nested beyond Python's recursion refused like any other."""
    try:
        return literal(node, calls)
    except RecursionError:
        raise LiteralError(f"{what}: nested too deeply to read") from None


def _task(fields: dict[str, Any]) -> dict[str, Any]:
    allowed = {"annotator", "user_id", "instruction", "actions", "outputs"}
    extra = set(fields) - allowed
    if extra:
        raise LiteralError(f"a Task has unknown fields {sorted(extra)}")
    return {
        "annotator": fields.get("annotator"),
        "user_id": fields.get("user_id"),
        "instruction": fields.get("instruction"),
        "actions": fields.get("actions", []),
        "outputs": fields.get("outputs", []),
    }


def _action(fields: dict[str, Any]) -> dict[str, Any]:
    if set(fields) - {"name", "kwargs"}:
        raise LiteralError(
            f"an Action has unknown fields {sorted(set(fields) - {'name', 'kwargs'})}"
        )
    return {"name": fields.get("name"), "kwargs": fields.get("kwargs", {})}


def read_tasks(raw: bytes) -> list[dict[str, Any]]:
    """Upstream's tasks_SPLIT.py as data: its one list of Task(...) at the top level."""
    module = _module(raw, "the task file")
    lists = [
        node.value
        for node in module.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.List)
    ]
    if len(lists) != 1:
        raise LiteralError(f"the task file should hold one list of tasks, not {len(lists)}")
    tasks = _value(lists[0], "the task file", {"Task": _task, "Action": _action})
    if not all(isinstance(task, dict) for task in tasks):
        raise LiteralError("the task list holds something other than Task(...)")
    return tasks


def dump(value: Any) -> bytes:
    """A derived file as the shared copies are written."""
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def tasks_json(raw: bytes) -> bytes:
    """The extractor `data_files` names for a task file."""
    return dump(read_tasks(raw))


def read_tool_order(raw: bytes) -> list[tuple[str, str]]:
    """(module, class) of every tool in `ALL_TOOLS` of upstream's tools/__init__.py."""
    module = _module(raw, "the tools package")
    modules: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                modules[alias.asname or alias.name] = node.module
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "ALL_TOOLS" for t in node.targets)
            and isinstance(node.value, ast.List)
        ):
            names = [item.id for item in node.value.elts if isinstance(item, ast.Name)]
            if len(names) != len(node.value.elts) or any(n not in modules for n in names):
                raise LiteralError("ALL_TOOLS lists something other than imported tool classes")
            return [(modules[name], name) for name in names]
    raise LiteralError("the tools package has no ALL_TOOLS list")


def read_tool_schema(raw: bytes, class_name: str) -> dict[str, Any]:
    """The dict literal `get_info` of tool class `class_name` returns."""
    module = _module(raw, f"the module of {class_name}")
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "get_info":
                    returns = [s for s in item.body if isinstance(s, ast.Return)]
                    if len(returns) == 1 and returns[0].value is not None:
                        value = _value(returns[0].value, f"{class_name}.get_info", {})
                        if isinstance(value, dict):
                            return value
    raise LiteralError(f"{class_name}.get_info does not return one dict literal")


def tools_json(raw: bytes, fetch: Callable[[str], bytes]) -> bytes:
    """The extractor of tools.json: ALL_TOOLS' order from the package's __init__.py (`raw`),
    each schema from its module (`fetch(name)`: the module's file beside it)."""
    return dump(
        [read_tool_schema(fetch(f"{module}.py"), name) for module, name in read_tool_order(raw)]
    )


tools_json.needs_fetch = True  # type: ignore[attr-defined]
