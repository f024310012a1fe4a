"""Scripted players of tau-bench's conversations, for the fake servers of tests and benchmarks.

- `TauUser`: the simulated user. It finds its task by the instruction in its system message,
  opens with "I am calling about task N." (so that a scripted agent can find it too, as a
  real agent would find the order from what the user says), and stops (`###STOP###`) once the
  agent has written to it after its opening, or when told to from the start (`stop_at_once`).
- `PerfectAgent`: calls the task's gold actions one by one, in order, then tells the user the
  task's required outputs: it scores 1 on every task.
- `LazyAgent`: never calls a tool and says it cannot help: it scores exactly the share of
  tasks that need no change and no output.
- `instruction_seen`: whether any request a server received holds any task's instruction (the
  model under test must never see it).
- `gold_trajectory`: one entry of tau-bench's own results file for a run that did a task's
  gold actions and told its outputs (what `turnbench import --format tau-bench` reads).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnbench.benchmarks.tau_bench.database import Database
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.tasks import Task, replay
from turnbench.benchmarks.tau_bench.tools import ToolSet
from turnbench.testing.fake_server import Reply, tool_call

STOP = "###STOP###"
_TASK = re.compile(r"I am calling about task (\d+)\.")


def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request.get("messages") or [] if isinstance(m, dict)]


class TauUser:
    """The simulated user of `tasks` (each a dict with an `instruction`)."""

    def __init__(self, tasks: Sequence[dict[str, Any]], *, stop_at_once: bool = False) -> None:
        self.index = {task["instruction"]: number for number, task in enumerate(tasks)}
        self.stop_at_once = stop_at_once

    def task_of(self, request: dict[str, Any]) -> int:
        system = _messages(request)[0].get("content") or ""
        for instruction, number in self.index.items():
            if instruction in system:
                return number
        raise AssertionError("the user model was sent no known instruction")

    def __call__(self, request: dict[str, Any]) -> str:
        number = self.task_of(request)
        said = [m for m in _messages(request) if m.get("role") == "assistant"]
        if not said:
            opening = f"I am calling about task {number}."
            return f"{opening} {STOP}" if self.stop_at_once else opening
        return STOP


class PerfectAgent:
    """Calls each gold action of the task in turn, then tells the user its outputs."""

    def __init__(self, tasks: Sequence[dict[str, Any]]) -> None:
        self.tasks = list(tasks)

    def __call__(self, request: dict[str, Any]) -> Reply:
        messages = _messages(request)
        first = next(m for m in messages if m.get("role") == "user")
        found = _TASK.search(str(first.get("content") or ""))
        assert found, "the user did not say which task it is"
        task = self.tasks[int(found.group(1))]
        done = sum(1 for m in messages if m.get("role") == "tool")
        actions = [a for a in task["actions"] if a["name"] != "respond"]
        if done < len(actions):
            action = actions[done]
            return Reply(tool_calls=[tool_call(action["name"], action["kwargs"], f"call_{done}")])
        outputs = ", ".join(task.get("outputs") or [])
        return Reply(content=f"All done. {outputs}".strip())


class LazyAgent:
    """Never acts: every message says it cannot help."""

    def __call__(self, request: dict[str, Any]) -> str:
        return "I am sorry, I cannot help with that."


def instruction_seen(requests: Sequence[dict[str, Any]], tasks: Sequence[dict[str, Any]]) -> bool:
    """Whether any request holds any task's instruction."""
    texts = [str(m.get("content") or "") for r in requests for m in _messages(r)]
    return any(task["instruction"] in text for task in tasks for text in texts)


def gold_trajectory(
    data_dir: Path, domain: str, task_id: int, *, trial: int = 0, cut: bool = False,
    recorded: float = 1.0, base: Database | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One entry of upstream's results file for a run that did the task's gold actions and
    told the outputs, in upstream's message format (litellm's dumps: content null beside
    tool calls, `name` on tool results); `cut`: the file stops after the last tool call.
    `base`: the domain's database, when the caller has it loaded already."""
    root = data_dir / "tau_bench" / domain
    task = Task.model_validate(json.loads((root / "tasks_test.json").read_text())[task_id])
    if base is None:
        base = Database.load({t: root / f"{t}.json" for t in TABLES[domain]})
    tools = ToolSet.for_domain(domain, json.loads((root / "tools.json").read_text()))
    _, observations = replay(base, tools, task)
    traj: list[dict[str, Any]] = [
        {"role": "system", "content": (root / "policy.md").read_text()},
        {"role": "user", "content": "Hi, I need help."},
    ]
    for number, (action, observed) in enumerate(zip(task.actions, observations, strict=True)):
        call = {"function": {"arguments": json.dumps(action.kwargs), "name": action.name},
                "id": f"call_{number}", "type": "function"}  # fmt: skip
        traj.append({"content": None, "role": "assistant", "tool_calls": [call],
                     "function_call": None})  # fmt: skip
        traj.append({"role": "tool", "tool_call_id": f"call_{number}", "name": action.name,
                     "content": observed})  # fmt: skip
    if not cut:
        traj.append({"content": f"Done. {' '.join(task.outputs)}", "role": "assistant",
                     "tool_calls": None, "function_call": None})  # fmt: skip
        traj.append({"role": "user", "content": STOP})
    return {"task_id": task_id, "reward": recorded, "info": {"source": "user"}, "traj": traj,
            "trial": trial}  # fmt: skip
