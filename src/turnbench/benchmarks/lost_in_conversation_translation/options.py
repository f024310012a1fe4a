"""lost-in-conversation-translation's options (`-B key=value`; each is its own flag too).

`--conversation` is repeatable (`--conversation full --conversation sharded`); as `-B` it
takes a comma-separated list (`-B conversation=full,sharded`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from turnbench.benchmarks.options import BenchmarkOptions, option

ConversationType = Literal["full", "concat", "sharded"]
CONVERSATION_TYPES: tuple[ConversationType, ...] = ("full", "concat", "sharded")


class TranslationOptions(BenchmarkOptions):
    # (names checked by `_listed`: the command line's repeatable flags take plain strings)
    conversation: list[str] | None = option(
        flag="--conversation",
        help="Conversation types to hold, repeatable: full (the whole document in one "
        "turn), concat (all chunks in one turn, as a list), sharded (one chunk per turn). "
        "Default: full and sharded.",
    )
    simulations: int | None = option(
        flag="--simulations",
        help="Conversations per sample and conversation type, each with its own recorded "
        "seed (default 1); raising it on a resume only adds conversations.",
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

    @field_validator("simulations")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= 1000:
            raise ValueError("must be between 1 and 1000")
        return value
