"""The one key rule for every provider (openai, anthropic, azure; live and batch clients), and
the live path's reply checks on batch results (null content, echoed keys)."""

from __future__ import annotations

import asyncio
import json

import pytest

from turnbench.backends.factory import BackendOptions, make_backend
from turnbench.backends.keys import ANTHROPIC_RULE, AZURE_RULE, resolve_endpoint_keys
from turnbench.backends.providers import anthropic_endpoint, azure_endpoint
from turnbench.backends.replies import Redactor
from turnbench.backends.retry import RetryPolicy
from turnbench.batch import (
    BatchHandle,
    BatchItem,
    BatchItemError,
    anthropic_batch,
    make_batch_client,
    openai_batch,
)
from turnbench.batch.anthropic_batch import AnthropicBatchClient
from turnbench.errors import FatalBackendError, UserError
from turnbench.specs import parse_spec
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_azure import FakeAzureOpenAI
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.types import Completion, RequestParams

KEY = "sk-secret-0123456789"
OTHER = "https://llm.example.org"
FAST = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.02, request_timeout=10)
PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_CUSTOM_HEADERS",
    "OPENAI_ADMIN_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def handle(provider: str = "openai") -> BatchHandle:
    return BatchHandle(
        provider=provider,  # type: ignore[arg-type]
        model="m",
        endpoint="e",
        batch_id="b",
        custom_ids={"x": 0},
        sent_params=[{"max_tokens": 8}],
    )


def one_item() -> list[BatchItem]:
    return [BatchItem(custom_id="a", messages=[{"role": "user", "content": "Q"}])]


async def submit_and_close(client) -> None:
    try:
        await client.submit(one_item())
    finally:
        await client.aclose()


# -- the rule, per provider ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "urls", "named", "environ", "key"),
    [
        # anthropic: the default endpoint is api.anthropic.com, else $ANTHROPIC_BASE_URL
        (ANTHROPIC_RULE, (), None, {"ANTHROPIC_API_KEY": KEY}, KEY),
        (ANTHROPIC_RULE, ("https://api.anthropic.com/",), None, {"ANTHROPIC_API_KEY": KEY}, KEY),
        (ANTHROPIC_RULE, (OTHER,), None, {"ANTHROPIC_API_KEY": KEY}, None),
        (
            ANTHROPIC_RULE,
            (OTHER,),
            None,
            {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": OTHER + "/"},
            KEY,
        ),
        (
            ANTHROPIC_RULE,
            ("http://127.0.0.1:9",),
            None,
            {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": OTHER},
            None,
        ),
        (ANTHROPIC_RULE, (OTHER,), "MINE", {"ANTHROPIC_API_KEY": "x" * 8, "MINE": KEY}, KEY),
        # azure: only the $AZURE_OPENAI_ENDPOINT resource (with or without /openai)
        (
            AZURE_RULE,
            (),
            None,
            {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"},
            KEY,
        ),
        (
            AZURE_RULE,
            ("https://r.openai.azure.com/openai/",),
            None,
            {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"},
            KEY,
        ),
        (
            AZURE_RULE,
            (OTHER,),
            None,
            {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"},
            None,
        ),
        (AZURE_RULE, (OTHER,), None, {"AZURE_OPENAI_API_KEY": KEY}, None),
        (AZURE_RULE, (OTHER,), "MINE", {"AZURE_OPENAI_API_KEY": "x" * 8, "MINE": KEY}, KEY),
    ],
)
def test_each_provider_key_goes_only_to_its_default_endpoint(rule, urls, named, environ, key):
    [resolved] = resolve_endpoint_keys("judge", urls, named, environ, rule)
    assert resolved.key == key


@pytest.mark.parametrize(
    ("rule", "urls", "environ", "message"),
    [
        (ANTHROPIC_RULE, (), {}, "set $ANTHROPIC_API_KEY"),
        (
            ANTHROPIC_RULE,
            ("https://api.anthropic.com",),
            {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": OTHER},
            "--judge-api-key-env VAR",
        ),
        (
            AZURE_RULE,
            (),
            {"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9"},
            "set $AZURE_OPENAI_API_KEY",
        ),
        (
            AZURE_RULE,
            ("https://other.openai.azure.com",),
            {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"},
            "--judge-api-key-env VAR",
        ),
        (AZURE_RULE, (), {}, "$AZURE_OPENAI_ENDPOINT"),
    ],
)
def test_a_provider_api_without_its_key_is_a_usage_error(rule, urls, environ, message):
    with pytest.raises(UserError) as error:
        resolve_endpoint_keys("judge", urls, None, environ, rule)
    assert message in error.value.message and KEY not in error.value.message


def test_anthropic_endpoint_follows_the_rule(monkeypatch):
    spec = parse_spec("anthropic/claude-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert anthropic_endpoint(spec, BackendOptions()).api_key == KEY
    elsewhere = anthropic_endpoint(spec, BackendOptions(base_urls=(OTHER,)))
    assert elsewhere.base_url == OTHER and elsewhere.api_key is None
    monkeypatch.setenv("ANTHROPIC_BASE_URL", OTHER)
    moved = anthropic_endpoint(spec, BackendOptions())
    assert (moved.base_url, moved.api_key) == (OTHER, KEY)
    assert anthropic_endpoint(spec, BackendOptions(base_urls=(OTHER,))).api_key == KEY
    monkeypatch.setenv("MINE", "sk-mine-12345")
    named = anthropic_endpoint(
        spec, BackendOptions(base_urls=("http://127.0.0.1:9",), api_key_env="MINE")
    )
    assert named.api_key == "sk-mine-12345"


def test_the_live_anthropic_backend_sends_no_real_key_elsewhere(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropic(api_key=None) as fake:
        made = make_backend(
            parse_spec("anthropic/claude-test"), BackendOptions(base_urls=(fake.base_url,))
        )

        async def scenario() -> Completion:
            try:
                return await made.complete([{"role": "user", "content": "Q"}], RequestParams())
            finally:
                await made.aclose()

        assert asyncio.run(scenario()).text
        assert KEY not in json.dumps(fake.requests)


def test_azure_key_goes_only_to_the_configured_resource(monkeypatch):
    spec = parse_spec("azure/my-gpt4o")
    with FakeAzureOpenAI(api_key=KEY) as fake:
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", f"{fake.endpoint}/openai/")
        assert azure_endpoint(spec, BackendOptions()).api_key == KEY
        same = azure_endpoint(spec, BackendOptions(base_urls=(fake.endpoint,)))
        assert same.api_key == KEY
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
        elsewhere = make_backend(spec, BackendOptions(base_urls=(fake.endpoint,)))

        async def scenario() -> None:
            try:
                await elsewhere.complete([{"role": "user", "content": "Q"}], RequestParams())
            finally:
                await elsewhere.aclose()

        with pytest.raises(FatalBackendError):  # the fake wants a key: none was sent
            asyncio.run(scenario())
        sent = fake.headers_of("chat")
    assert sent and all("api-key" not in h and "authorization" not in h for h in sent)


# -- openai batch client ---------------------------------------------------------------------
def test_openai_batch_client_without_a_key_sends_no_credentials_at_all(monkeypatch):
    """The SDK would read $OPENAI_API_KEY, $OPENAI_CUSTOM_HEADERS and the account ids: none
    of them reaches a server that is not the default endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", f"Authorization: Bearer {KEY}")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-123")
    with FakeOpenAIBatch(api_key=None) as fake:
        client = make_batch_client(
            parse_spec("openai/gpt-4o-mini"),
            BackendOptions(role="judge", base_urls=(fake.base_url,), policy=FAST),
        )
        asyncio.run(submit_and_close(client))
        headers = fake.headers_of("file_upload") + fake.headers_of("batch_create")
    assert len(headers) == 2
    for sent in headers:
        assert "authorization" not in sent
        assert "openai-organization" not in sent and "openai-project" not in sent
    assert KEY not in json.dumps(fake.requests)


def test_openai_batch_client_on_the_default_endpoint_sends_the_default_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIBatch(api_key=KEY) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        client = make_batch_client(parse_spec("openai/gpt-4o-mini"), BackendOptions(policy=FAST))
        assert client.endpoint == fake.base_url
        asyncio.run(submit_and_close(client))
        assert fake.batch_creates == 1
        assert {h["authorization"] for h in fake.headers_of("batch_create")} == {f"Bearer {KEY}"}


def test_openai_batch_401_without_a_key_says_how_to_name_one(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only-4242")
    with FakeOpenAIBatch(api_key=KEY) as fake:
        client = make_batch_client(
            parse_spec("openai/gpt-4o-mini"),
            BackendOptions(role="judge", base_urls=(fake.base_url,), policy=FAST),
        )
        with pytest.raises(FatalBackendError) as caught:
            asyncio.run(submit_and_close(client))
    assert "no API key was sent" in caught.value.message
    assert "--judge-api-key-env" in caught.value.message


def test_openai_batch_result_with_null_content_is_a_retryable_item_error():
    body = {
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "stop"}],
    }
    line = {"custom_id": "x", "response": {"status_code": 200, "body": body}, "error": None}
    result = openai_batch.item_result(line, handle())
    assert isinstance(result, BatchItemError) and result.retryable and result.kind == "errored"
    assert "null" in result.message
    del body["choices"][0]["message"]["content"]
    assert isinstance(openai_batch.item_result(line, handle()), BatchItemError)
    body["choices"][0]["message"] = None
    assert isinstance(openai_batch.item_result(line, handle()), BatchItemError)


def test_openai_batch_results_are_redacted_and_checked_like_live_replies():
    redact = Redactor([KEY])
    body = {
        "model": f"m-{KEY}",
        "system_fingerprint": KEY,
        "choices": [
            {"message": {"content": f"echo {KEY} \ud83d"}, "finish_reason": "stop"},
        ],
        "usage": {"prompt_tokens": -5, "completion_tokens": "7"},
    }
    line = {"custom_id": "x", "response": {"status_code": 200, "body": body}}
    result = openai_batch.item_result(line, handle(), redact)
    assert isinstance(result, Completion)
    assert KEY not in result.model_dump_json()
    assert result.text == "echo *** \ufffd" and result.reported_model == "m-***"
    assert result.usage.prompt_tokens == 0 and result.usage.completion_tokens == 0
    assert result.sent_params == {"max_tokens": 8}
    failed = {
        "custom_id": "x",
        "response": {"status_code": 400, "body": {"error": {"message": f"bad {KEY}"}}},
    }
    error = openai_batch.item_result(failed, handle(), redact)
    assert isinstance(error, BatchItemError) and error.message == "HTTP 400: bad ***"
    expired = {"custom_id": "x", "error": {"code": "x", "message": f"key {KEY}"}}
    assert openai_batch.item_result(expired, handle(), redact).message == "key ***"


# -- anthropic batch client ------------------------------------------------------------------
def test_anthropic_batch_client_without_a_key_sends_no_credentials(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-" + KEY)
    with FakeAnthropic(api_key=None) as fake:
        client = make_batch_client(
            parse_spec("anthropic/claude-test"),
            BackendOptions(base_urls=(fake.base_url,), policy=FAST),
        )
        asyncio.run(submit_and_close(client))
        sent = fake.headers_of("batch_create")
    assert fake.batch_creates == 1 and len(sent) == 1
    assert "authorization" not in sent[0] and "x-api-key" not in sent[0]
    assert KEY not in json.dumps(fake.requests)


def test_anthropic_batch_client_on_anthropic_base_url_sends_the_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropic(api_key=KEY) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        client = make_batch_client(parse_spec("anthropic/claude-test"), BackendOptions(policy=FAST))
        asyncio.run(submit_and_close(client))
        assert fake.batch_creates == 1


def test_anthropic_batch_401_without_a_key_says_how_to_name_one():
    with FakeAnthropic(api_key=KEY) as fake:
        client = AnthropicBatchClient(
            "claude-test", api_key=None, base_url=fake.base_url, policy=FAST, role="judge"
        )
        with pytest.raises(FatalBackendError) as caught:
            asyncio.run(submit_and_close(client))
    assert "no API key was sent" in caught.value.message
    assert "--judge-api-key-env" in caught.value.message


def message(content) -> dict:
    return {
        "custom_id": "x",
        "result": {
            "type": "succeeded",
            "message": {
                "model": "claude-x",
                "content": content,
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        },
    }


@pytest.mark.parametrize(
    "content", [None, "text", [{"type": "text", "text": None}], [{"type": "text"}]]
)
def test_anthropic_batch_result_without_content_is_a_retryable_item_error(content):
    line = message(content)
    if content == "text":
        del line["result"]["message"]["content"]
    result = anthropic_batch.item_result(line, handle("anthropic"))
    assert isinstance(result, BatchItemError) and result.retryable
    assert "malformed" in result.message


def test_anthropic_batch_results_are_redacted():
    redact = Redactor([KEY])
    line = message([{"type": "text", "text": f"echo {KEY} \ud83d"}])
    line["result"]["message"]["model"] = f"claude-{KEY}"
    result = anthropic_batch.item_result(line, handle("anthropic"), redact)
    assert isinstance(result, Completion) and KEY not in result.model_dump_json()
    assert result.text == "echo *** \ufffd" and result.reported_model == "claude-***"
    errored = {
        "custom_id": "x",
        "result": {
            "type": "errored",
            "error": {"type": "error", "error": {"type": "api_error", "message": f"k {KEY}"}},
        },
    }
    error = anthropic_batch.item_result(errored, handle("anthropic"), redact)
    assert isinstance(error, BatchItemError) and error.message == "api_error: k ***"
    assert error.retryable
