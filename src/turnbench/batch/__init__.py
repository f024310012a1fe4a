"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches) behind one protocol.

The engine builds a client with `make_batch_client(spec, options)`, submits items, stores
the returned `BatchHandle` (JSON) in its run log, polls until `status.done`, then maps
`results(handle)`; items whose error is retryable go into a new batch.
"""

from __future__ import annotations

import os

from turnbench.backends.factory import BackendOptions
from turnbench.backends.providers import names, provider
from turnbench.batch.base import (
    TERMINAL_STATES,
    BatchClient,
    BatchCounts,
    BatchHandle,
    BatchIntent,
    BatchItem,
    BatchItemError,
    BatchNotFinishedError,
    BatchResults,
    BatchState,
    BatchStatus,
    BatchSubmitUncertainError,
    batch_custom_id,
)
from turnbench.errors import UserError
from turnbench.specs import ModelSpec

__all__ = [
    "TERMINAL_STATES",
    "BatchClient",
    "BatchCounts",
    "BatchHandle",
    "BatchIntent",
    "BatchItem",
    "BatchItemError",
    "BatchNotFinishedError",
    "BatchResults",
    "BatchState",
    "BatchStatus",
    "BatchSubmitUncertainError",
    "batch_custom_id",
    "batch_providers",
    "make_batch_client",
]


def batch_providers() -> tuple[str, ...]:
    """The providers that declare a batch API (`Provider.batch`)."""
    return tuple(name for name in names() if provider(name).batch is not None)


def make_batch_client(spec: ModelSpec, options: BackendOptions) -> BatchClient:
    """A batch client for `spec`, reaching the same endpoint with the same key as the chat
    backend `make_backend(spec, options)` would: the one key rule of
    turnbench.backends.keys (a named variable always; else the provider's default key only
    on its default endpoint; else no key and no Authorization header)."""
    declared = provider(spec.provider)
    if declared.batch == "openai":  # OpenAI's Batch API, on the provider's own endpoint
        from turnbench.backends.keys import OPENAI_RULE, resolve_endpoint_keys
        from turnbench.batch.openai_batch import OpenAIBatchClient

        if len(options.base_urls) > 1:
            raise UserError(f"{spec}: a batch goes to one endpoint; {len(options.base_urls)} given")
        try:
            [resolved] = resolve_endpoint_keys(
                options.role,
                options.base_urls,
                options.api_key_env,
                os.environ,
                declared.key_rule or OPENAI_RULE,
            )
        except UserError as error:
            raise UserError(f"{spec} (batch API): {error.message}") from None
        return OpenAIBatchClient(
            spec.name,
            api_key=resolved.key,
            base_url=resolved.url,
            policy=options.policy,
            token_param=options.token_param,
            key_env=resolved.source,
            role=options.role,
        )
    if declared.batch == "anthropic":
        from turnbench.backends.providers import anthropic_endpoint
        from turnbench.batch.anthropic_batch import AnthropicBatchClient

        endpoint = anthropic_endpoint(spec, options)
        return AnthropicBatchClient(
            spec.name,
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            policy=options.policy,
            key_env=endpoint.key_env if endpoint.api_key else None,
            role=options.role,
        )
    raise UserError(
        f"{spec}: batch mode is available for {' and '.join(batch_providers())} models only"
    )
