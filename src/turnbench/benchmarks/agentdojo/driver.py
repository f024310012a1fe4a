"""AgentDojo's conversations: the tool-using driver's, with upstream's tool filter as a step of
its own under the `tool_filter` defense.

Under that defense upstream asks the model, before its first step, which tools the task
needs: a user message with the filter's prompt after the user's, every tool offered with
`tool_choice` "none", temperature 0; the tools whose names the reply holds are the only ones
offered (and runnable) from then on, and the filter's message and the reply stay in the
conversation. That request is its own role, "tool_filter" (played by the model under test):
its usage, cost, failures and dry-run estimate are counted under that name. Its request and
its rule for the tools kept are upstream's code (`upstream.Pipeline.tool_filter`).
"""

from __future__ import annotations

from typing import Any

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.drivers.tool_agent import AgentTask, Conversation, ToolAgent
from turnbench.engine.estimate import Sizing
from turnbench.engine.plan import Plan
from turnbench.record_keys import step_key
from turnbench.samples import Sample
from turnbench.types import RequestParams

TOOL_FILTER = "tool_filter"


class AgentDojoDriver(ToolAgent):
    """The tool-using agent on AgentDojo's tasks (see the module docstring)."""

    def __init__(self, work: WorkSpec) -> None:
        super().__init__(work)
        filtering = getattr(self.benchmark, "defense", None) == TOOL_FILTER
        self.roles = {TOOL_FILTER: "model"} if filtering else {}

    def conversation(self, task: AgentTask, model: str, sample: Sample, trial: int) -> Conversation:
        if self.roles:
            return FilteredConversation(task, model, sample, trial, self.benchmark)
        return Conversation(task, model, sample, trial)

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        super().estimate(plan, sizing)
        if self.roles:
            for job in plan.jobs:
                task = self.benchmark.agent_task(job.sample)
                messages = [
                    {"role": "system", "content": task.system},
                    {"role": "user", "content": task.opening()},
                    {"role": "user", "content": self.benchmark.pipeline.tool_filter_prompt},
                ]
                sizing.request(TOOL_FILTER, messages, RequestParams(tools=task.tools))

    def notes(self) -> list[str]:
        notes = super().notes()
        if self.roles:
            notes.append("the tool filter asks the model once per conversation (its own role)")
        return notes


class FilteredConversation(Conversation):
    """A conversation under upstream's tool filter."""

    def __init__(self, task: Any, model: str, sample: Sample, trial: int, rules: Any) -> None:
        super().__init__(task, model, sample, trial)
        self.rules = rules

    async def prelude(self, ctx: RunContext) -> bool:
        pipeline, suite = self.task.pipeline, self.task.suite
        prompt = self.task.opening()
        asked = pipeline.tool_filter(suite, prompt, "")  # (upstream's request, before the reply)
        request = asked.request
        messages = [
            {"role": "system", "content": self.task.system},
            {"role": "user", "content": prompt},
            {"role": "user", "content": asked.prompt},
        ]
        params = RequestParams(
            temperature=request.get("temperature"),
            max_tokens=self.rules.settings.answer.max_tokens,
            tools=self.task.tools,
            tool_choice="none",
        )
        reply = await ctx.reply(
            TOOL_FILTER, key=step_key(TOOL_FILTER, self.model, self.sample.id, self.trial),
            model=self.model, sample=self.sample, turn=0, messages=messages, params=params,
            trial=self.trial, at=len(self.messages) + 1,
        )  # fmt: skip
        if reply is None:
            return False
        kept = pipeline.tool_filter(suite, prompt, reply.text).kept
        self.task.kept = kept
        self.tools = self.task.tools
        self.messages.append({"role": "user", "content": asked.prompt})
        self.messages.append({"role": "assistant", "content": reply.text})
        return True
