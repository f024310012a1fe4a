"""Conversations in which the model acts: an agent with tools, with or without a simulated user.

The model under test gets a system message and a task's tools; each of its steps is one
completion that either calls tools or writes text. The calls of a reply run here, in order,
on the conversation's own copy of the task's state (the benchmark says whether every call
of a reply runs, or only the first, as some benchmarks' agents do), each output going back as a
`tool` message. Text goes to the simulated user (the "user" role), whose reply comes back
as the next user message; a task without a simulated user (its opening is the benchmark's
own prompt) ends at the first reply without tool calls. A conversation also ends when the
user says it is over, when a terminating tool is called, or after `max_steps` agent steps;
then the benchmark scores the final state and what the agent said (`AgentTask.score`) into
one `SampleRecord` with its typed outcome.

Every message's place in the conversation (`at`) is logged with the record that made it,
so the conversation reads back whole (`journal.conversations`). Resume: every completion
is an answer or user-turn record, every tool call a step record, all logged as they
happen. A resumed conversation reads them back in order: the agent's and the user's
replies from the log (never asked again), each logged tool call replayed on a fresh copy of
the state (tools are pure functions of the state and the call), its output the logged one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from turnbench.engine.context import RunContext
from turnbench.engine.drivers.base import WorkSpec
from turnbench.engine.estimate import Sizing
from turnbench.engine.history import Thread, reply_message
from turnbench.engine.plan import Plan, PlannedJob
from turnbench.record_keys import answer_key, sample_key, tool_step_key, user_turn_key
from turnbench.samples import Sample, UserAsk, UserTurn
from turnbench.types import Message, RequestParams, SampleRecord, StepRecord

#: how a conversation ended: the user said so, the agent called a terminating tool, the agent
#: answered without calling a tool (a task without a simulated user), or the step limit came
#: first (the benchmark's `score` decides what each is worth)
USER_STOP, TERMINATING_TOOL, ANSWERED, STEP_LIMIT = (
    "user_stop", "terminating_tool", "answered", "step_limit",
)  # fmt: skip

#: which tool calls of a reply run: every one, in order, or only the first (a benchmark whose
#: reference agent keeps one call a reply)
CallsPerReply = Literal["all", "first"]


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call returned (what the agent is shown) and whether it ends the
    conversation; `changed`: whether it wrote to the state."""

    output: str
    terminal: bool = False
    changed: bool = False


@dataclass(frozen=True)
class Scored:
    """A finished conversation as its benchmark scores it: the score, the benchmark's typed
    outcome (its `Benchmark.outcome_model`; kept in the sample's record as `detail` and
    drawn by the benchmark's own template), and the top-level keys the benchmark's sample
    records carry."""

    score: float
    outcome: BaseModel | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """One tool call the agent made, as the driver ran it (the model's id, name and
    arguments' text), what it returned, and where: the agent's step and its place among
    that step's calls."""

    id: str
    name: str
    arguments: str
    output: str
    step: int = 0
    index: int = 0


class AgentTask(Protocol):
    """One sample of a tool-using benchmark, as the driver runs it."""

    @property
    def system(self) -> str:
        """The agent's system message."""
        ...

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        """The tools the agent is offered, in OpenAI's function-tool shape."""
        ...

    def opening(self) -> str | None:
        """The conversation's first user message when the benchmark writes it (a task's
        prompt); None: the simulated user opens (`user_ask`)."""
        ...

    def fresh(self) -> Any:
        """A fresh copy of the task's state for one conversation."""
        ...

    def call(self, state: Any, name: str, arguments: str) -> ToolOutcome:
        """Run one tool call on `state` (a bad name or bad arguments is an output the agent
        sees, never an exception)."""
        ...

    def user_ask(self, heard: Sequence[str], said: Sequence[str], acted: bool) -> UserAsk:
        """The simulated user's next request: `heard` the agent's messages to the user so
        far, `said` the user's own; `acted`: whether a tool has changed the state yet."""
        ...

    def after_tools(self) -> list[str]:
        """User messages the benchmark adds after each round of tool results, before the
        agent is asked again (a defense that repeats the user's prompt); usually none."""
        ...

    def score(
        self, state: Any, said_to_user: Sequence[str], ended: str, calls: Sequence[Call]
    ) -> Scored:
        """The finished conversation's score from the final state, the agent's messages
        (to the user), how it ended and the tool calls it made."""
        ...


class ToolBenchmark(Protocol):
    """What a tool-using benchmark gives the driver beside the common rules."""

    max_steps: int
    trials: int
    calls_per_reply: CallsPerReply
    #: whether the calls of the reply at the step limit still run (one benchmark's loop
    #: acts on its last step; another's runs no tools after its last allowed reply)
    calls_at_step_limit: bool

    def agent_task(self, sample: Sample) -> AgentTask: ...

    def agent_params(self, sample: Sample, tools: tuple[dict[str, Any], ...]) -> RequestParams:
        """The agent's request parameters (its sampling, with the tools)."""
        ...


class ToolAgent:
    """An agent with a task's tools, `trials` times per sample."""

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

    async def run(self, job: PlannedJob, ctx: RunContext) -> None:
        assert job.model is not None
        model, sample, trial = job.model, job.sample, job.trial
        key = sample_key(model, sample.id, trial)
        if ctx.logged_sample(key) is not None:
            return
        task = self.benchmark.agent_task(sample)
        conversation = self.conversation(task, model, sample, trial)
        ended = await conversation.run(ctx, self.benchmark)
        if ended is None:
            return  # a request failed: pending, the resume goes on from the log
        scored = task.score(conversation.state, conversation.heard, ended, conversation.calls)
        outcome = scored.outcome.model_dump(mode="json") if scored.outcome is not None else {}
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
                detail=outcome,
                **scored.fields,
            )
        )

    def conversation(self, task: AgentTask, model: str, sample: Sample, trial: int) -> Conversation:
        """One conversation as this driver holds it (a driver built on this one may hold it
        its own way: `Conversation.prelude`)."""
        return Conversation(task, model, sample, trial)

    def estimate(self, plan: Plan, sizing: Sizing) -> None:
        """Every conversation runs to the step limit, every request at its token limits:
        with a simulated user half its steps are messages to the user; every other step (all
        of them without one) calls a tool whose output is as long as an answer. The tools'
        schemas are in every request (`Sizing` counts the tools offered)."""
        steps = self.benchmark.max_steps
        filler = sizing.filler
        said = "x" * ((sizing.user_limit or 0) * 4)
        for job in plan.jobs:
            task = self.benchmark.agent_task(job.sample)
            params = self.benchmark.agent_params(job.sample, task.tools)
            opening = task.opening()
            history: list[Message] = [
                {"role": "system", "content": task.system},
                {"role": "user", "content": opening if opening is not None else said},
            ]
            user: list[Message] = []
            if opening is None:
                user = list(task.user_ask([], [], False).messages)
                sizing.user_turn(user)
            for step in range(steps):
                sizing.answer(history, params)
                call = {"id": "x", "type": "function", "function": {"name": "x", "arguments": ""}}
                if opening is None and step % 2:
                    history.append({"role": "assistant", "content": filler})
                    user = [*user, {"role": "user", "content": filler}]
                    sizing.user_turn(user)
                    user.append({"role": "assistant", "content": said})
                    history.append({"role": "user", "content": said})
                else:
                    history.append({"role": "assistant", "content": "", "tool_calls": [call]})  # type: ignore[typeddict-item]
                    history.append({"role": "tool", "tool_call_id": "x", "content": filler})

    def notes(self) -> list[str]:
        return [
            f"each conversation is estimated at its step limit ({self.benchmark.max_steps} "
            f"agent steps, tool outputs as long as an answer, the tools' schemas in every "
            f"request); {self.benchmark.trials} trial(s) per task"
        ]


class Conversation:
    """One conversation of the agent, as it goes (its messages are the agent's view)."""

    def __init__(self, task: AgentTask, model: str, sample: Sample, trial: int) -> None:
        self.task = task
        self.model = model
        self.sample = sample
        self.trial = trial
        self.state = task.fresh()
        self.messages: list[Message] = [{"role": "system", "content": task.system}]
        self.heard: list[str] = []  # the agent's text messages (to the user)
        self.said: list[str] = []  # the user's messages
        self.calls: list[Call] = []  # the tool calls run, in order
        self.tools = task.tools  # what the agent is offered (a driver may narrow it)
        self.steps = 0
        self.acted = False  # a tool changed the state
        self.agent_thread = Thread()
        self.user_thread = Thread()

    async def _open(self, ctx: RunContext) -> bool:
        """The first user message: the benchmark's (logged as a template turn), else the
        simulated user's; False when the user's request failed."""
        text = self.task.opening()
        if text is None:
            return await self._user(ctx) is not None
        key = user_turn_key(self.model, self.sample.id, 1, self.trial)
        at = len(self.messages)
        if ctx.logged_user_turn(key) is None:
            made = UserTurn(text=text, origin="template")
            ctx.record_user_turn(
                key=key, model=self.model, sample=self.sample, turn=1, made=made, trial=self.trial,
                at=at,
            )  # fmt: skip
        self.said.append(text)
        self.messages.append({"role": "user", "content": text})
        return True

    async def prelude(self, ctx: RunContext) -> bool:
        """What happens between the opening and the agent's first step (a driver built on
        this one may add a step of its own: a defense that asks the model which tools to
        keep); False when a request failed."""
        return True

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
            at=len(self.messages),
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
        if not await self._open(ctx) or not await self.prelude(ctx):
            return None
        simulated = self.task.opening() is None
        kept = 1 if rules.calls_per_reply == "first" else None
        params = rules.agent_params(self.sample, self.tools)
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
                kept_calls=kept,
            )
            if answer is None:
                return None
            text = answer.text or ""
            calls = (answer.tool_calls or [])[:kept]
            self.messages.append(reply_message(text, calls))
            if calls:
                if self.steps >= rules.max_steps and not rules.calls_at_step_limit:
                    return STEP_LIMIT
                if self._tools(ctx, calls):
                    return TERMINATING_TOOL
                for text in self.task.after_tools():
                    self.messages.append({"role": "user", "content": text})
                continue
            self.heard.append(text)
            if not simulated:
                return ANSWERED
            reply = await self._user(ctx)
            if reply is None:
                return None
            if reply[1]:
                return USER_STOP
        return STEP_LIMIT

    def _tools(self, ctx: RunContext, calls: list[dict[str, Any]]) -> bool:
        """Run (or replay) the step's tool calls in order; whether one ended the
        conversation (the calls after it are not run)."""
        for number, call in enumerate(calls):
            function = call.get("function") or {}
            name = str(function.get("name") or "")
            arguments = str(function.get("arguments") or "")
            call_id = str(call.get("id") or "")
            outcome = self.task.call(self.state, name, arguments)
            self.acted = self.acted or outcome.changed
            key = tool_step_key(self.model, self.sample.id, self.steps, self.trial, number)
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
                        call=number,
                        name=name,
                        call_id=call_id,
                        output=output,
                        at=len(self.messages),
                    )
                )
            self.calls.append(Call(call_id, name, arguments, output, self.steps, number))
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
            if outcome.terminal:
                return True
        return False
