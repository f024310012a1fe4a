"""Tool calls for a model whose chat template has none (the embedded llama.cpp backend).

SmolLM2's template knows system, user and assistant turns only, so when a request offers
tools they are described in the system message (`prompts/local_tools.json`: each tool's
name, description and JSON parameter schema), earlier tool calls are written in the
assistant's turn between the call markers, and tool results come back as user turns. The
reply is decoded under a grammar (`tool_grammar`) whose language is exactly: one call,
`<tool_call>{"name": <one of the tools>, "arguments": {...}}</tool_call>`, or plain text
that does not start with the call's opener. The arguments are a JSON object whose values
are strings, numbers, booleans, null, or arrays and objects of them two levels deep (every
argument of the built-in benchmarks' tools fits: a list of flights, each an object of strings); the
grammar has no recursion, so llama.cpp never walks an unbounded stack. `parse_tool_reply`
reads the call back into a typed `ToolCall` whose id is made from the conversation and the
call (a resumed run makes the same id).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from turnbench.backends.reply_grammar import gbnf_literal
from turnbench.types import Message, ToolCall

LOCAL_TOOLS_VERSION = "local-tools-v1"


@cache
def _prompt() -> dict[str, str]:
    text = resources.files("turnbench").joinpath("prompts/local_tools.json").read_text("utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def _call_text(name: str, arguments: str) -> str:
    prompt = _prompt()
    try:
        shown = json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        shown = arguments
    return f'{prompt["open"]}{{"name": {json.dumps(name)}, "arguments": {shown}}}{prompt["close"]}'


def _type(schema: dict[str, Any]) -> str:
    """A parameter's type in a word or two (an array of objects lists their fields)."""
    kind = schema.get("type", "any")
    if "enum" in schema:
        return " | ".join(json.dumps(choice) for choice in schema["enum"])
    if kind == "array":
        return f"list of {_type(schema.get('items') or {})}"
    if kind == "object" and schema.get("properties"):
        return "{" + _signature(schema) + "}"
    return str(kind)


def _signature(parameters: dict[str, Any]) -> str:
    """A tool's parameters as `name: type, ...` (short: a small model's context is small)."""
    properties = parameters.get("properties") or {}
    return ", ".join(f"{name}: {_type(schema or {})}" for name, schema in properties.items())


def tool_messages(messages: list[Message], tools: tuple[dict[str, Any], ...]) -> list[Message]:
    """The conversation as a model without tool roles reads it (see the module docstring)."""
    prompt = _prompt()
    listed = "\n".join(
        prompt["tool"].format(
            name=tool["function"]["name"],
            description=tool["function"].get("description", ""),
            parameters=_signature(tool["function"].get("parameters") or {}),
        )
        for tool in tools
    )
    instruction = prompt["system"].format(tools=listed)
    shown: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message["role"]
        if role == "assistant" and message.get("tool_calls"):
            calls = message.get("tool_calls") or []
            for call in calls:
                names[call["id"]] = call["function"]["name"]
            text = "\n".join(
                [message["content"]] * bool(message["content"])
                + [_call_text(c["function"]["name"], c["function"]["arguments"]) for c in calls]
            )
            shown.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "tool")
            content = prompt["result"].format(name=name, content=message["content"])
            shown.append({"role": "user", "content": content})
        else:
            shown.append({"role": role, "content": message["content"]})  # type: ignore[typeddict-item]
    if shown and shown[0]["role"] == "system":
        shown[0] = {"role": "system", "content": shown[0]["content"] + "\n\n" + instruction}
    else:
        shown.insert(0, {"role": "system", "content": instruction})
    return shown


_JSON_RULES = [
    r"ws ::= [ ]?",
    r'string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] ){0,400} "\""',
    r'number ::= "-"? [0-9]{1,15} ( "." [0-9]{1,10} )?',
    r'scalar ::= string | number | "true" | "false" | "null"',
    r'list1 ::= "[" ws ( scalar ( "," ws scalar ){0,30} )? ws "]"',
    r'pair1 ::= string ":" ws scalar',
    r'object1 ::= "{" ws ( pair1 ( "," ws pair1 ){0,20} )? ws "}"',
    r"value2 ::= scalar | object1 | list1",
    r'list2 ::= "[" ws ( value2 ( "," ws value2 ){0,30} )? ws "]"',
    r"value ::= scalar | object1 | list2",
    r'pair ::= string ":" ws value',
    r'arguments ::= "{" ws ( pair ( "," ws pair ){0,20} )? ws "}"',
]


def tool_grammar(
    tools: tuple[dict[str, Any], ...], choice: str | dict[str, Any] | None = None
) -> str:
    """The GBNF grammar of a reply: one tool call or plain text (see the module docstring);
    `choice` "required" allows only a call, a named tool (OpenAI's
    `{"type": "function", "function": {"name": ...}}`) only a call to it."""
    prompt = _prompt()
    offered = [tool["function"]["name"] for tool in tools]
    if isinstance(choice, dict):
        offered = [str((choice.get("function") or {}).get("name"))]
    names = " | ".join(gbnf_literal(json.dumps(name)) for name in offered)
    opener = prompt["open"]
    head = gbnf_literal(opener + '{"name": ')
    middle = gbnf_literal(', "arguments": ')
    tail = gbnf_literal("}" + prompt["close"])
    lines = [
        "root ::= call"
        if choice == "required" or isinstance(choice, dict)
        else "root ::= call | text",
        f"call ::= {head} name {middle} arguments {tail}",
        f"name ::= {names}",
        f"text ::= [^{opener[0]}\\x00] [^\\x00]*",
        *_JSON_RULES,
    ]
    return "\n".join(lines) + "\n"


def parse_tool_reply(text: str, messages: list[Message]) -> tuple[str, list[ToolCall]]:
    """(the reply's text, its tool calls): a reply that is one call gives ("", [call]); any
    other text comes back as it is."""
    prompt = _prompt()
    body = text.strip()
    if not (body.startswith(prompt["open"]) and body.endswith(prompt["close"])):
        return text, []
    try:
        value = json.loads(body[len(prompt["open"]) : -len(prompt["close"])])
    except (ValueError, RecursionError):
        return text, []
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return text, []
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return text, []
    made = hashlib.sha256(
        json.dumps([messages, body], ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()[:16]
    written = json.dumps(arguments, ensure_ascii=False)
    return "", [ToolCall(id=f"call_{made}", name=value["name"], arguments=written)]
