"""The child process that runs the deterministic checks which may not finish (see bounded.py).

`python -m turnbench.benchmarks.custom.check_worker`: it imports what the checks need, writes one
`{"op": "hello"}` line, then reads requests from stdin (an 8-byte big-endian length and a
pickle of `(id, Check, answer)`, written by the parent, which built them) and writes one JSON
line per request, `{"id", "passed", "detail"}`, in order. A check that raises is a failed
check with the error's name. The parent kills the process when a check runs out of time.
"""

from __future__ import annotations

import json
import pickle
import sys
from typing import BinaryIO, TextIO

from turnbench.benchmarks.custom.checks import CheckResult, run_check

LENGTH_BYTES = 8


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def serve(requests: BinaryIO, replies: TextIO) -> None:
    """Answer requests until the parent closes stdin."""
    replies.write(json.dumps({"op": "hello"}) + "\n")
    replies.flush()
    while True:
        header = _read_exactly(requests, LENGTH_BYTES)
        if header is None:
            return
        payload = _read_exactly(requests, int.from_bytes(header, "big"))
        if payload is None:
            return
        ident, check, answer = pickle.loads(payload)  # written by our own parent
        try:
            result = run_check(check, answer)
        except Exception as error:  # a check's failure is its outcome
            result = CheckResult(False, f"the check could not run ({type(error).__name__})")
        reply = {"id": ident, "passed": result.passed, "detail": result.detail}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    import jsonschema  # noqa: F401 - imported before hello, so no check's time goes to it
    import referencing  # noqa: F401

    serve(sys.stdin.buffer, sys.stdout)


if __name__ == "__main__":
    main()
