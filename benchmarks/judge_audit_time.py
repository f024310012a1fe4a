"""Wall time of `turnbench audit-judge`, against the fake server and the embedded model.

Runs the real CLI (a child process, as a user would) into fresh temporary directories and
prints each audit's wall time, its request count and the interface numbers of audit.json.
The fake server answers with its deterministic default judge replies (fixed ratings and
verdicts derived from the prompt), so its numbers only show the plumbing; the embedded
model's are a real (tiny) judge's. Machine load is printed with them: on a shared machine
the embedded figure moves a lot.

    .venv/bin/python benchmarks/judge_audit_time.py [--skip-embedded] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnbench.testing.fake_server import FakeServer


def audit(args: list[str], out: Path) -> tuple[float, int, dict]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "turnbench", "audit-judge", *args, "--out", str(out),
         "--no-progress"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - started
    if not (out / "audit.json").is_file():
        raise SystemExit(f"audit failed (exit {done.returncode}):\n{done.stderr}")
    return wall, done.returncode, json.loads((out / "audit.json").read_text())


def show(name: str, wall: float, code: int, result: dict) -> None:
    print(f"\n== {name}: {wall:.1f} s wall (exit {code}), load {os.getloadavg()[0]:.1f}")
    counts = result["counts"]
    print(f"   judgments {counts['judged']}/{counts['expected']} scored, {counts['failed']} failed")
    keys = ("position_consistency", "first_position_preference", "verbosity_delta", "stability")
    shown = {k: result[k] for k in (*keys, "scale_sanity", "manipulation")}
    print(json.dumps(shown, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--keep", type=Path, help="Keep the audit directories here.")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="turnbench-audit-"))
    server = FakeServer().start()
    try:
        out = base / "fake"
        show("fake server", *audit(["--judge", "openai/fake", "--judge-base-url",
                                    server.base_url], out))  # fmt: skip
        print(f"   requests received: {len(server.requests)}")
    finally:
        server.stop()
    if not args.skip_embedded:
        show("local/smollm2", *audit(["--judge", "local/smollm2"], base / "embedded"))
    print(f"\naudit directories: {base}")


if __name__ == "__main__":
    main()
