"""The seam onto the upstream package returns what upstream's own runtime returns: the tool
results of every ground-truth call, the ground-truth verdicts, the environments (cached
parse against upstream's loading), and the wire shapes of upstream's OpenAI element."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("agentdojo", reason="needs the agentdojo extra: pip install '.[agentdojo]'")

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, PipelineConfig
from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM
from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
from agentdojo.types import ChatAssistantMessage, get_text_content_as_str

from tests.agentdojo.harness import MODEL, converse
from turnbench.benchmarks.agentdojo import upstream
from turnbench.benchmarks.agentdojo.fakes import (
    AgentServer,
    ScriptedAgent,
    masked,
    upstream_ground_truth,
)


@pytest.fixture(scope="module")
def bench() -> upstream.Benchmark:
    return upstream.load()


@pytest.mark.parametrize(
    ("version", "suite_name"),
    [
        (None, "workspace"),
        (None, "travel"),
        (None, "banking"),
        (None, "slack"),
        ("v1", "workspace"),  # upstream's own ground truth fails user_task_7 there
    ],
)
def test_ground_truth_through_the_seam_is_upstreams(version: str | None, suite_name: str) -> None:
    """Each ground-truth call, sent as a model sends it (JSON arguments) and run through
    `run_tool_call`, returns the text upstream's runtime returns for it; the verdict of the
    conversation (the task's GROUND_TRUTH_OUTPUT as the final text) is upstream's for its
    GroundTruthPipeline, task by task."""
    suite = upstream.load(version).suite(suite_name)
    verdicts: dict[str, tuple[bool, bool]] = {}
    default = suite.upstream.load_and_inject_default_environment({})
    for task_id in suite.user_task_ids():
        conversation = suite.environment(task_id)
        outcomes = [
            suite.run_tool_call(
                conversation.environment, call.function, json.dumps(call.args), f"call_{i}"
            )
            for i, call in enumerate(suite.ground_truth(task_id, conversation.pre))
        ]
        expected_texts, expected_utility = upstream_ground_truth(suite, task_id, default)
        assert [masked(o.content) for o in outcomes] == [masked(t) for t in expected_texts]
        assert all(o.error is None for o in outcomes), task_id
        verdict = suite.check(
            task_id,
            None,
            suite.ground_truth_output(task_id),
            conversation,
            [o.call for o in outcomes],
        )
        verdicts[task_id] = (verdict.utility, expected_utility)
        assert verdict.security is None
    assert {t: ours for t, (ours, _) in verdicts.items()} == {
        t: theirs for t, (_, theirs) in verdicts.items()
    }
    failing = sorted(t for t, (ours, _) in verdicts.items() if not ours)
    assert failing == (["user_task_7"] if version == "v1" else [])


def test_tool_call_errors_are_upstreams(bench: upstream.Benchmark) -> None:
    """An unknown tool, arguments the tool's schema refuses, and a string that reads as a
    Python list (turned into a list in place) give what upstream's ToolsExecutor gives;
    arguments no JSON reader accepts become the call's error, the call kept with no
    arguments."""
    suite = bench.suite("workspace")
    cases = [
        ("no_such_tool", {}),
        ("send_email", {"recipients": 3}),
        ("send_email", {"recipients": "['a@b.com']", "subject": "s", "body": "b"}),
        ("search_emails", {"query": "lunch"}),
    ]
    for name, arguments in cases:
        ours_env = suite.environment("user_task_0").environment
        theirs_env = suite.environment("user_task_0").environment
        outcome = suite.run_tool_call(ours_env, name, json.dumps(arguments), "c1")
        call = FunctionCall(function=name, args=dict(arguments), id="c1")
        message = ChatAssistantMessage(role="assistant", content=None, tool_calls=[call])
        _, _, _, messages, _ = ToolsExecutor().query(
            "", FunctionsRuntime(suite.upstream.tools), theirs_env, [message]
        )
        expected = messages[-1]
        assert outcome.error == expected["error"], name
        assert masked(outcome.text) == masked(get_text_content_as_str(expected["content"]))
        assert outcome.call == expected["tool_call"], name
        assert masked(ours_env.model_dump()) == masked(theirs_env.model_dump()), name
    converted = suite.run_tool_call(
        suite.environment("user_task_0").environment,
        "send_email",
        json.dumps({"recipients": "['a@b.com']", "subject": "s", "body": "b"}),
    )
    assert converted.call.args["recipients"] == ["a@b.com"] and converted.error is None
    assert suite.run_tool_call(ours_env, "no_such_tool", "{}").content == (
        "Invalid tool no_such_tool provided."
    )
    broken = suite.run_tool_call(ours_env, "search_emails", '{"query": ', "c9")
    assert broken.malformed and broken.error is not None
    assert broken.error.startswith("JSONDecodeError: ")
    assert broken.call.function == "search_emails" and dict(broken.call.args) == {}
    assert broken.call.id == "c9"
    listed = suite.run_tool_call(ours_env, "search_emails", "[1, 2]")
    assert listed.malformed and listed.error is not None
    assert listed.error.startswith("ValidationError: ")
    # a tool without parameters called with an empty arguments text runs
    assert suite.run_tool_call(ours_env, "get_current_day", "").error is None


def test_defenses_are_upstreams_pipeline(bench: upstream.Benchmark) -> None:
    """Spotlighting delimits results and extends the system message; repeat_user_prompt
    repeats the prompt; the tool filter keeps the tools whose names occur in the reply,
    asking with tool_choice none, as upstream's elements do."""
    suite = bench.suite("banking")
    plain = upstream.Pipeline(MODEL)
    spot = upstream.Pipeline(MODEL, "spotlighting_with_delimiting")
    assert spot.system_message.startswith(plain.system_message)
    assert "<<" in spot.system_message[len(plain.system_message) :]
    environment = suite.environment("user_task_0").environment
    balance = suite.run_tool_call(environment, "get_balance", "{}", pipeline=spot)
    assert balance.content == f"<<{suite.run_tool_call(environment, 'get_balance', '{}').text}>>"
    assert upstream.Pipeline(MODEL, "repeat_user_prompt").repeats_user_prompt
    assert not plain.repeats_user_prompt and plain.tool_filter_prompt is None
    assert plain.max_steps == 15 and plain.name == MODEL
    filtered = upstream.Pipeline(MODEL, "tool_filter")
    assert filtered.name == f"{MODEL}-tool_filter" and filtered.model_name() == "GPT-4"
    step = filtered.tool_filter(suite, suite.prompt("user_task_0"), "read_file,send_money")
    assert step.kept == ["send_money", "read_file"]  # the runtime's order
    assert step.request["tool_choice"] == "none" and step.request["temperature"] == 0.0
    assert step.request["messages"][-1]["content"][0]["text"] == filtered.tool_filter_prompt
    assert [t["function"]["name"] for t in step.request["tools"]] == suite.tool_names()
    # a call to a tool the filter dropped is an invalid tool, as upstream's runtime has it
    dropped = suite.run_tool_call(environment, "get_balance", "{}", tools=step.kept)
    assert dropped.error == "Invalid tool get_balance provided."
    with pytest.raises(upstream.UserError, match="unknown agentdojo defense"):
        upstream.Pipeline(MODEL, "prayer")


def test_environment_cache_equals_upstream_loading(bench: upstream.Benchmark) -> None:
    """The cached environment equals upstream's `load_and_inject_default_environment` for
    every pair of banking and slack under important_instructions, and for the goals that
    YAML folds (quotes, line breaks) in workspace (every 4th user task); an injection that
    breaks upstream's YAML breaks ours the same way; no conversation changes the cached
    parse."""
    pipeline = upstream.Pipeline(MODEL)
    for suite_name in ("banking", "slack", "workspace"):
        suite = bench.suite(suite_name)
        attack = suite.attack("important_instructions", pipeline)
        user_task_ids, injection_ids = suite.user_task_ids(), suite.injection_task_ids()
        if suite_name == "workspace":  # every 4th user task: upstream's loading is slow there
            user_task_ids = user_task_ids[::4]
            injection_ids = ["injection_task_9", "injection_task_13"]
        for user_task_id in user_task_ids:
            for injection_id in injection_ids:
                injections = attack.injections(user_task_id, injection_id)
                ours = suite.template.environment(injections)
                theirs = suite.upstream.load_and_inject_default_environment(injections)
                assert ours == theirs, (suite_name, user_task_id, injection_id)
                conversation = suite.environment(user_task_id, injections)
                for call in suite.ground_truth(injection_id, conversation.pre):
                    suite.run_tool_call(conversation.environment, call.function, dict(call.args))
        assert suite.template.fast and suite.template.pristine()
    banking = bench.suite("banking")
    broken = {"injection_bill_text": 'say "hi"'}
    with pytest.raises(Exception) as ours_error:
        banking.template.environment(broken)
    with pytest.raises(Exception) as theirs_error:
        banking.upstream.load_and_inject_default_environment(broken)
    assert type(ours_error.value) is type(theirs_error.value)
    with pytest.raises(upstream.UserError, match="injections"):
        banking.environment("user_task_0", {"no_such_vector": "x"})


def test_upstream_pipeline_sends_what_the_seam_gives(bench: upstream.Benchmark) -> None:
    """Upstream's own pipeline (its OpenAILLM element against the scripted server) sends the
    system message, prompt and tools the seam gives, and receives, for every ground-truth
    call of banking and slack, the tool results the seam's conversation loop returns; its
    verdicts are the loop's."""
    agent = ScriptedAgent("ground_truth", benchmark=bench)
    with AgentServer(agent) as server:
        import openai

        llm = OpenAILLM(openai.OpenAI(api_key="test", base_url=server.base_url), MODEL)
        llm.name = MODEL
        config = PipelineConfig(
            llm=llm, model_id=None, defense=None, system_message_name=None, system_message=None
        )
        pipeline = AgentPipeline.from_config(config)
        for suite_name in ("banking", "slack"):
            suite = bench.suite(suite_name)
            for task_id in suite.user_task_ids():
                before = len(server.requests)
                task = suite.upstream.get_user_task_by_id(task_id)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    utility, _ = suite.upstream.run_task_with_pipeline(pipeline, task, None, {})
                sent = server.requests[before:]
                ours = converse(suite, agent, task_id)
                assert ours.verdict is not None and ours.verdict.utility == utility, task_id
                assert len(sent) == ours.requests
                first, last = sent[0], sent[-1]
                assert first["tools"] == suite.openai_tools()
                assert first["messages"][0]["role"] == "developer"
                assert first["messages"][0]["content"][0]["text"] == (
                    upstream.Pipeline(MODEL).system_message
                )
                assert first["messages"][1]["content"][0]["text"] == suite.prompt(task_id)
                received = [
                    m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
                    for m in last["messages"]
                    if m["role"] == "tool"
                ]
                assert [masked(r) for r in received] == [masked(o.content) for o in ours.outcomes]
