"""What the model and the judge see in MT-Bench-101, built as OpenCompass builds it.

A conversation before turn k is a list of (user, assistant) pairs: the golden ones (golden
context) or the model's own answers (`--context self`, where a skipped golden first turn
stays). The judge request is `[system, user]`: system = preamble + task rubric + score
format; user = the official template filled by `str.format` with `{prediction}` kept as a
literal, then `{prediction}` replaced by the stripped answer, so braces in the history are
inert and the answer is inserted exactly as the reference implementation inserts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from turnbench.benchmarks.mt_bench_101.data import Dialogue, JudgeTexts
from turnbench.types import Message

Pair = tuple[str, str]
ReferenceMode = Literal["compat", "golden-answer"]
PREDICTION = "{prediction}"


def render_history(earlier: Sequence[Pair], user: str) -> str:
    """The judge's `{history}`: every earlier turn, then the current user message."""
    parts = [f"\n\n Human: {question}\n\nAssistant: {answer}" for question, answer in earlier]
    parts.append(f"\n\n Human: {user}\n\nAssistant: ")
    return "".join(parts)


def reference_text(dialogue: Dialogue, turn: int, mode: ReferenceMode) -> str:
    """The `{ref_answer}` of MR and GR judgments.

    compat: Python's `str()` of the golden message list up to and including this turn, as
    the reference code passes it (an assistant entry only when the golden answer is
    non-empty); golden-answer: this turn's golden answer, the presumably intended reference.
    """
    if mode == "golden-answer":
        return dialogue.history[turn - 1].bot
    messages: list[dict[str, str]] = []
    for golden in dialogue.history[:turn]:
        messages.append({"role": "user", "content": golden.user})
        if golden.bot:
            messages.append({"role": "assistant", "content": golden.bot})
    return str(messages)


def judge_system_prompt(texts: JudgeTexts, task: str) -> str:
    return texts.judge_preamble + texts.task_rubrics[task] + texts.score_format


def judge_messages(
    texts: JudgeTexts,
    task: str,
    earlier: Sequence[Pair],
    user: str,
    answer: str,
    reference: str | None,
) -> list[Message]:
    """The exact judge request; `reference` is given for the reference tasks (MR, GR)."""
    history = render_history(earlier, user)
    if reference is None:
        filled = texts.user_prompt_template.format(history=history, prediction=PREDICTION)
    else:
        filled = texts.user_prompt_template_with_reference.format(
            history=history, prediction=PREDICTION, ref_answer=reference
        )
    return [
        {"role": "system", "content": judge_system_prompt(texts, task)},
        {"role": "user", "content": filled.replace(PREDICTION, answer.strip())},
    ]
