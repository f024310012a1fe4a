"""The documentation's Python API example (docs/api.md, linked from the README) runs as
written: the embedded model answers and judges one MT-Bench question per category, in a
child process, as a user would paste it."""

from __future__ import annotations

import json
import re
import sys

import pytest

from tests.conftest import REPO
from tests.integration.bounded import run_bounded

pytestmark = pytest.mark.integration

JUDGED = 16  # limit=1: one question per category (8), two turns each
API_PAGE = REPO / "docs" / "api.md"


def api_example() -> str:
    page = API_PAGE.read_text("utf-8")
    heading = re.search(r"^## Example[ \t]*$", page, re.MULTILINE)
    assert heading, "docs/api.md has no '## Example' section"
    block = re.search(r"^```python\n(.*?)^```", page[heading.end() :], re.MULTILINE | re.DOTALL)
    assert block, "no ```python block after '## Example' in docs/api.md"
    return block.group(1)


def test_the_documented_python_api_example_runs_as_written(env, tmp_path):
    code = api_example()
    assert "evaluate(" in code and "runs/api-example" in code
    script = tmp_path / "example.py"
    script.write_text(code, "utf-8")
    run_dir = tmp_path / "runs" / "api-example"
    # about 40 s on an idle 2-core machine; on expiry the failure says how far it got
    done = run_bounded(
        [sys.executable, str(script)], env=env, cwd=tmp_path, limit_s=420, run_dir=run_dir
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results_path = run_dir / "results.json"
    assert results_path.is_file(), done.stdout + done.stderr
    results = json.loads(results_path.read_text("utf-8"))
    assert results["complete"] is True
    assert results["counts"]["judged"] == JUDGED
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("True"), done.stdout
