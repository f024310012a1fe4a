"""One llama.cpp model and its generation loop (runs inside the worker process).

The loop is turnbench's own, over llama-cpp-python's `Llama.generate` token generator,
rather than `create_chat_completion`, because it needs three things that call cannot give
together:

- cancellation that stops at the next token even under a grammar (forcing the end-of-text
  token, the old trick, is refused by a grammar that is not finished, and llama.cpp aborts
  the process when every candidate is masked);
- log probabilities without `logits_all=True`, which would keep 8192 x 49152 floats
  (1.6 GB) of logits: a logits processor records the distribution at each step instead;
- exact token counts.

The chat template is still llama-cpp-python's: `create_chat_completion` is called with
its `create_completion` replaced by a function that captures the formatted prompt tokens
and stop strings, then aborts (see `format_prompt`). `Llama.generate` reuses the longest
prefix of the previous prompt already in the KV cache, which the parent's
PrefixAffinityGate arranges to be long.

This module imports llama_cpp and numpy lazily, so the parent process never loads
llama.cpp's native code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# sampling fields accepted from RequestParams (temperature, max_tokens) and `extra`
SAMPLING_FIELDS = (
    "temperature",
    "max_tokens",
    "seed",
    "stop",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
)
DEFAULT_TEMPERATURE = 0.2  # what llama-cpp-python's create_chat_completion used before
N_BATCH = 256  # measured fastest prompt reading on 2 cores


@dataclass
class Generation:
    """The result of one generation, as sent back over the worker's pipe."""

    text: str
    finish_reason: str  # "stop", "length" or "cancelled"
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "logprobs": self.logprobs,
        }


class _PromptCaptured(Exception):
    """Raised by the stand-in create_completion once it holds the formatted prompt."""

    def __init__(self, prompt: list[int], stop: list[str]) -> None:
        super().__init__("prompt captured")
        self.prompt = prompt
        self.stop = stop


@dataclass
class _StepRecorder:
    """A logits processor that keeps the last step's logits (the raw model distribution,
    before penalties, temperature and grammar) so the loop can read logprobs from it."""

    last: Any = None
    calls: int = field(default=0)

    def __call__(self, _input_ids: Any, scores: Any) -> Any:
        import numpy as np

        self.last = np.array(scores, dtype=np.float64)  # a copy: `scores` is C memory
        self.calls += 1
        return scores


class LlamaEngine:
    def __init__(
        self, model_path: str, *, n_ctx: int = 8192, n_threads: int = 1, seed: int = 0
    ) -> None:
        from llama_cpp import Llama

        self.seed = seed
        self.llm = Llama(
            model_path=model_path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_batch=N_BATCH,
            n_ubatch=N_BATCH,
            flash_attn=True,
            seed=seed,
            verbose=False,
        )

    # -- prompt ----------------------------------------------------------------------------
    def format_prompt(self, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
        """Prompt tokens and stop strings, exactly as create_chat_completion would use them."""
        llm = self.llm

        def capture(*_args: Any, prompt: Any = None, stop: Any = None, **_kwargs: Any) -> Any:
            stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
            raise _PromptCaptured(list(prompt), stops)

        llm.create_completion = capture  # an instance attribute shadows the method
        try:
            llm.create_chat_completion(messages=messages, max_tokens=1)
        except _PromptCaptured as captured:
            return captured.prompt, captured.stop
        finally:
            del llm.create_completion
        raise RuntimeError("the chat handler did not call create_completion")

    # -- generation ------------------------------------------------------------------------
    def generate(
        self,
        messages: list[dict[str, str]],
        options: dict[str, Any],
        *,
        grammar: str | None = None,
        top_logprobs: int | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Generation:
        """One chat completion. Raises ValueError when the prompt does not fit the context."""
        import llama_cpp

        llm = self.llm
        prompt, stops = self.format_prompt(messages)
        stops = stops + _as_list(options.get("stop"))
        n_ctx = llm.n_ctx()
        if len(prompt) >= n_ctx:
            raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {n_ctx}")
        room = n_ctx - len(prompt)
        max_tokens = options.get("max_tokens")
        max_tokens = room if not max_tokens or max_tokens <= 0 else min(int(max_tokens), room)
        llm.set_seed(int(options["seed"]) if options.get("seed") is not None else self.seed)

        recorder = _StepRecorder() if top_logprobs else None
        sampling = {
            "temp": float(
                DEFAULT_TEMPERATURE
                if options.get("temperature") is None
                else options["temperature"]
            ),
            **{
                name: options[name]
                for name in (
                    "top_p",
                    "top_k",
                    "min_p",
                    "typical_p",
                    "repeat_penalty",
                    "presence_penalty",
                    "frequency_penalty",
                )
                if options.get(name) is not None
            },
        }
        tokens = llm.generate(
            prompt,
            **sampling,
            logits_processor=llama_cpp.LogitsProcessorList([recorder]) if recorder else None,
            grammar=llama_cpp.LlamaGrammar.from_string(grammar, verbose=False) if grammar else None,
        )
        vocab = llm._model.vocab
        completion: list[int] = []
        logprobs: list[dict[str, Any]] | None = [] if recorder else None
        finish_reason = "length"
        text_bytes = b""
        try:
            for token in tokens:
                if cancelled():
                    finish_reason = "cancelled"
                    break
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    finish_reason = "stop"
                    break
                if recorder is not None and logprobs is not None:
                    logprobs.append(self._token_logprobs(recorder, token, top_logprobs))
                completion.append(token)
                if stops:
                    text_bytes += llm.detokenize([token])
                    text = text_bytes.decode("utf-8", errors="ignore")
                    hits = [text.index(s) for s in stops if s and s in text]
                    if hits:
                        finish_reason = "stop"
                        return self._result(
                            text[: min(hits)], finish_reason, prompt, completion, logprobs
                        )
                if len(completion) >= max_tokens:
                    break
        finally:
            tokens.close()
        text_bytes = llm.detokenize(completion)
        return self._result(
            text_bytes.decode("utf-8", errors="ignore"), finish_reason, prompt, completion, logprobs
        )

    @staticmethod
    def _result(
        text: str,
        finish_reason: str,
        prompt: list[int],
        completion: list[int],
        logprobs: list[dict[str, Any]] | None,
    ) -> Generation:
        return Generation(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=len(prompt),
            completion_tokens=len(completion),
            logprobs=logprobs,
        )

    def _token_logprobs(
        self,
        recorder: _StepRecorder,
        token: int,
        k: int | None,
    ) -> dict[str, Any]:
        """The sampled token's text and log probability, and the `k` most likely tokens."""
        import numpy as np

        logits = recorder.last
        if logits is None:  # no step recorded (should not happen): report nothing invented
            return {"token": self._piece(token), "logprob": math.nan, "top": []}
        peak = float(logits.max())
        log_total = peak + math.log(float(np.exp(logits - peak).sum()))
        k = max(0, min(int(k or 0), logits.shape[0]))
        top_ids = np.argpartition(-logits, k - 1)[:k] if k else np.array([], dtype=int)
        top_ids = top_ids[np.argsort(-logits[top_ids], kind="stable")]
        return {
            "token": self._piece(token),
            "logprob": float(logits[token]) - log_total,
            "top": [
                {"token": self._piece(int(i)), "logprob": float(logits[i]) - log_total}
                for i in top_ids
            ],
        }

    def _piece(self, token: int) -> str:
        return self.llm.detokenize([token]).decode("utf-8", errors="replace")

    def system_info(self) -> str:
        import llama_cpp

        return llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if close is not None:
            close()


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]
