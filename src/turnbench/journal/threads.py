"""Whole requests from the records of a thread, which keep only what each step appended.

A record of a growing conversation (an answer, a simulated user's turn, an agent's step)
keeps `messages`: the messages its step added to the request and reply of the step its
`after` names (`engine.history.Thread` writes them so); a record without `after` keeps its
whole request, as every record written before threads did. The whole request of a step is
its chain, oldest first: each step's kept messages followed by its reply. Records are read
here as the JSON objects of the log's lines, so any reader (a test, an export, another
tool) gets whole requests without turnbench's record types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: the record kinds that keep a request in a thread
THREADED = ("answer", "user_turn")

Lookup = Callable[[str], Mapping[str, Any] | None]


def reply_message(record: Mapping[str, Any]) -> dict[str, Any]:
    """The message a step's reply adds to its thread: the text it kept (an answer's cleaned
    text, a user turn's text), with the tool calls the conversation kept of it (its first
    `kept_calls`, when a driver ran only those)."""
    message: dict[str, Any] = {"role": "assistant", "content": record.get("text") or ""}
    calls = record.get("tool_calls")
    kept = record.get("kept_calls")
    if isinstance(calls, list) and isinstance(kept, int) and kept >= 0:
        calls = calls[:kept]
    if calls:
        message["tool_calls"] = calls
    return message


def whole_request(record: Mapping[str, Any], lookup: Lookup) -> list[dict[str, Any]] | None:
    """The whole request of `record`; None when its chain is broken (a step it names is not
    in the log, or names itself again: a damaged or hostile log)."""
    kept = record.get("messages")
    if not isinstance(kept, list):
        return None
    parts: list[list[dict[str, Any]]] = [kept]
    seen: set[str] = set()
    after = record.get("after")
    while after is not None:
        if not isinstance(after, str) or after in seen:
            return None
        seen.add(after)
        step = lookup(after)
        if step is None or not isinstance(step.get("messages"), list):
            return None
        parts.append([*step["messages"], reply_message(step)])
        after = step.get("after")
    whole: list[dict[str, Any]] = []
    for part in reversed(parts):
        whole.extend(part)
    return whole


def with_whole_requests(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`records` (log lines as objects, in log order) with every threaded record's
    `messages` made whole; the latest record of a key is the step its later records
    continue. A record whose chain is broken keeps what it kept."""
    listed = [dict(record) for record in records]
    latest: dict[str, dict[str, Any]] = {}
    for record in listed:
        if record.get("kind") in THREADED and isinstance(record.get("key"), str):
            latest[record["key"]] = record
    original = {key: dict(record) for key, record in latest.items()}
    for record in listed:
        if record.get("kind") in THREADED and record.get("after") is not None:
            whole = whole_request(record, original.get)
            if whole is not None:
                record["messages"] = whole
    return listed
