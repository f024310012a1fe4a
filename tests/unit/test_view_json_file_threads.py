"""The viewer's results.json reader shared by two threads (CI, 2026-12-06): the cache warmer
and a request thread both read a finished run's results.json; the first set the file's
new state before parsing it, so the second, arriving mid-parse, took "unchanged" for an
answer and got no results: `GET /api/runs` called a finished run incomplete. (The files
here are not named results.json: the suite checks every results.json against its schema.)"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from turnbench.view import runs
from turnbench.view.runs import _JsonFile

RESULTS = {"benchmark": "mt-bench", "complete": True}


def test_a_reader_arriving_mid_parse_gets_the_parsed_file_not_none(tmp_path: Path, monkeypatch):
    path = tmp_path / "object.json"
    path.write_text(json.dumps(RESULTS))
    entered, release = threading.Event(), threading.Event()
    real = runs.loads_json

    def slow_first_parse(text: str):  # the first parse waits until the test lets it go
        if not entered.is_set():
            entered.set()
            release.wait(timeout=5)
        return real(text)

    monkeypatch.setattr(runs, "loads_json", slow_first_parse)
    shared = _JsonFile(path)
    got: dict[str, object] = {}
    first = threading.Thread(target=lambda: got.update(first=shared.read()))
    second = threading.Thread(target=lambda: got.update(second=shared.read()))
    first.start()
    assert entered.wait(timeout=5)
    second.start()
    second.join(timeout=0.5)  # a reader that does not wait for the parse answers by now
    release.set()
    first.join(timeout=5)
    second.join(timeout=5)
    assert got == {"first": RESULTS, "second": RESULTS}


def test_many_readers_of_a_changing_file_each_get_a_whole_object(tmp_path: Path):
    """Readers racing a writer that replaces the file: each read is the old object or the
    new one, never None (the file always exists and always holds an object)."""
    path = tmp_path / "object.json"
    path.write_text(json.dumps({"n": 0}))
    shared = _JsonFile(path)
    seen: list[object] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(shared.read())

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for n in range(1, 200):
        spare = tmp_path / "object.json.tmp"
        spare.write_text(json.dumps({"n": n, "pad": "x" * (n * 50)}))
        spare.replace(path)
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    assert seen and all(isinstance(value, dict) and "n" in value for value in seen)
