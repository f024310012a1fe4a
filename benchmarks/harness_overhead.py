"""Harness overhead: turnbench's runner vs a bare AsyncOpenAI loop, same requests, one run.

Starts the fake OpenAI-compatible server as its own process with a fixed latency L, then
sends N judge requests at concurrency C twice per round: through turnbench's real runner
(RunContext.judgment: backend with its retry layer, strict parser, one log record per
judgment) and through a bare AsyncOpenAI loop with a semaphore (the floor for this client
on this machine). Rounds alternate the order; medians are reported as ratios to the ideal
N*L/C and to each other, plus CPU milliseconds per request in this process.

    .venv/bin/python benchmarks/harness_overhead.py [--requests 2000] [--latency 0.05]
                                                    [--concurrency 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.benchmarks.base import JudgeTask, Sample, Turn
from turnbench.engine.context import RunContext
from turnbench.engine.execute import execute
from turnbench.journal.logindex import JudgmentDone
from turnbench.journal.runlog import RunLog
from turnbench.judging.formats import standard_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.record_keys import judgment_key
from turnbench.testing.fake_server import spawn
from turnbench.types import SamplingConfig

SAMPLING = SamplingConfig(temperature=0.0, max_tokens=2048)
SYSTEM = "You are a helpful assistant."
TEMPLATE = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the response. After your "
    'explanation rate it strictly as "[[rating]]", for example: "Rating: [[5]]".\n\n'
    "[Question]\n{question}\n\n[The Start of Assistant's Answer]\n{answer}\n"
    "[The End of Assistant's Answer]"
)


def messages(index: int) -> list[dict]:
    answer = f"Answer number {index}. " + "Some explanation of the reasoning. " * 60
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TEMPLATE.format(question=f"Question {index}?", answer=answer)},
    ]


async def bare_loop(base_url: str, count: int, concurrency: int) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="no-key", base_url=base_url, max_retries=0)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with semaphore:
            await client.chat.completions.create(
                model="judge", messages=messages(index), n=1, temperature=0.0, max_tokens=2048
            )

    await asyncio.gather(*(one(i) for i in range(count)))
    await client.close()


async def through_runner(base_url: str, count: int, concurrency: int, run_dir: Path) -> None:
    backend = OpenAICompatBackend(
        "openai/judge",
        "judge",
        base_url=base_url,
        api_key=None,
        concurrency=concurrency,
        policy=RetryPolicy(),
        role="judge",
    )
    judge = Judge(JudgeSettings(spec="openai/judge", sampling=SAMPLING, max_reasks=2), backend)
    rating = standard_format("rating", "rating-strict")
    with RunLog(run_dir) as log:
        ctx = RunContext(log)

        def job(index: int):
            async def run() -> None:
                sample = Sample(id=index, group=None, turns=(Turn(user=f"Question {index}?"),))
                await ctx.judgment(
                    judge,
                    JudgeTask(prompt_name="bench", messages=messages(index)),
                    rating,
                    key=judgment_key(judge.id, "m", index, 1),
                    model="m",
                    sample=sample,
                    turn=1,
                )

            return run

        outcome = await execute([job(i) for i in range(count)], ctx)
        assert outcome.status == "finished", outcome.message
        judged = sum(isinstance(done, JudgmentDone) for done in log.index.done.values())
        assert judged == count, judged
    await backend.aclose()


def measure(label: str, coroutine) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(coroutine)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, latency, concurrency = args.requests, args.latency, args.concurrency
    ideal = n * latency / concurrency
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        server, base_url = spawn(latency, workdir)
        try:
            measure("warm-up", bare_loop(base_url, 200, concurrency))
            bare, runner = [], []
            for round_index in range(args.rounds):
                order = ["bare", "runner"] if round_index % 2 == 0 else ["runner", "bare"]
                for which in order:
                    if which == "bare":
                        bare.append(measure("bare", bare_loop(base_url, n, concurrency)))
                    else:
                        run_dir = workdir / f"run{round_index}"
                        runner.append(
                            measure("runner", through_runner(base_url, n, concurrency, run_dir))
                        )
        finally:
            server.terminate()
            server.wait()
    bare_wall = statistics.median(w for w, _ in bare)
    runner_wall = statistics.median(w for w, _ in runner)
    bare_cpu = statistics.median(c for _, c in bare) * 1000 / n
    runner_cpu = statistics.median(c for _, c in runner) * 1000 / n
    print(f"N={n} L={latency * 1000:.0f}ms C={concurrency} rounds={args.rounds} ideal={ideal:.2f}s")
    print(
        f"bare AsyncOpenAI loop: {bare_wall:.2f}s = {bare_wall / ideal:.2f} x ideal, "
        f"{bare_cpu:.2f} ms CPU/request"
    )
    print(
        f"turnbench runner:      {runner_wall:.2f}s = {runner_wall / ideal:.2f} x ideal, "
        f"{runner_cpu:.2f} ms CPU/request"
    )
    print(f"runner / bare (wall):  {runner_wall / bare_wall:.3f}  (target <= 1.10)")


if __name__ == "__main__":
    main()
