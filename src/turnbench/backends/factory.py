"""Build backends from specs; one instance per distinct endpoint so a model that is also
the judge (the embedded demo) shares one loaded model and one concurrency bound.

A new provider is one more entry in `PROVIDERS`: a function (spec, options, environ) ->
Backend, imported lazily so a run pays only for the providers it uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from turnbench.backends.base import Backend
from turnbench.backends.keys import (
    DEFAULT_KEY_ENV,
    default_endpoint,
    resolve_endpoint_keys,
)
from turnbench.backends.retry import RetryPolicy
from turnbench.backends.urls import display_url
from turnbench.errors import UserError
from turnbench.specs import ModelSpec

__all__ = [
    "DEFAULT_KEY_ENV",
    "PROVIDERS",
    "BackendOptions",
    "display_url",
    "make_backend",
    "resolve_base_url",
]


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


def _local(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> Backend:
    from turnbench.backends.local import LocalLlamaBackend

    return LocalLlamaBackend(str(spec), spec.name)


def _openai(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> Backend:
    from turnbench.backends.openai_compat import OpenAICompatBackend

    endpoints = resolve_endpoint_keys(options.role, options.base_urls, options.api_key_env, environ)
    return OpenAICompatBackend(
        str(spec),
        spec.name,
        endpoints=endpoints,
        concurrency=options.concurrency,
        policy=options.policy,
        token_param=options.token_param,
        role=options.role,
    )


def _own_endpoint(spec: ModelSpec, options: BackendOptions, environ: Mapping[str, str]) -> Backend:
    """Anthropic and Azure: their own key and endpoint variables ($OPENAI_* never apply)."""
    from turnbench.backends.providers import build_provider_backend

    return build_provider_backend(spec, options)


PROVIDERS: dict[str, Callable[[ModelSpec, BackendOptions, Mapping[str, str]], Backend]] = {
    "local": _local,
    "openai": _openai,
    "anthropic": _own_endpoint,
    "azure": _own_endpoint,
}


def make_backend(
    spec: ModelSpec,
    options: BackendOptions,
    cache: dict[tuple, Backend] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Backend:
    """The backend for `spec` reached as `options` say; raises UserError for a bad key
    variable or URL before anything is sent."""
    environ = os.environ if environ is None else environ
    cache_key = (
        str(spec),
        tuple(resolve_base_urls(options, environ)),
        options.api_key_env,
    )
    if cache is not None and cache_key in cache:
        return cache[cache_key]
    build = PROVIDERS.get(spec.provider)
    if build is None:  # parse_spec already refused unknown providers
        raise UserError(f"unknown provider {spec.provider!r}")
    backend = build(spec, options, environ)
    if cache is not None:
        cache[cache_key] = backend
    return backend
