"""`--out` of a reading command never replaces a file of a run directory it reads.

`export RUN --out RUN/log.jsonl` used to replace the log (every paid answer gone, the next
`run` refusing the directory with exit 7). Whatever the spelling (direct, `..`, a symbolic
link to the file or its folder, a hard link), a path that leads to the log, results.json,
the up-to-date state or the lock of a run being read is refused with exit 2 and the file
untouched (issue 22, item 6).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import TOY, copy_run, invoke, plugin_env
from tests.toy_bench import DIALOGUES
from turnbench.errors import UserError

TURNS = sum(len(turns) for _, turns in DIALOGUES.values())


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


SPELLINGS = ("direct", "dotdot", "symlink", "linked folder", "hard link")


def spelling(run: Path, name: str, folder: Path, kind: str) -> Path:
    """A way to name `run/name` (made when asked: a hard link to the log is itself refused
    by readers, so it is made last): directly, through `..`, a symbolic link to it or to its
    folder, a hard link."""
    sub = folder / "sub"
    sub.mkdir(exist_ok=True)
    if kind == "direct":
        return run / name
    if kind == "dotdot":
        return sub / ".." / run.name / name
    if kind == "symlink":
        (sub / f"link-{name}").symlink_to(run / name)
        return sub / f"link-{name}"
    if kind == "linked folder":
        (sub / "run-link").symlink_to(run, target_is_directory=True)
        return sub / "run-link" / name
    os.link(run / name, sub / f"hard-{name}")
    return sub / f"hard-{name}"


WRITERS = {
    "export": lambda run, out: ["export", str(run), "--format", "jsonl", "--out", str(out)],
    "export csv": lambda run, out: ["export", str(run), "--format", "csv", "-o", str(out)],
    "report": lambda run, out: ["report", str(run), "--out", str(out)],
}


def assert_refused(done: subprocess.CompletedProcess[str], name: str, kind: str) -> None:
    assert done.returncode == 2, (kind, done.stdout + done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.startswith("error: "), done.stderr
    assert "nothing was written" in done.stderr and name in done.stderr, kind


@pytest.mark.parametrize("writer", ["export", "report"])
def test_out_never_replaces_the_log_through_the_cli(toy_run, tmp_path, env, writer):
    """The real CLI in a child process: the log named directly, through `..`, by a link."""
    run = copy_run(toy_run, tmp_path / "run")
    before = {p.name: sha(p) for p in run.iterdir()}
    for kind in ("direct", "dotdot", "symlink"):
        out = spelling(run, "log.jsonl", tmp_path, kind)
        args = [*WRITERS[writer](run, out), "--benchmark", TOY]
        assert_refused(run_cli(args, plugin_env(env), cwd=tmp_path), "log.jsonl", kind)
        assert {p.name: sha(p) for p in run.iterdir()} == before, kind
    assert (tmp_path / "sub" / "link-log.jsonl").is_symlink()  # not replaced by a file either


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("name", ["log.jsonl", "results.json", "results.state.json", ".lock"])
def test_out_never_replaces_a_file_of_the_run_read(
    toy_run, tmp_path, env, writer, name, capsys, monkeypatch
):
    """Every file the run keeps, every spelling (the CLI's entry point, in this process)."""
    run = copy_run(toy_run, tmp_path / "run")
    (run / "results.state.json").write_text("{}\n", "utf-8")  # the up-to-date record
    before = {p.name: sha(p) for p in run.iterdir()}
    monkeypatch.chdir(tmp_path)
    for kind in SPELLINGS:
        args = [*WRITERS[writer](run, spelling(run, name, tmp_path, kind)), "--benchmark", TOY]
        assert_refused(invoke(args, env, capsys, monkeypatch), name, kind)
        assert {p.name: sha(p) for p in run.iterdir()} == before, kind
    assert (tmp_path / "sub" / f"link-{name}").is_symlink()
    assert not list(tmp_path.rglob(".*-*"))  # no temporary file left behind either


def test_report_out_never_replaces_a_file_of_any_run_it_reads(toy_run, tmp_path, env):
    first = copy_run(toy_run, tmp_path / "first")
    second = copy_run(toy_run, tmp_path / "second")
    kept = sha(second / "log.jsonl")
    done = run_cli(
        ["report", str(first), str(second), "--out", str(second / "log.jsonl"), "--benchmark",
         TOY],
        plugin_env(env),
    )  # fmt: skip
    assert_refused(done, "log.jsonl", "second run")
    assert sha(second / "log.jsonl") == kept


def test_out_beside_the_run_files_still_works(toy_run, tmp_path, env):
    run = copy_run(toy_run, tmp_path / "run")
    done = run_cli(
        ["export", str(run), "--format", "jsonl", "--out", str(run / "log.jsonl.export"),
         "--benchmark", TOY],
        plugin_env(env),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run / "log.jsonl.export").read_text("utf-8").count("\n") == TURNS


def test_fastchat_export_never_writes_over_a_run_file(tmp_path):
    """FastChat's files go in subfolders named by model: a run directory named
    `model_answer` holding a model called `log` would otherwise lose its log."""
    from turnbench.interop.export import FastChatExport, write_fastchat
    from turnbench.store.runfiles import refuse_run_file

    run = tmp_path / "model_answer"
    run.mkdir()
    (run / "log.jsonl").write_text('{"kind": "config"}\n', "utf-8")
    export = FastChatExport({"log": [{"question_id": 1}], "other": [{"question_id": 2}]}, {}, [])
    with pytest.raises(UserError) as refused:
        write_fastchat(export, tmp_path, refuse=lambda path: refuse_run_file(path, [run]))
    assert "log.jsonl" in refused.value.message
    assert (run / "log.jsonl").read_text("utf-8") == '{"kind": "config"}\n'
    assert not (run / "other.jsonl").exists()  # refused before anything was written
