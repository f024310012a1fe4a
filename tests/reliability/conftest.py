"""Fixtures of the reliability suite: one fault-free reference run shared by every test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cli_env, run_cli, shared_data_dir
from tests.reliability.helpers import read_log, results, run_args
from turnbench.testing.fake_server import FakeServer


@dataclass(frozen=True)
class Reference:
    """A fault-free MT-Bench run (--limit 1): what every faulty or resumed run must equal."""

    out: Path
    results: dict[str, Any]
    records: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    usage: dict[str, dict[str, int]]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    tmp = tmp_path_factory.mktemp("reference")
    env = cli_env(shared_data_dir(), tmp)
    out = tmp / "run"
    with FakeServer() as server:
        done = run_cli(run_args(server.base_url, out), env)
        requests = list(server.requests)
        usage = {model: dict(tally) for model, tally in server.usage.items()}
    assert done.returncode == 0, done.stderr
    return Reference(out, results(out), read_log(out), requests, usage)
