"""A conversation as one typed object: its messages in order, each with who produced it.

Every reader of a run (results, the report, the viewer, exports, importers, the Python
API) gets a conversation from one function, `journal.conversations.conversations`, which
reads it back from the records its driver logged; none rebuilds the order on its own. The
messages are the model under test's view of the conversation: exactly what its last
request carried, then its reply to it, then whatever came after that it never answered
(a closing user message, the results of tool calls a stopped run made).

Each message names the role of the run that produced it (`by`): "model" (the model under
test), "user" (a simulated user), any role a driver names, "tool" (a tool a driver ran;
its record is the step's) or "benchmark" (the benchmark's own text: a system message, a
dataset's turn or golden answer), and the key of the log record it came from.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnbench.types import SampleId, ToolCall

#: who produced a message that no role of the run wrote: the benchmark's own text
BENCHMARK = "benchmark"
#: who produced a tool's result: the tool a driver ran (no model's request)
TOOL = "tool"

ChatRole = Literal["system", "developer", "user", "assistant", "tool"]


class Said(BaseModel):
    """One message of a conversation: what was said (OpenAI's chat message fields) and
    where it came from (`by`, `record`)."""

    model_config = ConfigDict(frozen=True)

    role: ChatRole
    content: str = ""
    #: an assistant message's tool calls, as the model sent them (arguments as its text)
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # a tool message: the call it answers
    name: str | None = None  # a tool message: the tool's name
    by: str  # the role that produced it ("model", "user", a driver's role, "tool", "benchmark")
    record: str | None = None  # the key of the log record it came from

    def chat(self) -> dict[str, Any]:
        """The message in OpenAI's chat format (what fine-tuning and other tools read), as
        an OpenAI-compatible server received it: an assistant message that only calls tools
        has `"content": null`."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.as_part() for call in self.tool_calls]
            if not self.content:
                message["content"] = None
        if self.role == "tool":
            message["tool_call_id"] = self.tool_call_id or ""
        return message


class Conversation(BaseModel):
    """One conversation of a run: a sample with a model (in one trial, in one stress arm),
    its messages in order, and how it came out.

    `finished`: its driver scored it as a whole (a sample record is logged); a conversation
    judged turn by turn is never `finished` here (its judged turns are in `outcome`, and
    whether every planned turn is done is the results' `complete`).
    `outcome` is the benchmark's typed outcome (`Benchmark.outcome_model`) when the
    benchmark declares one and it is known to the reader, else the outcome's JSON as
    logged; `score` and `ended` are the driver's."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    benchmark: str
    sample_id: SampleId
    model: str
    trial: int | None = None
    arm: str | None = None
    messages: list[Said] = Field(default_factory=list)
    finished: bool = False
    #: the model's requests are in the log (False: answers imported without the requests
    #: they answered; the messages are then the model's replies alone)
    requests_recorded: bool = True
    score: float | None = None
    ended: str | None = None
    outcome: Any = None

    def chat(self) -> list[dict[str, Any]]:
        """The messages in OpenAI's chat format."""
        return [said.chat() for said in self.messages]

    def outcome_json(self) -> Any:
        """The outcome as JSON (a typed outcome dumped; a logged one as it is)."""
        outcome = self.outcome
        if isinstance(outcome, BaseModel):
            return outcome.model_dump(mode="json")
        return outcome

    def export(self) -> dict[str, Any]:
        """The conversation as `turnbench export --format conversations` writes it: one
        JSON object, `arm` only when the run has arms."""
        row: dict[str, Any] = {
            "benchmark": self.benchmark,
            "sample_id": self.sample_id,
            "model": self.model,
            "trial": self.trial,
        }
        if self.arm is not None:
            row["arm"] = self.arm
        row["messages"] = self.chat()
        row["outcome"] = self.outcome_json()
        row["score"] = self.score
        row["finished"] = self.finished
        if self.ended is not None:
            row["ended"] = self.ended
        return row

    def to_json(self) -> dict[str, Any]:
        """The whole object as JSON, every message with who produced it (`by`, `record`)."""
        return self.model_dump(mode="json")
