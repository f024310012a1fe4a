"""Pure parts of the backends: Retry-After, reasoning models, URLs, answer cleaning, specs."""

from __future__ import annotations

import email.utils
import time

import pytest

from turnbench.backends.openai_compat import OpenAICompatBackend, is_reasoning_model
from turnbench.backends.providers import (
    parse_model_spec as parse_spec,  # (the registry knows the providers)
)
from turnbench.backends.retry import RetryPolicy, parse_retry_after
from turnbench.backends.urls import display_url
from turnbench.errors import UserError
from turnbench.judging.cleaning import strip_reasoning
from turnbench.types import RequestParams


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after": "soon"}, None),
        ({}, None),
        ({"retry-after": "-4"}, 0.0),
    ],
)
def test_retry_after(headers, seconds):
    assert parse_retry_after(headers) == seconds


def test_retry_after_as_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": when}) <= 31


@pytest.mark.parametrize(
    ("name", "reasoning"),
    [
        ("o1", True),
        ("o3-mini", True),
        ("o4-mini", True),
        ("gpt-5", True),
        ("gpt-5-mini-2025-08-07", True),
        ("gpt-4o", False),
        ("gpt-4o-mini", False),
        ("meta-llama/Llama-3-8B", False),
        ("org/o3-mini", True),
        ("octopus", False),
    ],
)
def test_reasoning_model_names(name, reasoning):
    assert is_reasoning_model(name) is reasoning


def backend(name: str, token_param: str = "auto") -> OpenAICompatBackend:
    return OpenAICompatBackend(
        f"openai/{name}",
        name,
        base_url="http://127.0.0.1:9/v1",
        api_key=None,
        concurrency=1,
        policy=RetryPolicy(),
        token_param=token_param,
    )


def test_request_fields_for_ordinary_and_reasoning_models():
    params = RequestParams(temperature=0.0, max_tokens=2048, n=1, extra={"seed": 7})
    assert backend("gpt-4o").request_fields(params) == {
        "n": 1,
        "temperature": 0.0,
        "max_tokens": 2048,
        "seed": 7,
    }
    assert backend("o3-mini").request_fields(params) == {
        "n": 1,
        "max_completion_tokens": 2048,
        "seed": 7,
    }
    assert backend("my-model", "max_completion_tokens").request_fields(params) == {
        "n": 1,
        "max_completion_tokens": 2048,
        "seed": 7,
    }


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://bob:s3cret@api.example.com:8443/v1", "https://***@api.example.com:8443/v1"),
        ("https://token@host/v1", "https://***@host/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        (None, None),
    ],
)
def test_urls_are_recorded_without_credentials(url, shown):
    assert display_url(url) == shown


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<think>step 1...</think>\nThe answer is 4.", "The answer is 4."),
        ("Intro <think>a</think> and <think>b</think>end", "Intro and end"),
        ("<think>cut off by the token limit", ""),
        ("No reasoning here.", "No reasoning here."),
    ],
)
def test_reasoning_blocks_are_removed_before_judging(raw, clean):
    assert strip_reasoning(raw) == clean


@pytest.mark.parametrize(
    ("text", "provider", "name"),
    [
        ("openai/gpt-4o", "openai", "gpt-4o"),
        ("openai/meta-llama/Llama-3-8B", "openai", "meta-llama/Llama-3-8B"),
        ("local/smollm2", "local", "smollm2"),
        ("local//abs/path/model.gguf", "local", "/abs/path/model.gguf"),
        ("anthropic/claude-3-5-haiku-20241022", "anthropic", "claude-3-5-haiku-20241022"),
        ("azure/my-gpt4o", "azure", "my-gpt4o"),
    ],
)
def test_model_specs_split_at_the_first_slash(text, provider, name):
    spec = parse_spec(text)
    assert (spec.provider, spec.name) == (provider, name)


@pytest.mark.parametrize("text", ["gpt-4o", "cohere/command", "openai/", "/x"])
def test_bad_model_specs(text):
    with pytest.raises(UserError):
        parse_spec(text)
