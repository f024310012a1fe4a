"""The floor of the request-path benchmarks: a plain aiohttp loop sending judge requests.

One ClientSession, a semaphore, json.dumps / json.loads: what any Python client reaches
against the fake server. It is its own script, importing only asyncio, json and aiohttp, so
that its process pays no import a bare client would not (the benchmark scripts that start it
import turnbench's fake server). Prints how many replies hold a "[[" rating; with `--marks
FILE`, writes its imports' and its whole time (seconds from its start) there as JSON.

    python benchmarks/plain_loop.py REQUESTS.jsonl BASE_URL CONCURRENCY MODEL [--marks FILE]

REQUESTS.jsonl: one JSON array of chat messages per line.
"""

import time

STARTED = time.perf_counter()

import asyncio  # noqa: E402  (after the clock: the imports are part of what is timed)
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import aiohttp  # noqa: E402

IMPORTED = time.perf_counter() - STARTED


async def send_all(requests_file: Path, base_url: str, concurrency: int, model: str) -> int:
    bodies = [json.loads(line) for line in requests_file.read_text("utf-8").splitlines()]
    semaphore = asyncio.Semaphore(concurrency)
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(messages: list[dict]) -> str:
            body = json.dumps(
                {
                    "model": model,
                    "messages": messages,
                    "n": 1,
                    "temperature": 0.0,
                    "max_tokens": 2048,
                }
            ).encode()
            async with semaphore, session.post(url, data=body, headers=headers) as response:
                reply = json.loads(await response.read())
            return reply["choices"][0]["message"]["content"] or ""

        replies = await asyncio.gather(*(one(m) for m in bodies))
    return sum(1 for reply in replies if "[[" in reply)


def main() -> None:
    import argparse  # (not counted as the loop's imports: a bare client needs none)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=Path, help="JSONL: one array of messages a line")
    parser.add_argument("base_url")
    parser.add_argument("concurrency", type=int)
    parser.add_argument("model")
    parser.add_argument("--marks", type=Path, help="Write the imports' and whole time here.")
    args = parser.parse_args()
    rated = asyncio.run(send_all(args.requests, args.base_url, args.concurrency, args.model))
    if args.marks is not None:
        marks = {"imports": IMPORTED, "exit": time.perf_counter() - STARTED}
        args.marks.write_text(json.dumps(marks), "utf-8")
    print(rated)


if __name__ == "__main__":
    main()
