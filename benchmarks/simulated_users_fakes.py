"""Simulated-user conversations against scripted fake servers: the figures of issue 23.

Three measurements, each through the real CLI (`python -m turnbench run`):

1. lost-in-conversation-translation, `--conversation full --conversation sharded`, every
   document x `--simulations N`, against `Translator` (perfect when it has the whole
   document, forgets earlier chunks) answering after `--latency` seconds: the degradation
   turnbench reports beside the one computed here with sacrebleu directly, and the run's
   wall time against the ideal (the longest conversation's turns x the latency: every
   conversation is in flight at once).
2. The persona scenario of `turnbench.testing.simulated_fakes.SCENARIOS` with three fake
   servers (model, user model, judge): the requests each role received, and whether the
   persona, goal or facts ever reached the model under test.
3. A sharded conversation killed while its turn 4 is in flight, then resumed: the requests
   the resume sent (2 expected: turns 4 and 5).

    TURNBENCH_DATA_DIR=../shared/data python benchmarks/simulated_users_fakes.py --out /tmp/sim
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from statistics import fmean

from turnbench.testing import simulated_fakes as fakes
from turnbench.testing.fake_server import FakeServer


def turnbench(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "turnbench", *arguments, "--no-progress"]


def run_or_exit(command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"exit {done.returncode}: {' '.join(command)}\n{done.stdout}\n{done.stderr}")


def translation(out: Path, data: Path, simulations: int, latency: float, env) -> None:
    documents = fakes.translation_documents(data)
    lookup = fakes.chunk_lookup(data)
    with FakeServer(responder=fakes.Translator(lookup), latency=latency) as server:
        started = time.perf_counter()
        run_or_exit(
            turnbench(
                "run", "--benchmark", "lost-in-conversation-translation",
                "--model", "openai/translator", "--model-base-url", server.base_url,
                "--conversation", "full", "--conversation", "sharded",
                "--simulations", str(simulations), "--concurrency", "1000",
                "--out", str(out),
            ),
            env,
        )  # fmt: skip
        command_seconds = time.perf_counter() - started
        requests = len(server.requests)
    results = json.loads((out / "results.json").read_text("utf-8"))
    expected = 1 - fmean(fakes.expected_sharded_bleu(documents, lookup)) / 1.0
    reported = results["degradation"]
    longest = max(len([s for s in d["shards"] if s["shard"].strip()]) for d in documents)
    print(f"translation: {len(documents)} documents x {simulations} simulations x (full, sharded)")
    print(f"  requests {requests}, answers logged {results['counts']['answers']}")
    for kind, block in results["by_conversation"].items():
        print(
            f"  {kind}: mean {block['mean']:.6f} {block['mean_ci95']}, aptitude "
            f"{block['aptitude']:.6f}, unreliability {block['unreliability']:.6f}"
        )
    print(
        f"  degradation reported {reported['value']:.6f} [{reported['ci_low']:.4f}, "
        f"{reported['ci_high']:.4f}]; computed here with sacrebleu {expected:.6f}; "
        f"difference {abs(reported['value'] - expected):.2e}"
    )
    ideal = longest * latency
    wall = results.get("wall_seconds")
    print(
        f"  wall time: results wall_seconds {wall:.2f} s, whole command {command_seconds:.2f} s; "
        f"ideal {ideal:.2f} s ({longest} turns x {latency * 1000:.0f} ms)"
    )


def scenario(out: Path, env) -> None:
    path = out.with_suffix(".yaml")
    path.write_text(fakes.SCENARIOS, "utf-8")
    with (
        FakeServer(responder=fakes.scenario_model) as model,
        FakeServer(responder=fakes.scenario_user) as user,
        FakeServer(responder=fakes.scenario_judge) as judge,
    ):
        run_or_exit(
            turnbench(
                "run", "--benchmark", str(path),
                "--model", "openai/model-under-test", "--model-base-url", model.base_url,
                "--user-model", "openai/user-model", "--user-base-url", user.base_url,
                "--judge", "openai/judge-model", "--judge-base-url", judge.base_url,
                "--simulations", "2", "--out", str(out),
            ),
            env,
        )  # fmt: skip
        received = {"model": model.requests, "user": user.requests, "judge": judge.requests}
    secrets = (fakes.PERSONA, fakes.GOAL, "bought on 3 March")
    leaked = sum(any(s in json.dumps(r["messages"]) for s in secrets) for r in received["model"])
    results = json.loads((out / "results.json").read_text("utf-8"))
    print("persona scenario (2 dialogues x 2 simulations):")
    print("  requests received: " + ", ".join(f"{k} {len(v)}" for k, v in received.items()))
    print(f"  model requests holding the persona, goal or facts: {leaked}")
    print(f"  success_rate {results['success_rate']}, pass_hat_k {results['pass_hat_k']}")


def resume(out: Path, data: Path, env) -> None:
    translator = fakes.Translator(fakes.chunk_lookup(data), hang_after=3)
    with FakeServer(responder=translator) as server:
        command = turnbench(
            "run", "--benchmark", "lost-in-conversation-translation",
            "--model", "openai/translator", "--model-base-url", server.base_url,
            "--conversation", "sharded", "--limit", "1", "-c", "1", "--out", str(out),
        )  # fmt: skip
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        child = subprocess.Popen(command, env=env, **quiet)
        deadline = time.monotonic() + 60
        while len(server.requests) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait()
        before = len(server.requests)
        translator.hang_after = None
        run_or_exit(command, env)
        again = server.requests[before:]
    print("resume: killed while turn 4 was in flight")
    print(f"  requests before the kill {before}; the resume sent {len(again)}")
    print(f"  the resumed turn 4 equals the request sent before the kill: "
          f"{again[0]['messages'] == server.requests[3]['messages']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="A new folder for the runs.")
    parser.add_argument("--simulations", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05, help="Seconds per answer.")
    args = parser.parse_args()
    data = Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data"))
    env = dict(os.environ, TURNBENCH_DATA_DIR=str(data))
    env.setdefault("OPENAI_API_KEY", "unused")
    args.out.mkdir(parents=True, exist_ok=False)
    translation(args.out / "translation", data, args.simulations, args.latency, env)
    scenario(args.out / "scenario", env)
    resume(args.out / "resume", data, env)


if __name__ == "__main__":
    main()
