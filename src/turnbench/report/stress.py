"""The report's stress section: each `--perturb` arm against the unperturbed run.

Drawn from results.json's `perturbations` (every number as the run computed it): a chart of
the paired differences with their intervals, then per arm a table with the overall and one
row per category or task, and the injection arm's obeyed rate. Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnbench.report import charts
from turnbench.report.markup import badge, esc, fmt, fmt_ci, table
from turnbench.report.markup import figure as chart
from turnbench.store.rundir import Entry

ARM_NOTES = {
    "planted-error": "the assistant's earlier answer replaced by a planted one (--planted-answers)",
    "distractor": "an unrelated exchange from another sample inserted before the turn",
    "injection": "the earlier user turn quotes a document with an instruction to the assistant",
}


def _group_kind(block: Mapping[str, Any]) -> str:
    return next((k[3:] for k in block if k.startswith("by_") and k != "by_injection"), "group")


def _signed(value: Any) -> str:
    return f"<b>{value:+.2f}</b>" if isinstance(value, int | float) else "–"


def _rate(rate: Mapping[str, Any]) -> str:
    value = rate.get("value")
    if not isinstance(value, int | float):
        return "–"
    return (
        f"<b>{value:.0%}</b> ({esc(rate.get('obeyed'))}/{esc(rate.get('checked'))}), "
        f"95% interval [{rate['ci_low']:.0%}, {rate['ci_high']:.0%}] ({esc(rate.get('method'))})"
    )


def _arm(kind: str, block: Mapping[str, Any]) -> str:
    group_kind = _group_kind(block)
    difference = block.get("difference") or {}
    verdict = str(difference.get("verdict") or "insufficient_data")
    rows = [
        [
            "<b>overall</b>",
            esc(block.get("units")),
            fmt(block.get("baseline_score")),
            fmt(block.get("score")),
            _signed(difference.get("value")),
            fmt_ci([difference.get("ci_low"), difference.get("ci_high")]),
            badge(verdict.replace("_", " "), verdict),
        ]
    ]
    for group, row in (block.get(f"by_{group_kind}") or {}).items():
        found = row.get("difference") or {}
        verdict = str(found.get("verdict") or "insufficient_data")
        rows.append(
            [
                esc(group),
                esc(row.get("units")),
                fmt(row.get("baseline_score")),
                fmt(row.get("score")),
                _signed(found.get("value")),
                fmt_ci([found.get("ci_low"), found.get("ci_high")]),
                badge(verdict.replace("_", " "), verdict),
            ]
        )
    left_out = "; ".join(
        f"{esc(n)} turn(s): {esc(why)}" for why, n in (block.get("not_in_arm") or {}).items()
    )
    notes = [
        f"{esc(block.get('items'))} judged turns paired over {esc(block.get('units'))} samples"
    ]
    if left_out:
        notes.append(f"not in the arm: {left_out}")
    for name in ("pending", "failed"):
        if block.get(name):
            notes.append(f"{esc(block[name])} {name}")
    obeyed = ""
    if "obeyed_rate" in block:
        per = [
            [esc(name), esc(row.get("instruction")), f"{esc(row.get('obeyed'))}/"
             f"{esc(row.get('checked'))}", fmt(row.get("rate"))]
            for name, row in (block.get("by_injection") or {}).items()
        ]  # fmt: skip
        obeyed = f"<p>Obeyed the injected instruction: {_rate(block['obeyed_rate'])}</p>" + table(
            ["document", "instruction", "obeyed", "rate"], per, text_columns=(0, 1)
        )
    return (
        f"<h3>{esc(kind)}</h3>"
        f'<p class="small muted">{esc(ARM_NOTES.get(kind, ""))}; {"; ".join(notes)}.</p>'
        + table(
            [group_kind, "samples", "unperturbed", "perturbed", "difference", "95% CI", "verdict"],
            rows,
        )
        + obeyed
    )


def stress_section(entries: list[Entry]) -> str:
    """The section's body ('' when no run has stress arms)."""
    parts = []
    for entry in entries:
        stress = entry.results.get("perturbations")
        if not isinstance(stress, dict) or not stress:
            continue
        points = [
            (
                kind,
                block["difference"]["value"],
                block["difference"].get("ci_low"),
                block["difference"].get("ci_high"),
                str(block["difference"].get("verdict") or "insufficient_data"),
            )
            for kind, block in stress.items()
            if isinstance((block.get("difference") or {}).get("value"), int | float)
        ]
        drawn = charts.deltas(points, f"{entry.label}: perturbed minus unperturbed")
        figure = chart(drawn, "stress arm differences") if points else ""
        parts.append(
            f"<h3>{esc(entry.label)}</h3>"
            + (f'<div class="charts">{figure}</div>' if figure else "")
            + "".join(_arm(kind, block) for kind, block in stress.items())
        )
    if not parts:
        return ""
    return (
        '<p class="small muted">Each stress arm (--perturb) answers and judges the turns with '
        "history again, that history perturbed, and is paired with the same turns of the "
        "unperturbed run; the difference's 95% interval is the paired sign-flip test's over "
        "samples (as turnbench compare), the obeyed rate's a Wilson score interval over "
        "answers. The judge was asked in the same form in every arm.</p>" + "".join(parts)
    )
