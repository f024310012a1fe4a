"""Long untrusted text in the report (issue 22 item 8): every unbroken run over RUN_STEP
characters gets a break opportunity every RUN_STEP characters, a text over FOLD_LIMIT shows
its start and keeps the rest behind a control; the text stays whole and escaped."""

from __future__ import annotations

import html
import re

import pytest

from turnbench.report.markup import FOLD_LIMIT, RUN_STEP, breakable, esc, long_text

OURS = re.compile(r'<wbr>|<span class="long">|</span>|</?(div|pre|details)( class="[a-z]+")?>')
SUMMARY = re.compile(r"<summary>[^<]*</summary>")
HOSTILE = '<script>alert("x")</script>&amp;<img/src=x/onerror=alert(1)>'


def shown_text(markup: str) -> str:
    """What a reader sees: our own tags and the fold's summary removed, entities decoded.
    Anything left that looks like a tag came from the text, unescaped."""
    bare = OURS.sub("", SUMMARY.sub("", markup))
    assert "<" not in bare and ">" not in bare, bare[:200]
    return html.unescape(bare)


def steps(markup: str) -> list[str]:
    """The pieces of the long runs, between the break opportunities."""
    runs = re.findall(r'<span class="long">(.*?)</span>', markup)
    return [html.unescape(piece) for run in runs for piece in run.split("<wbr>")]


TEXTS = {
    "short": "A normal answer, with <b>tags</b> & words.",
    "one run just over": "x" * (RUN_STEP + 1),
    "one run at the step": "y" * RUN_STEP,
    "hostile run": (HOSTILE * 40).replace(" ", ""),
    "runs between words": "start " + "a" * 450 + " middle\n" + "b" * 900 + "\tend",
    "no-break spaces do not end a run": "word\u00a0" * 300,
    "combining accents": "x" + "e\u0301" * 500,  # a plain cut would fall before an accent
    "joined emoji": "xx" + "\U0001f468\u200d\U0001f469\u200d\U0001f467" * 200,
    "arabic": "\u0633\u0644\u0627\u0645" * 300,
    "over the fold": ("z" * 999 + " ") * 60 + HOSTILE,
    "unbroken over the fold": "q\u0301" * (FOLD_LIMIT // 2 + 10) + HOSTILE,
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_the_text_stays_whole_and_escaped(name):
    text = TEXTS[name]
    markup = long_text(text, "text")
    assert shown_text(markup) == text
    assert "<script" not in markup and "<img" not in markup


@pytest.mark.parametrize("name", list(TEXTS))
def test_long_runs_may_break_every_step_and_marks_stay_with_their_letter(name):
    markup = breakable(TEXTS[name])
    for piece in steps(markup):
        assert 0 < len(piece) <= RUN_STEP + 16
        assert not piece.startswith(("\u0301", "\u200d"))  # a mark or joiner keeps its letter
        assert not piece.endswith("\u200d")


def test_short_runs_are_plain_escaped_text():
    for text in ("short <answer> & more", "y" * RUN_STEP, ("w" * RUN_STEP + " ") * 50):
        assert breakable(text) == esc(text)


def test_a_run_over_the_step_is_broken_into_steps():
    markup = breakable("pre " + "x" * (3 * RUN_STEP + 5) + " post")
    assert markup.startswith('pre <span class="long">') and markup.endswith("</span> post")
    assert [len(p) for p in steps(markup)] == [RUN_STEP, RUN_STEP, RUN_STEP, 5]
    assert len(steps(breakable("word\u00a0" * 300))) == 8  # 1,500 characters, one run


def test_a_text_over_the_fold_keeps_the_rest_behind_a_control():
    text = "x" * (FOLD_LIMIT + 1234)
    markup = long_text(text, "text")
    head, _, rest = markup.partition('<details class="more">')
    assert shown_text(head) == "x" * FOLD_LIMIT
    assert "<summary>show the rest (1,234 more characters, 51,234 in all)</summary>" in rest
    assert shown_text(rest) == "x" * 1234
    assert long_text("x" * FOLD_LIMIT, "text").count("<details") == 0


def test_the_fold_does_not_part_a_letter_from_its_accent():
    text = "a" * (FOLD_LIMIT - 1) + "e\u0301\u0301" + "tail"
    head = long_text(text, "text").partition('<details class="more">')[0]
    assert shown_text(head) == "a" * (FOLD_LIMIT - 1) + "e\u0301\u0301"


def test_the_block_takes_its_tag_and_class():
    assert long_text("<x>", tag="pre") == "<pre>&lt;x&gt;</pre>"
    assert long_text(None, "raw", "pre") == '<pre class="raw"></pre>'
