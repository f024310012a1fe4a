"""tau-bench conversations against scripted fake servers: the performance figures of issue 37.

Two measurements, each through the real CLI (`python -m turnbench ...`) in a child process,
the fake servers in this one:

1. `run --benchmark tau-bench-airline`, every task x `--simulations K`, the agent played by
   `PerfectAgent` (the task's gold actions, one tool call per request, then the outputs) and
   the user by `TauUser`, both answering after `--latency` seconds. Every conversation is in
   flight at once, so the ideal wall time is the longest conversation's sequential requests
   (its agent and user requests) x the latency. Printed beside it: the run's `wall_seconds`
   (the invocation from its config record: preflight, conversations, results), the whole
   command, the conversations alone (the first request sent to the last conversation
   scored, read from the log), the latency the client saw, and the client's CPU (the child's
   user + system time) per conversation step (a request or a tool call).
2. `import --format tau-bench` of `--trajectories` recorded trajectories (upstream's results
   file: the gold actions of the airline tasks, round robin, trials numbered per task), each
   re-scored by replaying its tool calls on a fresh database: the command's wall time.

With `--baseline-src DIR` (another checkout's `src/`, e.g. a `git archive` of older code)
the child processes of every measurement run that source too, in the same sitting: `--rounds`
rounds of the conversations, alternating which code goes first, then the medians of the
client's CPU per step and the log's bytes (per conversation and per record kind). The fake
servers and the reading of the logs are this checkout's code either way.

With `--instructions` the conversations' child runs under valgrind's cachegrind (no cache
simulation), and the figure compared is its instructions per step: the same on a loaded
machine as on an idle one (its CPU time is not, nor is the CPU time of a child under valgrind,
which is not printed then). `apt-get install valgrind`; a run takes about 20 times longer.

    TURNBENCH_DATA_DIR=../shared/data python benchmarks/tau_bench_fakes.py --out /tmp/tau-fakes \
        [--rounds 5 --baseline-src /tmp/old/src] [--trajectories 0] [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from turnbench.benchmarks.tau_bench.database import Database
from turnbench.benchmarks.tau_bench.domain import TABLES
from turnbench.benchmarks.tau_bench.fakes import PerfectAgent, TauUser, gold_trajectory
from turnbench.journal.threads import with_whole_requests
from turnbench.testing.fake_server import FakeServer


def turnbench(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "turnbench", *arguments]


def child_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


#: the child under valgrind's cachegrind, counting its instructions (`--instructions`)
VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def timed(
    command: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> tuple[float, float, str]:
    """(wall seconds, the child's CPU seconds, its standard error) of one command; exits on
    an unexpected code."""
    cpu, started = child_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in ok:
        sys.exit(f"exit {done.returncode}: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    return wall, child_cpu() - cpu, done.stderr


def instructions(stderr: str) -> int:
    """The instructions valgrind counted (its summary's `I refs`)."""
    found = re.search(r"I\s+refs:\s+([\d,]+)", stderr)
    if found is None:
        sys.exit(f"valgrind's summary is missing:\n{stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_step(figures: dict[str, Any]) -> float:
    """The figure compared per step: thousands of instructions, else milliseconds of CPU."""
    if figures.get("instructions") is not None:
        return figures["instructions"] / figures["steps"] / 1000
    return figures["cpu"] / figures["steps"] * 1000


def with_source(env: dict[str, str], src: Path | None) -> dict[str, str]:
    """`env` for a child that imports turnbench from `src` (this checkout's when None)."""
    if src is None:
        return env
    return dict(env, PYTHONPATH=str(src.resolve()))


def imported_from(env: dict[str, str]) -> str:
    """Where a child with `env` imports turnbench from."""
    done = subprocess.run(
        [sys.executable, "-c", "import turnbench; print(turnbench.__file__)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def log_bytes(out: Path) -> tuple[int, dict[str, tuple[int, int]]]:
    """The log's size, and (records, bytes) per record kind."""
    kinds: dict[str, tuple[int, int]] = {}
    total = 0
    with (out / "log.jsonl").open("rb") as lines:
        for line in lines:
            kind = json.loads(line)["kind"]
            count, size = kinds.get(kind, (0, 0))
            kinds[kind] = (count + 1, size + len(line))
            total += len(line)
    return total, kinds


def log_records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "log.jsonl").read_text("utf-8").splitlines()
    return list(with_whole_requests(json.loads(line) for line in lines))


def conversations(
    out: Path, data: Path, simulations: int, latency: float, env, counted: bool = False
) -> dict[str, Any]:
    """Runs the conversations (`counted`: under valgrind), prints their figures and returns
    the ones compared."""
    tasks = json.loads((data / "tau_bench" / "airline" / "tasks_test.json").read_text("utf-8"))
    with (
        FakeServer(responder=PerfectAgent(tasks), latency=latency) as agent,
        FakeServer(responder=TauUser(tasks), latency=latency) as user,
    ):
        server_cpu = time.process_time()
        wall, cpu, stderr = timed(
            (VALGRIND if counted else []) + turnbench(
                "run", "--benchmark", "tau-bench-airline", "--simulations", str(simulations),
                "--model", "openai/agent", "--model-base-url", agent.base_url,
                "--user-model", "openai/user", "--user-base-url", user.base_url,
                "--concurrency", "1000", "--no-progress", "--out", str(out),
            ),
            env,
        )  # fmt: skip
        server_cpu = time.process_time() - server_cpu
        requests = {"agent": len(agent.requests), "user": len(user.requests)}
    results = json.loads((out / "results.json").read_text("utf-8"))
    records = log_records(out)
    sequential: Counter[tuple[Any, Any]] = Counter()
    tool_steps = 0
    for record in records:
        if record["kind"] in ("answer", "user_turn"):
            sequential[(record["sample_id"], record.get("trial"))] += 1
        tool_steps += record["kind"] == "step"
    longest = max(sequential.values())
    asked = [r for r in records if r["kind"] in ("answer", "user_turn")]
    first_sent = min(r["ts"] - r["latency_s"] for r in asked)
    phase = max(r["ts"] for r in records if r["kind"] == "sample") - first_sent
    latencies = sorted(r["latency_s"] for r in asked)
    ideal = longest * latency
    steps = sum(requests.values()) + tool_steps
    print(f"conversations: {len(tasks)} airline tasks x {simulations} trials, "
          f"{latency * 1000:.0f} ms per answer")  # fmt: skip
    print(f"  requests: agent {requests['agent']}, user {requests['user']}; "
          f"tool steps {tool_steps}")  # fmt: skip
    print(f"  overall {results['overall']}, pass_hat_k {results['pass_hat_k']}")
    print(
        f"  ideal {ideal:.2f} s (the longest conversation: {longest} sequential requests); "
        f"wall_seconds {results['wall_seconds']:.2f} s "
        f"(x{results['wall_seconds'] / ideal:.2f} of ideal); whole command {wall:.2f} s"
    )
    print(
        f"  the conversations (first request sent to last conversation scored) {phase:.2f} s "
        f"(x{phase / ideal:.2f} of ideal); a request's latency as the client saw it: median "
        f"{latencies[len(latencies) // 2] * 1000:.0f} ms, "
        f"p90 {latencies[len(latencies) * 9 // 10] * 1000:.0f} ms"
    )
    counted_instructions = instructions(stderr) if counted else None
    if counted_instructions is None:
        print(f"  client CPU {cpu:.2f} s: {cpu / steps * 1000:.2f} ms per step ({steps} steps); "
              f"the fake servers' CPU {server_cpu:.2f} s")  # fmt: skip
    else:
        thousands = counted_instructions / steps / 1000
        print(f"  client instructions {counted_instructions:,}: "
              f"{thousands:,.1f} thousand per step ({steps} steps)")  # fmt: skip
    size, kinds = log_bytes(out)
    samples = kinds.get("sample", (0, 0))[0]
    print(f"  log {size:,} bytes: {size / samples:,.0f} per conversation ({samples})")
    return {
        "cpu": cpu,
        "instructions": counted_instructions,
        "steps": steps,
        "phase": phase,
        "ideal": ideal,
        "log_bytes": size,
        "conversations": samples,
        "kinds": kinds,
    }


def what_per_step(figures: dict[str, Any]) -> str:
    if figures.get("instructions") is not None:
        return "client instructions per step (thousands)"
    return "client CPU per step (ms)"


def compare(rounds: dict[str, list[dict[str, Any]]]) -> None:
    """The medians of each code's rounds, and its log's bytes per record kind; with a
    baseline, the median of the rounds' ratios (each round runs both codes back to back, so
    the ratio is less moved by a load that changes between rounds)."""
    print(f"summary over {len(next(iter(rounds.values())))} round(s), median (min-max)")
    for label, figures in rounds.items():
        steps = [per_step(f) for f in figures]
        what = what_per_step(figures[0])
        phase = [f["phase"] / f["ideal"] for f in figures]
        logged = [f["log_bytes"] / f["conversations"] for f in figures]
        print(f"  {label}")
        print(
            f"    {what} {statistics.median(steps):.3f} "
            f"({min(steps):.3f}-{max(steps):.3f}); the conversations "
            f"x{statistics.median(phase):.2f} of ideal ({min(phase):.2f}-{max(phase):.2f})"
        )
        print(
            f"    log bytes per conversation {statistics.median(logged):,.0f} "
            f"({min(logged):,.0f}-{max(logged):,.0f})"
        )
        last = figures[-1]["kinds"]
        print("    last round's log by kind: " + "; ".join(
            f"{kind} {count} x {size / count:,.0f} = {size:,}"
            for kind, (count, size) in last.items()
        ))  # fmt: skip


def rescoring(out: Path, data: Path, count: int, env) -> None:
    root = data / "tau_bench" / "airline"
    base = Database.load({t: root / f"{t}.json" for t in TABLES["airline"]})
    task_count = len(json.loads((root / "tasks_test.json").read_text("utf-8")))
    entries = [
        gold_trajectory(data, "airline", n % task_count, trial=n // task_count, base=base)
        for n in range(count)
    ]
    source = out.with_suffix(".json")
    source.write_text(json.dumps(entries), "utf-8")
    wall, cpu, _ = timed(
        turnbench("import", "--format", "tau-bench", "--benchmark", "tau-bench-airline",
                  str(source), "--out", str(out)),
        env,
        ok=(0, 1),  # (1: tasks with fewer trials than others are incomplete)
    )  # fmt: skip
    samples = [r for r in log_records(out) if r["kind"] == "sample"]
    rewards = Counter(r["reward"] for r in samples)
    print(f"re-scoring: {count} recorded trajectories ({source.stat().st_size / 1e6:.1f} MB)")
    print(f"  conversations scored {len(samples)}, rewards {dict(rewards)}")
    print(f"  whole command {wall:.2f} s, CPU {cpu:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="A new folder for the runs.")
    parser.add_argument("--simulations", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.05, help="Seconds per answer.")
    parser.add_argument("--trajectories", type=int, default=200, help="0: no re-scoring.")
    parser.add_argument("--rounds", type=int, default=1, help="Runs of the conversations.")
    parser.add_argument("--baseline-src", type=Path, help="Another checkout's src/ to compare.")
    parser.add_argument(
        "--instructions", action="store_true", help="Count the conversations' instructions."
    )
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("valgrind is missing: apt-get install valgrind")
    data = Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data"))
    env = dict(os.environ, TURNBENCH_DATA_DIR=str(data))
    env.setdefault("OPENAI_API_KEY", "unused")
    sources: list[tuple[str, dict[str, str]]] = [("this code", env)]
    if args.baseline_src is not None:
        sources.append((f"baseline {args.baseline_src}", with_source(env, args.baseline_src)))
    for label, source_env in sources:
        print(f"{label}: turnbench from {imported_from(source_env)}")
    args.out.mkdir(parents=True, exist_ok=False)
    rounds: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in sources}
    for number in range(args.rounds):
        order = sources if number % 2 == 0 else sources[::-1]
        for index, (label, source_env) in enumerate(order):
            name = "run" if len(sources) == 1 and args.rounds == 1 else f"run-{number}-{index}"
            print(f"round {number + 1}, {label}:")
            rounds[label].append(
                conversations(
                    args.out / name,
                    data,
                    args.simulations,
                    args.latency,
                    source_env,
                    counted=args.instructions,
                )
            )
    if args.rounds > 1 or len(sources) > 1:
        compare(rounds)
    if len(sources) > 1:
        this, base = (rounds[label] for label, _ in sources)
        ratios = sorted(per_step(h) / per_step(b) for h, b in zip(this, base, strict=True))
        listed = ", ".join(f"{r:.3f}" for r in ratios)
        print(
            f"  {what_per_step(this[0])}, this code / baseline, round by round: "
            f"median x{statistics.median(ratios):.3f} ({listed})"
        )
    if args.trajectories > 0:
        for index, (label, source_env) in enumerate(sources):
            name = "imported" if len(sources) == 1 else f"imported-{index}"
            print(f"{label}:")
            rescoring(args.out / name, data, args.trajectories, source_env)


if __name__ == "__main__":
    main()
