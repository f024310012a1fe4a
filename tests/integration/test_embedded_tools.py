"""The real embedded model (llama.cpp + SmolLM2 in its worker process) offered two tools.

Under the tool grammar every reply is either one typed call of an offered tool with JSON
object arguments, or plain text that does not open a call; with tool_choice "required" it
is always a call, with a named tool always a call of that tool. llama.cpp itself accepts the
grammar, and a raw reply decoded under it is in its language by the independent matcher
(tests/unit/gbnf_subset.py). What a 135M model says means nothing: the shape is the point.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.bounded import within
from tests.unit.gbnf_subset import matches
from turnbench.backends.local import LocalLlamaBackend
from turnbench.backends.local_tools import tool_grammar, tool_messages
from turnbench.types import Message, RequestParams

pytestmark = pytest.mark.integration


def tool(name: str, description: str, argument: str) -> dict:
    parameters = {
        "type": "object",
        "properties": {argument: {"type": "string"}},
        "required": [argument],
    }
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOLS = (
    tool("get_weather", "The weather in a city now.", "city"),
    tool("get_time", "The time in a time zone now.", "zone"),
)
ASK: list[Message] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Paris right now?"},
]
NAMED = {"type": "function", "function": {"name": "get_time"}}


def test_the_model_calls_an_offered_tool_or_writes_text_and_the_grammar_holds():
    steps: list[str] = []
    cases = [("auto", 0.0, 0), ("auto", 1.0, 1), ("required", 1.0, 2), (NAMED, 0.7, 3)]

    async def scenario():
        backend = LocalLlamaBackend("local/smollm2", "smollm2")
        steps.append("engine started")
        replies = []
        try:
            for choice, temperature, seed in cases:
                params = RequestParams(
                    temperature=temperature,
                    max_tokens=96,
                    extra={"seed": seed},
                    tools=TOOLS,
                    tool_choice=choice,
                )
                replies.append((choice, await backend.complete(ASK, params)))
                steps.append(f"reply {len(replies)} of {len(cases)}")
            grammar = tool_grammar(TOOLS, "required")
            raw = await backend.engine.generate(
                tool_messages(ASK, TOOLS),
                {"temperature": 1.0, "max_tokens": 160, "seed": 5},
                grammar=grammar,
            )
            steps.append("the raw reply")
        finally:
            await backend.aclose()
        return replies, grammar, raw

    replies, grammar, raw = within(600, scenario(), steps)
    for choice, reply in replies:
        assert reply.sent_params["tools"] == ["get_weather", "get_time"]
        if reply.tool_calls:
            [call] = reply.tool_calls
            assert call.name in {"get_weather", "get_time"}
            assert isinstance(json.loads(call.arguments), dict)
            assert reply.text == "" and reply.finish_reason == "tool_calls"
        else:  # the grammar's other branch: text that does not open a call
            assert choice == "auto", reply
            assert reply.text and not reply.text.startswith("<"), reply.text
        if choice == "required":
            assert len(reply.tool_calls) == 1
        if choice == NAMED:
            assert [call.name for call in reply.tool_calls] == ["get_time"]
    assert raw["finish_reason"] == "stop" and matches(grammar, raw["text"]), raw["text"]
