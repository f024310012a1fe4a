"""A user's own data for a built-in benchmark: `--benchmark path/to/folder`.

Translated or domain versions of a benchmark (a Japanese or a medical MT-Bench, say) keep the
benchmark's file layout (`Benchmark.folder_layout`: for MT-Bench, FastChat's `question.jsonl`,
`reference_answer/*.jsonl`, `judge_prompts.jsonl`). Such a folder runs with the benchmark's
rules and its own files. Those files are deliberately not checked against the published
pins (they are meant to differ): their checksums are recorded in provenance and in the run
identity instead, and every result says that the set is not the published benchmark. Which
benchmark a folder is for is told by its files (the layout's first file marks it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnbench.benchmarks.base import Benchmark, BenchmarkSettings, FolderFile
from turnbench.benchmarks.datafiles import DataFile, DataLocator, file_problem, sha256_file
from turnbench.errors import UserError


def marker(cls: type[Benchmark]) -> str | None:
    """The file that marks a folder in `cls`'s layout."""
    return cls.folder_layout[0].names[0] if cls.folder_layout else None


def _find(folder: Path, spec: FolderFile) -> Path | None:
    """The file of `spec` in `folder`, or None when it has none; one that is there but is no
    regular file is an error naming it (never taken as absent: a published file would be
    read in its place without a word)."""
    for name in spec.names:
        if "*" in name:
            for path in folder.glob(name):
                _refuse_irregular(folder, path)
            matches = sorted(p for p in folder.glob(name) if p.is_file())
            if len(matches) > 1:
                shown = ", ".join(str(p.relative_to(folder)) for p in matches)
                raise UserError(
                    f"{folder}: several files match {name} ({shown}); keep one, or name the "
                    f"one to use {spec.names[0]}"
                )
            if matches:
                return matches[0]
            continue
        path = folder / name
        if path.exists() or path.is_symlink():
            _refuse_irregular(folder, path)
            return path
    return None


def _refuse_irregular(folder: Path, path: Path) -> None:
    problem = file_problem(path)
    if problem is not None:
        raise UserError(f"{folder}: {path.relative_to(folder)} {problem}")


def folder_files(cls: type[Benchmark], folder: Path) -> dict[str, Path]:
    """The files of `cls`'s layout found in `folder` (every required one, or an error)."""
    found: dict[str, Path] = {}
    missing = []
    for spec in cls.folder_layout:
        path = _find(folder, spec)
        if path is not None:
            found[spec.key] = path.resolve()
        elif spec.required:
            missing.append(" or ".join(spec.names))
    if missing:
        raise UserError(
            f"{folder} is laid out as a {cls.name} folder but has no {', '.join(missing)}; "
            f"found: {listing(folder)}"
        )
    return found


def listing(folder: Path, limit: int = 12) -> str:
    """What a folder holds, briefly (folders end in '/'), for messages that refuse it."""
    try:
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    except OSError:
        return "nothing readable"
    if not entries:
        return "nothing (an empty folder)"
    more = f" and {len(entries) - limit} more" if len(entries) > limit else ""
    return ", ".join(entries[:limit]) + more


def folder_benchmark(base: type[Benchmark], folder: Path) -> type[Benchmark]:
    """`base`'s rules over the files of `folder` (a subclass bound to the folder)."""
    folder = folder.resolve()
    own = folder_files(base, folder)
    borrow = {spec.key for spec in base.folder_layout if spec.published_fallback}
    pins = {entry.path: entry.sha256 for entry in base.data_files()}
    fallback = [e for e in base.data_files() if e.path in borrow and e.path not in own]
    published = sorted(e.path for e in fallback)
    # byte-identical to the published files (a FastChat checkout, say): the published set
    identical = all(pins.get(key) == sha256_file(path) for key, path in own.items()) and all(
        key in own or key in published for key in pins
    )

    class FolderBenchmark(base):  # type: ignore[valid-type, misc]
        source_ref = str(folder)
        folder_path = folder
        own_files = own

        @classmethod
        def data_files(cls) -> list[DataFile]:
            """Only the published files the folder does not replace."""
            return list(fallback)

        @classmethod
        def locate_files(cls, locator: DataLocator) -> dict[str, Path]:
            pinned = locator.require_files(cls.name, fallback) if fallback else {}
            return {**pinned, **locator.record_unpinned(dict(own))}

        def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
            super().__init__({**files, **own}, settings)

        def results_header(self) -> dict[str, Any]:
            note = (
                f"the folder's files are byte-identical to the published {base.name} files"
                if identical
                else f"a user's data folder in {base.name}'s layout, run by its rules; not "
                f"the published {base.name} set"
            )
            return {
                **super().results_header(),
                "data_source": {
                    "published": identical,
                    "folder": str(folder),
                    "files": {key: str(path) for key, path in sorted(own.items())},
                    "published_files_used": published,
                    "note": note,
                },
            }

    FolderBenchmark.__name__ = f"{base.__name__}Folder"
    FolderBenchmark.__qualname__ = FolderBenchmark.__name__
    FolderBenchmark.__doc__ = f"{base.name} rules over the data folder {folder}."
    return FolderBenchmark


def benchmark_for_folder(folder: Path, builtins: dict[str, type[Benchmark]]) -> type[Benchmark]:
    """The built-in benchmark whose layout `folder` has, bound to the folder's files."""
    matching = [
        cls for cls in builtins.values() if (name := marker(cls)) and (folder / name).is_file()
    ]
    if len(matching) > 1:
        names = ", ".join(f"{marker(c)} ({c.name})" for c in matching)
        raise UserError(f"{folder} holds the files of several benchmarks: {names}; keep one")
    if not matching:
        known = ", ".join(f"{marker(c)} ({c.name})" for c in builtins.values() if marker(c))
        raise UserError(
            f"--benchmark {folder}: a benchmark folder must hold one of: {known}; none is there"
        )
    return folder_benchmark(matching[0], folder)
