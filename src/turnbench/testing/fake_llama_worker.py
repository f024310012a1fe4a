"""A stand-in for llama_worker.py that speaks its protocol without llama.cpp (tests only).

It answers "echo: <last message>" with one completion token per word; a last message of
`crash` makes it die by SIGSEGV like a native crash, `slow` makes it generate for up to
10 s while honouring cancel, and `too long` is refused like a prompt that exceeds the
context. FAKE_LLAMA_SYSTEM_INFO sets the system-info line it reports,
FAKE_LLAMA_CRASH_ON_START makes it die before saying hello.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    lock = threading.Lock()

    def send(message: dict) -> None:
        with lock:
            out.write(json.dumps(message) + "\n")
            out.flush()

    def die() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        print("fake engine: about to crash", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)

    if os.environ.get("FAKE_LLAMA_CRASH_ON_START"):
        die()
    info = os.environ.get("FAKE_LLAMA_SYSTEM_INFO", "CPU : AVX = 1 | AVX2 = 1 |")
    send({"op": "hello", "version": "fake", "system_info": info})
    if not config["model_path"].endswith(".gguf"):
        send({"op": "load_failed", "error": "ValueError: not a GGUF file"})
        return 1
    send({"op": "loaded"})
    cancelled: set[int] = set()
    jobs: queue.Queue = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if message["op"] == "cancel":
                cancelled.add(message["id"])
            elif message["op"] == "stop":
                break
            else:
                jobs.put(message)
        jobs.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (message := jobs.get()) is not None:
        ident, last = message["id"], message["messages"][-1]["content"]
        if last == "crash":
            die()
        if last == "too long":
            send({"op": "result", "id": ident, "ok": False, "error": "exceeds context window"})
            continue
        finish = "stop"
        if last == "slow":
            started = time.monotonic()
            while time.monotonic() - started < 10 and ident not in cancelled:
                time.sleep(0.01)
            finish = "cancelled" if ident in cancelled else "length"
        text = f"echo: {last}"
        if last.startswith("call:"):  # a reply that calls the tool named after the colon
            name = last[len("call:") :]
            text = f'<tool_call>{{"name": "{name}", "arguments": {{"user_id": "u1"}}}}</tool_call>'
        send(
            {
                "op": "result",
                "id": ident,
                "ok": True,
                "generation": {
                    "text": text,
                    "finish_reason": finish,
                    "prompt_tokens": sum(len(m["content"].split()) for m in message["messages"]),
                    "completion_tokens": len(text.split()),
                    "logprobs": [{"token": "echo", "logprob": -0.5, "top": []}]
                    if message.get("top_logprobs")
                    else None,
                    "grammar": message.get("grammar"),
                    "options": message.get("options"),
                },
            }
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
