"""What a judgment's record keeps: the prompt, every reply, and what the parser made of them.

Invariant 5 of the design: every judgment stores the exact prompt sent and the raw text
returned, so it can be re-parsed without calling the judge again. This module builds that
record from a judge's outcome, and sizes its requests for the token budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from turnbench.engine.estimate import chars
from turnbench.types import Completion, JudgmentRecord, Usage

if TYPE_CHECKING:
    from turnbench.judging.formats import ReplyFormat
    from turnbench.judging.judge import Judge
    from turnbench.judging.reask import JudgeOutcome
    from turnbench.samples import JudgeTask, Sample

#: `JudgmentRecord.followup` when an unreadable reply was answered by sending the same
#: request again (a reference implementation's retry), not by a re-ask text
SAME_REQUEST = "same-request"


def judgment_record(
    judge: Judge,
    task: JudgeTask,
    reply: ReplyFormat,
    outcome: JudgeOutcome,
    *,
    key: str,
    model: str,
    sample: Sample,
    turn: int,
    pair: tuple[str, str] | None,
    order: Literal["AB", "BA"] | None,
    repeat: int,
    meta: Mapping[str, object] | None,
    arm: str | None,
    scoring: str | None,
    batched: tuple[str | None, Usage | None] | None,
) -> JudgmentRecord:
    """The record of one finished judgment. `batched`: (batch id, usage) when its first
    request went through the judge's provider batch."""
    last = outcome.last
    result = outcome.result
    kept: dict[str, object] = dict(meta or {})
    if pair is not None:  # also in `meta`, where schema-1 records kept them
        shown_b = pair[1] if pair[0] == model else pair[0]
        kept |= {"pair": list(pair), "order": order, "model_a": model, "model_b": shown_b}
    batch_id, batch_usage = batched if batched is not None else (None, None)
    return JudgmentRecord(
        key=key,
        judge=judge.id,
        model=model,
        sample_id=sample.id,
        turn=turn,
        group=sample.group,
        criterion=task.criterion,
        repeat=repeat,
        pair=pair,
        order=order,
        prompt_name=task.prompt_name,
        messages=task.messages,
        params=last.sent_params if last else {},
        outputs=outcome.outputs,
        followup=followup_label(reply, outcome),
        parser=reply.parser,
        status="scored" if result.ok else "parse_failed",
        score=outcome.weighted.value if outcome.weighted else result.score,
        scoring=scoring,
        parsed_score=result.score if outcome.weighted else None,
        rating_probabilities={str(k): p for k, p in outcome.weighted.probabilities.items()}
        if outcome.weighted
        else None,
        verdict=result.verdict,
        checklist=list(result.checklist) if result.checklist is not None else None,
        parse_error=result.error,
        usage=outcome.usage,
        reported_model=last.reported_model if last else None,
        system_fingerprint=last.system_fingerprint if last else None,
        attempts=outcome.attempts,
        latency_s=round(outcome.latency_s, 4),
        batch_id=batch_id,
        batch_usage=batch_usage if batch_id else None,
        endpoints=[c.endpoint for c in outcome.completions if c.endpoint],
        meta=kept,
        arm=arm,
    )


def judge_requests(
    task: JudgeTask, reply: ReplyFormat, outcome: JudgeOutcome
) -> list[tuple[int, Completion]]:
    """Each reply of a judgment with the characters of the request it answered: the judge
    prompt, and for a re-ask the prompt, the reply before it and the re-ask text
    (`reask.reask_messages`; a resend repeats the prompt, told apart here by count only,
    close enough for an estimate)."""
    base = chars(task.messages)
    followup = reply.followup
    requests: list[tuple[int, Completion]] = []
    previous: Completion | None = None
    for completion in outcome.completions:
        size = base
        if previous is not None and followup is not None and outcome.reasks:
            size += len(previous.text) + len(followup.text)
        requests.append((size, completion))
        previous = completion
    return requests


def followup_label(reply: ReplyFormat, outcome: JudgeOutcome) -> str | None:
    """What followed the first reply: the versioned re-ask text, or the same request again."""
    if reply.followup is not None and outcome.reasks:
        return reply.followup.label
    if outcome.resends:
        return SAME_REQUEST
    return None
