"""`azure/DEPLOYMENT`: an Azure OpenAI deployment through the openai SDK's AsyncAzureOpenAI.

Everything but the client is the OpenAI-compatible backend's (request fields, reasoning-model
handling, error mapping, the single retry layer): Azure serves the same chat completions
API, at /openai/deployments/{deployment}/chat/completions?api-version=..., with the key in
an `api-key` header. The key is always passed explicitly, so the SDK never falls back to
an Azure AD token from the environment.

Settings: the endpoint is the resource URL (https://RESOURCE.openai.azure.com), from
--model-base-url / --judge-base-url, else $AZURE_OPENAI_ENDPOINT; the key from
$AZURE_OPENAI_API_KEY or the variable named by --model-api-key-env / --judge-api-key-env;
the API version from BackendOptions.api_version, else $AZURE_OPENAI_API_VERSION, else
`DEFAULT_AZURE_API_VERSION` (the latest generally available inference version when this
was written). The deployment name is whatever the Azure resource calls it, so
reasoning-model detection by name may need --model-token-param max_completion_tokens.
"""

from __future__ import annotations

from typing import Any

from turnbench.backends.factory import display_url
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.types import Completion

DEFAULT_AZURE_API_VERSION = "2024-10-21"
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_API_VERSION_ENV = "AZURE_OPENAI_API_VERSION"


def normalize_endpoint(endpoint: str) -> str:
    """The resource URL without a trailing slash or /openai (the SDK appends /openai)."""
    endpoint = endpoint.strip().rstrip("/")
    if endpoint.endswith("/openai"):
        endpoint = endpoint[: -len("/openai")]
    return endpoint


class AzureOpenAIBackend(OpenAICompatBackend):
    """The OpenAI-compatible backend with an Azure client in place of the OpenAI one."""

    def __init__(
        self,
        spec: str,
        deployment: str,
        *,
        endpoint: str,
        api_key: str,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        concurrency: int,
        policy: RetryPolicy,
        token_param: str = "auto",
    ) -> None:
        from openai import AsyncAzureOpenAI

        endpoint = normalize_endpoint(endpoint)
        super().__init__(
            spec,
            deployment,
            base_url=f"{endpoint}/openai",
            api_key=api_key,
            concurrency=concurrency,
            policy=policy,
            token_param=token_param,
        )
        self.api_version = api_version
        self._client = AsyncAzureOpenAI(
            azure_endpoint=endpoint,
            api_version=api_version,
            api_key=api_key,
            max_retries=0,
            timeout=policy.request_timeout,
        )
        self._base_url = display_url(f"{endpoint}/openai/deployments/{deployment}") or ""

    @staticmethod
    def _to_completion(response: Any) -> Completion:
        completion = OpenAICompatBackend._to_completion(response)
        details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", 0)
        if isinstance(cached, int) and cached > 0:
            completion.usage.cached_prompt_tokens = min(cached, completion.usage.prompt_tokens)
        return completion
