"""StructFlowBench end to end: the real CLI against a fake OpenAI-compatible server.

The fake model answers "ANSWER <id>-<turn>" (found from the messages it was sent); the fake
judge finds that mark in its prompt and says "Yes" to the odd-numbered constraints of the
turn and "No" to the others. The expected metrics are computed here from the data file and
that rule, independently of turnbench.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from turnbench.testing.fake_server import FakeServer, Reply

ANSWER = re.compile(r"ANSWER (\d+)-(\d+)")
STRUCTURAL = {"follow-up", "refinement", "expansion", "summary", "recall"}


@pytest.fixture(scope="module")
def data(data_dir: Path) -> dict:
    raw = json.loads((data_dir / "structflowbench/StructFlowBench.json").read_text("utf-8"))
    first: dict[str, int] = {}
    for number, dialogue in enumerate(raw, start=1):
        first.setdefault(dialogue["conv_task"].split(":", 1)[0], number)
    chat, flat = {}, {}
    for number in first.values():
        turns = raw[number - 1]["whole_conv"]
        for index in range(len(turns)):
            users = tuple(t["user prompt"] for t in turns[: index + 1])
            chat[users] = (number, index + 1)
            text = "".join(
                f"user:{t['user prompt']}\nassistant:{t['assistant answer']}\n"
                for t in turns[:index]
            )
            flat[text + f"user:{turns[index]['user prompt']}\n"] = (number, index + 1)
    return {"raw": raw, "planned": sorted(first.values()), "chat": chat, "flat": flat}


def verdicts(count: int) -> list[str]:
    return ["Yes" if number % 2 else "No" for number in range(1, count + 1)]


def judge_json(count: int) -> str:
    items = [{"judgement": v, "reason": "checked"} for v in verdicts(count)]
    return "```json\n" + json.dumps({"judge result": items}, indent=2) + "\n```"


def constraints(data: dict, ident: int, turn: int) -> list[dict]:
    return data["raw"][ident - 1]["whole_conv"][turn - 1]["constraints"]


def make_server(data: dict, judge=None) -> FakeServer:
    def responder(request: dict) -> Reply:
        messages = request["messages"]
        if request["model"] == "judge":
            ident, turn = (int(x) for x in ANSWER.findall(messages[0]["content"])[-1])
            count = len(constraints(data, ident, turn))
            if judge is not None:
                return Reply(content=judge(ident, turn, count))
            return Reply(content=judge_json(count))
        users = tuple(m["content"] for m in messages if m["role"] == "user")
        ident, turn = data["chat"].get(users) or data["flat"][users[-1]]
        return Reply(content=f"ANSWER {ident}-{turn} with {{braces}}")

    return FakeServer(responder=responder)


def expected(data: dict) -> dict:
    csr, isr, wcsr, results = [], [], [], []
    by_task: dict[str, list[float]] = {}
    for ident in data["planned"]:
        task = data["raw"][ident - 1]["conv_task"].split(":", 1)[0]
        for turn in range(1, len(data["raw"][ident - 1]["whole_conv"]) + 1):
            items = constraints(data, ident, turn)
            met = [1 if v == "Yes" else 0 for v in verdicts(len(items))]
            weights = [2 if c["type"] in STRUCTURAL else 1 for c in items]
            results += met
            csr.append(sum(met) / len(met))
            isr.append(1 if all(met) else 0)
            wcsr.append(sum(w * m for w, m in zip(weights, met, strict=True)) / sum(weights))
            by_task.setdefault(task, []).append(wcsr[-1])
    return {
        "CSR": sum(csr) / len(csr),
        "ISR": sum(isr) / len(isr),
        "WCSR": sum(wcsr) / len(wcsr),
        "DRFR": sum(results) / len(results),
        "by_task": {task: sum(v) / len(v) for task, v in by_task.items()},
        "turns": len(wcsr),
    }


def run_args(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run", "--benchmark", "structflowbench", "--model", "openai/model",
        "--model-base-url", server.base_url, "--judge", "openai/judge", "--judge-base-url",
        server.base_url, "--out", str(out), "--limit", "1", "--concurrency", "4", *extra,
    ]  # fmt: skip


def test_a_run_with_chat_history_and_strict_checklists(env, tmp_path, data):
    out = tmp_path / "run"
    with make_server(data) as server:
        done = run_cli(run_args(server, out), env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    want = expected(data)
    answers = [r for r in requests if r["model"] == "model"]
    judged = [r for r in requests if r["model"] == "judge"]
    assert len(answers) == len(judged) == want["turns"] == 26
    for request in answers:  # golden history as chat messages, no system message
        users = tuple(m["content"] for m in request["messages"] if m["role"] == "user")
        ident, turn = data["chat"][users]
        golden = data["raw"][ident - 1]["whole_conv"]
        assert [m["content"] for m in request["messages"] if m["role"] == "assistant"] == [
            t["assistant answer"] for t in golden[: turn - 1]
        ]
        assert (request["temperature"], request["max_tokens"]) == (0.0, 4096)
    for request in judged:  # one user message, temperature 0
        assert [m["role"] for m in request["messages"]] == ["user"]
        assert request["temperature"] == 0.0
        # the response + "\n" into the template's "{cur_llm_response}\n\n[Check List]"
        assert "with {braces}\n\n\n[Check List]" in request["messages"][0]["content"]
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["benchmark"] == "structflowbench" and results["complete"] is True
    assert results["counts"]["expected"] == results["counts"]["judged"] == 26
    assert results["counts"]["failed"] == 0 and results["history_format"] == "chat"
    for name in ("CSR", "ISR", "WCSR", "DRFR"):
        assert results["metrics"][name] == pytest.approx(want[name])
    assert results["overall"] == pytest.approx(want["WCSR"])
    assert {k: v for k, v in results["by_task"].items()} == pytest.approx(want["by_task"])
    provenance = results["provenance"]
    assert provenance["prompt_versions"]["parser"] == "checklist-strict"
    assert provenance["prompt_versions"]["reask"] == "reask-checklist-v1"
    assert provenance["judge_sampling"]["temperature"] == 0.0
    assert "StructFlowBench: openai/model" in done.stdout


def test_flat_history_and_the_reference_parser(env, tmp_path, data):
    """--history-format flat sends the reference's single message; --parser compat sends no
    judge temperature and sends a reply of the wrong length again as the same request (up
    to 5 requests), then records a failure."""
    first, second = data["planned"][:2]
    tries: dict[tuple[int, int], int] = {}

    def judge(ident: int, turn: int, count: int) -> str:
        tries[(ident, turn)] = tries.get((ident, turn), 0) + 1
        if (ident, turn) == (first, 1) and tries[(ident, turn)] < 3:
            return judge_json(count + 1)  # too long twice, then right
        if (ident, turn) == (second, 1):
            return judge_json(count + 1)  # always too long
        return judge_json(count)

    out = tmp_path / "flat"
    with make_server(data, judge) as server:
        done = run_cli(run_args(server, out, "--history-format", "flat", "--parser", "compat"),
                       env)  # fmt: skip
        requests = list(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    for request in (r for r in requests if r["model"] == "model"):
        (message,) = request["messages"]
        assert message["role"] == "user" and message["content"] in data["flat"]
    judged = [r for r in requests if r["model"] == "judge"]
    assert all("temperature" not in r for r in judged)
    assert tries[(first, 1)] == 3 and tries[(second, 1)] == 5
    log = [json.loads(line) for line in (out / "log.jsonl").open(encoding="utf-8")]
    records = {(r["sample_id"], r["turn"]): r for r in log if r["kind"] == "judgment"}
    resent = records[(first, 1)]
    assert resent["status"] == "scored" and len(resent["outputs"]) == 3
    assert resent["followup"] == "same-request"
    assert records[(second, 1)]["status"] == "parse_failed"
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["history_format"] == "flat" and results["counts"]["failed"] == 1
    assert results["parse_failures"][0]["id"] == second
    assert results["provenance"]["judge_sampling"]["temperature"] is None


def test_judge_only_reads_turn_answers(env, tmp_path, data):
    rows = [
        {"id": number, "turn": turn, "answer": f"ANSWER {number}-{turn}"}
        for number in data["planned"]
        for turn in range(1, len(data["raw"][number - 1]["whole_conv"]) + 1)
    ]
    answers = tmp_path / "my-model.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "judged"
    with make_server(data) as server:
        done = run_cli(
            ["judge", "--benchmark", "structflowbench", "--answers", str(answers), "--judge",
             "openai/judge", "--judge-base-url", server.base_url, "--out", str(out),
             "--limit", "1"],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    model = json.loads((out / "results.json").read_text("utf-8"))["models"]["my-model"]
    assert model["metrics"]["WCSR"] == pytest.approx(expected(data)["WCSR"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": 999, "turn": 1, "answer": "x"}) + "\n", "utf-8")
    refused = run_cli(
        ["judge", "--benchmark", "structflowbench", "--answers", str(bad), "--judge", "openai/j",
         "--out", str(tmp_path / "never"), "--limit", "1"],
        env,
    )  # fmt: skip
    assert refused.returncode == 2 and "id 999 is not a StructFlowBench dialogue" in refused.stderr
