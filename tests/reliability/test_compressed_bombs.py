"""Issue 22 item 4: a compressed reply is capped at 64 MB *decoded* on every path, the
OpenAI-compatible backend direct and through a proxy and the Anthropic backend (its SDK
sends through the same transport). Each bomb is ~200 kB on the wire and 200 MiB decoded,
a valid JSON reply; before, the proxied and the Anthropic ones were accepted as a 200 MiB
answer with ~600 MB of peak memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("bomb_client.py")


@pytest.mark.parametrize("path", ["direct", "proxy", "anthropic"])
def test_a_gzip_bomb_is_refused_before_memory_grows(path):
    pytest.importorskip("anthropic") if path == "anthropic" else None
    done = subprocess.run(
        [sys.executable, str(SCRIPT), path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["wire_bytes"] < 300_000
    assert result["outcome"].startswith("refused: "), result
    assert "body too large (over 67108864 bytes decoded)" in result["outcome"], result
    # the cap (64 MiB) and little more: not the 200 MiB answer and its copies
    assert result["peak_growth_mb"] < 120, result
