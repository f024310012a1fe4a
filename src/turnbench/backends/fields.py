"""Request fields the user may add (--model-extra / --judge-extra) and those they may not."""

from __future__ import annotations

from typing import Any

from turnbench.errors import RequestFieldConflictError

# What the benchmark itself decides: the conversation, the model, one plain reply.
RESERVED_FIELDS = frozenset(
    {
        "messages",
        "model",
        "n",
        "stream",
        "tools",
        "tool_choice",
        "functions",
        "function_call",
        "response_format",
        # the Anthropic Messages API keeps the system prompt in a field of its own: through
        # it a judge prompt could be replaced while the log shows the benchmark's
        "system",
    }
)


def check_extra_fields(extra: dict[str, Any], flag: str) -> dict[str, Any]:
    """Return `extra` unchanged, or refuse it, listing every reserved key in it (exit 8)."""
    offending = sorted(key for key in extra if key in RESERVED_FIELDS)
    if offending:
        raise RequestFieldConflictError(
            f"{flag} may not set {', '.join(offending)}: the benchmark controls "
            f"{'that field' if len(offending) == 1 else 'those fields'} "
            f"(not allowed: {', '.join(sorted(RESERVED_FIELDS))})"
        )
    return extra
