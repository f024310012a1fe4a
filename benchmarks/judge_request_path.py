"""The lean request path: `turnbench judge` (MT-Bench-101, 3615 judgments) vs two floors.

Two configurations, each against the fake server in its own process (--no-record and a
precomputed reply, so the server is not what is measured):

- concurrency 256, 200 ms latency: turnbench vs a plain aiohttp loop (one ClientSession,
  a semaphore, json.dumps / json.loads) sending the same 3615 requests. Goal <= 1.5x.
- concurrency 32, 50 ms latency: turnbench vs a bare AsyncOpenAI loop (the SDK's own
  floor, as in mt_bench_101_judge_overhead.py). Goal <= 1.10x.

Every side runs as a child process, start-up included; rounds alternate the order and the
medians are compared. The turnbench run must judge all 3615 turns, or the script fails.

    .venv/bin/python benchmarks/judge_request_path.py [--rounds 3] [--only 256|32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mt_bench_101_judge_overhead import (
    JUDGE_MODEL,
    REPO,
    run_bare,
    run_turnbench,
    timed,
    write_inputs,
)
from turnbench.testing.fake_server import spawn

REPLY = "The answer is adequate. Rating: [[7]]"


# -- the plain aiohttp loop (runs in its own process; imports only aiohttp) ---------------
async def _aiohttp_loop(requests_file: Path, base_url: str, concurrency: int) -> int:
    import aiohttp

    bodies = [json.loads(line) for line in requests_file.read_text("utf-8").splitlines()]
    semaphore = asyncio.Semaphore(concurrency)
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(messages: list[dict]) -> str:
            body = json.dumps(
                {
                    "model": JUDGE_MODEL,
                    "messages": messages,
                    "n": 1,
                    "temperature": 0.0,
                    "max_tokens": 2048,
                }
            ).encode()
            async with semaphore, session.post(url, data=body, headers=headers) as response:
                reply = json.loads(await response.read())
            return reply["choices"][0]["message"]["content"] or ""

        replies = await asyncio.gather(*(one(m) for m in bodies))
    return sum(1 for reply in replies if "[[" in reply)


def run_aiohttp(
    requests: Path, base_url: str, concurrency: int, env: dict[str, str], n: int
) -> tuple[float, float]:
    wall, cpu, done = timed(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--aiohttp-loop",
            str(requests),
            "--base-url",
            base_url,
            "--concurrency",
            str(concurrency),
        ],
        env,
    )
    if done.returncode != 0 or done.stdout.strip() != str(n):
        raise SystemExit(f"aiohttp loop failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu


def compare(
    label: str,
    floor_name: str,
    floor,
    concurrency: int,
    latency: float,
    goal: float,
    args: argparse.Namespace,
    env: dict[str, str],
) -> None:
    with tempfile.TemporaryDirectory(prefix="tb-request-path-") as tmp:
        workdir = Path(tmp)
        answers, requests, n = write_inputs(args.data_dir, workdir)
        server, base_url = spawn(latency, workdir, "--fixed-reply", REPLY)
        ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
        try:
            for index in range(args.rounds):
                order = ("ours", "floor") if index % 2 == 0 else ("floor", "ours")
                for which in order:
                    if which == "ours":
                        wall, cpu = run_turnbench(
                            answers, base_url, concurrency, workdir / f"run{index}", env, n
                        )
                        ours.append(wall)
                        ours_cpu.append(cpu)
                    else:
                        wall, cpu = floor(requests, base_url, concurrency, env, n)
                        theirs.append(wall)
                        theirs_cpu.append(cpu)
                print(
                    f"  [{label}] round {index + 1}: turnbench {ours[-1]:.2f} s, "
                    f"{floor_name} {theirs[-1]:.2f} s",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    ideal = n * latency / concurrency
    t_ours, t_floor = statistics.median(ours), statistics.median(theirs)
    ratio = t_ours / t_floor
    print(f"{label}: {n} judgments, {args.rounds} round(s), medians (ideal N*L/C {ideal:.2f} s)")
    cpu_floor, cpu_ours = statistics.median(theirs_cpu), statistics.median(ours_cpu)
    print(f"  {floor_name:<20} {t_floor:6.2f} s  (CPU {cpu_floor:.2f} s)")
    print(f"  {'turnbench judge CLI':<20} {t_ours:6.2f} s  (CPU {cpu_ours:.2f} s)")
    print(f"  ratio {ratio:.3f}  (goal <= {goal}: {'OK' if ratio <= goal else 'ABOVE GOAL'})\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["256", "32"])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    parser.add_argument("--aiohttp-loop", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=256, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.aiohttp_loop is not None:
        print(asyncio.run(_aiohttp_loop(args.aiohttp_loop, args.base_url, args.concurrency)))
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TURNBENCH_"))}
    env["TURNBENCH_DATA_DIR"] = str(args.data_dir.resolve())
    if args.only in (None, "256"):
        compare("C=256 L=200ms", "plain aiohttp loop", run_aiohttp, 256, 0.2, 1.5, args, env)
    if args.only in (None, "32"):
        compare("C=32 L=50ms", "bare AsyncOpenAI", run_bare, 32, 0.05, 1.10, args, env)


if __name__ == "__main__":
    main()
