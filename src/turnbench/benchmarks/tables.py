"""What `Benchmark.aggregate` returns: one model's score tables, typed.

`ScoreTables` holds what every benchmark's tables have (`overall` and its interval) and the
counts a benchmark adds to a model's `counts`; each benchmark's own model subclasses it and
is its `results_model` (the results schema documents it). The results and the judge-trust
blocks read the tables' attributes, and `results_fields()` gives a model's results.json
entries, in the key order results.json has always had, so a rebuilt results.json of an
old run matches the one it replaces.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema


class ScoreTables(BaseModel):
    """One model's score tables (unrounded; null where nothing was scored)."""

    overall: float | None
    overall_ci95: list[float] | None
    #: entries the benchmark adds to the model's `counts` (dialogues scored, checks run...):
    #: results.json holds them there, not among the tables
    counts: SkipJsonSchema[dict[str, int]] = Field(default_factory=dict, exclude=True)

    #: fields results.json puts after all the others, in this order (where the benchmark's
    #: results have always had them)
    trailing: ClassVar[tuple[str, ...]] = ()

    def results_fields(self) -> dict[str, Any]:
        """The entries of a model's results.json. A field with a default that the benchmark
        did not set is left out (a table it has no data for: absent, where null would
        say "computed, nothing scored")."""
        fields = self.model_dump(include=self.model_fields_set)
        last = {name: fields.pop(name) for name in self.trailing if name in fields}
        return fields | last


class GroupTables(ScoreTables):
    """The default tables (`Benchmark.aggregate`): the mean score of each group of samples,
    under `by_<group_kind>` (`by_topic`, say), a key each benchmark names for itself."""

    group_kind: str = Field(exclude=True)
    by_group: dict[str | None, float | None] = Field(exclude=True)

    def results_fields(self) -> dict[str, Any]:
        return super().results_fields() | {f"by_{self.group_kind}": self.by_group}
