"""Paired comparison of two runs: is the new run better than the base, and where?

Both runs must have judged the same samples (questions or dialogues). For every sample
judged in both, the score difference new - base is paired, so sample difficulty cancels
out. Intervals come from a seeded paired bootstrap that resamples samples with replacement
within each category or task (every group keeps its size in every resample), which keeps
the benchmark's own aggregate well defined (MT-Bench-101's overall is a mean of task means).

How one sample is scored, and how samples make the overall, follows the benchmark's own
comparison rule (`Benchmark.comparison`): MT-Bench scores a question by the mean over its
turns scored in both runs, overall = mean over questions; MT-Bench-101 scores a dialogue by
the minimum over its judged turns, pairs only dialogues complete in both runs with the same
judged turns, and overall = mean of the task means (the published definition).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from turnbench.config import describe_differences
from turnbench.errors import UserError
from turnbench.rundir import Entry, Run, sample_sort_key

Verdict = Literal["better", "worse", "no_change"]
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95
NO_GROUP = "(none)"


@dataclass(frozen=True)
class Rule:
    combine: Literal["mean", "min"]  # turns -> one sample score
    overall: Literal["mean", "mean_of_groups"]  # samples -> overall
    need_complete: bool  # pair only samples with no failed or missing turn
    group_kind: str


DEFAULT_RULE = Rule("mean", "mean", need_complete=False, group_kind="group")


def rule_for(run: Run) -> Rule:
    """The comparison rule the run's benchmark declares (a default when it is unknown)."""
    cls = run.benchmark_class
    if cls is None:
        return DEFAULT_RULE
    rule = cls.comparison
    return Rule(rule.combine, rule.overall, rule.need_complete, cls.group_kind)


@dataclass
class SampleScore:
    group: str | None
    turns: dict[int, float] = field(default_factory=dict)  # scored turns only
    failed: bool = False  # a turn ended unparseable, or its request still fails


def sample_scores(entry: Entry) -> dict[str, SampleScore]:
    """Scored turns per sample. An unparseable judgment marks its sample failed, except with
    the `compat` parser, whose reference implementations drop such turns silently (the
    results of such a run do the same, so the comparison follows them)."""
    groups = entry.groups()
    drop_unparseable = entry.run.provenance.get("parser") == "compat"
    scores: dict[str, SampleScore] = {}
    for (sample, turn), record in entry.judgments.items():
        score = scores.setdefault(sample, SampleScore(groups.get(sample)))
        if record.status == "scored" and record.score is not None:
            score.turns[turn] = record.score
        elif not drop_unparseable:
            score.failed = True
    for sample, _ in entry.open_failures:
        scores.setdefault(sample, SampleScore(groups.get(sample))).failed = True
    return scores


@dataclass(frozen=True)
class Pair:
    sample_id: str
    group: str
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base


def _combine(values: list[float], how: str) -> float:
    return min(values) if how == "min" else sum(values) / len(values)


def pair_samples(
    base: dict[str, SampleScore], new: dict[str, SampleScore], rule: Rule
) -> tuple[list[Pair], dict[str, int]]:
    """The paired samples, and counts of samples left out by reason."""
    pairs: list[Pair] = []
    skipped: dict[str, int] = defaultdict(int)
    for sample in sorted({*base, *new}, key=sample_sort_key):
        one, two = base.get(sample), new.get(sample)
        if one is None or two is None:
            skipped["judged in one run only"] += 1
            continue
        if rule.need_complete:
            if one.failed or two.failed or not one.turns or not two.turns:
                skipped["a failed or missing turn"] += 1
                continue
            if set(one.turns) != set(two.turns):
                skipped["different judged turns"] += 1
                continue
            turns = sorted(one.turns)
        else:
            turns = sorted(set(one.turns) & set(two.turns))
            if not turns:
                skipped["no turn scored in both runs"] += 1
                continue
        pairs.append(
            Pair(
                sample_id=sample,
                group=one.group or two.group or NO_GROUP,
                base=_combine([one.turns[t] for t in turns], rule.combine),
                new=_combine([two.turns[t] for t in turns], rule.combine),
            )
        )
    return pairs, dict(skipped)


def verdict(ci_low: float | None, ci_high: float | None) -> Verdict:
    if ci_low is not None and ci_low > 0:
        return "better"
    if ci_high is not None and ci_high < 0:
        return "worse"
    return "no_change"


@dataclass
class Row:
    name: str
    n: int
    base: float
    new: float
    ci_low: float | None
    ci_high: float | None

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def verdict(self) -> Verdict:
        return verdict(self.ci_low, self.ci_high)

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "new": self.new,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": self.verdict,
            "n": self.n,
        }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _aggregate(by_group: dict[str, list[float]], how: str) -> float:
    if how == "mean_of_groups":
        return _mean([_mean(values) for values in by_group.values()])
    return _mean([v for values in by_group.values() for v in values])


def paired_bootstrap(
    pairs: list[Pair],
    rule: Rule,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    order: list[str] | None = None,
) -> tuple[Row, list[Row]]:
    """Overall and per-group rows with percentile intervals of the paired difference.

    Each resample draws, within every group, as many samples as the group has (with
    replacement) and recomputes the group's mean difference; the overall difference of a
    resample aggregates those group means by the benchmark's rule. An interval needs at
    least two samples (in the group, or overall); otherwise it is None.
    """
    if not pairs:
        raise UserError("the two runs have no judged sample in common; nothing to compare")
    import numpy as np

    by_group: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_group[pair.group].append(pair)
    rng = np.random.default_rng(seed)
    alpha = (1.0 - level) / 2.0
    group_draws: dict[str, Any] = {}
    rows: list[Row] = []
    known = {name: index for index, name in enumerate(order or [])}
    names = sorted(by_group, key=lambda name: known.get(name, len(known)))  # stable sort
    for name in names:
        members = by_group[name]
        deltas = np.array([p.delta for p in members], dtype=float)
        draws = rng.integers(0, len(members), size=(resamples, len(members)))
        group_draws[name] = deltas[draws].mean(axis=1)
        low = high = None
        if len(members) >= 2:
            low, high = (float(x) for x in np.quantile(group_draws[name], [alpha, 1 - alpha]))
        rows.append(
            Row(
                name=name,
                n=len(members),
                base=_mean([p.base for p in members]),
                new=_mean([p.new for p in members]),
                ci_low=low,
                ci_high=high,
            )
        )
    stacked = np.stack([group_draws[name] for name in names])
    if rule.overall == "mean_of_groups":
        overall_draws = stacked.mean(axis=0)
    else:
        sizes = np.array([len(by_group[name]) for name in names], dtype=float)
        overall_draws = (stacked * sizes[:, None]).sum(axis=0) / sizes.sum()
    low = high = None
    if len(pairs) >= 2:
        low, high = (float(x) for x in np.quantile(overall_draws, [alpha, 1 - alpha]))
    overall = Row(
        name="overall",
        n=len(pairs),
        base=_aggregate({g: [p.base for p in m] for g, m in by_group.items()}, rule.overall),
        new=_aggregate({g: [p.new for p in m] for g, m in by_group.items()}, rule.overall),
        ci_low=low,
        ci_high=high,
    )
    return overall, rows


# -- provenance -----------------------------------------------------------------------------
def _comparable(run: Run) -> dict[str, Any]:
    """What must match for two runs' scores to be comparable."""
    prov = run.provenance
    fields: dict[str, Any] = {
        "judge": run.judge,
        "judging": run.judging,
        "parser": prov.get("parser"),
        "max_reasks": prov.get("max_reasks"),
        "prompt_versions": prov.get("prompt_versions"),
        "options": prov.get("options"),
        "judge_sampling": prov.get("judge_sampling"),
        "data_sha256": prov.get("data_sha256"),
        "reference_sha256": prov.get("reference_sha256"),
    }
    for key in ("context", "reference_mode"):
        if key in run.results:
            fields[key] = run.results[key]
    return fields


def provenance_differences(base: Run, new: Run) -> list[str]:
    """Human-readable differences in judge, prompts, parser and sampling (empty if none)."""
    if base.path == new.path:
        return []
    one, two = _comparable(base), _comparable(new)
    answer_one = base.provenance.get("answer_sampling")
    answer_two = new.provenance.get("answer_sampling")
    if answer_one is not None and answer_two is not None:  # judge-only runs record none
        one["answer_sampling"], two["answer_sampling"] = answer_one, answer_two
    return [line.strip() for line in describe_differences(one, two)]


# -- the whole comparison -------------------------------------------------------------------
@dataclass
class Comparison:
    benchmark: str
    base: Entry
    new: Entry
    overall: Row
    rows: list[Row]
    pairs: list[Pair]
    skipped: dict[str, int]
    differences: list[str]
    resamples: int
    seed: int
    level: float

    @property
    def group_kind(self) -> str:
        return rule_for(self.base.run).group_kind

    def movers(self, top: int = 10) -> list[Pair]:
        ranked = sorted(self.pairs, key=lambda p: (-abs(p.delta), sample_sort_key(p.sample_id)))
        return [p for p in ranked[:top] if p.delta != 0]

    def warnings(self) -> list[str]:
        notes = []
        if self.differences:
            notes.append(
                "the runs differ in settings that change scores, so a difference may come "
                "from the setup rather than the model:\n  " + "\n  ".join(self.differences)
            )
        for entry in (self.base, self.new):
            if entry.results.get("complete") is False:
                notes.append(
                    f"{entry.run.path} is incomplete; only its finished samples are compared"
                )
        if self.skipped:
            parts = ", ".join(f"{n} ({why})" for why, n in sorted(self.skipped.items()))
            notes.append(f"samples left out of the pairing: {parts}")
        return notes

    def to_json(self, top: int = 10) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "base": {"run": str(self.base.run.path), "model": self.base.model},
            "new": {"run": str(self.new.run.path), "model": self.new.model},
            # exactly the documented keys; the number of pairs is "paired"
            "overall": {k: v for k, v in self.overall.to_json().items() if k != "n"},
            "rows": [{self.group_kind: row.name, **row.to_json()} for row in self.rows],
            "moved": [
                {
                    "sample_id": p.sample_id,
                    self.group_kind: p.group,
                    "base": p.base,
                    "new": p.new,
                    "delta": p.delta,
                }
                for p in self.movers(top)
            ],
            "paired": len(self.pairs),
            "skipped": self.skipped,
            "differences": self.differences,
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "level": self.level},
        }


def check_comparable(base: Entry, new: Entry) -> None:
    for entry in (base, new):
        if entry.run.pairwise:
            raise UserError(
                f"{entry.run.path} is a pairwise run; compare needs single-grading runs "
                "(scores per sample)"
            )
        if not entry.run.has_log:
            raise UserError(f"{entry.run.path}: no log.jsonl; per-sample scores are needed")
    if base.run.benchmark != new.run.benchmark:
        raise UserError(
            f"the runs are of different benchmarks ({base.run.benchmark} and "
            f"{new.run.benchmark}); their samples cannot be paired"
        )


def compare_entries(
    base: Entry,
    new: Entry,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Comparison:
    check_comparable(base, new)
    rule = rule_for(base.run)
    pairs, skipped = pair_samples(sample_scores(base), sample_scores(new), rule)
    order = [
        str(key) for name in ("by_category", "by_task") for key in (base.results.get(name) or {})
    ]
    overall, rows = paired_bootstrap(
        pairs, rule, resamples=resamples, seed=seed, level=level, order=order
    )
    return Comparison(
        benchmark=base.run.benchmark,
        base=base,
        new=new,
        overall=overall,
        rows=rows,
        pairs=pairs,
        skipped=skipped,
        differences=provenance_differences(base.run, new.run),
        resamples=resamples,
        seed=seed,
        level=level,
    )


def fails_gate(overall: Row, threshold: float) -> bool:
    """`--fail-if-worse D`: true exactly when the interval's upper end is below -D."""
    return overall.ci_high is not None and overall.ci_high < -threshold
