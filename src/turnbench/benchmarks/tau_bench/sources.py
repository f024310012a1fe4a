"""Where a tau-bench domain's data files come from, and how the derived ones are made.

Real users download the files from github.com/sierra-research/tau-bench at the pinned commit
(`COMMIT`). The databases and the policy (upstream's `wiki.md`) are byte copies. Upstream
keeps its task lists and its tools' schemas as Python code; turnbench never runs downloaded
code, so a literal-only reader (`literal`) turns them into data: a task list is a Python
list of `Task(...)`/`Action(...)` calls with literal arguments, and each tool's schema is
the dict literal its `get_info` returns, in the order of the tools package's `ALL_TOOLS`.
Anything else in those places is refused. The result must equal the pinned JSON (its
sha256 is checked as for any data file), and it is written as the shared copies are:
`json.dumps(value, indent=1, ensure_ascii=False)` and a newline.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

from turnbench.benchmarks.datafiles import DataFile
from turnbench.errors import UserError

COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"
REPOSITORY = "/sierra-research/tau-bench"

#: (file name under tau_bench/DOMAIN/, sha256) of every file a domain needs
_FILES: dict[str, dict[str, str]] = {
    "retail": {
        "orders.json": "2598a12586d28f2d6bd16bc86f4c800029b6af18e0abb5c475ef5c869c11ced1",
        "products.json": "a9eabcc1a9742c5f5288c2779acce52b9308423383ed24706bbaf0889f762a0f",
        "users.json": "6f4fd104cc5e80b92166c4035315c31532c6cea52a90dcdf18425ee7f87c2b82",
        "policy.md": "d539fd2a46a8b8dd2e934ff9ed92f43e9f6b56bc7a718db8d2803ba8ad8f6bf7",
        "tasks_test.json": "048c7b103dd09e833ef504f36176b0000bfe8fe4433a27c62104e8cbdeb11563",
        "tasks_train.json": "8d71c440a7c646a55ee918fc2ce1c29f0b7197b7a32dfd86eb0d34e70640ac61",
        "tasks_dev.json": "8f5b1bd17e654b3a3a7fd115e780c67a7fdeee7c1e4cfb3c9177c15bc3a3e2d7",
        "tools.json": "da43b49f4783a9aa82f97f125b2f4c9b56d053cc27e09903ad0ae075026d72ac",
    },
    "airline": {
        "flights.json": "444d7565c68434a3e3fb72efd717f9f9cd5c56dce227f6f56e078f1cb0ed233a",
        "reservations.json": "1cf0bbc58ad984be9de7c24dba6dd27393f94cdbd482d8524f6a54db1f561a8c",
        "users.json": "bd264e2a31e0fa35cdfef8987e70a0dd3776828b582fe90e7a44823a12eb4cea",
        "policy.md": "56c335801c16e26b54f600f9db99eb04d31db477e86eb160341d5c66b796c5c8",
        "tasks_test.json": "e29592b0b04f71c230455d690f5e34f6073c997e3c8db8cc2623068ae73cff3c",
        "tools.json": "d8cfd82569349eb7518f92db41545c58b9a20864b9582c450bedec0257382b7b",
    },
}


def file_key(domain: str, name: str) -> str:
    """A domain file's path in a data directory (and its key in a benchmark's files)."""
    return f"tau_bench/{domain}/{name}"


def _upstream(domain: str, name: str) -> str:
    envs = f"{REPOSITORY}/{COMMIT}/tau_bench/envs/{domain}"
    if name == "policy.md":
        return f"{envs}/wiki.md"
    if name.startswith("tasks_"):
        return f"{envs}/{name.removesuffix('.json')}.py"
    if name == "tools.json":
        return f"{envs}/tools/__init__.py"
    return f"{envs}/data/{name}"


def data_files(domain: str) -> list[DataFile]:
    """The pinned files of one domain (derived ones name their extractor)."""
    files = []
    for name, sha in _FILES[domain].items():
        extract = None
        if name.startswith("tasks_"):
            extract = "turnbench.benchmarks.tau_bench.sources:tasks_json"
        elif name == "tools.json":
            extract = "turnbench.benchmarks.tau_bench.sources:tools_json"
        files.append(
            DataFile(
                path=file_key(domain, name),
                url=_upstream(domain, name),
                sha256=sha,
                extract=extract,
            )
        )
    return files


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
        if any(key is None for key in node.keys):
            raise LiteralError(f"line {node.lineno}: a ** expansion is not a literal")
        return {
            literal(k, calls): literal(v, calls)
            for k, v in zip(node.keys, node.values, strict=True)
        }  # type: ignore[arg-type]
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
    except (SyntaxError, UnicodeDecodeError, ValueError) as error:
        raise LiteralError(f"{what}: not a Python file this reader can read ({error})") from None


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
    tasks = literal(lists[0], {"Task": _task, "Action": _action})
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
                        value = literal(returns[0].value)
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
