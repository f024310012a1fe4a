"""The viewer on a run of simulated-user conversations (lost-in-conversation-translation,
sharded): its run page lists the samples and a conversation page shows the user's turns
and the model's answers. (The run page raised on the user-turn records until 07ccc9c.)"""

from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import run_cli
from turnbench.testing import simulated_fakes as fakes
from turnbench.testing.fake_server import FakeServer
from turnbench.view.app import build_app


def test_a_simulated_run_has_a_run_page_and_conversation_pages(env, data_dir, tmp_path):
    translator = fakes.Translator(fakes.chunk_lookup(data_dir))
    with FakeServer(responder=translator) as server:
        done = run_cli(["run", "--benchmark", "lost-in-conversation-translation",
                        "--model", "openai/translator", "--model-base-url", server.base_url,
                        "--conversation", "sharded", "--limit", "1", "--no-progress",
                        "--out", str(tmp_path / "runs" / "lic")], env)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    app = build_app([tmp_path / "runs"], token=None)

    async def pages() -> list[tuple[int, str]]:
        async with TestClient(TestServer(app)) as client:
            run = await client.get("/run/0/lic")
            text = await run.text()
            link = text.split('href="/conversation/0/lic?sample=', 1)[1].split('"', 1)[0]
            page = await client.get(f"/conversation/0/lic?sample={link}")
            return [(run.status, text), (page.status, await page.text())]

    (status, _run), (shown, conversation) = asyncio.run(pages())
    assert status == shown == 200
    assert "Turn 2" in conversation and "answer of <b>openai/translator</b>" in conversation
