"""Checklist verdicts: the strict rules, StructFlowBench's reference rules, and their retries.

A checklist reply is `{"judge result": [{"judgement": "Yes"|"No", "reason": ...}, ...]}`,
one entry per check-list item, possibly inside a ```json fence. Strict reads exactly one
Yes/No per item and re-asks otherwise; compat reproduces StructFlowBench's `evaluate.py`:
JSON errors are final, a list of the wrong length is sent again as the same request (up to
5 requests), and verdict strings are kept as written.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from turnbench.judging.formats import followup, standard_format
from turnbench.judging.parsers import (
    SCORE_RANGES,
    checklist_score,
    parse_checklist_compat,
    parse_checklist_strict,
)
from turnbench.judging.reask import judge_with_reasks
from turnbench.types import Completion, RequestParams


def reply(*verdicts: str, fence: bool = False) -> str:
    body = json.dumps(
        {
            "judge result": [
                {"judgement": v, "reason": f"because {i}"} for i, v in enumerate(verdicts)
            ]
        }
    )
    return f"```json\n{body}\n```" if fence else body


@pytest.mark.parametrize(
    ("text", "items", "verdicts"),
    [
        (reply("Yes", "No"), 2, ("Yes", "No")),
        (reply("Yes", "No", fence=True), 2, ("Yes", "No")),
        ("Here you go:\n" + reply("No", fence=True) + "\nThanks", 1, ("No",)),
        ("```\n" + reply("Yes") + "\n```", 1, ("Yes",)),  # a fence without a language
        (reply(" yes ", "NO"), 2, ("Yes", "No")),  # case and spaces are not ambiguous
        ('  {"judge result": [{"judgement": "Yes"}]}  ', 1, ("Yes",)),  # no reason: fine
    ],
)
def test_strict_checklist(text, items, verdicts):
    result = parse_checklist_strict(text, items)
    assert result.ok and result.checklist == verdicts and not result.retry


@pytest.mark.parametrize(
    ("text", "items", "reason"),
    [
        (reply("Yes"), 2, "1 verdict(s) for 2 check-list item(s)"),
        (reply("Yes", "Yes", "No"), 2, "3 verdict(s) for 2"),
        (reply("Yes", "N/A"), 2, 'item 2: judgement "N/A" is not Yes or No'),
        (reply("Yes", "Partly"), 2, "is not Yes or No"),
        ('{"judge result": [{"reason": "x"}]}', 1, "item 1: judgement missing"),
        ('{"judge result": [{"judgement": true}]}', 1, "judgement true is not Yes or No"),
        ('{"judge result": "Yes"}', 1, "'judge result' is not a list"),
        ('{"verdicts": []}', 1, "no 'judge result' list"),
        ("[1, 2]", 1, "no 'judge result' list"),
        ("Yes, No", 2, "not valid JSON"),
        ("", 1, "not valid JSON"),
        (reply("Yes", fence=True) + reply("No", fence=True), 1, "2 fenced blocks"),
    ],
)
def test_strict_checklist_failures(text, items, reason):
    result = parse_checklist_strict(text, items)
    assert not result.ok and result.checklist is None and reason in (result.error or "")
    assert not result.retry  # strict failures are re-asked with the follow-up text


@pytest.mark.parametrize(
    ("text", "items", "verdicts"),
    [
        (reply("Yes", "No"), 2, ("Yes", "No")),
        (reply("Yes", "No", fence=True), 2, ("Yes", "No")),
        (reply("N/A", "yes", " No"), 3, ("N/A", "yes", " No")),  # kept as the judge wrote them
        ("  \n" + reply("Yes", fence=True) + "\n ", 1, ("Yes",)),
    ],
)
def test_compat_checklist_keeps_verdicts_as_written(text, items, verdicts):
    result = parse_checklist_compat(text, items)
    assert result.ok and result.checklist == verdicts


@pytest.mark.parametrize(
    ("text", "items", "retry", "reason"),
    [
        # the reference sends the same request again for these ...
        (reply("Yes"), 2, True, "1 verdict(s) for 2"),
        ('{"judge result": null}', 1, True, "no 'judge result' list"),
        ('{"other": 1}', 1, True, "no 'judge result' list"),
        ("[1]", 1, True, "no 'judge result' list"),
        # ... and records these as they are
        ("Here you go: " + reply("Yes"), 1, False, "not valid JSON"),
        ("Sure!\n" + reply("Yes", fence=True), 1, False, "not valid JSON"),  # text before
        ('{"judge result": [{"reason": "x"}]}', 1, False, "item 1 has no 'judgement' string"),
    ],
)
def test_compat_checklist_failures(text, items, retry, reason):
    result = parse_checklist_compat(text, items)
    assert not result.ok and result.retry is retry and reason in (result.error or "")


@pytest.mark.parametrize(
    ("verdicts", "weights", "score"),
    [
        (("Yes", "No"), None, 0.5),
        (("Yes", "Yes", "No", "No"), None, 0.5),
        (("Yes", "No"), (1.0, 2.0), 1 / 3),  # an intra-turn item met, a structural one not
        (("No", "Yes"), (1.0, 2.0), 2 / 3),
        (("N/A", "yes", "Yes"), None, 1 / 3),  # only "Yes" counts as met
        (("Yes",), (0.0,), 0.0),  # no weight at all: StructFlowBench scores 0
        (("Yes", "Yes"), (1.0, 1.0), 1.0),
    ],
)
def test_checklist_score(verdicts, weights, score):
    assert checklist_score(verdicts, weights) == pytest.approx(score)


def test_checklist_scores_lie_in_their_parsers_range():
    assert SCORE_RANGES["checklist-strict"] == (0.0, 1.0)
    assert SCORE_RANGES["checklist-compat"] == (0.0, 1.0)


def test_reply_format_scores_with_the_task_weights():
    reader = standard_format("checklist", "checklist-strict", items=3, weights=(1, 2, 2))
    result = reader.parse(reply("Yes", "No", "Yes"))
    assert result.checklist == ("Yes", "No", "Yes") and result.score == pytest.approx(3 / 5)
    assert reader.followup == followup("checklist") and reader.resend_tries == 1
    assert standard_format("checklist", "checklist-compat", items=1).resend_tries == 5
    with pytest.raises(ValueError):
        standard_format("checklist", "checklist-strict")  # the item count is needed


class Scripted:
    """A backend that replies with the given texts in order and records every request."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests: list[list[dict]] = []

    async def complete(self, messages, params):
        self.requests.append(list(messages))
        return Completion(text=self.texts.pop(0))


def ask(backend: Scripted, parser: str, max_reasks: int):
    reader = standard_format("checklist", parser, items=2)
    messages = [{"role": "user", "content": "judge this"}]
    return asyncio.run(
        judge_with_reasks(backend, messages, RequestParams(temperature=None), reader, max_reasks)
    )


def test_compat_sends_the_same_request_again_up_to_five_times():
    backend = Scripted(*[reply("Yes")] * 4, reply("Yes", "No"))
    outcome = ask(backend, "checklist-compat", max_reasks=0)
    assert outcome.result.checklist == ("Yes", "No")
    assert outcome.resends == 4 and outcome.reasks == 0 and len(outcome.outputs) == 5
    assert all(request == backend.requests[0] for request in backend.requests)


def test_compat_gives_up_after_five_requests():
    backend = Scripted(*[reply("Yes")] * 6)
    outcome = ask(backend, "checklist-compat", max_reasks=0)
    assert not outcome.result.ok and len(backend.requests) == 5
    assert "1 verdict(s) for 2" in (outcome.result.error or "")


def test_compat_json_error_is_final():
    backend = Scripted("not json at all", reply("Yes", "No"))
    outcome = ask(backend, "checklist-compat", max_reasks=0)
    assert not outcome.result.ok and len(backend.requests) == 1


def test_strict_reasks_with_the_follow_up_text_then_records_a_failure():
    backend = Scripted(reply("Yes"), reply("Yes", "Maybe"), reply("No"))
    outcome = ask(backend, "checklist-strict", max_reasks=2)
    assert not outcome.result.ok and len(backend.requests) == 3 and outcome.reasks == 2
    last = backend.requests[-1]
    assert last[-1]["content"] == followup("checklist").text
    assert last[-2] == {"role": "assistant", "content": reply("Yes", "Maybe")}


def test_strict_reask_that_succeeds():
    backend = Scripted("I think both are fine.", reply("Yes", "No", fence=True))
    outcome = ask(backend, "checklist-strict", max_reasks=2)
    assert outcome.result.checklist == ("Yes", "No") and outcome.result.score == 0.5
    assert outcome.reasks == 1 and outcome.resends == 0
