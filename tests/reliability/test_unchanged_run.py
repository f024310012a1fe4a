"""Issue 14 item 7, a complete run that nothing has changed since: re-running its command
returns its results without reading the log or asking any server (results.state.json), and
any change of an input, of the log or of results.json computes everything again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import JUDGE, read_log, results, run_args
from turnbench.options import EvalOptions
from turnbench.store.uptodate import STATE_NAME, input_digest
from turnbench.testing.fake_server import FakeServer, Reply, default_content

REUSED = "nothing has changed since"
# What the unchanged run must not import (issue 42: numpy, pulled in through
# results.stress -> stats.paired by the typed results it prints, made such a resume of 28,920
# judgments peak at 58-62 MB instead of 45-46 MB; then the engine's request context, work
# and drivers, 40 modules and 2.9 MB above a1fefcf's): modules only other commands (or a
# run that computes its results) need
NOT_ON_THE_UNCHANGED_PATH = (
    "numpy",
    "jinja2",
    "aiohttp",
    "turnbench.stats.paired",
    "turnbench.engine.context",
    "turnbench.engine.work",
    "turnbench.engine.drivers",
    "turnbench.invocation",
    "turnbench.report",
    "turnbench.view",
    "turnbench.benchmarks.tau_bench",
)
# (the flags read every benchmark package's options: tau-bench's too)
FLAGS_READ = {"turnbench.benchmarks.tau_bench", "turnbench.benchmarks.tau_bench.options"}
# the CLI's own main (not the console entry, whose early os._exit skips the report), then
# the names of the modules loaded, written to the file argv[1]
_LOADED = """
import json, sys
from turnbench.cli import main
path, sys.argv = sys.argv[1], ["turnbench", *sys.argv[2:]]
try:
    main()
except SystemExit as done:
    code = done.code
else:
    code = 0
with open(path, "w", encoding="utf-8") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""


@pytest.fixture
def complete(env, tmp_path) -> tuple[Path, str]:
    """A complete MT-Bench run (--limit 1) and the stdout of its first invocation."""
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, out), env)
        assert done.returncode == 0, done.stderr
        base_url = server.base_url
    assert (out / STATE_NAME).is_file()
    return out, base_url


def test_an_unchanged_complete_run_is_not_read_again_nor_sent(complete, env):
    out, base_url = complete
    log = (out / "log.jsonl").read_bytes()
    written = results(out)
    # the server is gone: a resume that asked anything (even its preflight) would fail
    again = run_cli(run_args(base_url, out), env)
    assert again.returncode == 0, again.stderr
    assert REUSED in again.stdout
    assert (out / "log.jsonl").read_bytes() == log  # not even a config record appended
    assert results(out) == written
    assert "Run complete" in again.stdout and "overall" in again.stdout


def test_an_unchanged_run_imports_nothing_that_only_other_commands_need(complete, env, tmp_path):
    out, base_url = complete
    listed = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, str(listed), *run_args(base_url, out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert REUSED in done.stdout  # (the path measured: results.state.json vouched)
    loaded = json.loads(listed.read_text("utf-8"))
    assert loaded["code"] in (0, None)
    heavy = [
        name
        for name in loaded["modules"]
        if any(name == top or name.startswith(top + ".") for top in NOT_ON_THE_UNCHANGED_PATH)
        and name not in FLAGS_READ
    ]
    assert heavy == []


def test_the_results_shown_are_those_a_full_resume_shows(env, tmp_path):
    out = tmp_path / "run"
    with FakeServer() as server:
        assert run_cli(run_args(server.base_url, out), env).returncode == 0
        sent = len(server.requests)
        reused = run_cli(run_args(server.base_url, out), env)
        (out / STATE_NAME).unlink()
        full = run_cli(run_args(server.base_url, out), env)
        assert len(server.requests) == sent  # finished: nothing to send either way
    assert reused.returncode == full.returncode == 0
    assert REUSED in reused.stdout and REUSED not in full.stdout

    # the same tables, line for line, after the first lines (where the results came from;
    # the full resume names the endpoints it checked)
    def tables(stdout: str) -> str:
        return stdout[stdout.index("MT-Bench: ") :]

    assert tables(reused.stdout) == tables(full.stdout)
    assert (out / STATE_NAME).is_file()  # the full resume vouched for them again


@pytest.mark.parametrize(
    "change",
    ["results", "log", "state", "flag", "state-link"],
)
def test_any_change_computes_the_results_again(complete, env, change, tmp_path):
    out, _ = complete
    extra: list[str] = []
    if change == "results":  # a forged score is replaced by the one the log holds
        forged = results(out)
        true_overall = forged["overall"]
        forged["overall"] = 10.0
        (out / "results.json").write_text(json.dumps(forged), "utf-8")
    elif change == "log":  # a line added to the log (here: a duplicate of a finished record)
        lines = (out / "log.jsonl").read_text("utf-8").splitlines()
        work = [line for line in lines if json.loads(line)["kind"] in ("answer", "judgment")]
        with (out / "log.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(work[-1] + "\n")
    elif change == "state":
        (out / STATE_NAME).write_text('{"format": 1, "inputs": "x"}', "utf-8")
    elif change == "state-link":  # a link planted at the state file is not followed
        target = tmp_path / "elsewhere.json"
        shutil.move(out / STATE_NAME, target)
        (out / STATE_NAME).symlink_to(target)
    else:  # another setting (one a resume may change)
        extra = ["--concurrency", "3"]
    with FakeServer() as server:
        again = run_cli(run_args(server.base_url, out, *extra), env)
    assert again.returncode == 0, again.stderr
    assert REUSED not in again.stdout
    assert read_log(out)[-1]["kind"] == "end"  # this invocation ran (and was recorded)
    if change == "results":
        assert results(out)["overall"] == true_overall
    if change == "state-link":
        assert not (out / STATE_NAME).is_symlink()


def test_an_incomplete_run_is_not_vouched_for(env, tmp_path):
    out = tmp_path / "run"

    def judge_fails(request: dict) -> Reply:  # every judge request fails: incomplete
        if request.get("model") == JUDGE:
            return Reply(status=500)
        return Reply(content=default_content(request))

    with FakeServer(responder=judge_fails) as server:
        done = run_cli(run_args(server.base_url, out, "--max-attempts", "1"), env)
    assert done.returncode != 0
    assert not (out / STATE_NAME).exists()


def test_the_digest_covers_settings_data_and_answers(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": 1, "turn": 1, "answer": "a"}\n', "utf-8")
    options = EvalOptions(benchmark="mt-bench-101", judge=["openai/j"], answers=answers)
    data = {"mt_bench_101/mtbench101.jsonl": "ab" * 32}
    module = "turnbench.benchmarks.mt_bench_101.benchmark"
    first = input_digest(options, "judge", module, data)
    assert first is not None and first == input_digest(options, "judge", module, data)
    other_flag = EvalOptions(
        benchmark="mt-bench-101", judge=["openai/j"], answers=answers, judge_max_tokens=10
    )
    assert input_digest(other_flag, "judge", module, data) != first
    assert input_digest(options, "judge", module, {**data, "x": "cd" * 32}) != first
    answers.write_text('{"id": 1, "turn": 1, "answer": "b"}\n', "utf-8")
    assert input_digest(options, "judge", module, data) != first
    # a benchmark whose code lives outside turnbench can change unseen: never vouched for
    assert input_digest(options, "judge", "tests.toy_bench", data) is None
    answers.unlink()
    assert input_digest(options, "judge", module, data) is None
