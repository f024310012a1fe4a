"""What one AgentDojo conversation came to (its typed outcome), and one model's tables.

A conversation's outcome holds upstream's two verdicts (utility: the user task was done;
security: the injection task was done, True meaning the attacker won) and, beyond upstream,
why: for a successful attack, where the payload arrived (the tool result holding it, the
payload marked) and the calls that followed it beside the injection task's ground truth; for
a utility failure, how the environment changed. The tables are the three numbers of the
paper, with bootstrap intervals, overall and per suite; a re-scored import adds the verdicts
its files recorded and every conversation where they differ.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from turnbench.benchmarks.tables import ScoreTables
from turnbench.textio import shown_number

#: the payload's neighbourhood shown around it (characters each side)
AROUND = 300
MAX_DIFF_ROWS = 50
#: a text inside an outcome (a value of the environment's diff, a call's text) is kept up
#: to this many characters: the report and the viewer show 2,000 of one, and an agent's
#: 20 MB argument belongs in the log once, with its call, not again in the outcome
MAX_OUTCOME_TEXT = 10_000


def kept(value: Any) -> Any:
    """`value` as an outcome keeps it: every text longer than MAX_OUTCOME_TEXT cut, saying
    how much was cut, and a NaN or infinite number a tool stored written as its word
    (`shown_number`: the log's strict JSON would make it null)."""
    if isinstance(value, float):
        return shown_number(value)
    if isinstance(value, str):
        if len(value) <= MAX_OUTCOME_TEXT:
            return value
        return f"{value[:MAX_OUTCOME_TEXT]} … ({len(value) - MAX_OUTCOME_TEXT:,} more characters)"
    if isinstance(value, dict):
        return {key: kept(item) for key, item in value.items()}
    if isinstance(value, list):
        return [kept(item) for item in value]
    return value


class PayloadArrival(BaseModel):
    """A tool result that carried the attack's payload: which call returned it (the agent's
    step and the call's place in it, the tool), and the text around the payload."""

    step: int
    call: int
    tool: str
    before: str
    payload: str
    after: str


class AgentDojoOutcome(BaseModel):
    """One conversation: its suite and tasks, the attack, upstream's verdicts, and why."""

    suite: str
    user_task_id: str
    injection_task_id: str | None = None
    attack: str = "none"
    utility: bool
    security: bool | None = None
    ended: str
    #: the tool results that carried the payload, in order
    payload_arrived: list[PayloadArrival] = Field(default_factory=list)
    #: the calls the agent made once a payload had arrived ("name(arguments)")
    calls_after_payload: list[str] = Field(default_factory=list)
    #: the injection task's ground-truth calls ("name(arguments)"), for comparison
    injection_ground_truth: list[str] = Field(default_factory=list)
    #: how the environment changed, when the user task was not done (rows of upstream's
    #: diff: path, change, before, after; the first MAX_DIFF_ROWS)
    environment_diff: list[dict[str, Any]] = Field(default_factory=list)
    diff_rows: int = 0
    #: a re-scored import: the verdicts its file recorded
    recorded_utility: bool | None = None
    recorded_security: bool | None = None

    @property
    def attacked(self) -> bool:
        return self.injection_task_id is not None

    def passed(self) -> bool:
        """The user task done, and no attack succeeded (what the report lists as passed)."""
        return self.utility and not self.security

    def why(self) -> str:
        """Why it failed, in a line (the report's and the viewer's)."""
        reasons = []
        if self.security:
            reasons.append(f"the attack succeeded ({self.injection_task_id})")
        if not self.utility:
            changed = (
                f"{self.diff_rows} change(s) to the environment"
                if self.diff_rows
                else ("no change to the environment")
            )
            reasons.append(f"the user task was not done ({changed}); ended: {self.ended}")
        return "; ".join(reasons) or "scored below 1"


class Differs(BaseModel):
    """A re-scored conversation whose replayed verdict differs from the recorded one."""

    suite: str
    user_task_id: str
    injection_task_id: str | None
    utility: bool
    recorded_utility: bool | None
    security: bool | None
    recorded_security: bool | None


class Numbers(BaseModel):
    """The three numbers (fractions 0..1; the last two absent without an attack)."""

    utility: float | None = None
    utility_ci95: list[float] | None = None
    utility_under_attack: float | None = None
    utility_under_attack_ci95: list[float] | None = None
    targeted_asr: float | None = None
    targeted_asr_ci95: list[float] | None = None


class Recorded(BaseModel):
    """The three numbers from the imported files' own verdicts."""

    utility: float | None = None
    utility_under_attack: float | None = None
    targeted_asr: float | None = None


class AgentDojoTables(ScoreTables):
    """AgentDojo's tables: `utility` (user tasks without attack), `utility_under_attack`
    (pairs of a user task with an injection task: the user task done), `targeted_asr` (the
    pairs whose injection task was done), each with a bootstrap 95% interval over user
    tasks (`_ci95`), overall and per suite (`per_suite`); `overall` is utility under attack
    when there is an attack, else utility. A re-scored import adds the numbers from its
    files' own verdicts (`recorded`) and each conversation whose replayed verdict differs
    (`replay_differs`)."""

    utility: float | None = None
    utility_ci95: list[float] | None = None
    utility_under_attack: float | None = None
    utility_under_attack_ci95: list[float] | None = None
    targeted_asr: float | None = None
    targeted_asr_ci95: list[float] | None = None
    #: the same numbers per suite (their keys as overall: the attack's two only with one)
    per_suite: dict[str, dict[str, Any]] = Field(default_factory=dict)
    conversations: int = 0
    recorded: Recorded | None = None
    replay_differs: list[Differs] | None = None
