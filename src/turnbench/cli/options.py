"""Small parsers for option values shared by several commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from turnbench.errors import UserError


def parse_json_object(text: str | None, flag: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{flag}: not valid JSON ({error.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise UserError(f"{flag}: expected a JSON object such as '{{\"seed\": 1}}'")
    return value


def existing_path(path: Path | None, flag: str) -> Path | None:
    if path is not None and not path.exists():
        raise UserError(f"{flag} {path}: no such file or folder")
    return path


def demo_out_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("turnbench")) / "runs" / "demo"
