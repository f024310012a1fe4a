"""Build backends from specs; one instance per distinct endpoint so a model that is also
the judge (the embedded demo) shares one loaded model and one concurrency bound.

A new provider is one more entry in `PROVIDERS`: a function (spec, options, environ) ->
Backend, imported lazily so a run pays only for the providers it uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from turnbench.backends.base import Backend
from turnbench.backends.keys import (
    DEFAULT_KEY_ENV,
    resolve_endpoint_keys,
)
from turnbench.backends.options import (
    BackendOptions,
    resolve_base_url,
    resolve_base_urls,
)
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
