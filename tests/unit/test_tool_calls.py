"""Messages with tool calls reach each provider in its own shape and come back as typed calls:
an OpenAI-compatible server (`tools`, `tool_calls`, `role: "tool"`), Anthropic's Messages
API (`tools` with `input_schema`, `tool_use` and `tool_result` blocks) and both batch APIs;
extra fields can neither set nor override a driver's tools; text-only requests are what they
always were."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from turnbench.backends.anthropic_native import AnthropicBackend, build_request, to_completion
from turnbench.backends.fields import check_extra_fields
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.replies import MalformedReplyError, Redactor, parse_completion
from turnbench.backends.retry import RetryPolicy
from turnbench.batch.base import BatchItem
from turnbench.batch.openai_batch import OpenAIBatchClient
from turnbench.errors import RequestFieldConflictError
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.types import Message, RequestParams, ToolCall, ToolCallError

FAST = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.1, request_timeout=10)
KEY = "sk-ant-test-0123456789"
TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "get_order_details",
            "description": "Get the status and details of an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "transfer_to_human_agents",
            "description": "Transfer the user to a human agent.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}},
        },
    },
)
CALL = tool_call("get_order_details", {"order_id": "#W1"}, "call_1")
SECOND = tool_call("transfer_to_human_agents", {"summary": "help"}, "call_2")
#: a whole agent conversation: system, user, two tool calls and their results, text, user
HISTORY: list[Message] = [
    {"role": "system", "content": "Follow the policy."},
    {"role": "user", "content": "Where is my order #W1?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL, SECOND]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_order_details", "content": "{}"},
    {"role": "tool", "tool_call_id": "call_2", "content": "Transfer successful"},
    {"role": "assistant", "content": "It has shipped."},
    {"role": "user", "content": "Thanks."},
]
PARAMS = RequestParams(temperature=0.0, max_tokens=256, tools=TOOLS, tool_choice="required")


def _openai(url: str) -> OpenAICompatBackend:
    return OpenAICompatBackend("openai/agent", "agent", base_url=url, policy=FAST)


def _ask(backend: Any, messages: list[Message], params: RequestParams) -> Any:
    async def run() -> Any:
        try:
            return await backend.complete(messages, params)
        finally:
            await backend.aclose()

    return asyncio.run(run())


def test_an_openai_compatible_server_gets_openais_shape_and_the_calls_come_back_typed():
    def reply(request: dict[str, Any]) -> Reply:
        return Reply(tool_calls=[tool_call("get_order_details", {"order_id": "#W2"}, "c9")])

    with FakeServer(responder=reply) as server:
        completion = _ask(_openai(server.base_url), HISTORY, PARAMS)
        sent = server.requests[0]
    assert sent["tools"] == list(TOOLS) and sent["tool_choice"] == "required"
    called = {"role": "assistant", "content": None, "tool_calls": [CALL, SECOND]}
    assert sent["messages"][2] == called
    assert sent["messages"][3] == HISTORY[3] and sent["messages"][4] == HISTORY[4]
    assert sent["messages"][5:] == HISTORY[5:]
    assert completion.text == "" and completion.finish_reason == "tool_calls"
    assert completion.tool_calls == [
        ToolCall(id="c9", name="get_order_details", arguments='{"order_id": "#W2"}')
    ]
    assert completion.tool_calls[0].parsed_arguments() == {"order_id": "#W2"}
    # the record keeps the tools by name, not their schemas again
    assert completion.sent_params["tools"] == ["get_order_details", "transfer_to_human_agents"]


def test_extra_fields_never_set_or_override_a_drivers_tools():
    with pytest.raises(RequestFieldConflictError, match="tool_choice, tools"):
        check_extra_fields({"tools": [], "tool_choice": "none"}, "--model-extra")
    with FakeServer() as server:
        params = PARAMS.model_copy(update={"extra": {"tools": [], "tool_choice": "none"}})
        _ask(_openai(server.base_url), HISTORY[:2], params)
        sent = server.requests[0]
    assert sent["tools"] == list(TOOLS) and sent["tool_choice"] == "required"


def test_a_text_only_request_is_what_it_always_was():
    messages: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    with FakeServer() as server:
        _ask(_openai(server.base_url), messages, RequestParams(temperature=0.0, max_tokens=9))
        sent = server.requests[0]
    assert sent == {
        "model": "agent",
        "messages": messages,
        "n": 1,
        "temperature": 0.0,
        "max_tokens": 9,
    }


@pytest.mark.parametrize(
    ("calls", "why"),
    [
        ([{"id": "x", "function": {"arguments": "{}"}}], "no function name"),
        ([{"id": "x", "function": {"name": "f", "arguments": 7}}], "arguments are no text"),
        ("not a list", "not a list of calls"),
    ],
)
def test_a_malformed_tool_call_is_a_malformed_reply(calls, why):
    body = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}
    with pytest.raises(MalformedReplyError, match=why):
        parse_completion(json.dumps(body).encode(), Redactor())


def test_a_call_without_an_id_gets_a_stable_one_and_bad_arguments_stay_as_written():
    calls = [{"function": {"name": "f", "arguments": "{not json"}}]
    body = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}
    first = parse_completion(json.dumps(body).encode(), Redactor()).tool_calls[0]
    again = parse_completion(json.dumps(body).encode(), Redactor()).tool_calls[0]
    assert first.id == again.id and first.id.startswith("call_")
    assert first.arguments == "{not json"
    with pytest.raises(ToolCallError, match="not valid JSON"):
        first.parsed_arguments()


def test_anthropics_api_gets_its_own_shape_and_the_calls_come_back_typed():
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return {"text": "Let me look.", "tool_use": [
            {"id": "toolu_1", "name": "get_order_details", "input": {"order_id": "#W3"}}
        ]}  # fmt: skip

    with FakeAnthropic(api_key=KEY, responder=reply) as server:
        backend = AnthropicBackend(
            "anthropic/claude-test", "claude-test", api_key=KEY, base_url=server.base_url,
            policy=FAST, concurrency=2,
        )  # fmt: skip
        completion = _ask(backend, HISTORY, PARAMS)
        sent = server.requests[-1]["json"]
    assert completion.text == "Let me look." and completion.finish_reason == "tool_calls"
    assert completion.tool_calls == [
        ToolCall(id="toolu_1", name="get_order_details", arguments='{"order_id": "#W3"}')
    ]
    assert completion.sent_params["tools"] == ["get_order_details", "transfer_to_human_agents"]
    # what the API received is the body built below (the fake refuses what the real API
    # refuses: blocks out of place, a tool_result answering no tool_use)
    expected = build_request("claude-test", HISTORY, PARAMS)
    assert sent["messages"] == expected["messages"] and sent["tools"] == expected["tools"]
    assert sent["tool_choice"] == {"type": "any"}


def test_the_anthropic_request_body_merges_tool_results_and_names_tool_use():
    body = build_request("m", HISTORY, PARAMS)
    assert body["system"] == [{"type": "text", "text": "Follow the policy."}]
    assert body["tools"] == [
        {
            "name": "get_order_details",
            "input_schema": TOOLS[0]["function"]["parameters"],
            "description": "Get the status and details of an order.",
        },
        {
            "name": "transfer_to_human_agents",
            "input_schema": TOOLS[1]["function"]["parameters"],
            "description": "Transfer the user to a human agent.",
        },
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert body["messages"] == [
        {"role": "user", "content": "Where is my order #W1?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "get_order_details",
                 "input": {"order_id": "#W1"}},
                {"type": "tool_use", "id": "call_2", "name": "transfer_to_human_agents",
                 "input": {"summary": "help"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "{}"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "Transfer successful"},
            ],
        },
        {"role": "assistant", "content": "It has shipped."},
        {"role": "user", "content": "Thanks."},
    ]  # fmt: skip
    named = build_request(
        "m", HISTORY[:2], PARAMS.model_copy(update={"tool_choice": {"type": "function",
        "function": {"name": "get_order_details"}}}),
    )  # fmt: skip
    assert named["tool_choice"] == {"type": "tool", "name": "get_order_details"}
    plain = build_request("m", HISTORY[:2], RequestParams())
    assert "tools" not in plain and plain["messages"] == [HISTORY[1]]


def test_the_fake_anthropic_api_refuses_what_the_real_one_refuses():
    """So that a body the backend gets wrong fails here as it would there: a tool_result
    that answers no tool_use of the turn before it."""
    with FakeAnthropic(api_key=KEY) as server:
        backend = AnthropicBackend(
            "anthropic/claude-test", "claude-test", api_key=KEY, base_url=server.base_url,
            policy=FAST, concurrency=2,
        )  # fmt: skip
        orphan: list[Message] = [
            {"role": "user", "content": "Hi"},
            {"role": "tool", "tool_call_id": "nobody", "content": "x"},
        ]
        from turnbench.errors import RequestFailedError

        with pytest.raises(RequestFailedError, match="tool_use_id"):
            _ask(backend, orphan, RequestParams(max_tokens=10))


def test_anthropic_tool_use_blocks_are_typed_calls():
    message = {
        "content": [
            {"type": "text", "text": "One moment."},
            {"type": "tool_use", "id": "t1", "name": "think", "input": {"thought": "ok"}},
        ],
        "stop_reason": "tool_use",
        "usage": {},
    }
    completion = to_completion(message)
    assert completion.tool_calls == [ToolCall(id="t1", name="think", arguments='{"thought": "ok"}')]
    assert completion.finish_reason == "tool_calls"


def test_the_openai_batch_lines_carry_the_tools_and_the_calls_in_openais_shape():
    client = OpenAIBatchClient.__new__(OpenAIBatchClient)
    client.model, client.token_param = "agent", "auto"
    line = client._line(BatchItem(custom_id="tb-1", messages=HISTORY, params=PARAMS))
    assert line["body"]["tools"] == list(TOOLS)
    assert line["body"]["messages"][2]["content"] is None
    assert line["body"]["messages"][2]["tool_calls"] == [CALL, SECOND]
