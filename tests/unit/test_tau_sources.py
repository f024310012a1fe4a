"""tau-bench's data for real users: downloaded at the pinned commit, the task lists and tool
schemas made from upstream's Python files by a reader of literals that never runs them, and
equal byte for byte to the shared copies. The upstream files are written here in upstream's
layout from the shared JSON (no upstream file is committed), served on 127.0.0.1, and
downloaded through the same path a user's `turnbench data download` takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from turnbench.benchmarks.tau_bench.sources import (
    LiteralError,
    data_files,
    read_tasks,
    tasks_json,
    tools_json,
)
from turnbench.testing.fake_server import FakeServer

COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"


def _py(value: Any, indent: str = "") -> str:
    """A value as Python source in upstream's style (literals; tasks as calls)."""
    inner = indent + "    "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_py(v, inner)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + f"\n{indent}}}" if items else "{}"
    if isinstance(value, list):
        items = [f"{inner}{_py(v, inner)}," for v in value]
        return "[\n" + "\n".join(items) + f"\n{indent}]" if items else "[]"
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def tasks_py(tasks: list[dict[str, Any]]) -> bytes:
    """A task list as upstream's tasks_SPLIT.py writes it: TASKS = [Task(...), ...]."""
    out = ["from tau_bench.types import Action, Task", "", "TASKS = ["]
    for task in tasks:
        actions = ", ".join(
            f"Action(name={json.dumps(a['name'])}, kwargs={_py(a['kwargs'], '        ')})"
            for a in task["actions"]
        )
        fields = [
            f"annotator={_py(task['annotator'])}",
            f"user_id={_py(task['user_id'])}",
            f"instruction={_py(task['instruction'])}",
            f"actions=[{actions}]",
        ]
        if task["outputs"]:  # (upstream leaves `outputs` out where there are none)
            fields.append(f"outputs={_py(task['outputs'])}")
        out.append("    Task(\n        " + ",\n        ".join(fields) + ",\n    ),")
    out.append("]")
    return ("\n".join(out) + "\n").encode("utf-8")


def _class(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def tools_package(schemas: list[dict[str, Any]]) -> dict[str, bytes]:
    """tools/__init__.py (imports, ALL_TOOLS) and one module per tool, as upstream has them."""
    names = [schema["function"]["name"] for schema in schemas]
    init = [f"from .{n} import {_class(n)}" for n in sorted(names)]
    init += ["", "", "ALL_TOOLS = ["] + [f"    {_class(n)}," for n in names] + ["]"]
    files = {"__init__.py": ("\n".join(init) + "\n").encode()}
    for schema in schemas:
        name = schema["function"]["name"]
        files[f"{name}.py"] = (
            "import json\nfrom tau_bench.envs.tool import Tool\n\n\n"
            f"class {_class(name)}(Tool):\n    @staticmethod\n"
            "    def invoke(data, **kwargs):\n        return json.dumps(data)\n\n"
            "    @staticmethod\n    def get_info():\n"
            f"        return {_py(schema, '        ')}\n"
        ).encode()
    return files


@pytest.mark.parametrize(
    ("domain", "split"), [("retail", "test"), ("retail", "train"), ("retail", "dev"),
                          ("airline", "test")],
)  # fmt: skip
def test_a_task_file_in_upstreams_layout_reads_to_the_pinned_json(data_dir, domain, split):
    pinned = (data_dir / "tau_bench" / domain / f"tasks_{split}.json").read_bytes()
    source = tasks_py(json.loads(pinned))
    assert tasks_json(source) == pinned


def test_the_tool_schemas_read_to_the_pinned_json_in_all_tools_order(data_dir):
    for domain in ("retail", "airline"):
        pinned = (data_dir / "tau_bench" / domain / "tools.json").read_bytes()
        files = tools_package(json.loads(pinned))
        assert tools_json(files["__init__.py"], files.__getitem__) == pinned


@pytest.mark.parametrize(
    "body",
    [
        'TASKS = [Task(user_id=__import__("os").system("touch /tmp/pwned"))]',
        "TASKS = [Task(instruction=f'{open(\"/etc/passwd\").read()}')]",
        "TASKS = [Task(**{'user_id': 'x'})]",
        "TASKS = [Task('positional')]",
        "TASKS = [Evil(user_id='x')]",
        "TASKS = [Task(user_id='x', extra_field=1)]",
        "TASKS = [1 + 2]",
        "TASKS = []\nMORE = []",
        "TASKS = [Task(user_id='x', actions=[Action(name='a', kwargs={[1]: 2})])]",
        "TASKS = [Task(actions=[Action(name='a', kwargs={**globals()})])]",
        "TASKS = [Task(instruction=" + " + ".join(["'a'"] * 20_000) + ")]",
        "TASKS = [Task(instruction=" + "(" * 300 + "'a'" + ")" * 300 + ")]",
    ],
)
def test_anything_but_literals_is_refused_and_nothing_runs(body, tmp_path):
    with pytest.raises(LiteralError):
        read_tasks(body.encode())
    assert not Path("/tmp/pwned").exists()


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_the_pins_are_the_shared_copies_and_all_a_domain_reads(data_dir, domain):
    """sources.json pins every file a domain reads (the golden replays are the tests' own),
    each with the manifest's sha256, from upstream's repository at the pinned commit."""
    manifest = json.loads((data_dir / "tau_bench" / "manifest.json").read_text())[domain]
    pinned = {entry.path: entry for entry in data_files(domain)}
    expected = {
        f"tau_bench/{domain}/{name}": file["sha256"]
        for name, file in manifest["files"].items()
        if name != "golden_replays.jsonl"
    }
    assert {path: entry.sha256 for path, entry in pinned.items()} == expected
    upstream = f"/sierra-research/tau-bench/{COMMIT}/tau_bench/envs/{domain}/"
    assert all(entry.url.startswith(upstream) for entry in pinned.values())
    derived = {path for path, entry in pinned.items() if entry.extract}
    assert derived == {path for path in pinned if "/tasks_" in path or path.endswith("tools.json")}


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_a_user_downloads_a_domain_with_its_derived_files(env, data_dir, tmp_path, domain):
    """`turnbench data download` from a server laid out as upstream at the pinned commit:
    the byte copies, wiki.md as policy.md, the task lists and tool schemas made from Python
    files; every file equals the shared copy."""
    served: dict[str, bytes] = {}
    for entry in data_files(domain):
        local = (data_dir / entry.path).read_bytes()
        if "/tasks_" in entry.path:
            served[entry.url] = tasks_py(json.loads(local))
        elif entry.path.endswith("tools.json"):
            folder = entry.url.rsplit("/", 1)[0]
            for name, data in tools_package(json.loads(local)).items():
                served[f"{folder}/{name}"] = data
        else:
            served[entry.url] = local
    assert "/sierra-research/tau-bench/59a200c6d575d595120f1cb70fea53cef0632f6b/tau_bench/" \
        f"envs/{domain}/wiki.md" in served  # fmt: skip
    environment = {k: v for k, v in env.items() if k != "TURNBENCH_DATA_DIR"}
    with FakeServer(files=served) as server:
        environment["TURNBENCH_DOWNLOAD_BASE_URL"] = f"http://127.0.0.1:{server.port}"
        done = run_cli(["data", "download", "--benchmark", f"tau-bench-{domain}"], environment)
    assert done.returncode == 0, done.stdout + done.stderr
    cache = Path(environment["XDG_CACHE_HOME"]) / "turnbench" / "data"
    for entry in data_files(domain):
        assert (cache / entry.path).read_bytes() == (data_dir / entry.path).read_bytes()
