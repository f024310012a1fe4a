"""Issue 38, class 9: invisible and bidi characters in names.

A zero-width space, a byte order mark, a tag character, a line separator, the Arabic letter
mark or the Mongolian vowel separator made `vicuna-13b-v1.3` and `vicuna-13b-v1.3` + U+200B
two rows of one ranking no reader can tell apart; `name_problem` refuses them where a name
enters (as it already refused U+202E, U+200E and U+200F) and accepts every ordinary name,
whatever its script.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from aiohttp import web

from turnbench.benchmarks.answers import answer_model_name
from turnbench.errors import UserError
from turnbench.safetext import name_problem
from turnbench.samples import AnswerSet
from turnbench.specs import parse_spec
from turnbench.view.annotate import _annotator

#: the characters issue 38 found accepted (each draws nothing, or a blank)
NEWLY_REFUSED = ["\u200b", "\u061c", "\u2028", "\ufeff", "\U000e0041", "\u180e"]
#: the ones refused before the fix (bidi override and marks)
ALREADY_REFUSED = ["\u202e", "\u200e", "\u200f"]
#: more of the same kinds: joiners, word joiner, soft hyphen, paragraph separator, a Hangul
#: filler, a variation selector, spaces that look like U+0020, the cancel tag
MORE_REFUSED = [
    "\u200c",
    "\u200d",
    "\u2060",
    "\u00ad",
    "\u2029",
    "\u3164",
    "\ufe0f",
    "\u00a0",
    "\u3000",
    "\U000e007f",
]
#: names people give models: Latin, CJK, Cyrillic, Greek, Arabic, Hebrew, Devanagari (with
#: its combining vowel signs and virama), Thai, Hangul, Vietnamese composed and decomposed,
#: an emoji, plain spaces, slashes and dots
ORDINARY = [
    "vicuna-13b-v1.3",
    "Llama-3.1-8B",
    "mistral/mixtral-8x7b",
    "openai/meta-llama/Llama-3-8B",
    "qwen2.5 7b instruct",
    "模型-7b",
    "日本語モデル",
    "русская-модель",
    "Ελληνικά-7b",
    "نموذج-عربي",
    "מודל-עברי",
    "हिन्दी-मॉडल",
    "ไทย-llm",
    "한국어-모델",
    "Tiếng-Việt",
    unicodedata.normalize("NFD", "Tiếng-Việt"),
    "🦙-llama",
    "gpt-4o-mini-2024-07-18",
    "model_v2.gguf:Q4_K_M",
]


def code(char: str) -> str:
    return f"U+{ord(char):04X}"


@pytest.mark.parametrize("char", NEWLY_REFUSED + ALREADY_REFUSED + MORE_REFUSED, ids=code)
@pytest.mark.parametrize("where", ["end", "middle", "start"])
def test_each_invisible_or_bidi_character_is_refused_and_named(char, where):
    name = {"end": f"vicuna-13b-v1.3{char}", "middle": f"vicuna{char}-13b", "start": f"{char}x"}
    problem = name_problem(name[where])
    assert problem is not None
    assert code(char) in problem  # the message names the character, which is invisible


@pytest.mark.parametrize("char", NEWLY_REFUSED, ids=code)
def test_a_non_ascii_name_holding_one_is_refused_too(char):
    """The fast path is for ASCII names only: a name with CJK letters is checked in full."""
    assert name_problem(f"模型-7b{char}") is not None


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_names_in_any_script_are_accepted(name):
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", " ", "a\nb", "a\tb", "a\x1b[31mb", "a\x85b"])
def test_empty_names_and_controls_stay_refused(name):
    assert name_problem(name) is not None


@pytest.mark.parametrize("char", NEWLY_REFUSED, ids=code)
def test_a_model_spec_with_one_is_a_user_error_with_the_character_escaped(char):
    with pytest.raises(UserError) as raised:
        parse_spec(f"openai/vicuna-13b-v1.3{char}", "--model")
    message = str(raised.value)
    assert code(char) in message
    assert ascii(char)[1:-1] in message  # shown as \u200b, never as the raw character
    assert char not in message


def test_an_answer_file_named_with_one_is_refused_before_it_is_read(tmp_path: Path):
    path = tmp_path / "vicuna-13b-v1.3\u200b.jsonl"
    path.write_text("not json at all\n", "utf-8")  # (reading it would give another error)
    with pytest.raises(UserError) as raised:
        answer_model_name(path)
    assert "U+200B" in str(raised.value) and "\\u200b" in str(raised.value)
    fork = tmp_path / "vicuna\ufeff" / "results.jsonl"  # a fork's MODEL/results.jsonl
    fork.parent.mkdir()
    fork.write_text("", "utf-8")
    with pytest.raises(UserError, match="U\\+FEFF"):
        answer_model_name(fork)
    assert answer_model_name(tmp_path / "模型-7b.jsonl") == "模型-7b"


@pytest.mark.parametrize("char", NEWLY_REFUSED, ids=code)
def test_an_answer_set_from_any_source_is_refused(char, tmp_path: Path):
    with pytest.raises(UserError, match=code(char).replace("+", "\\+")):
        AnswerSet(model=f"vicuna-13b-v1.3{char}", path=tmp_path, sha256="0", turns={})


@pytest.mark.parametrize("char", NEWLY_REFUSED, ids=code)
def test_an_annotator_name_with_one_is_a_bad_request(char):
    with pytest.raises(web.HTTPBadRequest) as raised:
        _annotator(f"ann{char}")
    assert code(char) in json.loads(str(raised.value.text))["error"]
    assert _annotator("アノテーター") == "アノテーター"
