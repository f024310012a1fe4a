"""audit.json: built from an audit directory's log (nothing else), written atomically, read
back for reports."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnbench import __version__
from turnbench.audit.setup import AUDIT_KIND
from turnbench.audit.stats import audit_numbers
from turnbench.errors import UserError
from turnbench.journal.runlog import RunLog
from turnbench.store.runfiles import AUDIT_NAME as AUDIT_NAME

if TYPE_CHECKING:
    from turnbench.audit.setup import PreparedAudit

AUDIT_SCHEMA_VERSION = 1


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def build_audit(prepared: PreparedAudit, log: RunLog, status: str, ended: float) -> dict[str, Any]:
    """audit.json's content, from the log (nothing else)."""
    from turnbench.results.build import LogView, timing

    view = LogView(log.index, log.path)
    judge = prepared.settings.id
    numbers = audit_numbers(
        prepared.plan,
        view.done,
        judge,
        resamples=prepared.options.resamples,
        seed=prepared.options.seed,
    )
    planned = prepared.plan.keys(judge)
    finished = [view.done[k] for k in planned if k in view.done]
    scored = sum(getattr(r, "status", "") == "scored" for r in finished)
    when = timing(log.index, ended)
    suite = prepared.plan.suite
    audit: dict[str, Any] = {
        "kind": AUDIT_KIND,
        "schema_version": AUDIT_SCHEMA_VERSION,
        "turnbench_version": __version__,
        "judge": judge,
        "benchmark": prepared.config.benchmark,
        "probes": {
            "suite": suite.label,
            "questions": [q.id for q in prepared.plan.questions],
            "stability_repeats": prepared.plan.repeats,
            "pairwise": prepared.plan.pairwise,
        },
        "complete": len(finished) == len(planned),
        "stopped": None if status == "finished" else status,
        **{k: numbers[k] for k in ("position_consistency", "first_position_preference")},
        "verbosity_delta": numbers["verbosity_delta"],
        "stability": numbers["stability"],
        "manipulation": numbers["manipulation"],
        "scale_sanity": numbers["scale_sanity"],
        "sizes": numbers["sizes"],
        "counts": {
            "expected": len(planned),
            "judged": scored,
            "failed": len(finished) - scored,
            "pending": len(planned) - len(finished),
            "reasks": sum(getattr(r, "reasks", 0) for r in finished),
        },
        "judge_settings": prepared.settings.model_dump(mode="json"),
        "prompt_versions": prepared.config.prompt_versions,
        "endpoints": prepared.config.endpoints,
        "judge_reported": sorted(
            {r.reported_model for r in finished if getattr(r, "reported_model", None)}
        ),
        "started_at": _iso(when.started_at),
        "finished_at": _iso(when.finished_at),
        "wall_seconds": when.wall_seconds,
        "questions": numbers["questions"],
    }
    if prepared.thresholds:
        audit["thresholds"] = [t.check(audit) for t in prepared.thresholds]
    audit["notes"] = _notes(prepared, audit)
    from turnbench.audit.models import AUDIT_ADAPTER

    AUDIT_ADAPTER.validate_python(audit)
    return audit


def _notes(prepared: PreparedAudit, audit: dict[str, Any]) -> list[str]:
    notes = []
    if prepared.options.embedded:
        notes.append(
            f"{prepared.settings.spec} is a small embedded model: the audit ran with reduced "
            f"defaults ({len(prepared.plan.questions)} questions, replies of at most "
            f"{prepared.settings.sampling.max_tokens} tokens). Its numbers describe that model "
            "as a judge; they say nothing about strong judges."
        )
    if not prepared.plan.pairwise:
        notes.append(f"{prepared.config.benchmark} has no pairwise judging: no position metrics.")
    failed = audit["counts"]["failed"]
    if failed:
        notes.append(
            f"{failed} of {audit['counts']['expected']} judgments were unparseable (after any "
            "re-asks) and are left out of every number."
        )
    if prepared.settings.sampling.temperature == 0:
        notes.append(
            "stability was measured at temperature 0: spread there comes from the serving stack "
            "(batching, non-determinism), not from sampling."
        )
    return notes


def write_audit(directory: Path, audit: dict[str, Any]) -> Path:
    from turnbench.store.resultsfile import _finite

    target = directory / AUDIT_NAME
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".audit-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(_finite(audit), out, indent=2, ensure_ascii=False, allow_nan=False)
        out.write("\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target


def read_audit(directory: Path) -> dict[str, Any]:
    """A finished audit's audit.json (for reports)."""
    from turnbench.textio import read_json

    path = directory / AUDIT_NAME
    if not path.is_file():
        raise UserError(f"{directory}: no {AUDIT_NAME} here")
    value = read_json(path)
    if not isinstance(value, dict) or value.get("kind") != AUDIT_KIND:
        raise UserError(f"{path}: not a turnbench judge audit")
    return value
