"""What the model and the judge see in StructFlowBench, built as the reference builds them.

Generation (reference `inference.py`): golden context flattened into one user message, each
earlier turn as "user:" + prompt + "\\n" + "assistant:" + golden answer + "\\n", then "user:" +
the current prompt + "\\n" (`--history-format flat`); turnbench's default sends the same
golden history as chat messages. Judging (reference `evaluate.py`): one user message, the
official template filled by `str.format` (values are inserted as they are, so braces in
them are inert).
"""

from __future__ import annotations

from collections.abc import Sequence

from turnbench.benchmarks.structflowbench.data import Constraint

Pair = tuple[str, str]  # (user prompt, golden answer) of an earlier turn


def flat_generation_message(earlier: Sequence[Pair], user: str) -> str:
    """The reference's single generation message for the turn after `earlier`."""
    history = "".join(f"user:{question}\nassistant:{answer}\n" for question, answer in earlier)
    return history + f"user:{user}\n"


def conversation_history(earlier: Sequence[Pair]) -> str:
    """The judge's `{conv_history}`: c1..c(k-1) with golden answers, then "c{k}:"."""
    parts = [
        f"c{number}:\nuser:{question}\nLLM assistant:{answer}\n"
        for number, (question, answer) in enumerate(earlier, start=1)
    ]
    parts.append(f"c{len(earlier) + 1}:\n")
    return "".join(parts)


def check_list(constraints: Sequence[Constraint]) -> str:
    return "".join(f"-{constraint.content}\n" for constraint in constraints)


def judge_message(
    template: str,
    earlier: Sequence[Pair],
    user: str,
    response: str,
    constraints: Sequence[Constraint],
) -> str:
    """The reference's judge message for `response` to the turn after `earlier`."""
    return template.format(
        conv_history=conversation_history(earlier),
        cur_user_prompt=user + "\n",
        cur_llm_response=response + "\n",
        check_list=check_list(constraints),
    )
