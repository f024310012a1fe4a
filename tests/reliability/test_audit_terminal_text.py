"""Issue 10 item 6 for `turnbench audit-judge`: the judge's spec, the --out path, notes and
errors reach the terminal as plain text (see test_terminal_text.py for the other commands):
no markup is interpreted, no ANSI or OSC 8 sequence is passed through. (A judge spec with
control characters is refused where it enters; the one here carries markup.)"""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.e2e.test_audit_judge import JUDGES
from tests.reliability.test_terminal_text import CLEAR, MARKUP, OSC8, assert_plain
from turnbench.testing.fake_server import FakeServer


def _one_line(text: str) -> str:
    """Output with rich's wrapping undone (a long path or title may be folded)."""
    return "".join(line.strip() for line in text.splitlines())


def test_audit_judge_shows_a_hostile_judge_and_out_path_as_text(env, tmp_path):
    out = tmp_path / f"audit{CLEAR}[/]"
    judge = f"openai/j{MARKUP}"
    with FakeServer(responder=JUDGES["unbiased"]) as server:
        done = run_cli(
            ["audit-judge", "--judge", judge, "--judge-base-url", server.base_url,
             "--out", str(out), "--questions", "2", "--repeats", "2", "--no-progress",
             "--fail-if", "position_consistency<0.5"],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert_plain(done)
    shown = _one_line(done.stdout)
    assert "Judge audit:" in shown and "openai/j[link=https://evil.example/]x[/link][/]" in shown
    assert f"{tmp_path}/audit^[[2J^[[H[/]/audit.json" in shown  # the --out path
    assert "--fail-if position_consistency<0.5: ok" in shown
    # the files keep the spec as given: plain text is for the terminal only
    assert json.loads((out / "audit.json").read_text("utf-8"))["judge"] == judge


def test_audit_judge_errors_show_hostile_input_as_text(env, tmp_path):
    for args, visible in (
        (["--fail-if", f"position_consistency{MARKUP}<1"], "[link=https://evil.example/]x"),
        (["--benchmark", f"nope{CLEAR}{OSC8}"], "nope^[[2J^[[H^[]8;;https://evil.example/"),
    ):
        done = run_cli(
            ["audit-judge", "--judge", f"openai/j{MARKUP}", "--judge-base-url",
             "http://127.0.0.1:9/v1", "--out", str(tmp_path / f"a{CLEAR}"), *args],
            env,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert_plain(done, "error:", visible)
