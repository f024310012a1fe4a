"""`--strip-think` (the default) and `--no-strip-think`: what the judge sees of a reasoning
model's answers, how an answer cut off inside `<think>` is counted, and provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.judging.cleaning import clean_answer
from turnbench.testing.fake_server import FakeServer, Reply

WRITING_1 = 81  # the first writing question: with --limit 1, one question per category


@pytest.mark.parametrize(
    ("raw", "strip", "text", "unclosed"),
    [
        ("<think>step 1</think>\nThe answer is 4.", True, "The answer is 4.", False),
        ("Intro <think>a</think> and <think>b</think>end", True, "Intro and end", False),
        ("<think>cut off by the token limit", True, "", True),
        ("  \n<think>cut off", True, "", True),
        ("Answer first <think>never closed", True, "Answer first <think>never closed", False),
        ("No reasoning here.", True, "No reasoning here.", False),
        ("<think>cut off", False, "<think>cut off", False),
        ("<think>a</think>b", False, "<think>a</think>b", False),
    ],
)
def test_cleaning(raw, strip, text, unclosed):
    cleaned = clean_answer(raw, strip)
    assert (cleaned.text, cleaned.unclosed_think) == (text, unclosed)


def responder(request: dict) -> Reply:
    if request["model"] == "judge-model":
        return Reply(content="Rating: [[5]]")
    first = request["messages"][0]["content"]
    if first.startswith("Compose an engaging travel blog post"):  # question 81
        if len(request["messages"]) == 1:
            return Reply(content="<think>plan the post", finish_reason="length")
        return Reply(content="<think>short</think>Second answer.")
    return Reply(content="<think>reasoning</think>Plain answer.")


def run(out: Path, env: dict, *extra: str) -> tuple[dict, list[dict], object]:
    server = FakeServer(responder=responder).start()
    try:
        done = run_cli(
            ["run", "--benchmark", "mt-bench", "--model", "openai/m", "--model-base-url",
             server.base_url, "--judge", "openai/judge-model", "--judge-base-url",
             server.base_url, "--out", str(out), "--limit", "1", "--no-progress", *extra],
            env,
        )  # fmt: skip
        judged = [r for r in server.requests if r["model"] == "judge-model"]
    finally:
        server.stop()
    results = json.loads((out / "results.json").read_text("utf-8")) if done.returncode < 2 else {}
    return results, judged, done


def test_think_blocks_are_removed_and_a_cut_off_answer_is_counted(env, tmp_path):
    results, judged, done = run(tmp_path / "strip", env)
    assert done.returncode == 0, done.stdout + done.stderr
    prompts = "\n".join(r["messages"][1]["content"] for r in judged)
    assert "<think>" not in prompts and "Plain answer." in prompts
    assert results["provenance"]["strip_think"] is True
    assert results["counts"]["unclosed_think"] == 1
    assert results["unclosed_think"] == [{"sample_id": WRITING_1, "turn": 1}]
    assert "1 answer(s) cut off inside <think>" in done.stdout
    log = [json.loads(line) for line in (tmp_path / "strip/log.jsonl").open(encoding="utf-8")]
    cut = [r for r in log if r["kind"] == "answer" and r["meta"].get("unclosed_think")]
    assert len(cut) == 1 and cut[0]["text"] == "" and cut[0]["raw_text"] == "<think>plan the post"


def test_no_strip_think_judges_the_text_as_written(env, tmp_path):
    out = tmp_path / "raw"
    results, judged, done = run(out, env, "--no-strip-think")
    assert done.returncode == 0, done.stdout + done.stderr
    prompts = "\n".join(r["messages"][1]["content"] for r in judged)
    assert "<think>reasoning</think>Plain answer." in prompts
    assert "<think>plan the post" in prompts
    assert results["provenance"]["strip_think"] is False
    assert results["counts"]["unclosed_think"] == 0 and results["unclosed_think"] == []
    # the switch changes what is judged, so a resume with the other setting is refused
    _, _, again = run(out, env)
    assert again.returncode == 2 and "strip_think: false -> true" in again.stdout + again.stderr


def test_answers_of_many_unclosed_tags_repeat_no_request(env, tmp_path):
    """Cleaning runs in the event loop as each reply arrives: a quadratic strip of eight
    100 KB answers of unclosed tags blocked it for about a minute, the replies waiting
    meanwhile timed out and were requested (and paid for) again."""
    hostile = "An answer, then " + "<think>" * (100_000 // 7)

    def answers(request: dict) -> Reply:
        if request["model"] == "judge-model":
            return Reply(content="Rating: [[5]]")
        if len(request["messages"]) == 1:
            return Reply(content=hostile)
        return Reply(content="A second answer.")

    out = tmp_path / "hostile"
    server = FakeServer(responder=answers).start()
    try:
        done = run_cli(
            ["run", "--benchmark", "mt-bench", "--model", "openai/m", "--model-base-url",
             server.base_url, "--judge", "openai/judge-model", "--judge-base-url",
             server.base_url, "--out", str(out), "--limit", "1", "--no-progress",
             "--request-timeout", "5"],
            env,
            timeout=600,
        )  # fmt: skip
        posts = len(server.requests)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    log = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    answered = [r for r in log if r["kind"] == "answer"]
    judged = [r for r in log if r["kind"] == "judgment"]
    assert len(answered) == 16 and len(judged) == 16
    assert posts == 32, f"{posts} requests for 32 items"
    assert [r["attempts"] for r in answered] == [1] * 16
    assert [r["attempts"] for r in judged] == [1] * 16
    assert sum(r["text"] == hostile for r in answered) == 8  # an unclosed tag after text stays


def test_an_answer_cut_off_inside_think_is_not_judged(env, tmp_path):
    """README: an answer cut off inside an unclosed <think> is counted and listed instead
    of being judged as an empty answer (it was judged as empty and averaged in)."""
    out = tmp_path / "cut"
    results, judged, done = run(out, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(judged) == 15  # 8 questions x 2 turns, less the cut-off answer
    assert not any(
        "Compose an engaging travel blog post" in r["messages"][1]["content"]
        and "[The Start of Assistant's Answer]\n\n[The End of Assistant's Answer]"
        in r["messages"][1]["content"]
        for r in judged
    )
    counts = results["counts"]
    assert (counts["expected"], counts["judged"], counts["failed"], counts["pending"]) == (
        16, 15, 1, 0
    )  # fmt: skip
    assert results["complete"] is True
    [failure] = results["parse_failures"]
    assert failure["question_id"] == WRITING_1 and failure["turn"] == 1
    assert failure["reason"] == "answer cut off inside <think>: not judged"
    assert results["by_turn"]["1"] == 5.0  # the 7 judged first turns, nothing for the cut one
    log = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    assert not [r for r in log if r["kind"] == "judgment" and r["sample_id"] == WRITING_1
                and r["turn"] == 1]  # fmt: skip
    assert "unparseable" not in done.stdout
    # a resume has nothing to send and says the same
    again, asked, resumed = run(out, env)
    assert resumed.returncode == 0 and asked == []
    assert again["counts"] == counts and again["parse_failures"] == [failure]


CHECKED = """\
version: 1
name: cut-checks
history: golden
dialogues:
  - id: d1
    turns:
      - user: Think, then answer.
        checks: [{max_words: 100}]
  - id: d2
    turns:
      - user: Answer.
        checks: [{max_words: 100}]
"""


def test_a_cut_off_answer_is_not_scored_by_checks(env, tmp_path):
    """A turn scored by deterministic checks only: its cut-off (empty) answer would pass
    `max_words`; it is a failed turn and its dialogue has no score."""
    bench = tmp_path / "bench.yaml"
    bench.write_text(CHECKED, "utf-8")

    def answers(request: dict) -> Reply:
        if request["messages"][-1]["content"] == "Think, then answer.":
            return Reply(content="<think>cut off by the token limit", finish_reason="length")
        return Reply(content="Short.")

    server = FakeServer(responder=answers).start()
    try:
        done = run_cli(
            ["run", "--benchmark", str(bench), "--model", "openai/m", "--model-base-url",
             server.base_url, "--judge", "openai/judge", "--judge-base-url", server.base_url,
             "--out", str(tmp_path / "run"), "--no-progress"],
            env,
        )  # fmt: skip
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "run/results.json").read_text("utf-8"))
    turns = {t["id"]: t for t in results["turns"]}
    assert turns["d1"]["status"] == "failed" and turns["d1"]["score"] is None
    assert turns["d1"]["checks"] == []
    assert results["by_dialogue"] == {"d1": None, "d2": 1.0}
    assert results["incomplete_dialogue_ids"] == ["d1"]
    assert results["by_check"] == {"max_words": 1.0}  # d2's answer only
    assert results["counts"]["unclosed_think"] == 1
