"""Where the whole `turnbench judge` command's time goes, phase by phase, beside the plain loop.

`judge_request_path.py` gives the ratio of the whole command to a plain aiohttp loop; this
script says what the difference is made of. Each run is a child process (start-up included,
compiled byte code as an installed copy has) that puts time marks around the command's
phases: the imports before the command runs, the results' modules (numpy, the statistics,
the results' schema: imported by the results when they start, here imported after the
first line to be timed apart), the CLI (its own imports, the flags, the options),
`prepare` (data and answer files, the plan), the preflight (with aiohttp's import, which
the first request needs), the requests, the results (`Session._finish`: their arithmetic,
results.json, the state file) with its main steps, and the tables. The plain loop
(`plain_loop.py`) marks its imports (asyncio, aiohttp) and its requests. Both sides run
against the same fake server in its own process, alternating.

    .venv/bin/python benchmarks/judge_phases.py [--config 1280|256] [--runs 3]

`1280`: 8 MT-Bench answer files, C=32, 50 ms (as `judge_request_path.py --only 1280`);
`256`: 3615 MT-Bench-101 judgments, C=256, 200 ms (as `--only 256`). Figures are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: (module, attribute path, mark): results steps timed inside `_finish` (summed per run)
FINISH_STEPS = (
    ("turnbench.results.build", "model_results", "per-model results"),
    ("turnbench.results.build", "_add_length", "length block"),
    ("turnbench.results.build", "single_grading_ranking", "ranking"),
    ("turnbench.trust.blocks", "flagged_answers", "flagged answers"),
)


def _child_turnbench(argv: list[str], marks_file: Path) -> None:
    """Run the CLI in this process with time marks; write them as JSON before exiting."""
    started = time.perf_counter()
    marks: dict[str, float] = {}
    steps: dict[str, float] = {}

    def now() -> float:
        return time.perf_counter() - started

    import functools
    import importlib
    import inspect

    import turnbench.cli.entry as entry
    import turnbench.session as session

    marks["imports"] = now()
    # The results import these when they start; imported here, their time is a line of its
    # own, and the results' line is their arithmetic and files.
    owners = [importlib.import_module(module) for module, _, _ in FINISH_STEPS]
    marks["results' modules"] = now()

    def around(owner, name: str, label: str, sink: dict[str, float], total: bool) -> None:
        original = getattr(owner, name)

        def record(begun: float) -> None:
            if total:
                sink[label] = sink.get(label, 0.0) + time.perf_counter() - begun
            else:
                sink[label + " start"], sink[label + " end"] = begun - started, now()

        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def timed_async(*args, **kwargs):
                begun = time.perf_counter()
                try:
                    return await original(*args, **kwargs)
                finally:
                    record(begun)

            setattr(owner, name, timed_async)
        else:

            @functools.wraps(original)
            def timed(*args, **kwargs):
                begun = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    record(begun)

            setattr(owner, name, timed)

    around(session.Session, "prepare", "prepare", marks, total=False)
    around(session.Session, "_finish", "results", marks, total=False)
    around(session, "preflight", "preflight", marks, total=False)  # as session calls it
    for owner, (_, name, label) in zip(owners, FINISH_STEPS, strict=True):
        around(owner, name, label, steps, total=True)

    real_exit = os._exit

    def leave(code: int) -> None:
        marks["exit"] = now()
        marks_file.write_text(json.dumps({"marks": marks, "steps": steps}), "utf-8")
        real_exit(code)

    os._exit = leave  # the entry point ends the process this way when it is done
    sys.argv = ["turnbench", *argv]
    try:
        entry.main()
    except SystemExit as done:
        leave(done.code if isinstance(done.code, int) else 1)


def phases(marks: dict[str, float]) -> dict[str, float]:
    """Durations from one turnbench child's marks."""
    return {
        "imports before the command": marks["imports"],
        "the results' modules (numpy...)": marks["results' modules"] - marks["imports"],
        "CLI (its imports, flags, options)": marks["prepare start"] - marks["results' modules"],
        "prepare (data, answers, plan)": marks["prepare end"] - marks["prepare start"],
        "preflight (with aiohttp's import)": marks["preflight end"] - marks["preflight start"],
        "requests": marks["results start"] - marks["preflight end"],
        "results (arithmetic, files)": marks["results end"] - marks["results start"],
        "tables and exit": marks["exit"] - marks["results end"],
        "whole (in process)": marks["exit"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["1280", "256"], default="1280")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    parser.add_argument("--child-turnbench", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_turnbench is not None:
        marks_file, *argv = args.child_turnbench
        _child_turnbench(argv, Path(marks_file))
        return

    sys.path.insert(0, str(HERE))
    from judge_request_path import REPLY, mt_bench_answers
    from mt_bench_101_judge_overhead import JUDGE_MODEL, compiled_env, write_inputs
    from turnbench.testing.fake_server import spawn

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TURNBENCH_"))}
    env["TURNBENCH_DATA_DIR"] = str(args.data_dir.resolve())
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    env = compiled_env(env, REPO / "src")
    concurrency, latency = (32, 0.05) if args.config == "1280" else (256, 0.2)
    with tempfile.TemporaryDirectory(prefix="tb-phases-") as tmp:
        workdir = Path(tmp)
        if args.config == "1280":
            benchmark, requests = "mt-bench", workdir / "requests.jsonl"
            answers, n = mt_bench_answers(args.data_dir, workdir / "answers", requests)
        else:
            benchmark = "mt-bench-101"
            answers, requests, n = write_inputs(args.data_dir, workdir)
        server, base_url = spawn(latency, workdir, "--fixed-reply", REPLY)
        ours: list[dict] = []
        plain: list[dict] = []
        me = str(Path(__file__).resolve())
        try:
            for index in range(args.runs):
                marks_file = workdir / "marks.json"
                command = [
                    "judge", "--benchmark", benchmark, "--answers", str(answers),
                    "--judge", f"openai/{JUDGE_MODEL}", "--judge-base-url", base_url,
                    "--out", str(workdir / f"run-{index}"), "--concurrency", str(concurrency),
                    "--no-progress",
                ]  # fmt: skip
                sides = [
                    ("turnbench", [sys.executable, me, "--child-turnbench", str(marks_file),
                                   *command], ours),
                    ("plain", [sys.executable, str(HERE / "plain_loop.py"), str(requests),
                               base_url, str(concurrency), JUDGE_MODEL, "--marks",
                               str(marks_file)], plain),
                ]  # fmt: skip
                for _, argv, sink in sides if index % 2 == 0 else reversed(sides):
                    begun = time.perf_counter()
                    done = subprocess.run(argv, env=env, capture_output=True, text=True)
                    wall = time.perf_counter() - begun
                    if done.returncode != 0:
                        raise SystemExit(f"a child failed: {done.stderr[-2000:]}")
                    found = json.loads(marks_file.read_text("utf-8"))
                    sink.append({**found, "wall": wall})
        finally:
            server.terminate()
            server.wait(timeout=10)
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{args.config}: {n} judgments, C={concurrency}, {latency * 1000:.0f} ms; "
          f"{args.runs} run(s) each, medians; load average {load}")  # fmt: skip
    table = [phases(run["marks"]) for run in ours]
    for name in table[0]:
        values = [row[name] for row in table]
        print(f"  {name:<40} {statistics.median(values):6.3f} s"
              f"  ({min(values):.3f}-{max(values):.3f})")  # fmt: skip
    for label in [label for _, _, label in FINISH_STEPS]:
        values = [run["steps"].get(label, 0.0) for run in ours]
        print(f"    of the results: {label:<22} {statistics.median(values):6.3f} s")
    print(f"  {'whole command (wall, start-up included)':<40} "
          f"{statistics.median(run['wall'] for run in ours):6.3f} s")  # fmt: skip
    imports = [run["imports"] for run in plain]
    requests_only = [run["exit"] - run["imports"] for run in plain]
    print("plain aiohttp loop:")
    print(f"  {'imports (asyncio, aiohttp)':<40} {statistics.median(imports):6.3f} s")
    print(f"  {'requests (reading them included)':<40} "
          f"{statistics.median(requests_only):6.3f} s")  # fmt: skip
    print(f"  {'whole command (wall, start-up included)':<40} "
          f"{statistics.median(run['wall'] for run in plain):6.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
