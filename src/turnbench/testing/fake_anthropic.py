"""A fake Anthropic API on 127.0.0.1: the Messages API and the Message Batches API.

Endpoints (as documented by Anthropic): POST /v1/messages; POST /v1/messages/batches;
GET /v1/messages/batches/{id}; POST /v1/messages/batches/{id}/cancel;
GET /v1/messages/batches/{id}/results (JSONL). Requests need the key (`x-api-key`, or
`Authorization: Bearer` as SDK 2.x sends it) when the fake has one, and `anthropic-version`.

It checks what the real API requires of a request (max_tokens, only user/assistant roles in
`messages`, non-empty system text blocks) and simulates prompt caching: a system prefix
marked with cache_control is written to the cache the first time and read afterwards,
which shows in `usage` as the real API reports it. Test hooks: `script` (canned replies,
e.g. 529 or 429 with retry-after), `reject_temperature`, `fail_ids` (batch items that end
"errored"), `drop_ids` (items missing from the results), `expire` (the batch expires),
`polls_to_end` (polls a batch stays in progress), `results_origin` (results_url on another
host), `batch_creates` and `items_submitted` (to prove nothing was submitted twice).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from turnbench.testing.fake_http import FakeBatchAPI

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _error(status: int, kind: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status)


def default_reply(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    content = last.get("content", "")
    text = content if isinstance(content, str) else json.dumps(content)
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]
    return f"Claude {digest}: a reply to '{text[:40]}'."


class FakeAnthropic(FakeBatchAPI):
    batch_prefix = "msgbatch"

    def __init__(
        self,
        *,
        api_key: str | None = "test-anthropic-key",
        responder: Callable[[dict[str, Any]], str | dict[str, Any] | bytes] = default_reply,
        polls_to_end: int = 2,
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.responder = responder
        self.polls_to_end = polls_to_end
        self.reject_temperature = False
        # seconds between the bytes of a Messages reply (a server that trickles its body)
        self.trickle: float | None = None
        self.results_origin: str | None = None  # serve results_url on another origin
        self._cache: set[str] = set()

    @property
    def base_url(self) -> str:
        return self.origin

    def routes(self) -> list[web.RouteDef]:
        batch = "/v1/messages/batches/{batch_id}"
        return [
            self.route("POST", "/v1/messages", self._messages, "messages"),
            self.route("POST", "/v1/messages/batches", self._create_batch, "batch_create"),
            self.route("GET", "/v1/messages/batches", self._list_batches, "batch_list"),
            self.route("GET", batch, self._get_batch, "batch_get"),
            self.route("POST", f"{batch}/cancel", self._cancel_batch, "batch_cancel"),
            self.route("GET", f"{batch}/results", self._batch_results, "batch_results"),
        ]

    # -- checks shared by every endpoint ---------------------------------------------------
    @staticmethod
    def key_sent(request: web.Request) -> str | None:
        """The key of a request: `x-api-key`, or `Authorization: Bearer` (what SDK 2.x sends)."""
        bearer = request.headers.get("Authorization", "")
        if bearer.startswith("Bearer "):
            return bearer[len("Bearer ") :]
        return request.headers.get("x-api-key")

    def refuse(self, request: web.Request) -> web.Response | None:
        if self.api_key is not None and self.key_sent(request) != self.api_key:
            return _error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        return self.scripted(request)

    def _invalid(self, body: Any) -> str | None:
        """Why the real API would reject this Messages request body, or None."""
        if not isinstance(body, dict):
            return "body must be a JSON object"
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            return "max_tokens: field required"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: field required"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        for index, message in enumerate(messages):
            if message.get("role") not in ("user", "assistant"):
                return f"messages.{index}.role: Input should be 'user' or 'assistant'"
            problem = self._invalid_blocks(messages, index)
            if problem is not None:
                return problem
        for index, tool in enumerate(body.get("tools") or []):
            if not isinstance(tool, dict) or not tool.get("name") or "input_schema" not in tool:
                return f"tools.{index}: a tool needs a name and an input_schema"
        system = body.get("system")
        if isinstance(system, list):
            for index, block in enumerate(system):
                if block.get("type") != "text" or not block.get("text"):
                    return f"system.{index}: text content blocks must be non-empty"
        if self.reject_temperature and "temperature" in body:
            return "`temperature` is deprecated for this model."
        return None

    @staticmethod
    def _invalid_blocks(messages: list[Any], index: int) -> str | None:
        """The API's rules on content blocks: text blocks are not empty, `tool_use` only
        in assistant turns, and every `tool_result` answers a `tool_use` of the assistant
        turn right before it."""
        content = messages[index].get("content")
        if isinstance(content, str):
            return None
        if not isinstance(content, list) or not content:
            return f"messages.{index}.content: a non-empty list of blocks or a string"
        role = messages[index]["role"]
        asked = set()
        if index > 0 and isinstance(messages[index - 1].get("content"), list):
            asked = {
                b.get("id") for b in messages[index - 1]["content"] if b.get("type") == "tool_use"
            }
        for number, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            where = f"messages.{index}.content.{number}"
            if kind == "text" and not block.get("text"):
                return f"{where}: text content blocks must be non-empty"
            if kind == "tool_use" and (
                role != "assistant" or not isinstance(block.get("input"), dict)
            ):
                return f"{where}: tool_use blocks belong to assistant turns, with an input object"
            if kind == "tool_result" and (role != "user" or block.get("tool_use_id") not in asked):
                return (
                    f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: each "
                    "tool_result must answer a tool_use of the previous message"
                )
        return None

    def _usage(self, body: dict[str, Any], output: int) -> dict[str, int]:
        system = body.get("system")
        blocks = system if isinstance(system, list) else []
        if isinstance(system, str):
            blocks = [{"type": "text", "text": system}]
        prefix, cached_len, rest = "", 0, 0
        for block in blocks:
            prefix += block["text"]
            if "cache_control" in block:
                cached_len = len(prefix)
        rest = len(prefix) - cached_len
        read = written = 0
        if cached_len:
            key = hashlib.sha256(prefix[:cached_len].encode()).hexdigest()
            if key in self._cache:
                read = _tokens(prefix[:cached_len])
            else:
                self._cache.add(key)
                written = _tokens(prefix[:cached_len])
        conversation = json.dumps(body.get("messages"))
        return {
            "input_tokens": _tokens(conversation) + (rest // 4),
            "output_tokens": output,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    def _message(
        self, body: dict[str, Any], reply: str | dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The reply: the responder's text (a string), or {"text", "tool_use": [{"id",
        "name", "input"}]} for a reply that calls tools (`reply`: the responder's answer,
        when asked already)."""
        if reply is None:
            found = self.responder(body)
            assert not isinstance(found, bytes), "raw bytes are sent by the Messages API only"
            reply = found
        calls = reply.get("tool_use", []) if isinstance(reply, dict) else []
        text = str(reply.get("text", "")) if isinstance(reply, dict) else reply
        limit = int(body["max_tokens"])
        stop = "tool_use" if calls else "end_turn"
        if _tokens(text) > limit:
            text, stop = text[: limit * 4], "max_tokens"
        usage = self._usage(body, _tokens(text) + _tokens(json.dumps(calls)))
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": "(hidden reasoning)", "signature": "x"}
        ]
        if text:
            blocks += [
                {"type": "text", "text": text[: len(text) // 2] or text},
                *([{"type": "text", "text": text[len(text) // 2 :]}] if len(text) > 1 else []),
            ]
        blocks += [{"type": "tool_use", **call} for call in calls]
        return {
            "id": "msg_" + hashlib.sha256(json.dumps(body).encode()).hexdigest()[:20],
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def _payload(self, body: dict[str, Any]) -> bytes:
        """The reply's bytes: a responder that returns bytes has them sent exactly as
        given (what no JSON encoder writes: a bare NaN, nesting deeper than the encoder
        goes), else the message as JSON."""
        reply = self.responder(body)
        if isinstance(reply, bytes):
            return reply
        return json.dumps(self._message(body, reply)).encode()

    # -- Messages API ----------------------------------------------------------------------
    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await self.json_body(request)
        problem = self._invalid(body)
        if problem is not None:
            return _error(400, "invalid_request_error", problem)
        if self.trickle is None:
            return web.Response(body=self._payload(body), content_type="application/json")
        payload = self._payload(body)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(payload)
        await response.prepare(request)
        try:
            for index in range(len(payload)):
                await response.write(payload[index : index + 1])
                await asyncio.sleep(self.trickle)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client gave up: that is the point
        return response

    # -- Message Batches API ---------------------------------------------------------------
    def _batch_json(self, batch: dict[str, Any]) -> dict[str, Any]:
        counts = Counter(outcome for outcome in batch["outcomes"].values())
        ended = batch["ended_at"] is not None
        processing = 0 if ended else len(batch["items"])
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": batch["status"],
            "request_counts": {
                "processing": processing,
                "succeeded": counts["succeeded"],
                "errored": counts["errored"],
                "canceled": counts["canceled"],
                "expired": counts["expired"],
            },
            "created_at": _iso(batch["created_at"]),
            "expires_at": _iso(batch["created_at"] + 86400),
            "ended_at": _iso(batch["ended_at"]),
            "cancel_initiated_at": _iso(batch["cancel_at"]),
            "archived_at": None,
            "results_url": (
                f"{self.results_origin or self.origin}/v1/messages/batches/{batch['id']}/results"
                if ended
                else None
            ),
        }

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        body = await self.json_body(request)
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: at least one is required")
        items: dict[str, dict[str, Any]] = {}
        for index, entry in enumerate(requests):
            custom_id = entry.get("custom_id")
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return _error(400, "invalid_request_error", f"requests.{index}.custom_id invalid")
            if custom_id in items:
                return _error(400, "invalid_request_error", f"duplicate custom_id {custom_id}")
            items[custom_id] = entry.get("params") or {}
        with self._lock:
            batch = self.add_batch(items, status="in_progress", ended_at=None, cancel_at=None)
        return web.json_response(self._batch_json(batch))

    async def _list_batches(self, request: web.Request) -> web.Response:
        """Newest first, `limit` and `after_id` as documented."""
        return web.json_response(self.page(request, "after_id"))

    def _finish(self, batch: dict[str, Any], *, canceled: bool) -> None:
        for custom_id, params in batch["items"].items():
            if custom_id in self.drop_ids:
                continue
            if canceled:
                outcome = "canceled"
            elif self.expire:
                outcome = "expired"
            elif custom_id in self.fail_ids or self._invalid(params) is not None:
                outcome = "errored"
            else:
                outcome = "succeeded"
            batch["outcomes"][custom_id] = outcome
        batch["status"] = "ended"
        batch["ended_at"] = time.time()

    async def _get_batch(self, request: web.Request) -> web.Response:
        batch = self.batch_of(request, _error(404, "not_found_error", "batch not found"))
        with self._lock:
            batch["polls"] += 1
            if batch["status"] == "canceling":
                self._finish(batch, canceled=True)
            elif batch["status"] == "in_progress" and batch["polls"] > self.polls_to_end:
                self._finish(batch, canceled=False)
        return web.json_response(self._batch_json(batch))

    async def _cancel_batch(self, request: web.Request) -> web.Response:
        batch = self.batch_of(request, _error(404, "not_found_error", "batch not found"))
        with self._lock:
            if batch["status"] == "in_progress":
                batch["status"] = "canceling"
                batch["cancel_at"] = time.time()
        return web.json_response(self._batch_json(batch))

    async def _batch_results(self, request: web.Request) -> web.Response:
        missing = _error(404, "not_found_error", "results not available")
        batch = self.batch_of(request, missing)
        if batch["ended_at"] is None:
            return missing
        lines = []
        for custom_id, outcome in batch["outcomes"].items():
            params = batch["items"][custom_id]
            result: dict[str, Any] = {"type": outcome}
            if outcome == "succeeded":
                result["message"] = self._message(params)
            elif outcome == "errored":
                why = self._invalid(params) or "simulated failure of this item"
                result["error"] = {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": why},
                }
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        lines.append("{not json")  # a damaged line must not break the others
        return web.Response(
            body=("\n".join(lines) + "\n").encode(), content_type="application/binary"
        )
