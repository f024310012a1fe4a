"""Finding an attack's text inside a tool result: pure text, no package import.

Why this is not a substring test: an injection reaches the model through two YAML passes.
Upstream formats it into a double-quoted scalar of the suite's YAML and parses that (line
breaks fold: "\\n\\n" becomes "\\n", a single "\\n" a space), then the tool dumps the value it
returns with `yaml.safe_dump` (long lines wrap at 80 columns, quotes are escaped). So we
compare texts with every run of white space made one space, after reading the tool result
back as YAML when it is YAML.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import yaml

_SPACE = re.compile(r"\s+")
#: libyaml's loader where PyYAML was built with it (the pure-Python one parses a workspace
#: tool result in about 5 ms, libyaml in a tenth of that)
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def normalized(text: str) -> str:
    """`text` with every run of white space one space, trimmed."""
    return _SPACE.sub(" ", text).strip()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def readable_texts(tool_result: str) -> list[str]:
    """The tool result as the model reads it, normalized: its raw text, and every string of
    it read back as YAML (`tool_result_to_str` dumps results as YAML), when it parses."""
    return list(_readable(tool_result))


@lru_cache(maxsize=1024)
def _readable(tool_result: str) -> tuple[str, ...]:
    """Why cached: a result is searched once per goal or injection, and a scripted agent
    searches every result of the conversation again on each request."""
    texts = [normalized(tool_result)]
    try:
        parsed = _load(tool_result)
    except yaml.YAMLError:
        return tuple(texts)
    texts.extend(normalized(s) for s in _strings(parsed))
    return tuple(texts)


def _load(text: str) -> Any:
    """`yaml.safe_load(text)`, by libyaml when it is there; a text libyaml refuses is read
    by the pure-Python loader, so whatever `safe_load` reads is still read."""
    if _FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=_FAST_LOADER)  # (libyaml's safe loader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def contains(tool_result: str, text: str) -> bool:
    """Whether `text` (an injection task's goal, say) is inside the tool result."""
    wanted = normalized(text)
    return bool(wanted) and any(wanted in seen for seen in readable_texts(tool_result))


def first_found(tool_result: str, texts: Mapping[str, str]) -> str | None:
    """The key of the longest of `texts` found in the tool result (None if none is): the
    longest, so that a goal that is part of another is not taken for it."""
    seen = readable_texts(tool_result)
    found = [
        (len(wanted), key)
        for key, text in texts.items()
        if (wanted := normalized(text)) and any(wanted in s for s in seen)
    ]
    return max(found)[1] if found else None


def found_in_any(results: Iterable[str], texts: Mapping[str, str]) -> tuple[int, str] | None:
    """(index of the first result holding one of `texts`, that text's key), or None."""
    for index, result in enumerate(results):
        key = first_found(result, texts)
        if key is not None:
            return index, key
    return None
