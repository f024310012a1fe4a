"""What the drivers of text turns share: asking one turn, and the plan of single grading.

A turn is asked with the conversation before it (`history.earlier_pairs`: the dataset's
answers or the model's own), or with a stress arm's rewrite of it; its answer is judged by
`TurnJudging`. The plan's judgment keys and judged items are the same for every driver
that grades answers one by one (golden history, self history, simulated users, judge-only).
"""

from __future__ import annotations

from collections.abc import Mapping

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread, cut_off, earlier_pairs
from turnbench.engine.plan import NO_REQUEST, Plan, PlannedJob
from turnbench.perturb.arms import Arm
from turnbench.record_keys import answer_key
from turnbench.samples import Pair, Sample


async def ask_turn(
    work: WorkSpec,
    ctx: RunContext,
    model: str,
    sample: Sample,
    turn: int,
    own: Mapping[int, str],
    arm: Arm | None = None,
    given: Mapping[tuple[object, int], str] | None = None,
    thread: Thread | None = None,
) -> tuple[list[Pair], str, bool] | None:
    """Ask the model for one turn; (the conversation before it as the judge is shown it,
    the cleaned answer, whether it was cut off inside <think>), or None when it failed.
    With a stress `arm` the model is asked with the arm's history (`given`: the answers it
    needs). With a `thread` the record keeps only what this turn adds to the thread."""
    benchmark = work.benchmark
    earlier = shown = earlier_pairs(sample, turn, benchmark.history, own)
    if arm is not None:
        earlier, shown = arm.histories(sample, turn, earlier, given or {})
    messages = benchmark.answer_messages(sample, turn, earlier)
    record = await ctx.answer(
        key=answer_key(model, sample.id, turn, None if arm is None else arm.kind),
        model=model,
        sample=sample,
        turn=turn,
        messages=messages,
        params=benchmark.answer_params(sample),
        arm=None if arm is None else arm.kind,
        meta=None if arm is None else {"perturbation": arm.record(sample)},
        thread=thread,
    )
    if record is None:
        return None
    return shown, record.text or "", cut_off(record)


def judged_items(work: WorkSpec) -> list[tuple[Sample, int, object]]:
    """(sample, turn, criterion) of every planned judgment of one model, in plan order; a
    judged turn without judge requests appears once, with NO_REQUEST as its criterion."""
    criteria = work.turn_judging.criteria
    return [
        (sample, turn, criterion)
        for sample in work.benchmark.samples
        for turn in sample.judged_turns()
        for criterion in (criteria(sample, turn) or [NO_REQUEST])
    ]


def single_grading_plan(work: WorkSpec) -> Plan:
    """The judgments of every model's judged turns (every judge, every repeat), and the
    judged items; the caller adds its jobs and answers."""
    plan = Plan(items=judged_items(work))
    judge_ids = [judge.id for judge in work.judges]
    judging = work.turn_judging
    keys = plan.keys["judgments"]
    for model in work.models:
        for sample in work.benchmark.samples:
            for turn in sample.judged_turns():
                keys.update(judging.keys(judge_ids, model, sample, turn, None))
    return plan


def conversation_plan(work: WorkSpec) -> Plan:
    """A job per sample whose asked turns run in order (self history, simulated users):
    their answers and the judgments of their judged turns."""
    plan = single_grading_plan(work)
    model = work.model
    assert model is not None
    samples = work.benchmark.samples
    plan.jobs = [PlannedJob(sample, model) for sample in samples]
    plan.keys["answers"] = {
        answer_key(model, sample.id, turn) for sample in samples for turn in sample.asked_turns()
    }
    return plan


def size_turns(
    work: WorkSpec,
    sizing: Sizing,
    sample: Sample,
    own: Mapping[int, str],
    answered: list[int],
    judged: list[int],
) -> None:
    """Add the answers of `answered` and the judge requests of `judged` to `sizing`, each
    asked with `own` as the model's earlier answers."""
    benchmark = work.benchmark
    for turn in answered:
        earlier = earlier_pairs(sample, turn, benchmark.history, own)
        sizing.answer(benchmark.answer_messages(sample, turn, earlier))
    for turn in judged:
        earlier = earlier_pairs(sample, turn, benchmark.history, own)
        for task in benchmark.judge_tasks(sample, turn, earlier, own[turn]):
            sizing.judgment(task.messages)
