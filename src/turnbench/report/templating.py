"""The report's one HTML stack: jinja2 templates (`report/templates/`), autoescaped.

Every page and section of `turnbench report` is a template rendered here with autoescape
on, so a value reaches the markup escaped unless it is `Markup`. Only three kinds of value
are `Markup`: what a template rendered (`render`), the page's own constants (style, script,
content policy: `assets.py`) and text made breakable by `markup.breakable`, which escapes
every piece of it first. A chart is a `data:` URI string (`charts.py` escapes each label
inside its SVG) and goes into an attribute like any other text.

The filters and macros here (`FILTERS`: `num`, `ci`, `long_text`; `macros.html`: tables,
cells, badges, charts, sections) are what a page of `turnbench view` needs too: an
environment over the view's folder and `TEMPLATES` with these filters can import them (the
view is a higher layer; this module never imports it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template
from markupsafe import Markup

from turnbench.report.cells import CELL_TYPES
from turnbench.report.markup import fmt, fmt_ci, long_text

TEMPLATES = Path(__file__).parent / "templates"


#: the report's number formats (`num`: a number to 2 places, "–" for none; `ci`: "[low,
#: high]"), written as the view's filters of those names write numbers, and `long_text`
#: for untrusted text (markup.long_text)
FILTERS: Mapping[str, Any] = {"num": fmt, "ci": fmt_ci, "long_text": long_text}


def _is_cell(value: Any) -> bool:
    return isinstance(value, CELL_TYPES)


@functools.cache
def environment() -> Environment:
    """The report's environment (made once per process): autoescape on, and a name a
    template does not get is an error rather than empty text."""
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
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
