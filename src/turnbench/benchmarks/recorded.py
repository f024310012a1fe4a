"""Which benchmark class reads a finished run, without running code the run directory names.

A run records its benchmark's name and, for a benchmark that is not a built-in one, a
reference (`provenance.benchmark_ref`): a benchmark file's or data folder's path, or a
plug-in's `package.module:ClassName`. A run directory is often someone else's (sent,
downloaded), so what it records is data: importing its plug-in reference would run any
module it names (one planted beside it, say) the moment `report`, `export` or `load_run`
read it. Here a recorded reference only selects among what is already trusted: built-in
benchmarks through a fixed table, and benchmark files and data folders, which are data read
by validated loaders. A plug-in is imported only when the user names it (`--benchmark` on
the reading commands, `benchmark=` in `load_run`), and only if it is the one the run
recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from turnbench.benchmarks import (
    BENCHMARK_FILE_SUFFIXES,
    Benchmark,
    benchmark_class,
    builtin_benchmarks,
    builtin_named,
    looks_like_path,
)
from turnbench.errors import UserError


def is_plugin_reference(reference: str) -> bool:
    """A `package.module:ClassName` reference (code), as opposed to a name or a path (data)."""
    return ":" in reference and not looks_like_path(reference)


def class_reference(cls: type[Benchmark]) -> str:
    """The `module:Class` form that finds `cls` (what a run of it records as a plug-in)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def builtin_reference(reference: str) -> type[Benchmark] | None:
    """The built-in benchmark `reference` names, by its name or its own `module:Class` (a
    run started with `--benchmark turnbench.benchmarks....:Class`, or the API given a
    built-in class): a fixed table, nothing imported by the string. A name is looked up in
    its own package first (a reader of one run needs one benchmark, not all of them)."""
    named = builtin_named(reference)
    if named is not None:
        return named
    table = builtin_benchmarks()
    if reference in table:
        return table[reference]
    for cls in table.values():
        package = ".".join(cls.__module__.split(".")[:3])  # turnbench.benchmarks.NAME
        if reference in (class_reference(cls), f"{package}:{cls.__qualname__}"):
            return cls
    return None


def plugin_named_by(reference: str | None) -> str | None:
    """The plug-in a run's recorded reference names, unless it is a built-in's own."""
    if reference is None or not is_plugin_reference(reference):
        return None
    return None if builtin_reference(reference) is not None else reference


@dataclass(frozen=True)
class NamedBenchmark:
    """A benchmark the user named for reading runs, and the class it names."""

    reference: str
    cls: type[Benchmark]

    @property
    def is_plugin(self) -> bool:
        return plugin_named_by(self.reference) is not None


def named_benchmark(value: str | type[Benchmark]) -> NamedBenchmark:
    """What the user named (a `--benchmark` value or a Benchmark class): the user's own
    choice, so a plug-in module it names is imported."""
    if isinstance(value, type):
        if not issubclass(value, Benchmark):
            raise UserError(f"benchmark={value!r} is not a turnbench Benchmark subclass")
        return NamedBenchmark(class_reference(value), value)
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"benchmark={value!r}: give a benchmark name, path or module:Class")
    return NamedBenchmark(value, benchmark_class(value))


def plugin_matches(named: NamedBenchmark, name: str, reference: str) -> bool:
    """`named` is the plug-in a run recorded as `reference` (under the benchmark `name`)."""
    return (
        named.is_plugin
        and reference in (named.reference, class_reference(named.cls))
        and named.cls.name == name
    )


def _data_benchmark(reference: str) -> type[Benchmark] | None:
    """A recorded benchmark file or data folder, read as data (never imported)."""
    path = Path(reference)
    if not path.is_absolute():
        return None  # runs record them absolute; anything else would depend on the cwd
    try:
        if path.is_dir():
            from turnbench.benchmarks.folder import benchmark_for_folder

            return benchmark_for_folder(path, builtin_benchmarks())
        if path.is_file() and path.suffix.lower() in BENCHMARK_FILE_SUFFIXES:
            from turnbench.benchmarks.custom import benchmark_from_file

            return benchmark_from_file(path)
    except (UserError, OSError):
        return None
    return None


def recorded_benchmark(name: str, reference: str | None) -> type[Benchmark] | None:
    """The class of a run that recorded no plug-in: its data benchmark (file or folder) if
    it is still there, else a built-in by name; None when neither is known (readers then use
    generic rules). Imports nothing a run names."""
    if reference:
        builtin = builtin_reference(reference)
        if builtin is not None:
            return builtin
        if not is_plugin_reference(reference):
            found = _data_benchmark(reference)
            if found is not None:
                return found
    return builtin_named(name) or builtin_benchmarks().get(name)


def plugin_not_named(path: Path, reference: str, how: str) -> UserError:
    """The one message for a plug-in run read without its plug-in named."""
    return UserError(
        f"{path}: this run used the plug-in benchmark {reference} (code outside turnbench); "
        "turnbench never imports code a run directory names. If you trust that module, name "
        f"it: {how.format(reference=reference)}"
    )


def plugin_mismatch(
    path: Path, named: NamedBenchmark, name: str, reference: str | None
) -> UserError:
    recorded = reference if reference and is_plugin_reference(reference) else name
    return UserError(
        f"{path}: the benchmark named ({named.reference}, benchmark {named.cls.name}) is not "
        f"the one this run recorded ({recorded}); name the run's own benchmark"
    )
