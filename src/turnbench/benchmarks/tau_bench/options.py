"""tau-bench's options (`-B key=value`): the task split, the step limit, and `--simulations K`
trials per task (pass^k is reported for k = 1..K)."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from turnbench.benchmarks.options import SimulationsOption, option

Split = Literal["test", "train", "dev"]
#: upstream's `max_num_steps`: agent steps (completions) before a conversation is cut off
DEFAULT_MAX_STEPS = 30
MAX_STEPS_LIMIT = 500


class TauOptions(SimulationsOption):
    split: Split | None = option(
        help="The task split: test (default), or train and dev where the domain has them "
        "(retail: test 115, train 500, dev 20 tasks; airline: test 50)."
    )
    max_steps: int | None = option(
        help=f"Agent steps before a conversation is cut off (default {DEFAULT_MAX_STEPS}, as "
        "upstream); a conversation cut off scores 0."
    )

    @field_validator("max_steps")
    @classmethod
    def _steps(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_STEPS_LIMIT:
            raise ValueError(f"must be between 1 and {MAX_STEPS_LIMIT}")
        return value
