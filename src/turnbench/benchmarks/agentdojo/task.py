"""One AgentDojo conversation as the tool-using driver runs it (`tool_agent.AgentTask`).

The conversation is upstream's: its pipeline's system message, the user task's prompt as
the first user message, the suite's tools; every tool call of a reply runs, in order, on the
conversation's own environment (the suite's default one with the attack's injections in
place, then the user task's `init_environment`) through upstream's executor, its result or
error as upstream formats them; it ends at the first reply without tool calls. Its
verdicts are upstream's checks on the final text, the environment before and after, and
every call made (`upstream.Suite.check`). Beyond upstream the outcome says why: where the
payload arrived and the calls that followed it, and the environment diff of a failure.

Departing from upstream, openly: upstream runs a conversation again from the start (up to
three times, on the environment the earlier attempts changed) when its last reply holds no
text, a conversation that ran out of steps among them; here a conversation is held once, and
one that runs out of steps is checked with no final text, as upstream's last attempt would
be. A malformed tool call is its error, shown to the model (upstream's run would stop).
The agent's requests carry a token limit (--max-new-tokens, 2048 by default) where
upstream's OpenAI element sends none: a budget needs one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnbench.benchmarks.agentdojo import payloads
from turnbench.benchmarks.agentdojo.outcome import (
    AROUND,
    MAX_DIFF_ROWS,
    AgentDojoOutcome,
    PayloadArrival,
    kept,
)
from turnbench.engine.drivers.tool_agent import ANSWERED, Call, Scored, ToolOutcome
from turnbench.samples import UserAsk

if TYPE_CHECKING:
    from turnbench.benchmarks.agentdojo.upstream import (
        ConversationEnvironment,
        Pipeline,
        Suite,
    )


@dataclass
class DojoState:
    """A conversation's environment and every call made on it (the checks' stack trace)."""

    conversation: ConversationEnvironment
    trace: list[Any] = field(default_factory=list)


def call_text(name: str, arguments: Any) -> str:
    """A call as one line, `name(arguments)`, for the outcome."""
    try:
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        shown = str(arguments)
    return f"{name}({shown})"


class DojoTask:
    """One sample: a suite's user task, alone or with one injection task under the attack."""

    def __init__(
        self,
        suite: Suite,
        pipeline: Pipeline,
        user_task_id: str,
        injection_task_id: str | None,
        attack: str,
        injections: Mapping[str, str],
        dos: bool = False,
        tools: Sequence[str] | None = None,
    ) -> None:
        self.suite = suite
        self.pipeline = pipeline
        self.user_task_id = user_task_id
        self.injection_task_id = injection_task_id
        self.attack = attack
        self.injections = dict(injections)
        self.dos = dos
        self.kept = list(tools) if tools is not None else None  # (a tool filter's choice)

    # -- the conversation ------------------------------------------------------------------
    @property
    def system(self) -> str:
        return self.pipeline.system_message

    @property
    def tools(self) -> tuple[dict[str, Any], ...]:
        return tuple(self.suite.openai_tools(self.kept))

    def opening(self) -> str:
        return self.suite.prompt(self.user_task_id)

    def fresh(self) -> DojoState:
        return DojoState(self.suite.environment(self.user_task_id, self.injections))

    def call(self, state: DojoState, name: str, arguments: str) -> ToolOutcome:
        outcome = self.suite.run_tool_call(
            state.conversation.environment, name, arguments, pipeline=self.pipeline, tools=self.kept
        )
        state.trace.append(outcome.call)
        content = outcome.content
        if outcome.error is None and self.pipeline.detector is not None:
            (content,) = self.pipeline.screen_tool_results([content])
        return ToolOutcome(content)

    def user_ask(self, heard: Sequence[str], said: Sequence[str], acted: bool) -> UserAsk:
        raise RuntimeError("an AgentDojo conversation has no simulated user")

    def after_tools(self) -> list[str]:
        """Under repeat_user_prompt, the user task's prompt again after each round."""
        return [self.opening()] if self.pipeline.repeats_user_prompt else []

    # -- the verdicts ----------------------------------------------------------------------
    def score(
        self, state: DojoState, said_to_user: Sequence[str], ended: str, calls: Sequence[Call]
    ) -> Scored:
        final = said_to_user[-1] if ended == ANSWERED and said_to_user else None
        verdict = self.suite.check(
            self.user_task_id, self.injection_task_id, final, state.conversation, state.trace,
            dos=self.dos,
        )  # fmt: skip
        outcome = AgentDojoOutcome(
            suite=self.suite.name,
            user_task_id=self.user_task_id,
            injection_task_id=self.injection_task_id,
            attack=self.attack,
            utility=verdict.utility,
            security=verdict.security,
            ended=ended,
        )
        if self.injection_task_id is not None:
            self._payload(outcome, state, calls)
        if not verdict.utility:
            rows = self.suite.environment_diff(
                state.conversation.pre, state.conversation.environment
            )
            outcome.environment_diff = kept(rows[:MAX_DIFF_ROWS])
            outcome.diff_rows = len(rows)
        return Scored(
            score=1.0 if verdict.utility else 0.0, outcome=outcome, fields=fields(outcome)
        )

    def _payload(self, outcome: AgentDojoOutcome, state: DojoState, calls: Sequence[Call]) -> None:
        """Where the attack's text arrived (each tool result holding it, the text marked),
        the calls made once it had, and the injection task's ground truth beside them."""
        first: int | None = None
        for number, call in enumerate(calls):
            arrival = arrived(call, self.injections)
            if arrival is not None:
                outcome.payload_arrived.append(arrival)
                first = number if first is None else first
        if first is not None:
            outcome.calls_after_payload = [
                kept(call_text(c.name, _arguments(c.arguments))) for c in calls[first + 1 :]
            ]
        assert self.injection_task_id is not None
        truth = self.suite.ground_truth(self.injection_task_id, state.conversation.pre)
        outcome.injection_ground_truth = [call_text(c.function, dict(c.args)) for c in truth]


def fields(outcome: AgentDojoOutcome) -> dict[str, Any]:
    """The top-level keys of a conversation's sample record (null where there is no
    attack, as a reader of the log expects them)."""
    found: dict[str, Any] = {
        "suite": outcome.suite,
        "user_task_id": outcome.user_task_id,
        "injection_task_id": outcome.injection_task_id,
        "attack": outcome.attack,
        "utility": outcome.utility,
        "security": outcome.security,
    }
    if outcome.recorded_utility is not None:
        found["recorded_utility"] = outcome.recorded_utility
        found["recorded_security"] = outcome.recorded_security
    return found


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return text


def arrived(call: Call, injections: Mapping[str, str]) -> PayloadArrival | None:
    """The payload in one tool result, with the text around it (compared as the model reads
    it: white space folded, the YAML read back; `payloads`)."""
    key = payloads.first_found(call.output, injections)
    if key is None:
        return None
    wanted = payloads.normalized(injections[key])
    for text in payloads.readable_texts(call.output):
        where = text.find(wanted)
        if where >= 0:
            return PayloadArrival(
                step=call.step,
                call=call.index,
                tool=call.name,
                before=text[max(0, where - AROUND) : where],
                payload=wanted,
                after=text[where + len(wanted) : where + len(wanted) + AROUND],
            )
    return None
