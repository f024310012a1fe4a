"""`azure/DEPLOYMENT`: an Azure OpenAI deployment.

Azure serves the same chat completions API as OpenAI, at
/openai/deployments/{deployment}/chat/completions?api-version=..., with the key in an
`api-key` header, so the OpenAI-compatible backend serves it with three methods replaced
(the URLs and the header). The key is always the one resolved here, never one read from the
environment by a library.

Settings: the endpoint is the resource URL (https://RESOURCE.openai.azure.com), from
--model-base-url / --judge-base-url, else $AZURE_OPENAI_ENDPOINT; the key from
$AZURE_OPENAI_API_KEY or the variable named by --model-api-key-env / --judge-api-key-env;
the API version from BackendOptions.api_version, else $AZURE_OPENAI_API_VERSION, else
`DEFAULT_AZURE_API_VERSION` (the latest generally available inference version when this
was written). The deployment name is whatever the Azure resource calls it, so
reasoning-model detection by name may need --model-token-param max_completion_tokens.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote, urlencode

from turnbench.backends.endpoints import Endpoint
from turnbench.backends.keys import EndpointKey
from turnbench.backends.openai_compat import OpenAICompatBackend
from turnbench.backends.retry import RetryPolicy
from turnbench.backends.urls import normalize_endpoint as normalize_endpoint

DEFAULT_AZURE_API_VERSION = "2024-10-21"
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_API_VERSION_ENV = "AZURE_OPENAI_API_VERSION"


class AzureOpenAIBackend(OpenAICompatBackend):
    """The OpenAI-compatible backend pointed at a deployment: Azure's path, `api-version`
    query parameter and `api-key` header; everything else (request fields, reasoning-model
    handling, error mapping, the single retry layer) is shared."""

    def __init__(
        self,
        spec: str,
        deployment: str,
        *,
        endpoint: str,
        api_key: str,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        concurrency: int | Literal["auto"],
        policy: RetryPolicy,
        token_param: str = "auto",
        role: str = "model",
    ) -> None:
        self.api_version = api_version
        self.deployment = deployment
        resource = normalize_endpoint(endpoint)
        super().__init__(
            spec,
            deployment,
            endpoints=[EndpointKey(f"{resource}/openai", api_key, AZURE_KEY_ENV)],
            concurrency=concurrency,
            policy=policy,
            token_param=token_param,
            role=role,
        )

    def _azure_url(self, endpoint: Endpoint, path: str) -> str:
        query = urlencode({"api-version": self.api_version})
        return f"{endpoint.target.base}/{path}?{query}"

    def chat_url(self, endpoint: Endpoint) -> str:
        return self._azure_url(
            endpoint, f"deployments/{quote(self.deployment, safe='')}/chat/completions"
        )

    def models_url(self, endpoint: Endpoint) -> str:
        return self._azure_url(endpoint, "models")

    def headers(self, endpoint: Endpoint) -> dict[str, str]:
        headers = super().headers(endpoint)
        headers.pop("Authorization", None)
        if endpoint.key:
            headers["api-key"] = endpoint.key
        return headers
