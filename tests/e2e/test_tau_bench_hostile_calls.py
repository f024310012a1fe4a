"""Issue 44, classes 1-4: whatever an agent calls, stores or sends through tau-bench's tool
boundary, on an OpenAI-compatible server or Anthropic's API, the run finishes (exit 0), the
conversation is scored, and `report` and `view` work on what it wrote, with no traceback.

1. a value no run can keep (a 4,301-digit integer, a lone surrogate, 150 or 300 levels of
   nesting) is an error observation and no write;
2. a terminating tool ends the conversation even when its arguments are wrong;
3. one rule reads a reply's tool calls on both providers: the first 64 calls are kept, and
   arguments that are not a JSON object (an array, null, a string) are kept as their JSON
   text and refused where the call is run;
4. an Anthropic reply the SDK could not read (an input 10,000 levels deep) or a request it
   could not encode (a NaN in an input) neither ends nor stalls the run.

Each conversation: the agent's first step is the hostile call, then it tells the user it is
done, and the simulated user stops (`TauUser`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import run_cli
from turnbench.benchmarks.tau_bench.fakes import TauUser
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_server import FakeServer, Reply, tool_call
from turnbench.view.app import build_app

KEY_VAR = "TEST_ANTHROPIC_KEY"
KEY = "k-h44-0123456789"
#: fast retries: on code that retries a reply it should not, a test fails in seconds
FAST = ("--retry-initial-wait", "0.01", "--max-attempts", "2", "--request-timeout", "20")
#: an airline reservation whose user pays by credit card (update tools accept it)
RESERVATION, CARD = "VAAOXJ", "credit_card_1052991"
#: 4,299 digits: the tool stores 50 times it, 4,301 digits (no JSON reader takes more than 4,300)
HUGE = 10**4299 - 1
DONE = "All done."


def tasks_of(data_dir: Path, domain: str) -> list[dict[str, Any]]:
    return json.loads((data_dir / "tau_bench" / domain / "tasks_test.json").read_text())


def nested(depth: int) -> Any:
    """A list `depth` levels deep around one string."""
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def acted(messages: list[dict[str, Any]]) -> bool:
    """Whether the agent's conversation holds a tool result yet (Anthropic: a tool_result
    block)."""
    for message in messages:
        if message.get("role") == "tool":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
    return False


def openai_agent(first: Reply) -> Callable[[dict[str, Any]], Reply]:
    def reply(request: dict[str, Any]) -> Reply:
        return Reply(content=DONE) if acted(request["messages"]) else first

    return reply


def anthropic_agent(first: dict[str, Any] | bytes) -> Callable[[dict[str, Any]], Any]:
    def reply(body: dict[str, Any]) -> Any:
        return DONE if acted(body["messages"]) else first

    return reply


def uses(name: str, given: Any, call_id: str = "toolu_1") -> dict[str, Any]:
    """An Anthropic reply calling one tool with `given` as its input."""
    return {"text": "", "tool_use": [{"id": call_id, "name": name, "input": given}]}


def anthropic_body(blocks_json: str) -> bytes:
    """A whole Messages API reply with `blocks_json` as its content (raw JSON text)."""
    head = ('{"id": "msg_1", "type": "message", "role": "assistant", "model": "agent", '
            '"stop_reason": "tool_use", "stop_sequence": null, '
            '"usage": {"input_tokens": 10, "output_tokens": 5}, "content": ')  # fmt: skip
    return (head + blocks_json + "}").encode()


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return [r for r in with_whole_requests(map(json.loads, lines)) if r["kind"] == kind]


def fetch(app: Any, *paths: str) -> list[tuple[int, str]]:
    async def go() -> list[tuple[int, str]]:
        async with TestClient(TestServer(app)) as client:
            found = []
            for path in paths:
                response = await client.get(path)
                found.append((response.status, await response.text()))
            return found

    return asyncio.run(go())


def clean(done: Any, code: int = 0) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == code, said
    assert "Traceback" not in said, said


def run_tau(
    domain: str, env: dict[str, str], out: Path, agent: Any, *, anthropic: bool = False,
    resume: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Task 0 of `domain` with `agent` (a FakeServer or a FakeAnthropic responder) and the
    scripted user: the run, a resume of it, `report` and the viewer's pages all work, and
    the one conversation is scored. Returns the sample record."""
    tasks = tasks_of(Path(env["TURNBENCH_DATA_DIR"]), domain)
    env = {**env, KEY_VAR: KEY}
    with FakeServer(responder=TauUser(tasks)) as user:
        if anthropic:
            server: Any = FakeAnthropic(api_key=KEY, responder=agent)
            model = ["--model", "anthropic/agent", "--model-api-key-env", KEY_VAR]
        else:
            server = FakeServer(responder=agent)
            model = ["--model", "openai/agent"]
        with server:
            args = ["run", "--benchmark", f"tau-bench-{domain}", "--limit", "1", *model,
                    "--model-base-url", server.base_url, "--user-model", "openai/user",
                    "--user-base-url", user.base_url, "--out", str(out), "--no-progress",
                    *FAST]  # fmt: skip
            clean(run_cli(args, env))
            if resume:
                again = run_cli(args, env)
                clean(again)
    check_readable(out, env)
    (sample,) = records(out, "sample")
    found = json.loads((out / "results.json").read_text("utf-8"))
    assert found["complete"] and found["conversations"] == 1
    return sample


def check_readable(out: Path, env: dict[str, str]) -> None:
    """`report` writes its page and the viewer serves the run's and the conversation's."""
    clean(run_cli(["report", str(out), "--out", str(out / "report.html")], env))
    assert (out / "report.html").stat().st_size > 0
    app = build_app([out.parent], token=None)
    pages = fetch(app, f"/run/0/{out.name}", f"/conversation/0/{out.name}?sample=0")
    assert [status for status, _ in pages] == [200, 200], pages[1][1][:2000]


def step_outputs(out: Path) -> list[str]:
    return [r["output"] for r in records(out, "step")]


# -- 1. values no run can keep ------------------------------------------------------------
PASSENGER = {"first_name": "James", "last_name": "Smith", "dob": "1972-09-24"}
ADDRESS = {"user_id": "noah_brown_6181", "address1": "986 Sunset Drive", "address2": "Suite 259",
           "city": "Denver", "state": "CO", "country": "USA", "zip": "80279"}  # fmt: skip
BAGGAGES = {"reservation_id": RESERVATION, "total_baggages": HUGE, "nonfree_baggages": HUGE,
            "payment_id": CARD}  # fmt: skip
STORE = "would store "  # (the words of a value no run can keep)
ARGS = "are nested more than 100 levels deep"  # (of arguments deeper than any reader goes)
#: case: domain, tool, arguments, what the observation says
UNKEPT = {
    "a 4,301-digit integer": ("airline", "update_reservation_baggages", BAGGAGES,
                              STORE + "an integer of more than 4300 digits"),
    "a lone surrogate (airline)": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "first_name": "\ud800"}]},
        STORE + "the lone surrogate U+D800"),
    "a lone surrogate (retail)": ("retail", "modify_user_address",
                                  {**ADDRESS, "address1": "\ud800"},
                                  STORE + "the lone surrogate U+D800"),
    "a surrogate in a key": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "\udfff": 1}]},
        STORE + "the lone surrogate U+DFFF"),
    "98 levels of nesting": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "first_name": nested(95)}]},
        STORE + "a value nested more than 50 levels deep"),
    "63 levels of nesting": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "dob": nested(60)}]},
        STORE + "a value nested more than 50 levels deep"),
    "102 levels of nesting": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "first_name": nested(99)}]},
        ARGS),
    "300 levels of nesting": (
        "airline", "update_reservation_passengers",
        {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "first_name": nested(297)}]},
        ARGS),
    "300 levels of nesting (retail)": (
        "retail", "modify_user_address", {**ADDRESS, "address1": nested(299)}, ARGS),
}  # fmt: skip


@pytest.mark.parametrize("case", list(UNKEPT))
def test_a_value_no_run_can_keep_is_an_error_observation_and_no_write(case, env, tmp_path):
    """On 6f7f1ce: the integer's scoring raised in the canonical hash (exit 1, traceback,
    every resume the same); a surrogate made results.json unwritable (traceback); 102
    levels left a results.json `report` refused (exit 2), 300 a pydantic depth traceback;
    98 and 63 levels, and 300 in a retail address, were stored (or refused by type)."""
    domain, name, arguments, why = UNKEPT[case]
    out = tmp_path / "run"
    sample = run_tau(domain, env, out, openai_agent(Reply(tool_calls=[tool_call(name, arguments)])))
    (output,) = step_outputs(out)
    assert output.startswith("Error: ") and why in output and name in output, output
    # no write: the database the reward saw holds no trace of the call
    assert sample["ended"] == "user_stop" and sample["score"] == 0.0
    touched = {(d["table"], d["record"]) for d in sample["detail"]["diff"]}
    assert ("reservations", RESERVATION) not in touched
    assert ("users", "noah_brown_6181") not in touched


@pytest.mark.parametrize("case", ["a 4,301-digit integer", "a lone surrogate (airline)",
                                  "300 levels of nesting"])  # fmt: skip
def test_the_same_values_through_the_anthropic_path(case, env, tmp_path):
    """On 6f7f1ce: the integer raised in the canonical hash (exit 1, traceback)."""
    domain, name, arguments, why = UNKEPT[case]
    out = tmp_path / "run"
    sample = run_tau(domain, env, out, anthropic_agent(uses(name, arguments)), anthropic=True)
    (output,) = step_outputs(out)
    assert output.startswith("Error: ") and why in output and name in output, output
    assert sample["ended"] == "user_stop"


def _imported(data_dir: Path, name: str, arguments: Any) -> list[dict[str, Any]]:
    """One airline trajectory of task 0: the hostile call (`arguments` as the file holds
    them: a dict is written as upstream writes it, as text), its (recorded) result, a word
    to the user and the user's stop."""
    policy = (data_dir / "tau_bench" / "airline" / "policy.md").read_text()
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    call = {"id": "call_0", "type": "function",
            "function": {"name": name, "arguments": arguments}}  # fmt: skip
    traj = [
        {"role": "system", "content": policy},
        {"role": "user", "content": "Hi, I need help."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "name": name, "content": "{}"},
        {"role": "assistant", "content": DONE, "tool_calls": None},
        {"role": "user", "content": "###STOP###"},
    ]
    return [{"task_id": 0, "trial": 0, "reward": 0.0, "info": {}, "traj": traj}]


@pytest.mark.parametrize("case", ["a 4,301-digit integer", "a lone surrogate (airline)",
                                  "98 levels of nesting", "102 levels of nesting"])  # fmt: skip
def test_the_same_values_through_import_format_tau_bench(case, env, data_dir, tmp_path):
    """On 6f7f1ce: the integer raised in the canonical hash, the surrogate in writing
    results.json (tracebacks, exit 1); 102 levels left a results.json `report` refused."""
    _, name, arguments, why = UNKEPT[case]
    source = tmp_path / "trajectories.json"
    source.write_text(json.dumps(_imported(data_dir, name, arguments)))
    out = tmp_path / "imported"
    done = run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
                    str(source), "--out", str(out)], env)  # fmt: skip
    clean(done)
    check_readable(out, env)
    (output,) = step_outputs(out)
    assert output.startswith("Error: ") and why in output and name in output, output


@pytest.mark.parametrize("arguments", [[1, 2], None])
def test_imported_arguments_that_are_no_text_are_read_by_the_live_rule(
    arguments, env, data_dir, tmp_path
):
    """A trajectory's call whose `arguments` is an array or null (not the text upstream
    writes) is kept as its JSON text and refused when replayed, as on a live run. On
    6f7f1ce it was replayed as `{}`: the airport list."""
    source = tmp_path / "trajectories.json"
    source.write_text(json.dumps(_imported(data_dir, "list_all_airports", arguments)))
    out = tmp_path / "imported"
    clean(run_cli(["import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
                   str(source), "--out", str(out)], env))  # fmt: skip
    assert step_outputs(out) == ["Error: the arguments of list_all_airports must be a JSON object"]


# -- 2. a terminating tool ends the conversation, whatever its arguments -------------------
@pytest.mark.parametrize(
    ("domain", "arguments"),
    [("airline", {"summary": "help", "urgent": True}), ("airline", {}),
     ("retail", {"summary": 7})],
)  # fmt: skip
def test_a_terminating_tool_with_bad_arguments_ends_the_conversation(
    domain, arguments, env, tmp_path
):
    """On 6f7f1ce: the call was an `Error:` and the conversation went on to the user's
    stop (ended user_stop)."""
    out = tmp_path / "run"
    call = tool_call("transfer_to_human_agents", arguments)
    sample = run_tau(domain, env, out, openai_agent(Reply(tool_calls=[call])))
    (output,) = step_outputs(out)
    assert output.startswith("Error: ")
    assert sample["ended"] == "terminating_tool" and sample["steps"] == 1
    # the agent was not asked again after the call, nor the user after its opening
    assert len(records(out, "answer")) == 1 and len(records(out, "user_turn")) == 1


def test_a_terminating_tool_with_a_null_input_ends_the_conversation_on_anthropic(env, tmp_path):
    """On 6f7f1ce: `input: null` ran as `{}` (`Error: ... missing the argument 'summary'`)
    and the conversation went on (ended user_stop)."""
    out = tmp_path / "run"
    sample = run_tau("airline", env, out, anthropic_agent(uses("transfer_to_human_agents", None)),
                     anthropic=True)  # fmt: skip
    (output,) = step_outputs(out)
    assert output == "Error: the arguments of transfer_to_human_agents must be a JSON object"
    assert sample["ended"] == "terminating_tool"


# -- 3. one rule for a reply's tool calls, both providers ----------------------------------
def test_a_reply_of_65_calls_runs_its_first_and_keeps_64_on_both_providers(env, tmp_path):
    """On 6f7f1ce: the OpenAI-compatible reply was malformed ("tool_calls is not a list of
    calls"), retried and never scored (exit 1); Anthropic's 1,000 blocks were all kept."""
    first = tool_call("get_reservation_details", {"reservation_id": RESERVATION}, "call_0")
    rest = [tool_call("cancel_reservation", {"reservation_id": RESERVATION}, f"call_{n}")
            for n in range(1, 65)]  # fmt: skip
    out = tmp_path / "openai"
    run_tau("airline", env, out, openai_agent(Reply(tool_calls=[first, *rest])))
    blocks = [{"id": f"toolu_{n}", "name": "get_reservation_details",
               "input": {"reservation_id": RESERVATION}} for n in range(1000)]  # fmt: skip
    claude = tmp_path / "anthropic"
    run_tau("airline", env, claude, anthropic_agent({"text": "", "tool_use": blocks}),
            anthropic=True)  # fmt: skip
    for run in (out, claude):
        (output,) = step_outputs(run)
        assert json.loads(output)["reservation_id"] == RESERVATION  # the first call ran
        calls = records(run, "answer")[0]["tool_calls"]
        assert len(calls) == 64, run.name


@pytest.mark.parametrize("given", [[1, 2], None, "abc", 7])
def test_arguments_that_are_no_json_object_are_an_observation_on_both_providers(
    given, env, tmp_path
):
    """`arguments` (OpenAI-compatible) or `input` (Anthropic) that is an array, null, a
    string or a number. On 6f7f1ce: the OpenAI-compatible reply was malformed for an array,
    null or a number ("a tool call's arguments are no text"; retried, never scored, exit 1)
    and Anthropic ran the call with `{}` (the airport list) for every one of them."""
    expected = "Error: the arguments of list_all_airports must be a JSON object"
    # (OpenAI's arguments are JSON text: a string's is its JSON)
    arguments = json.dumps(given) if isinstance(given, str) else given
    call = {"id": "call_0", "type": "function",
            "function": {"name": "list_all_airports", "arguments": arguments}}  # fmt: skip
    out = tmp_path / "openai"
    run_tau("airline", env, out, openai_agent(Reply(tool_calls=[call])), resume=False)
    claude = tmp_path / "anthropic"
    run_tau("airline", env, claude, anthropic_agent(uses("list_all_airports", given)),
            anthropic=True, resume=False)  # fmt: skip
    assert step_outputs(out) == step_outputs(claude) == [expected]


# -- 4. replies and requests the Anthropic SDK cannot handle --------------------------------
def test_an_anthropic_input_10000_levels_deep_is_an_observation(env, tmp_path):
    """On 6f7f1ce: RecursionError in the SDK's JSON parse ended the run (exit 1)."""
    deep = "[" * 10_000 + "]" * 10_000
    blocks = ('[{"type": "tool_use", "id": "toolu_1", "name": "list_all_airports", '
              f'"input": {{"a": {deep}}}}}]')  # fmt: skip
    out = tmp_path / "run"
    sample = run_tau("airline", env, out, anthropic_agent(anthropic_body(blocks)), anthropic=True)
    (output,) = step_outputs(out)
    assert output.startswith("Error: the arguments of list_all_airports are nested more than")
    assert sample["ended"] == "user_stop"
    (step,) = records(out, "step")
    (answer,) = [a for a in records(out, "answer") if a["turn"] == step["turn"]]
    # kept as the model wrote it, once: in the answer's call (the step names the call)
    assert answer["tool_calls"][step["call"]]["function"]["arguments"] == '{"a": ' + deep + "}"
    assert "arguments" not in step


def test_an_openai_arguments_object_10000_levels_deep_is_an_observation(env, tmp_path):
    """The other provider: arguments sent as an object, not text. On 6f7f1ce: a malformed
    reply ("not JSON"), retried and never scored (exit 1)."""
    deep = "[" * 10_000 + "]" * 10_000
    message = ('{"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", '
               '"type": "function", "function": {"name": "list_all_airports", '
               f'"arguments": {deep}}}}}]}}')  # fmt: skip
    body = f'{{"id": "1", "object": "chat.completion", "model": "agent", "choices": [{{"index": 0, "message": {message}, "finish_reason": "tool_calls"}}]}}'  # noqa: E501
    out = tmp_path / "run"
    run_tau("airline", env, out, openai_agent(Reply(raw=body.encode())))
    (output,) = step_outputs(out)
    assert output.startswith("Error: the arguments of list_all_airports are nested more than")


@pytest.mark.parametrize(
    ("name", "given"),
    [("send_certificate", {"user_id": "lei_rossi_3206", "amount": float("nan")}),
     ("update_reservation_passengers",
      {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "dob": float("inf")}]})],
)  # fmt: skip
def test_a_nan_in_an_anthropic_input_is_an_observation_and_the_run_finishes(
    name, given, env, tmp_path
):
    """On 6f7f1ce: the call ran, then the next request could not be encoded ("Out of range
    float values are not JSON compliant"), counted as attempts a provider may bill though
    none was sent, and the conversation never finished (exit 1)."""
    out = tmp_path / "run"
    sample = run_tau("airline", env, out, anthropic_agent(uses(name, given)), anthropic=True)
    (output,) = step_outputs(out)
    assert output.startswith(f"Error: the arguments of {name} are not valid JSON"), output
    assert sample["ended"] == "user_stop"
    assert records(out, "failure") == [] and records(out, "attempt") == []


def test_a_nan_in_openai_arguments_text_is_an_observation_too(env, tmp_path):
    """One rule for both providers: arguments are RFC 8259 JSON (no NaN, no Infinity). On
    6f7f1ce the tool ran and stored NaN in the reservation."""
    arguments = ('{"reservation_id": "VAAOXJ", "passengers": [{"first_name": "James", '
                 '"last_name": "Smith", "dob": NaN}]}')  # fmt: skip
    out = tmp_path / "run"
    call = tool_call("update_reservation_passengers", arguments)
    run_tau("airline", env, out, openai_agent(Reply(tool_calls=[call])), resume=False)
    (output,) = step_outputs(out)
    assert output.startswith("Error: the arguments of update_reservation_passengers are not "
                             "valid JSON"), output  # fmt: skip


@pytest.mark.parametrize(
    ("name", "given", "expected", "ended"),
    [
        ("list_all_airports", [1, 2],
         "Error: the arguments of list_all_airports must be a JSON object", "user_stop"),
        ("transfer_to_human_agents", None,
         "Error: the arguments of transfer_to_human_agents must be a JSON object",
         "terminating_tool"),
        ("update_reservation_passengers",
         {"reservation_id": RESERVATION, "passengers": [{**PASSENGER, "first_name": "\ud800"}]},
         "Error: update_reservation_passengers would store the lone surrogate U+D800", "user_stop"),
    ],
)  # fmt: skip
def test_the_anthropic_batch_path_reads_calls_by_the_same_rule(
    name, given, expected, ended, env, data_dir, tmp_path
):
    """`--model-batch` on Anthropic's Message Batches: the agent's steps come back as batch
    results, read by the live path's rule. On 6f7f1ce: the array and the null ran as `{}`
    (the airport list; `missing the argument 'summary'`, the conversation going on); the
    surrogate became U+FFFD and was stored."""
    tasks = tasks_of(data_dir, "airline")
    out = tmp_path / "run"
    batch_env = {**env, KEY_VAR: KEY}
    with (
        FakeServer(responder=TauUser(tasks)) as user,
        FakeAnthropic(api_key=KEY, responder=anthropic_agent(uses(name, given)),
                      polls_to_end=1) as agent,
    ):  # fmt: skip
        args = ["run", "--benchmark", "tau-bench-airline", "--limit", "1", "--model",
                "anthropic/agent", "--model-api-key-env", KEY_VAR, "--model-base-url",
                agent.base_url, "--model-batch", "--batch-poll-interval", "0.05",
                "--user-model", "openai/user", "--user-base-url", user.base_url,
                "--out", str(out), "--no-progress", *FAST]  # fmt: skip
        clean(run_cli(args, batch_env))
        assert agent.counts["batch_create"] >= 1 and agent.counts["messages"] == 0
    check_readable(out, batch_env)
    (output,) = step_outputs(out)
    assert output.startswith(expected), output
    (sample,) = records(out, "sample")
    assert sample["ended"] == ended


def test_an_error_quoting_a_lone_surrogate_goes_back_to_anthropic_as_u_fffd(env, tmp_path):
    """A guard for the rule that writes a lone surrogate of an `input` as its escape (so the
    tool sees what an OpenAI-compatible server would have sent): a tool error that quotes
    the argument must not put the surrogate into the next request, which the SDK encodes
    as UTF-8. (On 6f7f1ce this passed: the surrogate became U+FFFD before the tool ran.)"""
    given = {"reservation_id": RESERVATION, "cabin": "economy", "payment_id": CARD,
             "flights": [{"flight_number": "\ud800", "date": "2024-05-20"}]}  # fmt: skip
    out = tmp_path / "run"
    run_tau("airline", env, out, anthropic_agent(uses("update_reservation_flights", given)),
            anthropic=True, resume=False)  # fmt: skip
    assert step_outputs(out) == ["Error: flight \ufffd not found"]


# -- 9. arguments written once ----------------------------------------------------------------
@pytest.mark.parametrize("anthropic", [False, True], ids=["openai", "anthropic"])
def test_huge_arguments_are_written_once_in_the_log(env, tmp_path, anthropic):
    """Issue 44, class 9: 20 MB of arguments made an 80 MB log on 6f7f1ce (the answer's call
    and the step record each held them). The call's arguments are in the answer's record
    only; the step names the call. Here 2 MB (the tool refuses them: too long)."""
    text = json.dumps({"airport": "x" * 2_000_000})
    out = tmp_path / "run"
    if anthropic:
        agent: Any = anthropic_agent(uses("list_all_airports", json.loads(text)))
    else:
        agent = openai_agent(Reply(tool_calls=[tool_call("list_all_airports", text, "c1")]))
    run_tau("airline", env, out, agent, anthropic=anthropic, resume=False)
    (output,) = step_outputs(out)
    assert output.startswith("Error:")
    size = (out / "log.jsonl").stat().st_size
    assert 2_000_000 < size < 3_000_000, size  # (once, and the rest of the run beside it)
