"""MT-Bench-101 judge-only overhead: `turnbench judge` vs a bare AsyncOpenAI loop.

Starts the fake OpenAI-compatible server as its own process with a fixed latency L, writes a
judge-only answers file for all 3615 judged turns (the golden answers), then times, each in
its own child process so interpreter and import start-up count on both sides:

- `turnbench judge --benchmark mt-bench-101 --answers FILE --concurrency C --no-progress`
  (the real CLI: data loading and checks, run log, re-ask-capable judging, results.json);
- a bare AsyncOpenAI loop (semaphore C, max_retries=0) sending the very same 3615 judge
  requests, read from a JSONL file that this script renders beforehand.

Rounds alternate the order; the medians, their ratio (issue target: <= 1.25) and the ideal
N*L/C are printed. The turnbench run must judge all 3615 turns, or the script fails.

    .venv/bin/python benchmarks/mt_bench_101_judge_overhead.py [--latency 0.05]
        [--concurrency 32] [--rounds 3] [--data-dir /work/shared/data]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnbench.testing.fake_server import spawn

REPO = Path(__file__).resolve().parent.parent
JUDGE_MODEL = "judge-model"


# -- the bare loop (runs in its own process; imports only the openai SDK) ------------------
async def _bare(requests_file: Path, base_url: str, concurrency: int) -> int:
    from openai import AsyncOpenAI

    bodies = [json.loads(line) for line in requests_file.read_text("utf-8").splitlines()]
    client = AsyncOpenAI(api_key="no-key", base_url=base_url, max_retries=0, timeout=600)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(messages: list[dict]) -> str:
        async with semaphore:
            response = await client.chat.completions.create(
                model=JUDGE_MODEL, messages=messages, n=1, temperature=0.0, max_tokens=2048
            )
        return response.choices[0].message.content or ""

    replies = await asyncio.gather(*(one(m) for m in bodies))
    await client.close()
    return sum(1 for reply in replies if "[[" in reply)


def bare_main(requests_file: Path, base_url: str, concurrency: int) -> None:
    rated = asyncio.run(_bare(requests_file, base_url, concurrency))
    print(rated)


# -- setup ---------------------------------------------------------------------------------


def write_inputs(data_dir: Path, workdir: Path) -> tuple[Path, Path, int]:
    """The answers file (golden answers) and the same judge requests for the bare loop,
    rendered by the benchmark itself (so both sides send exactly the same messages)."""
    from turnbench.benchmarks import benchmark_class
    from turnbench.benchmarks.base import BenchmarkSettings
    from turnbench.benchmarks.datafiles import DataLocator
    from turnbench.engine.history import earlier_pairs

    cls = benchmark_class("mt-bench-101")
    files = DataLocator(data_dir, allow_download=False).require_files(cls.name, cls.data_files())
    benchmark = cls(files, BenchmarkSettings())
    answers = workdir / "golden-answers.jsonl"
    requests = workdir / "requests.jsonl"
    count = 0
    with (
        answers.open("w", encoding="utf-8") as a_out,
        requests.open("w", encoding="utf-8") as r_out,
    ):
        for sample in benchmark.samples:
            own = {t: sample.turns[t - 1].golden or "" for t in sample.judged_turns()}
            for turn in sample.judged_turns():
                a_out.write(json.dumps({"id": sample.id, "turn": turn, "answer": own[turn]}))
                a_out.write("\n")
                earlier = earlier_pairs(sample, turn, benchmark.history, own)
                for task in benchmark.judge_tasks(sample, turn, earlier, own[turn]):
                    r_out.write(json.dumps(task.messages) + "\n")
                    count += 1
    return answers, requests, count


def compiled_env(env: dict[str, str], src: Path) -> dict[str, str]:
    """`env` for children that use the byte code of `src` as an installed package would:
    PYTHONDONTWRITEBYTECODE (set in some sandboxes) would make every child compile every
    module of turnbench again, a cost no installed copy pays and the floors (whose
    libraries come with byte code) never pay. `src` is compiled once here."""
    ready = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(src / "turnbench")],
        env=ready,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return ready


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds and CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def run_turnbench(
    answers: Path, base_url: str, concurrency: int, out: Path, env: dict[str, str], n: int
) -> tuple[float, float]:
    wall, cpu, done = timed(
        [
            sys.executable,
            "-m",
            "turnbench",
            "judge",
            "--benchmark",
            "mt-bench-101",
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
    counts = next(iter(results["models"].values()))["counts"]
    if counts["judged"] != n or counts["expected"] != n:
        raise SystemExit(f"turnbench judged {counts['judged']}/{counts['expected']}, not {n}")
    return wall, cpu


def run_bare(
    requests: Path, base_url: str, concurrency: int, env: dict[str, str], n: int
) -> tuple[float, float]:
    wall, cpu, done = timed(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--bare-loop",
            str(requests),
            "--base-url",
            base_url,
            "--concurrency",
            str(concurrency),
        ],
        env,
    )
    if done.returncode != 0 or done.stdout.strip() != str(n):
        raise SystemExit(f"bare loop failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    parser.add_argument("--bare-loop", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_loop is not None:
        bare_main(args.bare_loop, args.base_url, args.concurrency)
        return

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TURNBENCH_"))}
    env["TURNBENCH_DATA_DIR"] = str(args.data_dir.resolve())
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    env = compiled_env(env, REPO / "src")
    with tempfile.TemporaryDirectory(prefix="tb101-overhead-") as tmp:
        workdir = Path(tmp)
        answers, requests, n = write_inputs(args.data_dir, workdir)
        server, base_url = spawn(args.latency, workdir)
        try:
            ours: list[float] = []
            bare: list[float] = []
            ours_cpu: list[float] = []
            bare_cpu: list[float] = []
            for index in range(args.rounds):
                order = ("ours", "bare") if index % 2 == 0 else ("bare", "ours")
                for which in order:
                    if which == "ours":
                        wall, cpu = run_turnbench(
                            answers, base_url, args.concurrency, workdir / f"run{index}", env, n
                        )
                        ours.append(wall)
                        ours_cpu.append(cpu)
                    else:
                        wall, cpu = run_bare(requests, base_url, args.concurrency, env, n)
                        bare.append(wall)
                        bare_cpu.append(cpu)
                print(
                    f"round {index + 1}: turnbench {ours[-1]:.2f} s, bare {bare[-1]:.2f} s",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    ideal = n * args.latency / args.concurrency
    t_ours, t_bare = statistics.median(ours), statistics.median(bare)
    print(
        f"\n{n} judgments, latency {args.latency * 1000:.0f} ms, concurrency "
        f"{args.concurrency}, {args.rounds} round(s), medians:"
    )
    print(f"  ideal N*L/C          {ideal:6.2f} s")
    print(
        f"  bare AsyncOpenAI     {t_bare:6.2f} s  (x{t_bare / ideal:.2f} ideal, "
        f"CPU {statistics.median(bare_cpu):.2f} s)"
    )
    print(
        f"  turnbench judge CLI  {t_ours:6.2f} s  (x{t_ours / ideal:.2f} ideal, "
        f"CPU {statistics.median(ours_cpu):.2f} s)"
    )
    ratio = t_ours / t_bare
    verdict = "OK" if ratio <= 1.25 else "ABOVE TARGET"
    print(f"  ratio turnbench/bare {ratio:6.3f}   (target <= 1.25: {verdict})")


if __name__ == "__main__":
    main()
