"""`turnbench import --format agentdojo`: a folder as AgentDojo's own logger writes it,
re-scored here by upstream's checks.

The folder holds one pipeline's runs: `SUITE/USER_TASK/ATTACK/INJECTION_TASK.json` for a
user task under an attack, `SUITE/USER_TASK/none/none.json` for it alone (what utility is
measured on); each file has the conversation (`messages`), the injections in place
(`injections`) and upstream's verdicts (`utility`, `security`). A folder with several
attacks is imported one attack at a time (`-B attack=NAME`). Files are read as upstream
reads them (its `TaskResults`, old files converted by its own code), each checked against
the place it was found in.

Each conversation is replayed: a fresh environment of its suite with its recorded
injections, its tool calls run in order through upstream's executor, then upstream's
checks on its final text; the records are a run's (the opening, the model's steps with the
messages it was sent, the tool calls as steps with their replayed results, one sample
record with the typed outcome). The verdicts the file recorded are kept beside the
replayed ones (`recorded_utility`, `recorded_security`): results.json gives the three
numbers both ways and lists every conversation whose replayed verdict differs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import BenchmarkSettings
from turnbench.benchmarks.datafiles import DataLocator, sha256_file
from turnbench.benchmarks.imports import Imported, ImportOptions
from turnbench.engine.drivers.tool_agent import ANSWERED, STEP_LIMIT, Call
from turnbench.engine.history import Thread, reply_message
from turnbench.errors import UserError
from turnbench.record_keys import answer_key, sample_key, tool_step_key, user_turn_key
from turnbench.safetext import plain
from turnbench.textio import read_json
from turnbench.types import AnswerRecord, LogRecord, SampleRecord, StepRecord, UserTurnRecord

NONE = "none"
MAX_FILES = 100_000


def read_runs(source: Path, options: ImportOptions, locator: DataLocator) -> Imported:
    """Read a folder of AgentDojo runs into the records of its conversations (nothing is
    written; every problem is one clear error naming the file)."""
    from turnbench.benchmarks.agentdojo import upstream
    from turnbench.benchmarks.agentdojo.benchmark import AgentDojoBench, sample_id

    upstream.require()
    where = plain(str(source))
    if not source.is_dir():
        raise UserError(f"{where}: give the folder of one pipeline's runs (SUITE/USER_TASK/...)")
    suites = sorted(
        path.name for path in source.iterdir() if path.is_dir() and not path.is_symlink()
    )
    attack = _attack(source, suites, options.benchmark_options.get("attack"))
    files = _files(source, suites, attack)
    if not files:
        raise UserError(
            f"{where}: no runs of attack {attack!r} here (SUITE/user_task_N/{attack}/*.json)"
        )
    runs = [_read(path, source) for path in files]
    version = _one(source, "benchmark_version", runs) or options.benchmark_options.get("version")
    pipeline = _one(source, "pipeline_name", runs) or ""
    model = options.model_name or pipeline or source.name
    given = {k: v for k, v in options.benchmark_options.items() if k != "attack"}
    present = sorted({run["suite_name"] for run in runs})
    narrowed = _user_tasks(version, present, runs)
    settings = BenchmarkSettings(
        parser="strict",
        limit=None,
        answer=None,
        model=pipeline or model,
        options={
            **({"version": version} if version else {}),
            "suites": ",".join(present),
            **narrowed,
            "attack": attack,
            **given,
        },
    )
    benchmark = AgentDojoBench({}, settings)
    samples = {sample.id: sample for sample in benchmark.all_samples()}
    records: list[LogRecord] = []
    differ = 0
    scored: list[str] = []
    for path, run in zip(files, runs, strict=True):
        injection = run["injection_task_id"]
        key = sample_id(run["suite_name"], run["user_task_id"], injection)
        sample = samples.get(key)
        if sample is None:
            raise UserError(
                f"{plain(str(path))}: {key} is not a conversation of agentdojo {benchmark.version}"
            )
        replay = _Replay(benchmark, model, sample, run)
        records += replay.records()
        differ += replay.differs
        scored.append(key)
    notes = [
        f"{len(runs)} conversations re-scored by replaying their tool calls on their suite's "
        f"environment with their recorded injections (agentdojo {upstream.PINNED}, "
        f"{benchmark.version})",
        f"{differ} of {len(runs)} replayed verdicts differ from the recorded ones (results.json: "
        "replay_differs)",
    ]
    return Imported(
        benchmark=benchmark,
        judge="",
        answer_sets=[],
        judgments=[],
        source={
            "format": "agentdojo",
            "files": {str(path.relative_to(source)): sha256_file(path) for path in files},
        },
        notes=notes,
        model=model,
        records=records,
        scored_ids=scored,
    )


def _user_tasks(version: str | None, present: list[str], runs: list[dict[str, Any]]) -> dict:
    """The `user_tasks` option that narrows the plan to the user tasks the folder holds, when
    one list can say it. The option names the same ids in every suite, and each suite refuses
    an id it lacks, so for a folder of several suites whose tasks differ (every folder of all
    four suites) the list is left out and each suite is planned whole: its conversations the
    folder lacks are then missing from the import, not an error."""
    from turnbench.benchmarks.agentdojo import upstream

    user_tasks = sorted({run["user_task_id"] for run in runs})
    bench = upstream.load(version)
    for name in present:
        if not set(user_tasks) <= set(bench.suite(name).user_task_ids()):
            return {}
    return {"user_tasks": ",".join(user_tasks)}


def _attack(source: Path, suites: list[str], given: str | None) -> str:
    """The attack to import: the one named, else the only one the folder holds."""
    found = {
        attack.name
        for suite in suites
        for task in (source / suite).iterdir()
        if task.is_dir() and task.name.startswith("user_task_")
        for attack in task.iterdir()
        if attack.is_dir() and attack.name != NONE
    }
    if given is not None:
        return str(given)
    if len(found) > 1:
        raise UserError(
            f"{plain(str(source))} holds runs of {len(found)} attacks "
            f"({', '.join(sorted(found))}); import one at a time with -B attack=NAME"
        )
    return next(iter(found), NONE)


def _files(source: Path, suites: list[str], attack: str) -> list[Path]:
    """The run files of the attack (and of the user tasks alone), in a stable order; an
    injection task run alone is not a conversation of the three numbers."""
    files: list[Path] = []
    for suite in suites:
        tasks = sorted(
            (p for p in (source / suite).iterdir() if p.name.startswith("user_task_")),
            key=lambda p: _number(p.name),
        )
        for task in tasks:
            folders = [task / NONE] + ([task / attack] if attack != NONE else [])
            for folder in folders:
                if not folder.is_dir():
                    continue
                found = sorted(folder.glob("*.json"), key=lambda p: _number(p.stem))
                if folder.name == NONE:
                    found = [p for p in found if p.name == "none.json"]
                files += found
                if len(files) > MAX_FILES:
                    raise UserError(f"{plain(str(source))}: more than {MAX_FILES} run files")
    return files


def _number(name: str) -> tuple[int, str]:
    tail = name.rsplit("_", 1)[-1]
    return (int(tail), name) if tail.isdigit() else (-1, name)


def _read(path: Path, source: Path) -> dict[str, Any]:
    """One run file as upstream reads it (its TaskResults), checked against its place."""
    from agentdojo.benchmark import TaskResults, convert_old_messages_format
    from pydantic import ValidationError

    shown = plain(str(path))
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise UserError(f"{shown}: expected a JSON object (an AgentDojo run file)")
    try:
        if "agentdojo_package_version" not in raw and isinstance(raw.get("messages"), list):
            raw["messages"] = convert_old_messages_format(raw["messages"])
        results = TaskResults(**raw)
    except (ValidationError, ValueError, TypeError, KeyError, AttributeError) as error:
        problem = str(error).splitlines()[0][:300]
        raise UserError(f"{shown}: not an AgentDojo run file ({plain(problem)})") from None
    parts = path.relative_to(source).parts
    suite, task, attack, name = parts[0], parts[1], parts[2], path.stem
    expected_injection = None if name == NONE else name
    expected_attack = None if attack == NONE else attack
    if (
        results.suite_name != suite
        or results.user_task_id != task
        or results.injection_task_id != expected_injection
        or (results.attack_type or None) != expected_attack
    ):
        raise UserError(
            f"{shown}: the file names {results.suite_name}/{results.user_task_id}/"
            f"{results.attack_type}/{results.injection_task_id}, not the place it is in"
        )
    found = results.model_dump()
    found["benchmark_version"] = raw.get("benchmark_version")
    return found


def _one(source: Path, name: str, runs: list[dict[str, Any]]) -> str | None:
    """A value every file shares (the benchmark version, the pipeline), or None."""
    values = {run.get(name) for run in runs if run.get(name)}
    if len(values) > 1:
        raise UserError(
            f"{plain(str(source))}: its files are of {len(values)} different {name}s "
            f"({', '.join(sorted(map(str, values)))}); import one at a time"
        )
    return next(iter(values), None)


def _text(content: Any) -> str:
    """A message's text blocks joined as upstream joins them."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(block.get("content") or "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


class _Replay:
    """One recorded conversation replayed: its records and its verdicts."""

    def __init__(self, benchmark: Any, model: str, sample: Any, run: dict[str, Any]) -> None:
        self.benchmark = benchmark
        self.model = model
        self.sample = sample
        self.run = run
        self.differs = 0

    def records(self) -> list[LogRecord]:
        from turnbench.benchmarks.agentdojo.task import DojoTask, fields

        model, sample, run = self.model, self.sample, self.run
        suite_name, user_task, injection_task = sample.source
        suite = self.benchmark._suites[suite_name]
        task = DojoTask(
            suite, self.benchmark.pipeline, user_task, injection_task,
            run["attack_type"] or "none", run["injections"] if injection_task else {},
            dos=self.benchmark.dos,
        )  # fmt: skip
        state = task.fresh()
        records: list[LogRecord] = []
        sent: list[dict[str, Any]] = []  # the model's view of the conversation so far
        thread = Thread()
        calls: list[Call] = []
        steps = 0
        opened = False
        last: dict[str, Any] | None = None
        for message in run["messages"]:
            role = message.get("role")
            text = _text(message.get("content"))
            if role == "system":
                sent.append({"role": "system", "content": text})
            elif role == "user":
                if not opened:
                    opened = True
                    records.append(
                        UserTurnRecord(
                            key=user_turn_key(model, sample.id, 1, 0), model=model,
                            sample_id=sample.id, turn=1, group=sample.group, origin="imported",
                            text=text, trial=0, at=len(sent),
                        )
                    )  # fmt: skip
                sent.append({"role": "user", "content": text})
            elif role == "assistant":
                steps += 1
                last = message
                made = [
                    {"id": str(call.get("id") or f"call_{steps}_{number}"), "type": "function",
                     "function": {"name": str(call.get("function") or ""),
                                  "arguments": json.dumps(call.get("args") or {})}}
                    for number, call in enumerate(message.get("tool_calls") or [])
                ]  # fmt: skip
                key = answer_key(model, sample.id, steps, trial=0)
                after, kept = thread.appended(sent)  # type: ignore[arg-type]
                records.append(
                    AnswerRecord(
                        key=key, model=model, sample_id=sample.id, turn=steps,
                        group=sample.group, origin="imported", text=text, messages=kept,
                        after=after, trial=0, tool_calls=made or None, at=len(sent),
                    )
                )  # fmt: skip
                reply = reply_message(text, made or None)
                thread.logged(key, sent, reply)  # type: ignore[arg-type]
                sent.append(dict(reply))
                for number, call in enumerate(made):
                    name, arguments = call["function"]["name"], call["function"]["arguments"]
                    outcome = task.call(state, name, arguments)
                    records.append(
                        StepRecord(
                            key=tool_step_key(model, sample.id, steps, 0, number), model=model,
                            sample_id=sample.id, turn=steps, trial=0, group=sample.group,
                            call=number, name=name, call_id=call["id"], output=outcome.output,
                            at=len(sent) + number,
                        )
                    )  # fmt: skip
                    calls.append(Call(call["id"], name, arguments, outcome.output, steps, number))
            elif role == "tool":
                sent.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(message.get("tool_call_id") or ""),
                        "content": str(message.get("error") or "") or text,
                    }
                )
        answered = last is not None and not last.get("tool_calls") and run["messages"][-1] is last
        ended = ANSWERED if answered else STEP_LIMIT
        said = [_text(last.get("content"))] if answered and last is not None else []
        scored = task.score(state, said, ended, calls)
        outcome = scored.outcome
        assert outcome is not None
        outcome.recorded_utility = bool(run["utility"])
        outcome.recorded_security = bool(run["security"]) if injection_task else None
        if outcome.utility != outcome.recorded_utility or (
            injection_task is not None and outcome.security != outcome.recorded_security
        ):
            self.differs = 1
        records.append(
            SampleRecord(
                key=sample_key(model, sample.id, 0), model=model, sample_id=sample.id, trial=0,
                group=sample.group, score=scored.score, ended=ended, steps=steps,
                detail=outcome.model_dump(mode="json"), **fields(outcome),
            )
        )  # fmt: skip
        return records
