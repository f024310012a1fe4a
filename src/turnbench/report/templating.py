"""The report's one HTML stack: jinja2 templates (`report/templates/`), autoescaped.

Every page and section of `turnbench report` is a template rendered here with autoescape
on, so a value reaches the markup escaped unless it is `Markup`. Only three kinds of value
are `Markup`: what a template rendered (`render`), the page's own constants (style, script,
content policy: `assets.py`) and text made breakable by `markup.breakable`, which escapes
every piece of it first. A chart is a `data:` URI string (`charts.py` escapes each label
inside its SVG) and goes into an attribute like any other text.

The filters and macros here (`num`, `ci`, `signed`, `macros.html`: tables, badges, cells,
sections) are the ones a page of `turnbench view` needs too: `environment(extra)` puts a
folder of other templates before these, so they can extend and import them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, Template
from markupsafe import Markup

from turnbench.report.cells import CELL_TYPES
from turnbench.report.markup import breakable, fmt, fmt_ci, long_text

TEMPLATES = Path(__file__).parent / "templates"


def signed(value: Any, digits: int = 2) -> str:
    """A difference with its sign ("+0.50"); "–" for no number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"{value:+.{digits}f}"


def thousands(value: int) -> str:
    return f"{value:,}"


FILTERS: Mapping[str, Any] = {
    "num": fmt,
    "ci": fmt_ci,
    "signed": signed,
    "thousands": thousands,
    "breakable": breakable,
    "long_text": long_text,
}


def _is_cell(value: Any) -> bool:
    return isinstance(value, CELL_TYPES)


def make_environment(extra: Path | None = None) -> Environment:
    """An environment over the report's templates (and `extra`'s first, when given), with
    autoescape on and undefined names an error rather than empty text."""
    loaders = [FileSystemLoader(str(TEMPLATES))]
    if extra is not None:
        loaders.insert(0, FileSystemLoader(str(extra)))
    env = Environment(
        loader=ChoiceLoader(loaders),
        autoescape=True,
        undefined=StrictUndefined,
        auto_reload=False,  # (the package's files do not change while it runs)
    )
    env.filters.update(FILTERS)
    env.tests["cell"] = _is_cell
    return env


@functools.cache
def environment() -> Environment:
    """The report's environment (made once per process)."""
    return make_environment()


@functools.cache
def template(name: str) -> Template:
    return environment().get_template(name)


def render(name: str, **context: Any) -> Markup:
    """A template of the report rendered: markup, every value in it escaped by autoescape."""
    return Markup(template(name).render(**context))  # (autoescaped output)


def macro(name: str, macro_name: str) -> Any:
    """A macro of a template, to call from Python (it returns markup, like `render`)."""
    return getattr(template(name).module, macro_name)
