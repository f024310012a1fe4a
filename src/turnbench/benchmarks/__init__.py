"""Finding a benchmark: the built-in packages by name, a user's file or folder, or one
written elsewhere.

A built-in benchmark is a subpackage of `turnbench.benchmarks` whose `__init__` exports
`BENCHMARK` (its class), or `BENCHMARKS` for a package of several (tau-bench's domains);
nothing lists them by hand, so adding a benchmark means adding its package. `--benchmark`
also takes a user-defined benchmark file (`.yaml`, `.yml`, `.json`;
`turnbench.benchmarks.custom`), a folder holding a built-in benchmark's files in its layout
(a translated or domain version, run by that benchmark's rules: `benchmarks.folder`), or a
benchmark written outside turnbench as `package.module:ClassName` (a `Benchmark` subclass
importable from the current environment).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.benchmarks.datafiles import DEFAULT_BASE_URL, DataFile
from turnbench.errors import UserError


def _packages() -> list[str]:
    return [info.name for info in pkgutil.iter_modules(__path__) if info.ispkg]


def _exported(package: str) -> list[type[Benchmark]]:
    """The benchmark classes a built-in package exports: its `BENCHMARK`, or the several of
    a package that holds more than one (`BENCHMARKS`: tau-bench's two domains)."""
    module = importlib.import_module(f"{__name__}.{package}")
    found = getattr(module, "BENCHMARKS", None) or [getattr(module, "BENCHMARK", None)]
    return [cls for cls in found if isinstance(cls, type) and issubclass(cls, Benchmark)]


@cache
def builtin_benchmarks() -> dict[str, type[Benchmark]]:
    found = [cls for package in _packages() for cls in _exported(package)]
    return {cls.name: cls for cls in sorted(found, key=lambda cls: cls.name)}


def load_sources() -> tuple[str, dict[str, list[DataFile]]]:
    """The download base URL and the data files of every built-in benchmark, by name."""
    datasets = {name: cls.data_files() for name, cls in builtin_benchmarks().items()}
    return DEFAULT_BASE_URL, {name: files for name, files in datasets.items() if files}


def _import_reference(reference: str) -> type[Benchmark]:
    module_name, _, class_name = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(f"--benchmark {reference}: cannot import {module_name} ({error})") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise UserError(
            f"--benchmark {reference}: {module_name} has no Benchmark subclass named {class_name!r}"
        )
    return cls


BENCHMARK_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def looks_like_path(reference: str) -> bool:
    """`reference` is written as a path (so never a `module:Class` to import)."""
    return (
        reference.startswith((".", "/", "~"))
        or "/" in reference
        or "\\" in reference
        or reference.lower().endswith(BENCHMARK_FILE_SUFFIXES)
    )


def builtin_named(reference: str) -> type[Benchmark] | None:
    """The built-in benchmark named `reference` when its package is named after it, or
    after the start of its name ("mt-bench-101" in `mt_bench_101`, "tau-bench-airline" in
    `tau_bench`), importing that package alone: a run needs one benchmark, and importing
    every other one is start-up time for nothing."""
    parts = reference.replace("-", "_").split("_")
    packages = set(_packages())
    for end in range(len(parts), 0, -1):
        package = "_".join(parts[:end])
        if package in packages:
            found = next((cls for cls in _exported(package) if cls.name == reference), None)
            if found is not None:
                return found
    return None


def benchmark_class(reference: str) -> type[Benchmark]:
    """The benchmark a `--benchmark` value names: a built-in name, a benchmark file, a data
    folder in a built-in benchmark's layout, or `package.module:Class`."""
    named = builtin_named(reference)
    if named is not None:
        return named
    builtin = builtin_benchmarks()
    if reference in builtin:
        return builtin[reference]
    path = Path(reference).expanduser()
    if path.is_dir():
        from turnbench.benchmarks.folder import benchmark_for_folder

        return benchmark_for_folder(path, builtin)
    if path.is_file():
        if path.suffix.lower() not in BENCHMARK_FILE_SUFFIXES:
            raise UserError(
                f"--benchmark {reference}: a benchmark file ends in .yaml, .yml or .json"
            )
        from turnbench.benchmarks.custom import benchmark_from_file

        return benchmark_from_file(path, reserved=builtin)
    if ":" in reference and not looks_like_path(reference):
        return _import_reference(reference)
    if looks_like_path(reference):
        if path.exists():  # (a device, a pipe, a socket)
            raise UserError(f"--benchmark {reference}: not a regular file nor a folder")
        raise UserError(f"--benchmark {reference}: no such file or folder")
    raise UserError(
        f"unknown benchmark {reference!r}; known benchmarks: {', '.join(builtin)} (or a "
        "benchmark file (.yaml, .yml, .json), a data folder, or package.module:ClassName for "
        "a benchmark written elsewhere)"
    )


__all__ = [
    "Benchmark",
    "BenchmarkSettings",
    "benchmark_class",
    "builtin_benchmarks",
    "load_sources",
]
