"""Backends for the providers with their own API shape: `anthropic/...` and `azure/...`.

Kept apart from factory.py so each provider's settings (key variable, endpoint variable,
defaults) are resolved in one place and never leak into another's: OPENAI_BASE_URL never
applies to these providers, and each provider's default key goes only to that provider's
default endpoint; another base URL gets a key only from a variable named for its role
(the one key rule: turnbench.backends.keys).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from turnbench.backends.base import Backend
from turnbench.backends.keys import ANTHROPIC_RULE, AZURE_RULE, KeyRule, resolve_endpoint_keys
from turnbench.backends.options import BackendOptions
from turnbench.errors import UserError
from turnbench.specs import ModelSpec

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
    None for local models. The provider-aware replacement for
    display_url(resolve_base_url(...)), which only knows OPENAI_BASE_URL."""
    from turnbench.backends.options import resolve_base_url, resolve_base_urls
    from turnbench.backends.urls import display_url

    if spec.provider == "anthropic":
        from turnbench.backends.anthropic_native import ANTHROPIC_BASE_URL

        return display_url(anthropic_base_url(spec, options) or ANTHROPIC_BASE_URL)
    if spec.provider == "azure":
        endpoint = azure_base_url(spec, options)
        return display_url(f"{endpoint}/openai/deployments/{spec.name}") if endpoint else None
    if spec.provider == "local":
        return None
    if not options.base_urls and resolve_base_url(None) is None:
        return None  # OpenAI itself
    return ", ".join(display_url(url) or "" for url in resolve_base_urls(options))


def served_by_provider(spec: ModelSpec, options: BackendOptions) -> bool:
    """Whether every request for `spec` goes to its provider's own API (api.openai.com,
    api.anthropic.com, an Azure OpenAI resource) or runs in process (`local/...`), so that
    the provider's list price for the model's name is what the requests cost. A local
    server, a proxy or any other base URL serves whatever it likes under that name."""
    from turnbench.backends.keys import OPENAI_RULE
    from turnbench.backends.options import resolve_base_urls

    if spec.provider == "local":
        return True
    if spec.provider == "anthropic":
        from turnbench.backends.anthropic_native import ANTHROPIC_BASE_URL

        return ANTHROPIC_RULE.needs_key(anthropic_base_url(spec, options) or ANTHROPIC_BASE_URL)
    if spec.provider == "azure":
        endpoint = azure_base_url(spec, options)
        return endpoint is not None and AZURE_RULE.needs_key(endpoint)
    return all(OPENAI_RULE.needs_key(url) for url in resolve_base_urls(options))


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
