"""The public Python API: evaluate a model, judge existing answers, load a finished run.

    from turnbench import evaluate, load_run
    result = evaluate(model="openai/my-model", model_base_url=["http://127.0.0.1:8000/v1"],
                      judge="openai/gpt-4o", out="runs/mine", limit=1)
    print(result.overall, result.complete)
    run = load_run("runs/mine")
    frame = run.to_pandas()          # one row per judged turn (needs pandas)

Every keyword is a flag of `turnbench run` / `turnbench judge` with dashes as underscores
(`turnbench.options.EvalOptions` lists them). Nothing prints unless asked: pass
`progress=callback` to follow the work (called with the stage, "answers" or "judgments",
and the outcome of each finished item) and `warn=callback` for warnings (they are also
collected in `result.warnings`). The `a...` versions are coroutines for code that already
runs an event loop (a notebook); the plain versions refuse to run inside one, because they
would have to start a second loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import Benchmark
from turnbench.benchmarks.options import option_flags
from turnbench.benchmarks.recorded import named_benchmark
from turnbench.engine.estimate import Estimate
from turnbench.engine.progress import Progress
from turnbench.errors import UserError
from turnbench.options import EvalOptions, JudgeOption, build_options
from turnbench.session import EXIT_INCOMPLETE as EXIT_INCOMPLETE
from turnbench.session import EXIT_OK as EXIT_OK
from turnbench.session import Mode, RunResult, Session
from turnbench.session import Prepared as Prepared
from turnbench.session import Warn as Warn
from turnbench.store.rundir import FinishedRun, load_finished_run

ProgressCallback = Callable[[str, str], None]
WarnCallback = Callable[[str], None]


class _CallbackProgress(Progress):
    def __init__(self, callback: ProgressCallback) -> None:
        self._callback = callback

    def advance(self, stage: str, outcome: str = "ok") -> None:
        self._callback(stage, outcome)


def _options(benchmark: str | type[Benchmark], values: dict[str, Any]) -> EvalOptions:
    reference = benchmark
    if isinstance(benchmark, Benchmark):
        raise UserError(
            f"benchmark= takes the Benchmark class, not an instance: pass "
            f"benchmark={type(benchmark).__qualname__} (turnbench builds it with the run's "
            "settings, and records where the class comes from so a resume finds it again)"
        )
    if isinstance(benchmark, type):
        if not issubclass(benchmark, Benchmark):
            raise UserError(f"benchmark={benchmark!r} is not a turnbench Benchmark subclass")
        reference = f"{benchmark.__module__}:{benchmark.__qualname__}"
    given = dict(values.pop("benchmark_options", None) or {})
    for flag in option_flags():  # a benchmark option by its flag's name: context="self"
        if flag.name in values:
            value = values.pop(flag.name)
            if flag.name in given and given[flag.name] != value:
                raise UserError(f"{flag.name}= and benchmark_options[{flag.name!r}] disagree")
            given[flag.name] = value
    values["benchmark_options"] = given
    for key in ("out", "answers", "data_dir"):
        if isinstance(values.get(key), str):
            values[key] = Path(values[key])
    if isinstance(values.get("answers"), list | tuple):
        values["answers"] = [Path(a) if isinstance(a, str) else a for a in values["answers"]]
    for key in ("model_base_url", "user_base_url"):
        if isinstance(values.get(key), str):
            values[key] = [values[key]]
    judge_urls = values.pop("judge_base_url", None)
    judge_key = values.pop("judge_api_key_env", None)
    if judge_urls is not None or judge_key is not None:
        judges = values.get("judge")
        if not isinstance(judges, str):
            raise UserError(
                "judge_base_url= and judge_api_key_env= need a single judge=SPEC; for a panel, "
                "pass judge=[JudgeOption(spec=..., base_urls=(...,)), ...]"
            )
        urls = (judge_urls,) if isinstance(judge_urls, str) else tuple(judge_urls or ())
        values["judge"] = [JudgeOption(spec=judges, base_urls=urls, api_key_env=judge_key)]
    return build_options(benchmark=reference, **values)


def _session(
    mode: str,
    options: EvalOptions,
    progress: ProgressCallback | Progress | None,
    warn: WarnCallback | None,
) -> Session:
    sink = progress if isinstance(progress, Progress) or progress is None else None
    if progress is not None and sink is None:
        sink = _CallbackProgress(progress)  # type: ignore[arg-type]
    return Session(options, mode, warn=warn, progress=sink)  # type: ignore[arg-type]


def new_session(
    options: EvalOptions,
    mode: Mode,
    *,
    warn: Warn | None = None,
    progress: Progress | None = None,
    progress_factory: Callable[[dict[str, Any]], Progress] | None = None,
    handle_signals: bool = False,
    announce: Callable[[str], None] | None = None,
) -> Session:
    """One evaluation from options already validated, for a caller that draws its own
    progress and owns the process's signals (the command line): the same session the
    functions below run. Its `estimate()` plans the work without sending; `await run()`
    runs it."""
    return Session(
        options,
        mode,
        warn=warn,
        progress=progress,
        progress_factory=progress_factory,
        handle_signals=handle_signals,
        announce=announce,
    )


def _no_running_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"turnbench.{name}() was called inside a running event loop (a notebook?); "
        f"use `await turnbench.a{name}(...)` there instead"
    )


async def aevaluate(
    model: str | None = None,
    *,
    benchmark: str | type[Benchmark] = "mt-bench",
    judge: str | list[str] | None = None,
    out: str | Path | None = None,
    user: str | None = None,
    progress: ProgressCallback | Progress | None = None,
    warn: WarnCallback | None = None,
    **options: Any,
) -> RunResult:
    """Generate `model`'s answers and judge them; the run directory `out` resumes. `user`:
    the simulated user's model (`--user-model`), for benchmarks whose conversations take
    one; its endpoint is `user_base_url=`."""
    values = build_values(model=model, judge=judge, out=out, **_with_user(user, options))
    session = _session("run", _options(benchmark, values), progress, warn)
    return await session.run()


async def ajudge_answers(
    answers: str | Path | list[str | Path],
    *,
    benchmark: str | type[Benchmark] = "mt-bench",
    judge: str | list[str] | None = None,
    out: str | Path | None = None,
    mode: str = "single",
    baseline: str | None = None,
    progress: ProgressCallback | Progress | None = None,
    warn: WarnCallback | None = None,
    **options: Any,
) -> RunResult:
    """Judge answers that already exist (an answer file, a folder of them, or a run; a list
    of those for several)."""
    values = build_values(
        answers=answers, judge=judge, out=out, mode=mode, baseline=baseline, **options
    )
    session = _session("judge", _options(benchmark, values), progress, warn)
    return await session.run()


def evaluate(model: str | None = None, **kwargs: Any) -> RunResult:
    """`aevaluate` for code without a running event loop (scripts)."""
    _no_running_loop("evaluate")
    return asyncio.run(aevaluate(model, **kwargs))


def judge_answers(answers: str | Path | list[str | Path], **kwargs: Any) -> RunResult:
    """`ajudge_answers` for code without a running event loop (scripts)."""
    _no_running_loop("judge_answers")
    return asyncio.run(ajudge_answers(answers, **kwargs))


def estimate(
    model: str | None = None,
    *,
    benchmark: str | type[Benchmark] = "mt-bench",
    mode: str = "run",
    user: str | None = None,
    **options: Any,
) -> Estimate:
    """What a run (or, with `answers=`, a judge-only run) would send; nothing is sent.
    `user`: the simulated user's model, as for `evaluate` (its requests are counted)."""
    session_mode = "judge" if options.get("answers") is not None else mode
    values = build_values(model=model, **_with_user(user, options))
    session = Session(_options(benchmark, values), session_mode)  # type: ignore[arg-type]
    return session.estimate()[1]


def load_run(path: str | Path, benchmark: str | type[Benchmark] | None = None) -> FinishedRun:
    """A finished (or still running) run directory, read without locking or changing it.

    Code a run directory names is never imported: a run of a plug-in benchmark (one written
    outside turnbench) needs `benchmark=` (the class, or "package.module:ClassName") for what
    its rules decide (`turns()`, its group columns); it must be the one the run recorded."""
    named = named_benchmark(benchmark) if benchmark is not None else None
    return load_finished_run(Path(path), named)


async def aload_run(
    path: str | Path, benchmark: str | type[Benchmark] | None = None
) -> FinishedRun:
    """`load_run` without blocking the event loop while the log is read."""
    return await asyncio.to_thread(load_run, path, benchmark)


def _with_user(user: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """`options` with `user=` as the `user_model` option it names."""
    if user is None:
        return options
    if options.get("user_model") not in (None, user):
        raise UserError("user= and user_model= disagree")
    return {**options, "user_model": user}


def build_values(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
