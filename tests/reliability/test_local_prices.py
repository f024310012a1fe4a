"""Issue 22 item 13, through the real CLI on the fake server (whose URL is 127.0.0.1): a
run against a local server prints no dollars priced by the model's name."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.reliability.helpers import results, run_args
from turnbench.testing.fake_server import FakeServer


def test_a_local_server_is_not_priced_by_the_model_name(env, tmp_path):
    """A model named like a listed OpenAI model, served by a local server: no dollar figure
    is made from the list price of its name, unless --prices gives one."""
    out = tmp_path / "run"
    listed = "openai/gpt-4o-mini"  # in the shipped price table
    with FakeServer() as server:
        args = run_args(server.base_url, out, judge=listed)
        args[args.index("--model") + 1] = listed
        done = run_cli(args, env)
        assert done.returncode == 0, done.stdout + done.stderr
        usage = results(out)["usage"]
        assert usage["model"]["cost_usd"] is None and usage["judge"]["cost_usd"] is None
        said = " ".join(done.stdout.split())
        assert "Spent: answers unknown price, judgments unknown price" in said
        dry = run_cli([*args, "--dry-run", "--out", str(tmp_path / "dry")], env)
        assert dry.returncode == 0, dry.stderr
        rows = [line for line in dry.stdout.splitlines() if "(openai/gpt-4o-mini)" in line]
        assert len(rows) == 2 and all("unknown price" in r and "$" not in r for r in rows)
        assert "Estimated dollars in all: unknown price" in dry.stdout
        # --max-cost cannot be kept without a price: one clear error, nothing sent
        before = len(server.requests)
        refused = run_cli([*args, "--max-cost", "1", "--out", str(tmp_path / "capped")], env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "--max-cost needs the price of openai/gpt-4o-mini" in refused.stderr
        assert "--prices FILE" in refused.stderr and "Traceback" not in refused.stderr
        assert len(server.requests) == before
        # the user's own price applies wherever the model is served
        own = tmp_path / "own.json"
        own.write_text(json.dumps({"models": {listed: {"input": 1.0, "output": 2.0}}}))
        priced = run_cli([*args, "--prices", str(own), "--out", str(tmp_path / "priced")], env)
        assert priced.returncode == 0, priced.stdout + priced.stderr
    mine = results(tmp_path / "priced")["usage"]["model"]
    assert mine["cost_usd"] == (mine["prompt_tokens"] * 1.0 + mine["completion_tokens"] * 2.0) / 1e6
