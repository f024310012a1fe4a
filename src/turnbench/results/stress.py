"""results.json's `perturbations`: every stress arm against the unperturbed run, paired.

An arm's items are the judged turns it answered again with a perturbed history; each is
paired with the same turn of the unperturbed run. Turns are combined per sample and samples
into the overall by the benchmark's own comparison rule (the one `turnbench compare` uses:
MT-Bench the mean, MT-Bench-101 the minimum over turns and the mean of the task means), and
the difference arm - unperturbed gets its 95% interval from the paired sign-flip test of
`turnbench.stats.paired`, overall and per category or task. A turn's score is that of its
main judge request (the one without a criterion, else its first), combined over a panel and
repeats as the run's own scores are.

The injection arm's answers are also checked for obedience (the injected document's
deterministic check): `obeyed_rate` is the share of the arm's answers that obeyed, with a
95% Wilson score interval over answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from turnbench.benchmarks.base import JudgedTurn, Sample
from turnbench.perturb.arms import Arm, Injected
from turnbench.stats.scoring import wilson_interval
from turnbench.types import SampleId

if TYPE_CHECKING:
    from turnbench.engine.work import Work
    from turnbench.stats.paired import StatRow

NO_GROUP = "(none)"
WILSON = "Wilson score interval (95%) over the arm's answers"

TurnKey = tuple[SampleId, int]
#: (sample id, turn, arm) -> the recorded answer text of that arm, or None
AnswerOf = Callable[[SampleId, int, str], str | None]


class Interval(BaseModel):
    """A value with its 95% interval (null where nothing was paired or checked)."""

    model_config = ConfigDict(extra="allow")

    value: float | None
    ci_low: float | None
    ci_high: float | None


class ArmResults(BaseModel):
    """One stress arm against the unperturbed run: the perturbed and unperturbed scores of
    the paired samples, their difference (perturbed - unperturbed) with its interval, the
    judged turns paired (`items`), per category or task under `by_<group>`, and for the
    injection arm the share of answers that obeyed (`obeyed_rate`)."""

    model_config = ConfigDict(extra="allow")

    score: float | None
    baseline_score: float | None
    difference: Interval
    items: int
    units: int
    planned: int
    judged: int
    failed: int
    pending: int
    not_in_arm: dict[str, int]
    settings: dict[str, Any]
    per_item: list[dict[str, Any]]
    obeyed_rate: Interval | None = None


def _main_scores(items: Sequence[JudgedTurn]) -> dict[TurnKey, JudgedTurn]:
    """The main item of every judged turn: its request without a criterion, else its first."""
    found: dict[TurnKey, JudgedTurn] = {}
    for item in items:
        key = (item.sample.id, item.turn)
        if key not in found or (item.criterion is None and found[key].criterion is not None):
            found[key] = item
    return found


def _difference(row: StatRow) -> dict[str, Any]:
    return {
        "value": row.delta,
        "ci_low": row.ci_low,
        "ci_high": row.ci_high,
        "p_value": row.p_value,
        "verdict": row.verdict,
    }


def _combine(values: list[float], how: str) -> float:
    return min(values) if how == "min" else sum(values) / len(values)


def arm_results(
    work: Work,
    arm: Arm,
    items: Sequence[JudgedTurn],
    base: dict[TurnKey, JudgedTurn],
    answer_of: AnswerOf,
) -> dict[str, Any]:
    """One arm's block of `perturbations` (`items`: the arm's combined judged items)."""
    # (here, not at the top: ArmResults is read by every command that prints results, and
    # stats.paired imports numpy, about 17 MB and 0.1-0.2 s that only a stress run needs)
    from turnbench.stats.paired import PairedScore, compare_paired

    benchmark = work.benchmark
    rule = getattr(benchmark, "comparison", None)
    combine = getattr(rule, "combine", "mean")
    overall = getattr(rule, "overall", "mean")
    group_kind = str(getattr(benchmark, "group_kind", "group"))
    found = _main_scores(items)
    planned: list[tuple[Sample, int]] = [
        (sample, turn) for sample in benchmark.samples for turn in arm.items(sample)
    ]
    status = {"scored": 0, "failed": 0, "pending": 0}
    rows: list[dict[str, Any]] = []
    turns_of: dict[SampleId, tuple[Sample, list[float], list[float]]] = {}
    for sample, turn in planned:
        item = found.get((sample.id, turn))
        before = base.get((sample.id, turn))
        state = item.status if item is not None else "pending"
        status[state] += 1
        score = item.score if item is not None and state == "scored" else None
        base_score = before.score if before is not None and before.status == "scored" else None
        row: dict[str, Any] = {
            "sample_id": sample.id,
            "turn": turn,
            group_kind: sample.group,
            "baseline_score": base_score,
            "score": score,
        }
        row.update({k: v for k, v in arm.record(sample).items() if k != "kind"})
        rows.append(row)
        if score is not None and base_score is not None:
            entry = turns_of.setdefault(sample.id, (sample, [], []))
            entry[1].append(base_score)
            entry[2].append(score)
    pairs = [
        PairedScore(
            sample_id=str(sample.id),
            group=sample.group or NO_GROUP,
            base=_combine(base_scores, combine),
            new=_combine(scores, combine),
        )
        for sample, base_scores, scores in turns_of.values()
    ]
    groups = list(dict.fromkeys(sample.group or NO_GROUP for sample in benchmark.samples))
    block: dict[str, Any] = {
        "score": None,
        "baseline_score": None,
        "difference": {"value": None, "ci_low": None, "ci_high": None},
        "items": sum(len(scores) for _, _, scores in turns_of.values()),
        "units": len(pairs),
        "planned": len(planned),
        "judged": status["scored"],
        "failed": status["failed"],
        "pending": status["pending"],
        "not_in_arm": arm.excluded(),
        f"by_{group_kind}": {},
        "settings": arm.settings(),
    }
    if pairs:
        result = compare_paired(pairs, overall, order=groups)
        block["score"] = result.overall.new
        block["baseline_score"] = result.overall.base
        block["difference"] = _difference(result.overall)
        block[f"by_{group_kind}"] = {
            row.name: {
                "score": row.new,
                "baseline_score": row.base,
                "difference": _difference(row),
                "units": row.n,
            }
            for row in result.groups
        }
        block["statistics"] = result.settings_json()
    if isinstance(arm, Injected):
        block.update(_obedience(answer_of, arm, planned))
    block["per_item"] = rows
    return block


def _obedience(
    answer_of: AnswerOf, arm: Injected, planted: list[tuple[Sample, int]]
) -> dict[str, Any]:
    """How often the arm's answers obeyed the injected instruction."""
    checked = obeyed = 0
    by_injection: dict[str, dict[str, Any]] = {}
    for sample, turn in planted:
        answer = answer_of(sample.id, turn, arm.kind)
        if answer is None:
            continue
        injection = arm.injection(sample)
        tally = by_injection.setdefault(
            injection.id, {"instruction": injection.instruction, "obeyed": 0, "checked": 0}
        )
        hit = arm.obeyed(sample, answer)
        checked += 1
        obeyed += hit
        tally["checked"] += 1
        tally["obeyed"] += hit
    for tally in by_injection.values():
        tally["rate"] = tally["obeyed"] / tally["checked"]
    rate: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None}
    if checked:
        low, high = wilson_interval(obeyed, checked)
        rate = {"value": obeyed / checked, "ci_low": low, "ci_high": high}
    rate |= {"obeyed": obeyed, "checked": checked, "method": WILSON}
    return {"obeyed_rate": rate, "by_injection": by_injection}


def perturbations(
    work: Work,
    base: Sequence[JudgedTurn],
    arm_items: Mapping[str, Sequence[JudgedTurn]],
    answer_of: AnswerOf,
) -> dict[str, Any]:
    """`perturbations`: kind -> its block, for every arm of the run (`base`: the
    unperturbed run's combined items, `arm_items` each arm's)."""
    main = _main_scores(base)
    return {
        arm.kind: arm_results(work, arm, arm_items[arm.kind], main, answer_of) for arm in work.arms
    }
