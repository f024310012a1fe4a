"""OpenAI's Batch API: one JSONL file of chat requests, results within 24 hours at half price.

submit: upload a JSONL file (purpose "batch") whose lines are {custom_id, method "POST",
url "/v1/chat/completions", body}, then create the batch (endpoint /v1/chat/completions,
completion_window "24h"). The creation carries a random token in its metadata: when a
creation attempt fails in a way that leaves open whether it was accepted (HTTP 5xx, a
timeout, a dropped connection), the next attempt first looks for a batch carrying that
token among the most recent ones and adopts it instead of creating a second one.
poll: the batch's status and request counts. results: download output_file_id (succeeded
requests) and error_file_id (failed ones) and map every submitted custom_id.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from turnbench.backends.factory import display_url
from turnbench.backends.openai_compat import is_reasoning_model
from turnbench.backends.retry import RetryPolicy, is_retryable_status
from turnbench.backends.sdk_calls import GaveUp, Transient, redactor, run_with_retries, short
from turnbench.batch.base import (
    BatchCounts,
    BatchHandle,
    BatchIntent,
    BatchItem,
    BatchItemError,
    BatchNotFinishedError,
    BatchResults,
    BatchStatus,
    BatchSubmitUncertainError,
    IntentHook,
    check_handle,
    check_items,
    jsonl_objects,
    missing_errors,
    param_table,
)
from turnbench.batch.calls import SDKCaller
from turnbench.errors import RequestFailedError
from turnbench.types import Completion, RequestParams, TokenLogprob, TopLogprob, Usage

CHAT_PATH = "/v1/chat/completions"
MAX_ITEMS = 50_000
TOKEN_KEY = "turnbench_submission"
LOOKBACK = 100  # recent batches searched for our token after an uncertain creation
FIND_PAGES = 10  # pages of LOOKBACK batches searched when a new process looks for its batch


def chat_fields(model: str, params: RequestParams, token_param: str = "auto") -> dict[str, Any]:
    """The sampling fields of one chat request, as OpenAICompatBackend.request_fields sends
    them (reasoning models: max_completion_tokens, no temperature), plus log probabilities
    when asked."""
    reasoning = token_param == "max_completion_tokens" or (
        token_param == "auto" and is_reasoning_model(model)
    )
    fields: dict[str, Any] = {}
    if params.n is not None:
        fields["n"] = params.n
    if params.temperature is not None and not reasoning:
        fields["temperature"] = params.temperature
    if params.max_tokens is not None:
        fields["max_completion_tokens" if reasoning else "max_tokens"] = params.max_tokens
    if params.top_logprobs is not None:
        fields["logprobs"] = True
        fields["top_logprobs"] = params.top_logprobs
    fields.update(params.extra)
    return fields


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list):
        return None
    tokens = []
    for entry in content:
        if not isinstance(entry, dict):
            continue
        top = [
            TopLogprob(token=str(t.get("token", "")), logprob=float(t.get("logprob", 0.0)))
            for t in entry.get("top_logprobs") or []
            if isinstance(t, dict)
        ]
        tokens.append(
            TokenLogprob(
                token=str(entry.get("token", "")),
                logprob=float(entry.get("logprob", 0.0)),
                top=top,
            )
        )
    return tokens


def completion_from_chat(body: dict[str, Any]) -> Completion:
    """A chat.completion JSON body as a Completion (usage with cached prompt tokens)."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content")
    usage = body.get("usage") or {}
    prompt = _int(usage.get("prompt_tokens"))
    cached = _int((usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
    return Completion(
        text=content if isinstance(content, str) else "",
        finish_reason=choice.get("finish_reason"),
        usage=Usage(
            prompt_tokens=prompt,
            completion_tokens=_int(usage.get("completion_tokens")),
            cached_prompt_tokens=min(cached, prompt),
        ),
        reported_model=body.get("model"),
        system_fingerprint=body.get("system_fingerprint"),
        logprobs=_logprobs(choice),
    )


def _error_message(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return short(str(error["message"]))
    return short(json.dumps(body)) if body is not None else "no detail"


def item_result(line: dict[str, Any], handle: BatchHandle) -> Completion | BatchItemError:
    """One line of an output or error file, mapped."""
    custom_id = str(line.get("custom_id"))
    error = line.get("error")
    response = line.get("response")
    if isinstance(error, dict) and not (isinstance(response, dict) and response.get("body")):
        code = str(error.get("code") or "")
        kind = {"batch_expired": "expired", "batch_cancelled": "cancelled"}.get(code, "errored")
        message = short(str(error.get("message") or code or "failed"))
        return BatchItemError(custom_id=custom_id, kind=kind, message=message)  # type: ignore[arg-type]
    if not isinstance(response, dict):
        return BatchItemError(custom_id=custom_id, kind="errored", message="no response")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        code = status if isinstance(status, int) else None
        return BatchItemError(
            custom_id=custom_id,
            kind="errored",
            message=f"HTTP {code}: {_error_message(body)}",
            status_code=code,
            retryable=code is not None and is_retryable_status(code),
        )
    try:
        completion = completion_from_chat(body if isinstance(body, dict) else {})
    except ValueError as problem:
        return BatchItemError(custom_id=custom_id, kind="errored", message=str(problem))
    completion.sent_params = handle.params_of(custom_id)
    return completion


def _status(batch: Any) -> BatchStatus:
    counts = getattr(batch, "request_counts", None)
    total = _int(getattr(counts, "total", 0))
    done = _int(getattr(counts, "completed", 0))
    failed = _int(getattr(counts, "failed", 0))
    state = str(batch.status)
    finished = state in ("completed", "failed", "expired", "cancelled")
    return BatchStatus(
        state=state,  # type: ignore[arg-type]  # OpenAI's words are ours
        provider_status=state,
        counts=BatchCounts(
            total=total,
            succeeded=done,
            failed=failed,
            processing=0 if finished else max(0, total - done - failed),
        ),
    )


class OpenAIBatchClient:
    provider = "openai"
    max_items = MAX_ITEMS

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        policy: RetryPolicy | None = None,
        token_param: str = "auto",
        key_env: str = "OPENAI_API_KEY",
    ) -> None:
        import openai

        self.model = model
        self.token_param = token_param
        self._sdk = openai
        self._policy = policy or RetryPolicy()
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "no-key",
            base_url=base_url,
            max_retries=0,
            timeout=self._policy.request_timeout,
        )
        self.endpoint = display_url(str(self._client.base_url).rstrip("/")) or ""
        self._call = SDKCaller(
            openai,
            self._policy,
            redact=redactor(api_key),
            fatal_message=lambda status, detail: (
                f"OpenAI batch API at {self.endpoint} answered HTTP {status} (check {key_env}, "
                f"the model name and the base URL). Server said: {detail}"
            ),
        )

    def _line(self, item: BatchItem) -> dict[str, Any]:
        return {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": CHAT_PATH,
            "body": {
                "model": self.model,
                "messages": item.messages,
                **chat_fields(self.model, item.params, self.token_param),
            },
        }

    async def submit(
        self, items: list[BatchItem], *, on_intent: IntentHook | None = None
    ) -> BatchHandle:
        check_items(items, limit=self.max_items, valid_id=lambda c: 0 < len(c) <= 512)
        data = "".join(json.dumps(self._line(item), ensure_ascii=False) + "\n" for item in items)
        uploaded = await self._call(
            "batch input upload",
            lambda: self._client.files.create(
                file=("turnbench-batch.jsonl", data.encode("utf-8"), "application/jsonl"),
                purpose="batch",
            ),
        )
        custom_ids, sent = param_table(
            items, lambda item: chat_fields(self.model, item.params, self.token_param)
        )
        intent = BatchIntent(
            provider="openai",
            model=self.model,
            endpoint=self.endpoint,
            input_file_id=uploaded.id,
            token=uuid.uuid4().hex,
            custom_ids=custom_ids,
            sent_params=sent,
        )
        if on_intent is not None:
            await on_intent(intent)
        batch = await self._create(uploaded.id, intent.token or "")
        return intent.handle(batch.id)

    async def find(self, intent: BatchIntent) -> BatchHandle | None:
        """The batch created with `intent`'s token, searched among the recent batches."""
        if intent.token is None:
            return None
        try:
            found = await self._find(intent.token, pages=FIND_PAGES)
        except Exception as error:
            raise self._call.mapped(error, "batch lookup") from None
        return intent.handle(found.id) if found is not None else None

    async def _create(self, input_file_id: str, token: str) -> Any:
        """Create the batch once, even when an attempt's answer is lost (see module doc)."""
        uncertain = False

        async def attempt() -> Any:
            nonlocal uncertain
            if uncertain:
                try:
                    found = await self._find(token)
                except Exception as error:
                    raise self._call.mapped(error, "batch lookup") from None
                if found is not None:
                    return found
            try:
                return await self._client.batches.create(
                    input_file_id=input_file_id,
                    endpoint=CHAT_PATH,
                    completion_window="24h",
                    metadata={TOKEN_KEY: token},
                )
            except Exception as error:
                mapped = self._call.mapped(error, "batch creation")
                status = getattr(error, "status_code", None)
                if isinstance(mapped, Transient) and status not in (429, 409):
                    uncertain = True  # 5xx, timeout, dropped connection: maybe created
                raise mapped from None

        try:
            batch, _ = await run_with_retries(attempt, self._policy)
        except GaveUp as error:
            failure = BatchSubmitUncertainError if uncertain else RequestFailedError
            raise failure(
                f"batch creation gave up after {error.attempts} attempts: {error.last.message}"
                + (
                    f" (a batch with metadata {TOKEN_KEY}={token} may exist; check before "
                    "resubmitting)"
                    if uncertain
                    else ""
                ),
                error.attempts,
            ) from None
        return batch

    async def _find(self, token: str, *, pages: int = 1) -> Any:
        after: str | None = None
        for _ in range(pages):
            if after is None:
                page = await self._client.batches.list(limit=LOOKBACK)
            else:
                page = await self._client.batches.list(limit=LOOKBACK, after=after)
            for batch in page.data:
                if (getattr(batch, "metadata", None) or {}).get(TOKEN_KEY) == token:
                    return batch
            if not page.data or not getattr(page, "has_more", False):
                return None
            after = page.data[-1].id
        return None

    async def poll(self, handle: BatchHandle) -> BatchStatus:
        check_handle(handle, self)
        batch = await self._call(
            "batch status", lambda: self._client.batches.retrieve(handle.batch_id)
        )
        return _status(batch)

    async def _download(self, file_id: str) -> str:
        async def read() -> str:
            content = await self._client.files.content(file_id)
            return content.text

        return await self._call("batch result download", read)

    async def results(self, handle: BatchHandle) -> BatchResults:
        check_handle(handle, self)
        batch = await self._call(
            "batch status", lambda: self._client.batches.retrieve(handle.batch_id)
        )
        status = _status(batch)
        if not status.done:
            raise BatchNotFinishedError(f"batch {handle.batch_id} is still {status.state}")
        found: BatchResults = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for line in jsonl_objects(await self._download(file_id)):
                if line.get("custom_id") in handle.custom_ids:
                    found[str(line["custom_id"])] = item_result(line, handle)
        if status.state == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            why = "; ".join(short(str(getattr(e, "message", e)), 200) for e in errors[:3])
            return missing_errors(
                handle,
                found,
                "batch_failed",
                f"the batch failed: {why or 'no detail'}",
                retryable=False,
            )
        if status.state in ("expired", "cancelled"):
            return missing_errors(
                handle, found, status.state, f"not run: the batch {status.state}", retryable=True
            )
        return missing_errors(
            handle, found, "missing", "absent from the batch output", retryable=True
        )

    async def cancel(self, handle: BatchHandle) -> BatchStatus:
        check_handle(handle, self)
        batch = await self._call(
            "batch cancel", lambda: self._client.batches.cancel(handle.batch_id)
        )
        return _status(batch)

    async def aclose(self) -> None:
        await self._client.close()
