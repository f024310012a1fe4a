"""AgentDojo's options (`-B key=value`; a list is written comma-separated, `-B
suites=banking,slack`): which suites, version and tasks, the attack and the defense, the
names the attack texts use, and the step limit. Unset: upstream's defaults."""

from __future__ import annotations

from pydantic import field_validator

from turnbench.benchmarks.options import BenchmarkOptions, option

#: upstream's `ToolsExecutionLoop.max_iters`: rounds of tool calls after the first reply
DEFAULT_MAX_STEPS = 15
MAX_STEPS_LIMIT = 500


class AgentDojoOptions(BenchmarkOptions):
    suites: str | None = option(
        help="The suites to run, comma-separated (default all four: workspace, travel, "
        "banking, slack)."
    )
    version: str | None = option(
        help="The benchmark version (default the package's: v1.2.2 in agentdojo 0.1.35; v1, "
        "v1.1, v1.1.1, v1.1.2, v1.2, v1.2.1); written into the run's provenance."
    )
    attack: str | None = option(
        help="`none`, or one of upstream's attacks (default important_instructions): a run "
        "with an attack also runs the user tasks without it, so it gives utility, utility "
        "under attack and the targeted attack success rate."
    )
    defense: str | None = option(
        help="`none` (default), repeat_user_prompt, spotlighting_with_delimiting, tool_filter, "
        "or transformers_pi_detector where its model is installed."
    )
    user_tasks: str | None = option(help="A subset of user tasks, comma-separated ids.")
    injection_tasks: str | None = option(
        help="A subset of injection tasks, comma-separated ids (all by default)."
    )
    model_name: str | None = option(
        help="The model's name the attack texts use (default: derived from --model as "
        "upstream derives it from a pipeline's name: gpt-4o-2024-05-13 gives GPT-4)."
    )
    user_name: str | None = option(
        help="The user's name the attack texts use (default upstream's: Emma Johnson)."
    )
    max_steps: int | None = option(
        help=f"Rounds of tool calls after the model's first reply (default {DEFAULT_MAX_STEPS}, "
        "as upstream's pipeline)."
    )

    @field_validator("max_steps")
    @classmethod
    def _steps(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_STEPS_LIMIT:
            raise ValueError(f"must be between 1 and {MAX_STEPS_LIMIT}")
        return value


def listed(value: str | None) -> list[str] | None:
    """A comma-separated option as its items (None: not given)."""
    if value is None:
        return None
    items = [item.strip() for item in value.split(",") if item.strip()]
    return items or None
