"""Item 5, secrets: the API key never reaches the run directory, results, logs or terminal
output, even when a server echoes it back in error messages."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.reliability.helpers import MODEL, body, run_args
from turnbench.testing.fake_server import FakeServer, Reply, default_content

KEY = "sk-test-SECRET-123456"
# the key goes to a non-default endpoint only when its variable is named (see keys.py)
NAMED = ("--model-api-key-env", "OPENAI_API_KEY", "--judge-api-key-env", "OPENAI_API_KEY")


def echoing_server_responder():
    """Sends the key back in error bodies: a 500 on the first attempt of every body (retried,
    then answered), a 500 on every attempt at question 91's first answer (it fails after its
    retries), and a non-retryable 400 on both judgments of question 81."""
    seen: set[str] = set()

    def respond(request: dict[str, Any]) -> Reply:
        key = body(request)
        first = key not in seen
        seen.add(key)
        text = str(request["messages"])
        if request["model"] != MODEL and "Compose an engaging" in text:
            return Reply(status=400, body={"error": {"message": f"bad request for key {KEY}"}})
        if first or (request["model"] == MODEL and "Pretend yourself to be Elon" in text):
            return Reply(status=500, body={"error": {"message": f"upstream rejected {KEY}!"}})
        return Reply(content=default_content(request))

    return respond


def every_written_file(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def test_the_key_is_never_written_or_printed(env, tmp_path):
    env = {**env, "OPENAI_API_KEY": KEY}
    outputs: list[subprocess.CompletedProcess[str]] = []
    runs = tmp_path / "runs"

    # 1. success, retries (500s echoing the key) and a failed request (400 echoing it)
    with FakeServer(api_key=KEY, responder=echoing_server_responder()) as server:
        args = run_args(server.base_url, runs / "retries", "--max-attempts", "3", *NAMED)
        outputs.append(run_cli(args, env))
        authorizations = {h.get("authorization") for h in server.headers_seen}
    assert authorizations == {f"Bearer {KEY}"}  # the key really was used
    assert outputs[-1].returncode == 1  # recorded failures: an incomplete run
    log = (runs / "retries/log.jsonl").read_text()
    assert "bad request for key ***" in log  # the failures' messages are logged, redacted
    assert "upstream rejected ***" in log

    # the HTML report of that run (it shows the failures' messages)
    outputs.append(run_cli(["report", str(runs / "retries"), "--resamples", "100"], env))
    assert outputs[-1].returncode == 0, outputs[-1].stderr
    assert (runs / "retries/report.html").is_file()

    # 2. a 401 whose message quotes the key
    def unauthorized(request: dict[str, Any]) -> Reply:
        return Reply(status=401, body={"error": {"message": f"Incorrect API key: {KEY}"}})

    with FakeServer(responder=unauthorized) as refusing:
        outputs.append(run_cli(run_args(refusing.base_url, runs / "refused", *NAMED), env))
    assert outputs[-1].returncode == 3 and "rejected the API key" in outputs[-1].stderr

    # 3. an endpoint that is not there (stopped by the check before work), and a user error
    outputs.append(
        run_cli(
            run_args("http://127.0.0.1:9/v1", runs / "unreachable", "--max-attempts", "2", *NAMED),
            env,
        )
    )
    assert outputs[-1].returncode == 4
    outputs.append(run_cli(["run", "--model", "nope", "--judge", "openai/x", "--out", "x"], env))
    assert outputs[-1].returncode == 2

    written = every_written_file(tmp_path)
    assert any(p.name == "log.jsonl" for p in written) and any(
        p.name == "results.json" for p in written
    )
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
        assert b"SECRET-123456" not in path.read_bytes(), path
    for done in outputs:
        assert KEY not in done.stdout + done.stderr
        assert "SECRET-123456" not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr
