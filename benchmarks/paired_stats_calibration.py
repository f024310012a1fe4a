"""Calibration of `turnbench compare` verdicts by simulation: false positives, power, coverage.

Scores are simulated on the 1-10 integer scale like an LLM judge's: each question has a
difficulty shared by both runs (and each turn its own offset), each run adds its own noise
per turn (answer sampling plus judge noise), the latent is rounded and clipped to 1..10.

- MT-Bench: 8 categories of k questions, 2 turns, question score = mean of its turns,
  overall = mean over questions.
- MT-Bench-101: 13 tasks, dialogues of 2-4 judged turns, dialogue score = minimum of its
  turns, overall = mean of the task means; task sizes unequal.

Two runs "from the same distribution" differ only in that noise; "shift" adds to the latent
of the new run (a +1 shift moves scores by less than 1 near the ceiling). For each setting
and method the script prints how often a verdict (better or worse) is given under the null,
overall and per group, how often a shift is detected (verdict better), and how often the
interval covers the true difference (the expected difference of these very questions, from
the exact distribution of the rounded scores).

Methods: `signflip` (turnbench.stats.paired, the method of `compare`), `student-t` (t interval
on the mean paired difference; per group, and overall over units), `bootstrap` (the previous
method: percentile bootstrap resampling units within each group, turnbench.report.compare).

    .venv/bin/python benchmarks/paired_stats_calibration.py [--seeds 1000] [--quick]
"""

from __future__ import annotations

import argparse
import time
import zlib
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, stdtrit

from turnbench.stats.paired import MIN_PAIRS, PairedScore, compare_paired

LEVEL = 0.95


@dataclass
class Scenario:
    name: str
    sizes: list[int]  # units per group
    aggregation: str  # "mean" or "mean_of_groups"
    turns: tuple[int, int]  # judged turns per unit: (min, max)
    combine: str  # "mean" or "min"
    sd_run: float = 1.0  # per-turn noise of a run (answer sampling + judge)
    level_mean: float = 6.5


def _expected_score(latent_mean: np.ndarray, sd: float) -> tuple[np.ndarray, np.ndarray]:
    """P(score >= k) for k = 1..10, of clip(round(N(mean, sd)), 1, 10); returns (probs, E)."""
    ks = np.arange(1, 11)
    at_least = np.where(ks == 1, 1.0, 1.0 - ndtr((ks - 0.5 - latent_mean[..., None]) / sd))
    return at_least, at_least.sum(axis=-1)


def simulate(rng: np.random.Generator, sc: Scenario, shift: float):
    """(groups, base, new, true_delta_per_unit) for one pair of runs."""
    groups = np.repeat(np.arange(len(sc.sizes)), sc.sizes)
    units = len(groups)
    turns = rng.integers(sc.turns[0], sc.turns[1] + 1, size=units)
    width = sc.turns[1]
    mask = np.arange(width)[None, :] < turns[:, None]
    difficulty = rng.normal(0, 1.8, size=(units, 1)) + rng.normal(0, 0.8, size=(units, width))
    latent = sc.level_mean + difficulty

    def run(offset: float) -> tuple[np.ndarray, np.ndarray]:
        noisy = latent + offset + rng.normal(0, sc.sd_run, size=latent.shape)
        scores = np.clip(np.rint(noisy), 1, 10)
        at_least, expected = _expected_score(latent + offset, sc.sd_run)
        if sc.combine == "mean":
            value = np.where(mask, scores, 0).sum(1) / turns
            truth = np.where(mask, expected, 0).sum(1) / turns
        else:
            value = np.where(mask, scores, 99).min(1)
            # P(min >= k) = product over turns of P(turn >= k)
            prod = np.where(mask[..., None], at_least, 1.0).prod(axis=1)
            truth = prod.sum(-1)
        return value, truth

    base, truth_base = run(0.0)
    new, truth_new = run(shift)
    return groups, base, new, truth_new - truth_base


def weights_of(groups: np.ndarray, aggregation: str) -> np.ndarray:
    sizes = np.bincount(groups)
    if aggregation == "mean":
        return np.full(len(groups), 1.0 / len(groups))
    return 1.0 / (len(sizes) * sizes[groups])


def student_t(deltas: np.ndarray) -> tuple[float, float] | None:
    n = len(deltas)
    if n < 2:
        return None
    half = stdtrit(n - 1, 1 - (1 - LEVEL) / 2) * deltas.std(ddof=1) / np.sqrt(n)
    return deltas.mean() - half, deltas.mean() + half


def student_t_weighted(deltas: np.ndarray, weights: np.ndarray) -> tuple[float, float] | None:
    """t interval for a weighted mean (plain, unstratified): HC2-type variance, df n - 1."""
    n = len(deltas)
    if n < 2:
        return None
    estimate = weights @ deltas
    variance = float(((weights * (deltas - estimate)) ** 2 / (1 - weights)).sum())
    half = stdtrit(n - 1, 1 - (1 - LEVEL) / 2) * np.sqrt(variance)
    return estimate - half, estimate + half


def percentile_bootstrap(groups, base, new, aggregation, seed):
    """The previous method of compare (percentile bootstrap within groups)."""
    from turnbench.report.compare import Pair, Rule, paired_bootstrap

    pairs = [
        Pair(str(i), f"g{g}", float(b), float(n))
        for i, (g, b, n) in enumerate(zip(groups, base, new, strict=True))
    ]
    overall, rows = paired_bootstrap(
        pairs, Rule("mean", aggregation, False, "group"), resamples=2000, seed=seed
    )
    return overall, rows


class Tally:
    def __init__(self) -> None:
        self.calls = self.total = self.covered = 0

    def add(self, interval, truth: float, called: bool) -> None:
        self.total += 1
        self.calls += called
        if interval is not None:
            self.covered += interval[0] <= truth <= interval[1]

    def rate(self) -> float:
        return self.calls / self.total if self.total else float("nan")

    def coverage(self) -> float:
        return self.covered / self.total if self.total else float("nan")


def called(interval) -> bool:
    return interval is not None and (interval[0] > 0 or interval[1] < 0)


def evaluate(sc: Scenario, shift: float, seeds: int, methods: list[str]) -> dict:
    out = {m: {"overall": Tally(), "group": Tally()} for m in methods}
    for seed in range(seeds):
        rng = np.random.default_rng([zlib.crc32(sc.name.encode()), int(shift * 100), seed])
        groups, base, new, truth = simulate(rng, sc, shift)
        weights = weights_of(groups, sc.aggregation)
        true_overall = float(weights @ truth)
        deltas = new - base
        if "signflip" in methods:
            pairs = [
                PairedScore(str(i), f"g{g}", float(b), float(n))
                for i, (g, b, n) in enumerate(zip(groups, base, new, strict=True))
            ]
            result = compare_paired(pairs, sc.aggregation, seed=seed)  # type: ignore[arg-type]
            o = result.overall
            if o.verdict != "insufficient_data":
                verdict = o.verdict in ("better", "worse")
                out["signflip"]["overall"].add((o.ci_low, o.ci_high), true_overall, verdict)
            for row in result.groups:
                if row.verdict != "insufficient_data":
                    g = int(row.name[1:])
                    t = float(truth[groups == g].mean())
                    verdict = row.verdict in ("better", "worse")
                    out["signflip"]["group"].add((row.ci_low, row.ci_high), t, verdict)
        if "student-t" in methods:
            interval = (
                student_t(deltas)
                if sc.aggregation == "mean"
                else student_t_weighted(deltas, weights)
            )
            out["student-t"]["overall"].add(interval, true_overall, called(interval))
            for g in range(len(sc.sizes)):
                d = deltas[groups == g]
                interval = student_t(d)
                if interval is not None:
                    out["student-t"]["group"].add(
                        interval, float(truth[groups == g].mean()), called(interval)
                    )
        if "bootstrap" in methods:
            overall, rows = percentile_bootstrap(groups, base, new, sc.aggregation, seed)
            interval = None if overall.ci_low is None else (overall.ci_low, overall.ci_high)
            out["bootstrap"]["overall"].add(interval, true_overall, called(interval))
            for row in rows:
                if row.ci_low is not None:
                    g = int(row.name[1:])
                    out["bootstrap"]["group"].add(
                        (row.ci_low, row.ci_high),
                        float(truth[groups == g].mean()),
                        called((row.ci_low, row.ci_high)),
                    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="fewer settings")
    args = parser.parse_args()
    methods = ["signflip", "student-t", "bootstrap"]
    per_category = [1, 2, 3, 5, 6, 8, 10] if not args.quick else [1, 3, 10]
    scenarios = [Scenario(f"mt-bench 8x{k}", [k] * 8, "mean", (2, 2), "mean") for k in per_category]
    scenarios += [
        Scenario("mt-bench 8x10 low noise", [10] * 8, "mean", (2, 2), "mean", sd_run=0.4),
        Scenario("mt-bench 8x10 high noise", [10] * 8, "mean", (2, 2), "mean", sd_run=2.0),
        Scenario("mt-bench-101 13x[1..3]", [1, 2, 3] * 4 + [1], "mean_of_groups", (2, 4), "min"),
        Scenario("mt-bench-101 13x[6..18]", list(range(6, 19)), "mean_of_groups", (2, 4), "min"),
    ]
    if args.quick:
        scenarios = scenarios[:3] + scenarios[-2:-1]
    print(f"level {LEVEL}, MIN_PAIRS {MIN_PAIRS}, {args.seeds} seeds per row")
    print("rates: verdict better/worse given (false positive under shift 0, power under shift)")
    print("cov: the interval holds the true difference of these questions\n")
    header = f"{'setting':28} {'shift':>5} " + " ".join(
        f"{m + ' all':>15} {m + ' grp':>15}" for m in methods
    )
    print(header)
    started = time.perf_counter()
    for sc in scenarios:
        for shift in (0.0, 0.5, 1.0):
            out = evaluate(sc, shift, args.seeds, methods)
            cells = []
            for m in methods:
                for part in ("overall", "group"):
                    t = out[m][part]
                    cells.append(
                        f"{'-':>15}"
                        if t.total == 0
                        else f"{t.rate():6.3f} cov{t.coverage():5.2f}".rjust(15)
                    )
            print(f"{sc.name:28} {shift:5.1f} " + " ".join(cells), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
