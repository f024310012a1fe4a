"""The report's templates (report/templates/, report/templating.py): autoescaped, so every
value a template shows is text, whatever it holds; a cell (report/cells.py) says what it
is and the macros escape its text and its link alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from jinja2 import UndefinedError
from markupsafe import Markup

from tests.unit.test_compare import run_results
from turnbench.errors import UserError
from turnbench.report.cells import Badge, Bold, Lines, Link, Noted
from turnbench.report.templating import environment, render
from turnbench.results.shapes import JudgeOnlyResults, SingleRunResults
from turnbench.store.rundir import Run

HOSTILE = '<script>alert("x")</script>{{ 7 * 7 }}{% if 1 %}if{% endif %}'
SHOWN = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;{{ 7 * 7 }}{% if 1 %}if{% endif %}"


def table(headers: list[str], rows: list[list[object]]) -> str:
    template = environment().from_string(
        '{% from "macros.html" import table %}{{ table(headers, rows, text_columns=(0, 1)) }}'
    )
    return template.render(headers=headers, rows=rows)


def test_every_kind_of_cell_shows_its_text_as_text():
    cells = [
        HOSTILE,
        Bold(HOSTILE),
        Badge(HOSTILE, HOSTILE),
        Link(f'x" onclick="{HOSTILE}', HOSTILE, HOSTILE),
        Lines([HOSTILE, Bold(HOSTILE)]),
        Noted(HOSTILE, HOSTILE),
        None,
        8.0,
    ]
    markup = table([HOSTILE, "plain"], [cells])
    assert "<script" not in markup and 'onclick="' not in markup and "49" not in markup
    # the header, and each cell as its kind draws it, the text inside escaped
    assert f'<th class="text">{SHOWN}</th><th class="text">plain</th>' in markup
    assert f'<td class="text">{SHOWN}</td><td class="text"><b>{SHOWN}</b></td>' in markup
    assert f'<td><span class="badge {SHOWN}">{SHOWN}</span></td>' in markup
    assert f'<a class="{SHOWN}" href="x&#34; onclick=&#34;{SHOWN}">{SHOWN}</a>' in markup
    assert f"<td>{SHOWN}<br><b>{SHOWN}</b></td>" in markup
    assert f"<td>{SHOWN} <span class='muted'>{SHOWN}</span></td>" in markup
    assert "<td></td><td>8.0</td>" in markup  # None shows nothing, a number its text


def test_markup_passes_only_when_a_template_made_it():
    page = render("page.html", title=HOSTILE, body=Markup("<p>ours</p>"), policy="p",
                  style="s", script="j")  # fmt: skip
    assert f"<title>{SHOWN}</title>" in page and "<p>ours</p>" in page
    assert environment().autoescape is True


def test_a_name_a_template_does_not_get_is_an_error_not_empty_text():
    with pytest.raises(UndefinedError):
        render("page.html", title="t", body="b", policy="p", style="s")


def test_results_are_read_into_the_model_of_their_shape():
    single = run_results("mt-bench", "m", "openai/j", {"parser": "strict"})
    run = Run(path=Path("/runs/a"), label="a", results=single, records=[])
    assert isinstance(run.typed, SingleRunResults) and run.entries()[0].typed is run.typed
    model = {key: single[key] for key in ("benchmark", "model", "judge", "complete", "overall",
                                          "counts", "parse_failures")}  # fmt: skip
    judged = {**single, "models": {"m": model, "n": {**model, "model": "n"}}}
    for key in ("model", "overall", "counts", "parse_failures"):
        del judged[key]
    run = Run(path=Path("/runs/b"), label="b", results=judged, records=[])
    assert isinstance(run.typed, JudgeOnlyResults)
    assert [e.typed.model for e in run.entries()] == ["m", "n"]


def test_results_of_another_shape_are_one_clear_error():
    results = run_results("mt-bench", "m", "openai/j", {"parser": "strict"})
    del results["provenance"]["judging"]
    run = Run(path=Path("/runs/old"), label="old", results=results, records=[])
    with pytest.raises(UserError) as refused:
        run.typed  # noqa: B018
    assert "/runs/old/results.json: not the results this turnbench writes" in refused.value.message
    assert "judging" in refused.value.message
