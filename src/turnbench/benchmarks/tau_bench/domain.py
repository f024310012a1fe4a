"""One tau-bench domain as a run uses it: its policy, tools, database and a split's tasks.

Two benchmark objects of one domain (a run and a report, say) share one parsed database: it
is a few MB of JSON and never changes (`DatabaseState` copies what a conversation writes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState
from turnbench.benchmarks.tau_bench.tasks import Task, gold_state, load_tasks
from turnbench.benchmarks.tau_bench.tools import ToolSet
from turnbench.errors import UserError
from turnbench.safetext import plain

#: each domain's database tables (the files' names without `.json`)
TABLES: dict[str, tuple[str, ...]] = {
    "retail": ("orders", "products", "users"),
    "airline": ("flights", "reservations", "users"),
}
_SHARED: dict[tuple[str, tuple[tuple[str, str], ...]], Database] = {}


@dataclass
class TauDomain:
    name: Literal["retail", "airline"]
    policy: str
    tools: ToolSet
    base: Database
    tasks: list[Task]
    _golds: dict[int, tuple[Task, DatabaseState]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, name: str, files: Mapping[str, Path], split: str) -> TauDomain:
        """The domain from its located files (`sources.file_key` names them)."""
        from turnbench.benchmarks.tau_bench.sources import file_key

        if name not in TABLES:
            raise UserError(f"unknown tau-bench domain {name!r}")
        tables = {table: files[file_key(name, f"{table}.json")] for table in TABLES[name]}
        shared = (name, tuple(sorted((t, str(p)) for t, p in tables.items())))
        base = _SHARED.get(shared)
        if base is None:
            base = _SHARED[shared] = Database.load(tables)
        schemas_path = files[file_key(name, "tools.json")]
        try:
            schemas = json.loads(schemas_path.read_text("utf-8"))
        except (OSError, ValueError) as error:
            raise UserError(f"{plain(str(schemas_path))}: cannot read ({error})") from None
        return cls(
            name=name,  # type: ignore[arg-type]
            policy=files[file_key(name, "policy.md")].read_text("utf-8"),
            tools=ToolSet.for_domain(name, schemas),  # type: ignore[arg-type]
            base=base,
            tasks=load_tasks(files[file_key(name, f"tasks_{split}.json")]),
        )

    def fresh(self) -> DatabaseState:
        return DatabaseState.fresh(self.base)

    def gold(self, task: Task) -> DatabaseState:
        """The state the task's gold actions lead to, replayed once per task however many
        trials are scored against it (nobody writes to it: the reward only reads)."""
        known = self._golds.get(id(task))
        if known is None or known[0] is not task:
            known = self._golds[id(task)] = (task, gold_state(self.base, self.tools, task))
        return known[1]

    @property
    def initial_sha256(self) -> str:
        return self.fresh().sha256()
