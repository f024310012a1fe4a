"""The fake servers share one lifecycle (turnbench.testing.fake_base): each can be stopped and
started again on its port, as a restarted provider would be, and a port it cannot take is
reported at once instead of after a silent wait."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from turnbench.testing.fake_anthropic import FakeAnthropic
from turnbench.testing.fake_azure import FakeAzureOpenAI
from turnbench.testing.fake_base import ThreadedServer
from turnbench.testing.fake_batch import FakeOpenAIBatch
from turnbench.testing.fake_server import FakeServer, spawn

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

# (the fake, one request it answers with 200: method, path, headers, JSON body, its count)
CASES: dict[str, tuple[Callable[[], ThreadedServer], str, str, dict[str, str], Any, str]] = {
    "openai-compatible": (FakeServer, "POST", "/v1/chat/completions", {}, CHAT, "200"),
    "anthropic": (
        FakeAnthropic,
        "GET",
        "/v1/messages/batches",
        {"x-api-key": "test-anthropic-key", "anthropic-version": "2023-06-01"},
        None,
        "batch_list",
    ),
    "openai-batch": (
        FakeOpenAIBatch,
        "GET",
        "/v1/batches",
        {"Authorization": "Bearer test-openai-key"},
        None,
        "batch_list",
    ),
    "azure": (
        FakeAzureOpenAI,
        "POST",
        "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21",
        {"api-key": "test-azure-key"},
        CHAT,
        "chat",
    ),
}


def ask(origin: str, method: str, path: str, headers: dict[str, str], body: Any) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{origin}{path}", data=data, method=method)
    for name, value in {**headers, "Content-Type": "application/json"}.items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return int(reply.status)


@pytest.mark.parametrize("case", list(CASES))
def test_every_fake_stops_and_starts_again_on_its_port(case: str) -> None:
    make, method, path, headers, body, name = CASES[case]
    fake = make().start()
    try:
        port = fake.port
        assert ask(fake.origin, method, path, headers, body) == 200
        fake.stop()
        with pytest.raises(OSError):  # stopped: nothing listens there any more
            ask(fake.origin, method, path, headers, body)
        assert fake.start(port=port).port == port
        assert ask(fake.origin, method, path, headers, body) == 200
        assert fake.counts[name] == 2  # the state outlived the restart
    finally:
        fake.stop()


@pytest.mark.parametrize("case", ["openai-compatible", "anthropic"])
def test_a_taken_port_is_reported_at_once(case: str) -> None:
    make = CASES[case][0]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="did not start") as error:
            make().start(port=holder.getsockname()[1])
    assert time.monotonic() - started < 5
    assert isinstance(error.value.__cause__, OSError)  # the reason travels with it


def test_spawn_reports_a_taken_port_at_once(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="did not start"):
            spawn(0.0, tmp_path, "--port", str(holder.getsockname()[1]))
    assert time.monotonic() - started < 15  # the process ends; before, spawn waited 30 s
