"""MkDocs hooks: the reference pages are generated from the code at build time.

A page holds a marker where a generated part goes, and `on_page_markdown` replaces it, so
the command-line reference is read from the typer commands, the results reference from
`docs/results.schema.json` (itself generated from the pydantic models, and checked by the
unit tests) and the benchmark options from each built-in benchmark's options model. None of
them can drift from the code: a flag added is a row added at the next build.

    <!-- generated:cli -->                every command: usage, arguments, options
    <!-- generated:results-schema -->     results.json, every shape and nested object
    <!-- generated:audit-schema -->       audit.json
    <!-- generated:benchmark-options -->  every built-in benchmark's own options (-B)

The site documents the tree it is built from: `src/` goes first on the import path, whatever
turnbench the running environment has installed.

Every piece of text taken from the code (help strings, descriptions) is escaped before it
goes into a Markdown table: `<think>` in a help string is text, not a tag.
"""

from __future__ import annotations

import html
import json
import re
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated:([a-z-]+) -->[ \t]*$", re.MULTILINE)

# Markdown would read these as emphasis, links or table cells: numeric entities are inert.
_INERT = {"|": "&#124;", "*": "&#42;", "_": "&#95;", "[": "&#91;", "]": "&#93;", "\\": "&#92;"}
_INERT["`"] = "&#96;"


def on_config(config: Any, **_: Any) -> Any:
    """Put this tree's `src/` first, so every generated page describes the code beside it."""
    source = str(ROOT / "src")
    if source not in sys.path:
        sys.path.insert(0, source)
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace every marker of the page with its generated Markdown."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated section {name!r}: one of {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)


# ---------------------------------------------------------------------------- escaping


def inert(text: str) -> str:
    """`text` as literal Markdown: HTML-escaped, and no character Markdown would act on."""
    escaped = html.escape(text, quote=False)
    return "".join(_INERT.get(char, char) for char in escaped)


def cell(text: str) -> str:
    """One table cell: backtick spans become <code>, the rest is inert text, one line."""
    parts = text.replace("\r", " ").replace("\n", " ").split("`")
    if len(parts) % 2 == 0:  # an unclosed backtick: no code span, every part is text
        parts = [text.replace("\n", " ")]
    out = []
    for index, part in enumerate(parts):
        out.append(f"<code>{inert(part)}</code>" if index % 2 else inert(part))
    return "".join(out).strip()


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# ---------------------------------------------------------------------------- the CLI


def _help_text(command: Any) -> str:
    """A command's help without click's `\\b` paragraph markers."""
    text = command.help or ""
    return "\n".join(line for line in text.splitlines() if line.strip() != "\b").strip()


def _param_row(param: Any, ctx: Any) -> tuple[str, str]:
    """A parameter as `--help` shows it: its names and value, and its help with the
    default and the range the command line enforces (`get_help_record`, click's own)."""
    record = param.get_help_record(ctx)
    if record is None:  # an argument: click lists those in the usage line only
        name = (param.name or "").upper()
        notes = ["required" if param.required else "optional"]
        if param.nargs == -1:
            notes.append("any number")
        return cell(f"`{name}`"), cell(", ".join(notes))
    names, help_text = record
    return cell(f"`{names}`"), cell(" ".join(help_text.split()))


def _command_section(command: Any, path: list[str], ctx: Any, level: int) -> Iterator[str]:
    yield f"{'#' * level} {' '.join(path)}"
    yield ""
    text = _help_text(command)
    if text:
        for paragraph in re.split(r"\n\s*\n", text):
            yield inert(" ".join(paragraph.split()))
            yield ""
    yield "```"
    yield " ".join([*path, *command.collect_usage_pieces(ctx)])
    yield "```"
    yield ""
    params = [
        p for p in command.get_params(ctx) if not getattr(p, "hidden", False) and p.name != "help"
    ]
    arguments = [p for p in params if p.param_type_name == "argument"]
    options = [p for p in params if p.param_type_name != "argument"]
    if arguments:
        yield from table(("argument", ""), [_param_row(p, ctx) for p in arguments])
        yield ""
    if options:
        yield from table(("option", "meaning"), [_param_row(p, ctx) for p in options])
        yield ""


def cli_reference() -> str:
    """Every command of `turnbench`, read from the typer application itself.

    Typer carries its own copy of click, so commands are told apart by what they do (a
    group lists commands, a parameter names its kind), never by click's classes.
    """
    import typer

    from turnbench.cli import load

    app = load()  # (registers every command on the app)

    root = typer.main.get_command(app)
    lines: list[str] = []

    def walk(command: Any, path: list[str], parent: Any, level: int) -> None:
        ctx = command.context_class(command, info_name=path[-1], parent=parent)
        if hasattr(command, "list_commands"):
            lines.extend(_command_section(command, path, ctx, level))
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is None or sub.hidden:
                    continue
                walk(sub, [*path, name], ctx, level + (1 if parent is None else 0))
            return
        lines.extend(_command_section(command, path, ctx, level))

    walk(root, ["turnbench"], None, 2)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- JSON Schemas


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _type(schema: dict[str, Any]) -> str:
    """A schema's type as Markdown: links to the objects it names."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            return " or ".join(_type(option) for option in schema[combinator])
    if "const" in schema:
        return cell(f"`{json.dumps(schema['const'])}`")
    if "enum" in schema:
        return " or ".join(cell(f"`{json.dumps(value)}`") for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array of {_type(items)}" if items else "array"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and values:
            return f"object of {_type(values)}"
        return "object"
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    return str(kind) if kind else "any"


def _object_section(
    name: str, schema: dict[str, Any], level: int, top: bool = False
) -> Iterator[str]:
    yield f"{'#' * level} {name} {{ #{_anchor(name)} }}"
    yield ""
    if schema.get("description") and not top:
        yield cell(" ".join(schema["description"].split()))
        yield ""
    for branch in schema.get("allOf", []):
        condition = branch.get("if", {}).get("properties", {})
        then = branch.get("then", {})
        if len(condition) == 1 and "$ref" in then:
            key, rule = next(iter(condition.items()))
            if "const" in rule:
                yield (
                    f"When `{key}` is `{json.dumps(rule['const'])}`, also the keys of "
                    f"{_type(then)}."
                )
                yield ""
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        described = any(prop.get("description") for prop in properties.values())
        rows = []
        for key in sorted(properties):
            prop = properties[key]
            default = cell(f"`{json.dumps(prop['default'])}`") if "default" in prop else ""
            row = (cell(f"`{key}`"), _type(prop), "yes" if key in required else "", default)
            if described:
                row += (cell(" ".join(prop.get("description", "").split())),)
            rows.append(row)
        header = ("key", "type", "required", "default") + (("meaning",) if described else ())
        yield from table(header, rows)
        yield ""
    elif schema.get("type") == "object":
        yield "An object whose keys are not fixed."
        yield ""


def schema_reference(path: Path, level: int = 2) -> str:
    """A JSON Schema as sections: the document first, then every object it defines."""
    schema = json.loads(path.read_text("utf-8"))
    definitions: dict[str, Any] = schema.get("$defs", {})
    lines: list[str] = []
    if schema.get("description"):
        lines += [cell(" ".join(schema["description"].split())), ""]
    shapes = schema.get("anyOf") or schema.get("oneOf")
    if shapes:
        lines += [f"The file is one of: {', '.join(_type(s) for s in shapes)}.", ""]
        first = [s["$ref"].rsplit("/", 1)[-1] for s in shapes if "$ref" in s]
    else:
        lines += list(_object_section(schema.get("title", path.stem), schema, level, top=True))
        first = []
    ordered = first + sorted(name for name in definitions if name not in first)
    for name in ordered:
        lines += list(_object_section(name, definitions[name], level))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- benchmarks


def _choices(annotation: Any) -> str:
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    literal = args[0] if len(args) == 1 else annotation
    if typing.get_origin(literal) is typing.Literal:
        return ", ".join(cell(f"`{value}`") for value in typing.get_args(literal))
    return cell(getattr(literal, "__name__", str(literal)))


def benchmark_options() -> str:
    """Every built-in benchmark and its own options, from its options model."""
    from turnbench.benchmarks import builtin_benchmarks
    from turnbench.benchmarks.options import flag_of

    lines: list[str] = []
    for name, cls in builtin_benchmarks().items():
        lines += [f"## {name}", ""]
        fields = cls.options_model.model_fields
        if not fields:
            lines += ["No options of its own.", ""]
            continue
        rows = []
        for field_name, field in fields.items():
            flag = flag_of(cls.options_model, field_name)
            names = f"`-B {field_name}=VALUE`"
            if not flag.startswith("-B "):
                names += f", `{flag}`"
            rows.append((cell(names), _choices(field.annotation), cell(field.description or "")))
        lines += [*table(("option", "values", "meaning"), rows), ""]
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "results-schema": lambda: schema_reference(ROOT / "docs" / "results.schema.json", level=3),
    "audit-schema": lambda: schema_reference(ROOT / "docs" / "audit.schema.json", level=3),
    "benchmark-options": benchmark_options,
}
