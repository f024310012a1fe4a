"""The key rule, URL redaction and comparison, reserved extra fields, --concurrency."""

from __future__ import annotations

import pytest

from turnbench.backends.fields import check_extra_fields
from turnbench.backends.keys import resolve_endpoint_keys
from turnbench.backends.options import parse_concurrency
from turnbench.backends.urls import display_url, same_endpoint, target, url_secrets
from turnbench.errors import UserError

LOCAL = "http://127.0.0.1:8000/v1"
OTHER = "https://llm.example.org/v1"


def keys(role, urls, named, environ):
    return [(e.url, e.key, e.source) for e in resolve_endpoint_keys(role, urls, named, environ)]


@pytest.mark.parametrize(
    ("urls", "named", "environ", "expected"),
    [
        # no base URL: the default endpoint (OpenAI) with the default key
        (
            (),
            None,
            {"OPENAI_API_KEY": "sk-a"},
            [("https://api.openai.com/v1", "sk-a", "OPENAI_API_KEY")],
        ),
        # no base URL, $OPENAI_BASE_URL set: that is the default endpoint, and gets the key
        (
            (),
            None,
            {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": LOCAL},
            [(LOCAL, "sk-a", "OPENAI_API_KEY")],
        ),
        # a base URL elsewhere: no key at all
        ((OTHER,), None, {"OPENAI_API_KEY": "sk-a"}, [(OTHER, None, None)]),
        ((LOCAL,), None, {"OPENAI_API_KEY": "sk-a"}, [(LOCAL, None, None)]),
        # a base URL equal to the default endpoint (normalised): the default key
        (
            ("HTTP://127.0.0.1:8000/v1/",),
            None,
            {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": LOCAL},
            [("HTTP://127.0.0.1:8000/v1/", "sk-a", "OPENAI_API_KEY")],
        ),
        (
            ("https://api.openai.com:443/v1",),
            None,
            {"OPENAI_API_KEY": "sk-a"},
            [("https://api.openai.com:443/v1", "sk-a", "OPENAI_API_KEY")],
        ),
        # $OPENAI_BASE_URL moves the default: OpenAI itself is then "elsewhere"
        (
            (OTHER,),
            None,
            {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": LOCAL},
            [(OTHER, None, None)],
        ),
        # same host, other port or path: elsewhere
        (
            ("http://127.0.0.1:8001/v1",),
            None,
            {"OPENAI_API_KEY": "k1234", "OPENAI_BASE_URL": LOCAL},
            [("http://127.0.0.1:8001/v1", None, None)],
        ),
        (
            ("http://127.0.0.1:8000/v2",),
            None,
            {"OPENAI_API_KEY": "k1234", "OPENAI_BASE_URL": LOCAL},
            [("http://127.0.0.1:8000/v2", None, None)],
        ),
        # a named variable: used on every endpoint of the role, wherever it points
        (
            (OTHER, LOCAL),
            "MY_KEY",
            {"OPENAI_API_KEY": "sk-a", "MY_KEY": "sk-mine"},
            [(OTHER, "sk-mine", "MY_KEY"), (LOCAL, "sk-mine", "MY_KEY")],
        ),
        (
            (),
            "MY_KEY",
            {"MY_KEY": " sk-mine\n"},
            [("https://api.openai.com/v1", "sk-mine", "MY_KEY")],
        ),
        # a local server with no key anywhere
        ((LOCAL,), None, {}, [(LOCAL, None, None)]),
        # a mix of default and other replicas: the key only where it belongs
        (
            (LOCAL, OTHER),
            None,
            {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": LOCAL},
            [(LOCAL, "sk-a", "OPENAI_API_KEY"), (OTHER, None, None)],
        ),
    ],
)
def test_which_key_goes_where(urls, named, environ, expected):
    assert keys("model", urls, named, environ) == expected


@pytest.mark.parametrize(
    ("role", "urls", "named", "environ", "message"),
    [
        (
            "judge",
            (LOCAL,),
            "JUDGE_KEY",
            {},
            "--judge-api-key-env names $JUDGE_KEY, which is unset",
        ),
        (
            "model",
            (LOCAL,),
            "MODEL_KEY",
            {"MODEL_KEY": "  "},
            "--model-api-key-env names $MODEL_KEY",
        ),
        ("model", (), None, {}, "needs an API key: set $OPENAI_API_KEY"),
        (
            "judge",
            ("https://api.openai.com/v1",),
            None,
            {"OPENAI_API_KEY": "sk-a", "OPENAI_BASE_URL": LOCAL},
            "--judge-api-key-env VAR",
        ),
        ("model", ("ftp://host/v1",), None, {}, "--model-base-url"),
        ("model", ("127.0.0.1:8000/v1",), None, {}, "not an http:// or https:// URL"),
        ("model", (LOCAL,), "K", {"K": "sk-a\r\nX-Evil: 1"}, "cannot carry"),
    ],
)
def test_key_usage_errors(role, urls, named, environ, message):
    with pytest.raises(UserError) as error:
        resolve_endpoint_keys(role, urls, named, environ)
    assert message in error.value.message
    assert "sk-a" not in error.value.message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://bob:s3cret@api.example.com:8443/v1", "https://***@api.example.com:8443/v1"),
        ("https://token@host/v1", "https://***@host/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://h/v1?api-key=SECRET", "https://h/v1?api-key=***"),
        ("https://h/v1?api-version=2024-06-01&key=SECRET", "https://h/v1?api-version=***&key=***"),
        (
            "https://h/v1?sig=a%2Fb&token=x&access_token=y",
            "https://h/v1?sig=***&token=***&access_token=***",
        ),
        ("https://h/v1?SECRETBARE", "https://h/v1?***"),
        ("https://u:p@h/v1?password=pw#frag", "https://***@h/v1?password=***#***"),
        ("http://[::1]:99999/v1", "<unparseable URL>"),
        (None, None),
        ("", ""),
    ],
)
def test_display_url_hides_credentials_and_query_values(url, shown):
    assert display_url(url) == shown


def test_url_secrets_lists_raw_and_decoded_values():
    secrets = url_secrets("https://alice:pa%40ss@h/v1?key=abc%2Fdef&x=1")
    assert {"alice", "pa%40ss", "pa@ss", "abc%2Fdef", "abc/def"} <= set(secrets)
    assert "1" not in secrets  # too short to redact without mangling text
    assert url_secrets("http://127.0.0.1:8000/v1") == []


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://api.openai.com/v1", "https://API.openai.com:443/v1/", True),
        ("http://h/v1", "http://h:80/v1", True),
        ("http://h/v1", "https://h/v1", False),
        ("http://h/v1", "http://h/v1?key=1", True),
        ("http://u:p@h/v1", "http://h/v1", True),
        ("http://h/v1", "http://h/v1/chat", False),
        ("http://h:8000/v1", "http://h:8001/v1", False),
    ],
)
def test_same_endpoint(a, b, same):
    assert same_endpoint(a, b) is same


def test_target_splits_credentials_and_query_from_the_path():
    t = target("https://bob:p%40ss@h:8443/openai/v1/?api-version=1&key=k")
    assert t.base == "https://h:8443/openai/v1"
    assert (t.username, t.password) == ("bob", "p@ss")
    assert (
        t.url("chat/completions") == "https://h:8443/openai/v1/chat/completions?api-version=1&key=k"
    )
    assert target("http://h/v1").url("models") == "http://h/v1/models"


def test_reserved_extra_fields_are_refused_in_one_message():
    assert check_extra_fields({"seed": 1, "top_p": 0.5}, "--judge-extra") == {
        "seed": 1,
        "top_p": 0.5,
    }
    with pytest.raises(UserError) as error:
        check_extra_fields({"seed": 1, "stream": True, "tools": [], "model": "x"}, "--model-extra")
    assert error.value.message.startswith("--model-extra may not set model, stream, tools:")
    for name in ("messages", "n", "tool_choice", "functions", "function_call", "response_format"):
        with pytest.raises(UserError):
            check_extra_fields({name: None}, "--judge-extra")


@pytest.mark.parametrize(
    ("value", "parsed"), [("8", 8), ("auto", "auto"), (" AUTO ", "auto"), (3, 3), ("1", 1)]
)
def test_concurrency_values(value, parsed):
    assert parse_concurrency(value, "--concurrency") == parsed


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5", ""])
def test_bad_concurrency_values(value):
    with pytest.raises(UserError, match="--concurrency"):
        parse_concurrency(value, "--concurrency")
