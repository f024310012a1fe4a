"""Build backends from specs; one instance per distinct endpoint so a model that is also
the judge (the embedded demo) shares one loaded model and one concurrency bound."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from turnbench.backends.base import Backend
from turnbench.backends.retry import RetryPolicy
from turnbench.errors import UserError
from turnbench.specs import ModelSpec

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


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


def resolve_base_url(explicit: str | None) -> str | None:
    return explicit or os.environ.get("OPENAI_BASE_URL") or None


def display_url(url: str | None) -> str | None:
    """A base URL safe to record or show: credentials in it (user:password@) are removed."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=f"***@{netloc}"))


def make_backend(
    spec: ModelSpec, options: BackendOptions, cache: dict[tuple, Backend] | None = None
) -> Backend:
    if spec.provider in ("anthropic", "azure"):  # own key and endpoint variables
        from turnbench.backends.providers import build_provider_backend

        return build_provider_backend(spec, options, cache)
    base_url = resolve_base_url(options.base_url)
    key_env = options.api_key_env or DEFAULT_KEY_ENV
    cache_key = (str(spec), base_url, key_env)
    if cache is not None and cache_key in cache:
        return cache[cache_key]
    backend: Backend
    if spec.provider == "local":
        from turnbench.backends.local import LocalLlamaBackend

        backend = LocalLlamaBackend(str(spec), spec.name)
    elif spec.provider == "openai":
        from turnbench.backends.openai_compat import OpenAICompatBackend

        api_key = os.environ.get(key_env)
        if not api_key and base_url is None:
            raise UserError(
                f"{spec} needs an API key: set {key_env}, or point at a server "
                "that needs none with --model-base-url / --judge-base-url or OPENAI_BASE_URL."
            )
        backend = OpenAICompatBackend(
            str(spec),
            spec.name,
            base_url=base_url,
            api_key=api_key,
            concurrency=options.concurrency if isinstance(options.concurrency, int) else 8,
            policy=options.policy,
            token_param=options.token_param,
        )
    else:  # parse_spec already refused unknown providers
        raise UserError(f"unknown provider {spec.provider!r}")
    if cache is not None:
        cache[cache_key] = backend
    return backend
