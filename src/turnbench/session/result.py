"""What one evaluation produced, and the exit code a command gives for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from turnbench.engine.execute import RunOutcome
from turnbench.errors import FatalBackendError

EXIT_OK, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 130


def judge_warning(judges: list[str]) -> str | None:
    local = [spec for spec in judges if spec.startswith("local/")]
    if not local:
        return None
    return (
        f"The judge is {', '.join(local)}, a small embedded model: this run is a smoke test of "
        "the pipeline, not a measurement. Its ratings mean little: a grammar makes it give one, "
        "not judge well. For real scores use a "
        "strong judge, for example:\n  turnbench run --benchmark mt-bench --model "
        "openai/YOUR-MODEL --model-base-url URL --judge openai/gpt-4o --out runs/mine"
    )


@dataclass
class RunResult:
    """What one evaluation produced: results.json's content and how the invocation ended."""

    out: Path
    results: dict[str, Any]
    status: Literal["finished", "interrupted", "budget", "fatal"]
    message: str | None
    exit_code: int
    warnings: list[str] = field(default_factory=list)
    # False when running the same command again cannot finish the pending work (an import:
    # the files hold what they hold); `pending_hint` then says why it is pending
    resumable: bool = True
    pending_hint: str | None = None
    #: the results as their typed model, as they were built (`results` is what results.json
    #: holds of it); None when they were read back from a file
    model: Any = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        return bool(self.results.get("complete"))

    @property
    def overall(self) -> float | None:
        return self.results.get("overall")

    def typed(self) -> Any:
        """The results as their pydantic model (SingleRunResults, JudgeOnlyResults or
        PairwiseResults): the one they were built as, else read back from `results`."""
        if self.model is not None:
            return self.model
        from turnbench.results.shapes import RESULTS_ADAPTER

        return RESULTS_ADAPTER.validate_python(self.results)


def exit_code(results: dict[str, Any], outcome: RunOutcome) -> int:
    if outcome.status == "interrupted":
        return EXIT_INTERRUPTED
    if outcome.status == "fatal":
        fatal = [e for e in outcome.errors if isinstance(e, FatalBackendError)]
        return fatal[0].exit_code if fatal else FatalBackendError.exit_code
    return EXIT_OK if results["complete"] else EXIT_INCOMPLETE
