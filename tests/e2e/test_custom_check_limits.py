"""Deterministic checks that cannot finish, through the real CLI: a run and its resume end,
results.json is written, and each such check is a failed check with its reason (before,
results were built after the log's end record and never finished, on every resume too)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import run_cli
from turnbench.testing.fake_server import FakeServer, Reply

BENCH = r"""version: 1
name: hostile-checks
history: golden
dialogues:
  - id: regex
    turns:
      - user: "Answer regex."
        checks: [{regex: '^(\w+\s?)*$'}, {contains: aaa}]
  - id: pattern
    turns:
      - user: "Answer pattern."
        checks: [{json_schema: {type: string, pattern: '^(a+)+$'}}]
  - id: unique
    turns:
      - user: "Answer unique."
        checks: [{json_schema: {type: array, uniqueItems: true}}]
  - id: normal
    turns:
      - user: "Answer normal."
        checks: [{regex: '^\d+$'}, {json_schema: {type: integer}}]
"""
ANSWERS = {
    "Answer regex.": "a" * 40 + "!",
    "Answer pattern.": json.dumps("a" * 40 + "!"),
    "Answer unique.": json.dumps([{"k": i} for i in range(5000)]),
    "Answer normal.": "42",
}
BOUND_S = 60  # three checks of 2 s each, the worker started three times, two CLI starts


def test_checks_that_cannot_finish_fail_with_their_reason(env, tmp_path: Path):
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH, "utf-8")
    out = tmp_path / "run"
    server = FakeServer(
        responder=lambda request: Reply(content=ANSWERS[request["messages"][-1]["content"]])
    ).start()
    try:
        args = ["run", "--benchmark", str(bench), "--model", "openai/model", "--model-base-url",
                server.base_url, "--judge", "openai/judge", "--judge-base-url", server.base_url,
                "--out", str(out), "--no-progress"]  # fmt: skip
        for invocation in ("run", "resume"):
            (out / "results.json").unlink(missing_ok=True)
            start = time.perf_counter()
            done = run_cli(args, env, timeout=BOUND_S)
            took = time.perf_counter() - start
            assert done.returncode == 0, (invocation, done.stdout + done.stderr)
            results = json.loads((out / "results.json").read_text("utf-8"))
            checks = {turn["id"]: turn["checks"] for turn in results["turns"]}
            for dialogue in ("regex", "pattern", "unique"):
                first = checks[dialogue][0]
                assert first["passed"] is False, (invocation, first)
                assert first["detail"] == "timed out after 2 s (the check was stopped)"
            assert checks["regex"][1]["passed"] is True  # the turn's other check still ran
            assert [c["passed"] for c in checks["normal"]] == [True, True]
            assert results["by_dialogue"] == {
                "regex": 0.5, "pattern": 0.0, "unique": 0.0, "normal": 1.0
            }  # fmt: skip
            assert took < BOUND_S
        assert len(server.requests) == 4  # the resume sent nothing
    finally:
        server.stop()
