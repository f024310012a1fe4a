"""How one role (the model under test, or one judge) reaches its endpoints, as the flags
and the API give it; `factory.make_backend` builds backends from it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from turnbench.backends.keys import default_endpoint
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import UserError


@dataclass(frozen=True)
class BackendOptions:
    """How one role (the model under test, or one judge) reaches its endpoints.

    `base_urls`: empty = the default endpoint ($OPENAI_BASE_URL, else OpenAI); several =
    replicas serving the same model. `api_key_env`: the variable named by
    --model-api-key-env / --judge-api-key-env, or None when none was named.
    """

    role: str = "model"
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    concurrency: int | Literal["auto"] = 8
    token_param: str = "auto"
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    api_version: str | None = None  # azure/... only; else $AZURE_OPENAI_API_VERSION

    @property
    def base_url(self) -> str | None:
        return self.base_urls[0] if self.base_urls else None


def parse_concurrency(value: str | int, flag: str) -> int | Literal["auto"]:
    """--concurrency: a whole number >= 1, or "auto"."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    else:
        try:
            number = int(str(value).strip())
        except ValueError:
            raise UserError(
                f"{flag} must be a whole number of requests or auto, not {value!r}"
            ) from None
    if number < 1:
        raise UserError(f"{flag} must be at least 1, not {number}")
    return number


def resolve_base_url(explicit: str | None) -> str | None:
    return explicit or os.environ.get("OPENAI_BASE_URL") or None


def resolve_base_urls(
    options: BackendOptions, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The endpoints a role will use: its base URLs, else the default endpoint."""
    environ = os.environ if environ is None else environ
    return list(options.base_urls) or [default_endpoint(environ)]
