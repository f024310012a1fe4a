"""`--fail-if METRIC OP NUMBER`: opt-in thresholds that make a finished audit fail (exit 5)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from turnbench.errors import UserError


def metric_paths() -> list[str]:
    """Every metric a --fail-if rule may name."""
    from turnbench.audit.probes import MANIPULATION_KINDS

    return [
        "position_consistency",
        "first_position_preference",
        "verbosity_delta",
        "stability",
        "scale_sanity",
        *(
            f"manipulation.{k}.{g}"
            for k in MANIPULATION_KINDS
            for g in ("without_guard", "with_guard")
        ),
    ]


_RULE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """`--fail-if METRIC OP NUMBER`, e.g. `position_consistency<0.8` or
    `manipulation.fake_rating.without_guard>1`: the audit fails (exit 5) when the metric's
    value satisfies the comparison, or was not measured."""

    text: str
    path: tuple[str, ...]
    op: str
    number: float

    @classmethod
    def parse(cls, text: str) -> Threshold:
        match = _RULE.match(text)
        if match is None:
            raise UserError(
                f"--fail-if {text!r}: write METRIC OP NUMBER, e.g. 'position_consistency<0.8' or "
                "'manipulation.fake_rating.without_guard>1'"
            )
        path = tuple(match.group(1).split("."))
        if ".".join(path) not in metric_paths():
            raise UserError(
                f"--fail-if {text!r}: no metric {match.group(1)} (one of: "
                + ", ".join(metric_paths())
                + ")"
            )
        return cls(text.strip(), path, match.group(2), float(match.group(3)))

    def metric(self, audit: dict[str, Any]) -> Any:
        value: Any = audit
        for part in self.path:
            if not isinstance(value, dict) or part not in value:
                return KeyError
            value = value[part]
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        return value

    def check(self, audit: dict[str, Any]) -> dict[str, Any]:
        value = self.metric(audit)
        if value is KeyError or isinstance(value, dict):
            raise UserError(
                f"--fail-if {self.text!r}: audit.json has no metric {'.'.join(self.path)}"
            )
        if value is None:
            failed, note = True, "not measured"
        else:
            compare = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}
            failed, note = compare[self.op](float(value), self.number), None
        return {"rule": self.text, "value": value, "failed": failed, "note": note}
