"""How a log grows with a simulated conversation's length: the figure of issue 36 item 4.

A scenario with one simulated conversation of N turns (N = 2, 4, 8, 16), every user turn a
10 kB message written by a fake user model, a fake model under test answering briefly, and
a deterministic check on the final turn (no judge), run through the real CLI. Printed per
N: the log's size, and its size divided by N (flat when the log grows linearly) and by N
squared. Before issue 36 every answer and user-turn record kept its whole request, so the
log grew with the square of the conversation's length; now each keeps what its turn
appended to its thread (`engine.history.Thread`).

With `--baseline-src DIR` the same runs use another checkout's source (e.g. a `git archive`
of the code before the change) in the same sitting.

    python benchmarks/log_growth.py [--turns 2 4 8 16] [--kilobytes 10]
        [--baseline-src /tmp/old/src]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from turnbench.testing.fake_server import FakeServer

SCENARIO = """version: 1
name: growth
dialogues:
  - id: long
    simulated_user:
      persona: Someone who writes very long messages.
      goal: Keep talking.
      max_turns: {turns}
    judge: final_turn
    checks:
      - contains: noted
"""


def user_reply(size: int):
    def reply(request: dict[str, Any]) -> str:
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant") + 1
        return f"Turn {turn}: " + ("lorem ipsum " * (size // 12 + 1))[:size]

    return reply


def run(turns: int, size: int, src: Path | None, workdir: Path) -> int:
    """The size in bytes of the log of one conversation of `turns` turns."""
    scenario = workdir / f"growth-{turns}.yaml"
    scenario.write_text(SCENARIO.format(turns=turns), "utf-8")
    out = workdir / f"run-{turns}-{'base' if src else 'head'}"
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    with (
        FakeServer(fixed_reply="Noted, thank you.") as model,
        FakeServer(responder=user_reply(size)) as user,
    ):
        done = subprocess.run(
            [
                sys.executable, "-m", "turnbench", "run", "--benchmark", str(scenario),
                "--model", "openai/m", "--model-base-url", model.base_url,
                "--user-model", "openai/u", "--user-base-url", user.base_url,
                "--user-max-tokens", "100000", "--out", str(out), "--no-progress",
            ],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode not in (0, 1):
        sys.exit(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return (out / "log.jsonl").stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--kilobytes", type=int, default=10, help="size of a user turn")
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src/ to compare")
    args = parser.parse_args()
    size = args.kilobytes * 1000
    sources: list[tuple[str, Path | None]] = [("this code", None)]
    if args.baseline_src is not None:
        sources.append((f"baseline {args.baseline_src}", args.baseline_src))
    with tempfile.TemporaryDirectory() as folder:
        for label, src in sources:
            print(f"{label}: one conversation, user turns of {args.kilobytes} kB")
            print(f"  {'turns':>5} {'log bytes':>12} {'bytes/turn':>12} {'bytes/turn^2':>13}")
            for turns in args.turns:
                logged = run(turns, size, src, Path(folder))
                print(
                    f"  {turns:>5} {logged:>12,} {logged // turns:>12,} {logged // turns**2:>13,}"
                )


if __name__ == "__main__":
    main()
