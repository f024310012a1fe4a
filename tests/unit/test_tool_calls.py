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
from turnbench.backends.replies import (
    MAX_TOOL_CALLS,
    MalformedReplyError,
    Redactor,
    loads_reply,
    parse_completion,
)
from turnbench.backends.retry import RetryPolicy
from turnbench.batch import anthropic_batch, openai_batch
from turnbench.batch.base import BatchHandle, BatchItem, jsonl_objects
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
        ([{"id": "x", "function": {"name": 7}}], "no function name"),
        ([{"id": "x", "function": "f"}], "no function object"),
        (["f"], "no function object"),
        ("not a list", "tool_calls is not a list"),
    ],
)
def test_a_call_the_server_broke_is_a_malformed_reply(calls, why):
    """What the server owes (a list of call objects, each naming its function) is its
    format: broken, the reply is retried. What the model wrote is kept (below)."""
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


# -- one rule for the tool calls of a reply, on every provider (issue 44, class 3) ----------
def _openai_reply(calls: list[Any]) -> bytes:
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return json.dumps({"choices": [{"message": message, "finish_reason": "tool_calls"}]}).encode()


def _anthropic_reply(blocks: list[Any]) -> dict[str, Any]:
    return {"content": blocks, "stop_reason": "tool_use", "usage": {}}


def _both(given: list[Any]) -> tuple[list[ToolCall], list[ToolCall]]:
    """The calls of one reply holding (name, id, arguments) triples `given`, read from an
    OpenAI-compatible body (`arguments`) and from an Anthropic message (`input`)."""
    openai = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
              for n, i, a in given]  # fmt: skip
    anthropic = [{"type": "tool_use", "id": i, "name": n, "input": a} for n, i, a in given]
    first = parse_completion(_openai_reply(openai), Redactor()).tool_calls
    second = to_completion(_anthropic_reply(anthropic)).tool_calls
    return first, second


@pytest.mark.parametrize(
    ("given", "arguments"),
    [
        ({"order_id": "#W1"}, '{"order_id": "#W1"}'),
        ([1, 2], "[1, 2]"),  # on 6f7f1ce: OpenAI malformed, Anthropic ran it as {}
        (None, "null"),  # (the same)
        (7, "7"),  # (the same)
        ({"amount": float("nan")}, '{"amount": NaN}'),  # kept: refused where it is run
        ({"name": "\ud800"}, '{"name": "\\ud800"}'),  # a lone surrogate as its escape
    ],
)  # fmt: skip
def test_arguments_of_any_type_are_kept_as_their_json_text_on_both_providers(given, arguments):
    """An object sent in place of OpenAI's text, and every `input` of Anthropic's, is kept
    as the JSON text of what the model wrote, whatever its type: the same calls from both."""
    openai, anthropic = _both([("f", "c1", given)])
    assert openai == anthropic == [ToolCall(id="c1", name="f", arguments=arguments)]


def test_a_string_is_openais_arguments_text_but_anthropics_wrong_input():
    """OpenAI's `arguments` is the text of the arguments; Anthropic's `input` is their
    value, so a string there is a wrong value (its JSON text, refused where it is run)."""
    openai = parse_completion(_openai_reply([{"id": "c1", "function": {
        "name": "f", "arguments": '{"a": 1}'}}]), Redactor()).tool_calls  # fmt: skip
    anthropic = to_completion(_anthropic_reply([{"type": "tool_use", "id": "c1", "name": "f",
                                                 "input": '{"a": 1}'}])).tool_calls  # fmt: skip
    assert openai[0].arguments == '{"a": 1}' and anthropic[0].arguments == '"{\\"a\\": 1}"'
    absent = to_completion(_anthropic_reply([{"type": "tool_use", "id": "c1", "name": "f"}]))
    assert absent.tool_calls[0].arguments == "{}"  # (as OpenAI's absent arguments)


def test_a_reply_keeps_its_first_64_calls_on_both_providers():
    """On 6f7f1ce an OpenAI-compatible reply of 65 calls was malformed and retried, and an
    Anthropic one of 1,000 blocks kept them all: the providers disagreed."""
    given = [("f", f"c{n}", {"n": n}) for n in range(1000)]
    openai, anthropic = _both(given)
    assert openai == anthropic and len(openai) == MAX_TOOL_CALLS == 64
    assert [call.id for call in openai] == [f"c{n}" for n in range(64)]


def test_a_call_without_an_id_gets_the_same_made_id_on_both_providers():
    """On 6f7f1ce an Anthropic tool_use without an id was a malformed reply."""
    openai, anthropic = _both([("f", None, {"a": 1})])
    assert openai == anthropic and openai[0].id.startswith("call_")
    with pytest.raises(MalformedReplyError, match="no function name"):
        to_completion(_anthropic_reply([{"type": "tool_use", "id": "c1", "input": {}}]))


def test_arguments_10000_levels_deep_are_kept_as_the_text_the_server_sent():
    """A body too deep for Python's reader is read with the deep value kept as its text.
    On 6f7f1ce: the OpenAI-compatible reply was malformed ("not JSON"); the Anthropic SDK
    raised RecursionError, which ended the run."""
    deep = "[" * 10_000 + "]" * 10_000
    call_json = '{"id": "c1", "function": {"name": "f", "arguments": {"a": ' + deep + "}}}"
    body = ('{"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": '
            "[" + call_json + "]}}]}")  # fmt: skip
    (call,) = parse_completion(body.encode(), Redactor()).tool_calls
    assert call.arguments == '{"a": ' + deep + "}"
    message = loads_reply('{"content": [{"type": "tool_use", "id": "c1", "name": "f", '
                          '"input": ' + deep + '}], "usage": {}}')  # fmt: skip
    assert to_completion(message).tool_calls[0].arguments == deep
    # a deep value anywhere else is no value the reader takes: a malformed reply
    with pytest.raises(MalformedReplyError, match="content is null"):
        parse_completion(('{"choices": [{"message": {"content": ' + deep + "}}]}").encode(),
                         Redactor())  # fmt: skip
    with pytest.raises(ValueError):  # (brackets that never balance stay unreadable)
        loads_reply("[" * 10_000)


def test_the_batch_results_are_read_by_the_same_rule():
    """Both batch APIs read their results as the live paths do: a results line 10,000
    levels deep is read (on 6f7f1ce: RecursionError out of the results reader), the first
    64 calls kept, an `input: null` kept as "null" (on 6f7f1ce: `{}`), OpenAI arguments
    that are an array kept as "[1, 2]" (on 6f7f1ce: an item error, "arguments are no
    text")."""
    deep = "[" * 10_000 + "]" * 10_000
    blocks = [{"type": "tool_use", "id": f"t{n}", "name": "f", "input": None} for n in range(99)]
    message = json.dumps(_anthropic_reply(blocks))[:-1] + ', "extra": ' + deep + "}"
    line = '{"custom_id": "a", "result": {"type": "succeeded", "message": ' + message + "}}"
    (parsed,) = jsonl_objects(line + "\n{not json\n")
    handle = BatchHandle(provider="anthropic", model="m", endpoint="e", batch_id="b",
                         custom_ids={"a": 0}, sent_params=[{}])  # fmt: skip
    completion = anthropic_batch.item_result(parsed, handle)
    assert len(completion.tool_calls) == 64 and completion.tool_calls[0].arguments == "null"
    body = json.loads(_openai_reply([{"id": "c", "function": {"name": "f", "arguments": [1, 2]}}]))
    found = openai_batch.item_result(
        {"custom_id": "a", "response": {"status_code": 200, "body": body}}, handle
    )
    assert found.tool_calls == [ToolCall(id="c", name="f", arguments="[1, 2]")]
