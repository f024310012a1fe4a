"""Which function turns a downloaded source into a pinned data file.

A data file of a benchmark's `sources.json` may name an extractor as "module:function": a
function of the benchmark's own package that reads the downloaded bytes (parsing, never
running them) and returns the file's exact bytes, which are then checked against the pin.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from turnbench.errors import UserError


def extractor(name: str) -> Callable[[bytes], bytes]:
    """The extractor a data file names ("module:function", inside turnbench)."""
    module_name, _, function = name.partition(":")
    if not function or not module_name.startswith("turnbench."):
        raise UserError(f"data file extractor {name!r} is not a turnbench module:function")
    return getattr(importlib.import_module(module_name), function)  # type: ignore[no-any-return]
