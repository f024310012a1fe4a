"""Reading a benchmark file (YAML or JSON) into plain values that remember their lines.

Every value of the file is paired with the line it starts on (1-based), so validation can
name the line of each mistake. YAML is read with PyYAML's safe node API (no tags that build
objects, nothing executed); JSON files get JSON's own meaning for every scalar (`1e5` is a
number, as JSON says, not a string as YAML 1.1 would read it). Keys given twice in one
mapping are mistakes, not silently overwritten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from turnbench.textio import (
    MAX_DEPTH,
    ErrorCollector,
    NestingError,
    json_problem,
    loads_json,
    read_text,
)

Where = tuple[str | int, ...]


@dataclass
class Document:
    path: Path
    value: Any
    lines: dict[Where, int] = field(default_factory=dict)

    def line(self, where: Where) -> int | None:
        """The line of the value at `where`, or of its nearest enclosing value."""
        for end in range(len(where), -1, -1):
            found = self.lines.get(where[:end])
            if found is not None:
                return found
        return None


#: values a file may expand to: YAML aliases can nest ("a billion laughs"), and every use of
#: an alias is a value of its own here
MAX_VALUES = 200_000


class TooLarge(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing values nested deeper than MAX_DEPTH while it composes
    them (its composer recurses once per level: a deep file would end in RecursionError)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if not self.check_event(yaml.CollectionStartEvent):
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise NestingError(self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, json_scalars: bool, errors: ErrorCollector):
        self.loader = loader
        self.json_scalars = json_scalars
        self.errors = errors
        self.lines: dict[Where, int] = {}
        self.values = 0

    def build(self, node: yaml.Node, where: Where) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise TooLarge
        self.lines[where] = node.start_mark.line + 1
        collection = isinstance(node, yaml.MappingNode | yaml.SequenceNode)
        if collection and len(where) >= MAX_DEPTH:
            raise NestingError(node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            value: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
                line = key_node.start_mark.line + 1
                if not isinstance(key, str | int) or isinstance(key, bool):
                    self.errors.add(line, "a key must be a plain name")
                    continue
                if key in value:
                    self.errors.add(line, f"key {key!r} is given twice")
                    continue
                value[key] = self.build(value_node, (*where, key))
                self.lines[(*where, key)] = line  # a value is located by its key's line
            return value
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*where, index)) for index, item in enumerate(node.value)]
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> Any:
        if self.json_scalars and isinstance(node, yaml.ScalarNode):
            if node.style == '"':
                return node.value
            try:
                return json.loads(node.value)
            except ValueError:
                return node.value
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as error:
            self.errors.add(node.start_mark.line + 1, f"unreadable value ({_problem(error)})")
            return None


def _problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return str(problem)


def load_document(path: Path, errors: ErrorCollector) -> Document | None:
    """The file's values and lines; None (with the problem collected) if it cannot be read
    as YAML or JSON at all."""
    text = read_text(path)
    if not text.strip():
        errors.add(None, "the file is empty")
        return None
    is_json = path.suffix.lower() == ".json"
    if is_json:
        try:
            loads_json(text)
        except (json.JSONDecodeError, NestingError) as error:
            errors.add(error.lineno, json_problem(error))
            return None
        # valid JSON has tabs only between tokens (a tab inside a string must be escaped),
        # where YAML refuses them; spaces keep every value and line where it was
        text = text.replace("\t", " ")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except NestingError as error:
        errors.add(error.lineno, error.msg)
        return None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        errors.add(
            mark.line + 1 if mark is not None else None, f"not valid YAML: {_problem(error)}"
        )
        return None
    finally:
        loader.dispose()
    if node is None:
        errors.add(None, "the file is empty")
        return None
    builder = _Builder(yaml.SafeLoader(""), is_json, errors)
    try:
        value = builder.build(node, ())
    except NestingError as error:
        errors.add(error.lineno, error.msg)
        return None
    except (TooLarge, RecursionError):
        errors.add(
            None,
            f"the file expands to more than {MAX_VALUES} values (aliases nested in aliases?)",
        )
        return None
    return Document(path, value, builder.lines)
