"""The model under test's answers: asked once per key, logged the moment they finish.

An answer is the "model" role's request on the one path (`requests.RequestPath.exchange`),
kept as an `AnswerRecord`: its cleaned text, its tool calls and how many of them the
conversation kept, its place in its conversation (`at`), and, with a thread, only what its
request appended to the one before. An answer read from a file is recorded the same way
(`import_answer`), so a run directory is self-contained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from turnbench.engine.estimate import chars
from turnbench.engine.history import Thread, reply_message
from turnbench.engine.requests import About, RequestPath, summed
from turnbench.journal.logindex import AnswerDone
from turnbench.judging.cleaning import UNCLOSED_THINK, clean_answer
from turnbench.samples import Sample
from turnbench.types import AnswerRecord, Message, RequestParams


class Answers(RequestPath):
    """The answers of the model under test (`RunContext` is one)."""

    strip_think: bool = True  # remove <think> blocks before answers are judged
    #: answers being requested, by key (a second caller awaits the first one's request)
    _answering: dict[str, asyncio.Future[AnswerRecord | AnswerDone | None]]

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
        kept_calls: int | None = None,
    ) -> AnswerRecord | AnswerDone | None:
        """The answer to one turn: the logged one, else one requested now (live, or in the
        model's provider batch with --model-batch). `.text` is the cleaned answer. `arm`:
        the stress arm it is asked in, `meta` what its record keeps of the arm. With a
        `thread` (the model's side of a growing conversation) the record keeps only what
        this request appended to it, and the thread goes on with the reply as the
        conversation keeps it: its text and its first `kept_calls` tool calls (None: all).

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
                kept_calls=kept_calls,
            ),
        )
        if record is not None and thread is not None:
            calls = record.tool_calls
            if calls and kept_calls is not None:
                calls = calls[:kept_calls]
            thread.logged(key, messages, reply_message(record.text, calls))
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
        kept_calls: int | None = None,
    ) -> AnswerRecord | None:
        after, kept = thread.appended(messages) if thread is not None else (None, messages)
        worst = self.costs.worst("model", messages, params) if self.costs else 0.0
        about = About(model, sample, turn, arm=arm, trial=trial)
        self.counters.answers_requested += 1
        asked = await self.exchange(
            "model", messages, params, key=key, stage="answer", about=about, worst=worst
        )
        if asked is None:
            return None
        completion = asked.last
        usage, attempts, latency, endpoints = summed(asked.completions)
        cleaned = clean_answer(completion.text, self.strip_think)
        text = cleaned.text
        calls = [call.as_part() for call in completion.tool_calls] or None
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
            tool_calls=calls,
            kept_calls=kept_calls if calls and kept_calls is not None else None,
            at=len(messages),
            params=completion.sent_params,
            finish_reason=completion.finish_reason,
            usage=usage,
            reported_model=completion.reported_model,
            system_fingerprint=completion.system_fingerprint,
            attempts=attempts,
            latency_s=latency,
            batch_id=asked.batch_id,
            batch_usage=usage if asked.batch_id else None,
            endpoints=endpoints,
            arm=arm,
        )
        tokens = None
        if self.budget.max_tokens is not None:
            backend = self.role("model").backend
            spec = getattr(backend, "spec", "model")
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
