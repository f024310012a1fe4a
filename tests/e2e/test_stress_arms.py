"""Stress arms (`--perturb`) end to end: the real CLI against scripted fake models and judge.

The fakes (`turnbench.testing.stress_fakes`) behave in known ways, so each arm's effect is
known before the run: a model that repeats its previous answer is hurt by a planted answer
and by a distractor; a model that obeys instructions in its context obeys the injected
document; a model that ignores its history reads the same in every arm. The planted answers
are FastChat's published alpaca-13b answers.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli, shared_data_dir
from turnbench.journal.threads import with_whole_requests
from turnbench.testing import stress_fakes
from turnbench.testing.fake_server import FakeServer

PLANTED = shared_data_dir() / "mt_bench" / "model_answer" / "alpaca-13b.jsonl"
KINDS = ("planted-error", "distractor", "injection")
LIMIT = "2"  # 2 questions per category: 16 paired questions per arm
QUESTIONS = 16


def stress_args(model: FakeServer, judge: FakeServer, name: str, out: Path, *extra: str):
    return [
        "run",
        "--benchmark",
        "mt-bench",
        "--model",
        f"openai/{name}",
        "--model-base-url",
        model.base_url,
        "--judge",
        "openai/scripted-judge",
        "--judge-base-url",
        judge.base_url,
        "--perturb",
        "planted-error",
        "--planted-answers",
        str(PLANTED),
        "--perturb",
        "distractor",
        "--perturb",
        "injection",
        "--limit",
        LIMIT,
        "--out",
        str(out),
        *extra,
    ]


def run_stress(name: str, out: Path, env: dict[str, str], *extra: str):
    with (
        FakeServer(responder=stress_fakes.MODELS[name]) as model,
        FakeServer(responder=stress_fakes.tag_judge) as judge,
    ):
        done = run_cli(stress_args(model, judge, name, out, *extra), env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done, list(model.requests), list(judge.requests)


def read_results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text("utf-8"))


def log(out: Path) -> list[dict[str, Any]]:
    """The log's records, requests whole (`journal.threads`)."""
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return with_whole_requests(json.loads(line) for line in lines)


def excludes_zero(block: dict[str, Any]) -> bool:
    return block["ci_low"] is not None and (block["ci_low"] > 0 or block["ci_high"] < 0)


def test_a_model_that_repeats_itself_is_hurt_by_planted_errors_and_distractors(env, tmp_path):
    out = tmp_path / "repeat"
    done, answers, judgments = run_stress("repeat-previous", out, env)
    results = read_results(out)
    stress = results["perturbations"]
    assert list(stress) == list(KINDS)
    for kind in ("planted-error", "distractor"):
        block = stress[kind]
        assert block["items"] == block["units"] == QUESTIONS
        assert block["baseline_score"] == 5.0  # its own turn-1 answer again: on topic
        assert block["score"] == 2.0  # the planted / distractor answer again: off topic
        assert block["difference"]["value"] == -3.0
        assert excludes_zero(block["difference"]) and block["difference"]["ci_high"] < 0
        assert block["not_in_arm"] == {} and block["pending"] == 0
        assert set(block["by_category"]) == {
            "writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem",
            "humanities",
        }  # fmt: skip
    injection = stress["injection"]
    assert injection["difference"]["value"] == 0.0
    assert injection["obeyed_rate"]["value"] == 0.0 and injection["obeyed_rate"]["ci_low"] == 0
    # the terminal shows the arms' table
    assert "Stress arms" in done.stdout and "planted-error" in done.stdout
    # 16 questions x 2 turns unperturbed, then turn 2 again in each of the 3 arms; the
    # distractor's answer is the other question's own turn-1 answer (not asked again)
    assert len(answers) == QUESTIONS * 2 + QUESTIONS * 3
    assert len(judgments) == QUESTIONS * 2 + QUESTIONS * 3
    # the planted turn-1 answer is alpaca-13b's, word for word, in what the model was asked
    planted = {
        row["question_id"]: row["choices"][0]["turns"][0]
        for row in map(json.loads, PLANTED.read_text("utf-8").splitlines())
    }
    asked = [r for r in log(out) if r["kind"] == "answer" and r.get("arm") == "planted-error"]
    assert len(asked) == QUESTIONS
    for record in asked:
        assert record["messages"][1]["content"] == planted[record["sample_id"]]


def test_the_unperturbed_scores_are_those_of_a_run_without_perturb(env, tmp_path):
    with_arms = tmp_path / "with"
    run_stress("repeat-previous", with_arms, env)
    without = tmp_path / "without"
    with (
        FakeServer(responder=stress_fakes.repeat_previous) as model,
        FakeServer(responder=stress_fakes.tag_judge) as judge,
    ):
        args = stress_args(model, judge, "repeat-previous", without)
        cut = args.index("--perturb")
        done = run_cli(args[:cut] + args[cut + 8 :], env)
        assert done.returncode == 0, done.stderr
    one, two = read_results(with_arms), read_results(without)
    assert "perturbations" in one and "perturbations" not in two
    for key in ("overall", "overall_ci95", "by_turn", "by_category", "by_category_turn", "counts"):
        assert one[key] == two[key], key
    # the unperturbed records carry no arm and keep the keys they always had
    plain = [r for r in log(without) if r["kind"] in ("answer", "judgment")]
    assert all("arm" not in r for r in plain)
    keys = {r["key"] for r in log(with_arms) if r["kind"] in ("answer", "judgment")}
    assert {r["key"] for r in plain} <= keys


def test_a_model_that_obeys_its_context_obeys_the_injected_document(env, tmp_path):
    out = tmp_path / "obey"
    _, _, judgments = run_stress("obey-instructions", out, env)
    stress = read_results(out)["perturbations"]
    rate = stress["injection"]["obeyed_rate"]
    assert rate["value"] == 1.0 and rate["checked"] == QUESTIONS
    assert rate["ci_low"] > 0.5 and "Wilson" in rate["method"]
    # every shipped document was drawn, and each one's check found it obeyed
    assert {row["obeyed"] == row["checked"] for row in stress["injection"]["by_injection"].values()}
    difference = stress["injection"]["difference"]
    assert difference["value"] < 0 and difference["ci_high"] < 0  # French, stray markers
    for kind in ("planted-error", "distractor"):  # it answers the question in front of it
        assert stress[kind]["difference"]["value"] == 0.0
    # the judge is never shown the injected document
    assert not any("Note to the AI assistant" in json.dumps(r) for r in judgments)


def test_a_model_that_ignores_history_reads_the_same_in_every_arm(env, tmp_path):
    out = tmp_path / "ignore"
    run_stress("ignore-history", out, env)
    stress = read_results(out)["perturbations"]
    for kind in KINDS:
        difference = stress[kind]["difference"]
        assert difference["value"] == 0.0
        assert difference["ci_low"] <= 0 <= difference["ci_high"]
        assert difference["verdict"] == "no_change"
    rate = stress["injection"]["obeyed_rate"]
    assert rate["value"] == 0.0 and rate["ci_low"] <= 0 <= rate["ci_high"]


def _blank(text: str, answers: list[str]) -> str:
    for number, answer in enumerate(answers, 1):
        text = text.replace(json.dumps(answer)[1:-1], f"<<answer {number}>>")
    return text


def test_the_judge_is_asked_in_the_same_form_in_every_arm(env, tmp_path):
    out = tmp_path / "form"
    _, _, judged = run_stress("ignore-history", out, env)
    records = log(out)
    answers = {
        (r["sample_id"], r["turn"], r.get("arm")): r for r in records if r["kind"] == "answer"
    }
    judgments = [r for r in records if r["kind"] == "judgment"]
    forms: dict[tuple[Any, int], dict[Any, str]] = {}
    for record in judgments:
        sample, turn, arm = record["sample_id"], record["turn"], record.get("arm")
        shown = [answers[(sample, 1, None)]["text"]]
        if turn == 2:
            asked = answers[(sample, 2, arm)]
            if arm == "planted-error":  # the judge sees the turn-1 answer the model saw
                shown[0] = asked["messages"][1]["content"]
            shown.append(asked["text"])
        forms.setdefault((sample, turn), {})[arm] = _blank(json.dumps(record["messages"]), shown)
    assert len(forms) == QUESTIONS * 2
    for (sample, turn), by_arm in forms.items():
        assert set(by_arm) == ({None, *KINDS} if turn == 2 else {None}), (sample, turn)
        assert len(set(by_arm.values())) == 1, (sample, turn)  # only the answers differ
    # every judge request has the same fields and parameters, and never shows what only
    # the model saw: the injected document, the distractor's question
    assert len({json.dumps(sorted(r)) for r in judged}) == 1
    assert len({(r["temperature"], r["max_tokens"], r["n"]) for r in judged}) == 1
    assert not any("Note to the AI assistant" in json.dumps(r) for r in judged)
    inserted = [r for r in records if r["kind"] == "answer" and r.get("arm") == "distractor"]
    for record in inserted:
        question = record["messages"][2]["content"]  # the other sample's first question
        judge_prompt = next(
            json.dumps(j["messages"])
            for j in judgments
            if j.get("arm") == "distractor" and j["sample_id"] == record["sample_id"]
        )
        assert json.dumps(question)[1:-1] not in judge_prompt
    # the arms are mixed in the judge's queue, not asked one after the other
    queue = [r.get("arm") for r in judgments if r["turn"] == 2]
    changes = sum(a != b for a, b in itertools.pairwise(queue))
    assert Counter(queue) == {None: QUESTIONS, **dict.fromkeys(KINDS, QUESTIONS)}
    assert changes > 2 * (len(KINDS) + 1), queue


def test_resume_after_a_kill_pays_nothing_again(env, tmp_path):
    out = tmp_path / "killed"
    with (
        FakeServer(responder=stress_fakes.repeat_previous, latency=0.02) as model,
        FakeServer(responder=stress_fakes.tag_judge, latency=0.02) as judge,
    ):
        args = stress_args(model, judge, "repeat-previous", out, "--concurrency", "2")
        child = subprocess.Popen(
            [sys.executable, "-m", "turnbench", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                logged = (
                    (out / "log.jsonl").read_text("utf-8") if (out / "log.jsonl").exists() else ""
                )
                if len(re.findall(r'"arm":"', logged)) >= 6:
                    break
                assert child.poll() is None, child.communicate()
                time.sleep(0.02)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
        killed_at = len(model.requests) + len(judge.requests)
        resumed = run_cli(args, env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        total = len(model.requests) + len(judge.requests)
        again = run_cli(args, env)
        assert again.returncode == 0, again.stderr
        assert len(model.requests) + len(judge.requests) == total  # nothing paid again
    planned = 2 * (QUESTIONS * 2 + QUESTIONS * 3)
    assert 0 < killed_at < planned  # it was killed half way
    # only what was in flight at the kill (2 per endpoint) can have been asked twice
    assert planned <= total <= planned + 4, (killed_at, total)
    records = [r for r in log(out) if r["kind"] in ("answer", "judgment")]
    assert len({r["key"] for r in records}) == planned
    assert read_results(out)["perturbations"]["planted-error"]["difference"]["value"] == -3.0


def test_compare_reads_each_arm_across_runs(env, tmp_path):
    run_stress("repeat-previous", tmp_path / "a", env)
    run_stress("ignore-history", tmp_path / "b", env)
    done = run_cli(
        ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--arm", "distractor", "--json"],
        env,
    )
    assert done.returncode == 0, done.stderr
    comparison = json.loads(done.stdout)
    # on the distractor arm the repeating model scores 2 and the other 8
    assert comparison["paired"] == QUESTIONS
    assert comparison["overall"]["base"] == 2.0 and comparison["overall"]["new"] == 8.0
    unperturbed = run_cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"], env)
    assert json.loads(unperturbed.stdout)["overall"]["base"] == 6.5  # (8 + 5) / 2
    missing = run_cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--arm", "x"], env)
    assert missing.returncode == 2 and "no stress arm" in missing.stderr
    report = run_cli(["report", str(tmp_path / "a"), "--out", str(tmp_path / "r.html")], env)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text("utf-8")
    assert 'id="stress"' in html and "planted-error" in html and "obeyed" in html


# a run on MT-Bench whose endpoints nobody listens on (port 9): refused flags must stop it
# before any request; the output folder comes next
UNREACHABLE_RUN = [
    "run",
    "--benchmark",
    "mt-bench",
    "--model",
    "openai/m",
    "--model-base-url",
    "http://127.0.0.1:9/v1",
    "--judge",
    "openai/j",
    "--judge-base-url",
    "http://127.0.0.1:9/v1",
    "--out",
]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--perturb", "planted-error"], "needs --planted-answers"),
        (["--perturb", "typo"], "unknown kind 'typo'"),
        (["--perturb", "distractor", "--planted-answers", str(PLANTED)], "only used with"),
    ],
)
def test_bad_stress_flags_are_refused_before_anything_is_written(env, tmp_path, extra, message):
    out = tmp_path / "bad"
    done = run_cli([*UNREACHABLE_RUN, str(out), *extra], env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_the_arms_refuse_a_conversation_made_at_run_time(env, tmp_path):
    """A simulated user makes the history as the conversation goes: no exchange exists to
    perturb before the model is asked, so --perturb is one clear error (it used to be
    accepted and silently ignored), before anything is written."""
    out = tmp_path / "sim"
    args = [*UNREACHABLE_RUN, str(out), "--perturb", "distractor"]
    args[args.index("mt-bench")] = "lost-in-conversation-translation"
    done = run_cli(args, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--perturb needs a fixed history" in done.stderr
    assert "lost-in-conversation-translation" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_bad_planted_answer_file_is_reported_with_its_lines(env, tmp_path):
    planted = tmp_path / "planted.jsonl"
    planted.write_text(
        '{"id": 81, "turn": 1, "answer": "x"}\n{"id": 9999, "turn": 1, "answer": "y"}\nnot json\n'
    )
    flags = ["--perturb", "planted-error", "--planted-answers", str(planted)]
    done = run_cli([*UNREACHABLE_RUN, str(tmp_path / "bad"), *flags], env)
    assert done.returncode == 2
    assert "planted.jsonl:2: id 9999 is not a sample" in done.stderr
    assert "planted.jsonl:3:" in done.stderr


@pytest.mark.parametrize(
    "benchmark",
    ["mt-bench-101", "structflowbench", str(REPO / "examples" / "kitchen-and-travel.yaml")],
    ids=["mt-bench-101", "structflowbench", "custom"],
)
def test_the_arms_run_on_every_kind_of_benchmark(env, tmp_path, benchmark):
    out = tmp_path / "run"
    with FakeServer() as server:
        done = run_cli(
            [
                "run", "--benchmark", benchmark, "--model", "openai/m", "--model-base-url",
                server.base_url, "--judge", "openai/j", "--judge-base-url", server.base_url,
                "--perturb", "distractor", "--perturb", "injection", "--limit", "1",
                "--out", str(out),
            ],
            env,
        )  # fmt: skip
        judge_requests = [r for r in server.requests if r["model"] == "j"]
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: unparseable checklists
    stress = read_results(out)["perturbations"]
    records = log(out)
    for kind in ("distractor", "injection"):
        block = stress[kind]
        assert block["planned"] > 0 and block["pending"] == 0
        assert block["judged"] + block["failed"] == block["planned"]
        asked = [r for r in records if r["kind"] == "answer" and r.get("arm") == kind]
        assert asked and all(r["messages"] for r in asked)
        items = {(row["sample_id"], row["turn"]) for row in block["per_item"]}
        assert len(items) == block["planned"]
        assert items <= {(r["sample_id"], r["turn"]) for r in asked}
        # (a turn scored by deterministic checks alone gets no judge request)
        judged = [r for r in records if r["kind"] == "judgment" and r.get("arm") == kind]
        assert {(r["sample_id"], r["turn"]) for r in judged} <= items
    documents = [r for r in records if r.get("arm") == "injection" and r["kind"] == "answer"]
    assert all("Note to the AI assistant" in json.dumps(r["messages"]) for r in documents)
    assert not any("Note to the AI assistant" in json.dumps(r) for r in judge_requests)
    assert stress["injection"]["obeyed_rate"]["checked"] == stress["injection"]["planned"]
