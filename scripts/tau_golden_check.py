"""Replay every tau-bench task's gold actions with turnbench's tools and compare each
observation and the final database hash with `golden_replays.jsonl` (computed by upstream's
own tools): the check `tests/unit/test_tau_tools.py` makes, as one printed line.

    TURNBENCH_DATA_DIR=../shared/data python scripts/tau_golden_check.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from turnbench.benchmarks.tau_bench.database import Database
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.tasks import Task, load_tasks, replay
from turnbench.benchmarks.tau_bench.tools import ToolSet


def main() -> None:
    root = Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data")) / "tau_bench"
    started = time.perf_counter()
    tasks = actions = equal = 0
    for name in TABLES:
        base = Database.load({table: root / name / f"{table}.json" for table in TABLES[name]})
        schemas = json.loads((root / name / "tools.json").read_text("utf-8"))
        tools = ToolSet.for_domain(name, schemas)  # type: ignore[arg-type]
        splits: dict[str, list[Task]] = {}
        for line in (root / name / "golden_replays.jsonl").read_text("utf-8").splitlines():
            entry = json.loads(line)
            split = entry["split"]
            if split not in splits:
                splits[split] = load_tasks(root / name / f"tasks_{split}.json")
            state, observations = replay(base, tools, splits[split][entry["index"]])
            tasks += 1
            actions += len(observations)
            if observations == entry["observations"]:
                equal += state.sha256() == entry["final_db_sha256"]
            else:
                print(f"{name} {split} task {entry['index']}: an observation differs")
    print(
        f"{tasks} tasks, {actions} gold actions replayed: {equal} equal to golden_replays.jsonl "
        f"(every observation byte for byte and the final sha256), "
        f"{time.perf_counter() - started:.1f} s"
    )
    sys.exit(0 if equal == tasks else 1)


if __name__ == "__main__":
    main()
