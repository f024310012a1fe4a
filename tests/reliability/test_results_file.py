"""Issue 10 item 7, results.json: a directory in its place or a full disk is one clear message
(exit 7) with no temporary file left and the log intact; a symbolic link planted at
results.json is replaced, never written through."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import assert_clean_error, invoke, read_log, results, run_args
from turnbench.testing.fake_server import FakeServer

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX file system features")

RESULTS = "results.json"


def _finished(server: FakeServer, out: Path, env: dict[str, str]) -> list[str]:
    done = run_cli(run_args(server.base_url, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    return (out / "log.jsonl").read_text("utf-8").splitlines()


def _assert_log_kept(out: Path, before: list[str]) -> None:
    """Every line logged before is still there, unchanged; the resume added only its own
    config and end records."""
    after = (out / "log.jsonl").read_text("utf-8").splitlines()
    assert after[: len(before)] == before
    assert [json.loads(line)["kind"] for line in after[len(before) :]] == ["config", "end"]
    read_log(out)  # every line whole, the file ends with a newline


def _temporaries(out: Path) -> list[str]:
    return [p.name for p in out.iterdir() if p.name.startswith(".results-")]


def test_a_directory_at_results_json_is_one_clear_message(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        before = _finished(server, out, env)
        (out / RESULTS).unlink()
        (out / RESULTS).mkdir()
        (out / RESULTS / "kept.txt").write_text("mine", "utf-8")
        sent = len(server.requests)
        done = run_cli(run_args(server.base_url, out), env)
        assert len(server.requests) == sent  # finished: nothing to send
    assert_clean_error(done, f"{out / RESULTS} is a directory", "re-run the same command", code=7)
    assert _temporaries(out) == []
    assert (out / RESULTS / "kept.txt").read_text("utf-8") == "mine"
    _assert_log_kept(out, before)
    shutil.rmtree(out / RESULTS)  # (the suite checks every results.json file left behind)


def test_a_full_disk_while_writing_results_is_one_clear_message(env, tmp_path, capsys, monkeypatch):
    """The disk fills up in the middle of results.json: exit 7, the temporary file is gone,
    the results written before are still whole, and a later resume writes them again."""
    out = tmp_path / "run"
    real_write = os.write

    def full_on_results(fd: int, data) -> int:
        if bytes(data[:5]) == b'{\n  "':  # results.json (log records start with {"kind")
            real_write(fd, bytes(data[:10]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with FakeServer() as server:
        before = _finished(server, out, env)
        (out / "results.state.json").unlink()  # else the unchanged run's results are reused
        written = (out / RESULTS).read_bytes()
        monkeypatch.setattr(os, "write", full_on_results)
        full = invoke(run_args(server.base_url, out), env, capsys, monkeypatch)
        monkeypatch.setattr(os, "write", real_write)
        assert_clean_error(
            full, f"cannot write {out / RESULTS}", "No space left on device", "disk is full",
            code=7,
        )  # fmt: skip
        assert _temporaries(out) == []
        assert (out / RESULTS).read_bytes() == written  # the last complete results stay
        _assert_log_kept(out, before)
        again = invoke(run_args(server.base_url, out), env, capsys, monkeypatch)
    assert again.returncode == 0, again.stdout + again.stderr
    assert results(out)["complete"] is True and _temporaries(out) == []


@pytest.mark.parametrize("target", ["another file", "nowhere"])
def test_a_symlink_at_results_json_is_replaced_not_written_through(target, env, tmp_path):
    out = tmp_path / "run"
    victim = tmp_path / "victim.json"
    if target == "another file":
        victim.write_text('{"theirs": true}\n', "utf-8")
    with FakeServer() as server:
        before = _finished(server, out, env)
        (out / RESULTS).unlink()
        (out / RESULTS).symlink_to(victim)
        done = run_cli(run_args(server.base_url, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (out / RESULTS).is_symlink() and (out / RESULTS).is_file()
    assert results(out)["complete"] is True
    if target == "another file":
        assert victim.read_text("utf-8") == '{"theirs": true}\n'
    else:
        assert not victim.exists()  # a dangling link is not followed to create its target
    assert _temporaries(out) == []
    _assert_log_kept(out, before)
