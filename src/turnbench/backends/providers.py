"""The registry of providers, and the built-in ones with their own API shape.

Every provider a model spec can name is a `Provider` (`backends/provider.py`) declared by
its module; BUILTIN is the one list of the built-in ones (openai, local, anthropic, azure)
and `register` adds another (a plug-in, a test) before a run starts. Everything that
depends on the provider asks the registry: building the backend (`factory.make_backend`),
the endpoint recorded (`display_endpoint`), whether list prices apply
(`served_by_provider`), the key rule and the batch API (`turnbench.batch`), the names a
spec may start with (`parse_model_spec`).

The Anthropic and Azure providers are declared here, so each provider's settings (key
variable, endpoint variable, defaults) are resolved in one place and never leak into
another's: OPENAI_BASE_URL never applies to these providers, and each provider's default
key goes only to that provider's default endpoint; another base URL gets a key only from a
variable named for its role (the one key rule: turnbench.backends.keys).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from turnbench.backends.base import Backend
from turnbench.backends.keys import (
    ANTHROPIC_RULE,
    AZURE_RULE,
    OPENAI_RULE,
    KeyRule,
    resolve_endpoint_keys,
)
from turnbench.backends.options import BackendOptions
from turnbench.backends.provider import Provider, chat_completions_backend
from turnbench.errors import UserError
from turnbench.specs import ModelSpec, parse_spec

PROVIDER_BACKENDS = ("anthropic", "azure")


@dataclass(frozen=True)
class Endpoint:
    """Where one role's requests go and with which key (never recorded: see `shown`)."""

    base_url: str
    key_env: str
    api_key: str | None

    @property
    def shown(self) -> str:
        from turnbench.backends.urls import display_url

        return display_url(self.base_url) or ""


def _single_base_url(spec: ModelSpec, options: BackendOptions) -> str | None:
    if len(options.base_urls) > 1:
        raise UserError(
            f"{spec}: {spec.provider} models take one base URL, {len(options.base_urls)} given"
        )
    return options.base_url


def anthropic_base_url(spec: ModelSpec, options: BackendOptions) -> str | None:
    """The base URL named for this role, else $ANTHROPIC_BASE_URL; None: Anthropic's own."""
    return _single_base_url(spec, options) or os.environ.get("ANTHROPIC_BASE_URL") or None


def azure_base_url(spec: ModelSpec, options: BackendOptions) -> str | None:
    """The Azure resource endpoint: the base URL named for this role, else
    $AZURE_OPENAI_ENDPOINT (None when neither is set)."""
    from turnbench.backends.azure import AZURE_ENDPOINT_ENV
    from turnbench.backends.urls import normalize_endpoint

    endpoint = _single_base_url(spec, options) or os.environ.get(AZURE_ENDPOINT_ENV) or None
    return normalize_endpoint(endpoint) if endpoint else None


def display_endpoint(spec: ModelSpec, options: BackendOptions) -> str | None:
    """Where requests for `spec` go, safe to record (no credentials), for every provider;
    None for local models and for OpenAI itself. The provider-aware replacement for
    display_url(resolve_base_url(...)), which only knows OPENAI_BASE_URL."""
    return provider(spec.provider).endpoint(spec, options, os.environ)


def served_by_provider(spec: ModelSpec, options: BackendOptions) -> bool:
    """Whether every request for `spec` goes to its provider's own API (api.openai.com,
    api.anthropic.com, an Azure OpenAI resource) or runs in process (`local/...`), so that
    the provider's list price for the model's name is what the requests cost. A local
    server, a proxy or any other base URL serves whatever it likes under that name."""
    return provider(spec.provider).list_priced(spec, options, os.environ)


def _anthropic_shown(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> str:
    from turnbench.backends.anthropic_native import ANTHROPIC_BASE_URL
    from turnbench.backends.urls import display_url

    return display_url(anthropic_base_url(spec, options) or ANTHROPIC_BASE_URL) or ""


def _anthropic_priced(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> bool:
    from turnbench.backends.anthropic_native import ANTHROPIC_BASE_URL

    return ANTHROPIC_RULE.needs_key(anthropic_base_url(spec, options) or ANTHROPIC_BASE_URL)


def _azure_shown(
    spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]
) -> str | None:
    from turnbench.backends.urls import display_url

    endpoint = azure_base_url(spec, options)
    return display_url(f"{endpoint}/openai/deployments/{spec.name}") if endpoint else None


def _azure_priced(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> bool:
    endpoint = azure_base_url(spec, options)
    return endpoint is not None and AZURE_RULE.needs_key(endpoint)


def _openai_build(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> Backend:
    endpoints = resolve_endpoint_keys(options.role, options.base_urls, options.api_key_env, environ)
    return chat_completions_backend(spec, options, endpoints)


def _openai_shown(
    spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]
) -> str | None:
    from turnbench.backends.options import resolve_base_urls
    from turnbench.backends.urls import display_url

    if not options.base_urls and not environ.get(OPENAI_RULE.base_url_env):
        return None  # OpenAI itself
    return ", ".join(display_url(url) or "" for url in resolve_base_urls(options, environ))


def _openai_priced(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> bool:
    from turnbench.backends.options import resolve_base_urls

    return all(OPENAI_RULE.needs_key(url) for url in resolve_base_urls(options, environ))


def _local_build(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> Backend:
    from turnbench.backends.local import LocalLlamaBackend

    return LocalLlamaBackend(str(spec), spec.name)


def _resolved_key(
    spec: ModelSpec, options: BackendOptions, given: str | None, rule: KeyRule
) -> str | None:
    """The key `given` (None: the provider's default endpoint) gets by the one key rule of
    turnbench.backends.keys: a named variable always; else the provider's default key only
    on its default endpoint; else none."""
    try:
        [resolved] = resolve_endpoint_keys(
            options.role, (given,) if given else (), options.api_key_env, os.environ, rule
        )
    except UserError as error:
        raise UserError(f"{spec}: {error.message}") from None
    return resolved.key


def anthropic_endpoint(spec: ModelSpec, options: BackendOptions) -> Endpoint:
    """Where `anthropic/...` requests go and with which key. $ANTHROPIC_API_KEY goes only to
    Anthropic's API ($ANTHROPIC_BASE_URL, else https://api.anthropic.com); another base URL
    gets a key only from a named variable (the SDK is then given a placeholder or no
    credentials, never one read from the environment)."""
    from turnbench.backends.anthropic_native import ANTHROPIC_BASE_URL, ANTHROPIC_KEY_ENV

    base_url = anthropic_base_url(spec, options) or ANTHROPIC_BASE_URL
    api_key = _resolved_key(spec, options, _single_base_url(spec, options), ANTHROPIC_RULE)
    return Endpoint(base_url.strip(), options.api_key_env or ANTHROPIC_KEY_ENV, api_key)


def azure_endpoint(spec: ModelSpec, options: BackendOptions) -> Endpoint:
    """Where `azure/...` requests go and with which key: $AZURE_OPENAI_API_KEY only to the
    $AZURE_OPENAI_ENDPOINT resource; another base URL gets a key only from a named
    variable."""
    from turnbench.backends.azure import AZURE_ENDPOINT_ENV, AZURE_KEY_ENV

    endpoint = azure_base_url(spec, options)
    if not endpoint:
        raise UserError(
            f"{spec} needs the Azure resource endpoint (https://RESOURCE.openai.azure.com): "
            f"set {AZURE_ENDPOINT_ENV} or pass --model-base-url / --judge-base-url."
        )
    api_key = _resolved_key(spec, options, _single_base_url(spec, options), AZURE_RULE)
    return Endpoint(endpoint, options.api_key_env or AZURE_KEY_ENV, api_key)


def azure_api_version(options: BackendOptions) -> str:
    from turnbench.backends.azure import AZURE_API_VERSION_ENV, DEFAULT_AZURE_API_VERSION

    version = getattr(options, "api_version", None) or os.environ.get(AZURE_API_VERSION_ENV)
    return (version or DEFAULT_AZURE_API_VERSION).strip()


def _concurrency(options: BackendOptions) -> int | Literal["auto"]:
    return "auto" if options.concurrency == "auto" else int(options.concurrency)


def build_provider_backend(
    spec: ModelSpec, options: BackendOptions, cache: dict[tuple, Backend] | None = None
) -> Backend:
    """The backend for an `anthropic/...` or `azure/...` spec; one per distinct endpoint."""
    if spec.provider == "anthropic":
        endpoint = anthropic_endpoint(spec, options)
        cache_key: tuple = (str(spec), endpoint.base_url, endpoint.key_env)
    elif spec.provider == "azure":
        endpoint = azure_endpoint(spec, options)
        version = azure_api_version(options)
        cache_key = (str(spec), endpoint.base_url, endpoint.key_env, version)
    else:
        raise UserError(f"unknown provider {spec.provider!r}")
    if cache is not None and cache_key in cache:
        return cache[cache_key]
    backend: Backend
    if spec.provider == "anthropic":
        from turnbench.backends.anthropic_native import AnthropicBackend

        backend = AnthropicBackend(
            str(spec),
            spec.name,
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            concurrency=_concurrency(options),
            policy=options.policy,
            key_env=endpoint.key_env,
            role=options.role,
        )
    else:
        from turnbench.backends.azure import AzureOpenAIBackend

        backend = AzureOpenAIBackend(
            str(spec),
            spec.name,
            endpoint=endpoint.base_url,
            api_key=endpoint.api_key or "",  # "": no api-key header at all
            api_version=version,
            concurrency=options.concurrency,
            policy=options.policy,
            token_param=options.token_param,
            role=options.role,
        )
    if cache is not None:
        cache[cache_key] = backend
    return backend


# -- the registry ---------------------------------------------------------------------------
OPENAI = Provider(
    "openai",
    _openai_build,
    _openai_shown,
    _openai_priced,
    key_rule=OPENAI_RULE,
    batch="openai",
)
LOCAL = Provider("local", _local_build, lambda *_: None, lambda *_: True)
ANTHROPIC = Provider(
    "anthropic",
    lambda spec, options, _environ: build_provider_backend(spec, options),
    _anthropic_shown,
    _anthropic_priced,
    key_rule=ANTHROPIC_RULE,
    batch="anthropic",
)
AZURE = Provider(
    "azure",
    lambda spec, options, _environ: build_provider_backend(spec, options),
    _azure_shown,
    _azure_priced,
    key_rule=AZURE_RULE,
)

#: the built-in providers, in the order messages name them: a new one is its module (see
#: `backends/provider.py`, `openai_compatible`) and one entry here
BUILTIN: tuple[Provider, ...] = (OPENAI, LOCAL, ANTHROPIC, AZURE)

_REGISTERED: dict[str, Provider] = {p.name: p for p in BUILTIN}
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


def register(declared: Provider) -> Provider:
    """Make `declared` a provider model specs can name (`NAME/model`), for this process.
    Raises ValueError for a name that is not lowercase letters, digits, `-` and `_`, or
    that another provider has."""
    if not _NAME.match(declared.name):
        raise ValueError(f"provider name {declared.name!r}: lowercase letters, digits, - and _")
    known = _REGISTERED.get(declared.name)
    if known is not None and known is not declared:
        raise ValueError(f"provider {declared.name!r} is registered already")
    _REGISTERED[declared.name] = declared
    return declared


def unregister(name: str) -> None:
    """Forget a provider `register` added (the built-in ones stay)."""
    if any(p.name == name for p in BUILTIN):
        raise ValueError(f"provider {name!r} is built in")
    _REGISTERED.pop(name, None)


def names() -> tuple[str, ...]:
    """Every provider a model spec may name, built-in ones first."""
    return tuple(_REGISTERED)


def provider(name: str) -> Provider:
    found = _REGISTERED.get(name)
    if found is None:  # parse_model_spec refuses unknown providers before this
        raise UserError(f"unknown provider {name!r}; known providers: {', '.join(names())}.")
    return found


def parse_model_spec(text: str, flag: str = "--model") -> ModelSpec:
    """A model spec from the user, its provider one the registry knows."""
    return parse_spec(text, flag, providers=names())
