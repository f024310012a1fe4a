"""A command's module is imported only when that command runs (turnbench.cli.load).

The price of that laziness is a table, `COMMAND_MODULES`, that must name the module of every
command: a command missing from it would run only in a process that happened to import its
module (a test, the docs build) and be unknown to a user. So the table is read against what
the modules really register, in fresh interpreters, and each command's help must be the same
whether it was loaded alone or with all the others.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import turnbench.cli
from tests.conftest import run_cli
from turnbench.cli import COMMAND_MODULES

_DUMP = textwrap.dedent(
    """
    import contextlib, io, json, sys
    import typer.main
    from turnbench.cli import load

    command = sys.argv[1] or None
    app = load(command)
    root = typer.main.get_command(app)
    helps = {}
    for name in ([command] if command else sorted(root.commands)):
        sys.argv = ["turnbench", name, "--help"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            app(args=[name, "--help"], obj={"argv": [name, "--help"]})
        helps[name] = out.getvalue()
    modules = sorted(m.rsplit(".", 1)[1] for m in sys.modules
                     if m.startswith("turnbench.cli.") and m.endswith("_cmd"))
    print(json.dumps({"commands": sorted(root.commands), "helps": helps, "modules": modules}))
    """
)


def _fresh(command: str | None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _DUMP, command or ""],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_table_names_every_command_and_every_command_module():
    everything = _fresh(None)
    assert everything["commands"] == sorted(COMMAND_MODULES)
    package = Path(turnbench.cli.__file__).parent
    assert everything["modules"] == sorted(p.stem for p in package.glob("*_cmd.py"))
    assert sorted(set(COMMAND_MODULES.values())) == everything["modules"]


def test_a_command_loaded_alone_imports_only_its_module_and_has_the_same_help():
    everything = _fresh(None)
    for command, module in COMMAND_MODULES.items():
        alone = _fresh(command)
        assert command in alone["commands"], command
        assert alone["modules"] == [module], command
        assert alone["helps"][command] == everything["helps"][command], command
        assert "Usage: turnbench" in alone["helps"][command]


def test_the_console_script_lists_every_command_and_names_a_misspelt_one(env):
    done = run_cli(["--help"], env)
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")}
    assert set(COMMAND_MODULES) <= listed
    wrong = run_cli(["jduge"], env)
    assert wrong.returncode == 2
    assert "No such command" in wrong.stderr


def test_a_built_in_benchmark_run_does_not_load_the_benchmark_file_machinery():
    """The flags read every benchmark package's options; the custom package's schema and
    checks load only when a benchmark file is named (PEP 562 names in its package)."""
    probe = textwrap.dedent(
        """
        import sys
        from turnbench.cli import load
        load("run")
        loaded = sorted(m for m in sys.modules if m.startswith("turnbench.benchmarks.custom."))
        from turnbench.benchmarks.custom import FORMAT_VERSIONS, benchmark_from_file, load_spec
        assert callable(benchmark_from_file) and callable(load_spec) and FORMAT_VERSIONS
        print(" ".join(loaded))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["turnbench.benchmarks.custom.options"]


def test_printing_typed_results_does_not_load_numpy():
    """What a run prints is read as its typed model (results.shapes, with the stress arms'
    ArmResults): an unchanged run's resume loads it, and it must not bring numpy (17 MB
    resident, 0.1-0.2 s; issue 42) through the statistics that only computing results needs.
    tests/reliability/test_unchanged_run.py checks the whole command."""
    probe = textwrap.dedent(
        """
        import sys
        from turnbench.cli import load
        load("judge")
        import turnbench.cli.output, turnbench.results.shapes, turnbench.session.result
        print(" ".join(sorted(m for m in sys.modules
                              if m.split(".")[0] == "numpy" or m == "turnbench.stats.paired")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
