"""Conversations in which the model acts: an agent with tools serves a simulated user.

The model under test gets a system message (a domain's policy) and the domain's tools; each
of its steps is one completion that either calls a tool (only the first call of a reply
counts, as in tau-bench) or writes to the user. A tool runs here, on the conversation's own
copy of the domain's state, and its output goes back as a `tool` message; a message to the
user goes to the simulated user (the "user" role), whose reply comes back as the next user
message. The conversation ends when the user says it is over, when the agent calls a
terminating tool, or after `max_steps` agent steps; then the benchmark scores the final
state and what the agent said (`AgentTask.score`) into one `SampleRecord`.

Resume: every completion is an answer or user-turn record, every tool call a step record,
all logged as they happen. A resumed conversation reads them back in order: the agent's
and the user's replies from the log (never asked again), each logged tool call replayed on
a fresh copy of the state (tools are pure functions of the state and the call), its output
the logged one. The agent's requests and the user model's form two threads, so each
record keeps only what its step appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.judging.judge import Judge
from turnbench.record_keys import answer_key, sample_key, tool_step_key, user_turn_key
from turnbench.samples import Sample, UserAsk
from turnbench.types import Message, RequestParams, SampleRecord, StepRecord

#: how a conversation ended: the user said so, the agent called a terminating tool, or the
#: step limit came first (only the first two are scored; the last scores 0, as upstream)
USER_STOP, TERMINATING_TOOL, STEP_LIMIT = "user_stop", "terminating_tool", "step_limit"


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call returned (what the agent is shown) and whether it ends the
    conversation; `changed`: whether it wrote to the state."""

    output: str
    terminal: bool = False
    changed: bool = False


@dataclass(frozen=True)
class Scored:
    """A finished conversation as its benchmark scores it: the score, a typed explanation
    (`detail`, kept in the sample's record and shown in reports), and the top-level keys the
    benchmark's records carry (tau-bench's `task_id` and `reward`)."""

    score: float
    detail: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)


class AgentTask(Protocol):
    """One sample of a tool-using benchmark, as the driver runs it."""

    @property
    def system(self) -> str:
        """The agent's system message (the domain's policy)."""
        ...

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """The tools the agent is offered, in OpenAI's function-tool shape."""
        ...

    def fresh(self) -> Any:
        """A fresh copy of the domain's state for one conversation."""
        ...

    def call(self, state: Any, name: str, arguments: str) -> ToolOutcome:
        """Run one tool call on `state` (a bad name or bad arguments is an output the agent
        sees, never an exception)."""
        ...

    def user_ask(self, heard: Sequence[str], said: Sequence[str], acted: bool) -> UserAsk:
        """The simulated user's next request: `heard` the agent's messages to the user so
        far, `said` the user's own; `acted`: whether a tool has changed the state yet (a
        user that stops before is a simulator problem)."""
        ...

    def score(self, state: Any, said_to_user: Sequence[str], ended: str) -> Scored:
        """The finished conversation's score from the final state and the agent's messages
        to the user; `ended`: how it ended."""
        ...


class ToolBenchmark(Protocol):
    """What a tool-using benchmark gives the driver beside the common rules."""

    max_steps: int
    trials: int

    def agent_task(self, sample: Sample) -> AgentTask: ...

    def agent_params(self, sample: Sample, tools: tuple[dict[str, Any], ...]) -> RequestParams:
        """The agent's request parameters (its sampling, with the tools)."""
        ...


class ToolAgent:
    """An agent with a domain's tools serves a simulated user, `trials` times per sample."""

    def __init__(self, work: WorkSpec) -> None:
        self.work = work
        self.benchmark: ToolBenchmark = work.benchmark  # type: ignore[assignment]

    def plan(self) -> Plan:
        model = self.work.model
        assert model is not None
        samples = self.work.benchmark.samples
        trials = range(self.benchmark.trials)
        units = [(sample, trial) for trial in trials for sample in samples]
        plan = Plan(
            jobs=[PlannedJob(sample, model, trial=trial) for sample, trial in units],
            scored=list(units),
        )
        plan.keys = {"samples": {sample_key(model, s.id, t) for s, t in units}}
        return plan

    async def run(self, job: PlannedJob, ctx: RunContext, judges: Sequence[Judge]) -> None:
        assert job.model is not None
        model, sample, trial = job.model, job.sample, job.trial
        key = sample_key(model, sample.id, trial)
        if ctx.logged_sample(key) is not None:
            return
        conversation = _Conversation(self.benchmark.agent_task(sample), model, sample, trial)
        ended = await conversation.run(ctx, self.benchmark)
        if ended is None:
            return  # a request failed: pending, the resume goes on from the log
        scored = conversation.task.score(conversation.state, conversation.heard, ended)
        ctx.record_sample(
            SampleRecord(
                key=key,
                model=model,
                sample_id=sample.id,
                trial=trial,
                group=sample.group,
                score=scored.score,
                ended=ended,
                steps=conversation.steps,
                detail=scored.detail,
                **scored.fields,
            )
        )

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Every conversation runs to the step limit, half its steps messages to the user,
        every request at its token limits (the prompt grows by the agent's and the user's
        replies at their limits and a tool output of the same size)."""
        steps = self.benchmark.max_steps
        filler = sizing.filler
        said = "x" * ((sizing.user_limit or 0) * 4)
        for job in plan.jobs:
            task = self.benchmark.agent_task(job.sample)
            tools = "".join(str(tool) for tool in task.tools)
            history: list[Message] = [
                {"role": "system", "content": task.system + tools},
                {"role": "user", "content": said},
            ]
            user: list[Message] = list(task.user_ask([], [], False).messages)
            sizing.user_turn(user)
            for step in range(steps):
                sizing.answer(history)
                history.append({"role": "assistant", "content": filler})
                if step % 2:
                    user = [*user, {"role": "user", "content": filler}]
                    sizing.user_turn(user)
                    user.append({"role": "assistant", "content": said})
                    history.append({"role": "user", "content": said})
                else:
                    history.append({"role": "tool", "tool_call_id": "x", "content": filler})

    def notes(self) -> list[str]:
        return [
            f"each conversation is estimated at its step limit ({self.benchmark.max_steps} "
            f"agent steps, half of them to the user); {self.benchmark.trials} trial(s) per task"
        ]


class _Conversation:
    """One conversation of the agent with the simulated user, as it goes."""

    def __init__(self, task: AgentTask, model: str, sample: Sample, trial: int) -> None:
        self.task = task
        self.model = model
        self.sample = sample
        self.trial = trial
        self.state = task.fresh()
        self.messages: list[Message] = [{"role": "system", "content": task.system}]
        self.heard: list[str] = []  # the agent's messages to the user
        self.said: list[str] = []  # the user's messages
        self.steps = 0
        self.acted = False  # a tool changed the state
        self.agent_thread = Thread()
        self.user_thread = Thread()

    async def _user(self, ctx: RunContext) -> tuple[str, bool] | None:
        """The user's next message and whether it ends the conversation (None: failed)."""
        turn = len(self.said) + 1
        reply = await ctx.ask_user(
            key=user_turn_key(self.model, self.sample.id, turn, self.trial),
            model=self.model,
            sample=self.sample,
            turn=turn,
            ask=self.task.user_ask(self.heard, self.said, self.acted),
            trial=self.trial,
            thread=self.user_thread,
        )
        if reply is None:
            return None
        self.said.append(reply.text)
        self.messages.append({"role": "user", "content": reply.text})
        return reply.text, bool(reply.ended)

    async def run(self, ctx: RunContext, rules: ToolBenchmark) -> str | None:
        """Converse until the end; how it ended, or None when a request failed."""
        # (the user's opening is not checked for the end: upstream checks the user's word
        # only after the agent has spoken)
        if await self._user(ctx) is None:
            return None
        params = rules.agent_params(self.sample, self.task.tools)
        while self.steps < rules.max_steps:
            self.steps += 1
            answer = await ctx.answer(
                key=answer_key(self.model, self.sample.id, self.steps, trial=self.trial),
                model=self.model,
                sample=self.sample,
                turn=self.steps,
                messages=list(self.messages),
                params=params,
                trial=self.trial,
                thread=self.agent_thread,
            )
            if answer is None:
                return None
            calls = answer.tool_calls or []
            if calls:  # (only the first call of a reply counts)
                if self._tool(ctx, answer.text or "", calls[0]):
                    return TERMINATING_TOOL
                continue
            text = answer.text or ""
            self.messages.append({"role": "assistant", "content": text})
            self.heard.append(text)
            reply = await self._user(ctx)
            if reply is None:
                return None
            if reply[1]:
                return USER_STOP
        return STEP_LIMIT

    def _tool(self, ctx: RunContext, text: str, call: dict[str, Any]) -> bool:
        """Run (or replay) the step's tool call; whether it ends the conversation."""
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        arguments = str(function.get("arguments") or "")
        outcome = self.task.call(self.state, name, arguments)
        self.acted = self.acted or outcome.changed
        key = tool_step_key(self.model, self.sample.id, self.steps, self.trial)
        logged = ctx.logged_step(key)
        output = outcome.output
        if logged is not None:
            output = logged.output  # (what the agent was shown then)
        else:
            ctx.record_step(
                StepRecord(
                    key=key,
                    model=self.model,
                    sample_id=self.sample.id,
                    turn=self.steps,
                    trial=self.trial,
                    group=self.sample.group,
                    name=name,
                    call_id=str(call.get("id") or ""),
                    arguments=arguments,
                    output=output,
                )
            )
        call_id = str(call.get("id") or "")
        self.messages.append({"role": "assistant", "content": text, "tool_calls": [call]})
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return outcome.terminal
