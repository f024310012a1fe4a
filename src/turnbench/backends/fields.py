"""Request fields the user may add (--model-extra / --judge-extra) and those they may not."""

from __future__ import annotations

from typing import Any

from turnbench.errors import RequestFieldConflictError, UserError
from turnbench.types import MAX_TOKEN_LIMIT

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


#: token limits a user may set through extra fields: held to the bounds of --max-new-tokens
TOKEN_FIELDS = frozenset({"max_tokens", "max_completion_tokens", "max_new_tokens"})


def _numbers(value: Any) -> list[float]:
    """Every float of a parsed JSON value (walked without recursion; it is at most
    textio.MAX_DEPTH deep anyway)."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def check_extra_values(extra: dict[str, Any], flag: str) -> None:
    """Refuse (exit 2) a token limit out of 1..MAX_TOKEN_LIMIT and any number that is not
    finite (`1e400` parses as infinity, and `NaN` is no JSON a server reads): sent as
    written, they would fail every request, or be budgeted as a limit no model has."""
    for key in sorted(TOKEN_FIELDS & set(extra)):
        given = extra[key]
        if (
            isinstance(given, bool)
            or not isinstance(given, int)
            or not 1 <= given <= MAX_TOKEN_LIMIT
        ):
            raise UserError(
                f"{flag}: {key} must be a whole number from 1 to {MAX_TOKEN_LIMIT}, got {given!r}"
            )
    bad = [n for n in _numbers(extra) if n != n or n in (float("inf"), float("-inf"))]
    if bad:
        raise UserError(f"{flag}: numbers must be finite, got {bad[0]!r}")


def check_extra_fields(extra: dict[str, Any], flag: str) -> dict[str, Any]:
    """Return `extra` unchanged, or refuse it, listing every reserved key in it (exit 8),
    or a value out of bounds (`check_extra_values`, exit 2)."""
    offending = sorted(key for key in extra if key in RESERVED_FIELDS)
    if offending:
        raise RequestFieldConflictError(
            f"{flag} may not set {', '.join(offending)}: the benchmark controls "
            f"{'that field' if len(offending) == 1 else 'those fields'} "
            f"(not allowed: {', '.join(sorted(RESERVED_FIELDS))})"
        )
    check_extra_values(extra, flag)
    return extra
