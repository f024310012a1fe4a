"""One model's results under single grading: every planned judgment as the log has it,
combined over repeats and judges, scored by the benchmark's `aggregate`; and the simulated
user's conduct."""

from __future__ import annotations

from typing import Any, Literal

from turnbench.benchmarks.base import JudgedTurn, Sample
from turnbench.engine.plan import NO_REQUEST
from turnbench.engine.work import Work
from turnbench.journal.config import RunConfig
from turnbench.journal.logindex import (
    AnswerDone,
    JudgmentDone,
    UserTurnDone,
)
from turnbench.judging.cleaning import UNCLOSED_REASON
from turnbench.record_keys import answer_key, judgment_key
from turnbench.results.logview import LogView
from turnbench.trust import blocks as trust
from turnbench.types import SampleId


def judged_turns(
    work: Work, view: LogView, model: str, judge: str, repeat: int = 0, arm: str | None = None
) -> list[JudgedTurn]:
    """Every planned judged turn (and criterion) of `model` by `judge`, as the log has it.

    A turn without judge requests is one item, scored once its answer is recorded. Answer
    texts the index does not hold are read back only for benchmarks that need them. `arm`:
    the items as that stress arm's keys have them (every planned turn: the caller keeps
    the arm's own)."""
    cached = view.judged.get((model, judge, repeat, arm))
    if cached is not None:
        return cached
    items: list[JudgedTurn] = []
    done = view.done
    with_text = work.benchmark.needs_answer_text
    for sample, turn, criterion in work.plan.items:
        answer = view.answer(model, sample.id, turn, read=with_text, arm=arm)
        answered_as = done.get(answer_key(model, sample.id, turn, arm))
        if answer is None and arm is None:  # the user may have ended before this turn
            final = ended_before(view, model, sample.id, turn)
            if final == 0:  # ... before the model's first answer: nothing can be judged
                reason = ENDED_BEFORE_START_REASON
                criterion = None if criterion is NO_REQUEST else criterion
                items.append(JudgedTurn(sample, turn, "failed", reason=reason, criterion=criterion))
                continue
            if final is not None:
                answer = view.answer(model, sample.id, final, read=with_text)
                answered_as = done.get(answer_key(model, sample.id, final))
        if isinstance(answered_as, AnswerDone) and answered_as.unclosed_think:
            # nothing to judge: never a judgment of the empty answer (older runs judged it)
            items.append(
                JudgedTurn(
                    sample,
                    turn,
                    "failed",
                    reason=UNCLOSED_REASON,
                    criterion=None if criterion is NO_REQUEST else criterion,
                    answer=answer,
                    unclosed_think=True,
                )
            )
            continue
        if criterion is NO_REQUEST:
            answered = answer is not None or (sample.id, turn) in view.answered(model)
            status: Literal["scored", "pending"] = "scored" if answered else "pending"
            items.append(JudgedTurn(sample, turn, status, answer=answer))
            continue
        key = judgment_key(
            judge, model, sample.id, turn, criterion=criterion, repeat=repeat, arm=arm
        )
        record = done.get(key)
        judgment = record if isinstance(record, JudgmentDone) else None
        items.append(_judged(sample, turn, criterion, judgment, answer))
    view.judged[(model, judge, repeat, arm)] = items
    return items


def ended_before(view: LogView, model: str, sample_id: SampleId, turn: int) -> int | None:
    """The last answered turn of a simulated conversation the user ended before `turn`
    (its final answer stands for the later judged turn: `Work._judge_at_end`), 0 when the
    user ended it before the model's first answer, or None (not ended): read from the
    conversation's own user turns (`LogView.conversations`)."""
    parts = view.conversations.get((model, str(sample_id), None, None))
    if parts is None:
        return None
    endings = [user for user in parts.users if user.ended and user.turn <= turn]
    if not endings:
        return None
    last = max(endings, key=lambda user: user.turn)
    return last.turn if last.text.strip() else last.turn - 1


#: the failure of a judged turn whose conversation the simulated user ended with its first
#: message (only an end marker): not the model's fault, and not pending (a resume would
#: read the same logged turn back); `simulator.conversations_with.ended_before_start`
ENDED_BEFORE_START_REASON = (
    "the simulated user ended the conversation before the model's first answer"
)


#: the one column of a run with no judge: its items are all NO_REQUEST, scored from answers
NO_JUDGE = ""


def _judged(
    sample: Sample,
    turn: int,
    criterion: str | None,
    record: JudgmentDone | None,
    answer: str | None = None,
) -> JudgedTurn:
    if record is None:
        return JudgedTurn(sample, turn, "pending", criterion=criterion, answer=answer)
    if record.status == "scored":
        checklist = tuple(record.checklist) if record.checklist is not None else None
        return JudgedTurn(
            sample,
            turn,
            "scored",
            record.score,
            checklist,
            record.reasks,
            criterion=criterion,
            scoring=record.scoring,
            answer=answer,
        )
    return JudgedTurn(
        sample,
        turn,
        "failed",
        reasks=record.reasks,
        reason=record.parse_error,
        criterion=criterion,
        answer=answer,
    )


def panel_items(
    work: Work, config: RunConfig, view: LogView, model: str, arm: str | None = None
) -> trust.PanelItems:
    """Every judgment of `model`'s items: per judge, per repeat (combined as configured);
    `arm`: of that stress arm. A run with no judge (every turn scored from its answer) has its
    items under NO_JUDGE."""
    judges = [judge.id for judge in config.judges] or [NO_JUDGE]
    return trust.PanelItems(
        {
            judge: [
                judged_turns(work, view, model, judge, repeat, arm)
                for repeat in range(config.judge_repeats)
            ]
            for judge in judges
        },
        config.repeat_aggregate,
        config.panel_aggregate,
    )


def model_results(
    work: Work,
    config: RunConfig,
    view: LogView,
    model: str,
    panel: trust.PanelItems | None = None,
) -> dict[str, Any]:
    benchmark = work.benchmark
    panel = panel or panel_items(work, config, view, model)
    items = panel.combined  # one item per planned judgment: repeats, then judges, combined
    tables = benchmark.aggregate(items)
    judged = sum(item.status == "scored" for item in items)
    failures = [
        {**benchmark.describe(item.sample), "turn": item.turn, "reason": item.reason}
        for item in items
        if item.status == "failed"
    ]
    pending = len(items) - judged - len(failures)
    answers = view.answered(model)
    unclosed = view.unclosed_think(model)
    judgments = panel.judgment_counts()
    results = {
        "benchmark": benchmark.name,
        "model": model,
        "judge": config.judge,
        "complete": pending == 0 and judgments["pending"] == 0,
        **benchmark.results_header(),
    }
    results.update(tables.results_fields())
    results["counts"] = {
        "expected": len(items),
        "judged": judged,
        "failed": len(failures),
        "pending": pending,
        "reasks": sum(item.reasks for item in items),
        "answers": len(answers),
        "unclosed_think": len(unclosed),
        **tables.counts,
    }
    if config.judges and config.judges[0].scoring == "weighted":
        results["counts"]["weighted_fallbacks"] = sum(
            item.scoring == "parsed-fallback" for item in items
        )
    results["parse_failures"] = failures
    results["unclosed_think"] = [{"sample_id": s, "turn": t} for s, t in unclosed]
    if panel.is_panel or panel.repeats > 1:
        results["counts"]["judgments"] = judgments
    lookup = view.answer_lookup(model)
    if panel.is_panel:
        results["by_judge"] = trust.by_judge(benchmark, panel)
        results["judge_agreement"] = trust.panel_agreement(panel)
    if panel.repeats > 1:
        results["repeats"] = trust.repeat_spread(benchmark, panel)
    planned = [(sample, turn) for sample in benchmark.samples for turn in sample.judged_turns()]
    results["flagged_answers"] = trust.flagged_answers(benchmark, planned, lookup)
    if simulated(view, model):
        results["simulator"] = simulator_counts(work, view, model)
    return results


def simulated(view: LogView, model: str) -> bool:
    """Whether `model`'s conversations had user turns made as they went (a simulated user,
    or the benchmark's templates): results then count the simulator's conduct."""
    return model in view.user_turn_models


def simulator_counts(work: Work, view: LogView, model: str) -> dict[str, Any]:
    """`simulator`: the user turns of `model`'s planned conversations, as the log has them."""
    planned = {sample.id for sample in work.benchmark.samples}
    turns = [
        done
        for done in view.done.values()
        if isinstance(done, UserTurnDone) and done.model == model and done.sample_id in planned
    ]
    by_origin: dict[str, int] = {}
    codes = work.benchmark.simulator_problems
    with_problem: dict[str, set[tuple[SampleId, int | None]]] = {code: set() for code in codes}
    turns_with = dict.fromkeys(codes, 0)
    ended: dict[str, int] = {}
    reasks = 0
    for done in turns:
        by_origin[done.origin] = by_origin.get(done.origin, 0) + 1
        for code in done.problems:
            with_problem.setdefault(code, set()).add((done.sample_id, done.trial))
            turns_with[code] = turns_with.get(code, 0) + 1
        if done.ended:
            ended[done.ended] = ended.get(done.ended, 0) + 1
        count = done.meta.get("reasks")
        reasks += count if type(count) is int and count > 0 else 0
    return {
        "user_turns": len(turns),
        "by_origin": by_origin,
        "conversations": len({(done.sample_id, done.trial) for done in turns}),
        "conversations_with": {code: len(ids) for code, ids in with_problem.items()},
        "turns_with": turns_with,
        "reasks": reasks,
        "ended": ended,
    }
