"""The real embedded engine (llama.cpp + SmolLM2 in the worker process).

- the installed llama-cpp-python build is portable (no native, AVX-512 or AMX code);
- llama.cpp accepts the reply grammars, and every reply decoded under them is in the
  grammar's language and parses (at several temperatures and seeds);
- logprobs are the model's distribution at each generated token;
- a native crash of the worker ends a CLI run with one clear error and exit 6, with the
  finished records in the log, and the next run resumes from them.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from tests.conftest import cli_env
from tests.integration.bounded import turnbench_bounded, within
from tests.unit.gbnf_subset import matches
from turnbench.backends import llama_build
from turnbench.backends.local import LocalLlamaBackend
from turnbench.backends.reply_grammar import explanation_budget, grammar_for
from turnbench.judging.parsers import parse_rating_strict, parse_verdict_strict
from turnbench.testing.fake_server import FakeServer
from turnbench.types import ReplyConstraint, RequestParams

pytestmark = pytest.mark.integration

RATING = ReplyConstraint(kind="rating", choices=tuple(str(n) for n in range(1, 11)))
VERDICT = ReplyConstraint(kind="verdict", choices=("A", "B", "C"), lead="Final verdict: ")
JUDGE_PROMPT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "Rate the answer from 1 to 10 after a short explanation.\n"
        "Question: What is the capital of France?\nAnswer: Paris is the capital of France.",
    },
]


def test_the_installed_build_is_portable():
    report, status = llama_build.check()
    assert status == 0
    assert report.portable, report.problems
    features = llama_build.parse_system_info(report.system_info)
    assert features.get("AVX2") == "1" or features.get("NEON") == "1"
    assert not [name for name in features if name.startswith(("AVX512", "AMX"))]
    assert report.settings.get("GGML_NATIVE") == "OFF"


def test_grammar_replies_are_always_valid_and_logprobs_are_sane():
    steps: list[str] = []

    async def scenario():
        backend = LocalLlamaBackend("local/smollm2", "smollm2")
        steps.append("engine started")
        replies = []
        try:
            for constraint, temperature, seed, max_tokens in [
                (RATING, 0.0, 0, 48),
                (RATING, 1.0, 1, 48),
                (RATING, 1.5, 2, 24),
                (VERDICT, 1.0, 3, 32),
            ]:
                params = RequestParams(
                    temperature=temperature,
                    max_tokens=max_tokens,
                    extra={"seed": seed},
                    constraint=constraint,
                )
                done = await backend.complete(JUDGE_PROMPT, params)
                replies.append((constraint, max_tokens, done))
                steps.append(f"{constraint.kind} reply {len(replies)} of 4")
            plain = await backend.complete(
                JUDGE_PROMPT, RequestParams(temperature=0.0, max_tokens=12, top_logprobs=5)
            )
            steps.append("the reply with logprobs")
        finally:
            await backend.aclose()
        return replies, plain

    replies, plain = within(120, scenario(), steps)  # about 5 s idle
    for constraint, max_tokens, done in replies:
        grammar = grammar_for(constraint, explanation_budget(constraint, max_tokens))
        assert matches(grammar, done.text), done.text
        assert done.finish_reason == "stop" and done.usage.completion_tokens <= max_tokens
        parse = parse_rating_strict if constraint.kind == "rating" else parse_verdict_strict
        assert parse(done.text).ok, done.text
    # greedy decoding picks the most likely token: its logprob is the top alternative's
    assert plain.logprobs is not None and len(plain.logprobs) == plain.usage.completion_tokens
    for token in plain.logprobs:
        assert len(token.top) == 5 and token.logprob <= 0.0
        assert token.logprob == pytest.approx(token.top[0].logprob)
        ranked = [t.logprob for t in token.top]
        assert ranked == sorted(ranked, reverse=True)
        assert sum(math.exp(t.logprob) for t in token.top) <= 1.0 + 1e-6
    assert "".join(t.token for t in plain.logprobs) == plain.text


def test_cancelling_a_constrained_generation_frees_the_engine_at_once():
    """Cancellation under a grammar ends the generation at the next token (the old trick,
    forcing end-of-text, would be refused by an unfinished grammar and abort llama.cpp)."""

    steps: list[str] = []

    async def scenario():
        backend = LocalLlamaBackend("local/smollm2", "smollm2")
        steps.append("engine started")
        try:
            story = [{"role": "user", "content": "Write a very long story about the sea."}]
            long = RequestParams(
                temperature=0.0,
                max_tokens=4000,
                constraint=RATING.model_copy(update={"max_explanation_chars": 20000}),
            )
            task = asyncio.create_task(backend.complete(story, long))
            await asyncio.sleep(1.0)
            loop = asyncio.get_running_loop()
            started = loop.time()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            waited = loop.time() - started
            steps.append(f"cancelled after {waited:.1f}s")
            after = await backend.complete(
                JUDGE_PROMPT, RequestParams(temperature=0.0, max_tokens=24, constraint=RATING)
            )
        finally:
            await backend.aclose()
        return waited, after

    waited, after = within(120, scenario(), steps)  # about 5 s idle
    assert waited < 5.0  # 4000 tokens would take about a minute
    assert parse_rating_strict(after.text).ok


def test_a_native_crash_stops_the_run_clearly_and_the_next_run_resumes(data_dir, tmp_path):
    out = tmp_path / "run"
    args = [
        "run",
        "--model",
        "local/smollm2",
        "--judge",
        "openai/judge",
        "--out",
        str(out),
        "--limit",
        "1",
        "--max-new-tokens",
        "8",
        "--no-progress",
    ]
    with FakeServer() as judge:
        args += ["--judge-base-url", judge.base_url]
        crashing = cli_env(data_dir, tmp_path, TURNBENCH_TEST_CRASH_AFTER="5")
        first = turnbench_bounded(args, crashing, limit_s=300, run_dir=out)
        assert first.returncode == 6, first.stdout + first.stderr
        assert "Traceback" not in first.stderr
        error = first.stderr
        assert "the llama.cpp engine crashed (killed by SIGSEGV (segmentation fault))" in error
        assert "tuned to a specific CPU" in error
        assert "CMAKE_ARGS=" in error and "--no-binary llama-cpp-python" in error
        assert "re-run the same command to resume" in error
        records = [json.loads(line) for line in (out / "log.jsonl").open()]
        answers = [r for r in records if r["kind"] == "answer"]
        assert len(answers) == 5  # exactly the generations finished before the crash
        results = json.loads((out / "results.json").read_text())
        assert results["complete"] is False and results["stopped"] == "fatal"

        second = turnbench_bounded(args, cli_env(data_dir, tmp_path), limit_s=300, run_dir=out)
        assert second.returncode == 0, second.stdout + second.stderr
    records = [json.loads(line) for line in (out / "log.jsonl").open()]
    all_answers = [r for r in records if r["kind"] == "answer"]
    assert len(all_answers) == 16 and len({r["key"] for r in all_answers}) == 16
    assert all_answers[:5] == answers  # the first run's answers were kept, not redone
    assert json.loads((out / "results.json").read_text())["complete"] is True
