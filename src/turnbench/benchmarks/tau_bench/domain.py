"""One tau-bench domain as a run uses it: its policy, tools, database and a split's tasks.

Two benchmark objects of one domain (a run and a report, say) share one parsed database: it
is a few MB of JSON and never changes (`DatabaseState` copies what a conversation writes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState
from turnbench.benchmarks.tau_bench.tasks import Task, load_tasks
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

    @property
    def initial_sha256(self) -> str:
        return self.fresh().sha256()
