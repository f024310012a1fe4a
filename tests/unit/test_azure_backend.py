"""azure/DEPLOYMENT: the deployments path, api-version, api-key header, retries, refusals."""

from __future__ import annotations

import asyncio

import pytest

from turnbench.backends.azure import (
    DEFAULT_AZURE_API_VERSION,
    AzureOpenAIBackend,
    normalize_endpoint,
)
from turnbench.backends.factory import BackendOptions, make_backend
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import FatalBackendError, UserError
from turnbench.specs import parse_spec
from turnbench.testing.fake_azure import FakeAzureOpenAI
from turnbench.testing.fake_http import Scripted
from turnbench.types import RequestParams

KEY = "azure-key-0123456789"
FAST = RetryPolicy(max_attempts=4, initial_wait=0.01, max_wait=1.0, request_timeout=10)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


@pytest.fixture
def fake():
    with FakeAzureOpenAI(api_key=KEY, deployments=("my-gpt4o", "my-o3")) as server:
        yield server


def backend(fake, deployment="my-gpt4o", key=KEY, **kwargs) -> AzureOpenAIBackend:
    return AzureOpenAIBackend(
        f"azure/{deployment}",
        deployment,
        endpoint=fake.endpoint,
        api_key=key,
        concurrency=2,
        policy=FAST,
        **kwargs,
    )


def complete(client, params=None):
    async def scenario():
        try:
            return await client.complete(MESSAGES, params or RequestParams(max_tokens=64))
        finally:
            await client.aclose()

    return asyncio.run(scenario())


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://res.openai.azure.com", "https://res.openai.azure.com"),
        ("https://res.openai.azure.com/", "https://res.openai.azure.com"),
        ("https://res.openai.azure.com/openai/", "https://res.openai.azure.com"),
    ],
)
def test_endpoint_normalized(given, expected):
    assert normalize_endpoint(given) == expected


def test_request_goes_to_the_deployment_path_with_version_and_key(fake):
    client = backend(fake, api_version="2025-01-01-preview")
    completion = complete(client, RequestParams(temperature=0.0, max_tokens=64))
    [request] = fake.requests
    assert request["path"] == "/openai/deployments/my-gpt4o/chat/completions"
    assert request["query"] == {"api-version": "2025-01-01-preview"}
    assert request["headers"]["api-key"] == KEY
    assert "authorization" not in request["headers"]
    assert request["json"]["messages"] == MESSAGES
    assert request["json"]["max_tokens"] == 64 and request["json"]["temperature"] == 0.0
    assert completion.text.startswith("Batch answer")
    assert completion.usage.cached_prompt_tokens == completion.usage.prompt_tokens // 2 > 0
    assert completion.sent_params == {"n": 1, "temperature": 0.0, "max_tokens": 64}


def test_reasoning_deployment_gets_max_completion_tokens(fake):
    client = backend(fake, deployment="my-o3", token_param="max_completion_tokens")
    complete(client, RequestParams(temperature=0.0, max_tokens=64))
    body = fake.requests[0]["json"]
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body and "temperature" not in body


def test_429_and_500_are_retried(fake):
    fake.script += [
        Scripted(
            429, {"error": {"code": "429", "message": "slow down"}}, headers={"retry-after": "0"}
        ),
        Scripted(500, {"error": {"code": "500", "message": "oops"}}),
    ]
    client = backend(fake)
    completion = complete(client)
    assert completion.attempts == 3 and client.stats.retries == 2
    assert fake.counts["chat"] == 3


@pytest.mark.parametrize(("key", "deployment"), [("wrong-key-987654", "my-gpt4o"), (KEY, "nope")])
def test_wrong_key_or_unknown_deployment_is_fatal(fake, key, deployment):
    client = backend(fake, deployment=deployment, key=key)
    with pytest.raises(FatalBackendError) as caught:
        complete(client)
    assert "wrong-key-987654" not in caught.value.message
    assert fake.counts["chat"] == 1


def test_factory_settings_from_environment(fake, monkeypatch):
    spec = parse_spec("azure/my-gpt4o")
    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-must-not-go-to-azure")
    with pytest.raises(UserError, match="AZURE_OPENAI_ENDPOINT"):
        make_backend(spec, BackendOptions())
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", fake.endpoint)
    with pytest.raises(UserError, match="AZURE_OPENAI_API_KEY"):
        make_backend(spec, BackendOptions())
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    made = make_backend(spec, BackendOptions())
    assert made.api_version == DEFAULT_AZURE_API_VERSION
    complete(made)
    assert fake.requests[-1]["query"] == {"api-version": DEFAULT_AZURE_API_VERSION}
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    assert make_backend(spec, BackendOptions()).api_version == "2024-06-01"
    explicit = make_backend(spec, BackendOptions(api_version="2025-04-01-preview"))
    assert explicit.api_version == "2025-04-01-preview"
    monkeypatch.setenv("OTHER_AZURE_KEY", "other-key-1234")
    named = make_backend(spec, BackendOptions(api_key_env="OTHER_AZURE_KEY"))
    with pytest.raises(FatalBackendError):
        complete(named)
    assert fake.requests[-1]["headers"]["api-key"] == "other-key-1234"
    assert all(
        r["headers"].get("api-key") != "openai-key-must-not-go-to-azure" for r in fake.requests
    )


def test_recorded_endpoints_per_provider(monkeypatch):
    from turnbench.backends.providers import display_endpoint

    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-proxy.example/v1")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com/")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    options = BackendOptions()
    assert (
        display_endpoint(parse_spec("openai/gpt-4o"), options) == "http://openai-proxy.example/v1"
    )
    assert (
        display_endpoint(parse_spec("anthropic/claude-x"), options) == "https://api.anthropic.com"
    )
    assert (
        display_endpoint(parse_spec("azure/dep"), options)
        == "https://res.openai.azure.com/openai/deployments/dep"
    )
    assert display_endpoint(parse_spec("local/smollm2"), options) is None
    given = BackendOptions(base_urls=("http://user:secret@127.0.0.1:8/",))
    assert "secret" not in display_endpoint(parse_spec("anthropic/claude-x"), given)
