"""Scripted roles for simulated-user conversations whose scores are known in advance.

Responders for `FakeServer(responder=...)`, shared by the end-to-end tests and
`benchmarks/simulated_users_fakes.py`:

- `Translator` plays the model under test on lost-in-conversation-translation: it
  translates, perfectly (by lookup in the data file's own aligned English lines), every
  German chunk its last user message holds and forgets everything before it. Given the
  whole document in one turn (`full`) it scores 1.0; at the end of a sharded conversation
  its answer is the last chunk's translation only, so the degradation it must show can be
  computed with sacrebleu directly (`expected_sharded_bleu`).
- `scenario_model`, `scenario_user` and `scenario_judge` play the three roles of the
  persona scenario `SCENARIOS` (a refund and a greeting): the model asks for the order
  number before refunding, the user model answers as the persona and ends with the goal
  marker, the judge rates 10 and ticks the checklist.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import sacrebleu

from turnbench.testing.fake_server import Reply

TRANSLATION_DATA = "lost_in_conversation/sharded_translation.json"

PERSONA = "A customer whose blender broke after two days; brief and impatient."
GOAL = "A refund, or a replacement shipped this week."
SCENARIOS = f"""
version: 1
name: support
success_threshold: 0.6
dialogues:
  - id: refund
    simulated_user:
      persona: {PERSONA}
      goal: {GOAL}
      facts: ["order number 4417", "bought on 3 March"]
      opening: My blender stopped working.
      max_turns: 4
    rubric: Did the assistant resolve the request correctly and politely?
    checklist:
      - Did the assistant ask for the order number before promising anything?
  - id: greeting
    simulated_user:
      persona: Someone who only wants to say hello.
      goal: Be greeted back.
      max_turns: 2
    judge: final_turn
    checks:
      - contains: hello
"""


def translation_documents(data_dir: Path) -> list[dict[str, Any]]:
    return json.loads((data_dir / TRANSLATION_DATA).read_text("utf-8"))


def chunk_lookup(data_dir: Path) -> dict[str, str]:
    """German chunk -> its English lines (the file's lines align one to one)."""
    lookup = {}
    for document in translation_documents(data_dir):
        english = document["document_en"].split("\n")
        line = 0
        for shard in document["shards"]:
            count = shard["shard"].count("\n") + 1
            if shard["shard"].strip():
                lookup[shard["shard"].strip()] = "\n".join(english[line : line + count])
            line += count
    return lookup


class Translator:
    """Translates the chunks of the last user message, forgets the rest. `hang_after`:
    requests after that many are held unanswered (as if the process were killed then)."""

    def __init__(self, lookup: dict[str, str], hang_after: int | None = None) -> None:
        self.lookup = lookup
        self.hang_after = hang_after
        self.seen = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply | str:
        with self.lock:
            self.seen += 1
            hang = self.hang_after is not None and self.seen > self.hang_after
        if hang:
            return Reply(action="hang")
        last = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
        found = sorted((last.index(k), v) for k, v in self.lookup.items() if k in last)
        return "\n".join(text for _, text in found)


def bleu(answer: str, reference: str) -> float:
    """The benchmark's score, computed here independently: corpus BLEU / 100, at most 1."""
    return min(1.0, sacrebleu.corpus_bleu([answer.strip()], [[reference.strip()]]).score / 100)


def last_chunk_english(document: dict[str, Any], lookup: dict[str, str]) -> str:
    chunks = [s["shard"] for s in document["shards"] if s["shard"].strip()]
    return lookup[chunks[-1].strip()]


def expected_sharded_bleu(documents: list[dict[str, Any]], lookup: dict[str, str]) -> list[float]:
    """What `Translator` scores at the end of each document's sharded conversation."""
    return [bleu(last_chunk_english(d, lookup), d["document_en"]) for d in documents]


def scenario_model(request: dict[str, Any]) -> str:
    """The model under test: asks for the order number, then refunds it; greets back."""
    last = request["messages"][-1]["content"]
    if "4417" in last:
        return "Thank you. Refund issued for order 4417; sorry for the trouble."
    if "blender" in last.lower():
        return "I am sorry to hear that. What is your order number?"
    return "hello there!"


def scenario_user(request: dict[str, Any]) -> str:
    """The user model: reads the assistant's last reply (the last user-role message, the
    roles being flipped for it) and answers as the persona, or ends the conversation."""
    last = request["messages"][-1]["content"]
    if "Refund issued" in last:
        return "[[GOAL_MET]]"
    if "order number" in last:
        return "It is order number 4417."
    if "hello" in last:
        return "Great, thanks. [[GOAL_MET]]"
    return "Hi! Hello to you."


def scenario_judge(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    if "Checklist" in content:
        return '{"judge result": [{"judgement": "Yes", "reason": "it asked first"}]}'
    return "Polite and correct.\nRating: [[10]]"
