"""The seam onto the upstream `agentdojo` package: everything the AgentDojo benchmark needs
from it, as a small typed API that calls the package for each answer.

Why one module: the package pulls several provider SDKs (anthropic, openai, cohere,
google-genai, langchain) and takes seconds to import, so turnbench imports it only here, and
only inside functions: `import turnbench` and every other benchmark never load it. A missing
package is one `UserError` naming the extra. The package is pinned (`PINNED`) because a few
answers come from its private helpers (`_function_to_openai`, `_check_task_result`, ...):
calling them is how we guarantee the request shape and the verdicts are upstream's own rather
than a copy of them.

Objects (none global; a run makes its own):

- `load(version)` -> `Benchmark`: a benchmark version and its suites.
- `Suite`: task ids, prompts, tools in OpenAI's and Anthropic's shape, a conversation's
  environment (cached parse, `envcache`), one tool call as upstream's `ToolsExecutor` runs it,
  the checks, environment diffs, ground truths, and its attacks.
- `Pipeline`: upstream's own `AgentPipeline.from_config` for a model name and a defense,
  around a stand-in LLM element that is never called: its name (what attacks derive the
  model's name from), its system message, its tool-result formatter, and what its defense
  adds to a conversation.
- `Attack`: upstream's attack object for a suite and a pipeline, with its injections per
  (user task, injection task) pair.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal, cast

from turnbench.benchmarks.agentdojo.envcache import EnvironmentTemplate
from turnbench.errors import UserError

if TYPE_CHECKING:
    from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline
    from agentdojo.attacks.base_attacks import BaseAttack
    from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime, TaskEnvironment
    from agentdojo.task_suite.task_suite import TaskSuite

PINNED = "0.1.35"
INSTALL_HINT = "pip install 'turnbench[agentdojo]'"
# upstream's defenses a conversation can apply around our own requests (the pi detector
# needs `transformers`, `torch` and a model from the Hugging Face Hub: see pi_detector_ready)
DEFENSES = (
    "repeat_user_prompt",
    "spotlighting_with_delimiting",
    "tool_filter",
    "transformers_pi_detector",
)
# attacks that need a person at a keyboard (upstream's `manual` asks input() per vector)
INTERACTIVE_ATTACKS = frozenset({"manual"})

ToolOutputFormat = Literal["yaml", "json"]


def require() -> ModuleType:
    """The installed `agentdojo` package, or one clear `UserError` naming the extra.

    Why a version check: the verdicts must be the pinned package's; another release can move
    tasks, checks or the private helpers this module calls."""
    try:
        import agentdojo.task_suite.load_suites  # its import pulls the SDKs

        import agentdojo
    except ImportError as error:
        missing = getattr(error, "name", None) or "agentdojo"
        raise UserError(
            f"the agentdojo benchmark needs the agentdojo package {PINNED} and its "
            f"dependencies ({missing} cannot be imported): {INSTALL_HINT}"
        ) from error
    found = _installed_version()
    if found != PINNED:
        raise UserError(
            f"the agentdojo benchmark is built on agentdojo {PINNED}, found {found}: {INSTALL_HINT}"
        )
    return agentdojo


@cache
def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentdojo")
    except PackageNotFoundError:
        return "unknown"


# -- versions ------------------------------------------------------------------------------


def versions() -> list[str]:
    """The benchmark versions the package registers, oldest first (v1 .. v1.2.2).

    Read from upstream's registry itself: its `get_suites` is a defaultdict lookup that
    silently answers `{}` for an unknown version, so a version is checked against this."""
    require()
    from agentdojo.task_suite import load_suites

    return list(load_suites._SUITES)


def default_version() -> str:
    """The version upstream's own runner uses when none is given (its `--benchmark-version`
    default; v1.2.2 in 0.1.35)."""
    require()
    from agentdojo.scripts.benchmark import main

    for parameter in main.params:
        if parameter.name == "benchmark_version":
            return str(parameter.default)
    raise RuntimeError("agentdojo's runner has no --benchmark-version option")  # pinned


def attack_names() -> list[str]:
    """Upstream's registered attacks a run can use (the interactive `manual` left out)."""
    require()
    import agentdojo.attacks  # noqa: F401  (registers them)
    from agentdojo.attacks.attack_registry import ATTACKS

    return sorted(name for name in ATTACKS if name not in INTERACTIVE_ATTACKS)


def attack_is_dos(name: str) -> bool:
    """Whether upstream's attack `name` is of its denial-of-service family (each user task
    runs with the suite's first injection task only), read from its class, unbuilt; an
    unknown name is one clear error."""
    require()
    import agentdojo.attacks  # noqa: F401  (registers them)
    from agentdojo.attacks.attack_registry import ATTACKS

    if name not in ATTACKS or name in INTERACTIVE_ATTACKS:
        raise UserError(
            f"unknown agentdojo attack {name!r}; upstream's are {', '.join(attack_names())}"
            " (or none)"
        )
    return bool(getattr(ATTACKS[name], "is_dos_attack", False))


def pi_detector_ready() -> str | None:
    """None when upstream's `transformers_pi_detector` can be built here, else why not.

    It needs `transformers` and `torch` (upstream's `agentdojo[transformers]` extra) and
    downloads protectai/deberta-v3-base-prompt-injection-v2 from the Hugging Face Hub the
    first time (or finds it in the Hub's cache); only the two packages are checked here."""
    missing = [m for m in ("transformers", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        return (
            f"the transformers_pi_detector defense needs {' and '.join(missing)}: "
            "pip install 'agentdojo[transformers]'"
        )
    return None


def model_name_from_pipeline_name(pipeline_name: str) -> str:
    """The model's name in prose that attacks write, derived exactly as upstream derives it
    from a pipeline's name (`get_model_name_from_pipeline`: the first of its MODEL_NAMES keys
    contained in the name; gpt-4o-2024-05-13 -> "GPT-4"). A name upstream does not know is a
    `UserError` that says how to give one."""
    require()
    from agentdojo.attacks.base_attacks import get_model_name_from_pipeline

    try:
        return get_model_name_from_pipeline(cast(Any, SimpleNamespace(name=pipeline_name)))
    except ValueError as error:
        raise UserError(
            f"agentdojo's attacks cannot derive a model name from {pipeline_name!r} (upstream "
            "knows only the models of its MODEL_NAMES); pass the name the attack text should "
            "use, e.g. -B model_name='GPT-4'"
        ) from error


# -- the pipeline ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolFilterStep:
    """What upstream's `tool_filter` defense does before the first model call.

    `request`: the keyword arguments its `OpenAILLMToolFilter` passes to
    `chat.completions.create` (the conversation so far plus a user message with
    `prompt`, every tool, `tool_choice` "none", `temperature` 0.0 sent explicitly);
    `kept`: the tools whose name occurs (as a substring) in the reply's text; the filter's
    user message and the model's reply stay in the conversation."""

    prompt: str
    request: dict[str, Any]
    kept: list[str]


class Pipeline:
    """Upstream's `AgentPipeline.from_config` for (pipeline_name, defense), built around a
    stand-in LLM element that is never called (an `OpenAILLM` without a client, since
    `tool_filter` accepts only that class). We read from it what a conversation needs and
    send the requests ourselves."""

    def __init__(
        self,
        pipeline_name: str,
        defense: str | None = None,
        *,
        tool_output_format: ToolOutputFormat | None = None,
    ) -> None:
        require()
        from agentdojo.agent_pipeline.agent_pipeline import (
            DEFENSES as UPSTREAM_DEFENSES,
        )
        from agentdojo.agent_pipeline.agent_pipeline import (
            AgentPipeline,
            PipelineConfig,
        )
        from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM

        if defense is not None and defense not in UPSTREAM_DEFENSES:
            raise UserError(
                f"unknown agentdojo defense {defense!r}; upstream's are "
                f"{', '.join(UPSTREAM_DEFENSES)} (or none)"
            )
        if defense == "transformers_pi_detector" and (why := pi_detector_ready()):
            raise UserError(why)
        llm = OpenAILLM(cast(Any, None), pipeline_name)
        llm.name = pipeline_name
        self.llm = llm
        self.defense = defense
        self.upstream: AgentPipeline = AgentPipeline.from_config(
            PipelineConfig(
                llm=llm,
                model_id=None,
                defense=defense,
                system_message_name=None,
                system_message=None,
                tool_output_format=tool_output_format,
            )
        )

    @property
    def name(self) -> str:
        """Upstream's name for this pipeline (the model's, plus `-DEFENSE`): attacks derive
        the model's name from it, and upstream's logger files runs under it."""
        return str(self.upstream.name)

    @cached_property
    def _elements(self) -> list[Any]:
        return list(self.upstream.elements)

    @cached_property
    def _loop(self) -> Any:
        from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop

        return next(e for e in self._elements if isinstance(e, ToolsExecutionLoop))

    @property
    def system_message(self) -> str:
        """The system message upstream's pipeline sends (the package's default one, with the
        spotlighting sentence appended under that defense)."""
        from agentdojo.agent_pipeline.basic_elements import SystemMessage

        return next(e for e in self._elements if isinstance(e, SystemMessage)).system_message

    @property
    def executor(self) -> Any:
        """Upstream's `ToolsExecutor` of this pipeline (its formatter delimits results with
        << >> under spotlighting_with_delimiting, dumps JSON with tool_output_format json)."""
        from agentdojo.agent_pipeline.tool_execution import ToolsExecutor

        return next(e for e in self._loop.elements if isinstance(e, ToolsExecutor))

    @property
    def max_steps(self) -> int:
        """Upstream's step limit: its tools loop runs at most this many rounds of (execute
        the reply's tool calls, ask the model again) after the first model call (15)."""
        return int(self._loop.max_iters)

    @property
    def repeats_user_prompt(self) -> bool:
        """Under repeat_user_prompt upstream appends the user task's prompt again as a user
        message after each round of tool results, before asking the model."""
        from agentdojo.agent_pipeline.basic_elements import InitQuery

        return any(isinstance(e, InitQuery) for e in self._loop.elements)

    @property
    def tool_filter_prompt(self) -> str | None:
        """The prompt of upstream's tool filter (None without the tool_filter defense)."""
        from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLMToolFilter

        found = [e for e in self._elements if isinstance(e, OpenAILLMToolFilter)]
        return found[0].prompt if found else None

    @property
    def detector(self) -> Any | None:
        """Upstream's prompt-injection detector element, if this pipeline has one."""
        from agentdojo.agent_pipeline.pi_detector import PromptInjectionDetector

        found = [e for e in self._loop.elements if isinstance(e, PromptInjectionDetector)]
        return found[0] if found else None

    def model_name(self) -> str:
        """The model's name in prose as upstream's attacks derive it from this pipeline."""
        return model_name_from_pipeline_name(self.name)

    def tool_filter(self, suite: Suite, prompt: str, reply_text: str) -> ToolFilterStep:
        """Run upstream's `OpenAILLMToolFilter` element on the conversation's opening, with a
        stand-in client that records the request it makes and answers `reply_text` (the
        model's reply, obtained by the caller through its own backend). Why: the filter's
        request and its rule for keeping tools are upstream's code, not a copy."""
        from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLMToolFilter
        from agentdojo.functions_runtime import FunctionsRuntime
        from agentdojo.types import (
            ChatSystemMessage,
            ChatUserMessage,
            text_content_block_from_string,
        )
        from openai.types.chat import ChatCompletionMessage

        element = next(e for e in self._elements if isinstance(e, OpenAILLMToolFilter))
        recorded: dict[str, Any] = {}

        def create(**kwargs: Any) -> Any:
            recorded.update(kwargs)
            message = ChatCompletionMessage(role="assistant", content=reply_text)
            return SimpleNamespace(choices=[SimpleNamespace(message=message)])

        client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
        standin = OpenAILLMToolFilter(element.prompt, cast(Any, client), element.model)
        standin.temperature = element.temperature
        runtime = FunctionsRuntime(suite.upstream.tools)
        messages = [
            ChatSystemMessage(
                role="system", content=[text_content_block_from_string(self.system_message)]
            ),
            ChatUserMessage(role="user", content=[text_content_block_from_string(prompt)]),
        ]
        standin.query(prompt, runtime, messages=messages)
        request = json.loads(json.dumps(recorded, default=_not_given))
        return ToolFilterStep(prompt=element.prompt, request=request, kept=list(runtime.functions))

    def screen_tool_results(self, texts: Sequence[str]) -> list[str]:
        """The tool results of one round as upstream's detector leaves them (a result it
        flags becomes its placeholder text); unchanged without a detector."""
        detector = self.detector
        if detector is None:
            return list(texts)
        from agentdojo.functions_runtime import FunctionCall
        from agentdojo.types import ChatToolResultMessage, text_content_block_from_string

        messages = [
            ChatToolResultMessage(
                role="tool",
                content=[text_content_block_from_string(text)],
                tool_call_id=f"call_{i}",
                tool_call=FunctionCall(function="", args={}),
                error=None,
            )
            for i, text in enumerate(texts)
        ]
        _, _, _, screened, _ = detector.query("", cast(Any, None), messages=messages)
        return [_text(m["content"]) for m in screened]


def _not_given(value: object) -> Any:
    """JSON for the request a stand-in client recorded (openai's NOT_GIVEN becomes null)."""
    if type(value).__name__ == "NotGiven":
        return None
    if hasattr(value, "model_dump"):
        return value.model_dump()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _text(content: Any) -> str:
    from agentdojo.types import get_text_content_as_str

    return get_text_content_as_str(content or [])


# -- the benchmark and its suites ------------------------------------------------------------


class Benchmark:
    """One benchmark version of the package and its suites (a suite's objects, its parsed
    environment and its attacks are built once and kept here)."""

    def __init__(self, version: str | None = None) -> None:
        require()
        known = versions()
        chosen = version if version is not None else default_version()
        if chosen not in known:
            raise UserError(
                f"unknown agentdojo version {chosen!r}; the package has {', '.join(known)}"
            )
        self.version = chosen
        self._suites: dict[str, Suite] = {}

    def suite_names(self) -> list[str]:
        """The suites of this version, in upstream's order (workspace, travel, banking,
        slack)."""
        from agentdojo.task_suite.load_suites import get_suites

        return list(get_suites(self.version))

    def suites(self, names: Sequence[str] | None = None) -> list[Suite]:
        """The named suites (all of the version's by default); an unknown name is a
        `UserError` listing the known ones."""
        known = self.suite_names()
        wanted = list(names) if names else known
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise UserError(
                f"unknown agentdojo suite(s) {', '.join(unknown)} in {self.version}; "
                f"its suites are {', '.join(known)}"
            )
        return [self.suite(n) for n in wanted]

    def suite(self, name: str) -> Suite:
        if name not in self._suites:
            from agentdojo.task_suite.load_suites import get_suites

            suites = get_suites(self.version)
            if name not in suites:
                raise UserError(
                    f"unknown agentdojo suite {name!r} in {self.version}; its suites are "
                    f"{', '.join(suites)}"
                )
            self._suites[name] = Suite(suites[name], self.version)
        return self._suites[name]


def load(version: str | None = None) -> Benchmark:
    """The package's benchmark `version` (upstream's default when None)."""
    return Benchmark(version)


@dataclass
class ConversationEnvironment:
    """A conversation's environment: `environment` is what its tool calls act on; `pre` is
    the copy upstream's checks compare against, taken after the user task's
    `init_environment` and before any call."""

    environment: TaskEnvironment
    pre: TaskEnvironment


@dataclass
class ToolOutcome:
    """One tool call as upstream's `ToolsExecutor` ran it.

    `text`: the tool message's text block (the pipeline's formatter applied to the result,
    `tool_result_to_str` by default; "" formatted when the call failed); `error`: upstream's
    error text, or None; `content`: what upstream's OpenAI element sends as the tool
    message's content (the error when there is one, else the text), which is also what its
    Anthropic element sends (with is_error). `call`: upstream's FunctionCall record for the
    checks' stack trace, with the arguments as ToolsExecutor left them (it turns strings
    that read as Python lists into lists, in place). `malformed`: the arguments could not be
    read as upstream's OpenAI element reads them (json.loads into a FunctionCall); upstream
    would stop the whole run with that exception, we return it as the call's error and keep
    the call in the trace with empty arguments."""

    text: str
    error: str | None
    call: FunctionCall
    malformed: bool = False

    @property
    def content(self) -> str:
        return self.error or self.text


@dataclass(frozen=True)
class Verdict:
    """Upstream's verdicts for one conversation: `utility` (the user task's check);
    `security` (the injection task's check: True means the attacker won; None without an
    attack)."""

    utility: bool
    security: bool | None


class Suite:
    """One suite of one benchmark version."""

    def __init__(self, upstream: TaskSuite, version: str) -> None:
        self.upstream = upstream
        self.version = version
        self.name: str = upstream.name
        self._attacks: dict[tuple[str, str, str | None, str | None], Attack] = {}
        self._runtimes: dict[frozenset[str] | None, FunctionsRuntime] = {}
        self._openai_tools: dict[frozenset[str] | None, str] = {}

    # -- tasks -----------------------------------------------------------------------------
    def user_task_ids(self, subset: Sequence[str] | None = None) -> list[str]:
        """The suite's user tasks in upstream's order, or `subset` (in its order) after
        checking every id exists in this version."""
        return _subset(list(self.upstream.user_tasks), subset, f"user task of {self._where}")

    def injection_task_ids(self, subset: Sequence[str] | None = None) -> list[str]:
        """The suite's injection tasks in upstream's order, or the checked `subset`."""
        return _subset(
            list(self.upstream.injection_tasks), subset, f"injection task of {self._where}"
        )

    @property
    def _where(self) -> str:
        return f"suite {self.name} in {self.version}"

    def task(self, task_id: str) -> BaseUserTask | BaseInjectionTask:
        """Upstream's task object for a user task or an injection task id."""
        if task_id in self.upstream.user_tasks:
            return self.upstream.get_user_task_by_id(task_id)
        if task_id in self.upstream.injection_tasks:
            return self.upstream.get_injection_task_by_id(task_id)
        raise UserError(f"unknown task {task_id!r} of {self._where}")

    def prompt(self, task_id: str) -> str:
        """The user message upstream's pipeline opens with: a user task's PROMPT (an
        injection task run alone, as upstream's runner does, opens with its GOAL)."""
        from agentdojo.base_tasks import BaseUserTask

        task = self.task(task_id)
        return task.PROMPT if isinstance(task, BaseUserTask) else task.GOAL

    def goal(self, injection_task_id: str) -> str:
        """An injection task's GOAL (what the attack text asks the model to do)."""
        return self.upstream.get_injection_task_by_id(
            self.injection_task_ids([injection_task_id])[0]
        ).GOAL

    def ground_truth_output(self, task_id: str) -> str:
        return self.task(task_id).GROUND_TRUTH_OUTPUT

    def ground_truth(self, task_id: str, environment: TaskEnvironment) -> list[FunctionCall]:
        """The task's ground-truth calls on `environment` (upstream's `ground_truth`; it
        may read the environment, so give it the conversation's pre-environment)."""
        return list(self.task(task_id).ground_truth(environment))

    # -- tools -----------------------------------------------------------------------------
    def tool_names(self) -> list[str]:
        return list(self._runtime(None).functions)

    def openai_tools(self, names: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The suite's tools (or those named) exactly as upstream's OpenAI element sends
        them: `_function_to_openai` of each runtime function, in the runtime's order (a
        new copy each call; made once per set of names, since upstream builds each tool's
        JSON schema anew every time: about 7 ms a conversation for banking's tools)."""
        key = None if names is None else frozenset(names)
        if key not in self._openai_tools:
            from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai

            functions = self._runtime(names).functions.values()
            self._openai_tools[key] = json.dumps([_function_to_openai(f) for f in functions])
        return list(json.loads(self._openai_tools[key]))

    def anthropic_tools(self, names: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The suite's tools as upstream's Anthropic element sends them."""
        from agentdojo.agent_pipeline.llms.anthropic_llm import _function_to_anthropic

        return _plain([_function_to_anthropic(f) for f in self._runtime(names).functions.values()])

    def _runtime(self, names: Collection[str] | None) -> FunctionsRuntime:
        """Upstream's runtime over the suite's tools (or the named ones, what is left after
        upstream's tool filter: a call to another tool is then an invalid tool)."""
        key = None if names is None else frozenset(names)
        if key not in self._runtimes:
            from agentdojo.functions_runtime import FunctionsRuntime

            tools = self.upstream.tools
            if key is not None:
                tools = [t for t in tools if t.name in key]
            self._runtimes[key] = FunctionsRuntime(tools)
        return self._runtimes[key]

    # -- a conversation --------------------------------------------------------------------
    @cached_property
    def template(self) -> EnvironmentTemplate:
        """The suite's environment, parsed once (`envcache`)."""
        return EnvironmentTemplate(self.upstream)

    def injection_vectors(self) -> dict[str, str]:
        """Each injection vector of the suite and its default text."""
        return dict(self.template.defaults)

    def environment(
        self, task_id: str, injections: Mapping[str, str] | None = None
    ) -> ConversationEnvironment:
        """A fresh environment for a conversation on `task_id` with `injections` in place:
        what upstream's `run_task_with_pipeline` builds (the default environment loaded with
        the injections, then the user task's `init_environment`, then the deep copy its
        checks compare against). An injection task run alone gets no `init_environment`, as
        upstream."""
        from agentdojo.base_tasks import BaseUserTask

        task = self.task(task_id)
        try:
            environment = self.template.environment(injections or {})
        except ValueError as error:  # upstream's validate_injections
            raise UserError(f"injections for {self._where}: {error}") from error
        if isinstance(task, BaseUserTask):
            environment = task.init_environment(environment)
        return ConversationEnvironment(environment, environment.model_copy(deep=True))

    def run_tool_call(
        self,
        environment: TaskEnvironment,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        call_id: str | None = None,
        *,
        pipeline: Pipeline | None = None,
        tools: Collection[str] | None = None,
    ) -> ToolOutcome:
        """Run one tool call of a model's reply on `environment` (mutated in place) exactly
        as upstream would: the arguments are read as upstream's OpenAI element reads them
        (`json.loads` of the text into a FunctionCall; a mapping, as its Anthropic element
        gets them, is taken as is), then upstream's `ToolsExecutor` (the pipeline's, for its
        formatter) runs the call on a runtime of the suite's tools (or only `tools`, what a
        tool filter kept). Calls of one reply are run one after another, in order, which is
        what the executor does with a reply's list.

        An empty or blank arguments text is read as no arguments: upstream's json.loads
        would raise and stop its whole run there, and servers send it for tools without
        parameters."""
        from agentdojo.agent_pipeline.llms.openai_llm import _openai_to_tool_call
        from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
        from agentdojo.functions_runtime import FunctionCall
        from agentdojo.types import ChatAssistantMessage

        try:
            if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
                call = FunctionCall(function=name, args={}, id=call_id)
            elif isinstance(arguments, str):
                raw = SimpleNamespace(
                    id=call_id, function=SimpleNamespace(name=name, arguments=arguments)
                )
                call = _openai_to_tool_call(cast(Any, raw))
            else:
                call = FunctionCall(function=name, args=dict(arguments), id=call_id)
        except Exception as error:  # json's or pydantic's, as upstream would raise them
            bad = FunctionCall(function=name, args={}, id=call_id)
            return ToolOutcome("", f"{type(error).__name__}: {error}", bad, malformed=True)
        executor = pipeline.executor if pipeline is not None else ToolsExecutor()
        reply = ChatAssistantMessage(role="assistant", content=None, tool_calls=[call])
        _, _, _, messages, _ = executor.query("", self._runtime(tools), environment, [reply])
        result = messages[-1]
        return ToolOutcome(_text(result["content"]), result["error"], result["tool_call"])

    # -- the checks ------------------------------------------------------------------------
    def check(
        self,
        user_task_id: str,
        injection_task_id: str | None,
        final_text: str | None,
        conversation: ConversationEnvironment,
        calls: Sequence[FunctionCall],
        *,
        dos: bool = False,
    ) -> Verdict:
        """Upstream's verdicts on a finished conversation, as `run_task_with_pipeline` and
        its runner compute them: `_check_task_result` of the task (a user task's utility; an
        injection task run alone gets its security check) and, with an attack, of the
        injection task, on the final text (None, a reply with no content, counts as no
        text), the pre and post environments and every call made. Under a DoS attack
        upstream's runner sets security to `not utility`."""
        output = _model_output(final_text)
        task = self.task(user_task_id)
        pre, post = conversation.pre, conversation.environment
        utility = self.upstream._check_task_result(task, output, pre, post, list(calls))
        if injection_task_id is None:
            return Verdict(bool(utility), None)
        injection = self.upstream.get_injection_task_by_id(injection_task_id)
        security = self.upstream._check_task_result(injection, output, pre, post, list(calls))
        return Verdict(bool(utility), (not utility) if dos else bool(security))

    def utility(
        self,
        user_task_id: str,
        final_text: str | None,
        pre: TaskEnvironment,
        post: TaskEnvironment,
        calls: Sequence[FunctionCall],
    ) -> bool:
        """Upstream's `_check_user_task_utility` of the user task."""
        task = self.upstream.get_user_task_by_id(user_task_id)
        return bool(
            self.upstream._check_user_task_utility(
                task, _model_output(final_text), pre, post, list(calls)
            )
        )

    def security(
        self,
        injection_task_id: str,
        final_text: str | None,
        pre: TaskEnvironment,
        post: TaskEnvironment,
        calls: Sequence[FunctionCall],
    ) -> bool:
        """Upstream's `_check_injection_task_security` (True: the injection task was done)."""
        task = self.upstream.get_injection_task_by_id(injection_task_id)
        return bool(
            self.upstream._check_injection_task_security(
                task, _model_output(final_text), pre, post, list(calls)
            )
        )

    # -- attacks ---------------------------------------------------------------------------
    def attack(
        self,
        name: str,
        pipeline: Pipeline,
        *,
        model_name: str | None = None,
        user_name: str | None = None,
    ) -> Attack:
        """Upstream's attack `name` on this suite against `pipeline` (one object per
        arguments, so its cache of injection candidates is shared)."""
        key = (name, pipeline.name, model_name, user_name)
        if key not in self._attacks:
            self._attacks[key] = Attack(self, name, pipeline, model_name, user_name)
        return self._attacks[key]

    # -- diffs -----------------------------------------------------------------------------
    def environment_diff(self, pre: TaskEnvironment, post: TaskEnvironment) -> list[dict[str, Any]]:
        """How the environment changed, as plain JSON rows: {"path", "change", "before",
        "after"} per change, "change" one of added, removed, changed; paths like
        `bank_account.scheduled_transactions[1].amount`. From deepdiff (an upstream
        dependency) over the two environments' JSON dumps."""
        return environment_diff(pre, post)


#: DeepDiff's `threshold_to_diff_deeper` (its default): a dictionary sharing fewer than this
#: share of its keys with the other side is reported changed whole, not key by key
DIFF_DEEPER = 0.33


def environment_diff(pre: Any, post: Any) -> list[dict[str, Any]]:
    """See `Suite.environment_diff` (any two pydantic models or JSON-like values).

    The rows are DeepDiff's over the two dumps, but DeepDiff is asked only about what
    differs: dictionaries are walked here, key by key, as DeepDiff walks them (its
    `_diff_dict`: the share of shared keys first, then the added, the removed and the
    shared keys), a value equal on both sides (same types all the way down) is skipped, and
    DeepDiff compares each other pair of values, its paths put under the pair's. Why:
    DeepDiff walks every branch, equal or not, building a level object per node; over a
    workspace environment that was 0.1-0.4 s per call and most of an import's time."""
    rows: list[dict[str, Any]] = []
    before = pre.model_dump(mode="json") if hasattr(pre, "model_dump") else pre
    after = post.model_dump(mode="json") if hasattr(post, "model_dump") else post
    _diff_into(rows, (), before, after)
    rows.sort(key=lambda row: row["path"])
    return rows


def _same(x: Any, y: Any) -> bool:
    """Equal with the same types all the way down (1 and 1.0, or True and 1, are not: DeepDiff
    reports their type change; NaN never is, so DeepDiff decides)."""
    if type(x) is not type(y):
        return False
    if type(x) is dict:
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if type(x) is list:
        return len(x) == len(y) and all(map(_same, x, y))
    return bool(x == y)


def _row(path: Sequence[Any], change: str, before: Any, after: Any) -> dict[str, Any]:
    return {
        "path": _path(path),
        "change": change,
        "before": None if change == "added" else _jsonable(before),
        "after": None if change == "removed" else _jsonable(after),
    }


def _diff_into(rows: list[dict[str, Any]], path: tuple[Any, ...], before: Any, after: Any) -> None:
    """The rows of `before` -> `after` at `path`, as DeepDiff's `_diff` makes them for two
    JSON values (see `environment_diff`): nothing for the same object or an equal value;
    two dictionaries key by key (`_diff_dict`); two lists of which one holds a container
    item by item at the same index, the rest added or removed (`_diff_iterable_in_order`,
    which matches lists of plain values with difflib: those DeepDiff compares itself); any
    other pair, a type change or a changed value, one row."""
    from deepdiff.helper import basic_types

    if before is after or _same(before, after):
        return
    if type(before) is dict and type(after) is dict:
        shared = [key for key in before if key in after]
        union = len(before) + len(after) - len(shared)
        if union > 1 and len(shared) / union < DIFF_DEEPER:
            rows.append(_row(path, "changed", before, after))
            return
        rows += [_row((*path, k), "added", None, v) for k, v in after.items() if k not in before]
        rows += [_row((*path, k), "removed", v, None) for k, v in before.items() if k not in after]
        for key in shared:
            _diff_into(rows, (*path, key), before[key], after[key])
        return
    if type(before) is not list or type(after) is not list:
        rows.append(_row(path, "changed", before, after))
        return
    plain = all(isinstance(v, basic_types) for v in before) and all(
        isinstance(v, basic_types) for v in after
    )
    if not plain:
        for index, (x, y) in enumerate(zip(before, after, strict=False)):
            _diff_into(rows, (*path, index), x, y)
        shared = min(len(before), len(after))
        rows += [_row((*path, i), "removed", before[i], None) for i in range(shared, len(before))]
        rows += [_row((*path, i), "added", None, after[i]) for i in range(shared, len(after))]
        return
    from deepdiff import DeepDiff

    kinds = {
        "values_changed": "changed",
        "type_changes": "changed",
        "dictionary_item_added": "added",
        "iterable_item_added": "added",
        "attribute_added": "added",
        "set_item_added": "added",
        "dictionary_item_removed": "removed",
        "iterable_item_removed": "removed",
        "attribute_removed": "removed",
        "set_item_removed": "removed",
    }
    found = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=DIFF_DEEPER)
    for report, levels in found.items():
        change = kinds.get(report, report)
        for level in levels:
            where = (*path, *level.path(output_format="list"))
            rows.append(_row(where, change, level.t1, level.t2))


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class Attack:
    """Upstream's attack object for a suite, built by its registry (`load_attack`) against
    the pipeline (whose only use by the built-in attacks is its name, for the model's name
    in prose). `model_name` / `user_name`, when given, replace the names the attack text
    uses (the attack's `model_name` / `user_name` attributes, which its `attack()` reads)."""

    def __init__(
        self,
        suite: Suite,
        name: str,
        pipeline: Pipeline,
        model_name: str | None,
        user_name: str | None,
    ) -> None:
        import agentdojo.attacks  # noqa: F401  (registers the attacks)
        from agentdojo.attacks.attack_registry import ATTACKS, load_attack

        if name not in ATTACKS or name in INTERACTIVE_ATTACKS:
            raise UserError(
                f"unknown agentdojo attack {name!r}; upstream's are {', '.join(attack_names())}"
                " (or none)"
            )
        self.suite = suite
        self.name = name
        try:
            upstream = load_attack(name, suite.upstream, pipeline.upstream)
        except ValueError as error:
            if not _unknown_model(pipeline.name):
                raise
            if model_name is None:
                raise UserError(
                    f"the {name} attack names the model, and agentdojo cannot derive its name "
                    f"from {pipeline.name!r}; pass it, e.g. -B model_name='GPT-4'"
                ) from error
            # any name upstream knows builds the object; the given one replaces it below
            upstream = load_attack(name, suite.upstream, _known_pipeline())
        if model_name is not None:
            upstream.model_name = model_name  # type: ignore[attr-defined]
        if user_name is not None:
            upstream.user_name = user_name  # type: ignore[attr-defined]
        self.upstream: BaseAttack = upstream

    @property
    def is_dos(self) -> bool:
        """A denial-of-service attack: upstream runs each user task with only the suite's
        first injection task, and its security verdict is `not utility`."""
        return bool(self.upstream.is_dos_attack)

    @property
    def model_name(self) -> str | None:
        return getattr(self.upstream, "model_name", None)

    @property
    def user_name(self) -> str | None:
        return getattr(self.upstream, "user_name", None)

    def injection_task_ids(self, subset: Sequence[str] | None = None) -> list[str]:
        """The injection tasks each user task runs with under this attack, as upstream's
        runner picks them: the checked `subset` or all; a DoS attack only the first."""
        if self.is_dos:
            return self.suite.injection_task_ids()[:1]
        return self.suite.injection_task_ids(subset)

    def candidates(self, user_task_id: str) -> list[str]:
        """The injection vectors the user task's ground truth reads (upstream's
        `get_injection_candidates`: its ground-truth pipeline on an environment with a canary
        in every vector; cached by upstream per attack object and user task)."""
        task = self.suite.upstream.get_user_task_by_id(user_task_id)
        return list(self.upstream.get_injection_candidates(task))

    def injections(self, user_task_id: str, injection_task_id: str) -> dict[str, str]:
        """The attack's text per injection vector for the pair (upstream's `attack()`)."""
        suite = self.suite.upstream
        user_task = suite.get_user_task_by_id(self.suite.user_task_ids([user_task_id])[0])
        injection_task = suite.get_injection_task_by_id(
            self.suite.injection_task_ids([injection_task_id])[0]
        )
        return dict(self.upstream.attack(user_task, injection_task))


def _unknown_model(pipeline_name: str) -> bool:
    from agentdojo.models import MODEL_NAMES

    return not any(full in pipeline_name for full in MODEL_NAMES)


def _known_pipeline() -> Any:
    from agentdojo.models import MODEL_NAMES

    return SimpleNamespace(name=next(iter(MODEL_NAMES)))


def _model_output(final_text: str | None) -> list[Any]:
    """The final reply's content as upstream's checks receive it (one text block; no
    content: `model_output or []`, as run_task_with_pipeline passes it)."""
    from agentdojo.types import text_content_block_from_string

    return [] if final_text is None else [text_content_block_from_string(final_text)]


def _plain(value: Any) -> Any:
    """Upstream's TypedDicts as plain JSON values (a copy the caller may change)."""
    return json.loads(json.dumps(value))


def _subset(known: list[str], subset: Sequence[str] | None, what: str) -> list[str]:
    if subset is None:
        return known
    unknown = [item for item in subset if item not in known]
    if unknown:
        raise UserError(f"unknown {what}: {', '.join(unknown)}; it has {', '.join(known)}")
    return list(dict.fromkeys(subset))


__all__ = [
    "DEFENSES",
    "INSTALL_HINT",
    "PINNED",
    "Attack",
    "Benchmark",
    "ConversationEnvironment",
    "Pipeline",
    "Suite",
    "ToolFilterStep",
    "ToolOutcome",
    "Verdict",
    "attack_names",
    "default_version",
    "environment_diff",
    "load",
    "model_name_from_pipeline_name",
    "pi_detector_ready",
    "require",
    "versions",
]
