"""The lean request path: the whole `turnbench judge` command against its floors.

Three configurations, each against the fake server in its own process (--no-record and a
precomputed reply, so the server is not what is measured):

- `256`: MT-Bench-101 judge-only (3615 judgments), concurrency 256, 200 ms latency,
  against a plain aiohttp loop (`plain_loop.py`: one ClientSession, a semaphore,
  json.dumps / json.loads) sending the same 3615 requests. Goal <= 1.3x (issue 21; issue
  14 asked 1.5x).
- `32`: the same 3615 judgments at concurrency 32, 50 ms, against a bare AsyncOpenAI loop
  (the SDK's own floor, as in mt_bench_101_judge_overhead.py). Goal <= 1.10x.
- `1280`: MT-Bench judge-only, 8 answer files (1280 judgments), concurrency 32, 50 ms,
  against its ideal N*L/C = 2.0 s. Goal <= 1.3x (issue 14). The plain aiohttp loop sending
  the same 1280 requests runs beside it: what any Python client reaches against this server
  here; issue 21's goal is <= 1.3x of it.
- `realistic` (only when asked): the same 1280 judgments at concurrency 64 against a judge
  that answers in 2 s, as real judges do (ideal 40 s): with `--baseline-src`, what a
  client-side tuning saves where it matters.

Every side runs as a child process, start-up included; rounds alternate the order and the
medians are compared. With `--baseline-src DIR` a second turnbench (another checkout's
`src`, e.g. the main branch) runs in the same rounds, so before/after figures come from the
same minutes of a busy machine. Every turnbench run must judge every planned turn, or the
script fails. The load average is printed with each configuration.

    .venv/bin/python benchmarks/judge_request_path.py [--rounds 3] [--only 256|32|1280]
        [--baseline-src /work/main/src]
    .venv/bin/python benchmarks/judge_request_path.py --only realistic --rounds 2 \
        --baseline-src OTHER/src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mt_bench_101_judge_overhead import (
    JUDGE_MODEL,
    REPO,
    compiled_env,
    run_bare,
    timed,
    write_inputs,
)
from turnbench.testing.fake_server import spawn

REPLY = "The answer is adequate. Rating: [[7]]"


def run_aiohttp(
    requests: Path, base_url: str, concurrency: int, env: dict[str, str], n: int
) -> tuple[float, float]:
    """The plain loop (`plain_loop.py`, a script of its own) in a child process."""
    script = Path(__file__).resolve().parent / "plain_loop.py"
    command = [sys.executable, str(script), str(requests), base_url, str(concurrency)]
    wall, cpu, done = timed([*command, JUDGE_MODEL], env)
    if done.returncode != 0 or done.stdout.strip() != str(n):
        raise SystemExit(f"aiohttp loop failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu


def mt_bench_answers(
    data_dir: Path, folder: Path, requests: Path | None = None, models: int = 8
) -> tuple[Path, int]:
    """`models` MT-Bench answer files (FastChat format, one model each, named after the
    file): copies of one reference model's answers; and in `requests` (when given) the judge
    requests for the plain loop, rendered by the benchmark itself (each turn of each answer
    file, so both sides send exactly the same messages). Returns the folder and the
    judgments."""
    from turnbench.benchmarks import benchmark_class
    from turnbench.benchmarks.base import BenchmarkSettings
    from turnbench.benchmarks.datafiles import DataLocator
    from turnbench.engine.history import earlier_pairs

    source_path = data_dir / "mt_bench/model_answer/alpaca-13b.jsonl"
    source = source_path.read_text("utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(models):
        (folder / f"model-{index + 1}.jsonl").write_text(source, "utf-8")
    cls = benchmark_class("mt-bench")
    files = DataLocator(data_dir, allow_download=False).require_files(cls.name, cls.data_files())
    benchmark = cls(files, BenchmarkSettings())
    answers = benchmark.load_answer_file(source_path)
    lines = [
        json.dumps(task.messages)
        for sample in benchmark.samples
        for turn in sample.judged_turns()
        for task in benchmark.judge_tasks(
            sample,
            turn,
            earlier_pairs(sample, turn, benchmark.history, answers.turns[sample.id]),
            answers.turns[sample.id][turn],
        )
    ]
    if requests is not None:
        requests.write_text("".join(line + "\n" for line in lines * models), "utf-8")
    return folder, len(lines) * models


def run_judge(
    benchmark: str,
    answers: Path,
    base_url: str,
    concurrency: int,
    out: Path,
    env: dict[str, str],
    n: int,
) -> tuple[float, float]:
    """The whole `turnbench judge` command in a child process; (wall, CPU) seconds."""
    wall, cpu, done = timed(
        [
            sys.executable,
            "-m",
            "turnbench",
            "judge",
            "--benchmark",
            benchmark,
            "--answers",
            str(answers),
            "--judge",
            f"openai/{JUDGE_MODEL}",
            "--judge-base-url",
            base_url,
            "--out",
            str(out),
            "--concurrency",
            str(concurrency),
            "--no-progress",
        ],
        env,
    )
    if done.returncode != 0:
        raise SystemExit(f"turnbench judge failed ({done.returncode}):\n{done.stderr[-2000:]}")
    results = json.loads((out / "results.json").read_text("utf-8"))
    judged = sum(m["counts"]["judged"] for m in results["models"].values())
    if judged != n:
        raise SystemExit(f"turnbench judged {judged}, not {n}")
    return wall, cpu


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def compare(
    label: str,
    floor_name: str,
    floor,
    concurrency: int,
    latency: float,
    goal: float,
    args: argparse.Namespace,
    env: dict[str, str],
    *,
    benchmark: str = "mt-bench-101",
    goal_to_ideal: bool = False,
    floor_goal: float | None = None,
) -> None:
    """Rounds of turnbench (and the baseline checkout) against a floor; `goal_to_ideal`:
    the goal is a ratio to the ideal N*L/C, and the floor is shown beside it; `floor_goal`:
    a second goal, as a ratio to the floor."""
    with tempfile.TemporaryDirectory(prefix="tb-request-path-") as tmp:
        workdir = Path(tmp)
        sides = {"turnbench": compiled_env(env, REPO / "src")}
        if args.baseline_src is not None:
            # a copy: compiling writes byte code, and the other checkout is not ours to touch
            copy = workdir / "baseline-src"
            shutil.copytree(args.baseline_src, copy, ignore=shutil.ignore_patterns("*.pyc"))
            sides["baseline"] = compiled_env({**env, "PYTHONPATH": str(copy)}, copy)
        if benchmark == "mt-bench-101":
            answers, requests, n = write_inputs(args.data_dir, workdir)
        else:
            requests = workdir / "requests.jsonl"
            answers, n = mt_bench_answers(args.data_dir, workdir / "answers", requests)
        server, base_url = spawn(latency, workdir, "--fixed-reply", REPLY)
        walls: dict[str, list[float]] = {name: [] for name in [*sides, floor_name]}
        cpus: dict[str, list[float]] = {name: [] for name in walls}
        loads = [_load()]
        try:
            for index in range(args.rounds):
                order = [*sides, floor_name]
                if index % 2:
                    order.reverse()
                for which in order:
                    if which == floor_name:
                        wall, cpu = floor(requests, base_url, concurrency, env, n)
                    else:
                        out = workdir / f"{which}-{index}"
                        wall, cpu = run_judge(
                            benchmark, answers, base_url, concurrency, out, sides[which], n
                        )
                    walls[which].append(wall)
                    cpus[which].append(cpu)
                shown = ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items() if v)
                print(f"  [{label}] round {index + 1}: {shown}", flush=True)
                loads.append(_load())
        finally:
            server.terminate()
            server.wait(timeout=10)
    ideal = n * latency / concurrency
    print(f"{label}: {n} judgments, {args.rounds} round(s), medians; ideal N*L/C {ideal:.2f} s")
    print(f"  load average (1, 5, 15 min) during the rounds: {' | '.join(loads)}")
    floor_wall = statistics.median(walls[floor_name])
    for name, values in walls.items():
        wall = statistics.median(values)
        print(
            f"  {name:<20} {wall:6.2f} s  (CPU {statistics.median(cpus[name]):.2f} s)"
            f"  x{wall / floor_wall:.3f} of the floor, x{wall / ideal:.3f} of the ideal"
        )
    reference = ideal if goal_to_ideal else floor_wall
    ratio = statistics.median(walls["turnbench"]) / reference
    print(
        f"  turnbench ratio to the {'ideal' if goal_to_ideal else 'floor'} {ratio:.3f}"
        f"  (goal <= {goal}: {'OK' if ratio <= goal else 'ABOVE'})"
    )
    if floor_goal is not None:
        to_floor = statistics.median(walls["turnbench"]) / floor_wall
        print(
            f"  turnbench ratio to the floor {to_floor:.3f}"
            f"  (goal <= {floor_goal}: {'OK' if to_floor <= floor_goal else 'ABOVE'})"
        )
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["256", "32", "1280", "realistic"])
    parser.add_argument("--baseline-src", type=Path, help="Also time turnbench from this src.")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TURNBENCH_"))}
    env["TURNBENCH_DATA_DIR"] = str(args.data_dir.resolve())
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    if args.only in (None, "256"):
        compare("C=256 L=200ms", "plain aiohttp loop", run_aiohttp, 256, 0.2, 1.3, args, env)
    if args.only in (None, "32"):
        compare("C=32 L=50ms", "bare AsyncOpenAI", run_bare, 32, 0.05, 1.10, args, env)
    if args.only in (None, "1280"):  # issue 14: x1.3 of the ideal; issue 21: of the plain loop
        compare(
            "MT-Bench 8 files C=32 L=50ms", "plain aiohttp loop", run_aiohttp, 32, 0.05, 1.3,
            args, env, benchmark="mt-bench", goal_to_ideal=True, floor_goal=1.3,
        )  # fmt: skip
    if args.only == "realistic":  # judges answer in seconds: what tuning the client is worth
        compare(
            "MT-Bench 8 files C=64 L=2s", "plain aiohttp loop", run_aiohttp, 64, 2.0, 1.3,
            args, env, benchmark="mt-bench", goal_to_ideal=True,
        )  # fmt: skip


if __name__ == "__main__":
    main()
