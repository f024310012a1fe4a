"""The worker process that runs llama.cpp for the embedded backend.

Started by `EngineProcess` (llama_process.py) as `python -m turnbench.backends.llama_worker
CONFIG`. If llama.cpp crashes (segmentation fault, illegal instruction, out of memory), only
this process dies; the parent turns that into one clear error and keeps its run log intact.

Protocol: one JSON object per line. The parent writes to our stdin:
    {"op": "generate", "id": N, "messages": [...], "options": {...},
     "grammar": str | null, "top_logprobs": int | null}
    {"op": "cancel", "id": N}      stop generation N at its next token (or skip it)
    {"op": "stop"}                 finish and exit
We answer on the process's original stdout (fd 1 is then pointed at stderr, so whatever
llama.cpp prints cannot corrupt the protocol):
    {"op": "hello", "version": str, "system_info": str}    after importing llama_cpp
    {"op": "loaded"} | {"op": "load_failed", "error": str}
    {"op": "result", "id": N, "ok": true, "generation": {...}}
    {"op": "result", "id": N, "ok": false, "error": str}

Generations run one at a time on this process's main thread, always the same thread:
llama.cpp's OpenMP pool belongs to the calling thread, and a new thread per request
(asyncio.to_thread) halved generation speed (measured). A reader thread handles stdin so a
cancel arrives while a generation runs.

TURNBENCH_TEST_CRASH_AFTER=N (tests only): the worker kills itself with SIGSEGV when asked
for generation N+1, to test what a native crash does to a run.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from typing import Any, TextIO

CRASH_AFTER_ENV = "TURNBENCH_TEST_CRASH_AFTER"


class _Channel:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True) + "\n"
        with self._lock:
            self._stream.write(line)
            self._stream.flush()


def _crash_for_test() -> None:
    """Die the way a native crash does: by SIGSEGV, without a core file."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)


def _reader(jobs: queue.Queue, cancelled: set[int], stop: threading.Event) -> None:
    """Read the parent's requests; on EOF (the parent is gone) cancel everything."""
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        op = message.get("op")
        if op == "generate":
            jobs.put(message)
        elif op == "cancel":
            cancelled.add(int(message.get("id", -1)))
        elif op == "stop":
            break
    stop.set()
    jobs.put(None)


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    channel = _Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)

    import llama_cpp

    from turnbench.backends.llama_engine import LlamaEngine

    channel.send(
        {
            "op": "hello",
            "version": getattr(llama_cpp, "__version__", "?"),
            "system_info": llama_cpp.llama_print_system_info()
            .decode("utf-8", errors="replace")
            .strip(),
        }
    )
    try:
        engine = LlamaEngine(
            config["model_path"],
            n_ctx=int(config["n_ctx"]),
            n_threads=int(config["n_threads"]),
            seed=int(config["seed"]),
        )
    except Exception as error:  # e.g. not a GGUF file: the parent reports it
        channel.send({"op": "load_failed", "error": f"{type(error).__name__}: {error}"})
        return 1
    channel.send({"op": "loaded"})

    crash_after = os.environ.get(CRASH_AFTER_ENV, "").strip()
    crash_at = int(crash_after) if crash_after.isdigit() else None
    jobs: queue.Queue = queue.Queue()
    cancelled: set[int] = set()
    stop = threading.Event()
    threading.Thread(target=_reader, args=(jobs, cancelled, stop), daemon=True).start()
    done = 0
    while True:
        job = jobs.get()
        if job is None:
            break
        ident = int(job["id"])
        if crash_at is not None and done >= crash_at:
            _crash_for_test()
        try:
            generation = engine.generate(
                job["messages"],
                job.get("options") or {},
                grammar=job.get("grammar"),
                top_logprobs=job.get("top_logprobs"),
                cancelled=lambda ident=ident: stop.is_set() or ident in cancelled,
            )
        except ValueError as error:  # e.g. the prompt does not fit the context window
            channel.send({"op": "result", "id": ident, "ok": False, "error": str(error)})
        except Exception as error:  # a Python-level failure fails this request, not the run
            message = f"internal error: {type(error).__name__}: {error}"
            channel.send({"op": "result", "id": ident, "ok": False, "error": message})
        else:
            channel.send(
                {"op": "result", "id": ident, "ok": True, "generation": generation.to_json()}
            )
        cancelled.discard(ident)
        done += 1
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
