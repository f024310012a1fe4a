"""What a driver's jobs may do: ask a role, idempotently, and have it logged.

Roles are named (`"model"`, `"user"`, each judge's id, any name a driver uses) and every
request of every role takes one path (`RunContext._exchange`): the logged record when its
key is done already (a resume repays nothing), else admission against the budget
(`budget.Ledger`), the role's provider batch or its live backend (whose own retry layer
retries), a failure record when it fails after its retries, and the record logged the
moment it finishes. `answer`, `ask_user` and `judgment` are that path with the record each
role keeps; `request` is it for any role a driver names.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from turnbench.backends.base import Backend
from turnbench.engine.budget import Budget, Ledger, Stage
from turnbench.engine.costs import CostMeter
from turnbench.engine.estimate import chars
from turnbench.engine.history import Thread, reply_message
from turnbench.engine.judgment_records import SAME_REQUEST, judge_requests, judgment_record
from turnbench.engine.progress import Progress
from turnbench.errors import AttemptRefusedError, RequestFailedError
from turnbench.journal.logindex import (
    AnswerDone,
    JudgmentDone,
    SampleDone,
    StepDone,
    UserTurnDone,
)
from turnbench.journal.runlog import RunLog
from turnbench.judging.cleaning import UNCLOSED_THINK, clean_answer
from turnbench.types import (
    AnswerRecord,
    Completion,
    FailureRecord,
    JudgmentRecord,
    Message,
    RequestParams,
    SampleRecord,
    StepRecord,
    Usage,
    UserTurnRecord,
)

if TYPE_CHECKING:
    from turnbench.backends.roles import UserSettings
    from turnbench.engine.batching import BatchQueue
    from turnbench.judging.formats import ReplyFormat
    from turnbench.judging.judge import Judge
    from turnbench.judging.reask import JudgeOutcome
    from turnbench.samples import JudgeTask, Sample, UserAsk, UserTurn

#: --strict-user: re-asks of a user model whose turn broke a rule, before its turn is kept
#: as it is (its problems counted)
MAX_USER_REASKS = 2
#: what a re-ask of the user model says (versioned: the run's identity names it)
USER_REASK = (
    "Your last message broke the rules of your role ({problems}). Write that message again: "
    "only the user's next message, giving exactly what you were told to give, in the "
    "user's voice."
)
USER_REASK_LABEL = "user-reask-v1"
#: why a user model's reply that only called tools is no user turn: a broken reply, as one
#: with no message at all is, so a failure of the user's request (retried on resume), never
#: an empty user turn the conversation goes on with (the agent would answer silence until
#: its step limit and score 0: issue 44)
USER_CALLED_TOOLS = (
    "the user model replied with tool calls and no message (a simulated user is offered no "
    "tools): no user turn"
)

__all__ = ["SAME_REQUEST", "About", "Role", "RunContext", "RunCounters"]


@dataclass(frozen=True)
class Role:
    """One named role of a run: the backend that answers it, its provider batch when its
    requests go through one, and (for a simulated user) its settings."""

    name: str
    backend: Backend | None
    batch: BatchQueue | None = None
    settings: Any = None


@dataclass(frozen=True)
class About:
    """The work a request is for, as its failure record names it."""

    model: str
    sample: Sample
    turn: int
    judge: str | None = None
    pair: tuple[str, str] | None = None
    arm: str | None = None
    trial: int | None = None


@dataclass
class RunCounters:
    answers_requested: int = 0
    judgments_requested: int = 0
    request_failures: int = 0
    reasks: int = 0
    parse_failures: int = 0


class _Call:
    """What one admitted request sends through: the role's live backend or its batch."""

    def __init__(self, backend: Backend | _FirstViaBatch | _ViaBatch) -> None:
        self.backend = backend
        self.failed = False

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        return await self.backend.complete(messages, params)


class RunContext:
    """What the engine's jobs may do: get answers, user turns and judgments, idempotently."""

    def __init__(
        self,
        log: RunLog,
        *,
        model_backend: Backend | None = None,
        budget: Budget | None = None,
        progress: Progress | None = None,
        warn: Callable[[str], None] | None = None,
        strip_think: bool = True,
        batches: Mapping[str, BatchQueue] | None = None,
        costs: CostMeter | None = None,
        user_backend: Backend | None = None,
        user: UserSettings | None = None,
        roles: Mapping[str, Role] | None = None,
    ) -> None:
        self.log = log
        self.warn = warn or (lambda _message: None)
        self._fallback_said = False
        self.strip_think = strip_think  # remove <think> blocks before answers are judged
        self.budget = budget or Budget()
        self.progress = progress or Progress()
        self.done = log.index.done  # key -> compact finished work; appends update it
        self.counters = RunCounters()
        self.batches = dict(batches or {})  # role ("model" or a judge id) -> its batch queue
        self.costs = costs
        self.ledger = Ledger(log, self.budget, costs, self.warn)
        #: every role by name; "model" and "user" from their own arguments
        self.roles: dict[str, Role] = dict(roles or {})
        if model_backend is not None or "model" not in self.roles:
            self.roles["model"] = Role("model", model_backend, self.batches.get("model"))
        if user_backend is not None or user is not None:
            self.roles["user"] = Role("user", user_backend, settings=user)
        #: judgment keys not requested because the answer ended inside <think> (results
        #: count those turns as failed; nothing is logged, so a resume skips them again)
        self.not_judged: set[str] = set()
        #: answers being requested, by key (a second caller awaits the first one's request)
        self._answering: dict[str, asyncio.Future[AnswerRecord | AnswerDone | None]] = {}

    @property
    def model_backend(self) -> Backend | None:
        return self.roles["model"].backend

    @property
    def dollars(self) -> float:
        """What the records this invocation logged cost (with --max-cost or prices known)."""
        return self.ledger.dollars

    # -- the one path of every request -----------------------------------------------------
    def _fail(self, key: str, stage: Stage, error: RequestFailedError, about: About) -> None:
        self.counters.request_failures += 1
        batch_id = getattr(error, "batch_id", None)  # the provider reported the item failed
        self.log.append(
            FailureRecord(
                key=key,
                stage=stage,
                error=error.message,
                attempts=error.attempts,
                model=about.model,
                sample_id=about.sample.id,
                turn=about.turn,
                group=about.sample.group,
                judge=about.judge,
                pair=about.pair,
                meta={"batch": batch_id} if batch_id else {},
                arm=about.arm,
            )
        )
        self.progress.advance(f"{stage}s", "failed")

    @contextlib.asynccontextmanager
    async def _exchange(
        self,
        role: str,
        worst: float,
        *,
        key: str,
        stage: Stage,
        about: About,
        through: Backend | _FirstViaBatch | _ViaBatch | None = None,
    ) -> AsyncIterator[_Call]:
        """One admitted request of `role` (its re-asks and retries included): the block
        sends through the `_Call` it is given. A request that fails after its retries is
        logged as a failure and the block ends with `call.failed` set (the work stays
        pending, retried on resume); an attempt the budget refused stops the run once the
        requests in flight are logged."""
        found = self.roles.get(role)
        if found is None:
            raise RuntimeError(f"this run has no {role} role")
        queue = found.batch
        backend = found.backend
        if through is None:
            if queue is not None:
                through = _ViaBatch(queue, key)
            elif backend is not None:
                through = backend
            else:
                raise RuntimeError(f"this run has no {role} backend")
        call = _Call(through)
        refused: str | None = None
        async with self.ledger.admitted_request(
            None if queue is not None else backend, worst, key=key, stage=stage, role=role
        ):
            try:
                yield call
            except RequestFailedError as error:
                call.failed = True
                self._fail(key, stage, error, about)
                if isinstance(error, AttemptRefusedError):
                    refused = error.reason
        if refused is not None:
            await self.ledger.stop(refused)

    async def request(
        self,
        role: str,
        messages: list[Message],
        params: RequestParams,
        *,
        key: str,
        about: About,
        stage: Stage = "answer",
    ) -> Completion | None:
        """One completion of any named role through the one path (budget, retries, failure
        record); the caller logs what it keeps of it. None: it failed (logged)."""
        worst = self.costs.worst_answer(messages, params) if self.costs else 0.0
        completion: Completion | None = None
        async with self._exchange(role, worst, key=key, stage=stage, about=about) as call:
            completion = await call.complete(messages, params)
        return None if call.failed else completion

    # -- answers ---------------------------------------------------------------------------
    async def answer(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        arm: str | None = None,
        meta: Mapping[str, object] | None = None,
        trial: int | None = None,
        thread: Thread | None = None,
    ) -> AnswerRecord | AnswerDone | None:
        """The answer to one turn: the logged one, else one requested now (live, or in the
        model's provider batch with --model-batch). `.text` is the cleaned answer. `arm`:
        the stress arm it is asked in, `meta` what its record keeps of the arm. With a
        `thread` (the model's side of a growing conversation) the record keeps only what
        this request appended to it, and the thread goes on with the answer.

        Two callers asking for the same key at once (a stress arm needs the answer another
        sample's job is asking for) share the one request: the second gets its answer or its
        error; if the first caller is cancelled, the second asks for the answer itself."""
        record = await self._shared_answer(
            key,
            lambda: self._request_answer(
                key=key,
                model=model,
                sample=sample,
                turn=turn,
                messages=messages,
                params=params,
                arm=arm,
                meta=meta,
                trial=trial,
                thread=thread,
            ),
        )
        if record is not None and thread is not None:
            thread.logged(key, messages, reply_message(record.text, record.tool_calls))
        return record

    async def _shared_answer(
        self, key: str, request: Callable[[], Awaitable[AnswerRecord | None]]
    ) -> AnswerRecord | AnswerDone | None:
        """The answer of `key`, asked once (`request`) however many callers want it at once."""
        while True:
            cached = self.done.get(key)
            if isinstance(cached, AnswerDone):
                return cached
            pending = self._answering.get(key)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise  # this caller was cancelled, not (only) the one it waited for
                # the asking caller was cancelled: its request is gone; ask again
        future: asyncio.Future[AnswerRecord | AnswerDone | None]
        future = asyncio.get_running_loop().create_future()
        self._answering[key] = future
        try:
            record = await request()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # (retrieved: no warning when nobody else waited for it)
            raise
        finally:
            del self._answering[key]
        future.set_result(record)
        return record

    async def _request_answer(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        arm: str | None,
        meta: Mapping[str, object] | None,
        trial: int | None = None,
        thread: Thread | None = None,
    ) -> AnswerRecord | None:
        after, kept = thread.appended(messages) if thread is not None else (None, messages)
        worst = self.costs.worst_answer(messages, params) if self.costs else 0.0
        about = About(model, sample, turn, arm=arm, trial=trial)
        completion: Completion | None = None
        async with self._exchange("model", worst, key=key, stage="answer", about=about) as call:
            self.counters.answers_requested += 1
            completion = await call.complete(messages, params)
        if call.failed or completion is None:
            return None
        batch_id = call.backend.batch_id if isinstance(call.backend, _ViaBatch) else None
        cleaned = clean_answer(completion.text, self.strip_think)
        text = cleaned.text
        record = AnswerRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            text=text,
            raw_text=completion.text if text != completion.text else None,
            meta={**(meta or {}), **({UNCLOSED_THINK: True} if cleaned.unclosed_think else {})},
            messages=kept,
            after=after,
            trial=trial,
            tool_calls=[call.as_part() for call in completion.tool_calls] or None,
            params=completion.sent_params,
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            reported_model=completion.reported_model,
            system_fingerprint=completion.system_fingerprint,
            attempts=completion.attempts,
            latency_s=completion.latency_s,
            batch_id=batch_id,
            batch_usage=completion.usage if batch_id else None,
            endpoints=[completion.endpoint] if completion.endpoint else [],
            arm=arm,
        )
        tokens = None
        if self.budget.max_tokens is not None:
            spec = getattr(self.model_backend, "spec", "model")
            tokens = self.ledger.budget_tokens(spec, [(chars(messages), completion)])
        self.ledger.commit(record, "model", record.usage, record.batch_usage, tokens)
        self.progress.advance("answers")
        return record

    def import_answer(
        self, *, key: str, model: str, sample: Sample, turn: int, text: str
    ) -> AnswerRecord | AnswerDone:
        """Record an answer read from a file, so the run directory is self-contained.
        `.text` of what it returns is the cleaned answer."""
        result = clean_answer(text, self.strip_think)
        cleaned = result.text
        cached = self.done.get(key)
        if isinstance(cached, AnswerDone) and cached.same_text(cleaned):
            if cached.text is None:
                cached.text = cleaned  # the answer set's own string: shared, not copied
            return cached
        record = AnswerRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin="imported",
            text=cleaned,
            raw_text=text if cleaned != text else None,
            meta={UNCLOSED_THINK: True} if result.unclosed_think else {},
        )
        self.ledger.commit(record, "model", record.usage, record.batch_usage)
        done = self.done.get(key)
        if isinstance(done, AnswerDone) and done.text is None:
            done.text = cleaned  # the answer set holds it anyway: results need not read it back
        return record

    # -- user turns (simulated conversations) ----------------------------------------------
    def logged_user_turn(self, key: str) -> UserTurnDone | None:
        """The user turn the log holds under `key` (a resumed conversation goes on with the
        same words), or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, UserTurnDone) else None

    def record_user_turn(
        self, *, key: str, model: str, sample: Sample, turn: int, made: UserTurn
    ) -> UserTurnRecord:
        """Log a user turn made by the benchmark's own template the moment it exists, before
        the model is asked to answer it."""
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin=made.origin,
            text=made.text,
            revealed=list(made.revealed),
            problems=list(made.problems),
            ended=made.ended,
            meta=dict(made.meta),
        )
        self.log.append(record)
        return record

    async def ask_user(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        ask: UserAsk,
        trial: int | None = None,
        thread: Thread | None = None,
    ) -> UserTurnRecord | UserTurnDone | None:
        """The user turn of `key`: the logged one, else written by the user model now and
        logged at once; None when its request failed (a failure record; the conversation
        stops there and a resume asks again). `thread`: the user model's side of the
        conversation, as for `answer`.

        With --strict-user a turn that breaks a rule (`UserTurn.problems`) is asked again,
        the reply and the rule it broke in the request, up to MAX_USER_REASKS times; the
        last one is kept either way, with its problems, and every reply is in `outputs`."""
        logged = self.logged_user_turn(key)
        record = logged or await self._request_user_turn(
            key=key, model=model, sample=sample, turn=turn, ask=ask, trial=trial, thread=thread
        )
        if record is not None and thread is not None:
            thread.logged(key, ask.messages, reply_message(record.text, None))
        return record

    async def _request_user_turn(
        self,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        ask: UserAsk,
        trial: int | None,
        thread: Thread | None,
    ) -> UserTurnRecord | None:
        role = self.roles.get("user")
        settings: UserSettings | None = role.settings if role is not None else None
        if role is None or role.backend is None or settings is None:
            raise RuntimeError("this run has no user model")
        sampling = settings.sampling
        extra = dict(sampling.extra)
        if ask.seed is not None:
            extra["seed"] = ask.seed
        params = RequestParams(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            n=1,
            extra=extra,
        )
        asks = 1 + (MAX_USER_REASKS if settings.strict else 0)
        worst = self.costs.worst_user_turn(ask.messages, params, asks) if self.costs else 0.0
        messages = list(ask.messages)
        completions: list[Completion] = []
        made: UserTurn | None = None
        about = About(model, sample, turn, trial=trial)
        async with self._exchange("user", worst, key=key, stage="user_turn", about=about) as call:
            while True:
                completion = await call.complete(messages, params)
                completions.append(completion)
                if completion.tool_calls and not completion.text.strip():
                    attempts = sum(one.attempts for one in completions)
                    raise RequestFailedError(USER_CALLED_TOOLS, attempts)
                made = ask.read(completion.text)
                if not made.problems or len(completions) >= asks:
                    break
                problems = ", ".join(made.problems)
                messages = [
                    *messages,
                    {"role": "assistant", "content": completion.text},
                    {"role": "user", "content": USER_REASK.format(problems=problems)},
                ]
        if call.failed or made is None:
            return None
        after, kept = thread.appended(ask.messages) if thread is not None else (None, ask.messages)
        usage = Usage()
        for completion in completions:
            usage = usage + completion.usage
        record = UserTurnRecord(
            key=key,
            model=model,
            sample_id=sample.id,
            turn=turn,
            group=sample.group,
            origin="user-model",
            text=made.text,
            revealed=list(made.revealed),
            user=settings.spec,
            messages=kept,
            after=after,
            trial=trial,
            outputs=[completion.text for completion in completions],
            problems=list(made.problems),
            ended=made.ended,
            params=completions[-1].sent_params,
            usage=usage,
            attempts=sum(completion.attempts for completion in completions),
            latency_s=round(sum(completion.latency_s for completion in completions), 4),
            endpoints=[c.endpoint for c in completions if c.endpoint],
            meta={**ask.meta, **made.meta, "reasks": len(completions) - 1},
        )
        self.ledger.commit(record, "user", usage)
        return record

    # -- local steps and finished samples --------------------------------------------------
    def logged_step(self, key: str) -> StepDone | None:
        """The local step (a tool call a driver ran) the log holds under `key`, or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, StepDone) else None

    def record_step(self, record: StepRecord) -> StepRecord:
        """Log a local step the moment it ran, before the conversation goes on: a resumed
        conversation reads its output back (`logged_step`) and never runs it again."""
        self.log.append(record)
        return record

    def logged_sample(self, key: str) -> SampleDone | None:
        """The finished sample the log holds under `key`, or None."""
        cached = self.done.get(key)
        return cached if isinstance(cached, SampleDone) else None

    def record_sample(self, record: SampleRecord) -> SampleRecord:
        """Log a finished sample as its driver scored it (results read these: a driver
        whose plan lists `scored` samples)."""
        self.log.append(record)
        self.progress.advance("samples")
        return record

    # -- judgments -------------------------------------------------------------------------
    def skip_judgments(self, keys: Sequence[str]) -> None:
        """Judgments that are not requested: the answer was cut off inside <think>."""
        for key in keys:
            if key not in self.not_judged:
                self.not_judged.add(key)
                self.progress.advance("judgments", "not judged")

    async def judgment(
        self,
        judge: Judge,
        task: JudgeTask,
        reply: ReplyFormat,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        pair: tuple[str, str] | None = None,
        order: Literal["AB", "BA"] | None = None,
        repeat: int = 0,
        meta: Mapping[str, object] | None = None,
        arm: str | None = None,
    ) -> JudgmentRecord | JudgmentDone | None:
        """One judgment (the logged one when `key` is done); `meta` is kept in the record
        (e.g. the guard's boundary, so the request can be rebuilt)."""
        cached = self.done.get(key)
        if isinstance(cached, JudgmentDone):
            return cached
        queue = self.batches.get(judge.id)
        batched = _FirstViaBatch(queue, key, judge.backend) if queue is not None else None
        asking = judge if batched is None else replace(judge, backend=batched)
        if judge.id not in self.roles:
            self.roles[judge.id] = Role(judge.id, judge.backend, queue)
        worst = self.costs.worst_judgment(judge, task.messages, reply) if self.costs else 0.0
        about = About(model, sample, turn, judge=judge.id, pair=pair, arm=arm)
        outcome: JudgeOutcome | None = None
        async with self._exchange(
            judge.id, worst, key=key, stage="judgment", about=about, through=batched
        ) as call:
            self.counters.judgments_requested += 1
            outcome = await asking.ask(task.messages, reply)
        if call.failed or outcome is None:
            return None
        self.counters.reasks += len(outcome.outputs) - 1
        if not outcome.result.ok:
            self.counters.parse_failures += 1
        record = judgment_record(
            judge,
            task,
            reply,
            outcome,
            key=key,
            model=model,
            sample=sample,
            turn=turn,
            pair=pair,
            order=order,
            repeat=repeat,
            meta=meta,
            arm=arm,
            scoring=self._scoring(judge, reply, outcome),
            batched=(batched.batch_id, batched.usage) if batched is not None else None,
        )
        tokens = None
        if self.budget.max_tokens is not None:
            tokens = self.ledger.budget_tokens(judge.id, judge_requests(task, reply, outcome))
        self.ledger.commit(record, judge.id, record.usage, record.batch_usage, tokens)
        self.progress.advance("judgments", "ok" if outcome.result.ok else "unparseable")
        return record

    def _scoring(self, judge: Judge, reply: ReplyFormat, outcome: JudgeOutcome) -> str | None:
        """How the score was made under --judge-scoring weighted (None otherwise); the first
        fall-back to the parsed rating (no logprobs from the server) is said once."""
        if judge.settings.scoring != "weighted" or not reply.weighted or not outcome.result.ok:
            return None
        if outcome.weighted is not None:
            return "weighted"
        if not self._fallback_said:
            self._fallback_said = True
            self.warn(
                f"{judge.id} returned no usable logprobs: its ratings fall back to the parsed "
                "ones (counted in results as weighted_fallbacks)"
            )
        return "parsed-fallback"


class _ViaBatch:
    """A role's requests through its provider batch (`--model-batch`): each completion is
    one item of the role's `BatchQueue`, and the batch that produced it is kept."""

    def __init__(self, queue: BatchQueue, key: str) -> None:
        self.spec = queue.spec
        self.stats = queue.stats
        self._queue = queue
        self._key = key
        self.batch_id: str | None = None

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        completion, self.batch_id = await self._queue.request(self._key, messages, params)
        return completion

    async def aclose(self) -> None:
        return None


class _FirstViaBatch:
    """A judge's backend for one judgment with --judge-batch: its first request goes into the
    judge's provider batch, its re-asks (few, and each waiting on the reply before it) go
    live, so an unreadable reply does not cost another batch round trip."""

    def __init__(self, queue: BatchQueue, key: str, live: Backend) -> None:
        self.spec = live.spec
        self.stats = live.stats
        self._queue = queue
        self._key = key
        self._live = live
        self.batch_id: str | None = None
        self.usage: Usage | None = None

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        if self.batch_id is None:
            completion, self.batch_id = await self._queue.request(self._key, messages, params)
            self.usage = completion.usage
            return completion
        return await self._live.complete(messages, params)

    async def aclose(self) -> None:  # the judge's own backend is closed by its owner
        return None
