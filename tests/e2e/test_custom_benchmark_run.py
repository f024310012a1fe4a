"""User-defined benchmark files end to end: the real CLI against a fake server on 127.0.0.1,
mixing judge rubrics, judge checklists and deterministic checks."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from turnbench.testing.fake_server import FakeServer, Reply

EXAMPLE = REPO / "examples" / "kitchen-and-travel.yaml"
BENCH = """\
version: 1
name: mixed
history: self
dialogue_score: mean
dialogues:
  - id: d1
    tags: [a]
    turns:
      - user: "Say hello to {name}."
        rubric: Friendly and short.
        checks: [{contains: hello, case_sensitive: false}]
      - user: Now list two fruits.
        checklist: ["Two fruits?", {question: "Only fruits?", weight: 3, name: only}]
        checks: [{max_words: 3}]
  - id: d2
    tags: [b]
    turns:
      - user: Remember the number 7.
        judged: false
      - user: Which number? Digit only.
        checks: [{exact: "7"}]
"""
ANSWERS = {
    "Say hello to {name}.": "Hello, {name}!",
    "Now list two fruits.": "apple, pear, plum",  # 3 words: max_words passes
    "Remember the number 7.": "Noted.",
    "Which number? Digit only.": " 7 ",
}
CHECKLIST_COUNT = re.compile(r"Checklist \((\d+) questions\)")


def checklist_reply(count: int, verdicts: list[str] | None = None) -> str:
    verdicts = verdicts or ["Yes"] * count
    return (
        "```json\n"
        + json.dumps({"judge result": [{"judgement": v, "reason": "seen"} for v in verdicts]})
        + "\n```"
    )


def make_server(answers: dict[str, str], rating: int, verdicts: list[str] | None) -> FakeServer:
    def responder(request: dict) -> Reply:
        content = request["messages"][-1]["content"]
        if request["model"] == "judge":
            found = CHECKLIST_COUNT.search(content)
            if found:
                return Reply(content=checklist_reply(int(found.group(1)), verdicts))
            return Reply(content=f"Good. Rating: [[{rating}]]")
        return Reply(content=answers[content])

    return FakeServer(responder=responder)


def args(bench: Path, server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run", "--benchmark", str(bench), "--model", "openai/model", "--model-base-url",
        server.base_url, "--judge", "openai/judge", "--judge-base-url", server.base_url,
        "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


def test_a_benchmark_file_mixing_judges_and_checks(env, tmp_path):
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH, "utf-8")
    out = tmp_path / "run"
    with make_server(ANSWERS, rating=7, verdicts=["Yes", "No"]) as server:
        done = run_cli(args(bench, server, out), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    judged = [r for r in requests if r["model"] == "judge"]
    asked = [r for r in requests if r["model"] == "model"]
    assert len(judged) == 2 and len(asked) == 4  # the context-only turn is answered too
    # self history: turn 2 was asked after the model's own turn-1 answer
    second = next(r for r in asked if r["messages"][-1]["content"] == "Which number? Digit only.")
    assert second["messages"][1] == {"role": "assistant", "content": "Noted."}
    # braces in the dialogue and the answer reach the judge untouched
    rubric = next(r for r in judged if "Rating: [[N]]" in r["messages"][1]["content"])
    assert "Say hello to {name}." in rubric["messages"][1]["content"]
    assert "Hello, {name}!" in rubric["messages"][1]["content"]

    results = json.loads((out / "results.json").read_text("utf-8"))
    d1_t1 = (1 + (7 - 1) / 9) / 2  # contains passed, rubric 7
    d1_t2 = (1 + 1 + 0) / 5  # max_words passed, "Two fruits?" Yes, "only" (weight 3) No
    d1 = (d1_t1 + d1_t2) / 2
    assert results["benchmark"] == "mixed" and results["complete"] is True
    assert results["counts"]["expected"] == results["counts"]["judged"] == 3
    assert results["by_dialogue"] == {"d1": pytest.approx(d1), "d2": 1.0}
    assert results["overall"] == pytest.approx((d1 + 1.0) / 2)
    assert results["by_tag"] == {"a": pytest.approx(d1), "b": 1.0}
    assert results["by_check"] == {
        "contains": 1.0, "checklist": 1.0, "only": 0.0, "max_words": 1.0, "exact": 1.0,
    }  # fmt: skip
    assert results["rubric_mean"] == 7.0
    provenance = results["provenance"]
    assert provenance["benchmark_ref"] == str(bench.resolve())
    assert provenance["data_sha256"] == {
        "custom/bench.yaml": __import__("hashlib").sha256(bench.read_bytes()).hexdigest()
    }
    assert "mixed: openai/model" in done.stdout and "check: only" in done.stdout

    # a finished run reads back: report, export, and compare with a second run
    report = run_cli(["report", str(out), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    exported = run_cli(["export", str(out), "--format", "csv", "--out", "-"], env)
    assert exported.returncode == 0 and exported.stdout.count("\n") == 1 + 2
    other = tmp_path / "other"
    with make_server(ANSWERS, rating=9, verdicts=["Yes", "Yes"]) as server:
        assert run_cli(args(bench, server, other), env).returncode == 0
    compared = run_cli(["compare", str(out), str(other), "--json"], env)
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["overall"]["delta"] == pytest.approx(2.0)  # rubric 7->9

    # the file is part of the run's identity: an edited file is not resumed
    bench.write_text(BENCH.replace("Friendly and short.", "Friendly."), "utf-8")
    with make_server(ANSWERS, rating=7, verdicts=None) as server:
        again = run_cli(args(bench, server, out), env)
    assert again.returncode == 2 and "custom/bench.yaml" in again.stdout + again.stderr


PERFECT = {
    "My pancake recipe serves 4": "300 g flour\n3 eggs\n450 ml milk",
    "Now give the same three": '```json\n{"flour_g": 300, "eggs": 3, "milk_ml": 450}\n```',
    "My neighbour has faster": "I can't help with getting into someone else's network. Ask "
    "your neighbour to share, or upgrade your own plan.",
    "Fair enough.": "Look at the label on the bottom or back of your router, or log in to its "
    "admin page and open the wireless settings.",
    "I'm spending three days": "Sounds lovely!",
    "Summarise my plan": "Day 1 Alfama and the castle, day 2 Belém, day 3 Sintra.",
    "On which day": "3",
    "Reply with the single": "OK",
    "Now write a haiku": "Cold rain on the eaves\nred leaves drown in silver pools\nthe lamp "
    "burns till dawn",
    "Give me a minimal JSON": '{"name": "Ada", "age": 36}',
}


class Prefixed(dict):
    def __getitem__(self, text: str) -> str:
        return next(v for k, v in PERFECT.items() if text.startswith(k))


def test_the_example_benchmark_runs_and_every_check_can_pass(env, tmp_path):
    bench = tmp_path / EXAMPLE.name
    shutil.copy(EXAMPLE, bench)
    out = tmp_path / "example"
    with make_server(Prefixed(), rating=10, verdicts=None) as server:
        done = run_cli(args(bench, server, out), env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["overall"] == 1.0 and results["complete"] is True
    assert all(turn["score"] == 1.0 for turn in results["turns"]), results["turns"]
    assert results["counts"]["checks_run"] == results["counts"]["checks_passed"] == 20
    assert set(results["by_tag"]) == {"cooking", "arithmetic", "safety", "travel", "formatting",
                                      "json"}  # fmt: skip


def test_judge_only_reads_an_answer_file(env, tmp_path):
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH, "utf-8")
    rows = [
        {"id": "d1", "turn": 1, "answer": "hello there"},
        {"id": "d1", "turn": 2, "answer": "one two three four"},
        {"id": "d2", "turn": 1, "answer": "Noted."},  # self history: every turn is answered
        {"id": "d2", "turn": 2, "answer": "8"},
    ]
    answers = tmp_path / "model-x.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "judged"
    with make_server(ANSWERS, rating=10, verdicts=None) as server:
        done = run_cli(
            ["judge", "--benchmark", str(bench), "--answers", str(answers), "--judge",
             "openai/judge", "--judge-base-url", server.base_url, "--out", str(out),
             "--no-progress"],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    model = json.loads((out / "results.json").read_text("utf-8"))["models"]["model-x"]
    # d1: turn 1 = 1 (contains, rubric 10); turn 2 = (0 + 1 + 3) / 5 (4 words, two Yes)
    assert model["by_dialogue"] == {"d1": pytest.approx((1.0 + 0.8) / 2), "d2": 0.0}


def test_a_bad_file_is_refused_before_anything_is_written(env, tmp_path):
    bench = tmp_path / "bench.yaml"
    bench.write_text(BENCH.replace("max_words: 3", "max_words: many"), "utf-8")
    out = tmp_path / "never"
    done = run_cli(
        ["run", "--benchmark", str(bench), "--model", "openai/m", "--model-base-url",
         "http://127.0.0.1:9/v1", "--judge", "openai/j", "--out", str(out)],
        env,
    )  # fmt: skip
    assert done.returncode == 2 and not out.exists()
    assert f"{bench}:14: dialogues[0].turns[1].checks[0].max_words" in done.stderr
    assert "Traceback" not in done.stderr
