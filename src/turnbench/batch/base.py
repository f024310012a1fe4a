"""The batch protocol the engine drives, and the shapes it exchanges with a batch client.

Flow: `submit(items)` uploads and creates one provider batch and returns a `BatchHandle`;
the engine records the handle (it is plain JSON) in its run log before doing anything else.
`poll(handle)` reports the state; once `status.done`, `results(handle)` maps every
submitted custom_id to a `Completion` or a `BatchItemError` (items the provider did not
report are errors of kind "missing"). Items whose error is `retryable` can be resubmitted
in a new batch. The handle alone is enough to poll, fetch results or cancel after a
restart: build a fresh client for the same model and endpoint and pass it the handle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, computed_field

from turnbench.backends.replies import loads_reply
from turnbench.errors import RequestFailedError, UserError
from turnbench.record_keys import batch_custom_id as batch_custom_id  # (the batch API names it)
from turnbench.types import Completion, Message, RequestParams

BatchState = Literal[
    "validating",
    "in_progress",
    "finalizing",
    "cancelling",
    "completed",
    "failed",
    "expired",
    "cancelled",
    "ended",
]
TERMINAL_STATES = frozenset({"completed", "failed", "expired", "cancelled", "ended"})
ErrorKind = Literal["errored", "expired", "cancelled", "missing", "batch_failed"]


class BatchItem(BaseModel):
    """One request of a batch. `custom_id` must be unique in the batch; Anthropic also
    requires 1-64 characters of [A-Za-z0-9_-] (see `batch_custom_id`)."""

    custom_id: str
    messages: list[Message]
    params: RequestParams = Field(default_factory=RequestParams)


class BatchHandle(BaseModel):
    """Everything needed to find a submitted batch again, from a new process.

    `custom_ids` maps each submitted id to its entry in `sent_params` (the sampling fields
    really sent, kept once per distinct set), so results can name items that are missing
    from the provider's output and carry their provenance.
    """

    model_config = ConfigDict(frozen=True)

    provider: Literal["openai", "anthropic"]
    model: str
    endpoint: str  # base URL without credentials; a client for another endpoint refuses it
    batch_id: str
    input_file_id: str | None = None  # OpenAI: the uploaded JSONL file
    custom_ids: dict[str, int]
    sent_params: list[dict[str, Any]]
    submitted_at: float = Field(default_factory=lambda: round(time.time(), 3))

    def params_of(self, custom_id: str) -> dict[str, Any]:
        index = self.custom_ids.get(custom_id)
        return dict(self.sent_params[index]) if index is not None else {}


class BatchIntent(BaseModel):
    """A batch about to be created, as the engine logs it before the provider is asked:
    everything to find the batch again from a new process (`BatchClient.find`) and to read
    its results. OpenAI: the uploaded input file and the submission `token` the creation
    carries in its metadata; Anthropic: the time and the number of requests."""

    provider: Literal["openai", "anthropic"]
    model: str
    endpoint: str
    input_file_id: str | None = None
    token: str | None = None
    custom_ids: dict[str, int]
    sent_params: list[dict[str, Any]]
    started_at: float = Field(default_factory=lambda: round(time.time(), 3))

    def handle(self, batch_id: str) -> BatchHandle:
        return BatchHandle(
            provider=self.provider,
            model=self.model,
            endpoint=self.endpoint,
            batch_id=batch_id,
            input_file_id=self.input_file_id,
            custom_ids=self.custom_ids,
            sent_params=self.sent_params,
            submitted_at=self.started_at,
        )


IntentHook = Callable[[BatchIntent], Awaitable[None]]


class BatchCounts(BaseModel):
    total: int = 0
    processing: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    expired: int = 0


class BatchStatus(BaseModel):
    state: BatchState
    counts: BatchCounts
    provider_status: str  # the provider's own word, e.g. "canceling"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES


class BatchItemError(BaseModel):
    """An item that produced no completion. `retryable`: resubmitting it may succeed (it
    never ran, or failed for a transient reason); False when the request itself was
    rejected and would fail the same way again."""

    custom_id: str
    kind: ErrorKind
    message: str
    status_code: int | None = None
    retryable: bool = True


BatchResults = dict[str, Completion | BatchItemError]


class BatchNotFinishedError(RuntimeError):
    """results() was called before the batch reached a terminal state."""


class BatchSubmitUncertainError(RequestFailedError):
    """Creating the batch failed in a way that leaves open whether the provider accepted
    it (a timeout or a lost response). Not retried automatically: a blind retry could pay
    for the same requests twice."""


class BatchClient(Protocol):
    provider: str
    model: str
    endpoint: str
    max_items: int

    async def submit(
        self, items: list[BatchItem], *, on_intent: IntentHook | None = None
    ) -> BatchHandle:
        """Create one batch of `items`. `on_intent` is awaited with the BatchIntent just
        before the provider is asked to create it (the engine logs it there)."""

    async def find(self, intent: BatchIntent) -> BatchHandle | None:
        """The batch `intent` created, if the provider has it (a process that stopped
        between asking and hearing back); raises BatchSubmitUncertainError when that cannot
        be told."""

    async def poll(self, handle: BatchHandle) -> BatchStatus: ...

    async def results(self, handle: BatchHandle) -> BatchResults: ...

    async def cancel(self, handle: BatchHandle) -> BatchStatus: ...

    async def aclose(self) -> None: ...


def check_items(items: list[BatchItem], *, limit: int, valid_id: Callable[[str], bool]) -> None:
    if not items:
        raise ValueError("a batch needs at least one item")
    if len(items) > limit:
        raise ValueError(f"{len(items)} items: this provider takes at most {limit} per batch")
    seen: set[str] = set()
    for item in items:
        if not valid_id(item.custom_id):
            raise ValueError(f"custom_id {item.custom_id!r} is not accepted by this provider")
        if item.custom_id in seen:
            raise ValueError(f"custom_id {item.custom_id!r} appears twice")
        seen.add(item.custom_id)


def param_table(
    items: list[BatchItem], fields: Callable[[BatchItem], dict[str, Any]]
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """(custom_id -> index, distinct field sets) for a handle."""
    index_of: dict[str, int] = {}
    distinct: list[dict[str, Any]] = []
    keys: dict[str, int] = {}
    for item in items:
        sent = fields(item)
        key = json.dumps(sent, sort_keys=True, default=str)
        if key not in keys:
            keys[key] = len(distinct)
            distinct.append(sent)
        index_of[item.custom_id] = keys[key]
    return index_of, distinct


def check_handle(handle: BatchHandle, client: BatchClient) -> None:
    if handle.provider != client.provider or handle.endpoint != client.endpoint:
        raise UserError(
            f"batch {handle.batch_id} belongs to {handle.provider} at {handle.endpoint}; this "
            f"client talks to {client.provider} at {client.endpoint}"
        )


def missing_errors(
    handle: BatchHandle, found: BatchResults, kind: ErrorKind, message: str, *, retryable: bool
) -> BatchResults:
    """`found` completed with an error for every submitted item it does not mention."""
    complete = dict(found)
    for custom_id in handle.custom_ids:
        if custom_id not in complete:
            complete[custom_id] = BatchItemError(
                custom_id=custom_id, kind=kind, message=message, retryable=retryable
            )
    return complete


def jsonl_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL download; damaged lines are skipped (their items then
    show as missing, which the engine resubmits). A line is read as a live reply is
    (`replies.loads_reply`: a tool call's arguments nested thousands of levels deep are
    kept as their text, not a RecursionError that ends the run)."""
    objects = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = loads_reply(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects
