"""Issue 44, class 8: a data folder the user names (--data-dir or $TURNBENCH_DATA_DIR) is used or
refused, never bypassed. A pinned file missing there, or there but no regular file (a link
to /dev/zero, a directory, a link to nothing), is one error naming it (exit 2), and nothing
is downloaded. 6f7f1ce silently looked in the cache and downloaded the file instead (here
from a fake upstream on 127.0.0.1, so the old code's download succeeds and it exits 0)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.benchmarks import load_sources
from turnbench.benchmarks.datafiles import DataFile
from turnbench.benchmarks.tau_bench.fakes import gold_trajectory
from turnbench.testing.fake_server import FakeServer

DEAD = "http://127.0.0.1:9/v1"  # (a dry run sends nothing)
USER = ("--user-model", "openai/u", "--user-base-url", DEAD)
JUDGE = ("--judge", "openai/j", "--judge-base-url", DEAD)
#: what each built-in benchmark's dry run needs besides the model
ROLES = {
    "mt-bench": JUDGE,
    "mt-bench-101": JUDGE,
    "structflowbench": JUDGE,
    "lost-in-conversation-translation": USER,
    "tau-bench-airline": USER,
    "tau-bench-retail": USER,
}


def spoil_delete(path: Path) -> None:
    path.unlink()


def spoil_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def spoil_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def spoil_dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "nothing-here")


SPOILS: dict[str, tuple[Callable[[Path], None], str]] = {
    "deleted": (spoil_delete, "is missing"),
    "dev-zero": (spoil_dev_zero, "is not a regular file (a link to /dev/zero, a character"),
    "directory": (spoil_directory, "is not a regular file (a directory)"),
    "dangling-link": (spoil_dangling, "is a link to nothing"),
}


def pinned(benchmark: str) -> list[DataFile]:
    return load_sources()[1][benchmark]


def spoiled_folder(data_dir: Path, target: Path, benchmark: str, spoil: str) -> DataFile:
    """A copy of `benchmark`'s pinned files in `target`, one of them spoiled (the first one
    upstream serves as it is, so the old code's download of it succeeds)."""
    entries = pinned(benchmark)
    for entry in entries:
        (target / entry.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / entry.path, target / entry.path)
    victim = next(entry for entry in entries if entry.extract is None)
    SPOILS[spoil][0](target / victim.path)
    return victim


def upstream(data_dir: Path, benchmark: str) -> FakeServer:
    files = {e.url: (data_dir / e.path).read_bytes() for e in pinned(benchmark) if not e.extract}
    return FakeServer(files=files)


def refused(done, folder: Path, victim: DataFile, why: str, server: FakeServer, label: str):
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"{victim.path} {why}" in done.stderr
    assert f"named by {label} ({folder})" in done.stderr
    assert server.counts.get("file", 0) == 0  # nothing downloaded


@pytest.mark.parametrize("spoil", sorted(SPOILS))
def test_a_spoiled_tau_file_in_the_named_folder_is_refused_never_downloaded(
    env, data_dir, tmp_path, spoil
):
    """The issue's reproduction: `import --format tau-bench` with $TURNBENCH_DATA_DIR."""
    folder = tmp_path / "data"
    victim = spoiled_folder(data_dir, folder, "tau-bench-airline", spoil)
    source = tmp_path / "t.json"
    source.write_text(json.dumps([gold_trajectory(data_dir, "airline", 0)]))
    with upstream(data_dir, "tau-bench-airline") as server:
        environment = {**env, "TURNBENCH_DATA_DIR": str(folder),
                       "TURNBENCH_DOWNLOAD_BASE_URL": server.origin}  # fmt: skip
        done = run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
                        str(source), "--out", str(tmp_path / "out")], environment)  # fmt: skip
        refused(done, folder, victim, SPOILS[spoil][1], server, "$TURNBENCH_DATA_DIR")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("benchmark", sorted(ROLES))
@pytest.mark.parametrize("how", ["--data-dir", "$TURNBENCH_DATA_DIR"])
def test_every_benchmarks_named_folder_is_used_or_refused(env, data_dir, tmp_path, benchmark, how):
    """One step beyond: every built-in benchmark's data, named by the flag or the variable
    (with the variable naming another, complete folder, the flag still decides)."""
    folder = tmp_path / "data"
    victim = spoiled_folder(data_dir, folder, benchmark, "dev-zero")
    with upstream(data_dir, benchmark) as server:
        environment = {**env, "TURNBENCH_DOWNLOAD_BASE_URL": server.origin}
        flag: tuple[str, ...] = ()
        if how == "--data-dir":
            flag = ("--data-dir", str(folder))  # ($TURNBENCH_DATA_DIR: the shared, whole data)
        else:
            environment["TURNBENCH_DATA_DIR"] = str(folder)
        done = run_cli(["run", "--benchmark", benchmark, "--model", "openai/m",
                        "--model-base-url", DEAD, *ROLES[benchmark], *flag,
                        "--out", str(tmp_path / "run"), "--dry-run"], environment)  # fmt: skip
        refused(done, folder, victim, SPOILS["dev-zero"][1], server, how)
    os.unlink(folder / victim.path)
    shutil.copyfile(data_dir / victim.path, folder / victim.path)  # mended: used as it is
    done = run_cli(["run", "--benchmark", benchmark, "--model", "openai/m",
                    "--model-base-url", DEAD, *ROLES[benchmark], *flag,
                    "--out", str(tmp_path / "run"), "--dry-run"], environment)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_data_status_names_the_problem_in_the_named_folder(env, data_dir, tmp_path):
    """`turnbench data status` looks where a run looks (6f7f1ce said "missing" for a link to
    /dev/zero, and took the cache's copy of a file the named folder lacked)."""
    folder = tmp_path / "data"
    victim = spoiled_folder(data_dir, folder, "tau-bench-retail", "dev-zero")
    environment = {**env, "TURNBENCH_DATA_DIR": str(folder), "COLUMNS": "250"}
    done = run_cli(["data", "status"], environment)
    assert done.returncode == 0, done.stderr
    line = next(row for row in done.stdout.splitlines() if victim.path in row)
    assert "is not a regular file (a link to /dev/zero" in line


def test_a_benchmark_folder_file_that_is_no_regular_file_is_refused(env, data_dir, tmp_path):
    """One step beyond: a user's benchmark folder (`--benchmark FOLDER`, MT-Bench's layout)
    whose judge prompts are a link to /dev/zero. 6f7f1ce took it as absent and read the
    published judge prompts in its place without a word."""
    folder = tmp_path / "my-mt-bench"
    folder.mkdir()
    shutil.copyfile(data_dir / "mt_bench" / "question.jsonl", folder / "question.jsonl")
    shutil.copytree(data_dir / "mt_bench" / "reference_answer", folder / "reference_answer")
    (folder / "judge_prompts.jsonl").symlink_to("/dev/zero")
    done = run_cli(["run", "--benchmark", str(folder), "--model", "openai/m",
                    "--model-base-url", DEAD, *JUDGE, "--out", str(tmp_path / "run"),
                    "--dry-run"], env)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "judge_prompts.jsonl is not a regular file (a link to /dev/zero" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
