"""A fake Azure OpenAI chat endpoint on 127.0.0.1.

POST /openai/deployments/{deployment}/chat/completions?api-version=VERSION with the key in
an `api-key` header, as Azure serves it. A missing api-version is refused with HTTP 404
(Azure's answer), a wrong key with 401; `deployments` limits which names exist (others 404);
`script` queues canned replies (429 with retry-after, 500, ...). The reply is a
chat.completion whose usage reports cached prompt tokens.
"""

from __future__ import annotations

from aiohttp import web

from turnbench.testing.fake_batch import chat_completion
from turnbench.testing.fake_http import FakeHTTPServer


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class FakeAzureOpenAI(FakeHTTPServer):
    def __init__(
        self,
        *,
        api_key: str = "test-azure-key",
        deployments: tuple[str, ...] = ("my-gpt4o",),
        api_versions: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.deployments = deployments
        self.api_versions = api_versions

    @property
    def endpoint(self) -> str:
        return self.origin

    def routes(self) -> list[web.RouteDef]:
        path = "/openai/deployments/{deployment}/chat/completions"
        return [self.route("POST", path, self._chat, "chat")]

    def refuse(self, request: web.Request) -> web.Response | None:
        version = request.query.get("api-version")
        if not version or (self.api_versions is not None and version not in self.api_versions):
            return _error(404, "404", "Resource not found")
        if request.headers.get("api-key") != self.api_key:
            return _error(401, "401", "Access denied due to invalid subscription key.")
        return self.scripted(request)

    async def _chat(self, request: web.Request) -> web.Response:
        body = await self.json_body(request)
        deployment = request.match_info["deployment"]
        if deployment not in self.deployments:
            return _error(404, "DeploymentNotFound", "The API deployment does not exist.")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "BadRequest", "messages is required")
        return web.json_response(chat_completion(body, request_id="azure"))
