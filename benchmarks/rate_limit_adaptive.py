"""Adaptive concurrency against a rate-limited server: --concurrency auto vs a fixed limit.

Starts the fake server as its own process admitting R requests per second (a token bucket
of one second's worth; 429 beyond it, with or without Retry-After), then sends N judge
requests through OpenAICompatBackend twice: with concurrency "auto" and with a fixed
concurrency (default 64). Prints wall time as a multiple of the floor N/R and the number of
429s the server answered. Goal (issue 14): auto within 1.25 x N/R for N/R >= 10 s.

With `--command`, what is timed is the whole `turnbench judge` command (a child process,
start-up and results included) judging 8 MT-Bench answer files, 1280 judgments, with
`--concurrency auto` and with `--concurrency FIXED`; N is then 1280.

    .venv/bin/python benchmarks/rate_limit_adaptive.py [--rate 100] [--requests 1280]
        [--latency 0.2] [--fixed 64] [--retry-after] [--max-attempts 10] [--command]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import RequestFailedError
from turnbench.testing.fake_server import spawn
from turnbench.types import RequestParams

PARAMS = RequestParams(temperature=0.0, max_tokens=256)
REPO = Path(__file__).resolve().parent.parent


def server_counts(base_url: str) -> dict[str, int]:
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as response:
        return json.loads(response.read())["counts"]


async def send(base_url: str, n: int, concurrency: int | str, policy: RetryPolicy) -> int:
    """N requests through the backend; returns how many failed after their retries."""
    backend = OpenAICompatBackend(
        "openai/judge",
        "judge",
        base_url=base_url,
        concurrency=concurrency,
        policy=policy,  # type: ignore[arg-type]
    )

    async def one(index: int) -> bool:
        messages = [{"role": "user", "content": f"Question {index}? Rating: [[5]] format."}]
        try:
            await backend.complete(messages, PARAMS)  # type: ignore[arg-type]
        except RequestFailedError:
            return False
        return True

    try:
        results = await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await backend.aclose()
    return sum(1 for ok in results if not ok)


def measure(
    base_url: str, n: int, concurrency: int | str, policy: RetryPolicy
) -> tuple[float, int, int]:
    before = server_counts(base_url).get("429", 0)
    started = time.perf_counter()
    failed = asyncio.run(send(base_url, n, concurrency, policy))
    elapsed = time.perf_counter() - started
    refused = server_counts(base_url).get("429", 0) - before
    return elapsed, refused, failed


def measure_command(
    base_url: str, answers: Path, out: Path, concurrency: int | str, max_attempts: int
) -> tuple[float, int, int, int]:
    """The whole `turnbench judge` command; (wall seconds, 429s, failed items, judged)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # children use byte code, as an installed copy
    before = server_counts(base_url).get("429", 0)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable, "-m", "turnbench", "judge", "--benchmark", "mt-bench",
            "--answers", str(answers), "--judge", "openai/judge", "--judge-base-url",
            base_url, "--concurrency", str(concurrency), "--max-attempts", str(max_attempts),
            "--out", str(out), "--no-progress",
        ],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"turnbench judge failed ({done.returncode}): {done.stderr[-2000:]}")
    refused = server_counts(base_url).get("429", 0) - before
    summary = json.loads((out / "results.json").read_text("utf-8"))
    models = summary["models"].values()  # judge-only results: one object per answer file
    judged = sum(m["counts"]["judged"] for m in models)
    failed = sum(m["counts"]["pending"] + m["counts"]["failed"] for m in models)
    return elapsed, refused, failed, judged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--requests", type=int, default=1280)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--fixed", type=int, default=64)
    parser.add_argument("--retry-after", action="store_true")
    parser.add_argument("--max-attempts", type=int, default=10)
    parser.add_argument("--only", choices=["auto", "fixed"])
    parser.add_argument("--command", action="store_true", help="Time the whole CLI command.")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    args = parser.parse_args()
    if args.command:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from judge_request_path import mt_bench_answers

        args.requests = 1280
    policy = RetryPolicy(max_attempts=args.max_attempts)
    floor = args.requests / args.rate
    extra = ["--rate-limit", str(args.rate), "--fixed-reply", "Fine. Rating: [[5]]"]
    if args.retry_after:
        extra.append("--retry-after")
    print(
        f"N={args.requests} R={args.rate:g}/s latency={args.latency * 1000:.0f}ms "
        f"floor N/R={floor:.1f}s retry-after={'yes' if args.retry_after else 'no'}"
    )
    runs = [("auto", "auto"), (f"fixed {args.fixed}", args.fixed)]
    if args.only:
        runs = [r for r in runs if r[0].startswith(args.only)]
    for label, concurrency in runs:
        with tempfile.TemporaryDirectory() as tmp:  # a fresh server: a full token bucket
            server, base_url = spawn(args.latency, Path(tmp), *extra)
            try:
                if args.command:
                    answers, n = mt_bench_answers(args.data_dir, Path(tmp) / "answers")
                    assert n == args.requests, n
                    elapsed, refused, failed, judged = measure_command(
                        base_url, answers, Path(tmp) / "run", concurrency, args.max_attempts
                    )
                    failed = n - judged  # not scored: failed requests, unreadable replies
                else:
                    elapsed, refused, failed = measure(base_url, args.requests, concurrency, policy)
            finally:
                server.terminate()
                server.wait()
        verdict = (
            ""
            if label != "auto"
            else f" (goal <= 1.25: {'OK' if elapsed / floor <= 1.25 else 'ABOVE'})"
        )
        print(
            f"  {label:<9} {elapsed:6.2f}s = {elapsed / floor:.2f} x N/R{verdict}, "
            f"429s {refused}, failed items {failed}"
        )


if __name__ == "__main__":
    main()
