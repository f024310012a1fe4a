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
import os
import uuid
from typing import Any

from turnbench.backends.keys import DEFAULT_KEY_ENV, default_endpoint
from turnbench.backends.openai_compat import (
    chat_request_fields,
    is_reasoning_model,
    recorded_fields,
    refusal_message,
    wire_messages,
)
from turnbench.backends.replies import (
    MalformedReplyError,
    Redactor,
    completion_of,
    short_detail,
)
from turnbench.backends.retry import RetryPolicy, TransientError, is_retryable_status
from turnbench.backends.sdk_calls import GaveUp, run_with_retries
from turnbench.backends.sdk_transport import BATCH_MAX_BODY_BYTES, sdk_http_client
from turnbench.backends.urls import display_url, same_endpoint, url_secrets
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
from turnbench.types import Completion, RequestParams

CHAT_PATH = "/v1/chat/completions"
MAX_ITEMS = 50_000
TOKEN_KEY = "turnbench_submission"
LOOKBACK = 100  # recent batches searched for our token after an uncertain creation
FIND_PAGES = 10  # pages of LOOKBACK batches searched when a new process looks for its batch


def chat_fields(model: str, params: RequestParams, token_param: str = "auto") -> dict[str, Any]:
    """The fields of one chat request, as the live backend sends them
    (`openai_compat.chat_request_fields`)."""
    reasoning = token_param == "max_completion_tokens" or (
        token_param == "auto" and is_reasoning_model(model)
    )
    return chat_request_fields(params, reasoning)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def completion_from_chat(body: Any, redact: Redactor | None = None) -> Completion:
    """A chat.completion JSON body as a Completion, by the live path's own parser
    (turnbench.backends.replies.completion_of): null or missing content, no choices or a
    body that is no object raise MalformedReplyError; server text is redacted of `redact`'s
    secrets and made valid Unicode; usage counts are checked (cached prompt tokens kept)."""
    return completion_of(body, redact or Redactor())


def _error_message(body: Any, redact: Redactor) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return short_detail(str(error["message"]), redact)
    shown = json.dumps(body, default=str)  # (a value cut from a body too deep: its text)
    return short_detail(shown, redact) if body is not None else "no detail"


def item_result(
    line: dict[str, Any], handle: BatchHandle, redact: Redactor | None = None
) -> Completion | BatchItemError:
    """One line of an output or error file, mapped. A reply the live path would refuse
    (malformed, `content: null`) is a retryable item error, never an empty answer; every
    text kept is redacted of `redact`'s secrets (the key, credentials of the base URL)."""
    redact = redact or Redactor()
    custom_id = str(line.get("custom_id"))
    error = line.get("error")
    response = line.get("response")
    if isinstance(error, dict) and not (isinstance(response, dict) and response.get("body")):
        code = str(error.get("code") or "")
        kind = {"batch_expired": "expired", "batch_cancelled": "cancelled"}.get(code, "errored")
        message = short_detail(str(error.get("message") or code or "failed"), redact)
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
            message=f"HTTP {code}: {_error_message(body, redact)}",
            status_code=code,
            retryable=code is not None and is_retryable_status(code),
        )
    try:
        completion = completion_from_chat(body, redact)
    except MalformedReplyError as problem:
        return BatchItemError(
            custom_id=custom_id, kind="errored", message=short_detail(str(problem), redact)
        )
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
        key_env: str | None = DEFAULT_KEY_ENV,
        role: str = "model",
    ) -> None:
        """`api_key` None: no Authorization header at all (the key rule of
        turnbench.backends.keys decides, see make_batch_client); `key_env`: the variable the
        key came from. `base_url` None: the default endpoint ($OPENAI_BASE_URL, else
        OpenAI). The SDK is never left to read credentials or headers from the
        environment."""
        import openai

        self.model = model
        self.token_param = token_param
        self._sdk = openai
        self._policy = policy or RetryPolicy()
        url = base_url or default_endpoint(os.environ)
        key_source = (key_env or DEFAULT_KEY_ENV) if api_key else None
        # Every request carries exactly this Authorization (or none): explicit per-request
        # headers override what the SDK would add from its api_key or from
        # $OPENAI_CUSTOM_HEADERS. The account headers it takes from $OPENAI_ORG_ID and
        # $OPENAI_PROJECT_ID go only to the default endpoint, like the default key.
        self._headers: dict[str, Any] = {
            "Authorization": f"Bearer {api_key}" if api_key else openai.Omit()
        }
        if not same_endpoint(url, default_endpoint(os.environ)):
            self._headers.update(
                {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}
            )
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "unused",  # a string: the SDK never reads $OPENAI_API_KEY
            base_url=url,
            max_retries=0,
            timeout=self._policy.request_timeout,
            http_client=sdk_http_client(
                pool_size=4, timeout=self._policy.request_timeout, max_body=BATCH_MAX_BODY_BYTES
            ),
        )
        self.endpoint = display_url(str(self._client.base_url).rstrip("/")) or ""
        self._redact = Redactor([api_key or "", *url_secrets(url)])
        self._call = SDKCaller(
            openai,
            self._policy,
            redact=self._redact,
            fatal_message=lambda status, detail: (
                "OpenAI batch API: "
                + refusal_message(role, self.endpoint, status, key_source, detail)
            ),
        )

    def _line(self, item: BatchItem) -> dict[str, Any]:
        return {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": CHAT_PATH,
            "body": {
                "model": self.model,
                "messages": wire_messages(item.messages),
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
                extra_headers=self._headers,
            ),
        )
        custom_ids, sent = param_table(
            items,
            lambda item: recorded_fields(chat_fields(self.model, item.params, self.token_param)),
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
                    extra_headers=self._headers,
                )
            except Exception as error:
                mapped = self._call.mapped(error, "batch creation")
                status = getattr(error, "status_code", None)
                if isinstance(mapped, TransientError) and status not in (429, 409):
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
                page = await self._client.batches.list(limit=LOOKBACK, extra_headers=self._headers)
            else:
                page = await self._client.batches.list(
                    limit=LOOKBACK, after=after, extra_headers=self._headers
                )
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
            "batch status",
            lambda: self._client.batches.retrieve(handle.batch_id, extra_headers=self._headers),
        )
        return _status(batch)

    async def _download(self, file_id: str) -> str:
        async def read() -> str:
            content = await self._client.files.content(file_id, extra_headers=self._headers)
            return content.text

        return await self._call("batch result download", read)

    async def results(self, handle: BatchHandle) -> BatchResults:
        check_handle(handle, self)
        batch = await self._call(
            "batch status",
            lambda: self._client.batches.retrieve(handle.batch_id, extra_headers=self._headers),
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
                    found[str(line["custom_id"])] = item_result(line, handle, self._redact)
        if status.state == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            why = "; ".join(
                short_detail(str(getattr(e, "message", e)), self._redact, 200) for e in errors[:3]
            )
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
            "batch cancel",
            lambda: self._client.batches.cancel(handle.batch_id, extra_headers=self._headers),
        )
        return _status(batch)

    async def aclose(self) -> None:
        await self._client.close()
