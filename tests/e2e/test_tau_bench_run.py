"""tau-bench through the real CLI against scripted fake servers: a perfect agent scores 1 on
every task, a lazy one exactly the share of tasks needing no change and no output; the model
never sees the instruction; the requests carry the tools in OpenAI's shape and tool results
come back as `tool` messages; pass^k over trials; a failure says why; kill -9 mid-conversation
then resume repays nothing finished."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.reliability.helpers import start_cli, wait_until
from turnbench.backends.openai_compat import wire_messages
from turnbench.benchmarks.tau_bench.fakes import LazyAgent, PerfectAgent, TauUser, instruction_seen
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer, Reply, tool_call


def tasks_of(data_dir: Path, domain: str, split: str = "test") -> list[dict[str, Any]]:
    return json.loads((data_dir / "tau_bench" / domain / f"tasks_{split}.json").read_text())


def command(domain: str, agent: FakeServer, user: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "run", "--benchmark", f"tau-bench-{domain}", "--model", "openai/agent",
        "--model-base-url", agent.base_url, "--user-model", "openai/user",
        "--user-base-url", user.base_url, "--out", str(out), "--no-progress",
        "--concurrency", "64", *extra,
    ]  # fmt: skip


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in with_whole_requests(map(json.loads, lines)) if r["kind"] == kind]


def results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text("utf-8"))


def lazy_share(data_dir: Path, domain: str, split: str = "test") -> float:
    """The tasks a do-nothing agent passes: no gold action changes the database (only reads,
    `think`, `calculate`, a transfer) and nothing must be told to the user."""
    golden = [
        json.loads(line)
        for line in (data_dir / "tau_bench" / domain / "golden_replays.jsonl")
        .read_text()
        .splitlines()
    ]
    initial = json.loads((data_dir / "tau_bench" / "manifest.json").read_text())[domain][
        "initial_db_sha256"
    ]
    tasks = tasks_of(data_dir, domain, split)
    mine = [g for g in golden if g["split"] == split]
    passed = sum(
        1 for g in mine if g["final_db_sha256"] == initial and not tasks[g["index"]]["outputs"]
    )
    return passed / len(mine)


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_a_perfect_agent_scores_1_on_every_task_and_never_sees_the_instruction(
    domain, env, data_dir, tmp_path
):
    tasks = tasks_of(data_dir, domain)
    out = tmp_path / "perfect"
    with (
        FakeServer(responder=PerfectAgent(tasks)) as agent,
        FakeServer(responder=TauUser(tasks)) as user,
    ):
        done = run_cli(command(domain, agent, user, out), env)
        assert done.returncode == 0, done.stdout + done.stderr
        agent_requests, user_requests = list(agent.requests), list(user.requests)
    found = results(out)
    assert found["overall"] == 1.0 and found["pass_hat_k"] == {"1": 1.0}
    assert found["complete"] and found["tasks"] == found["conversations"] == len(tasks)
    assert found["failures"] == [] and found["db_match_rate"] == found["outputs_rate"] == 1.0
    # one record per finished conversation, with its task, trial and reward at the top
    samples = records(out, "sample")
    assert sorted(s["task_id"] for s in samples) == list(range(len(tasks)))
    assert {(s["trial"], s["reward"]) for s in samples} == {(0, 1.0)}
    # the instruction goes to the user model only; the agent gets the policy and the tools
    assert not instruction_seen(agent_requests, tasks)
    assert instruction_seen(user_requests, tasks)
    schemas = json.loads((data_dir / "tau_bench" / domain / "tools.json").read_text())
    assert all(r["tools"] == schemas for r in agent_requests)
    policy = (data_dir / "tau_bench" / domain / "policy.md").read_text()
    assert all(r["messages"][0] == {"role": "system", "content": policy} for r in agent_requests)
    results_of_tools = [m for r in agent_requests for m in r["messages"] if m["role"] == "tool"]
    assert results_of_tools and all(
        set(m) == {"role", "tool_call_id", "content"} and isinstance(m["content"], str)
        for m in results_of_tools
    )
    # the user model is asked as upstream asks it: the instruction in its system message,
    # the agent's greeting as its first `user` message
    first = user_requests[0]["messages"]
    assert first[0]["content"].startswith("You are a user interacting with an agent.")
    assert first[1] == {"role": "user", "content": "Hi! How can I help you today?"}


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_a_lazy_agent_scores_exactly_the_share_of_tasks_needing_nothing(
    domain, env, data_dir, tmp_path
):
    tasks = tasks_of(data_dir, domain)
    out = tmp_path / "lazy"
    with FakeServer(responder=LazyAgent()) as agent, FakeServer(responder=TauUser(tasks)) as user:
        done = run_cli(command(domain, agent, user, out), env)
        assert done.returncode == 0, done.stdout + done.stderr
    found = results(out)
    assert found["overall"] == pytest.approx(lazy_share(data_dir, domain))
    assert 0 < found["overall"] < 1
    # every failure says why: a database that differs from the gold state, or outputs untold
    failure = found["failures"][0]
    assert failure["db_match"] is False or failure["missing_outputs"]
    if not failure["db_match"]:
        assert failure["diff"] and {"table", "record", "path", "expected", "found"} <= set(
            failure["diff"][0]
        )


def test_pass_hat_k_over_trials_and_a_failure_that_says_why(env, data_dir, tmp_path):
    """Three trials of two airline tasks: the agent gets task 1 right every time, and task 0
    wrong in its second conversation (it cancels another reservation than the one asked)."""
    tasks = tasks_of(data_dir, "airline")[:2]
    perfect = PerfectAgent(tasks)
    openings: list[str] = []

    def flaky(request: dict[str, Any]) -> Reply:
        first = next(m for m in request["messages"] if m["role"] == "user")["content"]
        if len(request["messages"]) == 2:  # (a conversation's first step)
            openings.append(first)
        second_of_task_0 = "task 0." in first and openings.count(first) == 2
        if second_of_task_0 and not any(m["role"] == "tool" for m in request["messages"]):
            return Reply(tool_calls=[tool_call("cancel_reservation", {"reservation_id": "4WQ150"})])
        return perfect(request)

    class Reciting(TauUser):
        """Task 1's user reads its whole instruction out in its opening (a leak)."""

        def __call__(self, request: dict[str, Any]) -> str:
            said = super().__call__(request)
            if self.task_of(request) == 1 and said.startswith("I am calling"):
                return f"{said} {tasks[1]['instruction']}"
            return said

    out = tmp_path / "trials"
    with FakeServer(responder=flaky) as agent, FakeServer(responder=Reciting(tasks)) as user:
        args = command("airline", agent, user, out, "--limit", "2", "--simulations", "3")
        done = run_cli([*args, "--concurrency", "1"], env)
        assert done.returncode == 0, done.stdout + done.stderr
    found = results(out)
    rewards = sorted((s["task_id"], s["reward"]) for s in records(out, "sample"))
    assert rewards == [(0, 0.0), (0, 1.0), (0, 1.0), (1, 1.0), (1, 1.0), (1, 1.0)]
    # pass^k = mean over tasks of C(c, k) / C(3, k), with c = 2 and 3
    assert found["pass_hat_k"] == pytest.approx({"1": (2 / 3 + 1) / 2, "2": (1 / 3 + 1) / 2,
                                                 "3": (0 + 1) / 2})  # fmt: skip
    assert found["overall"] == pytest.approx(5 / 6) and found["trials"] == 3
    assert set(found["pass_hat_k_ci95"]) == {"1", "2", "3"}
    (failure,) = found["failures"]
    assert failure["task_id"] == 0 and failure["ended"] == "user_stop"
    assert not failure["db_match"] and failure["missing_outputs"] == []
    wrong = {(d["table"], d["record"]) for d in failure["diff"]}
    assert ("reservations", "4WQ150") in wrong  # the one it cancelled: found changed
    assert all(set(d) == {"table", "record", "path", "expected", "found"} for d in failure["diff"])
    # the simulated user's slips, per conversation (a task's trials are conversations)
    simulator = found["simulator"]
    assert simulator["conversations"] == 6
    assert list(simulator["conversations_with"]) == [
        "leaked_instruction", "answered_itself", "role_switch", "stopped_before_change"
    ]  # fmt: skip
    assert simulator["conversations_with"]["leaked_instruction"] == 3


def test_the_dry_run_sends_nothing_and_sizes_every_role(env, data_dir, tmp_path):
    with FakeServer() as agent, FakeServer() as user:
        done = run_cli(command("airline", agent, user, tmp_path / "dry", "--dry-run",
                               "--simulations", "4"), env)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert agent.requests == [] and user.requests == []
    assert "4 trial(s) per task" in done.stdout
    assert not (tmp_path / "dry").exists()


def test_kill_9_mid_conversation_then_resume_repays_nothing_finished(env, data_dir, tmp_path):
    tasks = tasks_of(data_dir, "retail")[:6]
    out = tmp_path / "killed"
    with (
        FakeServer(responder=PerfectAgent(tasks), latency=0.05) as agent,
        FakeServer(responder=TauUser(tasks), latency=0.05) as user,
    ):
        args = command("retail", agent, user, out, "--limit", "6", "--concurrency", "2")
        child = start_cli(args, env)
        try:
            wait_until(
                lambda: (
                    (out / "log.jsonl").exists()
                    and (out / "log.jsonl").read_text().count('"kind":"step"') >= 4
                ),
                what="tool steps in the log",
            )
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
        before = with_whole_requests(
            json.loads(line)
            for line in (out / "log.jsonl").read_text().splitlines()
            if line.strip().endswith("}")
        )
        asked_before = [r for r in before if r["kind"] in ("answer", "user_turn")]
        steps_before = [r["key"] for r in before if r["kind"] == "step"]
        sent_agent, sent_user = list(agent.requests), list(user.requests)
        resumed = run_cli(args, env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        again_agent = agent.requests[len(sent_agent) :]
        again_user = user.requests[len(sent_user) :]
    # nothing the log held before the kill was asked again
    for record in asked_before:
        repeated = again_agent if record["kind"] == "answer" else again_user
        assert record["messages"] not in [r["messages"] for r in repeated], record["key"]
    # every tool step logged before the kill is in the log once: replayed, not run again
    steps_after = [r["key"] for r in records(out, "step")]
    assert all(steps_after.count(key) == 1 for key in steps_before)
    assert results(out)["overall"] == 1.0 and results(out)["complete"]


def test_perturb_is_refused_for_a_conversation_made_at_run_time(env, tmp_path):
    with FakeServer() as agent, FakeServer() as user:
        done = run_cli(command("airline", agent, user, tmp_path / "p", "--perturb", "distractor"),
                       env)  # fmt: skip
    assert done.returncode == 2 and "--perturb needs a fixed history" in done.stderr


def test_an_embedded_smoke_run_is_said_to_be_one_and_kept_short(env, data_dir, tmp_path):
    """`--model local/smollm2 --user-model local/smollm2` is a smoke test of the pipeline: the
    command says so, and without flags that set them the conversation is cut to 6 agent
    steps of 160-token answers and 64-token user turns (the dry run shows the bounds)."""
    args = ["run", "--benchmark", "tau-bench-airline", "--limit", "2", "--model",
            "local/smollm2", "--user-model", "local/smollm2", "--out", str(tmp_path / "dry"),
            "--dry-run", "--no-progress"]  # fmt: skip
    done = run_cli(args, env)
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "is a small embedded model playing the conversation" in said
    assert "its scores mean nothing" in said
    assert "at its step limit (6 agent steps" in said
    # 2 tasks x 6 steps of 160 tokens; 2 x 4 user turns of 64
    assert re.search(r"answers \(local/smollm2\) │ 12 │ [\d,]+ │ 1,920 │", said), said
    assert re.search(r"user turns \(local/smollm2\) │ 8 │ [\d,]+ │ 512 │", said), said
    longer = run_cli([*args, "-B", "max_steps=9", "--max-new-tokens", "100"], env)
    said = " ".join(longer.stdout.split())
    assert "at its step limit (9 agent steps" in said
    assert re.search(r"answers \(local/smollm2\) │ 18 │ [\d,]+ │ 1,800 │", said), said


def test_compare_pairs_the_tasks_of_two_runs_by_their_rewards(env, data_dir, tmp_path):
    """A task's conversations are its sample's scores (its trials paired with the same
    trials of the other run), so `turnbench compare` finds the perfect agent better."""
    tasks = tasks_of(data_dir, "airline")
    runs = {}
    for name, agent_player in (("lazy", LazyAgent()), ("perfect", PerfectAgent(tasks))):
        with (
            FakeServer(responder=agent_player) as agent,
            FakeServer(responder=TauUser(tasks)) as user,
        ):
            runs[name] = tmp_path / name
            done = run_cli(command("airline", agent, user, runs[name], "--limit", "8"), env)
            assert done.returncode == 0, done.stdout + done.stderr
    compared = run_cli(["compare", str(runs["lazy"]), str(runs["perfect"]), "--json"], env)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    report = json.loads(compared.stdout)
    assert [row["n"] for row in report["rows"]] == [8]
    assert report["overall"]["verdict"] == "better"
    assert report["overall"]["delta"] == pytest.approx(1.0 - results(runs["lazy"])["overall"])


def test_a_reply_of_two_calls_keeps_its_first_and_the_log_stays_a_thread(env, data_dir, tmp_path):
    """tau-bench runs only the first call of a reply, as upstream's agent does: the next
    request carries that call alone and its result; the answer that asked it still records
    both calls (what the model said), the record of the next step keeps only what its
    request appended (its `after` the first answer: the log grows with the conversation,
    not its square), and the conversation read back (export) is what the model was sent."""
    calls = [tool_call("get_user_details", {"user_id": "mia_li_3668"}, "c1"),
             tool_call("list_all_airports", {}, "c2")]  # fmt: skip

    def agent(request: dict[str, Any]) -> Reply:
        if not any(m["role"] == "tool" for m in request["messages"]):
            return Reply(tool_calls=calls)
        return Reply(content="Done.")

    out = tmp_path / "run"
    tasks = tasks_of(data_dir, "airline")
    with FakeServer(responder=agent) as model, FakeServer(responder=TauUser(tasks)) as user:
        done = run_cli([*command("airline", model, user, out), "--limit", "1"], env)
        assert done.returncode == 0, done.stdout + done.stderr
        sent = list(model.requests)
    first, second = records(out, "answer")[:2]
    assert [c["id"] for c in first["tool_calls"]] == ["c1", "c2"] and first["kept_calls"] == 1
    raw = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    (kept,) = [r for r in raw if r["kind"] == "answer" and r["turn"] == 2]
    assert kept["after"] == first["key"] and [m["role"] for m in kept["messages"]] == ["tool"]
    carried = [m for m in sent[1]["messages"] if m["role"] == "assistant"]
    assert [c["id"] for c in carried[-1]["tool_calls"]] == ["c1"]
    assert wire_messages(second["messages"]) == sent[1]["messages"]  # (made whole again)
    target = tmp_path / "conversations.jsonl"
    done = run_cli(["export", str(out), "--format", "conversations", "--out", str(target)], env)
    assert done.returncode == 0, done.stderr
    (row,) = map(json.loads, target.read_text().splitlines())
    last = sent[-1]["messages"]
    assert row["messages"][: len(last)] == last  # (the last request, as the server got it)
    assert row["messages"][-1]["content"].find("###STOP###") >= 0 or row["ended"] != "user_stop"
