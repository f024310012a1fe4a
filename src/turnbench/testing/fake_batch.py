"""A fake OpenAI Files + Batch API on 127.0.0.1.

Endpoints (as documented by OpenAI): POST /v1/files (multipart: purpose, file);
GET /v1/files/{id}/content; POST /v1/batches; GET /v1/batches/{id}; GET /v1/batches (list,
newest first, `limit` and `after`); POST /v1/batches/{id}/cancel. Requests need
`Authorization: Bearer KEY` when the fake has a key.

A batch validates its input file like the real service (every line a JSON object with a
unique custom_id, method POST, the batch's endpoint as url, a body; one model for the whole
file) and goes validating -> in_progress -> finalizing -> completed over `polls_per_state`
polls each, then has an output file (one line per succeeded request) and an error file
(one line per failed request). Test hooks: `fail_ids` (items answered with HTTP 400 in the
error file), `drop_ids` (items missing from both files), `expire` (the batch expires and
unprocessed items are reported with code batch_expired), `ambiguous_creates` (that many
batch creations succeed but answer HTTP 500, as when a response is lost),
`batch_creates`, `uploads` and `items_submitted` (to prove nothing was submitted twice).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiohttp import web

from turnbench.testing.fake_http import FakeBatchAPI
from turnbench.testing.fake_server import choice_body, completion_body

STATES = ("validating", "in_progress", "finalizing", "completed")


def _error(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}, status=status
    )


def chat_completion(
    body: dict[str, Any], *, request_id: str, content: str | None = None
) -> dict[str, Any]:
    """A deterministic chat.completion for a request body, with cached-token usage."""
    messages = body.get("messages") or []
    text = json.dumps(messages)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    last = messages[-1].get("content", "") if messages else ""
    reply = content if content is not None else f"Batch answer {digest} to '{str(last)[:30]}'."
    prompt = max(1, len(text) // 4)
    choice = choice_body(reply)
    if body.get("logprobs"):
        top = int(body.get("top_logprobs") or 0)
        choice["logprobs"] = {
            "content": [
                {
                    "token": "Batch",
                    "logprob": -0.01,
                    "bytes": None,
                    "top_logprobs": [
                        {"token": "Batch", "logprob": -0.01, "bytes": None},
                        {"token": "Other", "logprob": -4.6, "bytes": None},
                    ][:top],
                }
            ]
        }
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": max(1, len(reply) // 4),
        "total_tokens": prompt + max(1, len(reply) // 4),
        "prompt_tokens_details": {"cached_tokens": prompt // 2},
    }
    return completion_body(request_id, f"{body.get('model')}-2024-07-18", [choice], usage)


class FakeOpenAIBatch(FakeBatchAPI):
    batch_prefix = "batch"

    def __init__(
        self,
        *,
        api_key: str | None = "test-openai-key",
        polls_per_state: int = 1,
        responder: Callable[[dict[str, Any]], str] | None = None,
    ):
        super().__init__()
        self.api_key = api_key
        self.polls_per_state = polls_per_state
        # the reply text of a request body (default: "Batch answer ..."); also used by the
        # live POST /v1/chat/completions this fake serves for requests sent outside batches
        self.responder = responder
        self.live_requests = 0
        self.ambiguous_creates = 0
        self.uploads = 0
        self.files: dict[str, dict[str, Any]] = {}

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def routes(self) -> list[web.RouteDef]:
        return [
            self.route("POST", "/v1/files", self._upload, "file_upload"),
            self.route("GET", "/v1/files/{file_id}/content", self._content, "file_content"),
            self.route("POST", "/v1/batches", self._create, "batch_create"),
            self.route("GET", "/v1/batches", self._list, "batch_list"),
            self.route("GET", "/v1/batches/{batch_id}", self._get, "batch_get"),
            self.route("POST", "/v1/batches/{batch_id}/cancel", self._cancel, "batch_cancel"),
            self.route("POST", "/v1/chat/completions", self._chat, "chat"),
            self.route("GET", "/v1/models", self._models, None),  # neither counted nor recorded
        ]

    def _reply_text(self, body: dict[str, Any]) -> str | None:
        return self.responder(body) if self.responder is not None else None

    async def _chat(self, request: web.Request) -> web.Response:
        body = await self.json_body(request)
        with self._lock:
            self.live_requests += 1
            request_id = f"live_{self.live_requests}"
        return web.json_response(
            chat_completion(body, request_id=request_id, content=self._reply_text(body))
        )

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": []})

    def refuse(self, request: web.Request) -> web.Response | None:
        expected = f"Bearer {self.api_key}"
        if self.api_key is not None and request.headers.get("Authorization") != expected:
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        return self.scripted(request)

    def _new_file(self, content: bytes, purpose: str, filename: str) -> dict[str, Any]:
        file_id = f"file-{len(self.files) + 1:04d}"
        record = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.files[file_id] = {"meta": record, "content": content}
        return record

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        purpose = form.get("purpose")
        upload = form.get("file")
        if purpose != "batch" or upload is None or not hasattr(upload, "file"):
            return _error(400, "multipart fields 'purpose'='batch' and 'file' are required")
        content = upload.file.read()
        with self._lock:
            self.uploads += 1
            record = self._new_file(content, "batch", upload.filename or "input.jsonl")
        return web.json_response(record)

    async def _content(self, request: web.Request) -> web.Response:
        stored = self.files.get(request.match_info["file_id"])
        if stored is None:
            return _error(404, "No such File object")
        return web.Response(body=stored["content"], content_type="application/octet-stream")

    def _validate(self, content: bytes, endpoint: str) -> tuple[dict[str, dict], list[str]]:
        items: dict[str, dict] = {}
        errors: list[str] = []
        models = set()
        for number, line in enumerate(content.decode("utf-8").splitlines(), start=1):
            try:
                entry = json.loads(line)
            except ValueError:
                errors.append(f"line {number}: not JSON")
                continue
            custom_id = entry.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                errors.append(f"line {number}: custom_id missing")
            elif custom_id in items:
                errors.append(f"line {number}: duplicate custom_id {custom_id}")
            elif entry.get("method") != "POST" or entry.get("url") != endpoint:
                errors.append(f"line {number}: method must be POST and url {endpoint}")
            elif not isinstance(entry.get("body"), dict):
                errors.append(f"line {number}: body missing")
            else:
                items[custom_id] = entry["body"]
                models.add(entry["body"].get("model"))
        if len(models) > 1:
            errors.append("all requests in a batch must use the same model")
        return items, errors

    def _batch_json(self, batch: dict[str, Any]) -> dict[str, Any]:
        counts = Counter(batch["outcomes"].values())
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": batch["endpoint"],
            "input_file_id": batch["input_file_id"],
            "completion_window": "24h",
            "status": batch["status"],
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": batch.get("error_file_id"),
            "created_at": int(batch["created_at"]),
            "errors": (
                {
                    "object": "list",
                    "data": [{"code": "invalid", "message": m} for m in batch["errors"]],
                }
                if batch["errors"]
                else None
            ),
            "metadata": batch["metadata"],
            "request_counts": {
                "total": len(batch["items"]),
                "completed": counts["completed"],
                "failed": counts["failed"],
            },
        }

    async def _create(self, request: web.Request) -> web.Response:
        body = await self.json_body(request)
        if not isinstance(body, dict) or body.get("completion_window") != "24h":
            return _error(400, "completion_window must be '24h'")
        stored = self.files.get(str(body.get("input_file_id")))
        if stored is None:
            return _error(400, "input_file_id not found")
        endpoint = body.get("endpoint")
        items, errors = self._validate(stored["content"], str(endpoint))
        with self._lock:
            batch = self.add_batch(
                items,
                endpoint=endpoint,
                input_file_id=body["input_file_id"],
                metadata=body.get("metadata"),
                errors=errors,
                status="failed" if errors else "validating",
            )
            lost = self.ambiguous_creates > 0
            if lost:
                self.ambiguous_creates -= 1
        if lost:
            return _error(
                500, "The server had an error while processing your request.", "server_error"
            )
        return web.json_response(self._batch_json(batch))

    async def _list(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", **self.page(request, "after")})

    def _finish(self, batch: dict[str, Any], status: str) -> None:
        output, errors = [], []
        for index, (custom_id, body) in enumerate(batch["items"].items()):
            request_id = f"req_{batch['id']}_{index}"
            line: dict[str, Any] = {"id": f"batch_req_{index}", "custom_id": custom_id}
            if custom_id in self.drop_ids:
                continue
            if status in ("expired", "cancelled"):
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                line.update(
                    response=None,
                    error={"code": code, "message": f"request not executed: batch {status}"},
                )
                errors.append(line)
                batch["outcomes"][custom_id] = "failed"
            elif custom_id in self.fail_ids:
                line.update(
                    response={
                        "status_code": 400,
                        "request_id": request_id,
                        "body": {
                            "error": {
                                "message": "simulated failure of this item",
                                "type": "invalid_request_error",
                            }
                        },
                    },
                    error=None,
                )
                errors.append(line)
                batch["outcomes"][custom_id] = "failed"
            else:
                line.update(
                    response={
                        "status_code": 200,
                        "request_id": request_id,
                        "body": chat_completion(
                            body, request_id=request_id, content=self._reply_text(body)
                        ),
                    },
                    error=None,
                )
                output.append(line)
                batch["outcomes"][custom_id] = "completed"
        if output:
            content = ("\n".join(json.dumps(x) for x in output) + "\n").encode()
            batch["output_file_id"] = self._new_file(content, "batch_output", "out.jsonl")["id"]
        if errors:
            content = ("\n".join(json.dumps(x) for x in errors) + "\n").encode()
            batch["error_file_id"] = self._new_file(content, "batch_output", "err.jsonl")["id"]
        batch["status"] = status

    async def _get(self, request: web.Request) -> web.Response:
        batch = self.batch_of(request, _error(404, "No such Batch object"))
        with self._lock:
            if batch["status"] == "cancelling":
                self._finish(batch, "cancelled")
            elif batch["status"] in STATES[:-1]:
                batch["polls"] += 1
                step = min(batch["polls"] // self.polls_per_state, len(STATES) - 1)
                if STATES[step] == "completed":
                    self._finish(batch, "expired" if self.expire else "completed")
                else:
                    batch["status"] = STATES[step]
        return web.json_response(self._batch_json(batch))

    async def _cancel(self, request: web.Request) -> web.Response:
        batch = self.batch_of(request, _error(404, "No such Batch object"))
        with self._lock:
            if batch["status"] in STATES[:-1]:
                batch["status"] = "cancelling"
        return web.json_response(self._batch_json(batch))
