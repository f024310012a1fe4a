"""Screenshots of a failed tau-bench conversation in the report and in the viewer (issue 37),
made from a real run against scripted fakes, by headless Chromium from Debian.

The run: airline tasks 0-4, two trials each. The agent plays the gold actions (`PerfectAgent`)
except on odd tasks, where it leaves out the last one (a booking never made, a payment
never taken), so those conversations fail with a database diff against the gold state.

    TURNBENCH_DATA_DIR=../shared/data python scripts/tau_screenshots.py --out /tmp/tau-shots

writes RUN/ (the run), report.html, report.png and viewer.png into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from screenshot_support import turnbench, viewer

from turnbench.benchmarks.tau_bench.fakes import PerfectAgent, TauUser
from turnbench.testing.fake_server import FakeServer


def sloppy(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks as the sloppy agent plays them: on odd tasks, the last gold action left out."""
    played = []
    for number, task in enumerate(tasks):
        actions = [a for a in task["actions"] if a["name"] != "respond"]
        played.append(dict(task, actions=actions[:-1]) if number % 2 else task)
    return played


def screenshot(url: str, path: Path, height: int) -> None:
    browser = shutil.which("chromium") or sys.exit("chromium is missing: apt-get install chromium")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size=1280,{height}", f"--screenshot={path}", url],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="A new folder.")
    args = parser.parse_args()
    data = Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data")).resolve()
    env = dict(os.environ, TURNBENCH_DATA_DIR=str(data), OPENAI_API_KEY="unused")
    args.out.mkdir(parents=True, exist_ok=False)
    run = args.out / "run"
    tasks = json.loads((data / "tau_bench" / "airline" / "tasks_test.json").read_text("utf-8"))
    with (
        FakeServer(responder=PerfectAgent(sloppy(tasks))) as agent,
        FakeServer(responder=TauUser(tasks)) as user,
    ):
        turnbench(
            "run", "--benchmark", "tau-bench-airline", "--limit", "5", "--simulations", "2",
            "--model", "openai/sloppy-agent", "--model-base-url", agent.base_url,
            "--user-model", "openai/scripted-user", "--user-base-url", user.base_url,
            "--no-progress", "--out", str(run), env=env, exits=(0, 1),
        )  # fmt: skip
    report = args.out / "report.html"
    turnbench("report", str(run), "--out", str(report), env=env, exits=(0, 1))
    screenshot(report.resolve().as_uri(), args.out / "report.png", 3400)
    with viewer(args.out, env) as origin:
        screenshot(f"{origin}/conversation/0/run?sample=3", args.out / "viewer.png", 1500)
    print(f"wrote {run}, {report}, {args.out / 'report.png'}, {args.out / 'viewer.png'}")


if __name__ == "__main__":
    main()
