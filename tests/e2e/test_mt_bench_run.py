"""MT-Bench end to end: the real CLI against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.conftest import assert_log_keys, run_cli
from turnbench.testing.fake_server import FakeServer, Reply, default_content


def run_args(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--benchmark",
        "mt-bench",
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
        *extra,
    ]


def is_judge_request(request: dict) -> bool:
    return request["model"] == "judge-model"


def test_run_generates_with_own_history_and_judges(fake_server, env, tmp_path):
    out = tmp_path / "run"
    # a child process, as a user runs it (most other tests run the CLI in-process)
    done = run_cli(run_args(fake_server, out, "--limit", "1"), env, process=True)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["benchmark"] == "mt-bench"
    assert results["model"] == "openai/model-under-test"
    assert results["judge"] == "openai/judge-model"
    assert results["complete"] is True
    assert results["counts"] == {
        "expected": 16,
        "judged": 16,
        "failed": 0,
        "pending": 0,
        "reasks": 0,
        "answers": 16,
        "unclosed_think": 0,
    }
    assert set(results["by_turn"]) == {"1", "2"}
    assert len(results["by_category"]) == 8

    answers = [r for r in fake_server.requests if not is_judge_request(r)]
    judgments = [r for r in fake_server.requests if is_judge_request(r)]
    assert len(answers) == 16 and len(judgments) == 16
    first_turn = {
        r["messages"][0]["content"]: default_content(r) for r in answers if len(r["messages"]) == 1
    }
    second_turn = [r for r in answers if len(r["messages"]) == 3]
    assert len(second_turn) == 8
    for request in second_turn:
        question_1 = request["messages"][0]["content"]
        # the model sees its own turn-1 answer, exactly as the server produced it
        assert request["messages"][1] == {"role": "assistant", "content": first_turn[question_1]}

    # the exact judge request: [system, user], n 1, temperature 0, max_tokens 2048, nothing else
    for request in judgments:
        assert set(request) == {"model", "messages", "n", "temperature", "max_tokens"}
        assert (request["n"], request["temperature"], request["max_tokens"]) == (1, 0.0, 2048)
        assert [m["role"] for m in request["messages"]] == ["system", "user"]
    # answers: per-category temperature always sent, 1024 new tokens, no system message
    temperatures = Counter(r["temperature"] for r in answers)
    assert temperatures == {0.7: 4, 0.0: 8, 0.1: 4}
    assert all(r["max_tokens"] == 1024 and r["messages"][0]["role"] == "user" for r in answers)

    # the recorded overall is the mean of the scores the fake judge gave
    scores = [float(default_content(r).split("[[")[1].split("]]")[0]) for r in judgments]
    assert abs(results["overall"] - sum(scores) / len(scores)) < 1e-9


def test_rerun_resumes_without_new_requests(fake_server, env, tmp_path):
    out = tmp_path / "run"
    assert run_cli(run_args(fake_server, out, "--limit", "1"), env).returncode == 0
    sent = len(fake_server.requests)
    before = json.loads((out / "results.json").read_text())
    again = run_cli(run_args(fake_server, out, "--limit", "1"), env)
    assert again.returncode == 0, again.stderr
    assert len(fake_server.requests) == sent
    assert "nothing has changed since" in again.stdout  # complete and unchanged: not re-read

    def configs() -> int:
        lines = (out / "log.jsonl").read_text().splitlines()
        return [json.loads(line)["kind"] for line in lines].count("config")

    assert configs() == 1
    (out / "results.state.json").unlink()  # the log is read again and nothing is sent
    again = run_cli(run_args(fake_server, out, "--limit", "1"), env)
    assert again.returncode == 0, again.stderr
    assert len(fake_server.requests) == sent
    after = json.loads((out / "results.json").read_text())
    assert after["overall"] == before["overall"] and after["counts"] == before["counts"]
    # two invocations that read the log: two config records, each with its own key
    assert_log_keys(out / "log.jsonl")
    assert configs() == 2


def test_kill_and_resume_never_repeats_finished_work(env, tmp_path):
    """SIGKILL mid-run, then resume: only requests in flight at the kill are sent twice."""
    with FakeServer(latency=0.15) as server:
        out = tmp_path / "run"
        args = [
            sys.executable,
            "-m",
            "turnbench",
            *run_args(server, out, "--limit", "3", "--concurrency", "4"),
        ]
        child = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        log = out / "log.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if log.exists() and log.read_text().count("\n") >= 20:
                break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        logged = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        finished = [r for r in logged if r["kind"] in ("answer", "judgment")]
        assert 15 <= len(finished) < 96
        sent_before = len(server.requests)

        resumed = run_cli(run_args(server, out, "--limit", "3", "--concurrency", "4"), env)
        assert resumed.returncode == 0, resumed.stderr
        results = json.loads((out / "results.json").read_text())
        assert results["complete"] and results["counts"]["judged"] == 48

        def body(request: dict) -> str:
            return json.dumps([request["model"], request["messages"]], sort_keys=True)

        counts = Counter(body(r) for r in server.requests)
        # every record finished before the kill was requested exactly once in total
        for record in finished:
            messages = record["messages"]
            model = "judge-model" if record["kind"] == "judgment" else "model-under-test"
            assert counts[json.dumps([model, messages], sort_keys=True)] == 1, record["key"]
        duplicated = sum(n - 1 for n in counts.values())
        assert duplicated <= 8  # at most what was in flight (4 per endpoint) at the kill
        assert len(server.requests) == 96 + duplicated
        assert sent_before - len(finished) <= 8


def test_judge_mode_grades_answer_files(fake_server, env, tmp_path, data_dir):
    out = tmp_path / "judged"
    done = run_cli(
        [
            "judge",
            "--benchmark",
            "mt-bench",
            "--answers",
            str(data_dir / "mt_bench/model_answer"),
            "--judge",
            "openai/judge-model",
            "--judge-base-url",
            fake_server.base_url,
            "--out",
            str(out),
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert set(results["models"]) == {"alpaca-13b", "vicuna-13b-v1.3"}
    for name, model in results["models"].items():
        assert model["model"] == name and model["complete"]
        assert model["counts"]["expected"] == 160 and model["counts"]["judged"] == 160
    assert len(fake_server.requests) == 320
    # the judged text is the file's raw answer
    vicuna = [
        json.loads(line)
        for line in (data_dir / "mt_bench/model_answer/vicuna-13b-v1.3.jsonl").open()
    ]
    first = next(a for a in vicuna if a["question_id"] == 81)["choices"][0]["turns"][0]
    assert any(first in r["messages"][1]["content"] for r in fake_server.requests)


def test_single_answer_file_still_reports_under_models(fake_server, env, tmp_path, data_dir):
    out = tmp_path / "judged"
    done = run_cli(
        [
            "judge",
            "--answers",
            str(data_dir / "mt_bench/model_answer/alpaca-13b.jsonl"),
            "--judge",
            "openai/judge-model",
            "--judge-base-url",
            fake_server.base_url,
            "--out",
            str(out),
            "--limit",
            "1",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == ["alpaca-13b"]
    assert results["models"]["alpaca-13b"]["counts"]["expected"] == 16


def test_unparseable_judge_is_reasked_then_recorded(env, tmp_path):
    def responder(request: dict) -> Reply | str:
        if request["model"] != "judge-model":
            return "an answer"
        if len(request["messages"]) == 2:
            return "I think it is good."  # no rating: must be re-asked
        # a re-ask: only question 81 (both turns quote it) gets a rating now
        judged_prompt = request["messages"][1]["content"]
        return "Rating: [[6]]" if "Compose an engaging" in judged_prompt else "still none"

    with FakeServer(responder=responder) as server:
        out = tmp_path / "run"
        done = run_cli(run_args(server, out, "--limit", "1"), env)
        assert done.returncode == 0, done.stderr  # parse failures are final outcomes
        results = json.loads((out / "results.json").read_text())
        reasks = [
            r for r in server.requests if r["model"] == "judge-model" and len(r["messages"]) == 4
        ]
    # re-asks carry the judge's reply and the fixed follow-up; at most 2 per judgment:
    # question 81's two judgments recovered on their first re-ask, 14 others used both
    assert len(reasks) == 2 * 1 + 14 * 2
    assert all(
        r["messages"][2]["role"] == "assistant"
        and r["messages"][3]["role"] == "user"
        and "[[rating]]" in r["messages"][3]["content"]
        for r in reasks
    )
    # Q81's judgments recovered on the re-ask; the others failed and are counted, not averaged
    assert results["counts"]["judged"] == 2 and results["counts"]["failed"] == 14
    assert results["overall"] == 6.0 and results["complete"] is True
    assert len(results["parse_failures"]) == 14
    assert "unparseable 14" in done.stdout


def test_bad_key_stops_the_run_at_once(env, tmp_path):
    """The endpoint check before work refuses the key: nothing is sent, nothing written."""
    keys = ("--model-api-key-env", "OPENAI_API_KEY", "--judge-api-key-env", "OPENAI_API_KEY")
    with FakeServer(api_key="sk-right-key") as server:
        out = tmp_path / "run"
        wrong = {**env, "OPENAI_API_KEY": "sk-wrong-key-123"}
        done = run_cli(run_args(server, out, *keys), wrong, process=True)  # its exit status
        sent = len(server.requests)
    assert done.returncode == 4, done.stderr
    assert "rejected the API key" in done.stderr and "Traceback" not in done.stderr
    assert "sk-wrong-key-123" not in done.stderr + done.stdout
    assert sent == 0 and not out.exists()


def test_dry_run_sends_and_writes_nothing(fake_server, env, tmp_path):
    out = tmp_path / "run"
    done = run_cli(run_args(fake_server, out, "--dry-run"), env)
    assert done.returncode == 0, done.stderr
    assert "160" in done.stdout and "prompt tokens" in done.stdout
    assert fake_server.requests == [] and not out.exists()


def test_reference_file_replaces_reference_answers(fake_server, env, tmp_path):
    references = tmp_path / "refs.jsonl"
    references.write_text(
        json.dumps(
            {
                "question_id": 111,
                "choices": [
                    {"index": 0, "turns": ["MY-CORRECTED-REFERENCE-1", "MY-CORRECTED-REFERENCE-2"]}
                ],
            }
        )
        + "\n"
    )
    out = tmp_path / "run"
    done = run_cli(
        run_args(fake_server, out, "--limit", "1", "--reference-file", str(references)), env
    )
    assert done.returncode == 0, done.stderr
    judge_prompts = [
        r["messages"][1]["content"] for r in fake_server.requests if r["model"] == "judge-model"
    ]
    assert sum("MY-CORRECTED-REFERENCE-1" in p for p in judge_prompts) == 2  # both turns
    assert sum("MY-CORRECTED-REFERENCE-2" in p for p in judge_prompts) == 1  # turn 2 only
    results = json.loads((out / "results.json").read_text())
    assert results["provenance"]["reference_sha256"]
