"""What a provider declares: one `Provider` says everything turnbench needs of it.

A provider is the `PROVIDER/` of a model spec (`openai/gpt-4o`). Its module declares how its
backend is built, which key goes to which endpoint (its `KeyRule`: the default endpoint, the
key variable, the hosts that cannot work without a key), where its requests go as recorded
(redacted, never a credential), whether the provider's list prices apply to an endpoint
(the prices hook: a proxy or another server serves whatever it likes under a model's
name), and which provider batch API it speaks, if any. `backends/providers.py` holds the
registry that finds them.

Most providers speak OpenAI's chat API on their own host; `openai_compatible` declares one
from its name, default base URL and key variable:

    TOGETHER = openai_compatible(
        "together", base_url="https://api.together.xyz/v1", key_env="TOGETHER_API_KEY"
    )

Its key ($TOGETHER_API_KEY) goes only to its default endpoint ($TOGETHER_BASE_URL, else the
base URL given); another base URL gets a key only from a variable named with
--model-api-key-env / --judge-api-key-env (the one key rule, `backends/keys.py`), and
OPENAI_API_KEY / OPENAI_BASE_URL never apply to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from turnbench.backends.base import Backend
from turnbench.backends.endpoints import Endpoint
from turnbench.backends.keys import KeyRule, resolve_endpoint_keys
from turnbench.backends.options import BackendOptions
from turnbench.backends.urls import display_url
from turnbench.errors import UserError
from turnbench.specs import ModelSpec

Environ = Mapping[str, str]
Build = Callable[[ModelSpec, BackendOptions, Environ], Backend]
Shown = Callable[[ModelSpec, BackendOptions, Environ], str | None]
ListPriced = Callable[[ModelSpec, BackendOptions, Environ], bool]
BatchApi = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class Provider:
    """One provider, as its module declares it.

    `build(spec, options, environ)`: its backend, raising UserError for a bad key variable
    or URL before anything is sent. `endpoint(...)`: where its requests go, safe to record
    (None: in process, or the provider's own API where that is the default). `list_priced`:
    whether the price table's list price for the model's name is what the requests cost
    (every request goes to the provider's own API). `key_rule`: where its default key may
    go. `batch`: the provider batch API it speaks (`--judge-batch`, `--model-batch`), or
    None.
    """

    name: str
    build: Build
    endpoint: Shown
    list_priced: ListPriced
    key_rule: KeyRule | None = None
    batch: BatchApi | None = None


def chat_completions_backend(
    spec: ModelSpec, options: BackendOptions, endpoints: list[Endpoint]
) -> Backend:
    """The backend of an OpenAI-compatible provider, once its endpoints and keys are known."""
    from turnbench.backends.openai_compat import OpenAICompatBackend

    return OpenAICompatBackend(
        str(spec),
        spec.name,
        endpoints=endpoints,
        concurrency=options.concurrency,
        policy=options.policy,
        token_param=options.token_param,
        role=options.role,
    )


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def openai_compatible(
    name: str,
    *,
    base_url: str | None,
    key_env: str,
    base_url_env: str | None = None,
    own_hosts: tuple[str, ...] | None = None,
    batch: BatchApi | None = None,
    title: str | None = None,
) -> Provider:
    """A provider that speaks OpenAI's chat completions API (through the same backend as
    `openai/...`: one aiohttp session, the single retry layer, replicas).

    `base_url`: its API (None: no default, a base URL must be given or set in
    `base_url_env`, default `{NAME}_BASE_URL`). `key_env`: the variable of its key, which
    goes only to the default endpoint. `own_hosts`: the hosts (or ".suffix"es) that are
    the provider's own API, which need a key and whose list prices apply (default: the
    host of `base_url`). `batch`: "openai" when it serves OpenAI's Batch API too.
    """
    if own_hosts is None:
        own_hosts = (_host(base_url),) if base_url else ()
    rule = KeyRule(
        title or name,
        key_env,
        base_url_env or f"{name.upper().replace('-', '_')}_BASE_URL",
        base_url,
        own_hosts,
    )

    def urls(spec: ModelSpec, options: BackendOptions, environ: Environ) -> list[str]:
        if options.base_urls:
            return list(options.base_urls)
        default = rule.default_endpoint(environ)
        if default is None:
            raise UserError(
                f"{spec}: the {options.role} endpoint of {rule.name} is unknown: set "
                f"${rule.base_url_env} or pass --{options.role}-base-url"
            )
        return [default]

    def build(spec: ModelSpec, options: BackendOptions, environ: Environ) -> Backend:
        endpoints = resolve_endpoint_keys(
            options.role, options.base_urls, options.api_key_env, environ, rule
        )
        return chat_completions_backend(spec, options, endpoints)

    def endpoint(spec: ModelSpec, options: BackendOptions, environ: Environ) -> str | None:
        try:
            found = urls(spec, options, environ)
        except UserError:
            return None
        return ", ".join(display_url(url) or "" for url in found)

    def list_priced(spec: ModelSpec, options: BackendOptions, environ: Environ) -> bool:
        try:
            found = urls(spec, options, environ)
        except UserError:
            return False
        return all(rule.needs_key(url) for url in found)

    return Provider(name, build, endpoint, list_priced, key_rule=rule, batch=batch)
