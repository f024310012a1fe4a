"""How fast `turnbench view` opens a large run directory (issue 24: 28,920 judgments, < 2 s).

Starts `turnbench view FOLDER` as its own process on a free port of 127.0.0.1 and times,
over HTTP as a browser would ask: the runs list (`/api/runs`, which reads every log's new
lines), the runs page, the run page (the report's sections: the log read into its index and
the sections built) the first time and again (cached by the log's size and modification
time), and one conversation page. Each figure is the wall time of one request. The server
reads finished runs into its cache in the background from its start: `--browse-after S`
opens the run S seconds after the runs page, as a reader who looks at the list first.

Make the run first, e.g. with the scale benchmark (8 models x 3615 MT-Bench-101 turns):

    .venv/bin/python benchmarks/scale_memory.py --rounds 0 --keep /tmp/big/run
    .venv/bin/python benchmarks/view_open_time.py /tmp/big [--rounds 3] [--browse-after 5]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(url: str) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as response:
        body = response.read()
        status = response.status
    return time.perf_counter() - started, status, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder holding the large run directory")
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers to measure")
    parser.add_argument(
        "--browse-after",
        type=float,
        default=0.0,
        help="seconds between the runs page and opening the run (the server reads finished "
        "runs into its cache in the background meanwhile); 0: open it at once",
    )
    args = parser.parse_args()
    for round_number in range(1, args.rounds + 1):
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "turnbench", "view", str(args.folder), "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=os.environ.copy(),
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                        break
                except OSError:
                    time.sleep(0.05)
            first, _, body = timed(base + "/api/runs")
            runs = json.loads(body)
            biggest = max(runs, key=lambda r: r["counts"].get("logged_judgments", 0))
            run_url = f"{base}/run/{biggest['root']}/{quote(biggest['path'])}"
            again_list, _, _ = timed(base + "/api/runs")
            page_list, _, _ = timed(base + "/")
            time.sleep(args.browse_after)
            run_first, status, page = timed(run_url)
            run_again, _, _ = timed(run_url)
            sample = page.split(b'class="sample" href="', 1)[1].split(b'"', 1)[0].decode()
            conversation, _, _ = timed(base + sample.replace("&amp;", "&"))
            load = " ".join(f"{value:.1f}" for value in os.getloadavg())
            print(
                f"round {round_number}: {biggest['counts'].get('logged_judgments')} judgments"
                f" ({status}); /api/runs first {first:.2f} s, again {again_list:.3f} s; runs"
                f" page {page_list:.3f} s; run page first {run_first:.2f} s, again"
                f" {run_again:.3f} s ({len(page) / 1e6:.1f} MB); conversation"
                f" {conversation:.2f} s; opened {args.browse_after:.0f} s after the runs page;"
                f" load {load}",
                flush=True,
            )
        finally:
            server.terminate()
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
