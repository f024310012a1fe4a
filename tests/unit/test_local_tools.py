"""Tool calls through the embedded backend, whose model has no tool turns: the tools are
described in the system message, earlier calls and results are written as text turns, and
the reply is one call or plain text by grammar (checked here with an independent matcher;
by llama.cpp itself in tests/integration/test_embedded_tools.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.unit.gbnf_subset import matches
from tests.unit.test_local_worker import make
from turnbench.backends.local import LocalLlamaBackend
from turnbench.backends.local_tools import parse_tool_reply, tool_grammar, tool_messages
from turnbench.errors import UserError
from turnbench.types import Message, ReplyConstraint, RequestParams, ToolCall

FAKE = "turnbench.testing.fake_llama_worker"
TOOLS = (
    {"type": "function", "function": {"name": "get_user_details", "description": "A user.",
     "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "book", "description": "Book flights.",
     "parameters": {"type": "object", "properties": {
         "flights": {"type": "array", "items": {"type": "object", "properties": {
             "flight_number": {"type": "string"}, "date": {"type": "string"}}}},
         "cabin": {"type": "string", "enum": ["economy", "business"]},
         "bags": {"type": "integer"}}}}},
)  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ('<tool_call>{"name": "get_user_details", "arguments": {"user_id": "u1"}}</tool_call>',
         True),
        ('<tool_call>{"name": "book", "arguments": {"flights": [{"flight_number": "HAT001", '
         '"date": "2024-05-01"}], "cabin": "economy", "bags": 2}}</tool_call>', True),
        ("Sure, what is your user id?", True),
        ('<tool_call>{"name": "drop_tables", "arguments": {}}</tool_call>', False),
        ('<tool_call>{"name": "book", "arguments": [1, 2]}</tool_call>', False),
        ('<tool_call>{"name": "book", "arguments": {}}</tool_call> and more', False),
        ("<half a call", False),
        ("", False),
    ],
)  # fmt: skip
def test_the_grammar_allows_one_call_of_an_offered_tool_or_plain_text(reply, accepted):
    assert matches(tool_grammar(TOOLS), reply) is accepted


def test_the_conversation_is_written_for_a_model_without_tool_turns():
    messages: list[Message] = [
        {"role": "system", "content": "The policy."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "get_user_details", "arguments": '{"user_id": "u1"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"name": "Ann"}'},
    ]  # fmt: skip
    shown = tool_messages(messages, TOOLS)
    assert [m["role"] for m in shown] == ["system", "user", "assistant", "user"]
    assert shown[0]["content"].startswith("The policy.\n\nYou can call tools.")
    assert "- get_user_details(user_id: string): A user." in shown[0]["content"]
    assert "flights: list of {flight_number: string, date: string}" in shown[0]["content"]
    assert 'cabin: "economy" | "business"' in shown[0]["content"]
    assert shown[2]["content"] == (
        '<tool_call>{"name": "get_user_details", "arguments": {"user_id": "u1"}}</tool_call>'
    )
    assert shown[3]["content"] == 'Tool result (get_user_details): {"name": "Ann"}'


def test_a_call_reads_back_as_a_typed_call_with_a_stable_id():
    reply = '<tool_call>{"name": "book", "arguments": {"bags": 2}}</tool_call>'
    messages: list[Message] = [{"role": "user", "content": "go"}]
    text, calls = parse_tool_reply(reply, messages)
    assert text == "" and calls[0].name == "book" and json.loads(calls[0].arguments) == {"bags": 2}
    assert parse_tool_reply(reply, messages)[1][0].id == calls[0].id
    assert parse_tool_reply(reply, [*messages, *messages])[1][0].id != calls[0].id
    assert parse_tool_reply("Just text.", messages) == ("Just text.", [])


def test_the_embedded_backend_sends_the_tool_grammar_and_returns_calls(monkeypatch, tmp_path):
    monkeypatch.setattr(LocalLlamaBackend, "worker_module", FAKE)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    params = RequestParams(temperature=0.0, max_tokens=64, tools=TOOLS)

    async def scenario():
        backend = make(gguf)
        try:
            called = await backend.complete([{"role": "user", "content": "call:book"}], params)
            plain = await backend.complete([{"role": "user", "content": "hello"}], params)
        finally:
            await backend.aclose()
        return called, plain

    called, plain = asyncio.run(scenario())
    assert called.text == "" and called.finish_reason == "tool_calls"
    assert [call.name for call in called.tool_calls] == ["book"]
    assert isinstance(called.tool_calls[0], ToolCall)
    assert called.sent_params["tools"] == ["get_user_details", "book"]
    assert plain.text == "echo: hello" and plain.tool_calls == []


def test_a_required_or_named_tool_choice_allows_only_a_call():
    call = '<tool_call>{"name": "book", "arguments": {"bags": 1}}</tool_call>'
    other = '<tool_call>{"name": "get_user_details", "arguments": {}}</tool_call>'
    named = {"type": "function", "function": {"name": "book"}}
    assert matches(tool_grammar(TOOLS, "required"), call)
    assert not matches(tool_grammar(TOOLS, "required"), "Some text.")
    assert matches(tool_grammar(TOOLS, named), call)
    assert not matches(tool_grammar(TOOLS, named), other)
    assert matches(tool_grammar(TOOLS, "auto"), "Some text.")


def test_tools_and_a_reply_constraint_in_one_request_are_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(LocalLlamaBackend, "worker_module", FAKE)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    params = RequestParams(
        max_tokens=64, tools=TOOLS, constraint=ReplyConstraint(kind="rating", choices=("1", "2"))
    )

    async def scenario():
        backend = make(gguf)
        try:
            await backend.complete([{"role": "user", "content": "hi"}], params)
        finally:
            await backend.aclose()

    with pytest.raises(UserError, match="both offer tools and constrain"):
        asyncio.run(scenario())
