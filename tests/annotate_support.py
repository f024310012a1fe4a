"""Shared by the annotation tests: runs to annotate, and the annotation server as a real
process (so a test can SIGKILL it). `python -m tests.annotate_support RUN VOTES [PORT]`
serves `add_annotation_routes` on 127.0.0.1 and prints `listening PORT` when it accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO, run_cli
from turnbench.testing.fake_server import FakeServer, Reply

VICUNA, ALPACA = "vicuna-13b-v1.3", "alpaca-13b"
HOSTILE = (
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    "</div></textarea><b>bold?</b> "
)
HOSTILE_MODEL = '<img src=y onerror="window.__pwned=3">'


def hostile_answers(data_dir: Path, folder: Path, rename: bool = False) -> Path:
    """The two MT-Bench answer files with every alpaca answer opened by an XSS probe (and,
    with `rename`, alpaca named by one)."""
    folder.mkdir(parents=True, exist_ok=True)
    for model in (VICUNA, ALPACA):
        rows = []
        for line in (data_dir / f"mt_bench/model_answer/{model}.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if model == ALPACA:
                for choice in row["choices"]:
                    choice["turns"] = [HOSTILE + text for text in choice["turns"]]
            rows.append(json.dumps(row))
        name = HOSTILE_MODEL if rename and model == ALPACA else model
        (folder / f"{name}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def judge_run(
    env: dict[str, str],
    answers: Path,
    out: Path,
    *extra: str,
    responder: Callable[[dict], Reply | str] | None = None,
) -> Path:
    """`turnbench judge` of MT-Bench answers (first question of each category) against the
    fake server."""
    with FakeServer(responder=responder) as server:
        done = run_cli(
            [
                "judge", "--benchmark", "mt-bench", "--answers", str(answers),
                "--judge", "openai/judge-model", "--judge-base-url", server.base_url,
                "--out", str(out), "--limit", "1", "--no-progress", *extra,
            ],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def always_tie(request: dict) -> str:
    """A judge that calls every comparison a tie (both games: a tie)."""
    return "Both are fine. Verdict: [[C]]"


def rates(score: int) -> Callable[[dict], str]:
    def responder(request: dict) -> str:
        return f"Fine. Rating: [[{score}]]"

    return responder


def longer_wins(request: dict) -> str:
    """A consistent judge: the longer of the two judged answers wins (in both orders)."""
    from tests.e2e.test_pairwise_run import sections

    _, first, second = sections(request)
    return "Verdict: [[A]]" if len(first) > len(second) else "Verdict: [[B]]"


class ServerProcess:
    """The annotation server in a child process, on a given or a free port."""

    def __init__(self, run: Path, votes: Path, env: dict[str, str], port: int = 0) -> None:
        # the turnbench the tests import (as run_cli's children do), and this repo's tests
        paths = [p for p in (env.get("PYTHONPATH", ""), str(REPO)) if p]
        child_env = {**env, "PYTHONPATH": os.pathsep.join(paths)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.annotate_support", str(run), str(votes), str(port)],
            cwd=REPO,
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            self.process.kill()
            raise AssertionError(f"server did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(line.split()[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no cleanup, no close; whatever is not on disk is lost."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _serve(run: Path, votes: Path, port: int) -> None:
    import asyncio

    from aiohttp import web

    from turnbench.view.annotate import add_annotation_routes

    async def main() -> None:
        app = web.Application()
        add_annotation_routes(app, run_dir=run, votes_path=votes, overlap=2)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        bound = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        print(f"listening {bound}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
