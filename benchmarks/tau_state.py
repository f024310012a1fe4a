"""What a tau-bench conversation's database costs: copy-on-write states against full copies.

For each domain: loading (parse and freeze), replaying every gold action of every task with
the final hash (what the golden test does), then for the state after the test split's
longest gold replay the hash (`DatabaseState.sha256`: shared slices of the base's canonical
text plus the records it changed) against the floor a full copy would pay (`json.dumps` of
the merged database and its sha256), the diff against a fresh state, and the memory of 200
states in flight (each task's gold state, four trials of 50 tasks) against a deep copy of
the database each (what conversations would hold without copy-on-write). Figures are the
median of `--rounds` timings in this run; ratios are what count on a noisy machine.

    TURNBENCH_DATA_DIR=../shared/data .venv/bin/python benchmarks/tau_state.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnbench.benchmarks.tau_bench.database import Database, DatabaseState, copy_json
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.tasks import gold_state, load_tasks, replay
from turnbench.benchmarks.tau_bench.tools import ToolSet

SPLITS = {"retail": ("test", "train", "dev"), "airline": ("test",)}


def median_ms(action: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def full_hash(state: DatabaseState) -> str:
    text = json.dumps(state.as_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def measure(domain: str, root: Path, rounds: int) -> None:
    folder = root / "tau_bench" / domain
    started = time.perf_counter()
    base = Database.load({table: folder / f"{table}.json" for table in TABLES[domain]})
    loaded = time.perf_counter() - started
    tools = ToolSet.for_domain(domain, json.loads((folder / "tools.json").read_text("utf-8")))
    started = time.perf_counter()
    DatabaseState.fresh(base).sha256()  # (the base's canonical text, made once)
    first = time.perf_counter() - started
    tasks = {split: load_tasks(folder / f"tasks_{split}.json") for split in SPLITS[domain]}
    started = time.perf_counter()
    replayed = 0
    for found in tasks.values():
        for task in found:
            state, _ = replay(base, tools, task)
            state.sha256()
            replayed += 1
    golden = time.perf_counter() - started
    longest = max(tasks["test"], key=lambda task: len(task.actions))
    state = gold_state(base, tools, longest)
    assert state.sha256() == full_hash(state)
    ours = median_ms(state.sha256, rounds)
    floor = median_ms(lambda: full_hash(state), max(3, rounds // 4))
    fresh = DatabaseState.fresh(base)
    diff = median_ms(lambda: fresh.diff(state), rounds)
    tracemalloc.start()
    states = [gold_state(base, tools, task) for task in tasks["test"][:50] for _ in range(4)]
    in_flight = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    tracemalloc.start()
    whole = copy_json(base.tables)
    copied = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del whole
    print(f"{domain}: load and freeze {loaded * 1000:.0f} ms, canonical text {first * 1000:.0f} ms")
    print(f"  golden replay of {replayed} tasks with their hashes: {golden:.2f} s")
    print(
        f"  hash of a changed state: {ours:.2f} ms; json.dumps + sha256 of the merged "
        f"database {floor:.1f} ms (x{floor / ours:.0f})"
    )
    print(f"  diff against a fresh state: {diff:.3f} ms, {len(fresh.diff(state))} fields")
    print(
        f"  {len(states)} states in flight: {in_flight / 1e6:.2f} MB; a deep copy each "
        f"{len(states) * copied / 1e6:.0f} MB ({copied / 1e6:.1f} MB a copy, strings shared; "
        f"x{len(states) * copied / max(in_flight, 1):.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="timings per figure")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data")),
        help="the data directory holding tau_bench/ (default: $TURNBENCH_DATA_DIR)",
    )
    args = parser.parse_args()
    for domain in SPLITS:
        measure(domain, args.data_dir, args.rounds)


if __name__ == "__main__":
    main()
