"""lost-in-conversation-translation, a built-in benchmark: its class is `BENCHMARK`.

The class is imported when first asked for (PEP 562), so reading the package's options
(`options.py`, which the command line's flags come from) does not load its rules and data.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARK", "LostInConversationTranslation"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from turnbench.benchmarks.lost_in_conversation_translation.benchmark import (
            LostInConversationTranslation,
        )

        return LostInConversationTranslation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
