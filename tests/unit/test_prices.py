"""Dollars from usage: lookup rules, the cost formula, user overrides, malformed files."""

from __future__ import annotations

import json

import pytest

from turnbench.errors import UserError
from turnbench.prices import (
    RoleEstimate,
    cost,
    estimate_dollars,
    format_dollars,
    load_prices,
)
from turnbench.specs import parse_spec
from turnbench.types import Usage

MILLION = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)


@pytest.mark.parametrize(
    ("model", "dollars"),
    [
        ("openai/gpt-4o-mini", 0.15 + 0.60),
        ("openai/gpt-4o-mini-2024-07-18", 0.15 + 0.60),  # dated snapshot -> its family
        ("openai/gpt-4o", 2.50 + 10.00),
        ("openai/gpt-4o-2024-05-13", 5.00 + 15.00),  # listed itself: not the family price
        ("openai/gpt-4-0613", 30.0 + 60.0),  # MT-Bench's original judge
        ("anthropic/claude-3-5-haiku-20241022", 0.80 + 4.00),
        ("anthropic/claude-3-7-sonnet-latest", 3.0 + 15.0),
        ("anthropic/claude-sonnet-4-20250514", 3.0 + 15.0),
        ("anthropic/claude-sonnet-4-5-20250929", 3.0 + 15.0),
        ("local/smollm2", 0.0),  # the pattern local/*
        ("openai/meta-llama/Llama-3-8B", None),  # unknown: no guess
        ("azure/my-deployment", None),
        ("openai/gpt-4o-mini-audio", None),  # not a date suffix, not listed
    ],
)
def test_lookup_and_plain_cost(model, dollars):
    got = cost(model, MILLION)
    assert got == pytest.approx(dollars) if dollars is not None else got is None


def test_model_spec_accepted():
    assert cost(parse_spec("openai/gpt-4o-mini"), MILLION) == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("model", "usage", "batch", "dollars"),
    [
        # OpenAI: 1,000 prompt tokens of which 600 cached, 100 completion
        (
            "openai/gpt-4o",
            Usage(prompt_tokens=1000, completion_tokens=100, cached_prompt_tokens=600),
            False,
            (400 * 2.5 + 600 * 1.25 + 100 * 10.0) / 1e6,
        ),
        (
            "openai/gpt-4o",
            Usage(prompt_tokens=1000, completion_tokens=100, cached_prompt_tokens=600),
            True,
            (400 * 2.5 + 600 * 1.25 + 100 * 10.0) / 1e6 / 2,
        ),
        # Anthropic: 2,000 prompt = 100 plain + 1,500 read + 400 written; 50 completion
        (
            "anthropic/claude-3-5-haiku",
            Usage(
                prompt_tokens=2000,
                completion_tokens=50,
                cached_prompt_tokens=1500,
                cache_creation_tokens=400,
            ),
            False,
            (100 * 0.8 + 1500 * 0.08 + 400 * 1.0 + 50 * 4.0) / 1e6,
        ),
        # no cached price listed: cached tokens cost the input price
        (
            "openai/gpt-4",
            Usage(prompt_tokens=100, cached_prompt_tokens=100),
            False,
            100 * 30.0 / 1e6,
        ),
        # inconsistent counts cannot make a negative or double charge
        ("openai/gpt-4o", Usage(prompt_tokens=10, cached_prompt_tokens=50), False, 10 * 1.25 / 1e6),
        ("local/smollm2", MILLION, True, 0.0),
    ],
)
def test_cost_formula(model, usage, batch, dollars):
    assert cost(model, usage, batch=batch) == pytest.approx(dollars)


def test_shipped_table_is_dated_and_sourced():
    table = load_prices()
    assert table.as_of == "2026-12-01"
    assert set(table.sources) == {"openai", "anthropic"}


def test_user_file_overrides_and_extends(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "as_of": "2027-01-15",
                "models": {
                    "openai/gpt-4o-mini": {"input": 1.0, "output": 2.0},
                    "azure/my-gpt4o": {"input": 2.5, "cached_input": 1.25, "output": 10.0},
                    "openai/meta-llama/*": {"input": 0.1, "output": 0.1},
                },
            }
        )
    )
    table = load_prices(path)
    assert table.cost("openai/gpt-4o-mini", MILLION) == pytest.approx(3.0)
    assert table.cost("azure/my-gpt4o", MILLION) == pytest.approx(12.5)
    assert table.cost("openai/meta-llama/Llama-3-8B", MILLION) == pytest.approx(0.2)
    assert table.cost("openai/gpt-4o", MILLION) == pytest.approx(12.5)  # shipped kept
    assert "2027-01-15" in table.as_of
    assert cost("openai/gpt-4o-mini", MILLION, prices=table) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "expected a JSON object"),
        (
            '{"models": {"openai/x": {"input": -1, "output": 1}}}',
            "models.'openai/x'.input: Input should be greater than or equal to 0",
        ),
        ('{"models": {"openai/x": {"input": 1}}}', "models.'openai/x'.output: Field required"),
        (
            '{"models": {"openai/x": {"input": 1, "output": 1, "outptu": 2}}}',
            "models.'openai/x'.outptu: Extra inputs are not permitted",
        ),
        ('{"models": {"openai/x": {"input": "cheap", "output": 1}}}', "models.'openai/x'.input"),
        ('{"models": {"gpt-4o": {"input": 1, "output": 1}}}', "write PROVIDER/NAME"),
        (
            '{"models": {"openai/x": {"input": 1, "output": 1, "batch_discount": 1.5}}}',
            "batch_discount",
        ),
        ('{"as_of": "last week", "models": {}}', "as_of: Value error, must be a date"),
        ('{"currency": "EUR", "models": {}}', "only USD"),
        ('{"as_of": "2027-01-01"}', "models: Field required"),
    ],
)
def test_malformed_user_file_names_file_and_field(tmp_path, content, message):
    path = tmp_path / "my-prices.json"
    path.write_text(content)
    with pytest.raises(UserError) as caught:
        load_prices(path)
    assert str(path) in caught.value.message and message in caught.value.message


def test_missing_user_file(tmp_path):
    with pytest.raises(UserError, match=r"prices file: .*no such file"):
        load_prices(tmp_path / "nope.json")


def test_estimate_per_role():
    roles = [
        RoleEstimate(
            "answers",
            "openai/gpt-4o-mini",
            requests=160,
            prompt_tokens=100_000,
            completion_tokens=200_000,
        ),
        RoleEstimate(
            "judge",
            "anthropic/claude-3-5-haiku",
            requests=160,
            prompt_tokens=400_000,
            completion_tokens=50_000,
        ),
        RoleEstimate(
            "judge",
            "anthropic/claude-3-5-haiku",
            requests=10,
            prompt_tokens=100_000,
            completion_tokens=0,
        ),
        RoleEstimate(
            "other", "openai/unknown-model", requests=1, prompt_tokens=1, completion_tokens=1
        ),
    ]
    got = estimate_dollars(roles)
    assert got["answers"] == pytest.approx((100_000 * 0.15 + 200_000 * 0.6) / 1e6)
    assert got["judge"] == pytest.approx((500_000 * 0.8 + 50_000 * 4.0) / 1e6)
    assert got["other"] is None
    assert estimate_dollars(roles, batch=True)["judge"] == pytest.approx(got["judge"] / 2)


@pytest.mark.parametrize(
    ("amount", "text"),
    [(None, "unknown price"), (0.0, "$0.00"), (0.004, "<$0.01"), (1234.5, "$1,234.50")],
)
def test_format_dollars(amount, text):
    assert format_dollars(amount) == text


@pytest.mark.parametrize(
    ("spec", "base_urls", "environ", "served"),
    [
        ("openai/gpt-4o-mini", (), {}, True),  # api.openai.com
        ("openai/gpt-4o-mini", ("https://api.openai.com/v1",), {}, True),
        ("openai/gpt-4o-mini", ("http://127.0.0.1:8000/v1",), {}, False),  # a local vLLM
        ("openai/gpt-4o-mini", ("http://10.0.0.5/v1",), {}, False),
        ("openai/gpt-4o-mini", ("https://proxy.example.com/v1",), {}, False),
        # one replica elsewhere is enough to doubt the list price
        (
            "openai/gpt-4o-mini",
            ("https://api.openai.com/v1", "http://localhost:8000/v1"),
            {},
            False,
        ),
        ("openai/gpt-4o-mini", (), {"OPENAI_BASE_URL": "http://localhost:11434/v1"}, False),
        ("anthropic/claude-3-5-haiku", (), {}, True),
        ("anthropic/claude-3-5-haiku", ("http://127.0.0.1:9/",), {}, False),
        ("anthropic/claude-3-5-haiku", (), {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, False),
        ("azure/gpt-4o", ("https://res.openai.azure.com",), {}, True),
        ("azure/gpt-4o", ("http://127.0.0.1:9",), {}, False),
        ("local/smollm2", (), {}, True),  # in process: the table's local/* ($0)
    ],
)
def test_which_endpoints_the_list_prices_apply_to(monkeypatch, spec, base_urls, environ, served):
    from turnbench.backends.factory import BackendOptions
    from turnbench.backends.providers import served_by_provider

    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    options = BackendOptions(base_urls=base_urls)
    assert served_by_provider(parse_spec(spec), options) is served


def test_off_list_specs_are_priced_by_the_user_file_only(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"openai/mine": {"input": 1.0, "output": 2.0}}}))
    table = load_prices(path).off_list(["openai/gpt-4o-mini", "openai/mine"])
    assert table.price_for("openai/gpt-4o-mini") is None  # listed, but served elsewhere
    assert table.cost("openai/mine", MILLION) == 3.0  # the user's own price still holds
    assert table.cost("openai/gpt-4o", MILLION) == 2.50 + 10.00  # not off the list
    assert load_prices().off_list(["local/x"]).price_for("local/x") is None
    # the worst case of requests with these token bounds, at live prices
    assert table.bound("openai/mine", MILLION) == 3.0
    assert table.bound("openai/gpt-4o-mini", MILLION) is None
