"""Provider batches in the engine: `--judge-batch` and `--model-batch`.

A `BatchQueue` stands where a backend would for one role (the model under test, or one
judge): the engine asks it for a completion per work key exactly as it would ask a live
backend, and it gathers those requests into provider batches (OpenAI's Batch API,
Anthropic's Message Batches) through a `BatchClient`.

When a batch is sent. Requests are collected until none has arrived for `settle` seconds
(or a provider's batch-size limit is reached): every job of a run starts at once in batch
mode, so the first round of requests arrives together and becomes one batch; in a run whose
later turns are built on the model's own answers, the next turns arrive together when a
batch's results come back, so such a run sends one batch per turn round.

Never paying twice. Every step is written to the run log the moment it happens
(`BatchRecord`): `creating` (with everything needed to find the batch and read its results:
the provider's input file, the submission token, every item's custom_id) before the
provider is asked, `created` (the batch id) as soon as it answers, `ended` when it reaches
a final state. The log's index keeps, per item (custom_id = `batch_custom_id(key)`), the
latest submission that holds it until an answer or judgment record for that key is logged
(or a failure the provider reported for it). A new process therefore finds every batch that
still holds unfinished work: a `created` one is polled again; one that was `creating` when
the process stopped is looked up at the provider (`BatchClient.find`) and adopted when it
exists. Only items that no live batch holds are submitted again.

Failures. Items the provider reports as failed in a retryable way (expired, cancelled,
missing, overloaded) go into the next batch, up to `max_attempts` submissions; others end
as failure records like a live request that failed (`BatchItemFailed` names the batch, so
the next run submits them afresh instead of reading the same failure again). A batch whose
status cannot be read after the retry policy gives up is polled again after a pause, up to
POLL_FAILURES times, then its items fail for this invocation only (the next run polls the
same batch again). A refused key stops the run (FatalBackendError). A creation whose
outcome is unknown stops the run too: the next run looks the batch up before sending
anything.

Re-asks of unreadable judge replies do not go into batches: they are few and each waits for
the reply before it, so they are sent live through the judge's own backend (see
`runner._FirstViaBatch`), at live prices.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field

from turnbench.backends.base import BackendStats
from turnbench.batch.base import (
    BatchClient,
    BatchHandle,
    BatchIntent,
    BatchItem,
    BatchItemError,
    BatchStatus,
    BatchSubmitUncertainError,
    batch_custom_id,
)
from turnbench.engine.progress import Progress
from turnbench.errors import FatalBackendError, RequestFailedError
from turnbench.journal.runlog import RunLog
from turnbench.record_keys import batch_event_key
from turnbench.types import BatchRecord, Completion, Message, RequestParams

POLL_FAILURES = 5  # status reads that may fail in a row (each after its own retries)
DEFAULT_SETTLE = 1.0


class BatchItemFailed(RequestFailedError):
    """The provider reported this item of a batch as failed (not worth sending again in this
    invocation). `batch_id` goes into its failure record."""

    def __init__(self, message: str, attempts: int, batch_id: str) -> None:
        super().__init__(message, attempts)
        self.batch_id = batch_id


@dataclass(eq=False)
class _Item:
    key: str
    custom_id: str
    messages: list[Message]
    params: RequestParams
    future: asyncio.Future[tuple[Completion, str]]
    since: float = field(default_factory=time.monotonic)
    submissions: int = 0  # batches this item was sent in by this invocation


class BatchQueue:
    """The provider batches of one role (see the module docstring)."""

    def __init__(
        self,
        client: BatchClient,
        log: RunLog,
        *,
        role: str,
        stage: str,
        poll_interval: float,
        max_attempts: int,
        progress: Progress | None = None,
        settle: float | None = None,
    ) -> None:
        self.client = client
        self.log = log
        self.role = role
        self.stage = stage
        self.poll_interval = poll_interval
        self.max_attempts = max(1, max_attempts)
        self.progress = progress or Progress()
        self.settle = min(DEFAULT_SETTLE, poll_interval) if settle is None else settle
        self.stats = BackendStats()
        self.spec = f"{client.provider}/{client.model} (batch)"
        self.submitted = 0  # batches created by this invocation
        self._pending: list[_Item] = []  # waiting to go into the next batch
        self._waiting: dict[str, _Item] = {}  # custom_id -> item awaiting its result
        self._owner: dict[str, str] = {}  # custom_id -> the submission holding its result
        self._ready: dict[str, tuple[Completion | BatchItemError, str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._states: dict[str, str] = {}  # submission -> what progress shows
        self._fatal: BaseException | None = None
        self._started = False

    # -- the engine's side -------------------------------------------------------------------
    def start(self) -> None:
        """Adopt the batches the log says still hold unfinished work of this role."""
        if self._started:
            return
        self._started = True
        index = self.log.index
        open_submissions = index.open_submissions(self.role)
        for custom_id, name in index.batch_items.items():
            if name in open_submissions:
                self._owner[custom_id] = name
        for name, submission in open_submissions.items():
            intent = BatchIntent.model_validate(submission.intent)
            if submission.batch_id is not None:
                self._spawn(self._watch(name, intent.handle(submission.batch_id)))
            else:
                self._spawn(self._find(name, intent))

    async def request(
        self, key: str, messages: list[Message], params: RequestParams
    ) -> tuple[Completion, str]:
        """The completion of one work item and the id of the batch that produced it.
        Raises RequestFailedError (BatchItemFailed) or FatalBackendError like a backend."""
        self.start()
        if self._fatal is not None:
            raise self._fatal
        custom_id = batch_custom_id(key)
        if custom_id in self._waiting:
            raise RuntimeError(f"work {key} was requested twice at once")
        item = _Item(key, custom_id, messages, params, asyncio.get_running_loop().create_future())
        self._waiting[custom_id] = item
        try:
            ready = self._ready.pop(custom_id, None)
            if ready is not None:
                self._resolve(item, *ready)
            elif custom_id not in self._owner:
                self._enqueue(item)
            return await item.future
        finally:
            self._waiting.pop(custom_id, None)

    async def aclose(self) -> None:
        """Stop polling (the batches go on at the provider; the next run adopts them)."""
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.client.aclose()

    # -- collecting and submitting ----------------------------------------------------------
    def _spawn(self, coroutine) -> None:  # type: ignore[no-untyped-def]
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:  # an unexpected error (disk full while logging, say)
            self._fail_all(error)

    def _enqueue(self, item: _Item) -> None:
        self._pending.append(item)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if len(self._pending) >= self.client.max_items:
            self._flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(self.settle, self._flush)

    def _flush(self) -> None:
        self._timer = None
        while self._pending:
            items = self._pending[: self.client.max_items]
            del self._pending[: self.client.max_items]
            items = [item for item in items if not item.future.done()]
            if items:
                self._spawn(self._submit(items))

    async def _submit(self, items: list[_Item]) -> None:
        name = uuid.uuid4().hex[:16]
        for item in items:
            item.submissions += 1
            self._owner[item.custom_id] = name
        self._show(name, f"creating a batch of {len(items)}")

        async def log_intent(intent: BatchIntent) -> None:
            self.log.append(self._record("creating", name, batch=intent.model_dump(mode="json")))

        batch_items = [
            BatchItem(custom_id=item.custom_id, messages=item.messages, params=item.params)
            for item in items
        ]
        try:
            handle = await self.client.submit(batch_items, on_intent=log_intent)
        except BatchSubmitUncertainError as error:
            self._fail_all(
                FatalBackendError(
                    f"{self.spec}: {error.message}. Re-run the same command: it looks the "
                    "batch up before sending anything again."
                )
            )
            return
        except RequestFailedError as error:  # certainly not created (the next run retries)
            self._release(name)
            for item in items:
                self._reject(item, RequestFailedError(error.message, item.submissions))
            self._show(name, None)
            return
        except FatalBackendError as error:
            self._fail_all(error)
            return
        self.submitted += 1
        self.log.append(self._record("created", name, batch_id=handle.batch_id))
        await self._watch(name, handle)

    async def _find(self, name: str, intent: BatchIntent) -> None:
        """A submission the previous process was creating when it stopped: adopt the batch
        if the provider has it, else let its items be submitted again."""
        self._show(name, "looking up a batch the previous run was creating")
        try:
            handle = await self.client.find(intent)
        except BatchSubmitUncertainError as error:
            self._fail_all(FatalBackendError(f"{self.spec}: {error.message}"))
            return
        except (RequestFailedError, FatalBackendError) as error:
            self._fail_all(FatalBackendError(f"{self.spec}: cannot look the batch up: {error}"))
            return
        if handle is None:  # never created: whatever waits for it goes into a new batch
            for item in self._release(name):
                self._enqueue(item)
            self._show(name, None)
            return
        self.log.append(self._record("created", name, batch_id=handle.batch_id))
        await self._watch(name, handle)

    def _release(self, name: str) -> list[_Item]:
        """Forget that `name` holds results; the items waiting on it."""
        freed = [cid for cid, owner in self._owner.items() if owner == name]
        for custom_id in freed:
            del self._owner[custom_id]
        return [self._waiting[cid] for cid in freed if cid in self._waiting]

    # -- polling and results ----------------------------------------------------------------
    async def _watch(self, name: str, handle: BatchHandle) -> None:
        failures = 0
        while True:
            try:
                status = await self.client.poll(handle)
            except RequestFailedError as error:
                failures += 1
                if failures >= POLL_FAILURES:
                    self._give_up(name, handle, error)
                    return
                self._show(name, f"{handle.batch_id}: status unreadable ({error.message})")
                await asyncio.sleep(self.poll_interval)
                continue
            except FatalBackendError as error:
                self._fail_all(error)
                return
            failures = 0
            self._show(name, _describe(handle.batch_id, status))
            if status.done:
                break
            await asyncio.sleep(self.poll_interval)
        try:
            results = await self.client.results(handle)
        except RequestFailedError as error:
            self._give_up(name, handle, error)
            return
        except FatalBackendError as error:
            self._fail_all(error)
            return
        counts = status.counts.model_dump()
        self.log.append(
            self._record(
                "ended", name, batch_id=handle.batch_id, state=status.provider_status, counts=counts
            )
        )
        self._show(name, None)
        for custom_id in [cid for cid, owner in self._owner.items() if owner == name]:
            del self._owner[custom_id]
            result = results.get(custom_id) or BatchItemError(
                custom_id=custom_id, kind="missing", message="absent from the batch results"
            )
            item = self._waiting.get(custom_id)
            if item is None:  # not asked for yet (a resume): kept until it is
                self._ready[custom_id] = (result, handle.batch_id)
            else:
                self._resolve(item, result, handle.batch_id)

    def _give_up(self, name: str, handle: BatchHandle, error: RequestFailedError) -> None:
        """The batch cannot be read now: its items fail for this invocation (not consumed:
        the next run polls the same batch again)."""
        self._show(name, None)
        for item in self._release(name):
            self._reject(
                item,
                RequestFailedError(
                    f"batch {handle.batch_id} could not be read ({error.message}); re-run to "
                    "poll it again",
                    item.submissions,
                ),
            )

    def _resolve(self, item: _Item, result: Completion | BatchItemError, batch_id: str) -> None:
        if item.future.done():
            return
        if isinstance(result, Completion):
            result.latency_s = round(time.monotonic() - item.since, 3)
            result.attempts = max(1, item.submissions)
            self.stats.requests += 1
            self.stats.add_usage(result.usage)
            item.future.set_result((result, batch_id))
            return
        if result.retryable and item.submissions < self.max_attempts:
            self.stats.retries += 1
            self._enqueue(item)  # into the next batch
            return
        self.stats.failures += 1
        why = f"batch {batch_id} item {result.kind}: {result.message}"
        item.future.set_exception(BatchItemFailed(why, max(1, item.submissions), batch_id))

    def _reject(self, item: _Item, error: BaseException) -> None:
        if not item.future.done():
            self.stats.failures += 1
            item.future.set_exception(error)

    def _fail_all(self, error: BaseException) -> None:
        self._fatal = error
        for item in [*self._waiting.values(), *self._pending]:
            if not item.future.done():
                item.future.set_exception(error)
        self._pending.clear()

    # -- records and progress ---------------------------------------------------------------
    def _record(self, event: str, name: str, **fields: object) -> BatchRecord:
        return BatchRecord(
            key=batch_event_key(name, event),
            event=event,  # type: ignore[arg-type]
            submission=name,
            role=self.role,
            stage=self.stage,  # type: ignore[arg-type]
            **fields,  # type: ignore[arg-type]
        )

    def _show(self, name: str, state: str | None) -> None:
        if state is None:
            self._states.pop(name, None)
        else:
            self._states[name] = state
        shown = "; ".join(self._states.values()) or None
        with contextlib.suppress(Exception):  # a display problem never stops the work
            self.progress.batch_state(self.stage, self.role, shown)


def _describe(batch_id: str, status: BatchStatus) -> str:
    counts = status.counts
    finished = counts.succeeded + counts.failed + counts.cancelled + counts.expired
    total = f"/{counts.total}" if counts.total else ""
    return f"batch {batch_id} {status.provider_status} {finished}{total}"
