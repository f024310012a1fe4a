"""The report's charts are hand-drawn SVG (no matplotlib, no numpy): each one decodes to
well-formed XML with the structure its data asks for (a polygon, bar or line per series,
gaps where values are missing), inert escaped labels and a legend naming every series."""

from __future__ import annotations

import base64
import itertools
import math
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from turnbench.report import charts

SVG = "{http://www.w3.org/2000/svg}"
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
HOSTILE = '<script>alert(1)</script> & "x"'
CONTROL = "line\nbreak\x1b[31m\x07\ufffftail"
LONG = "m" * 200


def _decode(uri: str) -> str:
    assert uri.startswith("data:image/svg+xml;base64,")
    return base64.b64decode(uri.split(",", 1)[1]).decode("utf-8")


def _svg(uri: str) -> ElementTree.Element:
    return ElementTree.fromstring(_decode(uri))


def _groups(root: ElementTree.Element, kind: str) -> list[ElementTree.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == kind]


def _texts(element: ElementTree.Element) -> list[str]:
    return [t.text or "" for t in element.iter(f"{SVG}text")]


def _legend(root: ElementTree.Element) -> tuple[list[str], list[str]]:
    """Names and swatch colours of the chart's one legend."""
    (legend,) = _groups(root, "legend")
    swatches = [e.get("fill") or e.get("stroke") for e in legend if e.tag != f"{SVG}text"]
    return _texts(legend), list(dict.fromkeys(swatches))


def _frames(root: ElementTree.Element) -> list[ElementTree.Element]:
    return [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "none"]


def _box(rect: ElementTree.Element) -> tuple[float, float, float, float]:
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))


def _bars(group: ElementTree.Element) -> list[tuple[float, float, float, float]]:
    return [_box(r) for r in group.iter(f"{SVG}rect")]


def _corners(polygon: ElementTree.Element) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in polygon.get("points").split()]


TASKS = ["CM", "SI", "AR", "TS", "CC"]
SERIES = [("model-a", [10.0, 8.0, 6.0, 4.0, 2.0]), ("model-b", [5.0, None, 7.0, 7.0, 10.0])]
EVERY_CHART = {
    "radar": lambda t: charts.radar(TASKS, SERIES, t),
    "bars": lambda t: charts.bars(TASKS, SERIES, t),
    "bars_horizontal": lambda t: charts.bars(TASKS, SERIES, t, horizontal=True),
    "turn_panels": lambda t: charts.turn_panels(
        TASKS, [("model-a", [("turn 1", [1, 2, 3, 4, 5]), ("turn 2", [5, 4, None, 2, 1])])], t
    ),
    "line_panels": lambda t: charts.line_panels([("CM", ["1", "2", "3"], SERIES)], t),
    "outcomes": lambda t: charts.outcomes(["model-a", "model-b"], [(3, 1, 1), (0, 2, 8)], t),
}


@pytest.mark.parametrize("name", EVERY_CHART)
def test_each_chart_is_sized_deterministic_and_inert(name):
    uri = EVERY_CHART[name]("A title")
    assert uri == EVERY_CHART[name]("A title")  # no dates, no random ids
    root = _svg(uri)
    width, height = int(root.get("width")), int(root.get("height"))
    assert width > 100 and height > 100
    assert root.get("viewBox") == f"0 0 {width} {height}"
    assert "A title" in _texts(root)
    for element in root.iter():
        assert element.tag.split("}")[-1] not in ("script", "foreignObject", "image", "a", "use")
        assert not any("href" in key or key.startswith("on") for key in element.attrib)
    assert "http" not in _decode(uri).replace('xmlns="http://www.w3.org/2000/svg"', "")


# -- radar -----------------------------------------------------------------------------------
def test_radar_polygons_start_at_the_top_go_clockwise_and_reach_the_outer_ring():
    root = _svg(charts.radar(TASKS, SERIES, "radar"))
    series = _groups(root, "series")
    assert len(series) == 2
    polygons = [g.find(f"{SVG}polygon") for g in series]
    assert [p.get("fill") for p in polygons] == TAB10[:2]
    assert all(float(p.get("fill-opacity")) < 0.2 for p in polygons)
    rings = sorted(float(c.get("r")) for c in _groups(root, "grid")[0].iter(f"{SVG}circle"))
    assert len(rings) == 5
    assert [r / rings[-1] for r in rings] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    spoke = _groups(root, "grid")[0].find(f"{SVG}line")
    centre = float(spoke.get("x1")), float(spoke.get("y1"))
    corners = _corners(polygons[0])
    assert len(corners) == 5
    # 10 (the first task) lies on the outer ring, straight above the centre
    top_x, top_y = corners[0]
    assert top_x == pytest.approx(centre[0], abs=0.02) and top_y < centre[1]
    assert math.dist(corners[0], centre) == pytest.approx(rings[-1], abs=0.02)
    # then clockwise: the second task is to the right, and each value at its share of 10
    assert corners[1][0] > centre[0]
    for corner, value in zip(corners, SERIES[0][1], strict=True):
        assert math.dist(corner, centre) == pytest.approx(rings[-1] * value / 10, abs=0.02)
    # the first category's label is written above the centre, centred on its spoke
    label = next(t for t in _groups(root, "categories")[0] if t.text == "CM")
    assert float(label.get("y")) < centre[1] - rings[-1]
    assert float(label.get("x")) == pytest.approx(centre[0], abs=0.02)
    assert _legend(root) == (["model-a", "model-b"], TAB10[:2])


def test_radar_of_shares_reaches_the_outer_ring_at_one():
    """StructFlowBench's WCSR per task is a share (0-1): on a 0-10 radar it would be a dot."""
    root = _svg(charts.radar(TASKS, [("m", [1.0, 0.5, 0.25, 0.5, 1.0])], "shares", maximum=1))
    rings = sorted(float(c.get("r")) for c in _groups(root, "grid")[0].iter(f"{SVG}circle"))
    spoke = _groups(root, "grid")[0].find(f"{SVG}line")
    centre = float(spoke.get("x1")), float(spoke.get("y1"))
    corners = _corners(_groups(root, "series")[0].find(f"{SVG}polygon"))
    assert math.dist(corners[0], centre) == pytest.approx(rings[-1], abs=0.02)
    assert math.dist(corners[2], centre) == pytest.approx(rings[-1] / 4, abs=0.02)
    assert {"0.2", "0.4", "0.6", "0.8", "1.0"} <= set(_texts(_groups(root, "grid")[0]))


def test_radar_missing_value_leaves_no_vertex_and_breaks_the_outline():
    root = _svg(charts.radar(TASKS, SERIES, "radar"))
    complete, gappy = _groups(root, "series")
    assert complete.find(f"{SVG}path") is None
    assert complete.find(f"{SVG}polygon").get("stroke") == TAB10[0]
    polygon = gappy.find(f"{SVG}polygon")
    assert len(_corners(polygon)) == 4 and polygon.get("stroke") == "none"
    # the outline runs CC -> CM (wrapping round), then AR -> TS -> CC: one unbroken run here
    (outline,) = gappy.findall(f"{SVG}path")
    assert outline.get("d").count("M") == 1 and outline.get("d").count("L") == 3
    assert len(gappy.findall(f"{SVG}circle")) == 4
    # two separate gaps give two runs
    root = _svg(charts.radar(TASKS, [("m", [5, None, 5, None, 5])], "radar"))
    assert _groups(root, "series")[0].find(f"{SVG}path").get("d").count("M") == 2


def test_palette_cycles_after_ten_series():
    series = [(f"m{i}", [5.0] * len(TASKS)) for i in range(11)]
    root = _svg(charts.radar(TASKS, series, "radar"))
    fills = [g.find(f"{SVG}polygon").get("fill") for g in _groups(root, "series")]
    assert fills[:7] == TAB10 and fills[10] == fills[0] and len(set(fills)) == 10


# -- bars ------------------------------------------------------------------------------------
def test_vertical_bars_one_per_value_with_heights_proportional():
    series = [("a", [10.0, 5.0, None, 2.5]), ("b", [float("nan"), 1.0, 4.0, 8.0])]
    root = _svg(charts.bars(["w", "x", "y", "z"], series, "bars"))
    groups = _groups(_groups(root, "bars")[0], "series")
    assert [len(_bars(g)) for g in groups] == [3, 3]  # None and NaN are not drawn
    assert [r.get("fill") for r in groups[1].iter(f"{SVG}rect")] == [TAB10[1]] * 3
    (frame,) = _frames(root)
    _, top, _, plot_height = _box(frame)
    bars = _bars(groups[0])
    assert bars[0][3] == pytest.approx(plot_height, abs=0.02)  # 10 fills the 0-10 axis
    assert bars[1][3] == pytest.approx(plot_height / 2, abs=0.02)
    assert bars[2][3] == pytest.approx(plot_height / 4, abs=0.02)
    assert all(y + h == pytest.approx(top + plot_height, abs=0.02) for _, y, _, h in bars)
    # bars of a group side by side, groups left to right
    first_b = _bars(groups[1])[0]
    assert bars[0][0] < bars[1][0] < bars[2][0] and bars[1][0] < first_b[0] < bars[2][0]
    grid = _texts(_groups(root, "grid")[0])
    assert grid == ["0", "2", "4", "6", "8", "10"]
    assert _legend(root) == (["a", "b"], TAB10[:2])
    assert "score" in _texts(root)


def test_horizontal_bars_grow_along_x_categories_top_to_bottom():
    series = [("a", [10.0, 5.0]), ("b", [None, 2.5])]
    root = _svg(charts.bars(["first", "second"], series, "h", horizontal=True, ylabel="share"))
    (frame,) = _frames(root)
    left, _, plot_width, _ = _box(frame)
    a, b = (_bars(g) for g in _groups(root, "series"))
    assert len(a) == 2 and len(b) == 1
    assert all(x == pytest.approx(left, abs=0.02) for x, *_ in a + b)
    assert [w for _, _, w, _ in a + b] == pytest.approx(
        [plot_width, plot_width / 2, plot_width / 4], abs=0.02
    )
    assert a[0][1] < a[1][1] and a[0][3] == pytest.approx(a[1][3])  # same thickness
    labels = _groups(root, "categories")[0]
    assert [float(t.get("y")) for t in labels] == sorted(float(t.get("y")) for t in labels)
    assert _texts(labels) == ["first", "second"] and "share" in _texts(root)
    assert _legend(root)[0] == ["a", "b"]  # horizontal bars always name their series


def test_bars_axis_limits_label_and_sizes():
    root = _svg(charts.bars(["x", "y"], [("a", [0.5, 1.0])], "t", ylabel="share", ylim=(0, 1)))
    assert _texts(_groups(root, "grid")[0]) == ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert "share" in _texts(root) and not _groups(root, "legend")  # one series: no legend
    (frame,) = _frames(root)
    assert _bars(_groups(root, "bars")[0])[1][3] == pytest.approx(_box(frame)[3], abs=0.02)
    few = _svg(charts.bars(["a", "b", "c"], SERIES, "t"))
    many_names = [f"category number {i}" for i in range(20)]
    many = _svg(charts.bars(many_names, [(n, [5.0] * 20) for n, _ in SERIES], "t"))
    assert int(many.get("width")) > int(few.get("width"))
    slanted = _groups(many, "categories")[0]
    assert all("rotate(-30" in (t.get("transform") or "") for t in slanted)
    assert not any(t.get("transform") for t in _groups(few, "categories")[0])


# -- small multiples -------------------------------------------------------------------------
def test_line_panels_one_panel_per_task_a_line_per_model_broken_at_gaps():
    panels = [
        (f"task {i}", ["1", "2", "3", "4"], [("a", [1.0, 2, 3, 4]), ("b", [4.0, None, 2, 1])])
        for i in range(7)
    ]
    panels[6] = ("task 6", ["2"], [("b", [7.0])])  # a model missing from a panel
    root = _svg(charts.line_panels(panels, "lines"))
    found = _groups(root, "panel")
    assert len(found) == 7
    first = found[0]
    assert "task 0" in _texts(first)
    a, b = _groups(first, "series")
    assert a.find(f"{SVG}path").get("d").count("M") == 1
    assert len(a.findall(f"{SVG}circle")) == 4
    assert b.find(f"{SVG}path").get("d").count("M") == 2  # the None splits the line
    assert len(b.findall(f"{SVG}circle")) == 3
    assert a.find(f"{SVG}path").get("stroke") == TAB10[0]
    # b keeps its colour in the panel where it is the only line
    (alone,) = _groups(found[6], "series")
    assert alone.find(f"{SVG}circle").get("fill") == TAB10[1]
    # five columns at most: two rows here, one shared legend naming each model once
    lefts = {_box(r)[0] for r in _frames(root)}
    tops = {_box(r)[1] for r in _frames(root)}
    assert len(lefts) == 5 and len(tops) == 2
    assert _legend(root) == (["a", "b"], TAB10[:2])
    one_row = _svg(charts.line_panels(panels[:5], "lines"))
    assert int(root.get("height")) > int(one_row.get("height"))
    assert int(root.get("width")) == int(one_row.get("width"))
    # x = the given turns, y = the 0-10 score; axis names on the outer panels only
    assert {"1", "2", "3", "4", "score", "10"} <= set(_texts(first))
    assert "turn" not in _texts(first) and "turn" in _texts(found[6])
    assert "score" in _texts(found[5]) and "score" not in _texts(found[6])


def test_turn_panels_one_panel_per_model_a_bar_per_turn_and_category():
    categories = ["writing", "roleplay", "math"]
    panels = [
        (f"model {i}", [("turn 1", [8.0, 6.0, 4.0]), ("turn 2", [7.0, None, 5.0])])
        for i in range(3)
    ]
    root = _svg(charts.turn_panels(categories, panels, "turns"))
    found = _groups(root, "panel")
    assert len(found) == 3
    assert len({_box(r)[0] for r in _frames(root)}) == 2  # two columns at most
    for index, panel in enumerate(found):
        assert f"model {index}" in _texts(panel)
        one, two = (_bars(g) for g in _groups(panel, "series"))
        assert len(one) == 3 and len(two) == 2
        assert one[0][3] == pytest.approx(two[0][3] * 8 / 7, abs=0.02)
        assert _texts(_groups(panel, "categories")[0]) == categories
    assert _legend(root) == (["turn 1", "turn 2"], TAB10[:2])
    single = _svg(charts.turn_panels(categories, panels[:1], "turns"))
    assert int(single.get("width")) < int(root.get("width"))
    assert int(single.get("height")) < int(root.get("height"))


# -- outcomes --------------------------------------------------------------------------------
def test_outcomes_shares_of_a_row_fill_the_axis():
    counts = [(5, 2, 3), (0, 0, 4), (0, 0, 0)]
    root = _svg(charts.outcomes(["a", "b", "c"], counts, "pairs"))
    (frame,) = _frames(root)
    left, _, plot_width, _ = _box(frame)
    rows = _groups(root, "row")
    assert len(rows) == 3
    full = [r for r in rows[0].iter(f"{SVG}rect")]
    assert [r.get("fill") for r in full] == ["#2e7d32", "#9e9e9e", "#c62828"]
    widths = [_box(r)[2] for r in full]
    assert sum(widths) == pytest.approx(plot_width, abs=0.05)
    assert widths == pytest.approx([plot_width * 0.5, plot_width * 0.2, plot_width * 0.3], abs=0.05)
    assert _box(full[0])[0] == pytest.approx(left, abs=0.02)
    for before, after in itertools.pairwise(full):  # stacked: each starts where the last ends
        assert _box(after)[0] == pytest.approx(_box(before)[0] + _box(before)[2], abs=0.03)
    (loss,) = rows[1].iter(f"{SVG}rect")  # zero shares are absent
    assert loss.get("fill") == "#c62828" and _box(loss)[2] == pytest.approx(plot_width, abs=0.05)
    assert not list(rows[2].iter(f"{SVG}rect"))
    texts = _texts(root)
    assert "share of compared pairs" in texts and {"0", "0.2", "1.0", "50%"} <= set(texts)
    assert _legend(root) == (["win", "tie", "loss"], ["#2e7d32", "#9e9e9e", "#c62828"])


# -- untrusted text --------------------------------------------------------------------------
HOSTILE_CHARTS = {
    "radar": lambda: charts.radar([HOSTILE, CONTROL, LONG], [(HOSTILE, [1, 2, 3])], HOSTILE),
    "bars": lambda: charts.bars([HOSTILE, CONTROL], [(LONG, [1, 2]), (HOSTILE, [3, 4])], HOSTILE),
    "bars_horizontal": lambda: charts.bars(
        [HOSTILE, LONG], [(CONTROL, [1, 2])], HOSTILE, ylabel=HOSTILE, horizontal=True
    ),
    "turn_panels": lambda: charts.turn_panels(
        [HOSTILE, LONG], [(HOSTILE, [(CONTROL, [1, 2])]), (LONG, [(HOSTILE, [3, 4])])], HOSTILE
    ),
    "line_panels": lambda: charts.line_panels(
        [(HOSTILE, [CONTROL, "2"], [(HOSTILE, [1, 2]), (LONG, [2, 3])])], HOSTILE
    ),
    "outcomes": lambda: charts.outcomes([HOSTILE, CONTROL, LONG], [(1, 1, 1)] * 3, HOSTILE),
}


@pytest.mark.parametrize("name", HOSTILE_CHARTS)
def test_hostile_labels_are_escaped_text_one_line_and_shortened(name):
    uri = HOSTILE_CHARTS[name]()
    markup = _decode(uri)
    assert "<script" not in markup and "\x1b" not in markup and "\x07" not in markup
    assert "&lt;script&gt;" in markup
    root = ElementTree.fromstring(markup)
    assert root.find(f".//{SVG}script") is None
    texts = _texts(root)
    assert HOSTILE in texts  # the title (and labels), as characters
    assert all("\n" not in t and "\x1b" not in t and "\uffff" not in t for t in texts)
    assert all(len(t) <= 90 for t in texts)
    long = [t for t in texts if t.startswith("mmm")]
    assert long and all(len(t) <= charts.LABEL_LIMIT and t.endswith("…") for t in long)


def test_control_characters_show_as_visible_text():
    root = _svg(charts.outcomes([CONTROL], [(1, 0, 0)], "t"))
    assert "line break^[[31m^G\ufffdtail" in _texts(root)


def test_charts_need_neither_matplotlib_nor_numpy():
    code = (
        "import sys\n"
        "from turnbench.report import charts\n"
        "charts.radar(['a', 'b', 'c'], [('m', [1, 2, 3])], 't')\n"
        "charts.bars(['a'], [('m', [1])], 't', horizontal=True)\n"
        "charts.turn_panels(['a'], [('m', [('turn 1', [1])])], 't')\n"
        "charts.line_panels([('a', ['1', '2'], [('m', [1, None])])], 't')\n"
        "charts.outcomes(['m'], [(1, 2, 3)], 't')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'numpy')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_share_charts_are_declared_on_a_0_to_1_axis():
    """Shares met and WCSR are 0-1; ratings are 1-10: each chart says which axis it needs."""
    from turnbench.benchmarks import builtin_benchmarks

    benchmarks = builtin_benchmarks()
    structflow = {c.field: c.scale_max for c in benchmarks["structflowbench"].report.charts}
    assert structflow == {"by_constraint_type": 1.0, "by_task": 1.0}
    assert all(c.scale_max == 10.0 for c in benchmarks["mt-bench"].report.charts)
