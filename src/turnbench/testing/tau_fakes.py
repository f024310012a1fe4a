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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

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
