"""The performance scripts in benchmarks/ keep working as the code under them changes.

They are measurements, not tests, so nothing else runs them: an API change once left
`harness_overhead.py` (what `make bench` runs) failing at import. Every script must import
and parse `--help`; the harness benchmark also runs for real on a few requests, so its use of
the runner's API is checked, not only its imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(path.name for path in SCRIPTS_DIR.glob("*.py"))


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=SCRIPTS_DIR.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_every_benchmark_script_is_listed():
    assert "harness_overhead.py" in SCRIPTS and len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_script_imports_and_shows_its_help(script):
    done = _run(str(SCRIPTS_DIR / script), "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_harness_overhead_runs_through_the_real_runner():
    done = _run(str(SCRIPTS_DIR / "harness_overhead.py"), "--requests", "40", "--rounds", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "turnbench runner:" in done.stdout and "runner / bare (wall):" in done.stdout


def test_the_plain_loop_floor_sends_every_request(tmp_path):
    """The floor of judge_request_path.py and judge_phases.py: every request answered and
    counted, and its marks written (imports before the whole)."""
    import json

    from turnbench.testing.fake_server import spawn

    requests = tmp_path / "requests.jsonl"
    messages = [[{"role": "user", "content": f"question {n}"}] for n in range(5)]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages), "utf-8")
    server, base_url = spawn(0.0, tmp_path, "--fixed-reply", "Rating: [[7]]")
    try:
        marks = tmp_path / "marks.json"
        done = _run(str(SCRIPTS_DIR / "plain_loop.py"), str(requests), base_url, "2", "judge",
                    "--marks", str(marks))  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    found = json.loads(marks.read_text("utf-8"))
    assert 0 < found["imports"] < found["exit"]
