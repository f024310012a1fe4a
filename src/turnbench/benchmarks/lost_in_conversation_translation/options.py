"""lost-in-conversation-translation's options (`-B key=value`; each is its own flag too).

`--conversation` is repeatable (`--conversation full --conversation sharded`); as `-B` it
takes a comma-separated list (`-B conversation=full,sharded`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from turnbench.benchmarks.options import SimulationsOption, option

ConversationType = Literal["full", "concat", "sharded"]
CONVERSATION_TYPES: tuple[ConversationType, ...] = ("full", "concat", "sharded")


class TranslationOptions(SimulationsOption):
    # (names checked by `_listed`: the command line's repeatable flags take plain strings)
    conversation: list[str] | None = option(
        flag="--conversation",
        help="Conversation types to hold, repeatable: full (the whole document in one "
        "turn), concat (all chunks in one turn, as a list), sharded (one chunk per turn). "
        "Default: full and sharded.",
    )

    @field_validator("conversation", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        """`-B conversation=full,sharded` (a string) as the list the flag gives; a name that
        is no conversation type is refused here, with the choices."""
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple):
            unknown = [str(v) for v in value if v not in CONVERSATION_TYPES]
            if unknown:
                raise ValueError(
                    f"{', '.join(unknown)} is not one of: {', '.join(CONVERSATION_TYPES)}"
                )
        return value

    @field_validator("conversation")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value:
                raise ValueError("name at least one conversation type")
            return list(dict.fromkeys(value))
        return value
