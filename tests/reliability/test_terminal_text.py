"""Text from outside reaches the terminal as plain text, in every command.

Model names, answer-file names, run directories, server error bodies and judge names carry
rich markup (`[link=...]`, a stray `[/]` that used to crash with MarkupError), ANSI escapes
(screen clearing) and OSC 8 hyperlinks. Tests run without a terminal, so rich itself emits no
escape sequences here: any ESC byte in the output came from the hostile text. Model and judge
names with control characters are refused where they enter (tests/reliability/
test_boundary_values.py); the names here carry markup, the other texts escapes too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.safetext import plain
from turnbench.testing.fake_server import FakeServer, Reply, default_content

CLEAR = "\x1b[2J\x1b[H"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
MARKUP = "[link=https://evil.example/]x[/link][/]"
HOSTILE = f"{MARKUP}{CLEAR}{OSC8}"
IN_FILE_NAME = "[link=https:evil.example]x[bold]"  # a file name cannot hold "/"


def assert_plain(done, *visible: str) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "MarkupError" not in output, output
    assert "\x1b" not in output and "\x07" not in output, repr(output[-400:])
    for text in visible:
        assert text in output, (text, output[-600:])


def test_plain_makes_controls_visible_and_keeps_text():
    assert plain("a\x1b[2Jb") == "a^[[2Jb"
    assert plain("tab\tnew\nline") == "tab\tnew\nline"
    assert plain("bell\x07 del\x7f csi\x9b") == "bell^G del\\u007f csi\\u009b"
    assert plain("rtl\u202eevil") == "rtl\\u202eevil"
    assert plain("lone \ud83d surrogate") == "lone \ufffd surrogate"


def test_run_with_a_hostile_model_name_and_server_errors(env, tmp_path):
    def responder(request: dict) -> Reply:
        if request["model"] != "judge":  # the model's requests fail with a hostile body
            return Reply(status=400, body={"error": {"message": f"bad request {HOSTILE}"}})
        return Reply(content=default_content(request))

    out = tmp_path / f"run{CLEAR}[/]"
    with FakeServer(responder=responder) as server:
        done = run_cli(
            ["run", "--model", f"openai/m{MARKUP}", "--model-base-url", server.base_url,
             "--judge", "openai/judge", "--judge-base-url", server.base_url, "--out", str(out),
             "--limit", "1", "--no-progress", "--max-attempts", "1"],
            env,
        )  # fmt: skip
    assert done.returncode == 1  # every answer failed: incomplete, reported, no crash
    assert_plain(done, "[link=https://evil.example/]", "request(s) failed", "^[[2J")


def test_judge_pairwise_with_hostile_file_names_then_rank_compare_report(env, tmp_path, data_dir):
    source = (data_dir / "mt_bench/model_answer/alpaca-13b.jsonl").read_text("utf-8")
    answers = tmp_path / "answers"
    answers.mkdir()
    names = [f"a{IN_FILE_NAME}", "b[bold]x", "c"]
    for name in names:
        (answers / f"{name}.jsonl").write_text(source, "utf-8")
    runs = []
    with FakeServer() as server:
        for mode in ("pairwise-all", "single"):
            out = tmp_path / f"{mode}{CLEAR}"
            done = run_cli(
                ["judge", "--answers", str(answers), "--mode", mode, "--judge",
                 f"openai/j{MARKUP}", "--judge-base-url", server.base_url, "--out", str(out),
                 "--limit", "1", "--no-progress"],
                env,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            assert_plain(done, "[link=https:evil.example]", "^[[2J")
            runs.append(out)
    ranked = run_cli(["rank", str(runs[0])], env)
    assert ranked.returncode == 0
    assert_plain(ranked, "[link=https:evil.example]")
    compared = run_cli(
        ["compare", str(runs[1]), str(runs[1]), "--base-model", names[0], "--new-model", "c"], env
    )
    assert compared.returncode == 0, compared.stderr
    assert_plain(compared)
    reported = run_cli(["report", str(runs[1]), "--out", str(tmp_path / "r.html")], env)
    assert reported.returncode == 0
    assert_plain(reported)


@pytest.mark.parametrize(
    "args",
    [
        ["judge", "--answers", f"/nonexistent/{HOSTILE}", "--judge", "openai/j", "--out", "x"],
        ["run", "--model", f"nope{HOSTILE}", "--judge", "openai/j", "--out", "x"],
        ["report", f"/nonexistent/{HOSTILE}"],
        ["compare", f"/nope/{CLEAR}", f"/nope/{MARKUP}"],
    ],
)
def test_errors_show_hostile_input_as_text(env, args):
    done = run_cli(args, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert_plain(done, "error:")


def test_results_json_keeps_the_names_as_they_are(env, tmp_path, data_dir):
    """Plain text is for the terminal only; the files keep the names unchanged."""
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / f"m{IN_FILE_NAME}.jsonl").write_text(
        (data_dir / "mt_bench/model_answer/alpaca-13b.jsonl").read_text("utf-8"), "utf-8"
    )
    out = tmp_path / "out"
    with FakeServer() as server:
        done = run_cli(
            ["judge", "--answers", str(answers), "--judge", "openai/j", "--judge-base-url",
             server.base_url, "--out", str(out), "--limit", "1", "--no-progress"],
            env,
        )  # fmt: skip
    assert done.returncode == 0
    results = json.loads(Path(out / "results.json").read_text("utf-8"))
    assert list(results["models"]) == [f"m{IN_FILE_NAME}"]
