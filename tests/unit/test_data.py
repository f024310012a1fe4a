"""Locating, verifying and downloading data files; extracting the MT-Bench-101 judge texts."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from turnbench.benchmarks import load_sources
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.mt_bench_101.extract import (
    extract_mtbench101_judge_texts,
    render_judge_texts_json,
)
from turnbench.errors import DataMissingError, UserError
from turnbench.testing.fake_server import FakeServer

PINNED_JUDGE_TEXTS_SHA = "73164304908cde34774db1c64ff8206ccf046eafd8162d626c8f1488167214ed"

SOURCES = load_sources()[1]  # every built-in benchmark's files, as `turnbench data` gives them


def mt_bench_files(*args, **kwargs) -> dict[str, Path]:
    return DataLocator(*args, datasets=SOURCES, **kwargs).require("mt-bench")


def synthetic_opencompass_source(texts: dict, marker: Path) -> str:
    """A module shaped like OpenCompass's mtbench101.py, with code that must never run."""
    lines = [
        "import json",
        f"open({str(marker)!r}, 'w').write('executed')  # proves the file is never run",
        f"skip_first_tasks = {texts['skip_first_turn_tasks']!r}",
        f"need_ref_tasks = {texts['reference_tasks']!r}",
        f"judge = {texts['judge_preamble']!r}",
        f"score_format = {texts['score_format']!r}",
    ]
    lines += [f"eval_{code} = {text!r}" for code, text in texts["task_rubrics"].items()]
    lines.append(
        "unique_prompt = {"
        + ", ".join(f"{code!r}: eval_{code}" for code in texts["task_rubrics"])
        + "}"
    )
    lines += [
        "def eval_prompt_construct(task, ref_answer, history):",
        "    if task in need_ref_tasks:",
        f"        t = {texts['user_prompt_template_with_reference']!r}.format(",
        "            history=history, prediction='{prediction}', ref_answer=ref_answer)",
        "    else:",
        f"        t = {texts['user_prompt_template']!r}.format(",
        "            history=history, prediction='{prediction}')",
        "    return judge, t",
    ]
    return "\n".join(lines) + "\n"


def test_extraction_reproduces_the_pinned_file_without_running_the_source(data_dir, tmp_path):
    pinned = (data_dir / "mt_bench_101/judge_prompts.json").read_bytes()
    marker = tmp_path / "executed"
    source = synthetic_opencompass_source(json.loads(pinned), marker)
    rendered = render_judge_texts_json(extract_mtbench101_judge_texts(source))
    assert rendered == pinned
    assert hashlib.sha256(rendered).hexdigest() == PINNED_JUDGE_TEXTS_SHA
    assert not marker.exists()


def test_extraction_refuses_a_source_without_the_texts():
    with pytest.raises(UserError, match=r"not found|missing"):
        extract_mtbench101_judge_texts("x = 1\n")


def copy_mt_bench(data_dir: Path, target: Path) -> Path:
    shutil.copytree(data_dir / "mt_bench", target / "mt_bench")
    return target


def test_search_order_flag_then_environment_then_cache(data_dir, tmp_path, monkeypatch):
    flag_dir = copy_mt_bench(data_dir, tmp_path / "flag")
    env_dir = copy_mt_bench(data_dir, tmp_path / "env")
    monkeypatch.setenv("TURNBENCH_DATA_DIR", str(env_dir))
    cache = tmp_path / "cache"
    found = DataLocator(flag_dir, allow_download=False, cache_dir=cache, datasets=SOURCES).require(
        "mt-bench"
    )
    assert all(str(path).startswith(str(flag_dir)) for path in found.values())
    found = DataLocator(None, allow_download=False, cache_dir=cache, datasets=SOURCES).require(
        "mt-bench"
    )
    assert all(str(path).startswith(str(env_dir)) for path in found.values())
    monkeypatch.delenv("TURNBENCH_DATA_DIR")
    copy_mt_bench(data_dir, cache)
    found = DataLocator(None, allow_download=False, cache_dir=cache, datasets=SOURCES).require(
        "mt-bench"
    )
    assert all(str(path).startswith(str(cache)) for path in found.values())


def test_checksum_mismatch_is_refused(data_dir, tmp_path):
    folder = copy_mt_bench(data_dir, tmp_path / "data")
    question = folder / "mt_bench/question.jsonl"
    question.write_bytes(question.read_bytes().replace(b"Hawaii", b"Hawaiii", 1))
    locator = DataLocator(
        folder, allow_download=False, cache_dir=tmp_path / "cache", datasets=SOURCES
    )
    with pytest.raises(UserError, match="does not match its pinned checksum"):
        locator.require("mt-bench")


def serve_upstream(data_dir: Path, extra: dict[str, bytes] | None = None) -> FakeServer:
    """The pinned upstream paths, served on 127.0.0.1 from the shared copies."""
    _, datasets = load_sources()
    files = {
        entry.url: (data_dir / entry.path).read_bytes()
        for entry in datasets["mt-bench"] + datasets["mt-bench-101"]
        if entry.extract is None
    }
    files.update(extra or {})
    return FakeServer(files=files)


def test_download_fetches_and_verifies_into_the_cache(data_dir, tmp_path, monkeypatch):
    with serve_upstream(data_dir) as server:
        monkeypatch.setenv("TURNBENCH_DOWNLOAD_BASE_URL", f"http://127.0.0.1:{server.port}")
        monkeypatch.delenv("TURNBENCH_DATA_DIR", raising=False)
        cache = tmp_path / "cache"
        found = mt_bench_files(None, cache_dir=cache)
        assert server.counts["file"] == 3
        assert (cache / "mt_bench/question.jsonl").read_bytes() == (
            data_dir / "mt_bench/question.jsonl"
        ).read_bytes()
        assert all(str(path).startswith(str(cache)) for path in found.values())
        DataLocator(None, cache_dir=cache, datasets=SOURCES).require(
            "mt-bench"
        )  # present: nothing fetched
        assert server.counts["file"] == 3


def test_download_with_extraction(data_dir, tmp_path, monkeypatch):
    pinned = (data_dir / "mt_bench_101/judge_prompts.json").read_bytes()
    source = synthetic_opencompass_source(json.loads(pinned), tmp_path / "never").encode()
    _, datasets = load_sources()
    entries = []
    for entry in datasets["mt-bench-101"]:
        if entry.extract:  # our stand-in source
            entry = dataclasses.replace(entry, source_sha256=hashlib.sha256(source).hexdigest())
            url = entry.url
        entries.append(entry)
    with serve_upstream(data_dir, {url: source}) as server:
        monkeypatch.setenv("TURNBENCH_DOWNLOAD_BASE_URL", f"http://127.0.0.1:{server.port}")
        monkeypatch.delenv("TURNBENCH_DATA_DIR", raising=False)
        cache = tmp_path / "cache"
        DataLocator(None, cache_dir=cache, datasets={"mt-bench-101": entries}).require(
            "mt-bench-101"
        )
    assert (cache / "mt_bench_101/judge_prompts.json").read_bytes() == pinned


def test_download_refuses_a_tampered_file(data_dir, tmp_path, monkeypatch):
    _, datasets = load_sources()
    question = next(e for e in datasets["mt-bench"] if e.path.endswith("question.jsonl"))
    tampered = {question.url: b'{"question_id": 81}\n'}
    with serve_upstream(data_dir, tampered) as server:
        monkeypatch.setenv("TURNBENCH_DOWNLOAD_BASE_URL", f"http://127.0.0.1:{server.port}")
        monkeypatch.delenv("TURNBENCH_DATA_DIR", raising=False)
        with pytest.raises(UserError, match="nothing was saved"):
            mt_bench_files(None, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache/mt_bench/question.jsonl").exists()


def test_missing_data_without_network_names_both_remedies(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNBENCH_DOWNLOAD_BASE_URL", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.delenv("TURNBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataMissingError) as caught:
        mt_bench_files(None, cache_dir=tmp_path / "cache")
    message = caught.value.message
    assert "turnbench data download" in message and "--data-dir" in message
    assert "TURNBENCH_DATA_DIR" in message and "\n" not in message
