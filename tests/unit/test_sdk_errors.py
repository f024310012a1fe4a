"""SDK errors map onto the transport's own TransientError and redaction, with the same rules."""

from __future__ import annotations

import httpx2
import openai
import pytest

from turnbench.backends.replies import Redactor, short_detail
from turnbench.backends.retry import TransientError
from turnbench.backends.sdk_calls import classify_sdk_error, sdk_error_detail

SECRET = "sk-test-0123456789"
# a real request: openai >= 3.60 reads the headers of the request an error carries
_REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


class _Boom(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def test_an_sdk_error_detail_is_redacted_and_has_no_control_characters():
    redact = Redactor([SECRET])
    text = f"bad key {SECRET} \x1b[31m!\x00 \n  next line"
    detail = sdk_error_detail(_Boom(text), redact)
    assert detail == short_detail(text, redact)  # the one helper, whatever the source
    assert SECRET not in detail and "\x1b" not in detail and "\x00" not in detail
    assert detail.startswith("bad key ***")


@pytest.mark.parametrize(
    ("error", "kind", "billed"),
    [
        (openai.APITimeoutError(request=_REQUEST), "timeout", True),
        (openai.APIConnectionError(request=_REQUEST), "dropped", True),
    ],
)
def test_sdk_failures_are_the_transports_transient_error(error, kind, billed):
    mapped = classify_sdk_error(
        error, openai, what="m", redact=Redactor(), fatal_message=lambda s, d: d
    )
    assert type(mapped) is TransientError
    assert mapped.kind == kind and mapped.billed is billed


def test_congestion_is_a_refusal_not_billed():
    assert TransientError("HTTP 529", kind="status", status=529).congestion
    assert not TransientError("HTTP 529", kind="status", status=529).billed
    assert TransientError("HTTP 500", kind="status", status=500).billed
    assert not TransientError("rejects temperature", status=400, billed=False).billed
