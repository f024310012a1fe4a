"""How many words of its own instructions a simulated user repeats, recited or not: the
measurement behind `engine.user_quality.RECITAL_WORDS`.

Instructions: the scenario user's system message (`prompts/scenario_user.json`) made from
each of tau-bench's task instructions (retail and airline, every split in the data folder):
the first sentence as the persona, the rest as the goal, its ids, order numbers and zip
codes as the facts the user may share. Three kinds of text are compared with them, and the
longest run of consecutive words each repeats verbatim (facts cut out, words as the check
reads them) is counted:

- people's own messages: every user turn of MT-Bench-101 (written by people, about other
  things) against every system message: what chance alone repeats;
- a user stating its goal in its own voice: each instruction sentence turned into the first
  person ("You want to fly..." -> "I want to fly...") against its own system message;
- recitals: the whole system message, and each of its parts with its label ("Who you are:
  ...", "What you want: ...", the rules), against itself.

    python benchmarks/recital_threshold.py [--data-dir /work/shared/data]

It takes seconds: people's turns are compared with every system message at once through an
index of the messages' word n-grams (`NGramIndex`, checked against the check's own
`RecitalSource.longest` on a sample of turns), and each system message is indexed once for
the texts compared with it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import Counter
from pathlib import Path

from turnbench.benchmarks.custom.benchmark import scenario_prompts
from turnbench.engine.user_quality import RECITAL_WORDS, RecitalSource, recital_words

SEPARATOR = "qqseparatorqq"  # (a word no text holds: no run crosses two system messages)
_FACT = re.compile(r"#W\d+|\b[a-z]+_[a-z]+_\d{4}\b|\b\d{5}\b|\b[A-Z0-9]{6}\b")
_FIRST_PERSON = [
    (r"\byou are\b", "I am"), (r"\byou're\b", "I'm"), (r"\byou've\b", "I've"),
    (r"\byou'd\b", "I'd"), (r"\byou'll\b", "I'll"), (r"\byourself\b", "myself"),
    (r"\byour\b", "my"), (r"\byou\b", "I"),
]  # fmt: skip


class NGramIndex:
    """Every run of n consecutive words of one long text, by n, each size built when first
    needed: the longest run a short text shares with it is the largest n for which one of
    its n-word runs is in the index (a shared run of n words holds shared runs of every
    smaller size, so counting up from 1 stops exactly there). Linear in each text compared,
    where `RecitalSource.longest` visits every occurrence of each word (thousands for "you"
    in 685 system messages)."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.grams: dict[int, set[tuple[str, ...]]] = {}

    def _of_size(self, size: int) -> set[tuple[str, ...]]:
        if size not in self.grams:
            words = self.words
            self.grams[size] = {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}
        return self.grams[size]

    def longest(self, said: list[str]) -> int:
        size = 0
        while size < len(said):
            grams = self._of_size(size + 1)
            if not any(tuple(said[i : i + size + 1]) in grams for i in range(len(said) - size)):
                break
            size += 1
        return size


def tau_instructions(data: Path) -> list[str]:
    found = []
    for path in sorted((data / "tau_bench").glob("*/tasks_*.json")):
        found += [task["instruction"] for task in json.loads(path.read_text("utf-8"))]
    return found


def system_message(instruction: str) -> tuple[str, list[str], list[str]]:
    """(the scenario user's system message, its facts, the goal's sentences)."""
    prompts = scenario_prompts()
    sentences = re.split(r"(?<=[.!?])\s+", instruction.strip())
    persona, goal = sentences[0], " ".join(sentences[1:]) or sentences[0]
    facts = sorted(set(_FACT.findall(instruction)))
    listed = "\n".join(f"- {fact}" for fact in facts) or prompts["no_facts"]
    return prompts["system"].format(persona=persona, goal=goal, facts=listed), facts, sentences


def first_person(sentence: str) -> str:
    for pattern, replacement in _FIRST_PERSON:
        sentence = re.sub(pattern, replacement, sentence, flags=re.IGNORECASE)
    return sentence


def people_turns(data: Path) -> list[str]:
    turns = []
    for line in (data / "mt_bench_101" / "mtbench101.jsonl").read_text("utf-8").splitlines():
        turns += [turn["user"] for turn in json.loads(line)["history"]]
    return turns


def share_at_least(lengths: list[int], words: int) -> str:
    return f"{sum(length >= words for length in lengths) / len(lengths):.1%}"


def percentile(lengths: list[int], share: float) -> int:
    ordered = sorted(lengths)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def show(title: str, lengths: list[int]) -> None:
    counts = Counter(lengths)
    print(
        f"{title}: {len(lengths)} texts; longest run median {percentile(lengths, 0.5)}, "
        f"90% {percentile(lengths, 0.9)}, 99% {percentile(lengths, 0.99)}, max {max(lengths)}; "
        f"flagged at {RECITAL_WORDS} words: {share_at_least(lengths, RECITAL_WORDS)}"
    )
    print("  runs of n words: " + ", ".join(f"{n}: {counts[n]}" for n in sorted(counts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TURNBENCH_DATA_DIR", "../shared/data")),
        help="the benchmark data folder (tau_bench/ and mt_bench_101/)",
    )
    args = parser.parse_args()
    instructions = tau_instructions(args.data_dir)
    made = [system_message(instruction) for instruction in instructions]
    print(f"{len(made)} system messages from tau-bench's instructions; threshold {RECITAL_WORDS}")
    # every system message at once: the template's own wording once, then each persona and
    # goal with the labels around them (a run of people's text crossing from one persona to
    # the template's rules would be no chance repetition anyway)
    prompts = scenario_prompts()
    template = prompts["system"].format(persona=SEPARATOR, goal=SEPARATOR, facts=SEPARATOR)
    pieces = [template]
    for instruction in instructions:
        sentences = re.split(r"(?<=[.!?])\s+", instruction.strip())
        persona, goal = sentences[0], " ".join(sentences[1:]) or sentences[0]
        pieces.append(f"Who you are: {persona}\nWhat you want: {goal}\nWhat you know")
    every = f" {SEPARATOR} ".join(pieces)
    # (no fact cut out: a fact would only shorten a run, so these lengths are upper bounds)
    index = NGramIndex(recital_words(every))
    turns = people_turns(args.data_dir)
    people = [index.longest(recital_words(turn)) for turn in turns]
    source = RecitalSource(every)  # (the check's own count, on every 20th turn: the same)
    assert all(source.longest(turn) == people[i] for i, turn in enumerate(turns) if i % 20 == 0)
    show("MT-Bench-101 user turns against every system message", people)
    sources = [RecitalSource(system, facts) for system, facts, _ in made]  # (each indexed once)
    stated = [
        source.longest(first_person(sentence))
        for source, (_, _, sentences) in zip(sources, made, strict=True)
        for sentence in sentences[1:]
    ]
    show("goal sentences in the first person against their system message", stated)
    rules = prompts["system"].split("\n\n")[-1]
    parts: dict[str, list[int]] = {"whole": [], "persona": [], "goal": [], "rules": []}
    for source, (system, _, sentences) in zip(sources, made, strict=True):
        persona, goal = sentences[0], " ".join(sentences[1:]) or sentences[0]
        shown = {
            "whole": "My instructions are: " + system,
            "persona": f"Who you are: {persona}",
            "goal": f"What you want: {goal}",
            "rules": rules,
        }
        for name, text in shown.items():
            parts[name].append(source.longest(text))
    for name, lengths in parts.items():
        show(f"recital of the {name} system message" if name == "whole" else
             f"recital of the {name} (with its label)", lengths)  # fmt: skip
    rows = {"people's turns": people, "goal in the first person": stated}
    rows |= {f"recital: {name}": lengths for name, lengths in parts.items()}
    thresholds = (8, 10, 12, 14, 16, 20)
    print("\nshare flagged at a threshold of n words")
    print(f"{'':28}" + "".join(f"{n:>8}" for n in thresholds))
    for name, lengths in rows.items():
        print(f"{name:28}" + "".join(f"{share_at_least(lengths, n):>8}" for n in thresholds))


if __name__ == "__main__":
    main()
