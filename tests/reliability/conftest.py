"""Fixtures of the reliability suite: one fault-free reference run shared by every test, and
a finished run of the test plug-in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import turnbench
from tests.conftest import cli_env, run_cli, shared_data_dir
from tests.reliability.helpers import TOY, read_log, results, run_args
from tests.toy_bench import ToyBench
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


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the test plug-in (made once in this process; tests copy it)."""
    out = tmp_path_factory.mktemp("made") / "toy"
    with FakeServer() as server:
        result = turnbench.evaluate(
            "openai/model",
            benchmark=ToyBench,
            model_base_url=server.base_url,
            judge="openai/judge",
            judge_base_url=server.base_url,
            out=out,
        )
    assert result.complete and result.results["provenance"]["benchmark_ref"] == TOY
    return out
