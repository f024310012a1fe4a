"""What the screenshot scripts share: the CLI as a child process and the viewer on a free
port of 127.0.0.1 (scripts/tau_screenshots.py, scripts/agentdojo_screenshots.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def turnbench(*arguments: str, env: dict[str, str], exits: tuple[int, ...] = (0,)) -> str:
    """`python -m turnbench ARGUMENTS`; its stdout, or the script ends with what it said
    when it exits otherwise than `exits`."""
    command = [sys.executable, "-m", "turnbench", *arguments]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in exits:
        sys.exit(f"exit {done.returncode}: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


@contextmanager
def viewer(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """`turnbench view FOLDER` on a free port, until the block ends: its origin."""
    port = free_port()
    view = subprocess.Popen(
        [sys.executable, "-m", "turnbench", "view", str(folder), "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if time.monotonic() > deadline:
                sys.exit("the viewer did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        view.terminate()
        view.wait(timeout=20)
