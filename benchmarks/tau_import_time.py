"""How `turnbench import --format tau-bench` grows with a trajectory's length (issue 44, class 5).

One trajectory of N exchanges (after the policy and the user's opening, N times an agent
message to the user and the user's reply: 2N messages, N agent steps) is written as
upstream's results file and imported through the real CLI, in a child process, timed from
start to exit (start-up included, about 1 s); the fastest of `--rounds` imports counts (the
machine's other load only ever adds). Printed per N: the seconds, and the seconds per 1,000
exchanges (flat when the import is linear). Before issue 44 the importer copied
the agent's conversation so far for every message, and `engine.history.Thread` copied and
compared it again, so N exchanges cost N squared.

With `--baseline-src DIR` the same imports run on another checkout's source (a `git archive`
of the code before the change) in the same sitting, one after the other per N.

    TURNBENCH_DATA_DIR=../shared/data .venv/bin/python benchmarks/tau_import_time.py \\
        [--exchanges 8000 16000 32000] [--rounds 1] [--baseline-src /tmp/old/src]
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

from turnbench.benchmarks.tau_bench.fakes import gold_trajectory


def trajectory_file(data_dir: Path, exchanges: int, folder: Path) -> Path:
    """Upstream's results file holding one airline trajectory of `exchanges` exchanges."""
    entry = gold_trajectory(data_dir, "airline", 0)
    traj = entry["traj"][:2]  # the policy and the user's opening
    for number in range(exchanges):
        traj.append({"role": "assistant", "content": f"Reply {number}.", "tool_calls": None})
        traj.append({"role": "user", "content": f"Message {number}."})
    entry["traj"] = traj
    path = folder / f"long-{exchanges}.json"
    path.write_text(json.dumps([entry]), "utf-8")
    return path


def import_seconds(source: Path, out: Path, src: Path | None) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    args = [sys.executable, "-m", "turnbench", "import", "--format", "tau-bench",
            "--benchmark", "tau-bench-airline", str(source), "--out", str(out)]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:  # (one conversation cut off at the step limit: complete, 0)
        sys.exit(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", type=int, nargs="+", default=[8000, 16000, 32000])
    parser.add_argument("--rounds", type=int, default=1, help="imports per figure (the fastest)")
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src/ to compare")
    args = parser.parse_args()
    data = os.environ.get("TURNBENCH_DATA_DIR")
    if not data:
        sys.exit("set TURNBENCH_DATA_DIR to the folder holding tau_bench/")
    sources: list[tuple[str, Path | None]] = [("this code", None)]
    if args.baseline_src is not None:
        sources.append((f"baseline {args.baseline_src}", args.baseline_src))
    print(f"{'exchanges':>9}  " + "  ".join(f"{label:>30}" for label, _ in sources))
    with tempfile.TemporaryDirectory() as folder:
        for exchanges in args.exchanges:
            source = trajectory_file(Path(data), exchanges, Path(folder))
            cells = []
            for number, (_, src) in enumerate(sources):
                seconds = min(
                    import_seconds(source, Path(folder) / f"run-{exchanges}-{number}-{r}", src)
                    for r in range(args.rounds)
                )
                cells.append(f"{seconds:>8.1f} s ({seconds / exchanges * 1000:.2f} s/1000)")
            print(f"{exchanges:>9}  " + "  ".join(f"{cell:>30}" for cell in cells))


if __name__ == "__main__":
    main()
