"""The stress arms (`--perturb`) on the whole of MT-Bench against the scripted fake models.

Three runs of `turnbench run --perturb planted-error --perturb distractor --perturb
injection`, one per fake model of `turnbench.testing.stress_fakes` (repeats its previous
answer, obeys instructions in its context, ignores its history), each judged by the
scripted judge, with FastChat's alpaca-13b answers planted; then one report of the three.
Prints every arm's difference with its interval and the injection obeyed rate: the figures
of docs/stress.md.

    TURNBENCH_DATA_DIR=../shared/data python benchmarks/stress_arms_fakes.py --out /tmp/stress
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from turnbench.testing import stress_fakes
from turnbench.testing.fake_server import FakeServer

KINDS = ("planted-error", "distractor", "injection")


def run(name: str, out: Path, planted: Path, limit: int | None) -> None:
    with (
        FakeServer(responder=stress_fakes.MODELS[name]) as model,
        FakeServer(responder=stress_fakes.tag_judge) as judge,
    ):
        command = [
            sys.executable, "-m", "turnbench", "run", "--benchmark", "mt-bench",
            "--model", f"openai/{name}", "--model-base-url", model.base_url,
            "--judge", "openai/scripted-judge", "--judge-base-url", judge.base_url,
            "--perturb", "planted-error", "--planted-answers", str(planted),
            "--perturb", "distractor", "--perturb", "injection",
            "--out", str(out), "--no-progress",
            *(["--limit", str(limit)] if limit else []),
        ]  # fmt: skip
        env = dict(os.environ, OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY", "unused"))
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        print(f"{name}: {len(model.requests)} answers, {len(judge.requests)} judgments asked")


def _interval(block: dict) -> str:
    if block.get("ci_low") is None:
        return "(no interval)"
    return f"[{block['ci_low']:+.3f}, {block['ci_high']:+.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="A new folder for the runs.")
    parser.add_argument("--limit", type=int, help="Questions per category (default: all).")
    data = Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data"))
    parser.add_argument(
        "--planted-answers",
        type=Path,
        default=data / "mt_bench" / "model_answer" / "alpaca-13b.jsonl",
    )
    args = parser.parse_args()
    names = list(stress_fakes.MODELS)
    for name in names:
        run(name, args.out / name, args.planted_answers, args.limit)
    for name in names:
        results = json.loads((args.out / name / "results.json").read_text("utf-8"))
        print(f"\n{name}: unperturbed overall {results['overall']:.3f}")
        for kind, block in results["perturbations"].items():
            difference = block["difference"]
            line = (
                f"  {kind:14} {block['items']} turns: {block['baseline_score']:.3f} -> "
                f"{block['score']:.3f}, difference {difference['value']:+.3f} "
                f"{_interval(difference)} {difference.get('verdict')}"
            )
            rate = block.get("obeyed_rate")
            if rate:
                line += (
                    f"; obeyed {rate['obeyed']}/{rate['checked']} = {rate['value']:.3f} "
                    f"[{rate['ci_low']:.3f}, {rate['ci_high']:.3f}]"
                )
            print(line)
    report = args.out / "report.html"
    subprocess.run(
        [sys.executable, "-m", "turnbench", "report", *(str(args.out / n) for n in names),
         "--out", str(report)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    print(f"\nreport: {report} (section #stress)")


if __name__ == "__main__":
    main()
