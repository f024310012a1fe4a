"""`turnbench import --format tau-bench`: the trajectory files tau-bench's own runner writes,
re-scored here.

Upstream's `run.py` writes a JSON list of `{task_id, trial, reward, info, traj}`, `traj` the
agent's messages in OpenAI's chat format (the policy as system message, the user's
messages, the agent's messages with `tool_calls`, `role: "tool"` results). Each
trajectory becomes the records of one conversation, as a turnbench run keeps them (the
agent's steps, the user's turns, the tool calls as local steps, one sample record), and is
scored again by replaying its tool calls on a fresh database (only the first call of a
message counts, as upstream's agent runs it): the recomputed reward stands beside the
recorded one (`recorded_reward`). A trajectory that did not end as upstream requires (the
user's `###STOP###`, or a terminating tool) scores 0 whatever its database, as upstream's
own runner would have kept it: reward 0.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from turnbench.backends.replies import NO_ARGUMENTS, arguments_text
from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.datafiles import DataLocator, sha256_file
from turnbench.benchmarks.imports import Imported, ImportOptions
from turnbench.benchmarks.options import MAX_SIMULATIONS
from turnbench.benchmarks.tau_bench.database import DatabaseState
from turnbench.benchmarks.tau_bench.reward import reward
from turnbench.benchmarks.tau_bench.user import user_prompt
from turnbench.engine.drivers.tool_agent import STEP_LIMIT, TERMINATING_TOOL, USER_STOP
from turnbench.engine.history import Thread, reply_message
from turnbench.errors import UserError
from turnbench.record_keys import answer_key, sample_key, tool_step_key, user_turn_key
from turnbench.safetext import plain
from turnbench.textio import read_json
from turnbench.types import AnswerRecord, LogRecord, SampleRecord, StepRecord, UserTurnRecord

#: how a trajectory that stopped without the user's word or a terminating tool is recorded
CUT_OFF = "cut_off"
#: upstream's file names: {strategy}-{model}-{temperature}_range_{start}-{end}_user-...
_FILE_NAME = re.compile(r"^(?:tool-calling|act|react|few-shot)-(?P<model>.+)-[0-9.]+_range_")
MAX_TRAJECTORIES = 100_000


class _Trajectory(BaseModel):
    """One entry of upstream's results file (only what re-scoring reads)."""

    model_config = ConfigDict(extra="ignore")

    task_id: int
    trial: int = 0
    reward: float | None = None
    traj: list[dict[str, Any]]


def _check_trial(
    source: Path, number: int, entry: _Trajectory, seen: dict[tuple[int, int], int]
) -> None:
    """Refuse an entry whose trial is no trial number, or whose (task_id, trial) an earlier
    entry holds already. Upstream numbers a task's trials 0, 1, ...; the file's highest
    trial sets the run's trials (pass^k for k up to it), so a trial is bounded as
    --simulations is, and it is the file that is wrong, not a flag. Two entries of one
    (task_id, trial) would be read as one conversation, spliced, and scored by file order."""
    where = f"{plain(str(source))}: entry {number}"
    if not 0 <= entry.trial < MAX_SIMULATIONS:
        raise UserError(
            f"{where}: trial {entry.trial} is not a trial number (0 to {MAX_SIMULATIONS - 1}: "
            f"trials are counted from 0, at most {MAX_SIMULATIONS} per task)"
        )
    pair = (entry.task_id, entry.trial)
    if pair in seen:
        raise UserError(
            f"{where}: task_id {entry.task_id} trial {entry.trial} is already entry "
            f"{seen[pair]}: a file holds each trial of a task once (give the entries "
            "distinct trials, or import them separately)"
        )
    seen[pair] = number


def _model_name(path: Path, options: ImportOptions) -> str:
    if options.model_name:
        return options.model_name
    found = _FILE_NAME.match(path.stem)
    return found.group("model") if found else path.stem


def read_trajectories(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    """Read a tau-bench results file into the records of its conversations (nothing is
    written; every problem is one clear error naming the file and the entry)."""
    from turnbench.benchmarks import benchmark_class

    if options.benchmark not in ("tau-bench-airline", "tau-bench-retail"):
        raise UserError(
            "--format tau-bench needs --benchmark tau-bench-airline or tau-bench-retail (the "
            "domain the trajectories were run in)"
        )
    if source.is_dir():
        raise UserError(f"{plain(str(source))}: give the trajectory file itself, not a folder")
    raw = read_json(source)
    if not isinstance(raw, list) or len(raw) > MAX_TRAJECTORIES:
        raise UserError(f"{plain(str(source))}: expected a JSON list of trajectories")
    entries = []
    seen: dict[tuple[int, int], int] = {}  # (task_id, trial) -> the entry that holds it
    for number, item in enumerate(raw):
        try:
            entry = _Trajectory.model_validate(item)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise UserError(
                f"{plain(str(source))}: entry {number}: {where}: {problem['msg']}"
            ) from None
        _check_trial(source, number, entry, seen)
        entries.append(entry)
    cls = benchmark_class(options.benchmark)
    trials = max((entry.trial for entry in entries), default=0) + 1
    files = cls.locate_files(locator)
    benchmark = cls(
        files,
        BenchmarkSettings(
            parser="strict", limit=None, answer=None, options={"simulations": trials}
        ),
    )
    model = _model_name(source, options)
    records: list[LogRecord] = []
    notes: list[str] = []
    disagree = 0
    tasks = benchmark.tau.tasks
    for number, entry in enumerate(entries):
        if not 0 <= entry.task_id < len(tasks):
            raise UserError(
                f"{plain(str(source))}: entry {number}: task_id {entry.task_id} is not a task of "
                f"the {benchmark.split} split ({len(tasks)} tasks)"
            )
        conversation = _Replay(benchmark, model, entry)
        found = conversation.records()
        if conversation.recorded != conversation.score:
            disagree += 1
        records += found
    samples = {entry.task_id for entry in entries}
    notes.append(
        f"{len(entries)} trajectories of {len(samples)} tasks x {trials} trial(s) re-scored by "
        "replaying their tool calls"
    )
    if disagree:
        notes.append(
            f"{disagree} recomputed rewards differ from the recorded ones (both are kept: "
            "`reward` and `recorded_reward` in each sample record)"
        )
    return Imported(
        benchmark=benchmark,
        judge="",
        answer_sets=[],
        judgments=[],
        source={"format": "tau-bench", "files": {source.name: sha256_file(source)}},
        notes=notes,
        model=model,
        records=records,
        scored_ids=sorted(samples),
    )


class _Replay:
    """One trajectory replayed: its records, its ending, its recomputed reward."""

    def __init__(self, benchmark: Any, model: str, entry: _Trajectory) -> None:
        self.benchmark = benchmark
        self.model = model
        self.entry = entry
        self.sample = benchmark.all_samples()[entry.task_id]
        self.recorded = entry.reward
        self.score: float | None = None

    def records(self) -> list[LogRecord]:
        benchmark, model, entry, sample = self.benchmark, self.model, self.entry, self.sample
        trial = entry.trial
        domain = benchmark.tau
        state = DatabaseState.fresh(domain.base)
        traj = [m for m in entry.traj if isinstance(m, dict)]
        records: list[LogRecord] = []
        agent_thread = Thread()
        sent: list[dict[str, Any]] = []  # the agent's conversation so far
        said: list[str] = []  # the agent's messages to the user
        user_turn = steps = 0
        ended = CUT_OFF
        terminating = domain.tools.terminating
        stop = user_prompt()["stop"]
        for message in traj:
            role = message.get("role")
            content = message.get("content")
            text = content if isinstance(content, str) else ""
            if role == "system":
                sent.append({"role": "system", "content": text})
            elif role == "user":
                user_turn += 1
                ended = USER_STOP if stop in text else CUT_OFF
                records.append(
                    UserTurnRecord(
                        key=user_turn_key(model, sample.id, user_turn, trial),
                        model=model,
                        sample_id=sample.id,
                        turn=user_turn,
                        group=sample.group,
                        origin="imported",
                        text=text,
                        trial=trial,
                        ended="stop" if stop in text else None,
                    )
                )
                sent.append({"role": "user", "content": text})
            elif role == "assistant":
                steps += 1
                calls = [c for c in (message.get("tool_calls") or []) if isinstance(c, dict)][:1]
                call = _call(calls[0], steps) if calls else None
                key = answer_key(model, sample.id, steps, trial=trial)
                # (the thread is given `sent` itself, which only grows: a copy per message
                # made a trajectory of n messages cost n squared)
                after, kept = agent_thread.appended(sent)  # type: ignore[arg-type]
                records.append(
                    AnswerRecord(
                        key=key,
                        model=model,
                        sample_id=sample.id,
                        turn=steps,
                        group=sample.group,
                        origin="imported",
                        text=text,
                        messages=list(kept),
                        after=after,
                        trial=trial,
                        tool_calls=[call] if call else None,
                    )
                )
                reply = reply_message(text, [call] if call else None)
                agent_thread.logged(key, sent, reply)  # type: ignore[arg-type]
                sent.append(reply)
                if call is None:
                    said.append(text)
                    ended = CUT_OFF
                else:
                    name = call["function"]["name"]
                    result = domain.tools.call(state, name, call["function"]["arguments"])
                    ended = TERMINATING_TOOL if name in terminating else CUT_OFF
                    records.append(
                        StepRecord(
                            key=tool_step_key(model, sample.id, steps, trial),
                            model=model,
                            sample_id=sample.id,
                            turn=steps,
                            trial=trial,
                            group=sample.group,
                            name=name,
                            call_id=call["id"],
                            arguments=call["function"]["arguments"],
                            output=result.output,
                        )
                    )
            elif role == "tool":
                sent.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(message.get("tool_call_id") or ""),
                        "content": text,
                    }
                )
        if ended == CUT_OFF and steps >= benchmark.max_steps:
            ended = STEP_LIMIT
        gold = domain.gold(sample.source)
        result = reward(state, gold, list(sample.source.outputs), said, ended)
        self.score = result.reward
        records.append(
            SampleRecord(
                key=sample_key(model, sample.id, trial),
                model=model,
                sample_id=sample.id,
                trial=trial,
                group=sample.group,
                score=result.reward,
                ended=ended,
                steps=steps,
                detail={**result.model_dump(mode="json"), "recorded_reward": self.recorded},
                task_id=int(sample.id),
                reward=result.reward,
                recorded_reward=self.recorded,
            )
        )
        return records


def _call(raw: dict[str, Any], step: int) -> dict[str, Any]:
    """A recorded tool call in OpenAI's shape (an id made when none; the arguments as the
    live paths keep them, `replies.arguments_text`: an array or null as its JSON text,
    refused where the call is replayed, never run as `{}`)."""
    function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    name = function.get("name") if isinstance(function.get("name"), str) else ""
    arguments = arguments_text(function.get("arguments", NO_ARGUMENTS))
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else f"call_{step}"
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
