"""`turnbench export --format conversations`: every conversation of a run, one JSON object a
line, in OpenAI's chat format (what fine-tuning reads and other tools import).

Each object is `Conversation.export()` of the one reader of conversations
(`Run.conversations`): `benchmark`, `sample_id`, `model`, `trial`, `arm` (a run with stress
arms), `messages` (the model's last request, its reply, and any closing message it never
answered: `role`, `content`, `tool_calls` with `id`, `type`, `function.name`,
`function.arguments`; a tool's result as `{"role": "tool", "tool_call_id", "content"}`),
`outcome` (the benchmark's typed outcome as JSON; a conversation judged turn by turn: its
judged turns' scores) and `score`. Conversations whose requests were never recorded
(answers imported from files) are counted and left out: their messages would be the
replies alone.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnbench.errors import UserError
from turnbench.store.rundir import Run


@dataclass
class Exported:
    written: int = 0
    without_requests: int = 0  # left out: their requests are not in the log


def conversation_rows(run: Run, exported: Exported) -> Iterator[dict[str, Any]]:
    """The export's objects, in sample, model, trial and arm order (a conversation is read
    from the log when its turn comes: the export holds one at a time)."""
    for conversation in run.conversations(arm="any"):
        if not conversation.requests_recorded:
            exported.without_requests += 1
            continue
        exported.written += 1
        yield conversation.export()


def write_conversations(run: Run, target: Path) -> Exported:
    """Write the export to `target` (a temporary file renamed into place; "-": standard
    output)."""
    exported = Exported()
    rows = conversation_rows(run, exported)
    if str(target) == "-":
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return exported
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                for row in rows:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise UserError(f"cannot write {target}: {error.strerror or error}") from None
    return exported
