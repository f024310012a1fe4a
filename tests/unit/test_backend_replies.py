"""Any reply is survivable: surrogates, bad usage, null content, logprobs, echoed secrets."""

from __future__ import annotations

import json

import pytest

from turnbench.backends.replies import (
    MAX_TOKENS_PER_REQUEST,
    MalformedReplyError,
    Redactor,
    error_detail,
    parse_completion,
    parse_logprobs,
    parse_usage,
)
from turnbench.backends.retry import parse_duration
from turnbench.types import TokenLogprob, TopLogprob, Usage

NONE = Redactor()


def body(message=None, usage=None, **choice) -> bytes:
    data = {
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", **choice}],
    }
    if message is None:
        data["choices"][0].pop("message")
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()


def test_a_lone_surrogate_becomes_the_replacement_character():
    raw = b'{"choices": [{"message": {"content": "ok \\ud83d end \\ud83d\\ude00"}}]}'
    completion = parse_completion(raw, NONE)
    assert completion.text == "ok \ufffd end \U0001f600"  # the valid pair is kept
    completion.text.encode("utf-8")  # would raise on a surrogate
    completion.model_dump_json()


def test_invalid_utf8_bytes_do_not_crash():
    raw = b'{"choices": [{"message": {"content": "caf\xe9"}}]}'
    assert parse_completion(raw, NONE).text == "caf\ufffd"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 12, "completion_tokens": 3}, (12, 3)),
        ({"prompt_tokens": "12", "completion_tokens": 3}, (0, 3)),
        ({"prompt_tokens": 12.0, "completion_tokens": 3.5}, (0, 0)),
        ({"prompt_tokens": {"n": 1}, "completion_tokens": [4]}, (0, 0)),
        ({"prompt_tokens": -1000, "completion_tokens": 5}, (0, 5)),
        ({"prompt_tokens": True, "completion_tokens": None}, (0, 0)),
        (
            {"prompt_tokens": MAX_TOKENS_PER_REQUEST, "completion_tokens": 10**15},
            (MAX_TOKENS_PER_REQUEST, 0),
        ),
        ("lots", (0, 0)),
        (None, (0, 0)),
        ([], (0, 0)),
    ],
)
def test_usage_keeps_only_plausible_counts(usage, expected):
    parsed = parse_usage(usage)
    assert (parsed.prompt_tokens, parsed.completion_tokens) == expected


def test_negative_usage_never_lowers_a_sum():
    total = Usage(prompt_tokens=100, completion_tokens=10)
    for raw in ({"prompt_tokens": -(10**9), "completion_tokens": -5}, {"prompt_tokens": "-1"}):
        total = total + parse_usage(raw)
    assert (total.prompt_tokens, total.completion_tokens) == (100, 10)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (body({"role": "assistant", "content": None}), "content is null"),
        (body({"role": "assistant", "content": None, "refusal": "No."}), "refusal: No."),
        (body(None), "no message"),
        (body({"role": "assistant"}), "content is null"),
        (body({"role": "assistant", "content": 42}), "content is null"),
        (b'{"choices": []}', "no choices"),
        (b'{"choices": "x"}', "no choices"),
        (b'{"choices": [7]}', "not an object"),
        (b"[1, 2]", "not a JSON object"),
        (b"<html>502</html>", "not JSON"),
        (b"", "not JSON"),
        # deep nesting is read (the deep part kept as its text) and is no object
        (b"[" * 100000 + b"]" * 100000, "not a JSON object"),
        (b"[" * 100000, "not JSON"),  # (and brackets that never close stay unreadable)
    ],
)
def test_malformed_replies_are_retryable_errors(raw, why):
    with pytest.raises(MalformedReplyError) as error:
        parse_completion(raw, NONE)
    assert why in str(error.value) and error.value.kind == "malformed"


def test_empty_content_is_a_valid_answer_and_parts_are_joined():
    assert parse_completion(body({"content": ""}), NONE).text == ""
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert parse_completion(body({"content": parts}), NONE).text == "ab"


def test_secrets_echoed_by_the_server_are_redacted():
    redact = Redactor(["sk-SECRET-1234", "sk-SECRET", "abc"])  # "abc": too short to replace
    reply = {
        "model": "model-sk-SECRET-1234",
        "choices": [{"message": {"content": "you sent sk-SECRET-1234 and sk-SECRET; abc stays"}}],
    }
    raw = json.dumps(reply).encode()
    completion = parse_completion(raw, redact)
    assert completion.text == "you sent *** and ***; abc stays"
    assert completion.reported_model == "model-***"
    error = json.dumps({"error": {"message": "bad key sk-SECRET-1234\x1b[31m!"}}).encode()
    assert error_detail(error, redact) == "bad key *** [31m!"  # no escape character either


def test_error_detail_shapes():
    assert error_detail(b'{"error": "plain"}', NONE) == "plain"
    assert error_detail(b'{"message": "top"}', NONE) == "top"
    assert error_detail(b"  gateway\n  timeout ", NONE) == "gateway timeout"
    assert error_detail(b"", NONE) == "(empty body)"
    assert len(error_detail(b"x" * 5000, NONE)) == 300


def test_logprobs_are_parsed_and_bad_entries_dropped():
    raw = {
        "content": [
            {
                "token": "[[",
                "logprob": -0.1,
                "top_logprobs": [{"token": "[[", "logprob": -0.1}, {"token": "[", "logprob": -2}],
            },
            {"token": "7", "logprob": 0.5},  # positive: not a log probability
            {"token": "7", "logprob": float("-inf")},
            {"token": 7, "logprob": -1.0},
            {"token": "\ud83d", "logprob": -1, "top_logprobs": [{"token": "x", "logprob": "y"}]},
        ]
    }
    assert parse_logprobs(raw) == [
        TokenLogprob(
            token="[[",
            logprob=-0.1,
            top=[TopLogprob(token="[[", logprob=-0.1), TopLogprob(token="[", logprob=-2.0)],
        ),
        TokenLogprob(token="\ufffd", logprob=-1.0, top=[]),
    ]
    assert parse_logprobs(None) is None
    assert parse_logprobs({"content": None}) is None
    assert parse_completion(body({"content": "x"}), NONE).logprobs is None
    with_logprobs = body({"content": "x"}, logprobs={"content": [{"token": "x", "logprob": 0}]})
    assert parse_completion(with_logprobs, NONE).logprobs == [TokenLogprob(token="x", logprob=0.0)]


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("1s", 1.0),
        ("20ms", 0.02),
        ("6m0s", 360.0),
        ("1h2m3.5s", 3723.5),
        ("0.5", 0.5),
        ("soon", None),
        ("5x", None),
        ("-1", None),
        (None, None),
    ],
)
def test_rate_limit_reset_durations(raw, seconds):
    assert parse_duration(raw) == seconds
