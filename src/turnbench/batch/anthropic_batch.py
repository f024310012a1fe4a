"""Anthropic's Message Batches API: up to 100,000 Messages requests, results within 24 hours
at half price.

submit: POST /v1/messages/batches with requests [{custom_id, params}], where params is
exactly the Messages request the `anthropic/...` backend would send (system field, prompt
caching, max_tokens, temperature). The API has no idempotency key, so a creation is retried
only when the answer proves it was refused (HTTP 429, 529 overloaded) or the connection
was never made; a timeout or a 5xx raises BatchSubmitUncertainError instead of risking a
second paid batch. poll: processing_status (in_progress, canceling, ended) and
request_counts. results: the JSONL at the batch's results_url, fetched only when that URL
is on the same origin as the API base URL (the key is sent with it); each line's result is
succeeded, errored, canceled or expired.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from turnbench.backends.anthropic_native import (
    ANTHROPIC_BASE_URL,
    ANTHROPIC_KEY_ENV,
    build_request,
    clean_reply,
    import_sdk,
    sampling_fields,
    to_completion,
)
from turnbench.backends.keys import ANTHROPIC_RULE, key_flag
from turnbench.backends.replies import Redactor, short_detail
from turnbench.backends.retry import RetryPolicy, TransientError
from turnbench.backends.sdk_calls import GaveUp, run_with_retries
from turnbench.backends.sdk_transport import BATCH_MAX_BODY_BYTES, sdk_http_client
from turnbench.backends.urls import display_url, url_secrets
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
from turnbench.types import Completion

MAX_ITEMS = 100_000
STATES = {"in_progress": "in_progress", "canceling": "cancelling", "ended": "ended"}
# errored results worth resubmitting: the request was fine, the service was not
TRANSIENT_ERROR_TYPES = frozenset(
    {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
)
REFUSED_STATUS = frozenset({429, 529})  # the creation was certainly not accepted
CLOCK_SLACK = 300.0  # seconds: this machine's clock against the API's, when finding a batch
FIND_PAGES = 10


def valid_custom_id(custom_id: str) -> bool:
    return (
        0 < len(custom_id) <= 64
        and custom_id.isascii()
        and all(c.isalnum() or c in "-_" for c in custom_id)
    )


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _connect_failed(error: BaseException) -> bool:
    """True when the connection was never established (so nothing was sent)."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return False
        if type(seen).__name__ == "ConnectError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    parts = {
        "processing": int(counts.processing),
        "succeeded": int(counts.succeeded),
        "failed": int(counts.errored),
        "cancelled": int(counts.canceled),
        "expired": int(counts.expired),
    }
    word = str(batch.processing_status)
    return BatchStatus(
        state=STATES.get(word, "in_progress"),  # type: ignore[arg-type]
        provider_status=word,
        counts=BatchCounts(total=sum(parts.values()), **parts),
    )


def _timestamp(value: Any) -> float:
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _pick(candidates: list[str], intent: BatchIntent) -> BatchHandle | None:
    if not candidates:
        return None
    if len(candidates) == 1:
        return intent.handle(candidates[0])
    raise BatchSubmitUncertainError(
        f"a batch of {len(intent.custom_ids)} requests was being created when the previous "
        f"run stopped, and {len(candidates)} batches of that size were created since then "
        f"({', '.join(candidates)}); turnbench cannot tell which is its own. Cancel the ones "
        "that are not yours in the Anthropic console, or start a new run directory.",
        1,
    )


def item_result(
    line: dict[str, Any], handle: BatchHandle, redact: Redactor | None = None
) -> Completion | BatchItemError:
    """One results line, mapped. A succeeded result whose message the live path would
    refuse (content null, a text block without text) is a retryable item error, never an
    empty answer; every text kept is redacted of `redact`'s secrets."""
    redact = redact or Redactor()
    custom_id = str(line.get("custom_id"))
    result = line.get("result") if isinstance(line.get("result"), dict) else {}
    kind = result.get("type")
    if kind == "succeeded":
        try:  # the live path's reading: null or missing content is malformed, not ""
            completion = to_completion(result.get("message"))
        except TransientError as error:
            return BatchItemError(
                custom_id=custom_id, kind="errored", message=short_detail(error.message, redact)
            )
        completion = clean_reply(completion, redact)
        completion.sent_params = handle.params_of(custom_id)
        return completion
    if kind == "errored":
        outer = result.get("error") if isinstance(result.get("error"), dict) else {}
        inner = outer.get("error") if isinstance(outer.get("error"), dict) else outer
        error_type = short_detail(str(inner.get("type") or "error"), redact, 80)
        detail = short_detail(str(inner.get("message") or "no detail"), redact)
        return BatchItemError(
            custom_id=custom_id,
            kind="errored",
            message=f"{error_type}: {detail}",
            retryable=error_type in TRANSIENT_ERROR_TYPES,
        )
    if kind in ("canceled", "expired"):
        return BatchItemError(
            custom_id=custom_id,
            kind="cancelled" if kind == "canceled" else "expired",
            message=f"not run: {kind}",
        )
    shown = short_detail(str(kind), redact, 80)
    return BatchItemError(custom_id=custom_id, kind="errored", message=f"unknown result {shown!r}")


def _refusal(endpoint: str, role: str, key_source: str | None, status: int, detail: str) -> str:
    if status == 401 and key_source is None:
        why = (
            f"it answered HTTP 401 (a key is required) and no API key was sent to it: "
            f"${ANTHROPIC_RULE.key_env} goes only to Anthropic's API "
            f"(${ANTHROPIC_RULE.base_url_env}, else {ANTHROPIC_BASE_URL}). Name the variable "
            f"holding this server's key with {key_flag(role)} VAR"
        )
    else:
        key = f"${key_source}" if key_source else f"the variable named by {key_flag(role)}"
        why = f"it answered HTTP {status} (check {key}, the model name and the base URL)"
    return f"Anthropic batch API at {endpoint}: {why}. Server said: {detail}"


class AnthropicBatchClient:
    provider = "anthropic"
    max_items = MAX_ITEMS

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = ANTHROPIC_BASE_URL,
        policy: RetryPolicy | None = None,
        key_env: str | None = ANTHROPIC_KEY_ENV,
        prompt_cache: bool = True,
        role: str = "model",
    ) -> None:
        """`api_key` None: no credentials at all (the key rule of turnbench.backends.keys
        decides, see make_batch_client); `key_env`: the variable the key came from."""
        self._sdk = import_sdk()
        self.model = model
        self.prompt_cache = prompt_cache
        self._policy = policy or RetryPolicy()
        self._base_url = base_url.rstrip("/")
        key_source = (key_env or ANTHROPIC_KEY_ENV) if api_key else None
        # The key is always explicit, so the SDK never falls back to credentials from the
        # environment or profile files; without one, no Authorization or x-api-key header
        # is sent at all (not even a placeholder).
        no_key = {"Authorization": self._sdk.Omit(), "X-Api-Key": self._sdk.Omit()}
        self._client = self._sdk.AsyncAnthropic(
            api_key=api_key or "unused",
            base_url=self._base_url,
            max_retries=0,
            timeout=self._policy.request_timeout,
            default_headers=None if api_key else no_key,
            http_client=sdk_http_client(
                pool_size=4, timeout=self._policy.request_timeout, max_body=BATCH_MAX_BODY_BYTES
            ),
        )
        self.endpoint = display_url(self._base_url) or ""
        self._redact = Redactor([api_key or "", *url_secrets(base_url)])
        self._call = SDKCaller(
            self._sdk,
            self._policy,
            redact=self._redact,
            fatal_message=lambda status, detail: _refusal(
                self.endpoint, role, key_source, status, detail
            ),
        )

    def _request(self, item: BatchItem) -> dict[str, Any]:
        params = build_request(self.model, item.messages, item.params, cache=self.prompt_cache)
        return {"custom_id": item.custom_id, "params": params}

    async def submit(
        self, items: list[BatchItem], *, on_intent: IntentHook | None = None
    ) -> BatchHandle:
        check_items(items, limit=self.max_items, valid_id=valid_custom_id)
        requests = [self._request(item) for item in items]
        custom_ids, sent = param_table(items, lambda item: sampling_fields(item.params))
        intent = BatchIntent(
            provider="anthropic",
            model=self.model,
            endpoint=self.endpoint,
            custom_ids=custom_ids,
            sent_params=sent,
        )
        if on_intent is not None:
            await on_intent(intent)

        async def attempt() -> Any:
            try:
                return await self._client.messages.batches.create(requests=requests)
            except Exception as error:
                mapped = self._call.mapped(error, "batch creation")
                refused = getattr(error, "status_code", None) in REFUSED_STATUS
                if isinstance(mapped, TransientError) and not (refused or _connect_failed(error)):
                    raise BatchSubmitUncertainError(
                        f"batch creation may or may not have been accepted ({mapped.message}); "
                        "not retried, to avoid paying twice: check the batches listed in the "
                        "Anthropic console before resubmitting",
                        1,
                    ) from None
                raise mapped from None

        try:
            batch, _ = await run_with_retries(attempt, self._policy)
        except GaveUp as error:
            raise RequestFailedError(
                f"batch creation gave up after {error.attempts} attempts: {error.last.message}",
                error.attempts,
            ) from None
        return intent.handle(batch.id)

    async def find(self, intent: BatchIntent) -> BatchHandle | None:
        """The batch `intent` created, told by what the API keeps (it has no idempotency key
        or metadata): batches created since the intent (less CLOCK_SLACK) holding exactly as
        many requests. None when there is none; more than one cannot be told apart and
        raises BatchSubmitUncertainError naming them."""
        since = intent.started_at - CLOCK_SLACK
        size = len(intent.custom_ids)
        candidates: list[str] = []
        after: str | None = None
        for _ in range(FIND_PAGES):
            page = await self._call(
                "batch list",
                lambda after=after: self._client.messages.batches.list(
                    limit=100, **({"after_id": after} if after else {})
                ),
            )
            batches = list(page.data)
            for batch in batches:
                if _timestamp(batch.created_at) < since:
                    return _pick(candidates, intent)
                if _status(batch).counts.total == size:
                    candidates.append(str(batch.id))
            if not batches or not getattr(page, "has_more", False):
                break
            after = str(batches[-1].id)
        return _pick(candidates, intent)

    async def _retrieve(self, handle: BatchHandle) -> Any:
        return await self._call(
            "batch status", lambda: self._client.messages.batches.retrieve(handle.batch_id)
        )

    async def poll(self, handle: BatchHandle) -> BatchStatus:
        check_handle(handle, self)
        return _status(await self._retrieve(handle))

    async def results(self, handle: BatchHandle) -> BatchResults:
        import httpx2

        check_handle(handle, self)
        batch = await self._retrieve(handle)
        status = _status(batch)
        if not status.done:
            raise BatchNotFinishedError(f"batch {handle.batch_id} is still {status.state}")
        url = batch.results_url
        if not url:
            raise RequestFailedError(f"batch {handle.batch_id} ended without a results URL", 1)
        if _origin(url) != _origin(self._base_url):
            raise RequestFailedError(
                f"batch {handle.batch_id}: the results URL is on another host than "
                f"{self.endpoint}; not sending the key there",
                1,
            )

        async def download() -> str:
            response = await self._client.get(
                url, cast_to=httpx2.Response, options={"headers": {"Accept": "application/binary"}}
            )
            return response.text

        found: BatchResults = {}
        for line in jsonl_objects(await self._call("batch result download", download)):
            if line.get("custom_id") in handle.custom_ids:
                found[str(line["custom_id"])] = item_result(line, handle, self._redact)
        return missing_errors(
            handle, found, "missing", "absent from the batch results", retryable=True
        )

    async def cancel(self, handle: BatchHandle) -> BatchStatus:
        check_handle(handle, self)
        batch = await self._call(
            "batch cancel", lambda: self._client.messages.batches.cancel(handle.batch_id)
        )
        return _status(batch)

    async def aclose(self) -> None:
        await self._client.close()
