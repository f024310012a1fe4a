"""A finished run that nothing has changed since: its results again, without re-reading it.

Re-running the command of a complete run sends nothing, yet rebuilding its results means
reading the whole log (an 8-model MT-Bench-101 run writes over 180 MB), every answer file and
the benchmark data, and scoring it all again: many seconds for an answer known in advance.
So the invocation that finishes a run with nothing left to do writes `results.state.json`
beside results.json: a digest of everything the results were computed from (the settings,
turnbench's own code, the versions of Python and numpy, the benchmark data, the answer and
side files, the log) and of results.json itself. The next invocation with the same digests
returns that results.json.

Every input is compared by content (SHA-256), never by time stamps, so a copied or touched
run directory is simply recomputed, and any change (one log line, one answer, a new
turnbench, another flag) recomputes everything. The state is written only after a clean
finish: every planned item done, no warning raised, no provider batch involved. What this
trusts is what the results are built from anyway: a run directory that someone else wrote
can claim any results either way (a crafted log is as easy to write as a crafted state);
delete `results.state.json` to have them recomputed from the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from turnbench.benchmarks.answers import answer_sources, is_run_dir
from turnbench.errors import RunDirectoryError, UserError
from turnbench.journal.runlog import LOG_NAME, open_regular
from turnbench.options import EvalOptions
from turnbench.store.resultsfile import RESULTS_NAME, write_file_atomically
from turnbench.textio import MAX_INPUT_BYTES, input_sha256, stream_sha256

STATE_NAME = "results.state.json"
STATE_LIMIT = 1 << 16  # a state file is a few hundred bytes; a larger one is not ours
RESULTS_LIMIT = 1 << 30  # results.json of thousands of models is still far below this
_OPTIONS = TypeAdapter(EvalOptions)


class RunState(BaseModel):
    """results.state.json: what the results of a complete run were computed from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal[1] = 1
    inputs: str  # input_digest() of the invocation that wrote it
    log_sha256: str
    results_sha256: str


def _open_run_file(path: Path) -> BinaryIO | None:
    """A run directory's own file, opened as the log is (no link followed, regular files
    only); None when it is missing or refused."""
    try:
        fd = open_regular(path, os.O_RDONLY, missing_ok=True)
    except RunDirectoryError:
        return None
    return None if fd is None else os.fdopen(fd, "rb")


def _read_run_file(path: Path, limit: int) -> bytes | None:
    """At most `limit` bytes of a run directory's own file (`_open_run_file`); None when it
    is missing, refused, unreadable or longer."""
    handle = _open_run_file(path)
    if handle is None:
        return None
    try:
        with handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def run_file_sha256(path: Path) -> str | None:
    """The SHA-256 of a run directory's own file (read in pieces: a log can be large), or
    None as `_read_run_file`."""
    handle = _open_run_file(path)
    if handle is None:
        return None
    try:
        with handle:
            return stream_sha256(handle)
    except OSError:
        return None


def _input_file_sha256(path: Path) -> str:
    """A file the user named (answers, prices, references; a run's log, which may be larger
    than an input file: it is hashed as it is read). Raises UserError."""
    return input_sha256(path, None if path.name == LOG_NAME else MAX_INPUT_BYTES)


@cache
def code_digest() -> str:
    """turnbench's own files (code, prompts, the price table): another version, or an edit
    of a checkout, computes results anew."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file() or path.suffix == ".pyc":
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@cache
def runtime_versions() -> dict[str, str]:
    """Python and the libraries whose upgrade could change a number (numpy draws the
    bootstrap resamples), read from package metadata (importing numpy costs 0.2 s)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": sys.version}
    for name in ("numpy", "pydantic", "pydantic-core"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def _answers_sha256(path: Path | Sequence[Path]) -> dict[str, str]:
    """Every answer source `--answers` names: a file's bytes, a run directory's log."""
    digests = {}
    for source in answer_sources(path):
        target = source / LOG_NAME if is_run_dir(source) else source
        digests[str(source)] = _input_file_sha256(target)
    return digests


def input_digest(
    options: EvalOptions, mode: str, benchmark_module: str, data_sha256: Mapping[str, str]
) -> str | None:
    """One digest of everything but the run directory that the results depend on; None
    when the run cannot be vouched for this way (a benchmark from outside turnbench, whose
    code can change unseen) or an input cannot be read (the full path reports why)."""
    if benchmark_module.partition(".")[0] != "turnbench":
        return None
    try:
        reference = options.benchmark_options.get("reference_file")
        planted = options.planted_answers
        if planted is not None and is_run_dir(planted):
            planted = planted / LOG_NAME
        named = {
            "reference_file": Path(reference) if reference is not None else None,
            "prices": options.prices,
            "planted_answers": planted,
        }
        side_files = {
            name: _input_file_sha256(path) for name, path in named.items() if path is not None
        }
        answers = _answers_sha256(options.answers) if options.answers is not None else {}
    except (OSError, UserError):
        return None
    inputs = {
        "mode": mode,
        "options": _OPTIONS.dump_python(options, mode="json"),
        "code": code_digest(),
        "runtime": runtime_versions(),
        "data": dict(sorted(data_sha256.items())),
        "answers": answers,
        "side_files": side_files,
    }
    canonical = json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _read_state(directory: Path) -> RunState | None:
    raw = _read_run_file(directory / STATE_NAME, STATE_LIMIT)
    if raw is None:
        return None
    try:
        return RunState.model_validate_json(raw)
    except ValidationError:
        return None


def save_state(directory: Path, inputs: str) -> None:
    """Vouch for results.json as the results of `inputs` and the log as it is now. A state
    that cannot be written is no loss (the next invocation recomputes): nothing is raised,
    and a stale state is removed rather than left to be trusted."""
    log = run_file_sha256(directory / LOG_NAME)
    results = run_file_sha256(directory / RESULTS_NAME)
    try:
        if log is None or results is None:
            raise OSError("missing")
        state = RunState(inputs=inputs, log_sha256=log, results_sha256=results)
        write_file_atomically(directory, STATE_NAME, state.model_dump_json().encode() + b"\n")
    except OSError:
        forget_state(directory)


def forget_state(directory: Path) -> None:
    with contextlib.suppress(OSError):
        if not (directory / STATE_NAME).is_dir():
            os.unlink(directory / STATE_NAME)


def unchanged_results(directory: Path, inputs: str | None) -> dict[str, Any] | None:
    """results.json of the run in `directory`, if a complete invocation vouched for it with
    these inputs and neither the log nor results.json changed since; otherwise None."""
    if inputs is None:
        return None
    state = _read_state(directory)
    if state is None or state.inputs != inputs:
        return None
    raw = _read_run_file(directory / RESULTS_NAME, RESULTS_LIMIT)
    if raw is None or hashlib.sha256(raw).hexdigest() != state.results_sha256:
        return None
    if run_file_sha256(directory / LOG_NAME) != state.log_sha256:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
