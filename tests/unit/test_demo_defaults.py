"""What `turnbench run` with no flags sets up: the embedded demo's options.

The end-to-end test (tests/integration/test_embedded_demo.py) drives the real model through
`turnbench run --demo` with smaller caps, to stay fast; these tests pin, without any model,
that a bare `turnbench run` is that same demo with its documented caps, and that flags can
only lower the caps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import turnbench.cli  # noqa: F401  (registers the commands)
from turnbench.cli import run_cmd
from turnbench.cli.application import app
from turnbench.options import EvalOptions


@pytest.fixture
def captured(monkeypatch, tmp_path) -> list[tuple[EvalOptions, str]]:
    """Run the command in-process up to the session; record what it would run."""
    seen: list[tuple[EvalOptions, str]] = []

    def execute(options: EvalOptions, mode: str, params: dict[str, Any]) -> None:
        seen.append((options, mode))

    monkeypatch.setattr(run_cmd, "_execute", execute)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return seen


def invoke(args: list[str]) -> None:
    app(args=args, obj={"argv": args}, standalone_mode=False)


def test_run_with_no_flags_is_the_embedded_demo(captured, tmp_path, capsys):
    invoke(["run"])
    [(options, mode)] = captured
    assert mode == "run" and options.demo is True
    assert options.model == "local/smollm2"
    assert [judge.spec for judge in options.judge] == ["local/smollm2"]
    assert options.benchmark == "mt-bench" and options.limit == 1
    assert options.max_new_tokens == run_cmd.DEMO_ANSWER_TOKENS == 160
    assert options.judge_max_tokens == run_cmd.DEMO_JUDGE_TOKENS == 256
    assert options.max_reasks == 1 and options.reask_max_tokens == 32
    assert Path(options.out) == tmp_path / "xdg-data" / "turnbench" / "runs" / "demo"
    assert "turnbench demo" in capsys.readouterr().out


def test_demo_flags_only_lower_its_caps(captured):
    invoke(["run", "--demo", "--max-new-tokens", "32", "--judge-max-tokens", "64"])
    invoke(["run", "--demo", "--max-new-tokens", "4000", "--judge-max-tokens", "4000"])
    invoke(["run", "--demo", "--max-reasks", "5"])
    (low, _), (high, _), (reasks, _) = captured
    assert low.demo and (low.max_new_tokens, low.judge_max_tokens) == (32, 64)
    assert (high.max_new_tokens, high.judge_max_tokens) == (160, 256)
    assert reasks.max_reasks == 1
    assert low.model == high.model == "local/smollm2" and low.limit == 1


def test_any_flag_turns_the_demo_off(captured):
    invoke(["run", "--model", "openai/m", "--judge", "openai/j", "--out", "somewhere"])
    [(options, _)] = captured
    assert options.demo is False and options.limit is None
