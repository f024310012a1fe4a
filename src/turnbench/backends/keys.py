"""Which API key goes to which endpoint: the one rule, as a pure function.

- A variable named with --model-api-key-env / --judge-api-key-env is always used for that
  role, on every endpoint of the role; unset or empty is a usage error before anything is
  sent.
- Otherwise the provider's default key goes only to the provider's default endpoint. A role
  with no base URL uses the default endpoint; a base URL that points elsewhere gets no key
  at all (no Authorization header). Per provider (`KeyRule`):
  - openai/...: $OPENAI_API_KEY, to $OPENAI_BASE_URL, else https://api.openai.com/v1;
  - anthropic/...: $ANTHROPIC_API_KEY, to $ANTHROPIC_BASE_URL, else https://api.anthropic.com;
  - azure/...: $AZURE_OPENAI_API_KEY, to the $AZURE_OPENAI_ENDPOINT resource.

So a key exported for one provider never reaches a third-party or self-hosted server by
accident. Live requests and batch clients both take their key from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from turnbench.backends.urls import (
    check_base_url,
    display_url,
    endpoint_id,
    normalize_endpoint,
    same_endpoint,
)
from turnbench.errors import UserError

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"


def _same(url: str) -> str:
    return url


def _azure_resource(url: str) -> str:

    return normalize_endpoint(url)


@dataclass(frozen=True)
class KeyRule:
    """Where one provider's default key may go.

    `key_env` goes only to the default endpoint: `base_url_env`, else `own_url` (None: the
    provider has no default without that variable). `needs_key(url)`: an endpoint that
    cannot work without a key (the provider's own API), so that no key for it is a usage
    error instead of a 401 later; `default_needs_key`: the default endpoint always does.
    `normalize` maps a base URL to the form compared (Azure: the resource URL).
    """

    name: str
    key_env: str
    base_url_env: str
    own_url: str | None
    own_hosts: tuple[str, ...] = ()  # a host, or a suffix starting with "."
    default_needs_key: bool = False
    normalize: Callable[[str], str] = _same

    def default_endpoint(self, environ: Mapping[str, str]) -> str | None:
        return environ.get(self.base_url_env, "").strip() or self.own_url

    def needs_key(self, url: str) -> bool:
        ident = endpoint_id(url)
        if ident is None:
            return False
        return any(
            ident.host.endswith(host) if host.startswith(".") else ident.host == host
            for host in self.own_hosts
        )


OPENAI_RULE = KeyRule("OpenAI", DEFAULT_KEY_ENV, BASE_URL_ENV, OPENAI_URL, ("api.openai.com",))
ANTHROPIC_RULE = KeyRule(
    "Anthropic",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "https://api.anthropic.com",
    ("api.anthropic.com",),
)
AZURE_RULE = KeyRule(
    "Azure OpenAI",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    None,
    (".openai.azure.com", ".cognitiveservices.azure.com"),
    default_needs_key=True,
    normalize=_azure_resource,
)


def default_endpoint(environ: Mapping[str, str]) -> str:
    """The default endpoint of openai/... models."""
    return OPENAI_RULE.default_endpoint(environ) or OPENAI_URL


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
    rule: KeyRule = OPENAI_RULE,
) -> list[EndpointKey]:
    """Each endpoint of `role` with the key it may receive, by `rule`'s provider. Raises
    UserError for an unset or empty named variable, a malformed URL, no endpoint at all,
    or an endpoint that needs a key (the provider's own API) with none."""
    default = rule.default_endpoint(environ)
    if base_urls:
        urls = [check_base_url(url, base_url_flag(role)) for url in base_urls]
    elif default is not None:
        urls = [check_base_url(default, f"${rule.base_url_env}")]
    else:
        raise UserError(
            f"the {role} endpoint of {rule.name} is unknown: set ${rule.base_url_env} or "
            f"pass {base_url_flag(role)}"
        )
    if api_key_env is not None:
        value = environ.get(api_key_env, "")
        if not value.strip():
            raise UserError(
                f"{key_flag(role)} names ${api_key_env}, which is unset or empty: "
                "export the key in that variable, or drop the flag for a server without keys"
            )
        key = _valid_key(value, api_key_env)
        return [EndpointKey(url, key, api_key_env) for url in urls]
    default_key = environ.get(rule.key_env, "").strip() or None
    resolved = []
    for url in urls:
        is_default = default is not None and same_endpoint(
            rule.normalize(url), rule.normalize(default)
        )
        if default_key is not None and is_default:
            resolved.append(EndpointKey(url, _valid_key(default_key, rule.key_env), rule.key_env))
        elif rule.needs_key(url) or (is_default and rule.default_needs_key):
            raise UserError(
                f"the {role} endpoint is {rule.name} and needs an API key: set ${rule.key_env}"
                + (
                    ""
                    if is_default
                    else f", or name the variable holding it with {key_flag(role)} VAR"
                )
                + (
                    ""
                    if is_default or default is None
                    else f" (${rule.key_env} goes only to {display_url(default)})"
                )
            )
        else:
            resolved.append(EndpointKey(url))
    return resolved
