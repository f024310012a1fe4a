"""turnbench: evaluate chat models in multi-turn dialogue with an LLM judge.

The Python API (see `turnbench.api`):

    from turnbench import evaluate, judge_answers, load_run
    result = evaluate("openai/my-model", model_base_url="http://127.0.0.1:8000/v1",
                      judge="openai/gpt-4o", out="runs/mine", limit=1)

Names are imported on first use, so `import turnbench` (and the command line's start-up)
stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: Bumped whenever the layout of results.json or of the run log changes incompatibly.
SCHEMA_VERSION = 2

_API = {
    "evaluate": "turnbench.api",
    "aevaluate": "turnbench.api",
    "judge_answers": "turnbench.api",
    "ajudge_answers": "turnbench.api",
    "estimate": "turnbench.api",
    "load_run": "turnbench.api",
    "aload_run": "turnbench.api",
    "RunResult": "turnbench.session",
    "FinishedRun": "turnbench.store.rundir",
    "EvalOptions": "turnbench.options",
    "Benchmark": "turnbench.benchmarks.base",
    "BenchmarkSettings": "turnbench.benchmarks.base",
    "Sample": "turnbench.benchmarks.base",
    "Turn": "turnbench.benchmarks.base",
    "JudgeTask": "turnbench.benchmarks.base",
    "JudgedTurn": "turnbench.benchmarks.base",
    "ScoreTables": "turnbench.benchmarks.tables",
    "UserError": "turnbench.errors",
}

__all__ = ["SCHEMA_VERSION", "__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'turnbench' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
