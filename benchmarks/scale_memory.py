"""Cost that grows only where it must: one run directory judging 8 models x 3615 MT-Bench-101
turns (28,920 judgments), its resume with nothing to send, and its report.

Writes 8 answer files (the golden answers, each model's text made distinct), starts the fake
OpenAI-compatible server as its own process (no latency, a fixed judge reply of realistic
length), then measures three commands, each a child process of its own so that its peak
resident memory (`ru_maxrss` of that one child, from os.wait4) and its wall time are its
own. A child's `ru_maxrss` is never below the peak of this process (the kernel carries it
over fork and exec), so this process stays small (the answers are written by a child) and
prints its own peak:

1. `turnbench judge --benchmark mt-bench-101 --answers DIR ...` (the run: 28,920 judgments);
2. the same command again (the resume: everything is done, nothing is sent). The run
   finished complete, so its results.state.json vouches for results.json and this resume
   reads neither the log nor the answer files (`turnbench.store.uptodate`);
3. the same command once more after removing results.state.json (a "full" resume: the log
   is read into its index, the answers are checked against it and the results computed
   anew, which is what a resume after any change costs);
4. `turnbench report RUN` (the HTML report and whatever it writes beside it).

Goals (issue 14, item 7): at most 300 MB resident for each; the resume within 2.5 s; the
report within 4 s and at most 6 MB of HTML in the report file.

With `--baseline-src DIR` (repeatable) another checkout's source (e.g. main before a
change) also resumes and reports, alternating with the one measured command by command,
and the ratios of their medians are printed. A baseline resumes a copy of the run directory
of its own (a code's results.state.json vouches only for results that code wrote, so one
shared directory would make every resume a full one); that copy's first, full resume, which
writes its state, is printed but not counted. Every code reports the same run directory.

    .venv/bin/python benchmarks/scale_memory.py [--models 8] [--rounds 2] [--keep DIR]
        [--baseline-src /tmp/old/src ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnbench.testing.fake_server import spawn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mt_bench_101_judge_overhead import compiled_env

REPO = Path(__file__).resolve().parent.parent
CPU: list[float] = []
JUDGE_MODEL = "judge-model"
# A judge reply of the length real judges write (about 600 characters), ending in a rating.
REPLY = (
    "The assistant's response addresses the user's request directly and keeps the earlier "
    "turns of the conversation in mind. It recalls the details the user gave before, answers "
    "the question that was asked instead of a neighbouring one, and does so in a clear order. "
    "Some of the supporting explanation is brief, and one step could have been justified more "
    "carefully, but nothing in it is wrong or misleading, and the tone fits the dialogue. "
    "Compared with an ideal reply it lacks a little depth in the middle part, which keeps it "
    "from the highest marks. Overall a solid, helpful answer. Rating: [[7]]"
)


def write_answers(data_dir: Path, folder: Path, models: int) -> int:
    """One generic answer file per model; returns the judged turns per model."""
    from turnbench.benchmarks import benchmark_class
    from turnbench.benchmarks.base import BenchmarkSettings
    from turnbench.benchmarks.datafiles import DataLocator

    cls = benchmark_class("mt-bench-101")
    files = DataLocator(data_dir, allow_download=False).require_files(cls.name, cls.data_files())
    benchmark = cls(files, BenchmarkSettings())
    folder.mkdir(parents=True, exist_ok=True)
    turns = 0
    for index in range(models):
        with (folder / f"model-{index + 1}.jsonl").open("w", encoding="utf-8") as out:
            turns = 0
            for sample in benchmark.samples:
                for turn in sample.judged_turns():
                    golden = sample.turns[turn - 1].golden or ""
                    answer = f"[model {index + 1}] {golden}"
                    out.write(json.dumps({"id": sample.id, "turn": turn, "answer": answer}) + "\n")
                    turns += 1
    return turns


def answers_in_child(data_dir: Path, folder: Path, models: int) -> int:
    """`write_answers` in a child process. Loading the benchmark's 3615 samples here would
    raise this process's peak to about 50 MB, and a child's `ru_maxrss` is never below the
    peak of the process it was forked from (Linux carries it over fork and exec): the
    unchanged resume, 45-46 MB, would read as this process's 50 MB."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        " from scale_memory import write_answers;"
        " print(write_answers(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])))"
    )
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", code, here, str(data_dir), str(folder), str(models)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def own_peak() -> float:
    """This process's peak resident MB: the floor of every child's figure."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def measured(args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak resident MB, exit code, stderr tail) of one child process; its
    CPU seconds (user + system) are kept in CPU[-1]."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-2000:].decode("utf-8", "replace")
    CPU.append(usage.ru_utime + usage.ru_stime)
    # Linux reports ru_maxrss in KiB (macOS in bytes)
    peak = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    return wall, peak, child.returncode, tail


def judge_command(answers: Path, base_url: str, out: Path, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "turnbench",
        "judge",
        "--benchmark",
        "mt-bench-101",
        "--answers",
        str(answers),
        "--judge",
        f"openai/{JUDGE_MODEL}",
        "--judge-base-url",
        base_url,
        "--out",
        str(out),
        "--concurrency",
        str(concurrency),
        "--no-progress",
    ]


def html_size(run: Path) -> tuple[float, float]:
    """MB of the report file, and MB of everything written beside it (pages, chunks)."""
    report = run / "report.html"
    beside = 0
    extra = run / "report-files"
    if extra.is_dir():
        beside = sum(p.stat().st_size for p in extra.rglob("*") if p.is_file())
    return report.stat().st_size / 1e6, beside / 1e6


def copied(src: Path) -> Path:
    """Another checkout's src (e.g. main), copied: compiling it writes byte code into it."""
    copy = Path(tempfile.mkdtemp(prefix="tb-scale-src-")) / "src"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("*.pyc"))
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2, help="resume and report repetitions")
    parser.add_argument("--keep", type=Path, help="Keep the run directory here.")
    parser.add_argument("--src", type=Path, help="Measure turnbench from this src instead.")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        action="append",
        default=[],
        help="Also resume and report with this src, alternating with the one measured"
        " (repeatable: baseline1, baseline2, ...).",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", REPO.parent / "shared" / "data")),
    )
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TURNBENCH_"))}
    env["TURNBENCH_DATA_DIR"] = str(args.data_dir.resolve())
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    if args.src is not None:
        env["PYTHONPATH"] = str(copied(args.src))
    env = compiled_env(env, Path(env["PYTHONPATH"].split(os.pathsep)[0]))
    # (name printed before each line, environment); the baselines first, then the one measured
    codes: list[tuple[str, dict[str, str]]] = []
    for index, src in enumerate(args.baseline_src):
        name = "baseline " if len(args.baseline_src) == 1 else f"baseline{index + 1} "
        baseline = copied(src)
        codes.append((name, compiled_env({**env, "PYTHONPATH": str(baseline)}, baseline)))
        print(f"{name}= {src}")
    codes.append(("", env))
    with tempfile.TemporaryDirectory(prefix="tb-scale-") as tmp:
        workdir = Path(tmp)
        turns = answers_in_child(args.data_dir, workdir / "answers", args.models)
        n = turns * args.models
        run = workdir / "run"
        server, base_url = spawn(0.0, workdir, "--fixed-reply", REPLY)
        try:
            command = judge_command(workdir / "answers", base_url, run, args.concurrency)
            wall, peak, code, tail = measured(command, env)
            if code != 0:
                raise SystemExit(f"the run failed ({code}):\n{tail}")
            results = json.loads((run / "results.json").read_text("utf-8"))
            judged = sum(m["counts"]["judged"] for m in results["models"].values())
            if judged != n:
                raise SystemExit(f"judged {judged} of {n}")
            log_mb = (run / "log.jsonl").stat().st_size / 1e6
            load = " ".join(f"{value:.1f}" for value in os.getloadavg())
            print(
                f"{args.models} models x {turns} turns = {n} judgments; log {log_mb:.1f} MB;"
                f" load average {load}; this process's peak {own_peak():.0f} MB (no figure"
                " below can be lower)"
            )
            print(
                f"run     {wall:6.2f} s  CPU {CPU[-1]:6.2f} s  peak {peak:6.0f} MB"
                "  (goal <= 300 MB)",
                flush=True,
            )
            # a baseline resumes a copy of its own, whose results.state.json its code writes
            resumers: list[tuple[str, dict[str, str], Path]] = []
            for index, (name, code_env) in enumerate(codes[:-1]):
                copy = workdir / f"run-baseline{index + 1}"
                shutil.copytree(run, copy)
                (copy / "results.state.json").unlink()
                first = judge_command(workdir / "answers", base_url, copy, args.concurrency)
                wall, peak, code, tail = measured(first, code_env)
                if code != 0:
                    raise SystemExit(f"the {name}first resume failed ({code}):\n{tail}")
                print(
                    f"{name}{'full':7} {wall:6.2f} s  CPU {CPU[-1]:6.2f} s  peak {peak:6.0f} MB"
                    "  [its first: writes its results.state.json; not counted]",
                    flush=True,
                )
                resumers.append((name, code_env, copy))
            resumers.append(("", env, run))
            resumes: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in codes}
            for index in range(args.rounds):
                for kind in ("resume", "full"):
                    for name, code_env, folder in resumers:  # (alternating, as the reports)
                        if kind == "full":
                            (folder / "results.state.json").unlink()
                        elif not (folder / "results.state.json").is_file():
                            raise SystemExit(f"the {name}complete run wrote no state file")
                        again = judge_command(
                            workdir / "answers", base_url, folder, args.concurrency
                        )
                        wall, peak, code, tail = measured(again, code_env)
                        if code != 0:
                            raise SystemExit(f"the {name}{kind} resume failed ({code}):\n{tail}")
                        if kind == "resume":
                            resumes[name].append((wall, peak))
                        print(
                            f"{name}{kind:7} {wall:6.2f} s  CPU {CPU[-1]:6.2f} s"
                            f"  peak {peak:6.0f} MB"
                            + ("  (goal <= 2.5 s, <= 300 MB)" if kind == "resume" else "")
                            + f"  [round {index + 1}]",
                            flush=True,
                        )
            if args.rounds:
                for name, _ in codes[:-1]:
                    wall_ratio = statistics.median(w for w, _ in resumes[""]) / statistics.median(
                        w for w, _ in resumes[name]
                    )
                    print(
                        f"resume / {name}resume, medians: time x{wall_ratio:.3f}, peak"
                        f" {statistics.median(p for _, p in resumes['']):.1f} MB /"
                        f" {statistics.median(p for _, p in resumes[name]):.1f} MB",
                        flush=True,
                    )
        finally:
            server.terminate()
            server.wait(timeout=10)
        report = [sys.executable, "-m", "turnbench", "report", str(run)]
        times: dict[str, list[float]] = {name: [] for name, _ in codes}
        cpu: dict[str, list[float]] = {name: [] for name, _ in codes}
        for index in range(args.rounds):
            for name, report_env in codes:  # (alternating: the machine's drift is shared)
                wall, peak, code, tail = measured(report, report_env)
                if code != 0:
                    raise SystemExit(f"the {name}report failed ({code}):\n{tail}")
                times[name].append(wall)
                cpu[name].append(CPU[-1])
                page, beside = html_size(run)
                print(
                    f"{name}report  {wall:6.2f} s  CPU {CPU[-1]:6.2f} s  peak {peak:6.0f} MB"
                    f"  html {page:5.1f} MB (+{beside:.1f} MB beside it)"
                    "  (goal <= 4 s, <= 300 MB, <= 6 MB)"
                    f"  [round {index + 1}]",
                    flush=True,
                )
        if args.rounds:
            for name, _ in codes[:-1]:
                ratio = statistics.median(times[""]) / statistics.median(times[name])
                used = statistics.median(cpu[""]) / statistics.median(cpu[name])
                print(f"report / {name}report, medians: time x{ratio:.3f}, CPU x{used:.3f}")
        if args.keep is not None:
            shutil.copytree(run, args.keep, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
