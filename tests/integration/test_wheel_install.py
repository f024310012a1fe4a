"""The wheel works on its own (issue 26): `python -m build` writes a wheel and an sdist whose
package data is complete, and the wheel installed into a fresh virtual environment outside
the clone runs `turnbench --version`, `turnbench data status` and a judge-only run against
the fake server.

An editable install reads its data files from the source tree, so it hides a file the wheel
leaves out; this test runs turnbench from the wheel's copy only. The fresh venv has no
system site-packages and gets the wheel alone (`--no-deps`, offline); turnbench's
third-party dependencies come from the test's own environment through a `.pth` file, whose
directories go after the venv's own site-packages and whose own `.pth` files (an editable
turnbench among them) are not processed. The test proves that `turnbench` is imported
from the new venv before it runs anything. The build is offline too (`--no-isolation`, with
the build backend the test extra installs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import turnbench
from tests.conftest import REPO, cli_env
from turnbench.testing.fake_server import FakeServer

pytestmark = pytest.mark.wheel

PACKAGE = REPO / "src" / "turnbench"


def shipped_files() -> set[str]:
    """Every file of the package in the source tree, as the wheel names it."""
    return {
        "turnbench/" + path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """`python -m build` on a clean copy of what the build reads. In the clone itself a
    `src/turnbench.egg-info` left by an editable install or an earlier build keeps a list of
    files (SOURCES.txt) that setuptools ships again, so a data file dropped from
    `[tool.setuptools.package-data]` would still be in the wheel."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):  # `readme =` names the README
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PACKAGE, source / "src" / "turnbench", ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)])
    return out


def test_the_wheel_and_the_sdist_hold_every_package_file(dist):
    (wheel,) = dist.glob("turnbench-*.whl")
    (sdist,) = dist.glob("turnbench-*.tar.gz")
    assert wheel.name == f"turnbench-{turnbench.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"turnbench-{turnbench.__version__}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    expected = shipped_files()
    for data in ("turnbench/prompts/reask.json", "turnbench/prompts/guard.json",
                 "turnbench/prompts/audit_probes.json", "turnbench/prices.json",
                 "turnbench/benchmarks/mt_bench/sources.json", "turnbench/py.typed"):  # fmt: skip
        assert data in expected, data
    assert expected - names == set(), f"left out of the wheel: {sorted(expected - names)}"
    assert "turnbench = turnbench.cli.entry:main" in entry_points
    for extra in ("local", "anthropic"):
        assert f"Provides-Extra: {extra}" in metadata
    root = f"turnbench-{turnbench.__version__}/"
    with tarfile.open(sdist) as archive:
        in_sdist = {name.removeprefix(root) for name in archive.getnames()}
    for name in ("pyproject.toml", "README.md"):
        assert name in in_sdist, name
    missing = {"src/" + name for name in expected} - in_sdist
    assert missing == set(), f"left out of the sdist: {sorted(missing)}"


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel alone, its dependencies reachable from ours."""
    (wheel,) = dist.glob("turnbench-*.whl")
    where = tmp_path_factory.mktemp("fresh") / "venv"
    # without our PYTHONPATH: pip would find the source tree's turnbench "already installed"
    clean = without_python_path(dict(os.environ))
    run([sys.executable, "-m", "venv", "--without-pip", str(where)], env=clean)
    python = where / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    run([*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)], env=clean)
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=clean,
    )
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site.stdout.strip(), "shared-dependencies.pth").write_text("\n".join(sorted(ours)))
    return where


def without_python_path(env: dict[str, str]) -> dict[str, str]:
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def fresh_env(data_dir: Path, tmp_path: Path) -> dict[str, str]:
    return without_python_path(cli_env(data_dir, tmp_path))


def test_the_installed_wheel_runs_outside_the_clone(venv, data_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = fresh_env(data_dir, tmp_path)
    python, command = venv / "bin" / "python", str(venv / "bin" / "turnbench")
    where = run(
        [str(python), "-c", "import turnbench.prices, turnbench; print(turnbench.__file__)"],
        cwd=elsewhere,
        env=env,
    )
    imported = Path(where.stdout.strip()).resolve()
    assert imported.is_relative_to(venv.resolve()), f"turnbench imported from {imported}"
    assert not imported.is_relative_to(REPO)

    version = run([command, "--version"], cwd=elsewhere, env=env)
    assert version.stdout.strip() == turnbench.__version__

    status = run([command, "data", "status"], cwd=elsewhere, env=env)
    for benchmark in ("mt-bench", "mt-bench-101", "structflowbench"):  # from sources.json
        assert benchmark in status.stdout, status.stdout
    assert "$TURNBENCH_DATA_DIR" in status.stdout

    answers = data_dir / "mt_bench" / "model_answer" / "alpaca-13b.jsonl"
    out = elsewhere / "judged"
    with FakeServer() as server:
        judged = subprocess.run(
            [command, "judge", "--answers", str(answers), "--judge", "openai/x",
             "--judge-base-url", server.base_url, "--out", str(out), "--limit", "1"],
            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert judged.returncode == 0, judged.stdout + judged.stderr
        assert len(server.requests) == 16  # 8 questions, 2 turns, one judgment each
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["complete"] is True and results["counts"]["judged"] == 16
    assert results["provenance"]["turnbench_version"] == turnbench.__version__
    assert os.path.basename(results["model"]) == "alpaca-13b"
    # the report's templates are package data: the installed wheel renders the report
    page = elsewhere / "report.html"
    run([command, "report", str(out), "--out", str(page)], cwd=elsewhere, env=env)
    text = page.read_text("utf-8")
    assert 'id="summary"' in text and "alpaca-13b" in text and text.count("<script") == 1
