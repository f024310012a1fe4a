"""Which API key goes to which endpoint: the one rule, as a pure function.

- A variable named with --model-api-key-env / --judge-api-key-env is always used for that
  role, on every endpoint of the role; unset or empty is a usage error before anything is
  sent.
- Otherwise the default key ($OPENAI_API_KEY) goes only to the default endpoint
  ($OPENAI_BASE_URL, else https://api.openai.com/v1). A role with no base URL uses the
  default endpoint; a base URL that points elsewhere gets no key at all.

So a key exported for OpenAI never reaches a third-party or self-hosted server by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from turnbench.backends.urls import check_base_url, endpoint_id, same_endpoint
from turnbench.errors import UserError

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"


def default_endpoint(environ: Mapping[str, str]) -> str:
    return environ.get(BASE_URL_ENV, "").strip() or OPENAI_URL


def key_flag(role: str) -> str:
    return f"--{role}-api-key-env"


def base_url_flag(role: str) -> str:
    return f"--{role}-base-url"


@dataclass(frozen=True)
class EndpointKey:
    """One endpoint of a role and the key it gets (`key` None: no Authorization header)."""

    url: str
    key: str | None = field(default=None, repr=False)
    source: str | None = None  # the variable the key came from


def _is_openai(url: str) -> bool:
    ident = endpoint_id(url)
    return ident is not None and ident.host == "api.openai.com"


def _valid_key(value: str, variable: str) -> str:
    value = value.strip()
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or ord(ch) > 0xFF for ch in value):
        raise UserError(
            f"${variable} contains characters an HTTP header cannot carry "
            "(a line break or non-Latin-1 text): check the variable"
        )
    return value


def resolve_endpoint_keys(
    role: str,
    base_urls: tuple[str, ...] | list[str],
    api_key_env: str | None,
    environ: Mapping[str, str],
) -> list[EndpointKey]:
    """Each endpoint of `role` with the key it may receive. Raises UserError for an unset
    or empty named variable, a malformed URL, or OpenAI itself with no key."""
    default = default_endpoint(environ)
    if base_urls:
        urls = [check_base_url(url, base_url_flag(role)) for url in base_urls]
    else:
        urls = [check_base_url(default, f"${BASE_URL_ENV}")]
    if api_key_env is not None:
        value = environ.get(api_key_env, "")
        if not value.strip():
            raise UserError(
                f"{key_flag(role)} names ${api_key_env}, which is unset or empty: "
                "export the key in that variable, or drop the flag for a server without keys"
            )
        key = _valid_key(value, api_key_env)
        return [EndpointKey(url, key, api_key_env) for url in urls]
    default_key = environ.get(DEFAULT_KEY_ENV, "").strip() or None
    resolved = []
    for url in urls:
        if default_key is not None and same_endpoint(url, default):
            resolved.append(
                EndpointKey(url, _valid_key(default_key, DEFAULT_KEY_ENV), DEFAULT_KEY_ENV)
            )
        elif _is_openai(url):
            raise UserError(
                f"the {role} endpoint is OpenAI and needs an API key: set ${DEFAULT_KEY_ENV}"
                + (
                    ""
                    if same_endpoint(url, default)
                    else f", or name the variable holding it with {key_flag(role)} VAR"
                )
            )
        else:
            resolved.append(EndpointKey(url))
    return resolved
