"""Attacks through the seam: the model's name derived as upstream derives it from a pipeline's
name, and the injections equal to upstream's attack objects' for the same pairs."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agentdojo", reason="needs the agentdojo extra: pip install '.[agentdojo]'")

import openai
from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, PipelineConfig
from agentdojo.agent_pipeline.llms.openai_llm import OpenAILLM
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.attacks.base_attacks import get_model_name_from_pipeline
from agentdojo.models import MODEL_NAMES

from turnbench.benchmarks.agentdojo import upstream

MODEL = "gpt-4o-2024-05-13"


def _real_pipeline(name: str, defense: str | None = None) -> Any:
    """Upstream's pipeline as its runner builds one (an OpenAILLM with a real client)."""
    llm = OpenAILLM(openai.OpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1"), name)
    llm.name = name
    config = PipelineConfig(
        llm=llm, model_id=None, defense=defense, system_message_name=None, system_message=None
    )
    return AgentPipeline.from_config(config)


def test_model_names_are_derived_as_upstream_derives_them() -> None:
    assert upstream.model_name_from_pipeline_name(MODEL) == "GPT-4"
    assert upstream.model_name_from_pipeline_name("claude-3-5-sonnet-20241022") == "Claude"
    for name in MODEL_NAMES:
        for defense in (None, "tool_filter", "repeat_user_prompt"):
            ours = upstream.Pipeline(name, defense)
            theirs = _real_pipeline(name, defense)
            assert ours.name == theirs.name
            assert ours.model_name() == get_model_name_from_pipeline(theirs), (name, defense)
    # upstream's rule is a substring test in its table's order: a spec name holding a known
    # name (a provider prefix, a suffix) derives it too
    assert upstream.model_name_from_pipeline_name(f"openai/{MODEL}") == "GPT-4"
    assert upstream.model_name_from_pipeline_name("my-local-model") == "Local model"
    with pytest.raises(upstream.UserError, match=r"-B model_name="):
        upstream.model_name_from_pipeline_name("gpt-4.1-mini")


@pytest.mark.parametrize(
    "attack",
    [
        "important_instructions",
        "important_instructions_no_names",
        "important_instructions_wrong_model_name",
        "tool_knowledge",
        "direct",
        "ignore_previous",
        "injecagent",
        "dos",
        "captcha_dos",
    ],
)
def test_injections_are_upstreams(attack: str) -> None:
    """For a few pairs per suite (each suite's first, middle and last user task with its
    first and last injection task), the seam's injections equal upstream's attack object
    built by its registry against its own pipeline of the same model."""
    bench = upstream.load()
    pipeline = upstream.Pipeline(MODEL)
    theirs_pipeline = _real_pipeline(MODEL)
    for suite in bench.suites():
        ours = suite.attack(attack, pipeline)
        theirs = load_attack(attack, suite.upstream, theirs_pipeline)
        users = suite.user_task_ids()
        injections = suite.injection_task_ids()
        for user_task_id in (users[0], users[len(users) // 2], users[-1]):
            for injection_task_id in (injections[0], injections[-1]):
                expected = theirs.attack(
                    suite.upstream.get_user_task_by_id(user_task_id),
                    suite.upstream.get_injection_task_by_id(injection_task_id),
                )
                got = ours.injections(user_task_id, injection_task_id)
                assert got == expected, (suite.name, user_task_id, injection_task_id)
                assert set(got) == set(ours.candidates(user_task_id))
        assert ours.is_dos == ("dos" in attack)
        assert ours.injection_task_ids() == (injections[:1] if ours.is_dos else injections)


def test_names_can_be_given_and_an_unknown_model_needs_one() -> None:
    banking = upstream.load().suite("banking")
    unknown = upstream.Pipeline("my-model-7b")
    with pytest.raises(upstream.UserError, match=r"-B model_name="):
        banking.attack("important_instructions", unknown)
    named = banking.attack(
        "important_instructions", unknown, model_name="Robo", user_name="Mark Smith"
    )
    text = next(iter(named.injections("user_task_0", "injection_task_0").values()))
    assert "to you, Robo." in text and "from me, Mark Smith," in text
    assert (named.model_name, named.user_name) == ("Robo", "Mark Smith")
    # attacks whose text names nobody need no name
    direct = banking.attack("direct", unknown)
    goal = banking.goal("injection_task_0")
    assert direct.injections("user_task_0", "injection_task_0") == {
        "injection_bill_text": f"TODO: {goal}"
    }
    default = banking.attack("important_instructions", upstream.Pipeline(MODEL))
    assert (default.model_name, default.user_name) == ("GPT-4", "Emma Johnson")
    with pytest.raises(upstream.UserError, match="unknown agentdojo attack"):
        banking.attack("manual", unknown)
    assert "manual" not in upstream.attack_names()
    assert "important_instructions" in upstream.attack_names()
