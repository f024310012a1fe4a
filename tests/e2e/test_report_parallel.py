"""A large report renders its dialogue pages in a forked child process: the report and every
page are byte for byte those of rendering them in-process, and a child that fails or dies
makes the parent render them itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import cli_env, shared_data_dir
from tests.e2e.test_report import hostile_responder, make_run
from turnbench.report import html
from turnbench.report.html import ReportOptions, build_report
from turnbench.store import parallel
from turnbench.store.rundir import load_runs

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="fork on Linux, 2+ CPUs")


def _report(runs: list[Path], out: Path, *, forked: bool) -> tuple[str, dict[str, bytes]]:
    options = ReportOptions(
        generated_at="2026-01-01 00:00 UTC",
        out=out,
        inline_limit=2_000,  # small limits: the dialogues go to several pages
        page_limit=3_000,
        parallel=forked,
    )
    text = build_report(load_runs(runs, require_log=False), options)
    assert options.pages is not None
    pages = {p.name: p.read_bytes() for p in options.pages.written}
    return text, pages


def test_pages_rendered_in_a_child_are_those_rendered_here(tmp_path, monkeypatch):
    env = cli_env(shared_data_dir(), tmp_path)
    runs = [make_run(tmp_path / "hostile", env, hostile_responder)]
    renderers = tmp_path / "renderers.txt"  # which process rendered the dialogues
    real = html.dialogue_browser

    def recorded(*args, **kwargs):
        with renderers.open("a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(html, "dialogue_browser", recorded)
    in_process, pages_here = _report(runs, tmp_path / "a" / "report.html", forked=False)
    in_child, pages_child = _report(runs, tmp_path / "b" / "report.html", forked=True)
    here, child = renderers.read_text("utf-8").split()
    assert int(here) == os.getpid() and int(child) != os.getpid()
    assert len(pages_here) >= 2  # the dialogues really are on pages
    assert in_child == in_process
    assert pages_child == pages_here


def test_a_failing_child_makes_the_parent_do_the_work():
    parent = os.getpid()

    def fails_in_child() -> str:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return "done here"

    def dies_in_child() -> str:
        if os.getpid() != parent:
            os._exit(3)
        return "done here too"

    assert parallel.forked(fails_in_child)() == "done here"
    assert parallel.forked(dies_in_child)() == "done here too"
    big = "x" * 5_000_000  # larger than a pipe's buffer: read before the child is awaited
    assert parallel.forked(lambda: big)() == big
