"""MT-Bench-101 end to end: the real CLI against a fake OpenAI-compatible server on 127.0.0.1.

The fake model answers "MODEL ANSWER <id>-<turn>" (with surrounding whitespace, which the
judge prompt must strip), found from the user messages it was sent; the fake judge rates the
last such answer in its prompt with a fixed function of (id, turn). The expected scores are
then computed here from the data file and that function, independently of turnbench.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.testing.fake_server import FakeServer

TASKS = ("CM", "AR", "SI", "TS", "CC", "CR", "FR", "SC", "SA", "MR", "GR", "IC", "PI")
ABILITIES = {
    "Memory",
    "Understanding",
    "Interference",
    "Rephrasing",
    "Reflection",
    "Reasoning",
    "Questioning",
    "Perceptivity",
    "Adaptability",
    "Interactivity",
}
ANSWER_RE = re.compile(r"MODEL ANSWER (\d+)-(\d+)")


def rating(dialogue_id: int, turn: int) -> int:
    return 1 + (7 * dialogue_id + turn) % 10


def model_answer(dialogue_id: int, turn: int) -> str:
    return f"\n MODEL ANSWER {dialogue_id}-{turn}  \n"


@pytest.fixture(scope="module")
def data(data_dir: Path) -> dict:
    texts = json.loads((data_dir / "mt_bench_101/judge_prompts.json").read_text("utf-8"))
    first: dict[str, dict] = {}
    for line in (data_dir / "mt_bench_101/mtbench101.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["task"] not in first or row["id"] < first[row["task"]]["id"]:
            first[row["task"]] = row
    skip = set(texts["skip_first_turn_tasks"])
    planned = {
        (row["id"], turn)
        for row in first.values()
        for turn in range(2 if row["task"] in skip else 1, len(row["history"]) + 1)
    }
    by_users = {
        tuple(t["user"] for t in row["history"][:turn]): (row["id"], turn)
        for row in first.values()
        for turn in range(1, len(row["history"]) + 1)
    }
    return {
        "texts": texts,
        "dialogues": {row["id"]: row for row in first.values()},
        "planned": planned,
        "by_users": by_users,
        "skip": skip,
    }


def is_judge(request: dict) -> bool:
    return request["model"] == "judge-model"


def make_server(data: dict, judge_reply=None) -> FakeServer:
    def responder(request: dict) -> str:
        if is_judge(request):
            found = ANSWER_RE.findall(request["messages"][1]["content"])
            dialogue_id, turn = (int(x) for x in found[-1])
            if judge_reply is not None:
                return judge_reply(dialogue_id, turn)
            return f"Fine. Rating: [[{rating(dialogue_id, turn)}]]"
        users = tuple(m["content"] for m in request["messages"] if m["role"] == "user")
        return model_answer(*data["by_users"][users])

    return FakeServer(responder=responder)


def run_args(server: FakeServer, out: Path, *extra: str, limit: bool = True) -> list[str]:
    return [
        "run",
        "--benchmark",
        "mt-bench-101",
        "--model",
        "openai/model-under-test",
        "--model-base-url",
        server.base_url,
        "--judge",
        "openai/judge-model",
        "--judge-base-url",
        server.base_url,
        "--out",
        str(out),
        *(["--limit", "1"] if limit else []),
        *extra,
    ]


def expected_scores(data: dict) -> tuple[dict[str, float], float]:
    by_task = {}
    for row in data["dialogues"].values():
        turns = [t for i, t in data["planned"] if i == row["id"]]
        by_task[row["task"]] = float(min(rating(row["id"], t) for t in turns))
    return by_task, sum(by_task.values()) / len(by_task)


def test_golden_context_run_covers_all_tasks(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data) as server:
        done = run_cli(run_args(server, out), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    answers = [r for r in requests if not is_judge(r)]
    judgments = [r for r in requests if is_judge(r)]
    assert len(answers) == len(judgments) == len(data["planned"]) == 30

    # answers: golden context [u1, b1, ..., u_k], one request per judged turn, greedy
    asked = set()
    for request in answers:
        users = tuple(m["content"] for m in request["messages"] if m["role"] == "user")
        dialogue_id, turn = data["by_users"][users]
        asked.add((dialogue_id, turn))
        history = data["dialogues"][dialogue_id]["history"]
        expected = []
        for golden in history[: turn - 1]:
            expected += [
                {"role": "user", "content": golden["user"]},
                {"role": "assistant", "content": golden["bot"]},
            ]
        expected.append({"role": "user", "content": history[turn - 1]["user"]})
        assert request["messages"] == expected
        assert (request["temperature"], request["max_tokens"], request["n"]) == (0.0, 4096, 1)
    assert asked == data["planned"]  # so turn 1 of CM, AR, CR, FR, SC, SA was never asked
    assert {t for i, t in asked if data["dialogues"][i]["task"] in data["skip"]} >= {2}
    assert all(t > 1 for i, t in asked if data["dialogues"][i]["task"] in data["skip"])

    # judge: [system = preamble + rubric + score format, user ending in the stripped answer]
    texts = data["texts"]
    for request in judgments:
        assert set(request) == {"model", "messages", "n", "temperature", "max_tokens"}
        assert (request["n"], request["temperature"], request["max_tokens"]) == (1, 0.0, 2048)
        system, user = request["messages"]
        dialogue_id, turn = (int(x) for x in ANSWER_RE.findall(user["content"])[-1])
        task = data["dialogues"][dialogue_id]["task"]
        assert system == {
            "role": "system",
            "content": texts["judge_preamble"]
            + texts["task_rubrics"][task]
            + texts["score_format"],
        }
        current = data["dialogues"][dialogue_id]["history"][turn - 1]["user"]
        assert (
            f"\n\n Human: {current}\n\nAssistant:  MODEL ANSWER {dialogue_id}-{turn} \n ***"
            in (user["content"])
        )
        has_reference = "The reference solution is:" in user["content"]
        assert has_reference == (task in ("MR", "GR"))

    results = json.loads((out / "results.json").read_text())
    assert results["benchmark"] == "mt-bench-101"
    assert results["model"] == "openai/model-under-test"
    assert results["judge"] == "openai/judge-model"
    assert results["complete"] is True
    assert results["context"] == "golden" and results["reference_mode"] == "compat"
    assert {k: results["counts"][k] for k in ("expected", "judged", "failed", "pending")} == {
        "expected": 30,
        "judged": 30,
        "failed": 0,
        "pending": 0,
    }
    assert results["counts"]["incomplete_dialogues"] == 0
    by_task, overall = expected_scores(data)
    assert list(results["by_task"]) == list(TASKS)
    assert results["by_task"] == by_task
    assert results["overall"] == pytest.approx(overall)
    assert set(results["by_ability"]) == ABILITIES
    assert results["by_ability"]["Reflection"] == pytest.approx((by_task["SC"] + by_task["SA"]) / 2)
    assert set(results["by_task_turn"]) == set(TASKS)
    for task, turns in results["by_task_turn"].items():
        row = next(r for r in data["dialogues"].values() if r["task"] == task)
        assert turns == {
            str(t): float(rating(row["id"], t)) for i, t in data["planned"] if i == row["id"]
        }
    turn_1 = [v["1"] for v in results["by_task_turn"].values() if "1" in v]
    assert len(turn_1) == 7 and results["by_turn"]["1"] == pytest.approx(sum(turn_1) / 7)
    for key in ("overall_mean_over_turns", "by_task_mean_over_turns", "overall_ci95"):
        assert key in results
    assert results["provenance"]["options"] == {"context": "golden", "reference_mode": "compat"}
    assert results["provenance"]["prompt_versions"]["parser"] == "rating-strict"
    assert "MT-Bench-101" in done.stdout and "Perceptivity" in done.stdout


def test_self_context_feeds_the_models_own_answers(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data) as server:
        done = run_cli(run_args(server, out, "--context", "self"), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    answers = [r for r in requests if not is_judge(r)]
    assert len(answers) == 30
    checked = 0
    for request in answers:
        users = tuple(m["content"] for m in request["messages"] if m["role"] == "user")
        dialogue_id, turn = data["by_users"][users]
        row = data["dialogues"][dialogue_id]
        assistants = [m["content"] for m in request["messages"] if m["role"] == "assistant"]
        expected = [model_answer(dialogue_id, j) for j in range(1, turn)]
        if row["task"] in data["skip"]:
            expected[0] = row["history"][0]["bot"]  # the golden first turn stays
        assert assistants == expected
        checked += turn > 2
    assert checked > 0
    # the judge sees the conversation the model had, ending in the judged answer
    judged = [r["messages"][1]["content"] for r in requests if is_judge(r)]
    pi = next(r for r in data["dialogues"].values() if r["task"] == "PI")
    last = len(pi["history"])
    prompt = next(p for p in judged if ANSWER_RE.findall(p)[-1] == (str(pi["id"]), str(last)))
    assert f"Assistant: {model_answer(pi['id'], 1)}\n\n Human: " in prompt
    results = json.loads((out / "results.json").read_text())
    assert results["context"] == "self" and results["complete"] is True
    assert results["counts"]["judged"] == 30


def test_resuming_with_another_context_is_refused(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data) as server:
        assert run_cli(run_args(server, out), env).returncode == 0
        sent = len(server.requests)
        again = run_cli(run_args(server, out, "--context", "self"), env)
        assert len(server.requests) == sent
    assert again.returncode == 2
    assert "options.context" in again.stderr + again.stdout
    assert "Traceback" not in again.stderr


def test_compat_parser_takes_the_first_bracketed_number(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data, judge_reply=lambda i, t: "Between [7] and [[3]]: [7].") as server:
        done = run_cli(run_args(server, out, "--parser", "compat"), env)
        judge_requests = sum(is_judge(r) for r in server.requests)
    assert done.returncode == 0, done.stderr
    assert judge_requests == 30  # no re-asks in compat
    results = json.loads((out / "results.json").read_text())
    assert results["overall"] == 7.0 and results["counts"]["reasks"] == 0
    assert results["provenance"]["prompt_versions"]["parser"] == "rating-opencompass"


def judge_args(server: FakeServer, answers: Path, out: Path) -> list[str]:
    return [
        "judge",
        "--benchmark",
        "mt-bench-101",
        "--answers",
        str(answers),
        "--judge",
        "openai/judge-model",
        "--judge-base-url",
        server.base_url,
        "--out",
        str(out),
        "--limit",
        "1",
    ]


def test_judge_only_grades_an_answers_file(env, tmp_path, data):
    answers = tmp_path / "my-model.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"id": i, "turn": t, "answer": model_answer(i, t)}) + "\n"
            for i, t in sorted(data["planned"])
        )
    )
    out = tmp_path / "judged"
    with make_server(data) as server:
        done = run_cli(judge_args(server, answers, out), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert len(requests) == 30 and all(is_judge(r) for r in requests)
    assert all(" MODEL ANSWER " in r["messages"][1]["content"] for r in requests)
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == ["my-model"]
    mine = results["models"]["my-model"]
    assert mine["complete"] is True and mine["counts"]["judged"] == 30
    by_task, overall = expected_scores(data)
    assert mine["by_task"] == by_task and mine["overall"] == pytest.approx(overall)
    assert mine["context"] == "golden" and set(mine["by_ability"]) == ABILITIES


def test_bad_answers_file_is_refused_before_anything_is_written(env, tmp_path, data):
    rows = [json.dumps({"id": i, "turn": t, "answer": "x"}) for i, t in sorted(data["planned"])]
    cm = next(r["id"] for r in data["dialogues"].values() if r["task"] == "CM")
    rows[1] = json.dumps({"id": 99999, "turn": 1, "answer": "x"})
    rows[4] = json.dumps({"id": cm, "turn": 1, "answer": "x"})
    rows[6] = json.dumps({"id": "12", "turn": 1, "answer": "x"})
    answers = tmp_path / "bad.jsonl"
    answers.write_text("\n".join(rows) + "\n")
    out = tmp_path / "judged"
    with make_server(data) as server:
        done = run_cli(judge_args(server, answers, out), env)
        sent = len(server.requests)
    assert done.returncode == 2
    assert f"{answers}:2: id 99999 is not an MT-Bench-101 dialogue" in done.stderr
    assert f"{answers}:5: turn 1 of dialogue {cm} is not judged" in done.stderr
    assert f"{answers}:7: field 'id'" in done.stderr
    assert "Traceback" not in done.stderr
    assert sent == 0 and not out.exists()


def test_dry_run_counts_all_judged_turns(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data) as server:
        done = run_cli(run_args(server, out, "--dry-run", limit=False), env)
        sent = len(server.requests)
    assert done.returncode == 0, done.stderr
    assert "3615" in done.stdout and "1388 dialogues" in done.stdout
    assert sent == 0 and not out.exists()


def test_judge_only_accepts_an_earlier_run_directory(env, tmp_path, data):
    run_dir, out = tmp_path / "run", tmp_path / "rejudged"
    with make_server(data) as server:
        assert run_cli(run_args(server, run_dir), env).returncode == 0
        sent = len(server.requests)
        done = run_cli(judge_args(server, run_dir, out), env)
        rejudged = server.requests[sent:]
    assert done.returncode == 0, done.stderr
    assert len(rejudged) == 30 and all(is_judge(r) for r in rejudged)
    results = json.loads((out / "results.json").read_text())
    model = results["models"]["openai/model-under-test"]
    assert model["counts"]["judged"] == 30
    assert model["by_task"] == expected_scores(data)[0]


def _canonical(requests: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in requests)


def test_benchmark_option_flag_equals_its_own_flag(env, tmp_path, data):
    """`-B context=self` is `--context self`: the same requests, the same results."""
    runs = {}
    for name, extra in (("flag", ("--context", "self")), ("dash-b", ("-B", "context=self"))):
        out = tmp_path / name
        with make_server(data) as server:
            done = run_cli(run_args(server, out, *extra), env)
            requests = list(server.requests)
        assert done.returncode == 0, done.stderr
        results = json.loads((out / "results.json").read_text())
        runs[name] = (_canonical(requests), results)
    (flag_requests, flag_results), (b_requests, b_results) = runs["flag"], runs["dash-b"]
    assert b_requests == flag_requests
    assert b_results["context"] == flag_results["context"] == "self"
    assert b_results["provenance"]["options"] == flag_results["provenance"]["options"]
    assert b_results["by_task"] == flag_results["by_task"]
    assert b_results["overall"] == flag_results["overall"]


def test_benchmark_option_errors_name_the_option(env, tmp_path, data):
    with make_server(data) as server:
        wrong = run_cli(run_args(server, tmp_path / "a", "-B", "context=mine"), env)
        unknown = run_cli(run_args(server, tmp_path / "b", "-B", "colour=red"), env)
        clash = run_cli(run_args(server, tmp_path / "c", "-B", "context=self", "--context",
                                 "golden"), env)  # fmt: skip
        assert server.requests == []
    assert wrong.returncode == 2 and "--context 'mine' is not one of: golden, self" in wrong.stderr
    assert unknown.returncode == 2 and "mt-bench-101 has no option --colour" in unknown.stderr
    assert clash.returncode == 2 and "disagree" in clash.stderr
    for done in (wrong, unknown, clash):
        assert "Traceback" not in done.stderr
