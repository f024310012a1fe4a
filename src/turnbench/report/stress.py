"""The report's stress section: each `--perturb` arm against the unperturbed run.

Drawn from the typed results' `perturbations` (every number as the run computed it): a
chart of the paired differences with their intervals, then per arm a table with the
overall and one row per category or task, and the injection arm's obeyed rate
(`stress.html`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from turnbench.report import charts
from turnbench.report.cells import Badge, Bold
from turnbench.report.markup import fmt, fmt_ci
from turnbench.report.reading import model_results
from turnbench.report.templating import render
from turnbench.results.stress import ArmResults
from turnbench.store.rundir import Entry

ARM_NOTES = {
    "planted-error": "the assistant's earlier answer replaced by a planted one (--planted-answers)",
    "distractor": "an unrelated exchange from another sample inserted before the turn",
    "injection": "the earlier user turn quotes a document with an instruction to the assistant",
}


@dataclass
class ArmView:
    kind: str
    note: str
    notes: list[str]
    group_kind: str
    rows: list[list[object]]
    obeyed: tuple[str, str] | None  # the injection arm's obeyed rate ("–": none), its detail
    per_document: list[list[object]]


@dataclass
class EntryView:
    label: str
    chart: str | None
    arms: list[ArmView]


def _group_kind(arm: ArmResults) -> str:
    extra = arm.model_extra or {}
    return next((k[3:] for k in extra if k.startswith("by_") and k != "by_injection"), "group")


def _signed(value: Any) -> object:
    return Bold(f"{value:+.2f}") if isinstance(value, int | float) else "–"


def _row(name: object, row: dict[str, Any] | ArmResults) -> list[object]:
    """A row of an arm's table: its overall (the arm) or one group (a mapping)."""
    if isinstance(row, ArmResults):
        units, base, score = row.units, row.baseline_score, row.score
        found: dict[str, Any] = row.difference.model_dump()
    else:
        units, base, score = row.get("units"), row.get("baseline_score"), row.get("score")
        found = row.get("difference") or {}
    verdict = str(found.get("verdict") or "insufficient_data")
    return [
        name,
        units,
        fmt(base),
        fmt(score),
        _signed(found.get("value")),
        fmt_ci([found.get("ci_low"), found.get("ci_high")]),
        Badge.verdict(verdict),
    ]


def _obeyed(arm: ArmResults) -> tuple[str, str] | None:
    rate = arm.obeyed_rate
    if rate is None:
        return None
    extra = rate.model_extra or {}
    if not isinstance(rate.value, int | float):
        return "–", ""
    return f"{rate.value:.0%}", (
        f"({extra.get('obeyed')}/{extra.get('checked')}), 95% interval "
        f"[{rate.ci_low:.0%}, {rate.ci_high:.0%}] ({extra.get('method')})"
    )


def _arm(kind: str, arm: ArmResults) -> ArmView:
    group_kind = _group_kind(arm)
    extra = arm.model_extra or {}
    rows = [_row(Bold("overall"), arm)]
    rows += [_row(group, row) for group, row in (extra.get(f"by_{group_kind}") or {}).items()]
    notes = [f"{arm.items} judged turns paired over {arm.units} samples"]
    left_out = "; ".join(f"{n} turn(s): {why}" for why, n in arm.not_in_arm.items())
    if left_out:
        notes.append(f"not in the arm: {left_out}")
    notes += [f"{arm.pending} pending"] if arm.pending else []
    notes += [f"{arm.failed} failed"] if arm.failed else []
    per_document: list[list[object]] = [
        [name, row.get("instruction"), f"{row.get('obeyed')}/{row.get('checked')}",
         fmt(row.get("rate"))]
        for name, row in (extra.get("by_injection") or {}).items()
    ]  # fmt: skip
    return ArmView(
        kind, ARM_NOTES.get(kind, ""), notes, group_kind, rows, _obeyed(arm), per_document
    )


def _entry(entry: Entry, arms: dict[str, ArmResults]) -> EntryView:
    points = [
        (
            kind,
            arm.difference.value,
            arm.difference.ci_low,
            arm.difference.ci_high,
            str((arm.difference.model_extra or {}).get("verdict") or "insufficient_data"),
        )
        for kind, arm in arms.items()
        if isinstance(arm.difference.value, int | float)
    ]
    drawn = charts.deltas(points, f"{entry.label}: perturbed minus unperturbed")
    return EntryView(entry.label, drawn if points else None, [_arm(k, a) for k, a in arms.items()])


def stress_section(entries: list[Entry]) -> Markup:
    """The section's body (empty when no run has stress arms)."""
    views = []
    for entry in entries:
        if entry.typed is None:
            continue
        arms = getattr(model_results(entry), "perturbations", None)
        if arms:
            views.append(_entry(entry, arms))
    return render("stress.html", entries=views)
