"""A minimal conversation loop for the tests of the AgentDojo seam: what a driver does, in a
dozen lines, over `upstream`'s API and a scripted agent (no engine, no HTTP). Why here and
not in src: the real driver is the engine's; this one exists to show that the seam gives the
driver everything it needs and that its answers are upstream's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from turnbench.benchmarks.agentdojo.fakes import ScriptedAgent
from turnbench.benchmarks.agentdojo.upstream import (
    ConversationEnvironment,
    Pipeline,
    Suite,
    ToolOutcome,
    Verdict,
)

MODEL = "gpt-4o-2024-05-13"


@dataclass
class Conversation:
    messages: list[dict[str, Any]]
    environment: ConversationEnvironment
    outcomes: list[ToolOutcome] = field(default_factory=list)
    final_text: str | None = None
    requests: int = 0
    verdict: Verdict | None = None


def converse(
    suite: Suite,
    agent: ScriptedAgent,
    user_task_id: str,
    injection_task_id: str | None = None,
    injections: dict[str, str] | None = None,
    *,
    pipeline: Pipeline | None = None,
    dos: bool = False,
) -> Conversation:
    pipeline = pipeline or Pipeline(MODEL)
    environment = suite.environment(user_task_id, injections or {})
    conversation = Conversation(
        messages=[
            {"role": "system", "content": pipeline.system_message},
            {"role": "user", "content": suite.prompt(user_task_id)},
        ],
        environment=environment,
    )
    tools = suite.openai_tools()
    for step in range(pipeline.max_steps + 1):
        request = {"model": MODEL, "messages": conversation.messages, "tools": tools}
        reply = agent.reply(request).message()
        conversation.requests += 1
        conversation.messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            conversation.final_text = reply.get("content")
            break
        if step == pipeline.max_steps:
            break  # (upstream's loop runs no tools after its last allowed reply)
        for call in calls:
            outcome = suite.run_tool_call(
                environment.environment,
                call["function"]["name"],
                call["function"]["arguments"],
                call["id"],
                pipeline=pipeline,
            )
            conversation.outcomes.append(outcome)
            conversation.messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": outcome.content}
            )
    conversation.verdict = suite.check(
        user_task_id,
        injection_task_id,
        conversation.final_text,
        environment,
        [o.call for o in conversation.outcomes],
        dos=dos,
    )
    return conversation
