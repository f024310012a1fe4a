"""The README's Python API example runs as written: the embedded model answers and judges
one MT-Bench question per category, in a child process, as a user would paste it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration

JUDGED = 16  # limit=1: one question per category (8), two turns each


def readme_api_example() -> str:
    readme = (REPO / "README.md").read_text("utf-8")
    heading = re.search(r"^## Python API[ \t]*$", readme, re.MULTILINE)
    assert heading, "README.md has no '## Python API' section"
    block = re.search(r"^```python\n(.*?)^```", readme[heading.end() :], re.MULTILINE | re.DOTALL)
    assert block, "no ```python block after '## Python API' in README.md"
    return block.group(1)


def test_the_readme_python_api_example_runs_as_written(env, tmp_path):
    code = readme_api_example()
    assert "evaluate(" in code and "runs/api-example" in code
    script = tmp_path / "example.py"
    script.write_text(code, "utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results_path = tmp_path / "runs" / "api-example" / "results.json"
    assert results_path.is_file(), done.stdout + done.stderr
    results = json.loads(results_path.read_text("utf-8"))
    assert results["complete"] is True
    assert results["counts"]["judged"] == JUDGED
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("True"), done.stdout
