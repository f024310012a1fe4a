"""Everything the package reads at run time is shipped: an editable install would hide a
data file the wheel leaves out, and a user's `pip install turnbench` would then fail."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_data_file_is_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["turnbench"]
    package = ROOT / "src" / "turnbench"
    data_files = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    ]
    assert data_files, "no data files found"
    missing = [f for f in data_files if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == [], f"not in [tool.setuptools.package-data]: {missing}"


def test_runtime_dependencies_are_what_the_runtime_imports():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    runtime = " ".join(config["project"]["dependencies"])
    source = "\n".join(p.read_text("utf-8") for p in (ROOT / "src" / "turnbench").rglob("*.py"))
    assert "scipy" not in runtime and "import scipy" not in source and "from scipy" not in source
