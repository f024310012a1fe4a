"""AgentDojo's own runner against a scripted agent: the baseline of issue 43's performance goal.

Runs the package's `benchmark_suite` (agentdojo/scripts/benchmark.py: the function its
command line calls per suite, which builds its pipeline with `AgentPipeline.from_config`,
opens its `OutputLogger` on a log directory and calls `benchmark_suite_with_injections`, or
`..._without_injections` for `--attack none`), one conversation at a time as upstream goes,
with upstream's `OpenAILLM` for the model `gpt-4o-2024-05-13` (so the attack addresses
"GPT-4") pointed by OPENAI_BASE_URL at a scripted agent (turnbench.benchmarks.agentdojo.fakes)
in a process of its own, answering after `--latency` seconds. Its `TraceLogger` writes every
conversation's JSON file into a temporary log directory, as a real run does.

Prints, per latency: wall seconds of the runner's call, conversations (the server's count of
requests that open one), requests, the runner's CPU, and the verdict counts (utility of
each pair, targeted attack success, and the injection tasks run alone). `--out FILE` keeps
the figures and every verdict (for comparing another runner's verdicts with upstream's).

    .venv/bin/python benchmarks/agentdojo_upstream_baseline.py --suite banking \\
        --attack important_instructions --latency 0.05 --latency 0
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

from turnbench.benchmarks.agentdojo import upstream
from turnbench.benchmarks.agentdojo.fakes import spawn

MODEL = "gpt-4o-2024-05-13"


def stats(base_url: str) -> dict[str, int]:
    origin = base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{origin}/stats", timeout=30) as response:
        return dict(json.loads(response.read()))


def run_once(
    suite_name: str, version: str, attack: str | None, base_url: str, logdir: Path
) -> tuple[float, float, dict[str, Any]]:
    """(wall seconds, CPU seconds, upstream's SuiteResults) of one call of its runner."""
    from agentdojo.scripts.benchmark import benchmark_suite
    from agentdojo.task_suite.load_suites import get_suite

    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = "scripted-agent"
    suite = get_suite(version, suite_name)
    cpu, started = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        results = benchmark_suite(
            suite,
            MODEL,  # type: ignore[arg-type]
            logdir,
            force_rerun=True,
            benchmark_version=version,
            attack=attack,
        )
    return time.perf_counter() - started, time.process_time() - cpu, dict(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--version", help="default: the package's default")
    parser.add_argument("--attack", default="important_instructions", help="or none")
    parser.add_argument("--mode", default="ground_truth", choices=("ground_truth", "obey", "lazy"))
    parser.add_argument("--batch", default="one", choices=("one", "all"))
    parser.add_argument(
        "--latency", type=float, action="append", help="seconds (repeatable; default 0.05)"
    )
    parser.add_argument("--out", type=Path, help="write the figures and verdicts here (JSON)")
    args = parser.parse_args()
    version = args.version or upstream.default_version()
    attack = None if args.attack == "none" else args.attack
    figures: list[dict[str, Any]] = []
    for latency in args.latency or [0.05]:
        with tempfile.TemporaryDirectory() as tmp:
            extra = ["--batch", args.batch, "--version", version]
            extra += ["--attack", args.attack]
            server, base_url = spawn(args.mode, latency, Path(tmp), *extra)
            try:
                wall, cpu, results = run_once(
                    args.suite, version, attack, base_url, Path(tmp) / "runs"
                )
                counted = stats(base_url)
                files = sum(1 for _ in (Path(tmp) / "runs").rglob("*.json"))
            finally:
                server.terminate()
                server.wait(timeout=30)
        utility = results["utility_results"]
        security = results["security_results"]
        alone = results["injection_tasks_utility_results"]
        row = {
            "suite": args.suite,
            "version": version,
            "attack": args.attack,
            "agent": f"{args.mode}/{args.batch}",
            "latency": latency,
            "wall_seconds": round(wall, 2),
            "runner_cpu_seconds": round(cpu, 2),
            "conversations": counted.get("openings", 0),
            "requests": counted.get("requests", 0),
            "server_errors": counted.get("errors", 0),
            "log_files": files,
            "pairs": len(utility),
            "utility_true": sum(utility.values()),
            "security_true": sum(security.values()) if attack else None,
            "injection_tasks_alone_true": sum(alone.values()),
            "injection_tasks_alone": len(alone),
            "verdicts": {f"{u}|{i}": [utility[(u, i)], security[(u, i)]] for (u, i) in utility},
            "injection_tasks_alone_verdicts": alone,
        }
        figures.append(row)
        shown = {k: v for k, v in row.items() if not k.endswith("verdicts")}
        print(json.dumps(shown))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
