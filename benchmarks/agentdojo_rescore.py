"""Re-scoring a folder of recorded AgentDojo runs: `turnbench import --format agentdojo`
against a naive re-scorer that calls the package the obvious way per file (issue 43's second
performance goal: turnbench at least 2x faster, every verdict the package's own).

The folder is one pipeline's, as upstream's runner and logger write it
(benchmarks/agentdojo_logger_folder.py makes one): `SUITE/USER_TASK/ATTACK/INJECTION.json`,
`SUITE/user_task_N/none/none.json`, `SUITE/injection_task_M/none/none.json`.

The naive re-scorer, per file: upstream's `load_task_results`, `get_suite(version, suite)`,
`suite.load_and_inject_default_environment(recorded injections)` (a YAML parse of the whole
suite), the user task's `init_environment`, the deep copy the checks compare against, a new
`FunctionsRuntime(suite.tools)`, every recorded reply's tool calls through a new
`ToolsExecutor` (in order, on that environment), then `suite._check_task_result` of the user
task and of the injection task on the recorded final output and the recorded calls (what
upstream's `run_task_with_pipeline` does after its pipeline has run). It runs as a child
process (`--naive-child`), like turnbench's CLI, so both whole commands pay their imports;
each also reports its loop alone.

In one sitting, `--rounds` alternating rounds of (a) the naive re-scorer on the files
turnbench imports (pairs and user tasks alone: 726 in v1) and (b) `turnbench import --format
agentdojo --benchmark agentdojo FOLDER -B attack=A --out OUT`; then once the naive
re-scorer on the injection tasks alone (27 in v1, which turnbench does not import) and one
profiled turnbench import (`--profile`: where its time goes). Verdicts are compared three
ways: turnbench's replay, the naive replay, and the files' recorded verdicts.

    TURNBENCH_DATA_DIR=/work/shared/data .venv/bin/python benchmarks/agentdojo_rescore.py \\
        /tmp/agentdojo-runs/obey/gpt-4o-2024-05-13 --rounds 3 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from turnbench.journal.threads import with_whole_requests

Key = tuple[str, str, str | None]  # (suite, user task, injection task)


def files_of(folder: Path, attack: str, alone: bool) -> list[Path]:
    """The pairs of `attack` and the user tasks alone (alone=False: what turnbench imports),
    or the injection tasks run alone (alone=True)."""
    found: list[Path] = []
    for suite in sorted(p for p in folder.iterdir() if p.is_dir()):
        for task in sorted(p for p in suite.iterdir() if p.is_dir()):
            if task.name.startswith("injection_task_") == alone:
                found += sorted((task / "none").glob("none.json"))
                if not alone:
                    found += sorted((task / attack).glob("*.json"))
    return found


def naive_rescore(folder: Path, paths: list[Path]) -> dict[str, Any]:
    """Each file re-scored by calling the package the obvious way (see the docstring)."""
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
    from agentdojo.base_tasks import BaseUserTask
    from agentdojo.benchmark import load_task_results
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suite
    from agentdojo.task_suite.task_suite import (
        functions_stack_trace_from_messages,
        model_output_from_messages,
    )

    verdicts: dict[str, Any] = {}
    started, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        suite_name, task_id, attack, name = path.relative_to(folder).with_suffix("").parts
        results = load_task_results(folder.name, suite_name, task_id, attack, name, folder.parent)
        version = json.loads(path.read_text("utf-8")).get("benchmark_version") or "v1.2.2"
        suite = get_suite(version, suite_name)
        if task_id.startswith("user_task_"):
            task: Any = suite.get_user_task_by_id(task_id)
        else:
            task = suite.get_injection_task_by_id(task_id)
        injection = None
        if results.injection_task_id is not None:
            injection = suite.get_injection_task_by_id(results.injection_task_id)
        environment = suite.load_and_inject_default_environment(results.injections)
        if isinstance(task, BaseUserTask):
            environment = task.init_environment(environment)
        pre = environment.model_copy(deep=True)
        runtime = FunctionsRuntime(suite.tools)
        for message in results.messages:
            if message["role"] == "assistant" and message["tool_calls"]:
                ToolsExecutor().query("", runtime, environment, [message])
        output = model_output_from_messages(results.messages)
        calls = functions_stack_trace_from_messages(results.messages)
        utility = suite._check_task_result(task, output or [], pre, environment, calls)
        security = None
        if injection is not None:
            security = suite._check_task_result(injection, output or [], pre, environment, calls)
        verdicts[str(path.relative_to(folder))] = {
            "utility": bool(utility),
            "security": None if security is None else bool(security),
            "recorded_utility": results.utility,
            "recorded_security": results.security if injection is not None else None,
        }
    return {
        "loop_seconds": time.perf_counter() - started,
        "loop_cpu_seconds": time.process_time() - cpu,
        "verdicts": verdicts,
    }


def naive_child(folder: str, attack: str, alone: str, out: str) -> None:
    import agentdojo.task_suite.load_suites  # noqa: F401  (the package's import, timed)

    root = Path(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = naive_rescore(root, files_of(root, attack, alone == "alone"))
    Path(out).write_text(json.dumps(found))


def turnbench_verdicts(out: Path) -> dict[Key, dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    found: dict[Key, dict[str, Any]] = {}
    for record in with_whole_requests(json.loads(line) for line in lines):
        if record["kind"] == "sample":
            key = (record["suite"], record["user_task_id"], record["injection_task_id"])
            found[key] = {
                k: record.get(k)
                for k in ("utility", "security", "recorded_utility", "recorded_security")
            }
    return found


def key_of(relative: str) -> Key:
    suite, task, _, name = Path(relative).with_suffix("").parts
    return suite, task, None if name == "none" else name


def compare(ours: dict[Key, dict[str, Any]], naive: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    def pair(v: dict[str, Any], prefix: str = "") -> tuple[Any, Any]:
        return v[f"{prefix}utility"], v[f"{prefix}security"]

    common = sorted(set(ours) & set(naive), key=str)
    listing = {
        "turnbench_vs_naive": [k for k in common if pair(ours[k]) != pair(naive[k])],
        "turnbench_vs_recorded": [k for k in ours if pair(ours[k]) != pair(ours[k], "recorded_")],
        "naive_vs_recorded": [k for k in naive if pair(naive[k]) != pair(naive[k], "recorded_")],
        "recorded_turnbench_vs_naive": [
            k for k in common if pair(ours[k], "recorded_") != pair(naive[k], "recorded_")
        ],
    }
    return {
        "compared": len(common),
        "only_turnbench": len(set(ours) - set(naive)),
        "only_naive": len(set(naive) - set(ours)),
        **{f"{name}_differ": len(keys) for name, keys in listing.items()},
        "listed": {
            name: ["/".join(str(p) for p in k) + f" {ours.get(k) or naive.get(k)}" for k in keys]
            for name, keys in listing.items()
            if keys
        },
    }


def main() -> None:
    if sys.argv[1:2] == ["--naive-child"]:
        naive_child(*sys.argv[2:6])
        return
    from agentdojo_fakes import child, read_profile  # (this folder; not in the naive child)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="one pipeline's runs (SUITE/USER_TASK/...)")
    parser.add_argument("--attack", default="important_instructions")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", type=Path, help="write the figures here (JSON)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    folder = args.folder.resolve()
    counts = {
        "imported_files": len(files_of(folder, args.attack, False)),
        "injection_tasks_alone": len(files_of(folder, args.attack, True)),
    }
    print(json.dumps({"loadavg_at_start": os.getloadavg(), **counts}), flush=True)
    rows: dict[str, list[dict[str, Any]]] = {"naive": [], "turnbench": []}
    me = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for number in range(args.rounds):
            found = work / f"naive-{number}.json"
            command = [sys.executable, me, "--naive-child", str(folder), args.attack, "pairs",
                       str(found)]  # fmt: skip
            wall, cpu = child(command, env, work / f"naive-{number}")
            naive = json.loads(found.read_text("utf-8"))
            rows["naive"].append({"wall": wall, "cpu": cpu, "loop": naive["loop_seconds"],
                                  "loop_cpu": naive["loop_cpu_seconds"],
                                  "files": len(naive["verdicts"])})  # fmt: skip
            out = work / f"turnbench-{number}"
            command = [sys.executable, "-m", "turnbench", "import", "--format", "agentdojo",
                       "--benchmark", "agentdojo", str(folder), "-B", f"attack={args.attack}",
                       "--out", str(out)]  # fmt: skip
            wall, cpu = child(command, env, out)
            ours = turnbench_verdicts(out)
            rows["turnbench"].append({"wall": wall, "cpu": cpu, "conversations": len(ours)})
            print(json.dumps({"round": number, "naive": rows["naive"][-1],
                              "turnbench": rows["turnbench"][-1]}), flush=True)  # fmt: skip
        theirs = {key_of(k): v for k, v in naive["verdicts"].items()}
        results = json.loads((out / "results.json").read_text("utf-8"))
        found = work / "naive-alone.json"
        command = [sys.executable, me, "--naive-child", str(folder), args.attack, "alone",
                   str(found)]  # fmt: skip
        alone_wall, alone_cpu = child(command, env, work / "naive-alone")
        alone = json.loads(found.read_text("utf-8"))
        alone_differ = [k for k, v in alone["verdicts"].items()
                        if v["utility"] != v["recorded_utility"]]  # fmt: skip
        profile = None
        if args.profile:
            out = work / "turnbench-profiled"
            prof = work / "import.prof"
            command = [sys.executable, str(Path(me).with_name("agentdojo_fakes.py")),
                       "--profile-child", str(prof), "import", "--format", "agentdojo",
                       "--benchmark", "agentdojo", str(folder), "-B", f"attack={args.attack}",
                       "--out", str(out)]  # fmt: skip
            wall, cpu = child(command, env, out)
            profile = {"wall": round(wall, 2), "cpu": round(cpu, 2),
                       **read_profile(prof, len(turnbench_verdicts(out)))}  # fmt: skip
    naive_wall = statistics.median(r["wall"] for r in rows["naive"])
    naive_loop = statistics.median(r["loop"] for r in rows["naive"])
    ours_wall = statistics.median(r["wall"] for r in rows["turnbench"])
    figures = {
        "folder": str(folder),
        "attack": args.attack,
        **counts,
        "naive": {
            "walls": [round(r["wall"], 2) for r in rows["naive"]],
            "median_wall": round(naive_wall, 2),
            "median_loop": round(naive_loop, 2),
            "median_cpu": round(statistics.median(r["cpu"] for r in rows["naive"]), 2),
            "files": rows["naive"][0]["files"],
        },
        "turnbench_import": {
            "walls": [round(r["wall"], 2) for r in rows["turnbench"]],
            "median_wall": round(ours_wall, 2),
            "median_cpu": round(statistics.median(r["cpu"] for r in rows["turnbench"]), 2),
            "conversations": rows["turnbench"][0]["conversations"],
            "replay_differs_in_results": len(results.get("replay_differs") or []),
        },
        "ratio_of_median_walls": round(naive_wall / ours_wall, 2),
        "ratio_naive_loop_alone_vs_turnbench_whole": round(naive_loop / ours_wall, 2),
        "naive_injection_tasks_alone": {
            "files": len(alone["verdicts"]),
            "wall": round(alone_wall, 2),
            "loop": round(alone["loop_seconds"], 2),
            "cpu": round(alone_cpu, 2),
            "differ_from_recorded": alone_differ,
        },
        "verdicts": compare(ours, theirs),
        "profile": profile,
        "loadavg_at_end": os.getloadavg(),
    }
    print(json.dumps(figures, indent=1, default=str))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
