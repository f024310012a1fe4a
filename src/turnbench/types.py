"""Shared data shapes: messages, completions and the records of a run log.

Messages stay plain dicts (what every OpenAI-compatible client sends): a union of system,
user, assistant (with optional tool calls) and tool-result messages. Everything that
crosses a boundary (the log, results, config) is a pydantic model so a malformed record is
caught where it enters.
"""

from __future__ import annotations

import json
import math
import time
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    Strict,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    model_serializer,
)
from typing_extensions import NotRequired, TypedDict


class ToolFunctionCall(TypedDict):
    name: str
    arguments: str  # the JSON text of the arguments, as the model wrote it


class ToolCallPart(TypedDict):
    """One tool call of an assistant message, in OpenAI's shape (every backend translates
    it to and from its provider's)."""

    id: str
    type: Literal["function"]
    function: ToolFunctionCall


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class DeveloperMessage(TypedDict):
    """OpenAI's newer name for system instructions (Anthropic's path sends it as system
    text); a log of an imported or hand-written conversation may hold it."""

    role: Literal["developer"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class AssistantMessage(TypedDict):
    """The assistant's reply: its text ("" when it only called tools) and the tool calls
    it made, if any."""

    role: Literal["assistant"]
    content: str
    tool_calls: NotRequired[list[ToolCallPart]]


class ToolMessage(TypedDict):
    """What a tool returned, for the call `tool_call_id` names."""

    role: Literal["tool"]
    tool_call_id: str
    content: str
    name: NotRequired[str]


#: a chat message, as OpenAI-compatible clients send it (a plain dict: every text-only
#: request is byte for byte what it always was); read by its role
Message = Annotated[
    SystemMessage | DeveloperMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]


class ToolCallError(ValueError):
    """A tool call whose arguments are not a JSON object (what the model wrote is kept)."""


class ToolCall(BaseModel):
    """One tool call of a reply: its id, the tool's name and the arguments' JSON text as the
    model wrote it (parsed only when used: a malformed call is the model's mistake, shown
    to it, never a crash)."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"

    def as_part(self) -> ToolCallPart:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_part(cls, part: ToolCallPart) -> ToolCall:
        function = part["function"]
        return cls(id=part["id"], name=function["name"], arguments=function["arguments"])

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as an object; ToolCallError when they are not valid JSON or not an
        object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError) as error:
            problem = f"the arguments of {self.name} are not valid JSON: {error}"
            raise ToolCallError(problem) from None
        if not isinstance(value, dict):
            raise ToolCallError(f"the arguments of {self.name} are not a JSON object")
        return value


SampleId = int | str


USAGE_COUNTS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "cache_creation_tokens",
)
#: what a count that is no number of tokens is read as (a negative count: never trusted)
INVALID_COUNT = -1


def _whole_float(value: float) -> int:
    return int(value) if math.isfinite(value) and value.is_integer() else INVALID_COUNT


def _not_a_count(_value: Any) -> int:
    return INVALID_COUNT


#: A count of tokens as read: a whole number (an int, or a float such as 12.0), else
#: INVALID_COUNT. A string, a bool, null, NaN, an infinity or a fraction is read as
#: INVALID_COUNT rather than coerced (`true` as 1, "12" as 12) or refused (which would make
#: the whole record unreadable): a record holding it stays readable and
#: `logindex.record_problem` refuses it, as it does a negative count. Tried left to right,
#: so the usual whole int is checked by pydantic's core alone (every record of a log has a
#: usage: this runs for each).
TokenCount = Annotated[
    Annotated[int, Strict()]
    | Annotated[float, Strict(), AfterValidator(_whole_float)]
    | Annotated[Any, AfterValidator(_not_a_count)],
    Field(union_mode="left_to_right"),
    WithJsonSchema({"type": "integer"}),  # (what a writer writes; the rest is how it is read)
]


class Usage(BaseModel):
    """Tokens of one or more requests.

    `prompt_tokens` counts every input token the provider processed, cached or not (OpenAI's
    meaning; Anthropic's separate cache counts are added back in). `cached_prompt_tokens`
    (read from a prompt cache) and `cache_creation_tokens` (written to one, Anthropic) are
    parts of `prompt_tokens`, kept apart because they are priced differently.
    """

    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    cached_prompt_tokens: TokenCount = 0
    cache_creation_tokens: TokenCount = 0

    def __add__(self, other: Usage) -> Usage:
        # sums of valid counts are valid: no second validation (added up per request)
        return Usage.model_construct(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
        )


class NotAScore(float):
    """What a score field holds when the record gave no number there (`true`, "7", an
    object): NaN to arithmetic, so it is never averaged as a rating (pydantic would read
    `true` as 1.0 and "7" as 7.0), and `logindex.record_problem` refuses the record, saying
    what was there (`held`)."""

    __slots__ = ("held",)

    def __new__(cls, held: Any) -> NotAScore:
        value = super().__new__(cls, math.nan)
        value.held = held
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (NotAScore, (self.held,))

    def describe(self) -> str:
        held = self.held
        if isinstance(held, bool):
            return f"its score is {str(held).lower()}, a boolean, not a number"
        kind = {str: "a string", bytes: "bytes", dict: "an object", list: "a list"}
        return f"its score is {kind.get(type(held), type(held).__name__)}, not a number"


_NOT_NUMBERS = (bool, str, bytes, dict, list)


def _score(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    if isinstance(value, _NOT_NUMBERS):
        return NotAScore(value)
    return handler(value)


#: a judgment's score as read: a number (int or float), None, or NotAScore for anything else
Score = Annotated[float | None, WrapValidator(_score)]


class ReplyConstraint(BaseModel):
    """The shape a judge reply must end with, for backends that can constrain decoding.

    A constrained reply is a bounded free-text explanation that never contains `open`, then
    `lead` + `open` + one of `choices` + `close` and nothing after it, for example
    "...The answer is correct.\nRating: [[7]]". Backends that cannot constrain decoding
    (remote HTTP servers) ignore it; the parser still checks every reply.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["rating", "verdict"]
    choices: tuple[str, ...]  # e.g. ("1", ..., "10") or ("A", "B", "C")
    lead: str = "Rating: "
    open: str = "[["
    close: str = "]]"
    max_explanation_chars: int = 600


class RequestParams(BaseModel):
    """Sampling parameters of one request, exactly as the caller wants them sent.

    `None` means "do not send the field". Backends translate (e.g. `max_completion_tokens`
    for OpenAI reasoning models) and report what they really sent.
    """

    model_config = ConfigDict(frozen=True)

    temperature: float | None = None
    max_tokens: int | None = None
    n: int | None = 1
    extra: dict[str, Any] = Field(default_factory=dict)
    # judge requests only: constrain the reply's shape (local backend), and ask for the
    # log probabilities of the top alternatives at every generated token
    constraint: ReplyConstraint | None = None
    top_logprobs: int | None = None
    #: the tools a driver offers (OpenAI's function-tool shape: {"type": "function",
    #: "function": {"name", "description", "parameters"}}) and how the model may use them
    #: ("auto", "required", "none" or one tool); None: not sent. Users' extra fields can
    #: neither set nor override them (`backends.fields`).
    tools: tuple[dict[str, Any], ...] | None = None
    tool_choice: str | dict[str, Any] | None = None


#: the most tokens a request may ask for: above any model's output today, and low enough that
#: a typo of extra digits is refused instead of sent (and budgeted) as it was written
MAX_TOKEN_LIMIT = 1_000_000


class SamplingConfig(BaseModel):
    """Requested sampling of one role; `temperature=None` on answers means the benchmark's
    own table (MT-Bench's per-category temperatures, say)."""

    temperature: float | None = None
    max_tokens: int
    system_prompt: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    token_param: str = "auto"
    reask_max_tokens: int | None = None  # judge re-asks only; None = max_tokens


class TopLogprob(BaseModel):
    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """One generated token, its log probability and the top alternatives at its position."""

    token: str
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)


class Completion(BaseModel):
    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    reported_model: str | None = None
    system_fingerprint: str | None = None
    sent_params: dict[str, Any] = Field(default_factory=dict)
    attempts: int = 1
    # seconds from the call until its reply: waits for an endpoint slot, retries and their
    # backoff included (not one HTTP round trip); through a provider batch, from when this
    # invocation queued it
    latency_s: float = 0.0
    logprobs: list[TokenLogprob] | None = None  # when requested and the server returned them
    endpoint: str | None = None  # the endpoint that answered (redacted URL); None in process


def _now() -> float:
    return round(time.time(), 3)


class ConfigRecord(BaseModel):
    """Written at the start of every invocation (its `ts` is when the invocation started);
    the last one describes the run.

    `schema_version` is the log layout the record's writer used (absent in logs written
    before versions were recorded: those are version 1, whose keys were `|`-joined).
    """

    kind: Literal["config"] = "config"
    key: str = ""  # keys.config_key: unique per invocation ("" in logs written before keys)
    ts: float = Field(default_factory=_now)
    turnbench_version: str
    schema_version: int = 1
    config: dict[str, Any]


class AnswerRecord(BaseModel):
    """One answer of the model under test, generated here or imported from a file."""

    kind: Literal["answer"] = "answer"
    key: str
    model: str
    sample_id: SampleId
    turn: int
    group: str | None = None  # the sample's category or task
    origin: Literal["generated", "imported"] = "generated"
    text: str
    raw_text: str | None = None  # set when text was cleaned (e.g. <think> removed)
    #: the request: whole, or (with `after`) only the messages this step appended to the
    #: request and reply of the step `after` names (`engine.history.rebuild`)
    messages: list[Message] | None = None
    after: str | None = None  # the key of the step this request continues (its thread)
    trial: int | None = None  # which of several runs of the same conversation (None: one)
    #: the tool calls the reply made (an agent's step), in OpenAI's message shape
    tool_calls: list[ToolCallPart] | None = None
    #: how many of `tool_calls` the conversation kept (its driver ran only those, as
    #: a benchmark may run only the first); None: all of them
    kept_calls: int | None = None
    #: the reply's place in its conversation (`turnbench.conversation`): the number of
    #: messages its request held; None in logs written before conversations were typed
    at: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    reported_model: str | None = None
    system_fingerprint: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    batch_id: str | None = None  # sent through this provider batch (not live)
    batch_usage: Usage | None = None  # the part of `usage` paid at batch prices
    # the endpoint (redacted URL) that answered, so provenance can count what each replica
    # served; empty in process and for imported answers
    endpoints: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    #: the stress arm (`--perturb KIND`) whose history this answer was asked with; None: the
    #: unperturbed run (not written then, so its records and keys are as they always were)
    arm: str | None = None
    ts: float = Field(default_factory=_now)


class UserTurnRecord(BaseModel):
    """One user turn made at run time (a simulated conversation), logged before the model
    is asked to answer it, so a resumed conversation goes on with the same words.

    `origin` "template": the benchmark's own wording (no request); "user-model": written by
    the simulated user (its request and reply are kept as for any role). `revealed`: the
    shards of the sample this turn gave (1-based). `meta` holds the conversation's recorded
    seed and simulation index."""

    kind: Literal["user_turn"] = "user_turn"
    key: str
    model: str  # the model under test the conversation is with
    sample_id: SampleId
    turn: int
    group: str | None = None
    origin: Literal["template", "user-model", "imported"] = "template"
    text: str
    revealed: list[int] = Field(default_factory=list)
    user: str | None = None  # the user model's spec (origin "user-model")
    #: what the user model was sent: whole, or (with `after`) what this turn appended to
    #: the user model's request and reply of the turn `after` names
    messages: list[Message] | None = None
    after: str | None = None
    trial: int | None = None  # which of several runs of the same conversation (None: one)
    outputs: list[str] = Field(default_factory=list)  # its replies (the first, then re-asks)
    problems: list[str] = Field(default_factory=list)  # simulator-quality problems found
    #: the user ended the conversation with this turn: "goal_met" or "abandoned" (a reply
    #: that was only the end marker has an empty `text` and is not sent to the model)
    ended: str | None = None
    #: the turn's place in the model's conversation (`turnbench.conversation`), when its
    #: driver gave one
    at: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 1
    latency_s: float = 0.0
    endpoints: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=_now)


class StepRecord(BaseModel):
    """A step of a conversation that is no model's request: a tool a driver runs itself.
    Logged the moment it ran, so a resumed conversation reads its output back and never
    runs it again (a tool over a database replays the logged calls on a fresh copy).

    `turn` is the model's step that called it and `call` which of that step's calls it ran;
    `name` the tool, `output` what the step returned (what the model is shown) and `at` its
    place in the conversation. The call's arguments are the answer record's (its
    `tool_calls`), not written again here; logs written before kept them in `arguments`."""

    kind: Literal["step"] = "step"
    key: str
    model: str  # the model under test the conversation is with
    sample_id: SampleId
    turn: int
    trial: int | None = None
    group: str | None = None
    call: int = 0  # which of the calls the step `turn` made (a model may make several)
    name: str
    call_id: str | None = None
    arguments: str | None = None  # (older logs only: now read from the answer's call)
    output: str
    at: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=_now)


class ReplyRecord(BaseModel):
    """One reply of a role that a driver names beside the model under test, the judges and
    the simulated user (an attacker, a grader, a second speaker): kept as any role's request
    is (its request, or with `after` what it appended to its thread; its reply, usage and
    endpoints), so its work resumes, and its usage and cost are counted under its `role`.
    `at`: its place in the model's conversation when its text became part of it."""

    kind: Literal["reply"] = "reply"
    key: str
    role: str
    model: str  # the model under test the conversation is with
    sample_id: SampleId
    turn: int
    trial: int | None = None
    group: str | None = None
    spec: str | None = None  # the role's model spec
    messages: list[Message] | None = None
    after: str | None = None
    text: str
    tool_calls: list[ToolCallPart] | None = None
    at: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    reported_model: str | None = None
    system_fingerprint: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    endpoints: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=_now)


class SampleRecord(BaseModel):
    """One finished sample (a whole conversation), as its driver scored it: how it ended,
    its score, and the benchmark's typed explanation (`detail`). Written once the
    conversation can go no further; a benchmark may add top-level keys of its own (kept as
    written: the record allows extra fields)."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["sample"] = "sample"
    key: str
    model: str
    sample_id: SampleId
    trial: int | None = None
    group: str | None = None
    score: float | None = None
    ended: str | None = None  # how the conversation ended (the user's stop, a tool, a limit)
    steps: int = 0
    detail: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=_now)

    @model_serializer(mode="wrap")
    def _keep_null_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A benchmark's own top-level keys are written as it gave them, null included (a
        reader of the log finds `injection_task_id: null`, not a missing key), although the
        log leaves out the record's own null fields."""
        written = handler(self)
        for name, value in (self.model_extra or {}).items():
            if value is None:
                written.setdefault(name, None)
        return written


Order = Literal["AB", "BA"]


class JudgmentRecord(BaseModel):
    """One judgment with everything needed to re-parse it without calling the judge again.

    `judge` is the judge's identity (its spec), `repeat` which of its repeated judgments of
    the same item this is (0 for the first). A verdict is typed by what the judge was asked:
    a `score` (single grading), a positional `verdict` "A"/"B"/"tie" (a pairwise game, whose
    `pair` and `order` say which models were shown where; `model` is the one shown as A), or
    a `checklist` with one answer per item ("Yes", "No" or what the judge wrote).
    """

    kind: Literal["judgment"] = "judgment"
    key: str
    judge: str
    model: str
    sample_id: SampleId
    turn: int
    group: str | None = None
    criterion: str | None = None  # which of several judge requests of one turn
    repeat: int = 0
    pair: tuple[str, str] | None = None
    order: Order | None = None
    prompt_name: str
    messages: list[Message]
    params: dict[str, Any] = Field(default_factory=dict)
    outputs: list[str]  # the first reply, then one per re-ask
    followup: str | None = None  # the fixed re-ask text, when re-asks happened
    parser: str
    status: Literal["scored", "parse_failed"]
    score: Score = None
    verdict: str | None = None  # pairwise judgments: "A", "B" or "tie"
    checklist: list[str] | None = None
    parse_error: str | None = None
    # --judge-scoring weighted: "weighted" (score = expected rating, parsed_score = the
    # rating written) or "parsed-fallback" (the server returned no usable logprobs)
    scoring: str | None = None
    parsed_score: Score = None
    rating_probabilities: dict[str, float] | None = None
    usage: Usage = Field(default_factory=Usage)
    reported_model: str | None = None
    system_fingerprint: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    batch_id: str | None = None  # its first request went through this provider batch
    batch_usage: Usage | None = None  # the part of `usage` paid at batch prices
    endpoints: list[str] = Field(default_factory=list)  # the endpoint of each live reply
    meta: dict[str, Any] = Field(default_factory=dict)
    #: "judged" here, or "imported" from another tool's finished evaluation
    origin: Literal["judged", "imported"] = "judged"
    arm: str | None = None  # the stress arm of the answer judged (None: unperturbed)
    ts: float = Field(default_factory=_now)

    @property
    def reasks(self) -> int:
        return max(0, len(self.outputs) - 1)

    def pair_models(self) -> tuple[str, str] | None:
        """(model_1, model_2) of a pairwise game (schema-1 records kept it in `meta`)."""
        if self.pair is not None:
            return self.pair
        legacy = self.meta.get("pair")
        if (
            isinstance(legacy, list)
            and len(legacy) == 2
            and all(isinstance(m, str) for m in legacy)
        ):
            return (legacy[0], legacy[1])
        return None

    def game_order(self) -> Order | None:
        if self.order is not None:
            return self.order
        legacy = self.meta.get("order")
        return legacy if legacy in ("AB", "BA") else None

    @property
    def is_game(self) -> bool:
        return self.pair_models() is not None


class FailureRecord(BaseModel):
    """A request that still failed after all retries. Not final: the next run retries it.

    It names its work by the same fields as the record that would have finished it (absent
    in schema-1 logs, whose failures carry only their key).
    """

    kind: Literal["failure"] = "failure"
    key: str
    #: what the request was for: "answer", "judgment", "user_turn", or the record kind of
    #: the role a driver names ("reply")
    stage: str
    error: str
    role: str | None = None  # the role asked ("model", a judge id, "user", a driver's role)
    attempts: int = 0
    model: str | None = None
    sample_id: SampleId | None = None
    turn: int | None = None
    group: str | None = None
    judge: str | None = None
    pair: tuple[str, str] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    arm: str | None = None  # the stress arm of the work (None: unperturbed)
    ts: float = Field(default_factory=_now)


class AttemptRecord(BaseModel):
    """An attempt that was sent and returned nothing (a timeout, a dropped connection, a 5xx):
    written the moment it failed, whether its request later succeeds or not, because a
    provider may bill it. It holds the attempt's worst case in tokens (its prompt at one
    token per UTF-8 byte plus chat overhead, its whole token limit: `costs.attempt_tokens`):
    results.json prices them as `unanswered_cost_usd_worst_case`, and --max-cost counts them,
    on resume too."""

    kind: Literal["attempt"] = "attempt"
    key: str  # the work (an answer's or a judgment's key) the attempt was for
    stage: str  # as a failure's
    role: str  # the role asked ("model", a judge id, "user", a driver's role)
    error: str  # why it returned nothing (short, redacted)
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    ts: float = Field(default_factory=_now)


class BatchRecord(BaseModel):
    """One step of a provider batch (`--judge-batch`, `--model-batch`), written the moment it
    happens, so a process killed at any point resumes the same batch instead of paying again.

    `creating`: about to ask the provider to create the batch; `batch` holds everything
    needed to find it again and to read its results (provider, endpoint, model, the input
    file, a submission token, each item's custom_id and sampling fields). `created`: the
    provider accepted it as `batch_id`. `ended`: it reached a final state (`state`, `counts`);
    informational, the item records are what count. All records of one submission share its
    `submission` id. Items are keyed by `batch_custom_id(key)` of the work they do.
    """

    kind: Literal["batch"] = "batch"
    key: str = ""  # keys.batch_event_key(submission, event) ("" in logs written before keys)
    event: Literal["creating", "created", "ended"]
    submission: str
    role: str  # "model" (answers) or the judge's id
    stage: Literal["answers", "judgments"]
    batch: dict[str, Any] | None = None  # creating: the BatchIntent
    batch_id: str | None = None  # created, ended
    state: str | None = None  # ended: the provider's final state
    counts: dict[str, int] = Field(default_factory=dict)
    ts: float = Field(default_factory=_now)


class EndRecord(BaseModel):
    """Written when an invocation ends by itself (finished, stopped by a budget, interrupted,
    stopped by a fatal error; `status`), its `ts` being the time its results.json reports.
    Without it a later invocation could only count this one's time up to its last piece of
    work, and a run's summed `wall_seconds` would shrink on resume. A killed invocation has
    none: its time runs to its last record."""

    kind: Literal["end"] = "end"
    key: str = ""  # keys.end_key(the invocation's config key)
    status: str
    ts: float = Field(default_factory=_now)


LogRecord = (
    ConfigRecord
    | AnswerRecord
    | JudgmentRecord
    | FailureRecord
    | AttemptRecord
    | BatchRecord
    | EndRecord
    | UserTurnRecord
    | StepRecord
    | SampleRecord
    | ReplyRecord
)
