"""The sharded translation documents of Laban et al. 2025 (`sharded_translation.json`).

The file is one JSON array of documents in the authors' schema: `task_id`, `document_de`
(the German source), `document_en` (the reference translation) and `shards`, the source cut
into 3-5 consecutive chunks numbered from 1 (other keys, such as `task`, are ignored). It is
content from outside, so it is validated where it enters: every problem is reported at once,
each with the line where its document starts and the field at fault, as one UserError.

Shard texts are kept as the file has them, empty ones included: two documents of the
authors' file end with an empty shard (wmt-news-17-de-en, the 4th of 4, and
wmt-news-20-de-en, the 5th of 5), so their `document_de` ends with a newline. The paper's
code reveals such a shard like any other (a turn whose chunk is empty); a benchmark that
prefers to skip it can filter on `shard.strip()`. In this file the shards joined by one
newline are exactly `document_de`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turnbench.errors import UserError
from turnbench.textio import ErrorCollector, parse_json, read_text, validate_row

DOCUMENTS = "lost_in_conversation/sharded_translation.json"


class Shard(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    shard_id: int = Field(ge=1)  # 1-based, in the order the shards are revealed
    shard: str  # may be empty: the file has two such shards (see the module docstring)


class ShardedDocument(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    task_id: str = Field(min_length=1)
    document_de: str = Field(min_length=1)
    document_en: str = Field(min_length=1)
    shards: list[Shard] = Field(min_length=1)


def _element_lines(text: str) -> list[int]:
    """The line on which each element of the top-level JSON array starts (the text is
    already known to be a valid JSON array)."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    index = text.index("[") + 1
    length = len(text)

    def skip(position: int) -> int:
        while position < length and text[position] in " \t\r\n":
            position += 1
        return position

    index = skip(index)
    while index < length and text[index] != "]":
        lines.append(text.count("\n", 0, index) + 1)
        _, index = decoder.raw_decode(text, index)
        index = skip(index)
        if index < length and text[index] == ",":
            index = skip(index + 1)
    return lines


def load_documents(path: Path) -> list[ShardedDocument]:
    """Every document of the file, in file order; any problem raises one UserError."""
    text = read_text(path)
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    value: Any = parse_json(text, str(path))
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a JSON array of documents, got {type(value).__name__}")
    if not value:
        raise UserError(f"{path}: the file holds no document")
    lines = _element_lines(text)
    collector = ErrorCollector(path)
    documents: list[ShardedDocument] = []
    seen: dict[str, int] = {}
    for number, (line, item) in enumerate(zip(lines, value, strict=True), start=1):
        document = validate_row(collector, line, item, ShardedDocument)
        if document is None:
            continue
        label = f"document {number} ({document.task_id!r})"
        ids = [shard.shard_id for shard in document.shards]
        if ids != list(range(1, len(ids) + 1)):
            collector.add(line, f"{label}: field 'shards': shard_id must run 1, 2, ... in order")
            continue
        if document.task_id in seen:
            collector.add(
                line, f"{label}: duplicate task_id (first on line {seen[document.task_id]})"
            )
            continue
        seen[document.task_id] = line
        documents.append(document)
    collector.raise_if_any()
    return documents
