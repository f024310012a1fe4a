"""The replies of roles a driver names beside the model, the judges and the simulated user.

A driver that needs another speaker (an attacker, a grader, a second user) names a role
(`Driver.roles`), and the session gives it a backend; every request of it takes the one
path (`requests.RequestPath.exchange`: budget, retries, failure records), is logged the
moment it finishes as a `ReplyRecord` under its key, and is read back from the log on
resume. Its usage, cost, failures and attempts are counted under the role's name, with no
code outside the driver's package naming it.
"""

from __future__ import annotations

from turnbench.backends.asking import ReaskPolicy
from turnbench.engine.history import Thread, reply_message
from turnbench.engine.requests import About, RequestPath, summed
from turnbench.journal.logindex import ReplyDone
from turnbench.samples import Sample
from turnbench.types import Message, ReplyRecord, RequestParams


class Replies(RequestPath):
    """Replies of a driver's own roles (`RunContext` is one)."""

    async def reply(
        self,
        role: str,
        *,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        trial: int | None = None,
        thread: Thread | None = None,
        at: int | None = None,
        policy: ReaskPolicy | None = None,
        meta: dict[str, object] | None = None,
    ) -> ReplyRecord | ReplyDone | None:
        """The reply of `role` under `key`: the logged one, else asked now and logged; None
        when its request failed (logged; asked again on resume). `thread`: the role's side
        of a growing conversation, as for `answer`; `at`: the reply's place in the model's
        conversation, when it becomes part of it; `policy`: the role's re-asks."""
        logged = self.done.get(key)
        record: ReplyRecord | ReplyDone | None
        if isinstance(logged, ReplyDone):
            record = logged
        else:
            record = await self._request_reply(
                role, key, model, sample, turn, messages, params, trial, thread, at, policy, meta
            )
        if record is not None and thread is not None:
            thread.logged(key, messages, reply_message(record.text, record.tool_calls))
        return record

    async def _request_reply(
        self,
        role: str,
        key: str,
        model: str,
        sample: Sample,
        turn: int,
        messages: list[Message],
        params: RequestParams,
        trial: int | None,
        thread: Thread | None,
        at: int | None,
        policy: ReaskPolicy | None,
        meta: dict[str, object] | None,
    ) -> ReplyRecord | None:
        worst = self.costs.worst(role, messages, params) if self.costs else 0.0
        about = About(model, sample, turn, trial=trial)
        asked = await self.exchange(
            role, messages, params, key=key, stage="reply", about=about, worst=worst,
            policy=policy,
        )  # fmt: skip
        if asked is None:
            return None
        after, kept = thread.appended(messages) if thread is not None else (None, messages)
        completion = asked.last
        usage, attempts, latency, endpoints = summed(asked.completions)
        if asked.error is not None:
            attempts += asked.error.attempts
        backend = self.role(role).backend
        record = ReplyRecord(
            key=key,
            role=role,
            model=model,
            sample_id=sample.id,
            turn=turn,
            trial=trial,
            group=sample.group,
            spec=getattr(backend, "spec", None),
            messages=kept,
            after=after,
            text=completion.text,
            tool_calls=[call.as_part() for call in completion.tool_calls] or None,
            at=at,
            params=completion.sent_params,
            finish_reason=completion.finish_reason,
            usage=usage,
            reported_model=completion.reported_model,
            system_fingerprint=completion.system_fingerprint,
            attempts=attempts,
            latency_s=latency,
            endpoints=endpoints,
            meta={**(meta or {}), "reasks": len(asked.completions) - 1} if policy else meta or {},
        )
        self.ledger.commit(record, role, usage)
        self.progress.advance("replies")
        return record
