"""tau-bench's tasks and the database state their gold actions lead to.

A task (from `tasks_SPLIT.json`, upstream's task list as data) holds the simulated user's
instruction, the gold actions (tool calls that lead to the right final state) and the
outputs the agent must tell the user. The gold state replays the gold actions on a fresh
state, as upstream's reward does: every action but the terminating tool; `respond` actions
(what the agent says) change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState
from turnbench.benchmarks.tau_bench.tools import ToolSet
from turnbench.errors import UserError
from turnbench.safetext import plain

RESPOND = "respond"


class Action(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kwargs: dict[str, Any]


class Task(BaseModel):
    model_config = ConfigDict(frozen=True)

    annotator: str | int | None = None
    user_id: str
    instruction: str
    actions: list[Action]
    outputs: list[str] = []


def load_tasks(path: Path) -> list[Task]:
    """A split's tasks, in order (a task's index is its id, as in upstream's result files)."""
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{plain(str(path))}: cannot read the tasks ({error})") from None
    if not isinstance(raw, list):
        raise UserError(f"{plain(str(path))}: expected a JSON list of tasks")
    try:
        return [Task.model_validate(item) for item in raw]
    except ValidationError as error:
        raise UserError(f"{plain(str(path))}: a task is malformed: {error.errors()[0]}") from None


def replay(base: Database, tools: ToolSet, task: Task) -> tuple[DatabaseState, list[str | None]]:
    """A fresh state after the task's gold actions, and what each action returned (None
    for a `respond` action)."""
    state = DatabaseState.fresh(base)
    observations: list[str | None] = []
    for action in task.actions:
        if action.name == RESPOND:
            observations.append(None)
            continue
        observations.append(tools.call(state, action.name, action.kwargs).output)
    return state, observations


def gold_state(base: Database, tools: ToolSet, task: Task) -> DatabaseState:
    """The state the task's gold actions lead to (the terminating tool left out, as upstream's
    reward leaves it out: it changes nothing anyway)."""
    state = DatabaseState.fresh(base)
    for action in task.actions:
        if action.name != RESPOND and action.name not in tools.terminating:
            tools.call(state, action.name, action.kwargs)
    return state


def needs_nothing(base: Database, tools: ToolSet, task: Task) -> bool:
    """Whether an agent that does nothing succeeds at the task: its gold state is the
    initial database and it asks no output (the floor of every score)."""
    return not task.outputs and not gold_state(base, tools, task).differs_from_base()
