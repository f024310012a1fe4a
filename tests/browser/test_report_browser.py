"""The HTML report in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

`make test` installs chromium first (scripts/ensure-chromium.sh). Without it the tests skip
on a developer machine and fail in CI (CI=true), so the check cannot silently vanish there.
Set TURNBENCH_SCREENSHOT_DIR to keep the screenshots.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli, shared_data_dir
from tests.e2e.test_report import fixed_rating, has_mt_bench_101, hostile_responder, make_run
from turnbench.testing.fake_server import default_content

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        _unavailable("chromium is not installed (bash scripts/ensure-chromium.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        # Playwright gives every launch a fresh temporary profile (--user-data-dir)
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path_factory.mktemp("browser-env"))


def write_report(env: dict[str, str], out: Path, *runs: Path) -> Path:
    done = run_cli(["report", *map(str, runs), "--out", str(out)], env)
    assert done.returncode == 0, done.stderr
    return out


def open_page(browser, report: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.goto(report.as_uri())
    return page, errors


def screenshot(page, tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get("TURNBENCH_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000  # a real picture, not a blank page
    return target


def scores_by_sample(*runs: Path) -> dict[int, list[float]]:
    found: dict[int, list[float]] = {}
    for run in runs:
        for line in (run / "log.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["kind"] == "judgment" and record["status"] == "scored":
                found.setdefault(record["sample_id"], []).append(record["score"])
    return found


def not_hijacked(page) -> None:
    assert page.title() == "turnbench report"
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_mt_bench_report_in_chromium(browser, env, tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("mt-bench-runs")
    hostile = make_run(root / "hostile", env, hostile_responder)
    eight = make_run(root / "eight", env, fixed_rating(8))
    report = write_report(env, root / "report.html", hostile, eight)
    page, errors = open_page(browser, report)
    not_hijacked(page)

    # summary: one row per run, with the model and its overall score
    rows = page.locator("#summary table").first.locator("tbody tr")
    assert rows.count() == 2
    assert "openai/model-under-test" in rows.nth(1).inner_text()
    assert "8.00" in rows.nth(1).inner_text()
    # charts: inline SVG images that actually decoded
    assert page.locator("#scores-mt-bench img").count() == 2  # categories radar, turns
    assert page.locator("#compare-mt-bench img").count() == 1  # paired deltas
    assert page.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 100)"
    )
    screenshot(page, tmp_path, "mt-bench-summary.png")

    # dialogue browser: 8 questions (one per category), filter by category
    browser_box = page.locator("#dialogues-mt-bench .browser")
    count = browser_box.locator(".f-count")
    assert count.inner_text() == "8 of 8 shown"
    browser_box.locator(".f-group").select_option("writing")
    assert count.inner_text() == "1 of 8 shown"
    visible = browser_box.locator("details.sample:visible")
    assert visible.count() == 1 and visible.first.get_attribute("data-group") == "writing"
    browser_box.locator(".f-group").select_option("")
    # filter by score: samples with some turn scored in [9, 10], counted from the logs
    scores = scores_by_sample(hostile, eight)
    expected = sum(any(9 <= s <= 10 for s in values) for values in scores.values())
    browser_box.locator(".f-min").fill("9")
    browser_box.locator(".f-max").fill("10")
    assert count.inner_text() == f"{expected} of 8 shown"
    browser_box.locator(".f-min").fill("")
    browser_box.locator(".f-max").fill("")
    browser_box.locator(".f-failed").check()
    assert count.inner_text() == "1 of 8 shown"  # question 91: the judge never rated it
    browser_box.locator(".f-failed").uncheck()

    # the hostile answer and judge reply are shown as text and did not run
    sample = page.locator("#s-mt-bench-81")
    sample.locator(":scope > summary").click()
    sample.locator("details.judge").first.locator("summary").click()
    first_answer = sample.locator(".answer .text").first
    assert "<script>document.title" in first_answer.inner_text()
    assert '<img src=x onerror="window.__pwned=2' in first_answer.inner_text()
    assert "</textarea></pre></details><b>bold?</b>" in first_answer.inner_text()
    judge_reply = sample.locator("details.judge pre").first.inner_text()
    assert judge_reply.startswith("Refusing. <script>window.__pwned=3</script>")
    assert sample.locator(".answer img, .answer script, .answer b").count() == 0
    not_hijacked(page)
    assert errors == []
    sample.scroll_into_view_if_needed()
    screenshot(page, tmp_path, "mt-bench-dialogue.png")
    page.close()


@has_mt_bench_101
def test_mt_bench_101_report_in_chromium(browser, env, tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("mt-bench-101-runs")
    base = make_run(root / "a", env, fixed_rating(7), benchmark="mt-bench-101")
    new = make_run(root / "b", env, hostile_responder, benchmark="mt-bench-101")
    report = write_report(env, root / "report.html", base, new)
    page, errors = open_page(browser, report)
    not_hijacked(page)
    assert page.locator("#summary table").first.locator("tbody tr").count() == 2
    scores = page.locator("#scores-mt-bench-101 img")
    assert scores.count() == 3  # task radar, abilities, turn-wise curves
    assert page.locator("#compare-mt-bench-101 img").count() == 1
    assert page.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 100)"
    )
    screenshot(page, tmp_path, "mt-bench-101-summary.png")
    box = page.locator("#dialogues-mt-bench-101 .browser")
    assert box.locator(".f-count").inner_text() == "13 of 13 shown"
    box.locator(".f-group").select_option("CM")
    assert box.locator(".f-count").inner_text() == "1 of 13 shown"
    sample = box.locator("details.sample:visible").first
    sample.locator(":scope > summary").click()
    assert "context only" in sample.inner_text()  # CM's first turn is golden context
    assert sample.locator(".answers").count() >= 1
    sample.scroll_into_view_if_needed()
    screenshot(page, tmp_path, "mt-bench-101-dialogue.png")
    box.locator(".f-search").fill("zzzz-no-such-text")
    assert box.locator(".f-count").inner_text() == "0 of 13 shown"
    not_hijacked(page)
    assert errors == []
    page.close()


def test_paged_dialogues_in_chromium(browser, env, tmp_path_factory, tmp_path):
    """A report whose dialogues are on pages: the filters work on every sample in the
    report, a sample's link opens its page at that sample, and the page runs only its own
    script (hostile answers stay text)."""
    from tests.e2e.test_report import paged_report

    root = tmp_path_factory.mktemp("paged-runs")
    hostile = make_run(root / "hostile", env, hostile_responder)
    eight = make_run(root / "eight", env, fixed_rating(8))
    report = root / "report.html"
    _, written = paged_report(report, hostile, eight, page_limit=4_000)
    assert len(written) >= 2
    page, errors = open_page(browser, report)
    not_hijacked(page)
    box = page.locator("#dialogues-mt-bench .browser")
    count = box.locator(".f-count")
    assert count.inner_text() == "8 of 8 shown"
    box.locator(".f-group").select_option("writing")
    assert count.inner_text() == "1 of 8 shown"
    box.locator(".f-group").select_option("")
    box.locator(".f-failed").check()
    assert count.inner_text() == "1 of 8 shown"  # question 91: the judge never rated it
    box.locator(".f-failed").uncheck()
    sample = page.locator("#s-mt-bench-81")
    sample.locator(":scope > summary").click()
    sample.locator("a", has_text="read this dialogue").click()
    page.wait_for_load_state()
    assert "/report-files/dialogues-1-" in page.url and page.url.endswith("#s-mt-bench-81")
    opened = page.locator("#s-mt-bench-81")
    assert opened.get_attribute("open") is not None  # the page opened the linked sample
    assert "<script>document.title" in opened.locator(".answer .text").first.inner_text()
    assert opened.locator(".answer img, .answer script, .answer b").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert "turnbench report: mt-bench dialogues, page" in page.title()
    page.locator("a", has_text="back to the report").click()
    page.wait_for_load_state()
    assert page.url.endswith("/report.html#dialogues-mt-bench")
    not_hijacked(page)
    assert errors == []
    page.close()


HOSTILE_PIECE = "<img/src=x/onerror=window.__pwned=5>&amp;</div></details>"  # no spaces


def unbroken_token(kind: str, size: int = 3_000_000) -> str:
    """About `size` bytes (UTF-8) of text without a space, in a script whose characters
    Chromium cannot break between without shaping again: Arabic letters (they join) or
    Latin letters with combining accents. A hostile piece sits at several places."""
    rng = random.Random(kind)
    if kind == "arabic":
        letters = [chr(0x0627 + i) for i in range(20)]
        unit, per = lambda: rng.choice(letters), 2
    else:
        unit, per = lambda: rng.choice("aeiou") + "\u0301", 3
    chars = [unit() for _ in range(size // per)]
    for at in range(1_000, len(chars), len(chars) // 7):
        chars.insert(at, HOSTILE_PIECE)
    return "".join(chars)


def long_answer_responder(token: str):
    def responder(request: dict) -> str:
        if request["model"] != "judge-model" and request["messages"][-1]["content"].startswith(
            "Compose an engaging travel blog post"
        ):
            return token
        return default_content(request)

    return responder


@pytest.mark.parametrize("kind", ["arabic", "combining-accents"])
def test_a_3_mb_unbroken_answer_keeps_the_page_usable(browser, env, tmp_path_factory, kind):
    """Issue 22 item 8: a 3 MB answer without a space once froze the tab for minutes when
    its dialogue was opened (Chromium broke the one long word line by line, shaping the
    rest of it again at each line). The dialogue now opens within 3 s, the rest of the
    answer behind its "show the rest" control within 10 s, and the text is all there."""
    root = tmp_path_factory.mktemp(f"long-{kind}")
    token = unbroken_token(kind)
    run = make_run(root / "run", env, long_answer_responder(token))
    report = write_report(env, root / "report.html", run)
    page, errors = open_page(browser, report)
    try:
        not_hijacked(page)
        # 1.5 M Arabic letters stay in the report file; 2 M accented-letter characters pass
        # its limit and go to a page beside it: both ways of opening a dialogue are tried
        paged = (root / "report-files").is_dir()
        assert paged == (kind != "arabic")
        sample = page.locator("#s-mt-bench-81")
        started = time.monotonic()
        sample.locator(":scope > summary").click(timeout=3_000)
        if paged:  # the dialogue is on a page beside the report; its link opens it there
            sample.locator("a", has_text="read this dialogue").click(timeout=3_000)
            page.wait_for_load_state(timeout=3_000)
        opened = page.locator("#s-mt-bench-81")
        first = opened.locator(".answer .text").first
        first.wait_for(state="visible", timeout=3_000)
        height = page.evaluate(
            "document.querySelector('#s-mt-bench-81 .answer .text').getBoundingClientRect().height"
        )
        assert height > 100 and time.monotonic() - started < 3.0
        rest = opened.locator(".answer details.more").first
        started = time.monotonic()
        rest.locator("summary").click(timeout=3_000)
        rest.locator(".text").wait_for(state="visible", timeout=10_000)
        assert page.title().endswith("mt-bench dialogues, page 1" if paged else "report")
        assert time.monotonic() - started < 10.0
        shown = page.evaluate(
            "Array.from(document.querySelector('#s-mt-bench-81 .answer')"
            ".querySelectorAll('.text')).map(e => e.textContent).join('')"
        )
        assert shown == token  # complete, in order, and shown as text
        assert opened.locator(".answer img, .answer script").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert errors == []
    finally:
        page.close()
