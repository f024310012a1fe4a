"""Paired comparison of two runs: is the new run better than the base, and where?

Both runs must have judged the same samples (questions or dialogues). For every sample
judged in both, the score difference new - base is paired, so sample difficulty cancels
out. Intervals and verdicts come from `turnbench.stats.paired`: a sign-flip test on the
independent units (the samples), exact at small sizes, that gives `insufficient_data`
rather than a verdict below a minimum number of paired samples.

How one sample is scored, and how samples make the overall, follows the benchmark's own
comparison rule (`Benchmark.comparison`): MT-Bench scores a question by the mean over its
turns scored in both runs, overall = mean over questions; MT-Bench-101 scores a dialogue by
the minimum over its judged turns, pairs only dialogues complete in both runs with the same
judged turns, and overall = mean of the task means (the published definition).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from turnbench.errors import UserError
from turnbench.journal.config import describe_differences
from turnbench.report.reading import is_pairwise, model_results, table
from turnbench.stats.paired import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    StatRow,
    compare_paired,
)
from turnbench.store.rundir import Entry, Run, SampleScore, sample_sort_key

NO_GROUP = "(none)"
#: settings a benchmark's results name beside the scores that change them (MT-Bench-101's
#: history and reference mode): two runs whose settings differ are not comparable as they are
HEADER_SETTINGS = ("context", "reference_mode")


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


def sample_scores(entry: Entry) -> dict[str, SampleScore]:
    """Scored turns per sample (`Entry.sample_scores`: made once per entry, however many
    comparisons and browser columns read it)."""
    return entry.sample_scores


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
            if one.failed or two.failed or not one.parts or not two.parts:
                skipped["a failed or missing turn"] += 1
                continue
            if set(one.parts) != set(two.parts):
                skipped["different judged turns"] += 1
                continue
            turns = sorted(one.parts)
        else:
            turns = sorted(set(one.parts) & set(two.parts))
            if not turns:
                skipped["no turn scored in both runs"] += 1
                continue
        pairs.append(
            Pair(
                sample_id=sample,
                group=one.group or two.group or NO_GROUP,
                base=_combine([one.parts[t] for t in turns], rule.combine),
                new=_combine([two.parts[t] for t in turns], rule.combine),
            )
        )
    return pairs, dict(skipped)


Row = StatRow  # one line of a comparison (overall or a group), from turnbench.stats.paired


# -- provenance -----------------------------------------------------------------------------
def _comparable(run: Run) -> dict[str, Any]:
    """What must match for two runs' scores to be comparable."""
    results = run.typed
    prov = results.provenance
    fields: dict[str, Any] = {
        "judge": results.judge,
        "judging": prov.judging,
        "parser": prov.parser,
        "max_reasks": prov.max_reasks,
        "prompt_versions": prov.prompt_versions,
        "options": prov.options,
        "judge_sampling": prov.judge_sampling,
        "data_sha256": prov.data_sha256,
        "reference_sha256": prov.reference_sha256,
    }
    for key in HEADER_SETTINGS:  # a benchmark's settings of the judged turns (results_header)
        value = getattr(results, key, None)
        if value is not None:
            fields[key] = value
    return fields


def provenance_differences(base: Run, new: Run) -> list[str]:
    """Human-readable differences in judge, prompts, parser and sampling (empty if none)."""
    if base.path == new.path:
        return []
    one, two = _comparable(base), _comparable(new)
    answer_one = base.typed.provenance.answer_sampling
    answer_two = new.typed.provenance.answer_sampling
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
    settings: dict[str, Any]

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
            if not model_results(entry).complete:
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
            "overall": {
                k: v for k, v in self.overall.to_json().items() if k not in ("n", "p_value")
            },
            "overall_p_value": self.overall.p_value,
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
            "statistics": self.settings,
        }


def check_comparable(base: Entry, new: Entry) -> None:
    for entry in (base, new):
        if is_pairwise(entry.run):
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
    order = [str(key) for key in table(base, f"by_{rule.group_kind}") or {}]
    result = compare_paired(
        pairs, rule.overall, level=level, resamples=resamples, seed=seed, order=order
    )
    return Comparison(
        benchmark=base.run.benchmark,
        base=base,
        new=new,
        overall=result.overall,
        rows=result.groups,
        pairs=pairs,
        skipped=skipped,
        differences=provenance_differences(base.run, new.run),
        settings=result.settings_json(),
    )
