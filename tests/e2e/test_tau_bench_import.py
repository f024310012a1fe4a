"""`turnbench import --format tau-bench`: trajectory files of tau-bench's own runner, re-scored
by replaying their tool calls on a fresh database; the recorded reward is kept beside the
recomputed one, and a trajectory that did not end as upstream requires scores 0."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.tau_fakes import gold_trajectory as trajectory


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
