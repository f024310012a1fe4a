"""A run directory is data someone else may have made: reading it never runs code it names.

`report`, `export`, `compare` and `load_run(...).turns()` never import the module a run's
`benchmark_ref` names: a planted `this:MTBench` (the Zen of Python, printed on import) or
`evil:X` with `evil.py` beside the run (it writes a marker file when imported) is refused
with one message, run from the parent folder as a user would. A plug-in is read only when
the user names it, and only if it is the one the run recorded (issue 22, item 1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import turnbench
from tests.conftest import run_cli
from tests.reliability.helpers import TOY, copy_run, plugin_env
from tests.toy_bench import DIALOGUES, ToyBench, ToyBenchCopy
from turnbench.errors import UserError

TURNS = sum(len(turns) for _, turns in DIALOGUES.values())
MARKER = "EVIL-MODULE-WAS-IMPORTED"
EVIL = f"""from pathlib import Path
Path(__file__).with_name({MARKER!r}).write_text("imported")
print("evil code ran")
"""
ZEN = ("Zen of Python", "Beautiful is better than ugly")


@pytest.fixture
def planted(toy_run: Path, tmp_path: Path) -> Path:
    """A folder as someone might send it: two run directories naming code, `evil.py` beside."""
    for name, reference in (("zen", "this:MTBench"), ("evil", "evil:X")):
        copy_run(toy_run, tmp_path / name, reference)
        copy_run(toy_run, tmp_path / f"{name}-again", reference)  # a second one to compare
    (tmp_path / "evil.py").write_text(EVIL, "utf-8")
    return tmp_path


READERS = {
    "report": lambda run, folder: ["report", run, "--out", str(folder / "r.html")],
    "export csv": lambda run, folder: ["export", run, "--format", "csv", "--out", "-"],
    "export jsonl": lambda run, folder: ["export", run, "-f", "jsonl", "-o", str(folder / "j")],
    "compare": lambda run, folder: ["compare", run, f"{run}-again", "--json"],
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("run", "reference"), [("zen", "this:MTBench"), ("evil", "evil:X")])
def test_reading_a_run_never_imports_the_module_it_names(planted, env, reader, run, reference):
    done = run_cli(READERS[reader](run, planted), env, cwd=planted)
    said = done.stdout + done.stderr
    assert not (planted / MARKER).exists(), "the run directory's module was imported"
    assert "evil code ran" not in said and not any(line in said for line in ZEN)
    assert done.returncode == 2, said
    assert "Traceback" not in said
    assert "never imports code a run directory names" in done.stderr
    assert f"--benchmark {reference}" in done.stderr
    assert not (planted / "r.html").exists() and not (planted / "j").exists()


@pytest.fixture
def no_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """`this` and `evil` not imported yet (an import runs a module's code only once)."""
    for name in ("this", "evil"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_load_run_never_imports_the_module_a_run_names(planted, monkeypatch, capsys, no_cached):
    """As a notebook started from the parent folder (its folder on the import path)."""
    monkeypatch.chdir(planted)
    monkeypatch.syspath_prepend(str(planted))
    for name, reference in (("zen", "this:MTBench"), ("evil", "evil:X")):
        run = turnbench.load_run(name)
        assert run.results["benchmark"] == "toy-bench" and run.complete  # results need no class
        with pytest.raises(UserError) as refused:
            list(run.turns())
        assert f'benchmark="{reference}"' in refused.value.message
    printed = capsys.readouterr()
    assert not (planted / MARKER).exists()
    assert not any(line in printed.out + printed.err for line in ZEN)
    assert "this" not in sys.modules and "evil" not in sys.modules


def test_printed_results_never_import_the_module_a_results_file_names(
    planted, monkeypatch, capsys, no_cached
):
    """`run` and `judge` print results.json; one read back from the run directory (an
    unchanged run) names its benchmark_ref, which is not what the command ran."""
    from turnbench.cli.output import print_results
    from turnbench.cli.terminal import console
    from turnbench.session import RunResult

    monkeypatch.syspath_prepend(str(planted))
    results = json.loads((planted / "evil" / "results.json").read_text("utf-8"))
    print_results(console(), RunResult(planted / "evil", results, "finished", None, 0), ToyBench)
    assert not (planted / MARKER).exists() and "evil" not in sys.modules
    assert "small-talk" in capsys.readouterr().out  # the table of the class the command ran


def test_a_named_plugin_reads_its_own_runs_and_no_other(toy_run, tmp_path, env):
    run = copy_run(toy_run, tmp_path / "toy")
    env = plugin_env(env)
    unnamed = run_cli(["export", str(run), "--format", "csv", "--out", "-"], env)
    assert unnamed.returncode == 2 and f"--benchmark {TOY}" in unnamed.stderr
    named = run_cli(["export", str(run), "--format", "csv", "--out", "-", "--benchmark", TOY], env)
    assert named.returncode == 0, named.stderr
    assert named.stdout.count("\n") == 1 + TURNS
    report = run_cli(
        ["report", str(run), "--out", str(tmp_path / "r.html"), "--benchmark", TOY], env
    )
    assert report.returncode == 0, report.stderr
    assert "toy-bench" in (tmp_path / "r.html").read_text("utf-8")
    for other in ("tests.toy_bench:ToyBenchCopy", "mt-bench"):
        for args in (
            ["export", str(run), "--format", "csv", "--out", "-"],
            ["report", str(run), "--out", str(tmp_path / "other.html")],
        ):
            refused = run_cli([*args, "--benchmark", other], env)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert "is not the one this run recorded" in refused.stderr
            assert TOY in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "other.html").exists()


def test_load_run_with_the_named_plugin(toy_run, tmp_path):
    run = copy_run(toy_run, tmp_path / "toy")
    for named in (ToyBench, TOY):
        rows = list(turnbench.load_run(run, benchmark=named).turns())
        assert len(rows) == TURNS and {r["status"] for r in rows} == {"scored"}
        # the plug-in's own group kind (topic): neither a category nor a task column
        assert {r["group"] for r in rows} == {"small-talk", "numbers"}
        assert {r["category"] for r in rows} == {r["task"] for r in rows} == {None}
    for other in (ToyBenchCopy, "tests.toy_bench:ToyBenchCopy", "mt-bench"):
        with pytest.raises(UserError) as refused:
            turnbench.load_run(run, benchmark=other)
        assert "is not the one this run recorded" in refused.value.message
