"""anthropic/MODEL: request and response mapping, retries and refusals against a fake API."""

from __future__ import annotations

import asyncio
import time

import pytest

from turnbench.backends.anthropic_native import (
    CACHE_MIN_CHARS,
    DEFAULT_MAX_TOKENS,
    AnthropicBackend,
    build_request,
    to_completion,
)
from turnbench.backends.factory import BackendOptions, make_backend
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import FatalBackendError, RequestFailedError, UserError
from turnbench.specs import parse_spec
from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_http import Scripted
from turnbench.types import RequestParams, Usage

KEY = "sk-ant-test-0123456789"
FAST = RetryPolicy(max_attempts=4, initial_wait=0.01, max_wait=1.0, request_timeout=10)
LONG = "Judge carefully. " * (CACHE_MIN_CHARS // 17 + 1)


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def system(text: str) -> dict:
    return {"role": "system", "content": text}


# -- request mapping (pure) -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("messages", "params", "expected"),
    [
        (
            [system("Be brief."), user("Hi")],
            RequestParams(),
            {
                "model": "m",
                "messages": [user("Hi")],
                "system": [{"type": "text", "text": "Be brief."}],
                "max_tokens": DEFAULT_MAX_TOKENS,
            },
        ),
        (
            [user("Hi")],
            RequestParams(temperature=0.0, max_tokens=512, extra={"top_k": 5}),
            {
                "model": "m",
                "messages": [user("Hi")],
                "max_tokens": 512,
                "temperature": 0.0,
                "top_k": 5,
            },
        ),
        (  # several system messages, one of them after the first turn: all go to `system`
            [
                system("A"),
                user("Q1"),
                {"role": "assistant", "content": "R1"},
                system("B"),
                user("Q2"),
            ],
            RequestParams(max_tokens=16),
            {
                "model": "m",
                "messages": [user("Q1"), {"role": "assistant", "content": "R1"}, user("Q2")],
                "system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}],
                "max_tokens": 16,
            },
        ),
        (  # OpenAI's developer role is a system message; empty ones are left out
            [{"role": "developer", "content": "D"}, system(""), user("Q")],
            RequestParams(max_tokens=8),
            {
                "model": "m",
                "messages": [user("Q")],
                "system": [{"type": "text", "text": "D"}],
                "max_tokens": 8,
            },
        ),
    ],
)
def test_build_request(messages, params, expected):
    assert build_request("m", messages, params) == expected


def test_long_system_prompt_is_marked_for_caching_on_its_last_block():
    body = build_request("m", [system("Intro."), system(LONG), user("Q")], RequestParams())
    assert body["system"][0] == {"type": "text", "text": "Intro."}
    assert body["system"][1] == {
        "type": "text",
        "text": LONG,
        "cache_control": {"type": "ephemeral"},
    }
    short = build_request("m", [system("x" * (CACHE_MIN_CHARS - 1)), user("Q")], RequestParams())
    assert "cache_control" not in short["system"][0]
    off = build_request("m", [system(LONG), user("Q")], RequestParams(), cache=False)
    assert "cache_control" not in off["system"][0]


def test_several_replies_per_request_are_refused():
    with pytest.raises(UserError, match="n=3"):
        build_request("m", [user("Q")], RequestParams(n=3))


# -- response mapping (pure) ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "content_filter"),
        ("tool_use", "tool_calls"),
        ("pause_turn", "pause_turn"),  # unknown to the table: passed through
        (None, None),
    ],
)
def test_stop_reasons(stop, finish):
    message = {"content": [], "stop_reason": stop, "usage": {}, "model": "m"}
    assert to_completion(message).finish_reason == finish


def test_text_blocks_joined_thinking_left_out_and_cache_tokens_added_to_prompt():
    message = {
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "secret plan"},
            {"type": "text", "text": "Rating: "},
            {"type": "text", "text": "[[7]]"},
        ],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 20,
            "output_tokens": 5,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 1000,
        },
    }
    completion = to_completion(message)
    assert completion.text == "Rating: [[7]]"
    assert completion.reported_model == "claude-x"
    assert completion.usage == Usage(
        prompt_tokens=1120,
        completion_tokens=5,
        cached_prompt_tokens=1000,
        cache_creation_tokens=100,
    )


def test_usage_sums_cache_fields():
    total = Usage(
        prompt_tokens=10, completion_tokens=2, cached_prompt_tokens=4, cache_creation_tokens=1
    ) + Usage(prompt_tokens=5, completion_tokens=1, cached_prompt_tokens=5)
    assert total == Usage(
        prompt_tokens=15, completion_tokens=3, cached_prompt_tokens=9, cache_creation_tokens=1
    )


# -- against the fake API -------------------------------------------------------------------
@pytest.fixture
def fake():
    with FakeAnthropic(api_key=KEY) as server:
        yield server


def backend(fake: FakeAnthropic, key: str = KEY, **kwargs) -> AnthropicBackend:
    return AnthropicBackend(
        "anthropic/claude-test",
        "claude-test",
        api_key=key,
        base_url=fake.base_url,
        concurrency=kwargs.pop("concurrency", 2),
        policy=kwargs.pop("policy", FAST),
        **kwargs,
    )


def run(coro):
    return asyncio.run(coro)


def test_request_and_response_through_the_sdk(fake):
    async def scenario():
        client = backend(fake)
        try:
            messages = [system(LONG), user("Rate this answer.")]
            params = RequestParams(temperature=0.0, max_tokens=300)
            first = await client.complete(messages, params)
            second = await client.complete(messages, params)
            return client, first, second
        finally:
            await client.aclose()

    client, first, second = run(scenario())
    sent = fake.bodies("messages")[0]
    assert sent["system"] == [
        {"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}
    ]
    assert sent["messages"] == [user("Rate this answer.")]
    assert sent["max_tokens"] == 300 and sent["temperature"] == 0.0
    headers = fake.headers_of("messages")[0]
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "")[len("Bearer ") :])
    assert first.text.startswith("Claude ") and first.finish_reason == "stop"
    assert first.sent_params == {"max_tokens": 300, "temperature": 0.0}
    cached = len(LONG) // 4
    assert first.usage.cache_creation_tokens == cached and first.usage.cached_prompt_tokens == 0
    assert second.usage.cached_prompt_tokens == cached and second.usage.cache_creation_tokens == 0
    assert second.usage.prompt_tokens > cached
    assert client.stats.requests == 2 and client.stats.retries == 0
    assert client.stats.usage.cached_prompt_tokens == cached


def test_overloaded_and_rate_limited_are_retried_honouring_retry_after(fake):
    fake.script += [
        Scripted(529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
        Scripted(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            headers={"retry-after": "0.3"},
        ),
    ]

    async def scenario():
        client = backend(fake)
        try:
            started = time.monotonic()
            completion = await client.complete([user("Q")], RequestParams(max_tokens=50))
            return client, completion, time.monotonic() - started
        finally:
            await client.aclose()

    client, completion, elapsed = run(scenario())
    assert completion.attempts == 3 and completion.text
    assert client.stats.requests == 3 and client.stats.retries == 2
    assert elapsed >= 0.3  # the server's Retry-After was waited out
    assert fake.counts["messages"] == 3


def test_retry_budget_ends_in_request_failed(fake):
    busy = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    fake.script += [Scripted(529, busy) for _ in range(3)]
    policy = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.02, request_timeout=10)

    async def scenario():
        client = backend(fake, policy=policy)
        try:
            with pytest.raises(RequestFailedError) as caught:
                await client.complete([user("Q")], RequestParams())
            return client, caught.value
        finally:
            await client.aclose()

    client, error = run(scenario())
    assert error.attempts == 3 and "529" in error.message
    assert client.stats.failures == 1


def test_under_auto_concurrency_rate_limits_cost_time_not_attempts(fake):
    """--concurrency auto: five 429/529 refusals in a row, with --max-attempts 3, still end in
    an answer (the deadline bounds them instead); a 500 still counts."""
    busy = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    slow = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}
    fake.script += [Scripted(529, busy), Scripted(429, slow)] * 2 + [Scripted(529, busy)]
    policy = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.02, request_timeout=10)

    async def scenario():
        client = backend(fake, policy=policy, concurrency="auto")
        try:
            completion = await client.complete([user("Q")], RequestParams(max_tokens=50))
            limit_after = client.pool.endpoints[0].limit.current
            return client, completion, limit_after
        finally:
            await client.aclose()

    client, completion, limit_after = run(scenario())
    assert completion.text and completion.attempts == 6 and fake.counts["messages"] == 6
    assert client.adaptive and limit_after < 8  # the refusals lowered the limit

    fake.script += [Scripted(500, busy) for _ in range(3)]

    async def counted():
        client = backend(fake, policy=policy, concurrency="auto")
        try:
            with pytest.raises(RequestFailedError) as caught:
                await client.complete([user("Q")], RequestParams())
            return caught.value
        finally:
            await client.aclose()

    assert run(counted()).attempts == 3  # other failures still use up --max-attempts


def test_fixed_concurrency_still_counts_rate_limits(fake):
    busy = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    fake.script += [Scripted(529, busy) for _ in range(3)]
    policy = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.02, request_timeout=10)

    async def scenario():
        client = backend(fake, policy=policy)
        try:
            with pytest.raises(RequestFailedError) as caught:
                await client.complete([user("Q")], RequestParams())
            return caught.value
        finally:
            await client.aclose()

    assert run(scenario()).attempts == 3


def test_wrong_key_is_fatal_at_once_and_never_shown(fake):
    async def scenario():
        client = backend(fake, key="sk-ant-wrong-key-42")
        try:
            with pytest.raises(FatalBackendError) as first:
                await client.complete([user("Q")], RequestParams())
            with pytest.raises(FatalBackendError):
                await client.complete([user("Q")], RequestParams())
            return first.value
        finally:
            await client.aclose()

    error = run(scenario())
    assert "401" in error.message and "ANTHROPIC_API_KEY" in error.message
    assert "sk-ant-wrong-key-42" not in error.message
    assert fake.counts["messages"] == 1  # the second request was never sent


def test_bad_request_fails_without_retries(fake):
    async def scenario():
        client = backend(fake)
        try:
            with pytest.raises(RequestFailedError) as caught:
                await client.complete(
                    [{"role": "assistant", "content": "x"}, {"role": "tool", "content": "y"}],
                    RequestParams(),
                )
            return caught.value
        finally:
            await client.aclose()

    error = run(scenario())
    assert "HTTP 400" in error.message and error.attempts == 1
    assert fake.counts["messages"] == 1


def test_model_that_rejects_temperature_gets_it_dropped(fake):
    fake.reject_temperature = True

    async def scenario():
        client = backend(fake)
        try:
            first = await client.complete([user("Q1")], RequestParams(temperature=0.0))
            second = await client.complete([user("Q2")], RequestParams(temperature=0.0))
            return first, second
        finally:
            await client.aclose()

    first, second = run(scenario())
    assert first.attempts == 2 and "temperature" not in first.sent_params
    assert second.attempts == 1 and "temperature" not in second.sent_params
    assert ["temperature" in b for b in fake.bodies("messages")] == [True, False, False]


# -- construction through the factory -------------------------------------------------------
def test_factory_reads_the_anthropic_key_and_ignores_openai_base_url(fake, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    # the default key goes to the default endpoint only: the fake is named as that endpoint
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    spec = parse_spec("anthropic/claude-test")
    made = make_backend(spec, BackendOptions(base_urls=(fake.base_url,)))
    assert isinstance(made, AnthropicBackend) and made.endpoint == fake.base_url

    async def scenario():
        try:
            return await made.complete([user("Q")], RequestParams())
        finally:
            await made.aclose()

    assert run(scenario()).text
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    default = make_backend(spec, BackendOptions())
    assert default.endpoint == "https://api.anthropic.com"  # not OPENAI_BASE_URL
    run(default.aclose())


def test_factory_named_key_variable_and_missing_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    spec = parse_spec("anthropic/claude-test")
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        make_backend(spec, BackendOptions())
    with pytest.raises(UserError, match="JUDGE_KEY"):
        make_backend(spec, BackendOptions(api_key_env="JUDGE_KEY"))
    monkeypatch.setenv("JUDGE_KEY", KEY)
    cache: dict = {}
    first = make_backend(spec, BackendOptions(api_key_env="JUDGE_KEY"), cache)
    assert make_backend(spec, BackendOptions(api_key_env="JUDGE_KEY"), cache) is first
    with pytest.raises(UserError, match="one base URL"):
        make_backend(spec, BackendOptions(base_urls=("http://a", "http://b")))
    run(first.aclose())


def _message(text) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 3},
    }


def test_a_key_echoed_in_a_reply_is_redacted_and_a_null_text_block_is_retried(fake):
    fake.script += [Scripted(200, _message(None)), Scripted(200, _message(f"echo {KEY} done"))]

    async def scenario():
        client = backend(fake)
        try:
            return await client.complete([user("Q")], RequestParams(max_tokens=20))
        finally:
            await client.aclose()

    completion = run(scenario())
    assert completion.attempts == 2  # the null text block was malformed, then retried
    assert KEY not in completion.text and completion.text == "echo *** done"


def test_a_401_from_a_server_that_got_no_key_says_how_to_name_one(fake):
    async def scenario():
        client = backend(fake, key=None)
        try:
            with pytest.raises(FatalBackendError) as caught:
                await client.complete([user("Q")], RequestParams())
            return caught.value
        finally:
            await client.aclose()

    message = run(scenario()).message
    assert "no API key was sent" in message and "--judge-api-key-env" in message


def test_a_redirect_is_not_followed_so_the_key_stays_with_its_host():
    """The SDK's own client follows redirects; through turnbench's transport a 307 is an
    answer: the request fails and the host it points to never sees the key."""
    with FakeAnthropic(api_key=KEY) as elsewhere, FakeAnthropic(api_key=KEY) as server:
        target = f"{elsewhere.base_url}/v1/messages"
        server.script.append(Scripted(307, {}, {"Location": target}, "/v1/messages"))
        b = backend(server)

        async def scenario() -> None:
            try:
                await b.complete([user("Hi")], RequestParams())
            finally:
                await b.aclose()

        with pytest.raises(RequestFailedError, match="HTTP 307"):
            run(scenario())
        assert elsewhere.requests == [] and len(server.requests) == 1


class _Gate:
    """An attempt gate that records what the backend tells it."""

    def __init__(self) -> None:
        self.unanswered_errors: list[str] = []
        self.retries = 0

    def unanswered(self, messages, params, error: str) -> None:
        self.unanswered_errors.append(error)

    def retry(self, messages, params) -> str | None:
        self.retries += 1
        return None


@pytest.mark.parametrize(
    ("extra", "messages"),
    [
        ({"top_k": float("nan")}, [user("Q")]),  # a value no JSON holds
        ({"metadata": {"user_id": "\ud800"}}, [user("Q")]),  # no UTF-8
        ({}, [user("Q"), {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "\ud800"}]),
    ],
)  # fmt: skip
def test_a_request_the_sdk_cannot_encode_is_never_sent_retried_or_billed(fake, extra, messages):
    """Issue 44, class 4. On 6f7f1ce the SDK's encoding error was taken for a malformed
    reply: retried up to --max-attempts, each attempt told to the budget as one a provider
    may bill, though none was sent."""
    from turnbench.backends.attempts import gated

    gate = _Gate()

    async def scenario():
        client = backend(fake)
        try:
            with gated(gate), pytest.raises(RequestFailedError) as caught:
                await client.complete(messages, RequestParams(max_tokens=10, extra=extra))
            return client, caught.value
        finally:
            await client.aclose()

    client, error = run(scenario())
    assert "the request was not sent: it cannot be encoded as JSON" in error.message
    assert error.attempts == 0 and fake.counts["messages"] == 0
    assert gate.unanswered_errors == [] and gate.retries == 0 and client.stats.requests == 0
