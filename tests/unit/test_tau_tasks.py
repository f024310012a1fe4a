"""tau-bench's tasks: every split loads with upstream's fields, and the share of tasks an
agent doing nothing passes (gold state = initial database, no outputs) is the same whether
computed by our tools or read from upstream's own replays (`golden_replays.jsonl`)."""

from __future__ import annotations

import json

import pytest

from turnbench.benchmarks.tau_bench.database import Database
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.tasks import load_tasks, needs_nothing
from turnbench.benchmarks.tau_bench.tools import ToolSet


@pytest.mark.parametrize(
    ("domain", "split", "tasks", "lazy"),
    [
        ("retail", "test", 115, 7),  # 0.061
        ("retail", "train", 500, 5),  # 0.01
        ("retail", "dev", 20, 1),  # 0.05
        ("airline", "test", 50, 19),  # 0.38
    ],
)
def test_the_share_a_lazy_agent_passes(data_dir, domain, split, tasks, lazy):
    root = data_dir / "tau_bench" / domain
    base = Database.load({table: root / f"{table}.json" for table in TABLES[domain]})
    tools = ToolSet.for_domain(domain, json.loads((root / "tools.json").read_text()))
    found = load_tasks(root / f"tasks_{split}.json")
    initial = json.loads((data_dir / "tau_bench" / "manifest.json").read_text())[domain][
        "initial_db_sha256"
    ]
    replays = [json.loads(line) for line in (root / "golden_replays.jsonl").open()]
    upstream = {
        entry["index"]
        for entry in replays
        if entry["split"] == split
        and entry["final_db_sha256"] == initial
        and not found[entry["index"]].outputs
    }
    ours = {index for index, task in enumerate(found) if needs_nothing(base, tools, task)}
    assert len(found) == tasks
    assert ours == upstream and len(ours) == lazy
