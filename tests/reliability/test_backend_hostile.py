"""Issue 10 at the backend level: keys only where they belong, secrets redacted, any reply
survivable, dead endpoints caught before work, retries visible while they happen."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import time
from typing import Any

import pytest
from rich.console import Console

from turnbench.backends.factory import BackendOptions, make_backend
from turnbench.backends.keys import EndpointKey
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.preflight import preflight
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import FatalBackendError, PreflightError, RequestFailedError
from turnbench.specs import parse_spec
from turnbench.testing.fake_server import FakeServer, Reply, default_content, default_logprobs
from turnbench.types import RequestParams, TokenLogprob, TopLogprob

KEY = "sk-hostile-KEY-987654"
MESSAGES = [{"role": "user", "content": "Rate this. Rating: [[5]] is the format."}]
PARAMS = RequestParams(temperature=0.0, max_tokens=64)
FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05, request_timeout=2)


def backend(url: str, key: str | None = None, **kwargs: Any) -> OpenAICompatBackend:
    options = {"policy": FAST, "role": "judge", "concurrency": 4, **kwargs}
    return OpenAICompatBackend(
        "openai/judge-model",
        "judge-model",
        endpoints=[EndpointKey(url, key, "JUDGE_KEY" if key else None)],
        **options,
    )


def complete(b: OpenAICompatBackend, params: RequestParams = PARAMS):
    async def run():
        try:
            return await b.complete(MESSAGES, params)
        finally:
            await b.aclose()

    return asyncio.run(run())


def always(reply: Reply):
    return lambda request: reply


# -- item 1: the key goes only where it belongs -----------------------------------------------
def test_a_default_key_is_not_sent_to_another_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeServer() as server:
        options = BackendOptions(role="judge", base_urls=(server.base_url,), policy=FAST)
        b = make_backend(parse_spec("openai/judge-model"), options)
        asyncio.run(preflight([b]))
        complete(b)  # type: ignore[arg-type]
        seen, models_seen = list(server.headers_seen), list(server.models_headers_seen)
    assert seen == [{}] and models_seen == [{}]  # no Authorization header at all

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    with FakeServer() as server:
        options = BackendOptions(
            role="judge", base_urls=(server.base_url,), api_key_env="OPENAI_API_KEY", policy=FAST
        )
        complete(make_backend(parse_spec("openai/judge-model"), options))  # type: ignore[arg-type]
        seen = list(server.headers_seen)
    assert seen == [{"authorization": f"Bearer {KEY}"}]  # named: sent

    with FakeServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        options = BackendOptions(role="model", policy=FAST)  # the default endpoint
        complete(make_backend(parse_spec("openai/model-x"), options))  # type: ignore[arg-type]
        seen = list(server.headers_seen)
    assert seen == [{"authorization": f"Bearer {KEY}"}]


def test_the_hot_path_does_not_import_the_openai_sdk():
    code = (
        "import sys, turnbench.backends.openai_compat, turnbench.backends.preflight; "
        "print('openai' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_401_without_a_key_says_how_to_name_one():
    with FakeServer(responder=always(Reply(status=401))) as server:
        b = backend(server.base_url)
        with pytest.raises(FatalBackendError) as error:
            complete(b)
    message = error.value.message
    assert "no API key was sent" in message and "--judge-api-key-env" in message
    with (
        FakeServer(responder=always(Reply(status=401))) as server,
        pytest.raises(FatalBackendError) as error,
    ):
        complete(backend(server.base_url, KEY))
    assert "rejected the API key from $JUDGE_KEY" in error.value.message


# -- item 2: secrets in URLs and replies --------------------------------------------------------
def test_an_echoed_key_and_url_secrets_are_redacted_from_answers_and_errors():
    secret_query = "QUERY-SECRET-55"

    def respond(request: dict[str, Any]) -> Reply:
        return Reply(content=f"token {secret_query}", action="echo-key")

    with FakeServer(responder=respond) as server:
        url = f"{server.base_url}?api-key={secret_query}"
        b = backend(url, KEY)
        completion = complete(b)
        assert b.endpoints_summary() == [
            {"url": f"{server.base_url}?api-key=***", "requests": 1, "failures": 0}
        ]
    assert completion.text == "token *** (you sent: ***)"
    assert KEY not in completion.model_dump_json() and secret_query not in repr(b.stats)

    reply = Reply(status=400, body={"error": {"message": f"bad key {KEY} for ?sig={secret_query}"}})
    with FakeServer(responder=always(reply)) as server:
        b = backend(f"{server.base_url}?sig={secret_query}", KEY)
        with pytest.raises(RequestFailedError) as error:
            complete(b)
    assert error.value.message.endswith("HTTP 400: bad key *** for ?sig=***")


# -- item 5: any reply is survivable ------------------------------------------------------------
@pytest.mark.parametrize(
    ("action", "usage"),
    [
        ("bad-usage", (0, 0)),  # "12", 3.5: both invalid
        ("negative-usage", (0, 0)),
        ("absurd-usage", (0, 12)),  # 10**15 dropped, the valid part kept
    ],
)
def test_bad_usage_is_recorded_as_zero_or_its_valid_part(action, usage):
    with FakeServer(responder=always(Reply(content="fine", action=action))) as server:
        b = backend(server.base_url)
        completion = complete(b)
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == usage
    assert (b.stats.usage.prompt_tokens, b.stats.usage.completion_tokens) == usage
    assert completion.text == "fine"


def test_a_lone_surrogate_in_content_becomes_u_fffd():
    with FakeServer(responder=always(Reply(content="smile", action="surrogate"))) as server:
        completion = complete(backend(server.base_url))
    assert completion.text == "smile \ufffd"
    completion.text.encode("utf-8")


@pytest.mark.parametrize("action", ["null-content", "missing-message"])
def test_null_content_is_retried_then_a_failure_not_an_empty_answer(action):
    with FakeServer(responder=always(Reply(content="x", action=action))) as server:
        b = backend(server.base_url)
        with pytest.raises(RequestFailedError) as error:
            complete(b)
        sent = len(server.requests)
    assert sent == FAST.max_attempts and error.value.attempts == FAST.max_attempts
    assert "malformed response" in error.value.message and b.stats.failures == 1

    calls: list[int] = []

    def once(request: dict[str, Any]) -> Reply:
        calls.append(1)
        return Reply(content="x", action=action) if len(calls) == 1 else Reply(content="ok")

    with FakeServer(responder=once) as server:
        completion = complete(backend(server.base_url))
    assert completion.text == "ok" and completion.attempts == 2


# -- logprobs ------------------------------------------------------------------------------------
def test_logprobs_are_requested_and_returned_when_asked():
    params = RequestParams(temperature=0.0, max_tokens=64, top_logprobs=3)
    with FakeServer() as server:
        b = backend(server.base_url)
        assert b.request_fields(params) == {
            "n": 1,
            "temperature": 0.0,
            "max_tokens": 64,
            "logprobs": True,
            "top_logprobs": 3,
        }
        completion = complete(b, params)
        plain = complete(backend(server.base_url))
        sent = list(server.requests)
    content = default_content({"messages": MESSAGES})
    assert completion.text == content and "[[" in content
    expected = default_logprobs(content, 3)
    assert completion.logprobs is not None and len(completion.logprobs) == len(expected)
    digit = next(t for t in completion.logprobs if t.token.isdigit())
    assert digit.top[0].token == digit.token and len(digit.top) == 3
    assert all(alt.token.isdigit() for alt in digit.top)
    assert plain.logprobs is None and "logprobs" not in sent[1]


def test_scripted_logprobs_come_back_exactly():
    entries = [
        {
            "token": "7",
            "logprob": -0.25,
            "top_logprobs": [{"token": "7", "logprob": -0.25}, {"token": "8", "logprob": -1.5}],
        }
    ]
    reply = Reply(content="7", logprobs=entries)
    params = RequestParams(max_tokens=4, top_logprobs=2)
    with FakeServer(responder=always(reply)) as server:
        completion = complete(backend(server.base_url), params)
    assert completion.logprobs == [
        TokenLogprob(
            token="7",
            logprob=-0.25,
            top=[TopLogprob(token="7", logprob=-0.25), TopLogprob(token="8", logprob=-1.5)],
        )
    ]


# -- item 3: preflight ---------------------------------------------------------------------------
def check(*backends: OpenAICompatBackend) -> list[str]:
    return asyncio.run(preflight(list(backends)))


def test_preflight_accepts_a_server_without_models():
    with FakeServer(models=False) as server:
        assert check(backend(server.base_url)) == []
        assert server.counts["models"] == 1 and server.requests == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/v1", "Connect call failed"),
        ("http://host.invalid/v1?key=SECRET-IN-URL", "host.invalid"),
    ],
)
def test_preflight_stops_on_a_dead_endpoint(url, why):
    with pytest.raises(PreflightError) as error:
        check(backend(url))
    message = error.value.message
    assert error.value.exit_code == 4
    assert "the judge endpoint is unreachable" in message and why in message
    assert "--judge-base-url" in message and "SECRET-IN-URL" not in message


def test_preflight_reports_a_tls_failure():
    async def not_tls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def scenario() -> None:
        server = await asyncio.start_server(not_tls, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await preflight([backend(f"https://127.0.0.1:{port}/v1")])
        finally:
            server.close()

    started = time.monotonic()
    with pytest.raises(PreflightError) as error:
        asyncio.run(scenario())
    assert "unreachable" in error.value.message and time.monotonic() - started < 10
    assert "SSL" in error.value.message or "TLS" in error.value.message


@pytest.mark.parametrize(
    ("key", "status", "text"),
    [
        (None, 401, "no API key was sent to it"),
        (KEY, 401, "rejected the API key from $JUDGE_KEY"),
        (KEY, 403, "refused access (HTTP 403)"),
    ],
)
def test_preflight_stops_on_a_refused_key(key, status, text):
    with FakeServer(api_key="sk-the-right-one" if status == 401 else None) as server:
        if status == 403:
            server.models = True
            server._models = _forbidden(server)  # type: ignore[method-assign]
        with pytest.raises(PreflightError) as error:
            check(backend(server.base_url, key))
        sent = list(server.requests)
    assert text in error.value.message and sent == []
    assert KEY not in error.value.message


def _forbidden(server: FakeServer):
    async def models(headers: dict[str, str], writer: asyncio.StreamWriter) -> bool:
        return await server._send(writer, 403, b'{"error": {"message": "no access"}}')

    return models


def test_preflight_with_replicas_stops_only_when_none_is_reachable():
    with FakeServer() as server:
        b = OpenAICompatBackend(
            "openai/judge-model",
            "judge-model",
            endpoints=[EndpointKey("http://127.0.0.1:9/v1"), EndpointKey(server.base_url)],
            policy=FAST,
            role="judge",
        )
        warnings = check(b)
        assert len(warnings) == 1 and "http://127.0.0.1:9/v1 is unreachable" in warnings[0]
        dead, alive = b.pool.endpoints
        assert dead.cool_until > time.monotonic() and alive.cool_until == 0.0
        completion = complete(b)
        assert completion.attempts == 1 and alive.requests == 1 and dead.requests == 0
    both_dead = OpenAICompatBackend(
        "openai/judge-model",
        "judge-model",
        endpoints=[EndpointKey("http://127.0.0.1:9/v1"), EndpointKey("http://127.0.0.1:7/v1")],
        policy=FAST,
        role="judge",
    )
    with pytest.raises(PreflightError, match="endpoints are unreachable"):
        check(both_dead)


# -- item 3: retries are visible while they happen ----------------------------------------------
def test_retrying_requests_and_the_last_error_are_live_in_the_progress_line():
    from turnbench.report.progress import LiveProgress

    gate = {"fail": True}

    def respond(request: dict[str, Any]) -> Reply:
        if gate["fail"]:
            return Reply(status=503, body={"error": {"message": f"overloaded \x1b[2J {KEY}"}})
        return Reply(content="ok")

    policy = RetryPolicy(max_attempts=100, initial_wait=0.05, max_wait=0.05, request_timeout=2)
    with FakeServer(responder=respond) as server:
        b = backend(server.base_url, KEY, policy=policy)
        progress = LiveProgress(Console(file=io.StringIO(), width=200), {"judgments": b})
        progress.start({"judgments": 3}, {})
        try:

            async def scenario() -> list[str]:
                tasks = [asyncio.create_task(b.complete(MESSAGES, PARAMS)) for _ in range(3)]
                seen = []
                for _ in range(40):
                    await asyncio.sleep(0.05)
                    task = progress._progress.tasks[0]
                    seen.append(str(progress._progress.columns[-1].render(task)))
                    if b.stats.retrying == 3:
                        break
                gate["fail"] = False
                await asyncio.gather(*tasks)
                await b.aclose()
                return seen

            seen = asyncio.run(scenario())
        finally:
            progress.stop()
    live = seen[-1]
    assert "retrying 3 (last: HTTP 503: overloaded [2J ***)" in live, live
    assert b.stats.retrying == 0 and b.stats.retries >= 3
    assert KEY not in " ".join(seen) and "\x1b" not in " ".join(seen)


# -- item 6: a whole attempt is bounded by --request-timeout -----------------------------------
def test_a_trickling_body_is_cut_at_the_request_timeout():
    policy = RetryPolicy(max_attempts=10, initial_wait=0.01, request_timeout=2, max_total_seconds=5)
    with FakeServer(responder=always(Reply(content="x" * 50, action="trickle"))) as server:
        b = backend(server.base_url, policy=policy)
        started = time.monotonic()
        with pytest.raises(RequestFailedError) as error:
            complete(b)
        elapsed = time.monotonic() - started
    assert "timed out after 2s" in error.value.message
    assert 2 <= error.value.attempts <= 4
    assert 4.0 <= elapsed <= 2 * 2 + 5 + 0.5, elapsed  # not 0.4 s per byte x 300 bytes


# -- Retry-After / 429 under adaptive concurrency ----------------------------------------------
def test_429s_cost_no_attempt_under_auto_but_do_under_a_fixed_limit():
    def busy_then_ok(n: int):
        calls: list[int] = []

        def respond(request: dict[str, Any]) -> Reply:
            calls.append(1)
            return Reply(status=429) if len(calls) <= n else Reply(content="ok")

        return respond

    policy = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.05, request_timeout=2)
    with FakeServer(responder=busy_then_ok(5)) as server:
        completion = complete(backend(server.base_url, policy=policy, concurrency="auto"))
    assert completion.text == "ok" and completion.attempts == 6
    with (
        FakeServer(responder=busy_then_ok(5)) as server,
        pytest.raises(RequestFailedError) as error,
    ):
        complete(backend(server.base_url, policy=policy, concurrency=4))
    assert error.value.attempts == 2


def test_redirects_are_not_followed():
    reply = Reply(status=307, headers={"Location": "http://127.0.0.1:1/steal"})
    with FakeServer(responder=always(reply)) as server:
        with pytest.raises(RequestFailedError, match="redirects elsewhere"):
            complete(backend(server.base_url, KEY))
        assert len(server.requests) == 1
