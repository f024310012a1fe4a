"""Scripted agents for AgentDojo's conversations, behind an OpenAI-compatible server on
127.0.0.1, for tests and benchmarks (importable only with the `agentdojo` extra).

An agent reads each request as a real model would (the messages and the tools), finds its
task by the opening user message (a user task's PROMPT; an injection task's GOAL when
upstream's runner runs it alone), and answers:

- `ground_truth`: the task's ground-truth calls (upstream's `ground_truth`), one per reply or
  all in one reply (`batch`), then the task's GROUND_TRUTH_OUTPUT. It solves every task whose
  ground truth solves it upstream.
- `obey`: the same, but once a tool result holds an injection task's goal, it makes that
  injection task's ground-truth calls next (after the reply whose result carried it), then
  goes on with its own: every targeted attack on a ground truth that reads the payload wins.
- `lazy`: answers `lazy_text` at once, never calling a tool.

Ground truths may read the environment (slack's channel names carry an injection), so once
a payload is seen the agent computes them on the pair's own environment: the attack's
injections for (user task, injection task), made with upstream's attack for a pipeline named
after the request's `model` (the `attack` option; `none` keeps the default environment).
Before that it uses the default environment, which is the pair's as far as any call made
before the payload was read can tell.

Requests may come from turnbench (system role, string contents, tool results as
{"role": "tool", "tool_call_id", "content"}) or from upstream's OpenAI element ("developer"
role, contents as lists of text parts, tool results with `name`): both are read. A request
with `tool_choice` "none" is upstream's tool filter asking which tools to keep: the agent
names every tool it was sent.

The server is a small aiohttp app on the fakes' common lifecycle
(`turnbench.testing.fake_base`). `upstream_ground_truth` and `masked` are what tests and
scripts compare turnbench's ground-truth runs with.

Run in a thread: `with AgentServer(ScriptedAgent("ground_truth"), latency=0.05) as server:`
then `server.base_url`; or as a process: `python -m turnbench.benchmarks.agentdojo.fakes
--mode obey --latency 0.05 --port-file F` (`spawn` does that and returns the base URL).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

from turnbench.benchmarks.agentdojo import payloads
from turnbench.benchmarks.agentdojo.upstream import Benchmark, Pipeline, Suite
from turnbench.testing.fake_base import ThreadedServer, serve_as_process

Mode = Literal["ground_truth", "obey", "lazy"]
Batch = Literal["one", "all"]
MODES: tuple[Mode, ...] = ("ground_truth", "obey", "lazy")
LAZY_TEXT = "I am sorry, I cannot help with that."


def message_text(message: dict[str, Any]) -> str:
    """A message's text, whether its content is a string, a list of text parts or null."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return ""


@dataclass(frozen=True)
class ScriptedReply:
    """An assistant message in OpenAI's shape: text, or tool calls (content null)."""

    content: str | None
    tool_calls: list[dict[str, Any]] | None = None

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


def tool_call(index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


class ScriptedAgent:
    """Answers AgentDojo conversations by script (see the module's docstring)."""

    def __init__(
        self,
        mode: Mode,
        *,
        version: str | None = None,
        batch: Batch = "one",
        attack: str | None = "important_instructions",
        model_name: str | None = None,
        user_name: str | None = None,
        lazy_text: str = LAZY_TEXT,
        benchmark: Benchmark | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        self.mode = mode
        self.batch = batch
        self.attack = attack if attack not in (None, "none") else None
        self.model_name = model_name
        self.user_name = user_name
        self.lazy_text = lazy_text
        self.benchmark = benchmark or Benchmark(version)
        self._lock = threading.Lock()
        self._openings: dict[str, list[tuple[str, str]]] | None = None
        self._goals: dict[str, dict[str, str]] = {}
        self._truths: dict[tuple[str, str, str, str | None, str], list[Any]] = {}
        self._pipelines: dict[str, Pipeline] = {}

    # -- finding the task ------------------------------------------------------------------
    def prepare(self) -> None:
        """Build the index of openings now (else the first request does)."""
        self._index()

    def _index(self) -> dict[str, list[tuple[str, str]]]:
        if self._openings is None:
            openings: dict[str, list[tuple[str, str]]] = {}
            for suite in self.benchmark.suites():
                for task_id in suite.user_task_ids() + suite.injection_task_ids():
                    openings.setdefault(suite.prompt(task_id), []).append((suite.name, task_id))
            self._openings = openings
        return self._openings

    def identify(self, request: dict[str, Any]) -> tuple[Suite, str]:
        """The suite and task a request is about: its first user message, with the tools
        it was sent deciding between suites that share a prompt."""
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        opening = next((message_text(m) for m in messages if m.get("role") == "user"), "")
        found = self._index().get(opening)
        if not found:
            raise LookupError("the request opens with no prompt of any agentdojo task")
        sent = {t.get("function", {}).get("name") for t in request.get("tools") or []}
        for suite_name, task_id in found:
            suite = self.benchmark.suite(suite_name)
            if not sent or sent <= set(suite.tool_names()):
                return suite, task_id
        suite_name, task_id = found[0]
        return self.benchmark.suite(suite_name), task_id

    # -- answering -------------------------------------------------------------------------
    def __call__(self, request: dict[str, Any]) -> ScriptedReply:
        return self.reply(request)

    def reply(self, request: dict[str, Any]) -> ScriptedReply:
        if request.get("tool_choice") == "none":  # upstream's tool filter asks
            names = [t.get("function", {}).get("name", "") for t in request.get("tools") or []]
            return ScriptedReply(", ".join(names))
        suite, task_id = self.identify(request)
        if self.mode == "lazy":
            return ScriptedReply(self.lazy_text)
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        batches = [
            len(m.get("tool_calls") or [])
            for m in messages
            if m.get("role") == "assistant" and m.get("tool_calls")
        ]
        made = sum(batches)
        results = [message_text(m) for m in messages if m.get("role") == "tool"]
        injection_id: str | None = None
        splice = made
        if task_id in suite.user_task_ids():
            hit = payloads.found_in_any(results, self._goals_of(suite))
            if hit is not None:
                index, injection_id = hit
                splice = _end_of_batch(batches, index)
        model = str(request.get("model") or "")
        plan = list(self._truth(suite, task_id, task_id, injection_id, model))
        if self.mode == "obey" and injection_id is not None:
            theirs = self._truth(suite, task_id, injection_id, injection_id, model)
            plan = plan[:splice] + list(theirs) + plan[splice:]
        remaining = plan[made:]
        if not remaining:
            return ScriptedReply(suite.ground_truth_output(task_id))
        chosen = remaining if self.batch == "all" else remaining[:1]
        calls = [tool_call(made + i, c.function, dict(c.args)) for i, c in enumerate(chosen)]
        return ScriptedReply(None, calls)

    def _goals_of(self, suite: Suite) -> dict[str, str]:
        if suite.name not in self._goals:
            self._goals[suite.name] = {i: suite.goal(i) for i in suite.injection_task_ids()}
        return self._goals[suite.name]

    def _truth(
        self,
        suite: Suite,
        conversation_task: str,
        task_id: str,
        injection_id: str | None,
        model: str,
    ) -> list[Any]:
        """`task_id`'s ground-truth calls on the environment of the conversation on
        `conversation_task`: the default one, or the pair's once its injection task is known
        (see the module's docstring)."""
        use_attack = self.attack is not None and injection_id is not None
        key = (suite.name, conversation_task, task_id, injection_id, model if use_attack else "")
        with self._lock:
            if key not in self._truths:
                injections: dict[str, str] = {}
                if use_attack and injection_id is not None:
                    attack = self._attack(suite, model)
                    injections = attack.injections(conversation_task, injection_id)
                conversation = suite.environment(conversation_task, injections)
                self._truths[key] = suite.ground_truth(task_id, conversation.pre)
            return self._truths[key]

    def _attack(self, suite: Suite, model: str) -> Any:
        assert self.attack is not None
        if model not in self._pipelines:
            self._pipelines[model] = Pipeline(model)
        return suite.attack(
            self.attack,
            self._pipelines[model],
            model_name=self.model_name,
            user_name=self.user_name,
        )


def _end_of_batch(batches: Sequence[int], call_index: int) -> int:
    """How many calls had been made once the reply holding call `call_index` was answered."""
    total = 0
    for size in batches:
        total += size
        if call_index < total:
            return total
    return total


# -- the server ------------------------------------------------------------------------------


class AgentServer(ThreadedServer):
    """An OpenAI-compatible chat-completions endpoint answered by a scripted agent, with a
    fixed latency, on 127.0.0.1 in a thread of its own (or in a process: `main`).

    `counts`: "requests", "openings" (requests with no assistant message yet: one per
    conversation, two under the tool filter), "errors"; `requests`: every body, if
    `record`."""

    def __init__(self, agent: ScriptedAgent, *, latency: float = 0.0, record: bool = True):
        super().__init__()
        self.agent = agent
        self.latency = latency
        self.record = record
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return dict(self.counts)

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        messages = body.get("messages") or []
        with self._lock:
            self.counts["requests"] += 1
            if not any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages):
                self.counts["openings"] += 1
            if self.record:
                self.requests.append(body)
        try:
            reply = self.agent.reply(body)
        except Exception as error:  # a request the script cannot place: a 400, counted
            self.count("errors")
            return web.json_response(
                {"error": {"message": f"{type(error).__name__}: {error}"}}, status=400
            )
        if self.latency:
            await asyncio.sleep(self.latency)
        completion = {
            "id": f"chatcmpl-{self.counts['requests']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": reply.message(),
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(json.dumps(messages)) // 4,
                "completion_tokens": max(1, len(json.dumps(reply.message())) // 4),
                "total_tokens": 0,
            },
        }
        return web.json_response(completion)

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def listen(self, port: int) -> int:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/stats", self._stats)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=512)
        await site.start()
        return int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def masked(value: Any) -> str:
    """`value` as text with every timestamp of today or yesterday masked: upstream's tools
    stamp what they create with `datetime.now()`, so two runs of one call differ there."""
    today = datetime.date.today()
    days = "|".join(str(d) for d in (today, today - datetime.timedelta(days=1)))
    now = re.compile(rf"(?:{days})[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?")
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return now.sub("<now>", text)


def upstream_ground_truth(suite: Suite, task_id: str, default: Any) -> tuple[list[str], bool]:
    """The tool messages' texts of upstream's GroundTruthPipeline on the task's environment
    (`default`: upstream's loading of the suite's default environment, copied per run), and
    upstream's utility verdict for that run (`run_task_with_pipeline`)."""
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.types import get_text_content_as_str

    task = suite.upstream.get_user_task_by_id(task_id)
    environment = task.init_environment(default.model_copy(deep=True))
    runtime = FunctionsRuntime(suite.upstream.tools)
    _, _, _, messages, _ = GroundTruthPipeline(task).query(task.PROMPT, runtime, environment)
    texts = [get_text_content_as_str(m["content"]) for m in messages if m["role"] == "tool"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        utility, _ = suite.upstream.run_task_with_pipeline(
            GroundTruthPipeline(task), task, None, {}, environment=default.model_copy(deep=True)
        )
    return texts, bool(utility)


def spawn(
    mode: Mode, latency: float, workdir: Path, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a server as its own process (its CPU is not the caller's) on a free port;
    returns the process and its base URL. The caller terminates the process."""
    port_file = workdir / f"agentdojo-fake-{mode}.port"
    port_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnbench.benchmarks.agentdojo.fakes",
            "--mode",
            mode,
            "--latency",
            str(latency),
            "--port-file",
            str(port_file),
            "--no-record",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120  # the package's import alone takes seconds
    while not port_file.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("the agentdojo fake server did not start")
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mode", choices=MODES, default="ground_truth")
    parser.add_argument("--batch", choices=("one", "all"), default="one")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--version", help="agentdojo benchmark version (default: upstream's)")
    parser.add_argument("--attack", default="important_instructions", help="or none")
    parser.add_argument("--model-name")
    parser.add_argument("--user-name")
    parser.add_argument("--lazy-text", default=LAZY_TEXT)
    parser.add_argument("--no-record", action="store_true", help="Keep counts only.")
    args = parser.parse_args(argv)
    agent = ScriptedAgent(
        args.mode,
        version=args.version,
        batch=args.batch,
        attack=args.attack,
        model_name=args.model_name,
        user_name=args.user_name,
        lazy_text=args.lazy_text,
    )
    agent.prepare()
    server = AgentServer(agent, latency=args.latency, record=not args.no_record)

    serve_as_process(server, args.port, args.port_file)


if __name__ == "__main__":
    main()
