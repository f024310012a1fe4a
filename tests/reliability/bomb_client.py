"""Run as a script: one request through a real backend to a server on 127.0.0.1 that answers
with a gzip bomb, a valid JSON reply whose answer text is SIZE bytes, a few hundred kB on
the wire. Prints one JSON line: the outcome (the answer's length, or the error) and how much
the process's peak resident memory grew during the request.

    python bomb_client.py direct|proxy|anthropic [SIZE]

"direct" is the OpenAI-compatible backend to the server; "proxy" the same with HTTP_PROXY
naming the server (which answers the proxied request itself); "anthropic" the Anthropic
backend (the SDK) to the server. A separate process, so the peak is this request's alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import zlib

OPENAI_HEAD = b'{"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "'  # noqa: E501
OPENAI_TAIL = b'"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
ANTHROPIC_HEAD = b'{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "'  # noqa: E501
ANTHROPIC_TAIL = (
    b'"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}'
)


def bomb(head: bytes, size: int, tail: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(head)]
    block = b"x" * (1 << 20)
    for _ in range(size // len(block)):
        parts.append(packer.compress(block))
    parts += [packer.compress(tail), packer.flush()]
    return b"".join(parts)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(path: str, size: int) -> dict[str, object]:
    anthropic = path == "anthropic"
    packed = bomb(
        *(ANTHROPIC_HEAD, size, ANTHROPIC_TAIL) if anthropic else (OPENAI_HEAD, size, OPENAI_TAIL)
    )
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(packed)}\r\n\r\n"
    ).encode()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in request.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                writer.write(head + packed)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the server closes
        finally:
            writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    from turnbench.backends.retry import RetryPolicy
    from turnbench.errors import RequestFailedError

    policy = RetryPolicy(max_attempts=1, request_timeout=60)
    messages = [{"role": "user", "content": "hi"}]
    if anthropic:
        from turnbench.backends.anthropic_native import AnthropicBackend

        backend: object = AnthropicBackend(
            "anthropic/m", "m", api_key="k-1234", base_url=f"http://127.0.0.1:{port}",
            concurrency=1, policy=policy,
        )  # fmt: skip
    else:
        from turnbench.backends.openai_compat import OpenAICompatBackend

        host = "example.test" if path == "proxy" else "127.0.0.1"
        if path == "proxy":
            os.environ["HTTP_PROXY"] = f"http://127.0.0.1:{port}"
            os.environ.pop("NO_PROXY", None)
            os.environ.pop("no_proxy", None)
        backend = OpenAICompatBackend(
            "openai/m", "m", base_url=f"http://{host}:{port}/v1", concurrency=1, policy=policy
        )
    from turnbench.types import RequestParams

    before = peak_mb()
    try:
        completion = await backend.complete(messages, RequestParams())  # type: ignore[attr-defined]
        outcome = f"accepted: an answer of {len(completion.text)} characters"
    except RequestFailedError as error:
        outcome = f"refused: {error.message}"
    finally:
        await backend.aclose()  # type: ignore[attr-defined]
        server.close()
    return {
        "path": path,
        "wire_bytes": len(packed),
        "outcome": outcome[:300],
        "peak_growth_mb": round(peak_mb() - before, 1),
    }


if __name__ == "__main__":
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 200 * 1024 * 1024
    print(json.dumps(asyncio.run(main(sys.argv[1], size))))
