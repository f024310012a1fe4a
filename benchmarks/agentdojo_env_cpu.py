"""AgentDojo's environment CPU per conversation, and where it goes (issue 43).

For each suite of the package's default version, every (user task, injection task) pair of
`--attack`, and every user task without attack, one conversation's environment work done
through the seam (turnbench.benchmarks.agentdojo.upstream), timed in parts (process CPU):

- load+inject: the environment with the pair's injections, from the suite's cache
  (`envcache`) and, beside it, by upstream's own `load_and_inject_default_environment` (what
  a naive caller pays: a YAML parse of the whole suite each time);
- init+copy: the user task's `init_environment` and the deep copy the checks compare against;
- tools: the ground-truth calls of the user task, then of the injection task (what an
  obeying agent does), each through `run_tool_call` (upstream's ToolsExecutor);
- check: upstream's utility and security checks on the result.

Also the once-per-run costs: building each suite's cache, and the attack's injection
candidates per user task (upstream's ground-truth pipeline on a canary environment).
`--verify` also checks that every cached environment equals upstream's loading (slow: it pays
upstream's loading for every pair of every attack in `--verify-attacks`).

    .venv/bin/python benchmarks/agentdojo_env_cpu.py [--verify]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from typing import Any

from turnbench.benchmarks.agentdojo import upstream

MODEL = "gpt-4o-2024-05-13"
VERIFY_ATTACKS = (
    "important_instructions",
    "tool_knowledge",
    "direct",
    "ignore_previous",
    "injecagent",
    "system_message",
    "dos",
    "captcha_dos",
)


def clock() -> float:
    return time.process_time()


def measure(suite: upstream.Suite, attack_name: str) -> dict[str, Any]:
    pipeline = upstream.Pipeline(MODEL)
    started = clock()
    suite.template  # noqa: B018  (build the cache now, timed)
    build = clock() - started
    attack = suite.attack(attack_name, pipeline)
    started = clock()
    for user_task_id in suite.user_task_ids():
        attack.candidates(user_task_id)
    candidates = clock() - started
    parts: dict[str, float] = defaultdict(float)
    conversations = 0
    pairs = [(u, i) for u in suite.user_task_ids() for i in attack.injection_task_ids()]
    pairs += [(u, None) for u in suite.user_task_ids()]
    for user_task_id, injection_task_id in pairs:
        injections = attack.injections(user_task_id, injection_task_id) if injection_task_id else {}
        t0 = clock()
        environment = suite.template.environment(injections)
        t1 = clock()
        suite.upstream.load_and_inject_default_environment(injections)
        t2 = clock()
        task = suite.upstream.get_user_task_by_id(user_task_id)
        environment = task.init_environment(environment)
        pre = environment.model_copy(deep=True)
        t3 = clock()
        conversation = upstream.ConversationEnvironment(environment, pre)
        calls = suite.ground_truth(user_task_id, pre)
        if injection_task_id:
            calls += suite.ground_truth(injection_task_id, pre)
        outcomes = [suite.run_tool_call(environment, c.function, dict(c.args)) for c in calls]
        t4 = clock()
        suite.check(
            user_task_id,
            injection_task_id,
            suite.ground_truth_output(user_task_id),
            conversation,
            [o.call for o in outcomes],
        )
        t5 = clock()
        parts["load+inject (cache)"] += t1 - t0
        parts["load+inject (upstream)"] += t2 - t1
        parts["init+copy"] += t3 - t2
        parts["tools"] += t4 - t3
        parts["check"] += t5 - t4
        conversations += 1
    per = {k: round(1000 * v / conversations, 2) for k, v in parts.items()}
    ours = sum(v for k, v in per.items() if k != "load+inject (upstream)")
    naive = sum(v for k, v in per.items() if k != "load+inject (cache)")
    return {
        "suite": suite.name,
        "conversations": conversations,
        "ms_per_conversation": per,
        "total_ms_per_conversation_cached": round(ours, 2),
        "total_ms_per_conversation_upstream_loading": round(naive, 2),
        "once_cache_build_ms": round(1000 * build, 1),
        "once_candidates_ms": round(1000 * candidates, 1),
    }


def verify(suite: upstream.Suite, attacks: list[str]) -> dict[str, Any]:
    pipeline = upstream.Pipeline(MODEL)
    checked = differ = 0
    for name in attacks:
        attack = suite.attack(name, pipeline)
        seen: set[str] = set()
        for user_task_id in suite.user_task_ids():
            for injection_task_id in attack.injection_task_ids():
                injections = attack.injections(user_task_id, injection_task_id)
                key = json.dumps(injections, sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                checked += 1
                theirs = suite.upstream.load_and_inject_default_environment(injections)
                if suite.template.environment(injections) != theirs:
                    differ += 1
    return {
        "suite": suite.name,
        "distinct_injections_checked": checked,
        "differ": differ,
        "cache_untouched": suite.template.pristine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version")
    parser.add_argument("--suites", default="all")
    parser.add_argument("--attack", default="important_instructions")
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--verify-attacks", default=",".join(VERIFY_ATTACKS))
    args = parser.parse_args()
    bench = upstream.load(args.version)
    names = None if args.suites == "all" else args.suites.split(",")
    for suite in bench.suites(names):
        print(json.dumps({"version": bench.version, **measure(suite, args.attack)}))
        if args.verify:
            print(json.dumps(verify(suite, args.verify_attacks.split(","))))


if __name__ == "__main__":
    main()
