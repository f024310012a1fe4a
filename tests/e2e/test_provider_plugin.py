"""A provider is its own module plus one registration: this test module declares an
OpenAI-compatible provider and registers it (no line of turnbench changed), an evaluation
runs through it against a fake server, and its key goes only to its own endpoint."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import turnbench
from turnbench.backends.provider import openai_compatible
from turnbench.backends.providers import names, parse_model_spec, register, unregister
from turnbench.errors import UserError
from turnbench.testing.fake_server import FakeServer

KEY = "throwaway-secret-0123456789"
OPENAI_KEY = "sk-openai-secret-0123456789"
JUDGED = 16  # MT-Bench with limit=1: one question per category (8), two turns each

#: everything turnbench needs of the provider, declared here
THROWAWAY = openai_compatible(
    "throwaway",
    base_url="https://api.throwaway.invalid/v1",
    key_env="THROWAWAY_API_KEY",  # its default endpoint: $THROWAWAY_BASE_URL, else base_url
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("THROWAWAY_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    register(THROWAWAY)
    try:
        yield
    finally:
        unregister("throwaway")


def _judge(server: FakeServer, data_dir: Path, tmp_path: Path, **where: str):
    answers = tmp_path / "alpaca-13b.jsonl"
    shutil.copy(data_dir / "mt_bench" / "model_answer" / "alpaca-13b.jsonl", answers)
    return turnbench.judge_answers(
        answers,
        judge="throwaway/judge-model",
        out=tmp_path / "judged",
        data_dir=data_dir,
        limit=1,
        **where,
    )


def test_an_evaluation_runs_through_a_registered_provider_with_its_own_key(
    registered, data_dir, tmp_path, monkeypatch
):
    with FakeServer(api_key=KEY) as own, FakeServer() as openai_default:
        monkeypatch.setenv("THROWAWAY_BASE_URL", own.base_url)  # its default endpoint
        monkeypatch.setenv("OPENAI_BASE_URL", openai_default.base_url)  # never used by it
        result = _judge(own, data_dir, tmp_path)
        seen = [h.get("authorization") for h in own.headers_seen]
    assert result.results["complete"]
    assert result.results["models"]["alpaca-13b"]["counts"]["judged"] == JUDGED
    assert len(seen) == JUDGED and set(seen) == {f"Bearer {KEY}"}  # its key, on every request
    assert not openai_default.headers_seen and openai_default.counts["models"] == 0
    provenance = result.results["provenance"]
    assert provenance["endpoints"]["judge"] == own.base_url
    assert provenance["endpoint_requests"]["judge"] == {
        "throwaway/judge-model": {own.base_url: JUDGED}
    }
    assert KEY not in (tmp_path / "judged" / "log.jsonl").read_text("utf-8")


def test_its_key_goes_only_to_its_own_endpoint(registered, data_dir, tmp_path, monkeypatch):
    with FakeServer() as own, FakeServer() as elsewhere:
        monkeypatch.setenv("THROWAWAY_BASE_URL", own.base_url)
        result = _judge(elsewhere, data_dir, tmp_path, judge_base_url=elsewhere.base_url)
        seen = {h.get("authorization") for h in elsewhere.headers_seen}
    assert result.results["complete"]
    assert seen == {None}  # another base URL gets no key (and never $OPENAI_API_KEY)
    assert not own.headers_seen and own.counts["models"] == 0


def test_its_own_api_needs_its_key(registered, data_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("THROWAWAY_API_KEY")
    with pytest.raises(UserError) as refused, FakeServer() as unused:
        _judge(unused, data_dir, tmp_path)
    assert "needs an API key: set $THROWAWAY_API_KEY" in refused.value.message


def test_a_provider_nobody_registered_is_refused_with_the_known_ones():
    assert "throwaway" not in names()
    with pytest.raises(UserError) as refused:
        parse_model_spec("throwaway/judge-model", "--judge")
    assert refused.value.message == (
        "--judge 'throwaway/judge-model': unknown provider 'throwaway'; known providers: "
        "openai, local, anthropic, azure."
    )
    with pytest.raises(ValueError):
        register(openai_compatible("openai", base_url=None, key_env="X"))  # taken
