"""A folder of AgentDojo runs exactly as AgentDojo's own logger writes it, for re-scoring tests
(`turnbench import --format agentdojo`) without the published runs.

For each scripted agent (`--agents`, turnbench.benchmarks.agentdojo.fakes: `ground_truth`
does each task's ground truth, `obey` also does the injection task it reads), the package's
own runner (`benchmark_suite` of agentdojo/scripts/benchmark.py, with upstream's `OpenAILLM`
for gpt-4o-2024-05-13 pointed at the agent's server, one conversation at a time) runs each
suite twice: with `--attack` (every pair, and each injection task alone) and without (each
user task alone). Its `TraceLogger` writes

    OUT/AGENT/gpt-4o-2024-05-13/SUITE/user_task_N/ATTACK/injection_task_M.json
    OUT/AGENT/gpt-4o-2024-05-13/SUITE/user_task_N/none/none.json
    OUT/AGENT/gpt-4o-2024-05-13/SUITE/injection_task_M/none/none.json

each with upstream's fields (suite_name, pipeline_name, user_task_id, injection_task_id,
attack_type, injections, messages, error, utility, security, duration, benchmark_version,
evaluation_timestamp, agentdojo_package_version). `OUT/AGENT/gpt-4o-2024-05-13` is the folder
an import reads. Nothing of upstream's is copied: its code writes every file.

    .venv/bin/python benchmarks/agentdojo_logger_folder.py --out /tmp/agentdojo-runs \\
        --suites banking,slack --agents ground_truth,obey
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

from turnbench.benchmarks.agentdojo import upstream
from turnbench.benchmarks.agentdojo.fakes import spawn

MODEL = "gpt-4o-2024-05-13"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suites", default="banking", help="comma-separated, or all")
    parser.add_argument("--agents", default="ground_truth,obey")
    parser.add_argument("--attack", default="important_instructions")
    parser.add_argument("--version", help="default: the package's default")
    args = parser.parse_args()
    version = args.version or upstream.default_version()
    bench = upstream.load(version)
    suites = bench.suite_names() if args.suites == "all" else args.suites.split(",")
    bench.suites(suites)  # unknown names: one clear error before anything runs
    from agentdojo.scripts.benchmark import benchmark_suite
    from agentdojo.task_suite.load_suites import get_suite

    for agent in args.agents.split(","):
        logdir = args.out / agent
        with tempfile.TemporaryDirectory() as tmp:
            extra = ("--version", version, "--attack", args.attack)
            server, base_url = spawn(agent, 0.0, Path(tmp), *extra)  # type: ignore[arg-type]
            os.environ["OPENAI_BASE_URL"] = base_url
            os.environ["OPENAI_API_KEY"] = "scripted-agent"
            try:
                for suite_name in suites:
                    for attack in (args.attack, None):
                        started = time.perf_counter()
                        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                            warnings.simplefilter("ignore")
                            benchmark_suite(
                                get_suite(version, suite_name),
                                MODEL,  # type: ignore[arg-type]
                                logdir,
                                force_rerun=True,
                                benchmark_version=version,
                                attack=attack,
                            )
                        folder = logdir / MODEL / suite_name
                        print(
                            json.dumps(
                                {
                                    "agent": agent,
                                    "suite": suite_name,
                                    "attack": attack or "none",
                                    "seconds": round(time.perf_counter() - started, 2),
                                    "files_in_suite": sum(1 for _ in folder.rglob("*.json")),
                                }
                            )
                        )
            finally:
                server.terminate()
                server.wait(timeout=30)
        print(f"{agent}: {logdir / MODEL}")


if __name__ == "__main__":
    main()
