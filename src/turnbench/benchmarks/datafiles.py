"""Locating, downloading and verifying benchmark data files.

Where the files are: in the folder the user named (--data-dir, else $TURNBENCH_DATA_DIR), or,
when none is named, in the user cache directory. A file found is verified against its
pinned sha256 before use. Missing files are fetched into the cache from their pinned
upstream commit (and verified) when a run needs them or on `turnbench data download`.

A folder the user names is used or refused, never bypassed: a file missing there, or there
but no regular file (a directory, a device, a link to /dev/zero or to nothing), is one error
naming it and the folder; nothing is looked up elsewhere and nothing is downloaded (a run
that silently read the cache or the network instead would not be reading what the user
pointed it at: issue 44). Every built-in benchmark's pinned files go through `require_files`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from turnbench.errors import DataMissingError, UserError
from turnbench.textio import input_sha256

ENV_DATA_DIR = "TURNBENCH_DATA_DIR"
ENV_DOWNLOAD_BASE = "TURNBENCH_DOWNLOAD_BASE_URL"


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to a data directory, e.g. "mt_bench/question.jsonl"
    url: str  # relative to the download base URL
    sha256: str
    source_sha256: str | None = None  # when the file is extracted from a downloaded source
    extract: str | None = None


#: Upstream files are fetched from here (their pinned commits are in each benchmark's
#: `sources.json`); TURNBENCH_DOWNLOAD_BASE_URL replaces it (mirrors, tests).
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("turnbench")) / "data"


def sha256_file(path: Path) -> str:
    """The sha256 of a data or input file: a regular file under the input size limit
    (textio.open_input; anything else is one UserError)."""
    return input_sha256(path)


class DataLocator:
    """Finds verified data files; remembers checksums for provenance."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        allow_download: bool = True,
        datasets: dict[str, list[DataFile]] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.allow_download = allow_download
        self.default_base_url = DEFAULT_BASE_URL
        self._datasets = datasets
        self._added: dict[str, list[DataFile]] = {}
        self.cache_dir = cache_dir or default_cache_dir()
        self.checksums: dict[str, str] = {}
        self.unpinned: set[str] = set()  # names of files recorded by `record_unpinned`

    @property
    def datasets(self) -> dict[str, list[DataFile]]:
        """The data files it was given by benchmark name (`turnbench data` gives every
        built-in benchmark's: `turnbench.benchmarks.load_sources`), with those
        `require_files` was asked for. A run of one benchmark gives none: it names its own
        files, and reading every benchmark's would import every benchmark package."""
        if self._datasets is None:
            return self._added
        return self._datasets

    def named_dir(self) -> tuple[str, Path] | None:
        """The data folder the user named, with how it was named: --data-dir, else
        $TURNBENCH_DATA_DIR (the flag is the more specific); None when neither is given."""
        if self.data_dir is not None:
            return "--data-dir", Path(self.data_dir).expanduser()
        env = os.environ.get(ENV_DATA_DIR)
        if env:
            return f"${ENV_DATA_DIR}", Path(env).expanduser()
        return None

    def search_dirs(self) -> list[tuple[str, Path]]:
        """Where data files are read from: the named folder alone, else the cache."""
        named = self.named_dir()
        return [named] if named is not None else [("cache", self.cache_dir)]

    def _find(self, relative: str) -> Path | None:
        candidate = self.search_dirs()[0][1] / relative
        return candidate if candidate.is_file() else None

    def problem(self, relative: str) -> str | None:
        """What is wrong with `relative` in the named folder (missing, or no regular file),
        or None (no folder named: the cache is turnbench's own, filled by downloads)."""
        named = self.named_dir()
        return None if named is None else file_problem(named[1] / relative)

    def _verify(self, entry: DataFile, path: Path) -> None:
        actual = sha256_file(path)
        if actual != entry.sha256:
            raise UserError(
                f"data file {path} does not match its pinned checksum (sha256 {actual}, "
                f"expected {entry.sha256}): it is corrupt or a different version. Delete it "
                "and run `turnbench data download`, or point --data-dir at the pinned files."
            )
        self.checksums[entry.path] = actual

    def record_unpinned(self, files: dict[str, Path]) -> dict[str, Path]:
        """Files a benchmark brings itself (a user's benchmark file or data folder): they
        are deliberately not checked against any pin; their checksums are recorded for
        provenance (and the run identity) instead. Returns `files`."""
        for name, path in files.items():
            try:
                self.checksums[name] = sha256_file(path)
            except OSError as error:
                raise UserError(f"cannot read {path}: {error.strerror or error}") from None
            self.unpinned.add(name)
        return files

    def require(self, dataset: str) -> dict[str, Path]:
        """Every file of a built-in benchmark's `dataset`, verified."""
        if dataset not in self.datasets:
            raise UserError(f"no data files are registered for benchmark {dataset!r}")
        return self.require_files(dataset, self.datasets[dataset])

    def require_files(self, dataset: str, entries: list[DataFile]) -> dict[str, Path]:
        """Every file of `entries`, verified, downloading what is missing."""
        known = self._added if self._datasets is None else self._datasets
        known.setdefault(dataset, entries)
        named = self.named_dir()
        if named is not None:
            problems = [
                f"{entry.path} {problem}"
                for entry in entries
                if (problem := self.problem(entry.path)) is not None
            ]
            if problems:
                raise self._named_error(dataset, named, problems)
        missing = [entry for entry in entries if self._find(entry.path) is None]
        if missing:
            if not self.allow_download:
                raise self._missing_error(dataset, missing, reason="downloads are disabled")
            try:
                self.download(dataset, only=missing)
            except DataMissingError:
                raise
            except OSError as error:  # urllib.error.URLError is one
                raise self._missing_error(dataset, missing, reason=str(error)) from None
        located: dict[str, Path] = {}
        for entry in entries:
            path = self._find(entry.path)
            assert path is not None
            self._verify(entry, path)
            located[entry.path] = path
        return located

    def base_url(self) -> str:
        return os.environ.get(ENV_DOWNLOAD_BASE, self.default_base_url).rstrip("/")

    def download(
        self, dataset: str, only: list[DataFile] | None = None, force: bool = False
    ) -> list[Path]:
        """Fetch the pinned files of `dataset` into the cache; returns the written paths."""
        written = []
        for entry in only if only is not None else self.datasets[dataset]:
            target = self.cache_dir / entry.path
            if target.is_file() and not force and sha256_file(target) == entry.sha256:
                continue
            url = self.base_url() + entry.url
            payload = _fetch(url)
            payload = self._check_payload(entry, url, payload)
            target.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(target, payload)
            written.append(target)
        return written

    @staticmethod
    def _check_payload(entry: DataFile, url: str, payload: bytes) -> bytes:
        """The file's bytes from what was downloaded: as they are, or made by the entry's
        extractor (which an extractor may read from further files beside the source: a
        benchmark's tool schemas, one module each). The result must match the pin either way; a
        source with a pin of its own is checked first."""
        if entry.extract is not None:
            from turnbench.benchmarks.extractors import extractor

            source_sha = hashlib.sha256(payload).hexdigest()
            if entry.source_sha256 is not None and source_sha != entry.source_sha256:
                raise UserError(
                    f"downloaded {url} has sha256 {source_sha}, expected "
                    f"{entry.source_sha256}; nothing was saved."
                )
            function = extractor(entry.extract)
            if getattr(function, "needs_fetch", False):
                folder = url.rsplit("/", 1)[0]
                payload = function(payload, lambda name: _fetch(f"{folder}/{name}"))  # type: ignore[call-arg]
            else:
                payload = function(payload)
        actual = hashlib.sha256(payload).hexdigest()
        if actual != entry.sha256:
            raise UserError(
                f"downloaded {entry.path} from {url} has sha256 {actual}, expected "
                f"{entry.sha256}; nothing was saved."
            )
        return payload

    def _named_error(
        self, dataset: str, named: tuple[str, Path], problems: list[str]
    ) -> DataMissingError:
        label, folder = named
        return DataMissingError(
            f"the {dataset} data files in the folder named by {label} ({folder}) cannot be "
            f"used: {'; '.join(problems)}. A folder you name is the only place looked: copy "
            f"the pinned files there (`turnbench data download --benchmark {dataset}` fetches "
            f"them into the cache, {self.cache_dir}), or name another folder."
        )

    def _missing_error(
        self, dataset: str, missing: list[DataFile], reason: str
    ) -> DataMissingError:
        looked = "; ".join(f"{label} {path}" for label, path in self.search_dirs())
        files = ", ".join(entry.path for entry in missing)
        return DataMissingError(
            f"The {dataset} data files are missing ({files}). Looked in: {looked}. "
            f"Downloading them from {self.base_url()} failed ({reason}). Either run "
            f"`turnbench data download --benchmark {dataset}` on a machine with internet "
            f"access and copy its cache folder ({self.cache_dir}) here, or point --data-dir "
            f"or ${ENV_DATA_DIR} at a folder that holds these files."
        )


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a data file ("is missing", "is not a regular file (a
    character device)"), or None. A link is followed: one to a regular file is that file."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "is a link to nothing" if path.is_symlink() else "is missing"
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if stat.S_ISREG(mode):
        return None
    link = f"a link to {os.path.realpath(path)}, " if path.is_symlink() else ""
    return f"is not a regular file ({link}{_kind(mode)})"


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


#: the largest data file downloaded (the biggest pinned one is a few MB)
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024


def _fetch(url: str) -> bytes:
    """One download, at most MAX_DOWNLOAD_BYTES."""
    import urllib.request  # (here: only a download needs it)

    with urllib.request.urlopen(url, timeout=60) as response:
        payload = response.read(MAX_DOWNLOAD_BYTES + 1)
    if len(payload) > MAX_DOWNLOAD_BYTES:
        raise UserError(f"downloaded {url} is larger than {MAX_DOWNLOAD_BYTES} bytes; refused")
    return bytes(payload)


def _atomic_write(target: Path, payload: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".download-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
