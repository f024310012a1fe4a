"""`turnbench import --format tau-bench`: trajectory files of tau-bench's own runner, re-scored
by replaying their tool calls on a fresh database; the recorded reward is kept beside the
recomputed one, and a trajectory that did not end as upstream requires scores 0."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from turnbench.benchmarks.tau_bench.fakes import gold_trajectory as trajectory
from turnbench.journal.threads import with_whole_requests


def test_recorded_trajectories_are_re_scored_from_their_tool_calls(env, data_dir, tmp_path):
    entries = [
        trajectory(data_dir, "airline", 0),
        trajectory(data_dir, "airline", 1, recorded=0.0),  # recorded wrong: recomputed 1
        trajectory(data_dir, "airline", 2, cut=True),  # cut off without a stop: 0
        trajectory(data_dir, "airline", 0, trial=1),
    ]
    source = tmp_path / "tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0101120000.json"
    source.write_text(json.dumps(entries))
    out = tmp_path / "imported"
    args = ["import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
            str(source), "--out", str(out)]  # fmt: skip
    done = run_cli(args, env)
    assert done.returncode == 1, done.stdout + done.stderr  # (task 1 and 2 lack a trial 1)
    lines = (out / "log.jsonl").read_text().splitlines()
    records = with_whole_requests(json.loads(line) for line in lines)
    samples = {(r["task_id"], r["trial"]): r for r in records if r["kind"] == "sample"}
    assert {key: s["reward"] for key, s in samples.items()} == {
        (0, 0): 1.0,
        (1, 0): 1.0,
        (2, 0): 0.0,
        (0, 1): 1.0,
    }
    assert samples[(1, 0)]["recorded_reward"] == 0.0 and samples[(2, 0)]["recorded_reward"] == 1.0
    assert samples[(2, 0)]["ended"] == "cut_off" and samples[(2, 0)]["detail"]["db_match"]
    assert {r["model"] for r in records if r["kind"] == "sample"} == {"gpt-4o"}
    results = json.loads((out / "results.json").read_text())
    assert results["pass_hat_k"]["1"] == 1.0  # task 0, the one task with both trials
    assert "differ from the recorded ones" in done.stdout
    # the conversations are kept as a run keeps them: the agent's steps with their calls
    steps = [r for r in records if r["kind"] == "step" and r["sample_id"] == 0]
    assert steps and steps[0]["name"] == "book_reservation"
    again = run_cli(args, env)  # importing the same file again adds nothing
    assert again.returncode == 1
    assert len((out / "log.jsonl").read_text().splitlines()) == len(lines) + 2  # config, end


def test_the_domain_must_be_named_and_the_file_must_be_a_list(env, tmp_path):
    source = tmp_path / "t.json"
    source.write_text("[]")
    done = run_cli(["import", "--format", "tau-bench", str(source), "--out",
                    str(tmp_path / "o")], env)  # fmt: skip
    assert done.returncode == 2 and "needs --benchmark tau-bench-airline" in done.stderr
    source.write_text('{"task_id": 0}')
    done = run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-retail",
                    str(source), "--out", str(tmp_path / "o")], env)  # fmt: skip
    assert done.returncode == 2 and "expected a JSON list of trajectories" in done.stderr
    source.write_text('[{"task_id": 9999, "traj": []}]')
    done = run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-retail",
                    str(source), "--out", str(tmp_path / "o")], env)  # fmt: skip
    assert done.returncode == 2 and "task_id 9999 is not a task" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()


# -- issue 44, class 5: trajectory files that collide, count wrongly or are long ---------------
def _import(env, source, out, benchmark="tau-bench-airline", *extra):
    return run_cli(["import", "--format", "tau-bench", "--benchmark", benchmark, str(source),
                    "--out", str(out), *extra], env)  # fmt: skip


def _one_line_refusal(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    return done.stderr


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_two_entries_of_one_task_and_trial_are_refused_naming_both(env, data_dir, tmp_path, domain):
    """6f7f1ce spliced the second conversation into the first (one sample, scored by file
    order: 1.00 one way, 0.00 the other) and exited 0."""
    for first, second in ((0, 1), (1, 0)):  # (either order)
        done_entry = trajectory(data_dir, domain, first)
        other = dict(trajectory(data_dir, domain, second), task_id=first)
        source = tmp_path / f"dup-{first}.json"
        source.write_text(json.dumps([trajectory(data_dir, domain, 2), done_entry, other]))
        out = tmp_path / f"out-{domain}-{first}"
        message = _one_line_refusal(_import(env, source, out, f"tau-bench-{domain}"))
        assert f"entry 2: task_id {first} trial 0 is already entry 1" in message
        assert not out.exists()


def test_a_conversation_imported_again_from_another_file_is_refused(env, data_dir, tmp_path):
    """One step beyond: the two entries in two files, imported into one run directory.
    6f7f1ce added the second file's extra steps to the first conversation (exit 1, a log
    holding both); the same file again still adds nothing."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps([trajectory(data_dir, "airline", 0, cut=True)]))
    second.write_text(json.dumps([trajectory(data_dir, "airline", 0)]))
    out = tmp_path / "out"
    assert _import(env, first, out, "tau-bench-airline", "--model-name", "m").returncode == 0
    lines = (out / "log.jsonl").read_text().splitlines()
    again = _import(env, first, out, "tau-bench-airline", "--model-name", "m")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len((out / "log.jsonl").read_text().splitlines()) == len(lines) + 2  # config, end
    message = _one_line_refusal(_import(env, second, out, "tau-bench-airline", "--model-name", "m"))
    assert "holds sample 0 trial 0 of m already" in message and "new --out" in message
    assert len((out / "log.jsonl").read_text().splitlines()) == len(lines) + 2  # nothing added


@pytest.mark.parametrize(
    "trials",
    [[-5], [10**9], [1000], [0, -1], [0, 1, -1]],
    ids=["minus-5", "10^9", "1000", "minus-1-beside-valid", "minus-1-last"],
)
def test_a_trial_that_is_no_trial_number_is_the_files_fault(env, data_dir, tmp_path, trials):
    """6f7f1ce: -5 and 10^9 exited naming --simulations, a flag never given; -1 beside valid
    rows was logged and silently not counted (exit 0)."""
    entries = [trajectory(data_dir, "airline", 0, trial=trial) for trial in trials]
    source = tmp_path / "t.json"
    source.write_text(json.dumps(entries))
    message = _one_line_refusal(_import(env, source, tmp_path / "out"))
    bad = len(trials) - 1
    assert f"entry {bad}: trial {trials[-1]} is not a trial number (0 to 999" in message
    assert "--simulations" not in message and not (tmp_path / "out").exists()


def test_the_highest_trial_allowed_is_imported(env, data_dir, tmp_path):
    """The bound is --simulations' own: trial 999 makes 1000 trials (task 0 lacks most of
    them: the run is incomplete, exit 1, and says so)."""
    source = tmp_path / "t.json"
    source.write_text(json.dumps([trajectory(data_dir, "airline", 0, trial=999)]))
    done = _import(env, source, tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["trials"] == 1000 and results["conversations"] == 1


def _replay_seconds(data_dir, tmp_path, exchanges: int) -> float:
    import time
    from pathlib import Path

    from turnbench.benchmarks.datafiles import DataLocator
    from turnbench.benchmarks.imports import ImportOptions
    from turnbench.benchmarks.tau_bench.importer import read_trajectories

    entry = trajectory(data_dir, "airline", 0)
    traj = entry["traj"][:2]
    for number in range(exchanges):
        traj += [{"role": "assistant", "content": f"Reply {number}."},
                 {"role": "user", "content": f"Message {number}."}]  # fmt: skip
    source = Path(tmp_path) / f"long-{exchanges}.json"
    source.write_text(json.dumps([dict(entry, traj=traj)]))
    options = ImportOptions(benchmark="tau-bench-airline")
    started = time.process_time()  # (this process's CPU: the other tests' load is not counted)
    imported = read_trajectories(source, options, DataLocator(data_dir, allow_download=False))
    seconds = time.process_time() - started
    assert sum(1 for r in imported.records if r.kind == "answer") == exchanges
    return seconds


def test_a_long_trajectory_is_read_in_linear_time(data_dir, tmp_path):
    """8 times the exchanges cost about 8 times the time, not 64: 6f7f1ce copied the
    conversation so far for every message (and `Thread` copied and compared it again);
    measured there, 41 times. Figures: benchmarks/README.md (`tau_import_time.py`)."""
    _replay_seconds(data_dir, tmp_path, 200)  # (warm: the domain's data, imports)
    short = min(_replay_seconds(data_dir, tmp_path, 2000) for _ in range(2))
    long = min(_replay_seconds(data_dir, tmp_path, 16000) for _ in range(2))
    assert long / short < 20, (short, long)
