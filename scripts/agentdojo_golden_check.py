"""AgentDojo's ground truth run through turnbench, against upstream's own ground-truth pipeline,
for every suite of every benchmark version: one line per (version, suite).

A scripted agent (turnbench.benchmarks.agentdojo.fakes, mode ground_truth, every call of a
task's ground truth in one reply, then its ground-truth output) serves turnbench's run of
the suite without attack (the Python API, the same path as the command line). For each user
task, turnbench's utility verdict is compared with upstream's for its GroundTruthPipeline
(`TaskSuite.run_task_with_pipeline`), and the tool results the agent received with the ones
upstream's pipeline produced for the same calls (timestamps of today masked: tools stamp
what they create).

    TURNBENCH_DATA_DIR=../shared/data .venv/bin/python scripts/agentdojo_golden_check.py \\
        [--versions v1,v1.2.2] [--suites banking,slack]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import turnbench
from turnbench.benchmarks.agentdojo import upstream
from turnbench.benchmarks.agentdojo.fakes import (
    AgentServer,
    ScriptedAgent,
    masked,
    upstream_ground_truth,
)


def check(version: str, suite: upstream.Suite, bench: upstream.Benchmark) -> dict[str, Any]:
    started = time.perf_counter()
    agent = ScriptedAgent("ground_truth", benchmark=bench, batch="all")
    with tempfile.TemporaryDirectory() as tmp, AgentServer(agent) as server:
        result = turnbench.evaluate(
            "openai/gpt-4o-2024-05-13",
            benchmark="agentdojo",
            model_base_url=server.base_url,
            benchmark_options={"suites": suite.name, "attack": "none", "version": version},
            out=Path(tmp) / "run",
        )
        requests = list(server.requests)
        lines = (Path(tmp) / "run" / "log.jsonl").read_text("utf-8").splitlines()
    ours = {
        r["user_task_id"]: r["utility"] for r in map(json.loads, lines) if r.get("kind") == "sample"
    }
    prompts = {suite.prompt(task): task for task in suite.user_task_ids()}
    received: dict[str, list[str]] = defaultdict(list)
    for request in requests:
        task = prompts[request["messages"][1]["content"]]
        tools = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        if len(tools) >= len(received[task]):
            received[task] = tools
    default = suite.upstream.load_and_inject_default_environment({})
    verdicts_differ, results_differ, solved = [], [], 0
    for task in suite.user_task_ids():
        texts, utility = upstream_ground_truth(suite, task, default)
        solved += utility
        if ours.get(task) is not utility:
            verdicts_differ.append(task)
        if [masked(t) for t in received[task]] != [masked(t) for t in texts]:
            results_differ.append(task)
    return {
        "version": version,
        "suite": suite.name,
        "user_tasks": len(ours),
        "upstream_solves": solved,
        "verdicts_equal": len(ours) - len(verdicts_differ),
        "verdicts_differ": verdicts_differ,
        "tool_results_differ": results_differ,
        "complete": bool(result.complete),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", help="comma-separated (default: every version)")
    parser.add_argument("--suites", help="comma-separated (default: every suite)")
    args = parser.parse_args()
    versions = args.versions.split(",") if args.versions else upstream.versions()
    failed = False
    for version in versions:
        bench = upstream.load(version)
        for suite in bench.suites(args.suites.split(",") if args.suites else None):
            row = check(version, suite, bench)
            failed = failed or bool(row["verdicts_differ"] or row["tool_results_differ"])
            print(json.dumps(row), flush=True)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
