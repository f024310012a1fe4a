"""The paired-differences chart of the report: a hand-drawn SVG (one per comparison, so it
must be cheap), valid XML, every label escaped, one dot per row and a line per interval."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ElementTree

import pytest

from turnbench.report import charts

SVG = "{http://www.w3.org/2000/svg}"


def _svg(uri: str) -> ElementTree.Element:
    assert uri.startswith("data:image/svg+xml;base64,")
    return ElementTree.fromstring(base64.b64decode(uri.split(",", 1)[1]))


def test_rows_labels_and_intervals():
    rows = [
        ("overall", -0.3, -0.8, 0.2, "no_change"),
        ('<script>alert(1)</script> & "x"', 1.2, 0.4, 2.0, "better"),
        ("writing", -2.5, -3.1, -1.9, "worse"),
        ("no interval", 0.0, None, None, "no_change"),
    ]
    root = _svg(charts.deltas(rows, "a → b <b>"))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "a → b <b>" in texts  # the title, as text (escaped in the markup)
    assert '<script>alert(1)</script> & "x"' in texts
    assert root.find(f".//{SVG}script") is None and root.find(f".//{SVG}b") is None
    circles = root.findall(f".//{SVG}circle")
    assert len(circles) == 4
    assert [c.get("fill") for c in circles] == ["#757575", "#2e7d32", "#c62828", "#757575"]
    # an interval line per row that has one, and the dots in row order, top to bottom
    whiskers = [line for line in root.iter(f"{SVG}line") if line.get("stroke-width") == "2.5"]
    assert len(whiskers) == 3
    assert [float(c.get("cy")) for c in circles] == sorted(float(c.get("cy")) for c in circles)
    # zero sits in the middle of a symmetric axis: the better row's dot is right of it
    zero = next(line for line in root.iter(f"{SVG}line") if line.get("stroke") == "#333333")
    assert float(circles[1].get("cx")) > float(zero.get("x1")) > float(circles[2].get("cx"))


@pytest.mark.parametrize(
    ("reach", "step"), [(0.05, 0.02), (0.3, 0.1), (0.7, 0.25), (2.4, 1.0), (9.0, 5.0)]
)
def test_tick_steps_are_round(reach, step):
    assert charts._tick_step(reach) == pytest.approx(step)


def test_long_labels_are_shortened_and_nan_is_not_drawn():
    name = "m" * 200
    root = _svg(charts.deltas([(name, float("nan"), None, None, "no_change")], "t"))
    assert root.find(f".//{SVG}circle") is None
    shown = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("m")]
    assert shown and len(shown[0]) == charts.LABEL_LIMIT
