"""tau-bench's reward and pass^k, and why a conversation failed.

The reward is upstream's (`tau_bench/envs/base.py`, `calculate_reward`): 1.0 when the final
database equals the one the task's gold actions produce (the canonical hash, compared as
the canonical texts of the records either state changed: the same test) and every
required output occurs in some message of the agent to the user, compared as
`output.lower() in message.lower().replace(",", "")`; else 0.0. A conversation that did not
end by the user's stop or a terminating tool scores 0.0 whatever its state (upstream computes
a reward only then). Beyond upstream, a failure says why: the fields where the database
differs from the gold state, and the outputs never told.

pass^k (Yao et al. 2024): the chance that k independent trials of a task all succeed,
estimated from n >= k trials with c successes as C(c, k) / C(n, k), averaged over tasks; its
95% interval is a bootstrap over tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb
from typing import Any

from pydantic import BaseModel

from turnbench.benchmarks.tau_bench.database import DatabaseState, FieldDiff
from turnbench.stats.scoring import bootstrap_mean_ci
from turnbench.textio import shown_number

#: how a conversation may end and still be scored (the driver's own words for them)
SCORED_ENDINGS = ("user_stop", "terminating_tool")


class RewardResult(BaseModel):
    """A finished conversation's reward, and why it is not 1: the database did not match
    the gold state (`diff`: where, found against expected), outputs were never told to the
    user, or the conversation did not end as the protocol requires (`ended`)."""

    reward: float
    db_match: bool
    missing_outputs: list[str]
    diff: list[FieldDiff]
    ended: str
    #: a re-scored trajectory's reward as its file recorded it (`import --format tau-bench`)
    recorded_reward: float | None = None

    def why(self) -> str:
        """Why the conversation failed, in a line (the report's and the viewer's)."""
        reasons = []
        if self.ended not in SCORED_ENDINGS:
            reasons.append(f"ended: {self.ended}")
        if self.diff:
            tables = sorted({row.table for row in self.diff})
            shown = "50+" if len(self.diff) >= 50 else str(len(self.diff))
            reasons.append(
                f"database differs from the gold state ({shown} field(s) in {', '.join(tables)})"
            )
        if self.missing_outputs:
            reasons.append("never told: " + ", ".join(self.missing_outputs))
        return "; ".join(reasons) or "scored below 1"


def told(output: str, said_to_user: Sequence[str]) -> bool:
    """Whether the agent told the user `output` (upstream's comparison)."""
    wanted = output.lower()
    return any(wanted in message.lower().replace(",", "") for message in said_to_user)


def reward(
    final: DatabaseState,
    gold: DatabaseState,
    outputs: Sequence[str],
    said_to_user: Sequence[str],
    ended: str,
) -> RewardResult:
    db_match = final.same_database(gold)
    missing = [output for output in outputs if not told(output, said_to_user)]
    scored = ended in SCORED_ENDINGS
    return RewardResult(
        reward=1.0 if scored and db_match and not missing else 0.0,
        db_match=db_match,
        missing_outputs=missing,
        diff=[] if db_match else [_shown_diff(row) for row in final.diff(gold)],
        ended=ended,
    )


def _shown_diff(row: FieldDiff) -> FieldDiff:
    try:
        expected, found = shown_number(row.expected), shown_number(row.found)
    except RecursionError:  # (a value too deep to walk is shown as stored)
        return row
    return row.model_copy(update={"expected": expected, "found": found})


def pass_hat_k(successes: Mapping[Any, int], trials: int) -> dict[int, float]:
    """pass^k for k = 1..trials: the mean over tasks of C(c, k) / C(n, k)."""
    if not successes or trials < 1:
        return {}
    return {
        k: sum(comb(c, k) / comb(trials, k) for c in successes.values()) / len(successes)
        for k in range(1, trials + 1)
    }


def pass_hat_k_intervals(
    successes: Mapping[Any, int], trials: int, *, seed: int = 0
) -> dict[int, tuple[float, float] | None]:
    """95% bootstrap intervals of pass^k, resampling tasks (None with fewer than two)."""
    counts = list(successes.values())
    return {
        k: bootstrap_mean_ci([[comb(c, k) / comb(trials, k)] for c in counts], seed=seed)
        for k in range(1, trials + 1)
    }
