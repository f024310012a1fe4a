"""Dollars during a run: the split of live and batch prices, and the worst-case bound that
--max-cost admits requests by (every figure computed by hand from the formula)."""

from __future__ import annotations

import json

import pytest

from turnbench.backends.base import BackendStats
from turnbench.engine.costs import CostMeter, prompt_token_bound, request_bound
from turnbench.judging.formats import ReplyFormat, followup, standard_format
from turnbench.judging.judge import Judge, JudgeSettings
from turnbench.prices import ModelPrice, load_prices, subtract
from turnbench.types import RequestParams, SamplingConfig, Usage


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "models": {
                    "openai/judge": {"input": 2.0, "output": 10.0, "batch_discount": 0.5},
                    "openai/model": {"input": 1.0, "output": 4.0},
                    "anthropic/writer": {
                        "input": 3.0,
                        "cache_write": 3.75,
                        "cached_input": 0.3,
                        "output": 15.0,
                        "batch_discount": 0.5,
                    },
                }
            }
        )
    )
    return load_prices(path)


@pytest.mark.parametrize(
    ("messages", "bound"),
    [
        ([], 3),
        ([{"role": "user", "content": "abcd"}], 4 + 4 + 3),
        # "é" is 2 bytes in UTF-8, "€" 3: one token per byte at most
        ([{"role": "system", "content": "é"}, {"role": "user", "content": "€x"}], 2 + 4 + 8 + 3),
    ],
)
def test_prompt_token_bound(messages, bound):
    assert prompt_token_bound(messages) == bound


@pytest.mark.parametrize(
    ("price", "prompt", "completion", "batch", "dollars"),
    [
        (ModelPrice(input=2.0, output=10.0), 1000, 500, False, (1000 * 2 + 500 * 10) / 1e6),
        # a prompt-cache write costs more than plain input: the bound uses it
        (
            ModelPrice(input=3.0, output=15.0, cache_write=3.75),
            1000,
            0,
            False,
            1000 * 3.75 / 1e6,
        ),
        (
            ModelPrice(input=2.0, output=10.0, batch_discount=0.5),
            1000,
            500,
            True,
            (1000 * 2 + 500 * 10) / 1e6 / 2,
        ),
    ],
)
def test_request_bound(price, prompt, completion, batch, dollars):
    assert request_bound(price, prompt, completion, batch=batch) == pytest.approx(dollars)


@pytest.mark.parametrize(
    ("usage", "batch", "dollars"),
    [
        # all live
        (Usage(prompt_tokens=1000, completion_tokens=100), None, (1000 * 2 + 100 * 10) / 1e6),
        # all in a batch: half price
        (
            Usage(prompt_tokens=1000, completion_tokens=100),
            Usage(prompt_tokens=1000, completion_tokens=100),
            (1000 * 2 + 100 * 10) / 1e6 / 2,
        ),
        # a judgment whose first request went in a batch and whose re-ask went live
        (
            Usage(prompt_tokens=2500, completion_tokens=150),
            Usage(prompt_tokens=1000, completion_tokens=100),
            (1000 * 2 + 100 * 10) / 1e6 / 2 + (1500 * 2 + 50 * 10) / 1e6,
        ),
    ],
)
def test_role_cost_splits_live_and_batch_prices(table, usage, batch, dollars):
    assert table.role_cost("openai/judge", usage, batch) == pytest.approx(dollars)
    assert table.role_cost("openai/unknown", usage, batch) is None


def test_subtract_never_goes_negative():
    left = subtract(Usage(prompt_tokens=5, completion_tokens=1), Usage(prompt_tokens=9))
    assert left == Usage(prompt_tokens=0, completion_tokens=1)


class _Backend:
    spec = "openai/judge"
    stats = BackendStats()


def _judge(max_reasks: int, reask_tokens: int | None = None) -> Judge:
    settings = JudgeSettings(
        spec="openai/judge",
        sampling=SamplingConfig(temperature=0.0, max_tokens=100, reask_max_tokens=reask_tokens),
        max_reasks=max_reasks,
    )
    return Judge(settings, _Backend())  # type: ignore[arg-type]


def test_worst_answer(table):
    meter = CostMeter(table, {"model": "openai/model"})
    messages = [{"role": "user", "content": "x" * 96}]
    worst = meter.worst("model", messages, RequestParams(max_tokens=200))  # type: ignore[arg-type]
    assert worst == pytest.approx(((96 + 4 + 3) * 1.0 + 200 * 4.0) / 1e6)


def test_any_role_a_driver_names_is_priced_by_the_model_that_plays_it(table):
    """A role is a name: a driver's own role ("referee") is bounded like the model's, at
    its player's prices, its re-asks each holding the replies before it."""
    meter = CostMeter(table, {"referee": "openai/judge"})
    messages = [{"role": "user", "content": "x" * 96}]
    once = ((96 + 4 + 3) * 2.0 + 50 * 10.0) / 1e6
    again = ((96 + 4 + 3 + 50 + 8) * 2.0 + 50 * 10.0) / 1e6
    params = RequestParams(max_tokens=50)
    assert meter.worst("referee", messages, params) == pytest.approx(once)  # type: ignore[arg-type]
    assert meter.worst("referee", messages, params, asks=2) == pytest.approx(once + again)  # type: ignore[arg-type]
    assert meter.worst("nobody", messages, params) == 0.0  # type: ignore[arg-type]


@pytest.mark.parametrize("batch", [False, True])
def test_worst_judgment_counts_every_reask_at_live_prices(table, batch):
    meter = CostMeter(
        table, {"openai/judge": "openai/judge"}, frozenset({"openai/judge"} if batch else ())
    )
    reply = standard_format("rating", "rating-strict")
    messages = [{"role": "user", "content": "y" * 1000}]
    prompt = 1000 + 4 + 3
    follow = len(followup("rating").text.encode()) + 4 + 3
    first = (prompt * 2.0 + 100 * 10.0) / 1e6 * (0.5 if batch else 1.0)
    # re-ask 1: the prompt, the first reply (at most 100 tokens) and the follow-up; 30 out
    reask_1 = ((prompt + 100 + 4 + follow) * 2.0 + 30 * 10.0) / 1e6
    # re-ask 2: the previous reply is now at most 30 tokens
    reask_2 = ((prompt + 30 + 4 + follow) * 2.0 + 30 * 10.0) / 1e6
    assert meter.worst_judgment(_judge(2, 30), messages, reply) == pytest.approx(  # type: ignore[arg-type]
        first + reask_1 + reask_2
    )
    no_reask = ReplyFormat(parser="p", parse=reply.parse, followup=None)
    assert meter.worst_judgment(_judge(2, 30), messages, no_reask) == pytest.approx(first)  # type: ignore[arg-type]


def test_logged_cost_of_a_role(table):
    meter = CostMeter(table, {"model": "openai/model"})
    usage = Usage(prompt_tokens=300, completion_tokens=20)
    assert meter.cost("model", usage) == pytest.approx((300 * 1.0 + 20 * 4.0) / 1e6)
    assert meter.cost("someone else", usage) == 0.0


def test_tool_calls_results_and_offered_tools_count_toward_the_prompt_bound():
    """A call-only assistant message carries its arguments, a tool result its call's id,
    and the tools offered are prompt text too: the bound counts all of them (it would be
    7 tokens for the call below if it read `content` alone, under the arguments' 60 bytes)."""
    arguments = json.dumps({"reservation_id": "ZFA04Y", "reason": "change of plan" * 2})
    call = {"id": "call_1", "type": "function",
            "function": {"name": "cancel_reservation", "arguments": arguments}}  # fmt: skip
    calling = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    bound = prompt_token_bound(calling)
    assert bound >= len(arguments) + len("cancel_reservation") + len("call_1") + 8 + 4 + 3
    result = [{"role": "tool", "tool_call_id": "call_" + "9" * 40, "content": "ok"}]
    assert prompt_token_bound(result) == 3 + 4 + 2 + 45
    tools = ({"type": "function", "function": {"name": "think", "description": "x" * 500,
              "parameters": {"type": "object", "properties": {}}}},)  # fmt: skip
    offered = RequestParams(max_tokens=8, tools=tools)
    assert prompt_token_bound(calling, offered) - bound == len(json.dumps(list(tools))) + 16
