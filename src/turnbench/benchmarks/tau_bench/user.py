"""tau-bench's simulated user: what the user model is sent, and how its reply is read.

The user model is asked as upstream's LLM user strategy asks it (`user_prompt.json` beside
this module holds upstream's system message and opening, verbatim): its system message holds
the task's instruction (which the agent never sees), its history starts with the agent-side
greeting "Hi! How can I help you today?" in the user role, and roles are mirrored (the
agent's messages are its `user` turns, its own are `assistant` turns). A reply containing
`###STOP###` ends the conversation.

Beyond upstream, every reply is checked for the simulator's own mistakes (counted in the
results' `simulator` block, never changing the reward):
- `leaked_instruction`: the reply repeats a run of at least LEAK_WORDS consecutive words of
  the instruction verbatim (upstream's rules forbid it; the agent then reads what it should
  have asked for). Facts the user is meant to give when asked (a user id, an order number,
  a zip code, an address) are shorter runs: over all 685 instructions the longest run of
  id- and number-like words is measured below LEAK_WORDS = 10
  (tests/unit/test_tau_reward.py), so giving a fact is never counted as a leak;
- `answered_itself`, `role_switch`: the reply speaks as the agent (turnbench's heuristics of
  `engine.user_quality`: "your refund has been processed", "How can I help you");
- `stopped_before_change`: the user ended the conversation before any tool changed the
  database, in a task whose goal needs a change (tau2-bench #392: a user that stops early
  fails the task for the agent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from turnbench.engine.user_quality import check_user_turn
from turnbench.samples import UserAsk, UserTurn
from turnbench.types import Message

#: the shortest run of the instruction's words, repeated verbatim, that counts as a leak
LEAK_WORDS = 10
USER_PROMPT_VERSION = "tau-bench-user-v1"
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@cache
def user_prompt() -> dict[str, Any]:
    """user_prompt.json: upstream's system message template, opening, marker."""
    text = resources.files(__package__).joinpath("user_prompt.json").read_text("utf-8")
    return json.loads(text)


def user_system(instruction: str) -> str:
    prompt = user_prompt()
    shown = prompt["instruction_display"].replace("{instruction}", instruction)
    return prompt["system"].replace("{instruction_display}", shown)


def _words(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


def longest_shared_run(text: str, source: str) -> int:
    """The longest run of consecutive words `text` repeats from `source` (case-folded)."""
    said, given = _words(text), _words(source)
    if not said or not given:
        return 0
    positions: dict[str, list[int]] = {}
    for index, word in enumerate(given):
        positions.setdefault(word, []).append(index)
    best = 0
    previous: dict[int, int] = {}  # end index in `given` -> run length ending there
    for word in said:
        current: dict[int, int] = {}
        for index in positions.get(word, ()):
            length = previous.get(index - 1, 0) + 1
            current[index] = length
            best = max(best, length)
        previous = current
    return best


def user_ask(
    instruction: str,
    heard: Sequence[str],
    said: Sequence[str],
    *,
    acted: bool,
    needs_change: bool,
) -> UserAsk:
    """The user model's next request, and how its reply becomes the user's turn."""
    prompt = user_prompt()
    messages: list[Message] = [
        {"role": "system", "content": user_system(instruction)},
        {"role": "user", "content": prompt["greeting"]},
    ]
    for own, agent in zip(said, heard, strict=False):
        messages.append({"role": "assistant", "content": own})
        messages.append({"role": "user", "content": agent})
    stop = prompt["stop"]

    def read(reply: str) -> UserTurn:
        ended = stop in reply
        problems: list[str] = []
        if longest_shared_run(reply, instruction) >= LEAK_WORDS:
            problems.append("leaked_instruction")
        check = check_user_turn(reply, [], set(), allowed_text=instruction)
        problems += [code for code in check.problems if code in ("answered_itself", "role_switch")]
        if ended and not acted and needs_change:
            problems.append("stopped_before_change")
        return UserTurn(
            text=reply,
            origin="user-model",
            problems=tuple(problems),
            ended="stop" if ended else None,
        )

    return UserAsk(messages=messages, read=read)
