"""turnbench's one HTML stack: jinja2 templates, autoescaped, in one environment.

Every page and section of `turnbench report` and of `turnbench view` (its run, conversation
and human-judging pages), and a benchmark's own outcome template, is rendered by the one
environment made here (`environment`), with autoescape on, so a value reaches the markup
escaped unless it is `Markup`, and a name a template does not get is an error rather than
empty text. Only three kinds of value are `Markup`: what a template rendered (`render`),
the page's own constants (style, script, content policy: `assets.py`) and text made
breakable by `markup.breakable`, which escapes every piece of it first. A chart is a
`data:` URI string (`charts.py` escapes each label inside its SVG) and goes into an
attribute like any other text.

The filters (`FILTERS`: `num`, `ci`, `long_text`, `value`) and macros (`macros.html`: tables, cells,
badges, charts, sections) are written once, here and in `templates/`. The viewer adds its
own folder of pages (`environment(VIEW_FOLDER)`: searched first, the report's templates
still found); this module never imports the view.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template
from markupsafe import Markup

from turnbench.report.cells import CELL_TYPES
from turnbench.report.markup import fmt_ci, long_text, num, shown_value

TEMPLATES = Path(__file__).parent / "templates"


#: the report's number formats (`num`: a number to 2 places, "–" for none; `ci`: "[low,
#: high]"), written as the view's filters of those names write numbers, and `long_text`
#: for untrusted text (markup.long_text)
FILTERS: Mapping[str, Any] = {
    "num": num,
    "ci": fmt_ci,
    "long_text": long_text,
    "value": shown_value,
}


def _is_cell(value: Any) -> bool:
    return isinstance(value, CELL_TYPES)


class _Undefined(StrictUndefined):
    """A name or field a template does not get: an error when shown, iterated or compared
    (never empty text in a page), but false in a test (`{% if run.counts.expected %}`), so
    an optional field can be checked for before it is shown."""

    def __bool__(self) -> bool:
        return False


@functools.cache
def environment(*folders: str) -> Environment:
    """The environment of turnbench's pages (one per set of folders, made once per
    process): `folders` searched first, then the report's templates."""
    env = Environment(
        loader=FileSystemLoader([*folders, str(TEMPLATES)]),
        autoescape=True,
        undefined=_Undefined,
        auto_reload=False,  # (the package's files do not change while it runs)
    )
    env.filters.update(FILTERS)
    env.tests["cell"] = _is_cell
    return env


@functools.cache
def template(name: str) -> Template:
    return environment().get_template(name)


def render(name: str, **context: Any) -> Markup:
    """A template of the report rendered: markup, every value in it escaped by autoescape."""
    return Markup(template(name).render(**context))  # (autoescaped output)


def macro(name: str, macro_name: str) -> Any:
    """A macro of a template, to call from Python (it returns markup, like `render`)."""
    return getattr(template(name).module, macro_name)


@functools.cache
def _file_template(path: Path) -> Template:
    return environment().from_string(path.read_text("utf-8"))


def render_file(path: Path | None, **context: Any) -> Markup:
    """A template file outside the report's folder rendered in the same environment (a
    benchmark's own outcome template, beside its module: it may use the report's filters
    and macros); None: the generic outcome (`outcome.html`, its fields listed)."""
    if path is None:
        return render("outcome.html", **context)
    return Markup(_file_template(path).render(**context))  # (autoescaped output)
