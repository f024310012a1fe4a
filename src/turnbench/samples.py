"""The shapes of a benchmark's content that the engine and the benchmarks share.

A benchmark (`turnbench.benchmarks`) builds these from its data files; the engine
(`turnbench.engine`) runs them. They live below both, so that neither imports the other's
package for them. `turnbench.benchmarks.base` re-exports them, where a plug-in benchmark
finds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from turnbench.errors import UserError
from turnbench.safetext import name_problem, plain
from turnbench.types import Message, SampleId

VerdictKind = Literal["rating", "verdict", "checklist"]

#: "golden": earlier turns carry the dataset's answers; "self": the model's own; "simulated":
#: the model's own, and each user turn is made at run time (`UserTurn`) from the conversation
#: so far (a template or a user model), then logged before the model answers it
History = Literal["golden", "self", "simulated"]
Pair = tuple[str, str]  # (user message, assistant answer) of an earlier turn


@dataclass(frozen=True)
class Turn:
    """One turn of a sample. `asked`: the model answers it (else the dataset's `golden`
    answer is context only); `judged`: its answer is judged."""

    user: str
    golden: str | None = None
    asked: bool = True
    judged: bool = True


@dataclass(frozen=True)
class Sample:
    """One question or dialogue. `source` is the benchmark's own object for it."""

    id: SampleId
    group: str | None
    turns: tuple[Turn, ...]
    source: Any = field(default=None, compare=False, repr=False)

    def asked_turns(self) -> list[int]:
        return [number for number, turn in enumerate(self.turns, 1) if turn.asked]

    def judged_turns(self) -> list[int]:
        return [number for number, turn in enumerate(self.turns, 1) if turn.asked and turn.judged]


@dataclass(frozen=True)
class JudgeTask:
    """One judge request for a judged turn (or a pairwise comparison)."""

    prompt_name: str
    messages: list[Message]
    kind: VerdictKind = "rating"
    criterion: str | None = None  # tells apart several requests of one turn
    items: int | None = None  # checklist length
    #: checklist item weights (equal without them): the judgment's score is the weighted
    #: share of items met
    weights: tuple[float, ...] | None = None


@dataclass(frozen=True)
class UserTurn:
    """A user turn made at run time (`history = "simulated"`): its text, the shards of the
    sample it revealed (1-based, for sharded instructions), and who wrote it ("template":
    the benchmark's own wording; "user-model": the simulated user)."""

    text: str
    revealed: tuple[int, ...] = ()
    origin: Literal["template", "user-model"] = "template"
    #: what the log keeps beside it (the conversation's seed and simulation index)
    meta: dict[str, Any] = field(default_factory=dict)
    #: simulator-quality problems found in it (`engine.user_quality` codes)
    problems: tuple[str, ...] = ()
    #: the user ends the conversation with this turn ("goal_met" or "abandoned"); an empty
    #: `text` then is not sent to the model
    ended: str | None = None


@dataclass(frozen=True)
class UserAsk:
    """A user turn the user model writes (`Benchmark.user_turn` with a user model): the
    request it is sent, how its reply becomes the turn (`read`: text, shards revealed,
    problems found, end marker), and the conversation's seed, sent with the request."""

    messages: list[Message]
    read: Callable[[str], UserTurn]
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnswerSet:
    """Answers of one model read from a file or a run directory: sample id -> turn -> text."""

    model: str
    path: Path
    sha256: str
    turns: dict[SampleId, dict[int, str]]

    def __post_init__(self) -> None:
        # every answer set, whatever its source (a file's name, a run's log, an import),
        # enters here: a name that would be dropped or break a table is refused once
        problem = name_problem(self.model)
        if problem is not None:
            where = plain(str(self.path), keep_newlines=False)
            raise UserError(f"{where}: the model name {self.model!r} {problem}")
