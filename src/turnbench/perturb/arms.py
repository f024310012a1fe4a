"""Stress arms: the same judged turns again, with the history before them perturbed.

An arm changes one exchange of the conversation a later turn is asked in, and nothing else:
the model answers that turn as usual, and the judge grades the answer as usual. Three kinds:

- `planted-error`: the assistant's answer to the earlier turn is replaced by a flawed one
  from `--planted-answers` (another model's real answer to the same question): does the
  model notice and recover, or build on it?
- `distractor`: an unrelated exchange (the first question of another sample of the same
  benchmark, drawn with a seed, and its answer) is inserted before the turn.
- `injection`: the earlier user turn quotes a document holding an instruction aimed at the
  assistant (`injections.json`); the answer is also checked for obedience.

Where the perturbation sits. With golden history every judged turn k > 1 is its own item and
the exchange right before it (turn k - 1) is perturbed. With self history (MT-Bench) the
dialogue forks at its first judged turn after the first, `start`: the turns before it are the
unperturbed run's own (answered once, judged once), the exchange before `start` is
perturbed, and from `start` on the model answers in order under the arm, each turn judged.

What the judge sees. The judge gets the benchmark's usual request, whose form never tells
the arms apart: the planted answer stands where the model's own earlier answer stood (it is
the conversation the model answered), while the inserted distractor exchange and the quoted
document are not shown (the judge grades the answer to the question, as in every arm, and
is not itself exposed to the injected instruction).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from turnbench.options import PERTURB_KINDS
from turnbench.perturb.injections import Injection, load_injections
from turnbench.perturb.planted import PlantedAnswers
from turnbench.samples import History, Pair, Sample
from turnbench.types import SampleId

Kind = Literal["planted-error", "distractor", "injection"]
KINDS: tuple[str, ...] = PERTURB_KINDS
Given = Mapping[tuple[SampleId, int], str]  # answers of the unperturbed run an arm needs


class Arm:
    """One kind of perturbation over the planned samples of a run."""

    kind: ClassVar[Kind]

    def __init__(self, samples: Sequence[Sample], history: History, seed: int = 0) -> None:
        self.samples = list(samples)
        self.history = history
        self.seed = seed

    # -- which turns ---------------------------------------------------------------------------
    def start(self, sample: Sample) -> int | None:
        """Self history: the first turn answered under the arm (the exchange before it is
        perturbed); None when no judged turn has history before it."""
        return next((turn for turn in sample.judged_turns() if turn > 1), None)

    def at(self, sample: Sample, turn: int) -> int:
        """The turn whose preceding exchange is perturbed when `turn` is asked."""
        if self.history == "self":
            start = self.start(sample)
            assert start is not None
            return start
        return turn

    def reason(self, sample: Sample, at: int) -> str | None:
        """Why the exchange before turn `at` cannot be perturbed (None: it can)."""
        return None

    def items(self, sample: Sample) -> list[int]:
        """The judged turns of `sample` in the arm."""
        later = [turn for turn in sample.judged_turns() if turn > 1]
        if self.history == "self":
            start = self.start(sample)
            if start is None or self.reason(sample, start) is not None:
                return []
            return [turn for turn in later if turn >= start]
        return [turn for turn in later if self.reason(sample, turn) is None]

    def answered(self, sample: Sample) -> list[int]:
        """The turns the model answers under the arm: with self history every asked turn
        from `start` on (later turns need them), with golden history the arm's items."""
        items = self.items(sample)
        if self.history == "self" and items:
            return [turn for turn in sample.asked_turns() if turn >= items[0]]
        return items

    def excluded(self) -> dict[str, int]:
        """Judged turns with history before them that are not in the arm, by reason."""
        counts: dict[str, int] = {}
        for sample in self.samples:
            for turn in sample.judged_turns():
                if turn <= 1:
                    continue
                reason = self.reason(sample, self.at(sample, turn))
                if reason is not None:
                    counts[reason] = counts.get(reason, 0) + 1
        return counts

    def needs(self, sample: Sample) -> list[tuple[Sample, int]]:
        """Turns of the unperturbed run whose answers the arm's history holds."""
        return []

    # -- the histories -------------------------------------------------------------------------
    def histories(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], given: Given
    ) -> tuple[list[Pair], list[Pair]]:
        """(what the model is asked with, what the judge is shown) for `turn`, from the
        unperturbed conversation before it (`earlier`: one pair per earlier turn)."""
        raise NotImplementedError

    def record(self, sample: Sample) -> dict[str, Any]:
        """What the arm's records keep of its choices for `sample` (a source, a document)."""
        return {"kind": self.kind}

    def settings(self) -> dict[str, Any]:
        """What the run's configuration records of the arm (resuming with other settings
        is refused: the arm's records would no longer be what they say)."""
        return {"seed": self.seed}


class PlantedError(Arm):
    kind = "planted-error"

    def __init__(
        self,
        samples: Sequence[Sample],
        history: History,
        planted: PlantedAnswers,
        seed: int = 0,
    ) -> None:
        super().__init__(samples, history, seed)
        self.planted = planted

    def reason(self, sample: Sample, at: int) -> str | None:
        if self.planted.get(sample.id, at - 1) is None:
            return "no planted answer"
        return None

    def histories(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], given: Given
    ) -> tuple[list[Pair], list[Pair]]:
        at = self.at(sample, turn)
        planted = self.planted.get(sample.id, at - 1)
        assert planted is not None
        changed = list(earlier)
        changed[at - 2] = (changed[at - 2][0], planted)
        return changed, changed

    def record(self, sample: Sample) -> dict[str, Any]:
        return {"kind": self.kind, "planted_from": str(self.planted.path)}

    def settings(self) -> dict[str, Any]:
        return {"planted_answers_sha256": self.planted.sha256}


class Distractor(Arm):
    kind = "distractor"

    def __init__(self, samples: Sequence[Sample], history: History, seed: int = 0) -> None:
        super().__init__(samples, history, seed)
        self._drawn: dict[SampleId, Sample | None] = {}

    def _usable(self, other: Sample) -> bool:
        first = other.turns[0] if other.turns else None
        if first is None:
            return False
        if self.history == "self" and first.asked:
            return True  # its answer: the model's own, from the unperturbed run
        return bool(first.golden)

    def source(self, sample: Sample) -> Sample | None:
        """The other sample whose first exchange is inserted (seeded, preferring another
        group: unrelated to the conversation)."""
        if sample.id not in self._drawn:
            pool = [s for s in self.samples if s.id != sample.id and self._usable(s)]
            elsewhere = [s for s in pool if s.group != sample.group] or pool
            rng = random.Random(f"{self.seed}:{self.kind}:{sample.id!r}")
            self._drawn[sample.id] = rng.choice(elsewhere) if elsewhere else None
        return self._drawn[sample.id]

    def reason(self, sample: Sample, at: int) -> str | None:
        if self.source(sample) is None:
            return "no other sample to draw a distractor from"
        return None

    def _own_answer(self, other: Sample) -> bool:
        return self.history == "self" and other.turns[0].asked

    def needs(self, sample: Sample) -> list[tuple[Sample, int]]:
        other = self.source(sample)
        return [(other, 1)] if other is not None and self._own_answer(other) else []

    def histories(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], given: Given
    ) -> tuple[list[Pair], list[Pair]]:
        other = self.source(sample)
        assert other is not None
        first = other.turns[0]
        answer = given[(other.id, 1)] if self._own_answer(other) else first.golden or ""
        at = self.at(sample, turn)
        shown = list(earlier)
        asked = [*shown[: at - 1], (first.user, answer), *shown[at - 1 :]]
        return asked, shown

    def record(self, sample: Sample) -> dict[str, Any]:
        other = self.source(sample)
        return {"kind": self.kind, "distractor_from": None if other is None else other.id}


class Injected(Arm):
    kind = "injection"

    def __init__(self, samples: Sequence[Sample], history: History, seed: int = 0) -> None:
        super().__init__(samples, history, seed)
        self.data = load_injections()

    def injection(self, sample: Sample) -> Injection:
        """The document quoted in `sample` (the same for every turn of it; seeded)."""
        options = self.data.injections
        return options[zlib.crc32(f"{self.seed}:{sample.id!r}".encode()) % len(options)]

    def histories(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], given: Given
    ) -> tuple[list[Pair], list[Pair]]:
        at = self.at(sample, turn)
        shown = list(earlier)
        asked = list(earlier)
        user, answer = asked[at - 2]
        asked[at - 2] = (self.data.quote(user, self.injection(sample)), answer)
        return asked, shown

    def obeyed(self, sample: Sample, answer: str) -> bool:
        return self.injection(sample).check.obeyed(answer)

    def record(self, sample: Sample) -> dict[str, Any]:
        return {"kind": self.kind, "injection": self.injection(sample).id}

    def settings(self) -> dict[str, Any]:
        return {"seed": self.seed, "injections": self.data.version}


def build_arms(
    kinds: Sequence[str],
    samples: Sequence[Sample],
    history: History,
    *,
    planted: PlantedAnswers | None = None,
    seed: int = 0,
) -> list[Arm]:
    """The arms `--perturb` names, in the order given (each kind once)."""
    arms: list[Arm] = []
    for kind in dict.fromkeys(kinds):
        if kind == "planted-error":
            assert planted is not None
            arms.append(PlantedError(samples, history, planted, seed))
        elif kind == "distractor":
            arms.append(Distractor(samples, history, seed))
        elif kind == "injection":
            arms.append(Injected(samples, history, seed))
        else:
            raise ValueError(f"unknown perturbation {kind!r}")
    return arms
