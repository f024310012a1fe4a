"""`turnbench agreement --json`: one key per judge pair, whatever the judges' names."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def vote(judge: str, winner: str, question: int = 81) -> dict:
    return {"question_id": question, "model_a": "m1", "model_b": "m2", "winner": winner,
            "judge": judge, "turn": 1}  # fmt: skip


def test_a_judge_named_with_a_bar_keeps_its_own_pair(env, tmp_path):
    """Judges `a|b` + `c` and `a` + `b|c` were both reported under "a|b|c", one pair's
    numbers overwriting the other's (5 keys for 6 pairs)."""
    winners = {"a|b": "model_a", "c": "model_a", "a": "model_a", "b|c": "model_b"}
    votes = tmp_path / "votes.jsonl"
    votes.write_text("".join(json.dumps(vote(j, w)) + "\n" for j, w in winners.items()), "utf-8")
    done = run_cli(["agreement", "--votes", str(votes), "--json"], env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report) == 6, list(report)
    pairs = {
        frozenset(json.loads(key)) if key.startswith("[") else frozenset(key.split("|")): value
        for key, value in report.items()
    }
    assert pairs[frozenset({"a|b", "c"})]["1"]["S1"]["agree"] == 1
    assert pairs[frozenset({"a", "b|c"})]["1"]["S1"]["agree"] == 0
    assert "a|c" in report  # names without a bar keep FastChat's readable key
    table = run_cli(["agreement", "--votes", str(votes)], env)
    assert table.returncode == 0 and '["a|b", "c"]' in " ".join(table.stdout.split())
