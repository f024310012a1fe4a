"""Finding a benchmark: the built-in packages by name, or one written elsewhere.

A built-in benchmark is a subpackage of `turnbench.benchmarks` whose `__init__` exports
`BENCHMARK` (its class); nothing lists them by hand, so adding a benchmark means adding its
package. A benchmark written outside turnbench is named `package.module:ClassName` (a
`Benchmark` subclass importable from the current environment).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.errors import UserError


@cache
def builtin_benchmarks() -> dict[str, type[Benchmark]]:
    found: dict[str, type[Benchmark]] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "BENCHMARK", None)
        if isinstance(cls, type) and issubclass(cls, Benchmark):
            found[cls.name] = cls
    return dict(sorted(found.items()))


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


def benchmark_class(reference: str) -> type[Benchmark]:
    """The benchmark a `--benchmark` value names: a built-in name or `package.module:Class`."""
    builtin = builtin_benchmarks()
    if reference in builtin:
        return builtin[reference]
    if ":" in reference and not reference.startswith(("/", ".")):
        return _import_reference(reference)
    raise UserError(
        f"unknown benchmark {reference!r}; known benchmarks: {', '.join(builtin)} (or "
        "package.module:ClassName for a benchmark written elsewhere)"
    )


__all__ = ["Benchmark", "BenchmarkSettings", "benchmark_class", "builtin_benchmarks"]
