"""AgentDojo's own runner against turnbench's CLI, one scripted agent for both: issue 43's
first performance goal (turnbench at least 5x sooner, every verdict equal).

One scripted agent (turnbench.benchmarks.agentdojo.fakes, `--modes`: obey and/or
ground_truth) runs in a process of its own (`spawn`: no request bodies kept, counts only),
answering after `--latency` seconds. Against it, in one sitting, `--rounds` alternating
rounds of:

(a) upstream's runner: `agentdojo_upstream_baseline.run_once` (the package's
    `benchmark_suite`, its `OpenAILLM` for gpt-4o-2024-05-13, its TraceLogger writing every
    file, one conversation at a time) with `--attack`: the suite's pairs, then each injection
    task alone (banking: 144 + 9 = 153 conversations); wall and CPU of the call (in this
    process);
(b) turnbench's CLI as a child process (`python -m turnbench run --benchmark agentdojo
    -B suites=S -B attack=A --model openai/gpt-4o-2024-05-13 --model-base-url URL
    --concurrency C --no-progress`): the pairs and each user task alone (144 + 16 = 160);
    wall of the whole command, its `wall_seconds` (results.json), and the child's CPU
    (`os.wait4`).

Requests are the agent's own count (its /stats endpoint, before and after each run). Every
pair's (utility, security) is compared between the two (turnbench's from the sample records
of log.jsonl, upstream's from its SuiteResults), and once per mode the user tasks alone
against an attack-less run of upstream's runner. Printed: medians, the ratio of medians
(upstream wall / turnbench wall), the same per conversation (the two hold different sets),
and then, outside the timed rounds:

- where turnbench's wall time goes, from its log's time stamps (start-up until the run's
  clock starts, the conversations, results and exit), beside agentdojo's import alone;
- where turnbench's CPU goes: one more turnbench run under cProfile with a CPU clock
  (`--profile`), the CPU of its parts (the environment: load+inject, init+copy, tools,
  checks; the outcome's extras: payload arrival, environment diff; requests; the log);
- the environment's CPU per conversation of the suite, isolated (agentdojo_env_cpu.measure).

    TURNBENCH_DATA_DIR=/work/shared/data .venv/bin/python benchmarks/agentdojo_fakes.py \\
        --rounds 3 --modes obey,ground_truth --profile
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentdojo_upstream_baseline import MODEL, run_once, stats  # (this folder)
from turnbench.benchmarks.agentdojo import upstream
from turnbench.benchmarks.agentdojo.fakes import spawn
from turnbench.journal.threads import with_whole_requests

Verdicts = dict[tuple[str, str | None], tuple[bool, bool | None]]


def turnbench_command(
    out: Path, base_url: str, suite: str, attack: str, version: str | None, concurrency: str
) -> list[str]:
    command = [
        "run", "--benchmark", "agentdojo", "-B", f"suites={suite}", "-B", f"attack={attack}",
        "--model", f"openai/{MODEL}", "--model-base-url", base_url, "--out", str(out),
        "--concurrency", concurrency, "--no-progress",
    ]  # fmt: skip
    if version:
        command += ["-B", f"version={version}"]
    return command


def child(command: list[str], env: dict[str, str], logs: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one child process, its output kept in `logs`.*"""
    with open(f"{logs}.stdout", "wb") as stdout, open(f"{logs}.stderr", "wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr)
        _, status, used = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"exit {process.returncode}: {' '.join(command)}\n"
                 f"{Path(f'{logs}.stderr').read_text()[-3000:]}")  # fmt: skip
    return wall, used.ru_utime + used.ru_stime


def turnbench_verdicts(out: Path) -> Verdicts:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    found: Verdicts = {}
    for record in with_whole_requests(json.loads(line) for line in lines):
        if record["kind"] == "sample":
            key = (record["user_task_id"], record["injection_task_id"])
            found[key] = (bool(record["utility"]), record["security"])
    return found


def phases(out: Path, spawned: float, wall: float) -> dict[str, float]:
    """Where a turnbench command's wall time went, from its log's time stamps: start-up
    until the run's clock starts (the config record: imports, agentdojo's among them, and
    the benchmark's suites and attack built), then the first request sent, the
    conversations (first request sent to last conversation scored), and results and exit."""
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    config = next(r["ts"] for r in records if r["kind"] == "config")
    first_sent = min(r["ts"] - r["latency_s"] for r in records if r["kind"] == "answer")
    last_scored = max(r["ts"] for r in records if r["kind"] == "sample")
    return {
        "start_up": round(config - spawned, 2),
        "to_first_request": round(first_sent - config, 2),
        "conversations": round(last_scored - first_sent, 2),
        "results_and_exit": round(spawned + wall - last_scored, 2),
    }


def upstream_verdicts(results: dict[str, Any], attacked: bool) -> Verdicts:
    """Upstream's SuiteResults as the same keys: a pair's (utility, security); a user task
    alone (an attack-less run, keyed (task, "")) as (utility, None)."""
    found: Verdicts = {}
    for (user_task, injection_task), utility in results["utility_results"].items():
        if attacked:
            security = results["security_results"][(user_task, injection_task)]
            found[(user_task, injection_task)] = (bool(utility), bool(security))
        else:
            found[(user_task, None)] = (bool(utility), None)
    return found


def differences(ours: Verdicts, theirs: Verdicts) -> dict[str, Any]:
    common = sorted(set(ours) & set(theirs), key=str)
    differ = [f"{u}|{i}: turnbench {ours[(u, i)]}, upstream {theirs[(u, i)]}"
              for (u, i) in common if ours[(u, i)] != theirs[(u, i)]]  # fmt: skip
    return {"compared": len(common), "differ": len(differ), "listed": differ[:10]}


def median(values: list[float]) -> float:
    return statistics.median(values)


# -- the profile -----------------------------------------------------------------------------

#: (label, file's tail, function) of the parts of a conversation's CPU read from the profile
PARTS = (
    ("environment: load+inject (envcache)", "agentdojo/envcache.py", "environment"),
    ("environment: load+inject+init+copy", "agentdojo/upstream.py", "environment"),
    ("tools (upstream's executor)", "agentdojo/upstream.py", "run_tool_call"),
    ("checks (upstream's)", "agentdojo/upstream.py", "check"),
    ("outcome: payload arrival", "agentdojo/task.py", "_payload"),
    ("outcome: environment diff", "agentdojo/upstream.py", "environment_diff"),
    ("score (checks + outcome)", "agentdojo/task.py", "score"),
    ("the task's tool schemas", "agentdojo/task.py", "tools"),
    ("benchmark set-up (suites, pipeline, attack)", "agentdojo/benchmark.py", "__init__"),
    ("attack injections (candidates)", "agentdojo/upstream.py", "injections"),
)

#: where own time (tottime) is summed by file: the first (label, part of the path) matching
AREAS = (
    ("agentdojo package", "site-packages/agentdojo/"),
    ("pydantic", "site-packages/pydantic"),
    ("yaml", "site-packages/yaml/"),
    ("deepdiff", "site-packages/deepdiff/"),
    ("openai / httpx SDK", "site-packages/openai/"),
    ("aiohttp", "site-packages/aiohttp/"),
    ("turnbench agentdojo", "turnbench/benchmarks/agentdojo/"),
    ("turnbench journal (log)", "turnbench/journal/"),
    ("turnbench engine", "turnbench/engine/"),
    ("turnbench other", "turnbench/"),
    ("asyncio", "asyncio/"),
    ("json", "json/"),
    ("other site-packages", "site-packages/"),
    ("builtins and stdlib", ""),
)


def profile_child(out_file: str, argv: list[str]) -> None:
    """Run turnbench's CLI in this process under cProfile with a CPU clock."""
    import cProfile

    sys.argv = ["turnbench", *argv]
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        from turnbench.cli import main  # (not entry: its os._exit would skip the dump)

        main()
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
    finally:
        profiler.disable()
        profiler.dump_stats(out_file)


def read_profile(path: Path, conversations: int) -> dict[str, Any]:
    found = pstats.Stats(str(path))
    table: dict[tuple[str, int, str], Any] = found.stats  # type: ignore[attr-defined]
    total = max(ct for (_, _, _, ct, _) in table.values())
    parts: dict[str, float] = {}
    for label, tail, name in PARTS:
        parts[label] = sum(
            ct for (file, _, func), (_, _, _, ct, _) in table.items()
            if file.endswith(tail) and func == name
        )  # fmt: skip
    areas: dict[str, float] = dict.fromkeys((label for label, _ in AREAS), 0.0)
    for (file, _, _), (_, _, tt, _, _) in table.items():
        areas[next(label for label, part in AREAS if part in file)] += tt
    top = sorted(
        ((tt, f"{Path(file).name}:{line} {func}") for (file, line, func), (_, _, tt, _, _) in
         table.items()),
        reverse=True,
    )[:15]  # fmt: skip
    return {
        "profiled_cpu_seconds": round(total, 2),
        "parts_cpu_seconds": {k: round(v, 3) for k, v in parts.items()},
        "parts_ms_per_conversation": {
            k: round(1000 * v / conversations, 2) for k, v in parts.items()
        },
        "own_cpu_seconds_by_area": {
            k: round(v, 2) for k, v in sorted(areas.items(), key=lambda kv: -kv[1])
        },
        "top_own_time": [f"{tt:.3f} s {where}" for tt, where in top],
    }


# -- the sitting -----------------------------------------------------------------------------


def sitting(args: argparse.Namespace, mode: str, work: Path, env: dict[str, str]) -> dict:
    version = args.version or upstream.default_version()
    attack = args.attack
    extra = ["--version", version, "--attack", attack]
    server, base_url = spawn(mode, args.latency, work, *extra)  # type: ignore[arg-type]
    rows: dict[str, list[dict[str, Any]]] = {"upstream": [], "turnbench": []}
    checks: list[dict[str, Any]] = []
    try:
        for round_number in range(args.rounds):
            logdir = work / f"upstream-{round_number}"
            before = stats(base_url)
            wall, cpu, results = run_once(args.suite, version, attack, base_url, logdir)
            after = stats(base_url)
            theirs = upstream_verdicts(results, attacked=True)
            rows["upstream"].append({
                "wall": wall, "cpu": cpu,
                "conversations": after["openings"] - before.get("openings", 0),
                "requests": after["requests"] - before.get("requests", 0),
                "errors": after.get("errors", 0) - before.get("errors", 0),
                "pairs": len(theirs),
                "injection_tasks_alone": len(results["injection_tasks_utility_results"]),
            })  # fmt: skip
            out = work / f"turnbench-{round_number}"
            command = turnbench_command(
                out, base_url, args.suite, attack, args.version, args.concurrency
            )
            before = stats(base_url)
            spawned = time.time()
            wall, cpu = child([sys.executable, "-m", "turnbench", *command], env, out)
            after = stats(base_url)
            ours = turnbench_verdicts(out)
            summary = json.loads((out / "results.json").read_text("utf-8"))
            rows["turnbench"].append({
                "wall": wall, "cpu": cpu, "wall_seconds": summary.get("wall_seconds"),
                "conversations": len(ours),
                "requests": after["requests"] - before.get("requests", 0),
                "errors": after.get("errors", 0) - before.get("errors", 0),
                "phases": phases(out, spawned, wall),
            })  # fmt: skip
            pairs = {k: v for k, v in ours.items() if k[1] is not None}
            checks.append({"round": round_number, **differences(pairs, theirs)})
            print(json.dumps({"mode": mode, "round": round_number,
                              "upstream": rows["upstream"][-1],
                              "turnbench": rows["turnbench"][-1],
                              "pairs_compared": checks[-1]}, default=str), flush=True)  # fmt: skip
        # agentdojo's import alone, as a command of its own (what turnbench's start-up pays)
        imported = [sys.executable, "-c", "import agentdojo.task_suite.load_suites"]
        import_wall, import_cpu = child(imported, env, work / "import-agentdojo")
        # the user tasks alone, against upstream's attack-less run (once)
        _, _, plain = run_once(args.suite, version, None, base_url, work / "upstream-none")
        alone = {k: v for k, v in ours.items() if k[1] is None}
        alone_check = differences(alone, upstream_verdicts(plain, attacked=False))
        profile: dict[str, Any] | None = None
        if args.profile:
            out = work / "turnbench-profiled"
            command = turnbench_command(
                out, base_url, args.suite, attack, args.version, args.concurrency
            )
            prof = work / "turnbench.prof"
            profiled = [sys.executable, __file__, "--profile-child", str(prof), *command]
            wall, cpu = child(profiled, env, out)
            profile = {"wall": round(wall, 2), "cpu": round(cpu, 2),
                       **read_profile(prof, len(turnbench_verdicts(out)))}  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    up, tb = rows["upstream"], rows["turnbench"]
    up_wall, tb_wall = median([r["wall"] for r in up]), median([r["wall"] for r in tb])
    up_n, tb_n = up[0]["conversations"], tb[0]["conversations"]
    tb_inner = median([r["wall_seconds"] for r in tb if r["wall_seconds"] is not None])
    return {
        "mode": mode,
        "suite": args.suite,
        "version": version,
        "attack": attack,
        "latency": args.latency,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "upstream": {
            "walls": [round(r["wall"], 2) for r in up],
            "median_wall": round(up_wall, 2),
            "median_cpu": round(median([r["cpu"] for r in up]), 2),
            "conversations": up_n,
            "requests": sorted({r["requests"] for r in up}),
            "errors": sum(r["errors"] for r in up),
            "pairs": up[0]["pairs"],
            "injection_tasks_alone": up[0]["injection_tasks_alone"],
        },
        "turnbench": {
            "walls": [round(r["wall"], 2) for r in tb],
            "median_wall": round(tb_wall, 2),
            "median_wall_seconds_of_results": round(tb_inner, 2),
            "median_child_cpu": round(median([r["cpu"] for r in tb]), 2),
            "conversations": tb_n,
            "requests": sorted({r["requests"] for r in tb}),
            "errors": sum(r["errors"] for r in tb),
            "median_phases": {
                name: round(median([r["phases"][name] for r in tb]), 2) for name in tb[0]["phases"]
            },
            "agentdojo_import_alone": {"wall": round(import_wall, 2), "cpu": round(import_cpu, 2)},
        },
        "ratio_of_median_walls": round(up_wall / tb_wall, 2),
        "ratio_per_conversation": round((up_wall / up_n) / (tb_wall / tb_n), 2),
        "ratio_vs_results_wall_seconds": round(up_wall / tb_inner, 2),
        "pairs_compared": checks,
        "user_tasks_alone_compared": alone_check,
        "profile": profile,
    }


def main() -> None:
    if sys.argv[1:2] == ["--profile-child"]:
        profile_child(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--version", help="default: the package's default")
    parser.add_argument("--attack", default="important_instructions")
    parser.add_argument("--modes", default="obey,ground_truth")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="1000", help="turnbench's --concurrency")
    parser.add_argument("--profile", action="store_true", help="one more turnbench run, profiled")
    parser.add_argument("--env-cpu", action="store_true", help="agentdojo_env_cpu.measure too")
    parser.add_argument("--out", type=Path, help="write the figures here (JSON)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    figures = []
    print(json.dumps({"loadavg_at_start": os.getloadavg()}))
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            found = sitting(args, mode, Path(tmp), env)
        figures.append(found)
        print(json.dumps(found, indent=1))
    if args.env_cpu:
        from agentdojo_env_cpu import measure

        bench = upstream.load(args.version)
        figures.append({"env_cpu": measure(bench.suite(args.suite), args.attack)})
        print(json.dumps(figures[-1]))
    print(json.dumps({"loadavg_at_end": os.getloadavg()}))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
