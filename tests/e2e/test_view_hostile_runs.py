"""Issue 38, class 4: one bad results.json broke the runs page for every run:
{"overall_ci95": [1, "a"]} gave a 500, {"overall": 1e999} made /api/runs and /api/events
send a bare Infinity, which a browser's JSON.parse rejects. A run directory may hold
anything; each hostile file here sits beside a good run, and the runs page, /api/runs and
the first server-sent event must still list the good run, in JSON a strict parser reads,
with the bad numbers shown as absent (null)."""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.conftest import cli_env, shared_data_dir
from tests.e2e.test_report import make_run
from tests.e2e.test_view_attacks import View
from turnbench.view.app import build_app

BIG = "1" + "0" * 400  # an integer no float holds (math.isfinite raises on it)
HOSTILE: dict[str, str] = {
    "ci-with-text": '{"overall_ci95": [1, "a"]}',
    "overall-inf": '{"overall": 1e999}',
    "overall-nan": '{"overall": NaN, "overall_ci95": [NaN, Infinity], "model": "m"}',
    "overall-text": '{"overall": "high", "overall_ci95": "narrow", "model": "m"}',
    "overall-huge-int": f'{{"overall": {BIG}, "overall_ci95": [{BIG}, 1], "model": "m"}}',
    "ci-deep": '{"overall_ci95": ' + "[" * 5000 + "]" * 5000 + "}",
    "counts-nested": '{"counts": {"expected": ' + "[" * 90 + "1" + "]" * 90 + "}}",
    "per-model-wrong": (
        '{"models": {"a": {"overall": 1e999, "overall_ci95": {"x": 1}}, "b": 5, '
        f'"c": {{"overall": "x", "overall_ci95": [1, 2, 3]}}, "d": {{"overall": {BIG}}}}}}}'
    ),
    "per-model-list": '{"models": [1, 2], "judges": [1, {"a": 1}], "judge": 5}',
    "wrong-types": (
        '{"counts": {"expected": 1e999, "x": [NaN]}, "usage": {"cost_usd": 1e308, '
        '"y": {"cost_usd": 1e308}}, "started_at": 5, "finished_at": [1], '
        '"benchmark": {"a": 1}, "complete": "yes", "provenance": "x"}'
    ),
    "not-an-object": "[1, 2]",
}


def strict_json(text: str) -> Any:
    """JSON as a browser's JSON.parse reads it: NaN, Infinity and -Infinity refused."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def browser_safe(value: Any) -> bool:
    """Every number in `value` is a finite float in a browser too (an integer of hundreds of
    digits parses, in JavaScript, as Infinity)."""
    if isinstance(value, dict):
        return all(browser_safe(v) for v in value.values())
    if isinstance(value, list):
        return all(browser_safe(v) for v in value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return math.isfinite(float(value))
        except OverflowError:
            return False
    return True


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    """A finished single-grading run (its results.json as turnbench wrote it)."""
    home = tmp_path_factory.mktemp("hostile-good")
    return make_run(home / "good", cli_env(shared_data_dir(), home))


def served(folder: Path, good_run: Path, names: list[str]) -> Path:
    """A served folder: the good run and a run directory for each hostile results.json.
    (Under tmp_path_factory: the autouse schema check of tmp_path would refuse them.)"""
    shutil.copytree(good_run, folder / "good")
    for name in names:
        (folder / name).mkdir()
        (folder / name / "results.json").write_text(HOSTILE[name], "utf-8")
    return folder


def check_listing(rows: Any, good_run: Path, names: list[str]) -> None:
    """The rows of /api/runs (or of an event): the good run with its overall, every hostile
    run listed with its bad numbers absent."""
    assert browser_safe(rows)
    by_path = {row["path"]: row for row in rows}
    assert set(by_path) == {"good", *names}
    expected = json.loads((good_run / "results.json").read_text("utf-8"))["overall"]
    assert isinstance(expected, int | float) and by_path["good"]["overall"] == expected
    for name in names:
        row = by_path[name]
        assert row["overall"] is None and row["overall_ci95"] is None, (name, row)
        assert all(v["overall"] is None for v in row["overalls"].values()), (name, row)
        assert all(v["overall_ci95"] is None for v in row["overalls"].values()), (name, row)
        assert row["best"] is None and row["cost_usd"] is None, (name, row)


async def first_event(client: TestClient) -> str:
    response = await client.get("/api/events")
    data = b""
    while b"\n\n" not in data:
        data += await asyncio.wait_for(response.content.readany(), 10)
    response.close()
    match = re.search(rb"^data: (.*)$", data, re.M)
    assert match is not None, data
    return match.group(1).decode("utf-8")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_one_hostile_results_file_leaves_the_runs_page_and_api_to_the_others(
    name, good_run, tmp_path_factory
):
    root = served(tmp_path_factory.mktemp("hostile"), good_run, [name])
    app = build_app([root], token=None, warm=False)

    async def go() -> tuple[int, str, int, str, str, int]:
        async with TestClient(TestServer(app)) as client:
            page = await client.get("/")
            api = await client.get("/api/runs")
            event = await first_event(client)
            run_page = await client.get(f"/run/0/{name}")
            return (page.status, await page.text(), api.status, await api.text(), event,
                    run_page.status)  # fmt: skip

    page_status, page, api_status, api, event, run_page_status = asyncio.run(go())
    assert page_status == 200, page[-2000:]
    assert 'href="/run/0/good"' in page and f'href="/run/0/{name}"' in page
    assert api_status == 200, api[-2000:]
    check_listing(strict_json(api), good_run, [name])
    check_listing(strict_json(event), good_run, [name])
    assert run_page_status == 200  # its own page says what it can, too


def test_the_real_viewer_serves_every_hostile_run_at_once(good_run, tmp_path_factory):
    """`turnbench view FOLDER` in a child process, as a user starts it."""
    names = sorted(HOSTILE)
    root = served(tmp_path_factory.mktemp("hostile-all"), good_run, names)
    env = cli_env(shared_data_dir(), tmp_path_factory.mktemp("hostile-env"))
    view = View(env, str(root))
    try:
        with urllib.request.urlopen(view.base + "/", timeout=20) as response:
            assert response.status == 200
            page = response.read().decode("utf-8")
        with urllib.request.urlopen(view.base + "/api/runs", timeout=20) as response:
            assert response.status == 200
            body = response.read().decode("utf-8")
    finally:
        view.stop()
    assert 'href="/run/0/good"' in page
    assert "Infinity" not in body and "NaN" not in body
    check_listing(strict_json(body), good_run, names)
    assert "Traceback" not in view.errors, view.errors[-3000:]


def test_the_page_filters_show_a_number_no_float_holds_as_missing():
    """The templates' `num` and `ci` filters meet values a page passes on from a run
    directory: a 400-digit integer, NaN, a bool or text is "–", never an OverflowError."""
    from turnbench.view.app import templates

    num, ci = templates().filters["num"], templates().filters["ci"]
    for value in (int(BIG), math.nan, math.inf, True, "0.5", None):
        assert num(value) == "–" and ci([0.1, value]) == "–"
    assert num(2.5) == "2.50" and num(3, 1) == "3.0" and ci([0.1, 0.25]) == "[0.10, 0.25]"
