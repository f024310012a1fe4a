"""The embedded model as an AgentDojo agent: SmolLM2 offered a banking suite's tools in two
conversations (one user task alone, and with one injection task under the attack), through
the same path as any run. It says it is a smoke test; the conversations end and are scored
by upstream's checks, whatever a 135M model does with the tools."""

from __future__ import annotations

import json

import pytest

from tests.integration.bounded import turnbench_bounded

pytest.importorskip("agentdojo", reason="needs the agentdojo extra: pip install '.[agentdojo]'")

pytestmark = pytest.mark.integration
LIMIT_S = 900  # llama.cpp slows several-fold under load; the tools' schemas are a long prompt


def test_the_embedded_model_runs_a_few_agentdojo_tasks(env, tmp_path):
    out = tmp_path / "run"
    args = [
        "run", "--benchmark", "agentdojo", "-B", "suites=banking", "-B",
        "user_tasks=user_task_0", "-B", "injection_tasks=injection_task_0", "-B", "max_steps=2",
        "--model", "local/smollm2", "--max-new-tokens", "48", "--out", str(out),
    ]  # fmt: skip
    done = turnbench_bounded(args, env, limit_s=LIMIT_S, run_dir=out)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "smoke test" in said and "its scores mean nothing" in said
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] and results["conversations"] == 2
    assert results["model_name"] == "Local model"  # (upstream's name for a local pipeline)
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    samples = [r for r in map(json.loads, lines) if r["kind"] == "sample"]
    assert {s["injection_task_id"] for s in samples} == {None, "injection_task_0"}
    assert all(isinstance(s["utility"], bool) and s["steps"] <= 3 for s in samples)
