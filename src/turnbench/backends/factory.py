"""Build backends from specs; one instance per distinct endpoint so a model that is also
the judge (the embedded demo) shares one loaded model and one concurrency bound.

Which backend a provider gets is its own declaration (`backends/provider.py`), found in the
registry (`backends/providers.py`); its implementation is imported when a run uses it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from turnbench.backends.base import Backend
from turnbench.backends.keys import DEFAULT_KEY_ENV
from turnbench.backends.options import (
    BackendOptions,
    resolve_base_url,
    resolve_base_urls,
)
from turnbench.backends.providers import provider
from turnbench.backends.urls import display_url
from turnbench.specs import ModelSpec

__all__ = [
    "DEFAULT_KEY_ENV",
    "BackendOptions",
    "display_url",
    "make_backend",
    "resolve_base_url",
]


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
    backend = provider(spec.provider).build(spec, options, environ)
    if cache is not None:
        cache[cache_key] = backend
    return backend
