"""Is the simulated user playing by the rules? Pure checks on the text of one user turn.

A model playing the user can spoil a measurement: reveal several shards at once, invent a
fact no shard holds, answer its own request, or start speaking as the assistant. These
functions flag each from the text alone (no model call), so every simulated user turn can be
counted and, with `--strict-user`, asked again. They are heuristics: tuned to catch the
plain cases with no false alarm on a user that sends one shard in its own words (the tests
hold both), not to judge meaning.

Words. Text is cut into runs of letters and runs of digits, case-folded ("S-Bahn-Tunnel"
gives s, bahn, tunnel; "3rd" gives 3, rd). Content words are letter runs of 3 or more
characters and every digit run (numbers are facts: an order number, a date).

Revealed shards. A shard's *distinctive* words are its content words that no other shard of
the sample has; a shard is revealed when at least REVEAL_SHARE (half) of them occur in the
message. Using only distinctive words keeps a shard from being credited for the function
words and names it shares with its neighbours: on the 30 documents of the translation data,
one shard covers up to 62% of another's content words, but 0% of its distinctive words by
construction; every shard there has at least 4 distinctive words. Half, not all, so a user
that rephrases a shard (keeping its names, numbers and key nouns, changing the rest) still
counts as revealing it. A shard with fewer than MIN_DISTINCTIVE distinctive words (one
repeating another) falls back to all its content words.

Invented content. A sentence of the message is invented when it has at least
INVENTED_MIN_WORDS content words found in no shard, not in the protocol's own wording
(`allowed_text`: the template, persona, goal and opening the user model was given) and not
in a short list of English conversational words, and those make up at least INVENTED_SHARE
of its content words. A rephrased shard brings one or two new words per sentence; a made-up
fact ("I paid with a 20% coupon in the Berlin store") brings several at once.

Answering itself. Text that reads as the reply to the user's own request: an opener such as
"Here is the translation", a "Translation:" or "Answer:" label, an assistant's report of
the request done ("your refund has been processed"); and, when the shards are not English
(the translation task), a line of 6 or more words that reads as English (at least 8% English
function words German does not share) and of whose content words at least 30% are in no
shard and no allowed text: a translation the user wrote itself. Measured on the translation
data: every German line has its words in a shard, so none is flagged; of the 274 reference
English lines of 6+ words, 273 read as English, and pasted after a templated first chunk 261
are flagged (the others are mostly names and numbers the German also has); templated turns
with their one chunk are flagged for nothing.

Role switch. Role labels at the start of a line ("Assistant:", "User:"), chat-template
tokens ("<|im_start|>", "[INST]"), "### Response" headers, and the assistant's voice ("As an
AI", "How can I help you today?", "I'd be happy to help").

End markers. The user model ends a conversation by writing GOAL_MET or GIVE_UP;
`parse_end_marker` finds them (case and inner spaces forgiven) and returns the rest of the
text, so that a reply that is only a marker is not sent to the model under test.

Recited instructions. A user model may recite its own system message ("My instructions
are: You play a user... Who you are: ... What you want: ..."): the model under test would
then read the persona, the goal and the rules it must never see. `find_recital` finds every
run of at least RECITAL_WORDS consecutive words of the instructions repeated verbatim
(words: runs of letters and digits, case-folded, HTML and XML tags skipped, so punctuation,
Markdown and tags between them do not matter). The facts the user is meant to share when
asked (`shared`: an order number, a date) are cut out of the instructions first, so giving
one, however long, is never a recital; an end marker inside a recited span is part
of the recital and ends nothing. The recited spans are replaced by RECITAL_MARK before the
text is sent (the turn is counted under "recited_instructions" and, with --strict-user,
asked again).

Why RECITAL_WORDS = 12, measured with `python benchmarks/recital_threshold.py` (its output,
2026-12-05, every figure below): the scenario user's system message made from each of
the 685 task instructions of the built-in tool-using benchmark (its first sentence the
persona, the rest the goal, its ids and zip codes the facts). Chance: none of the 4,208
user turns of MT-Bench-101 (people writing about other things) repeats more than 5
consecutive words of any of them (99% at
most 3), so none is flagged at any threshold from 8 to 20. Recitals: the whole system
message and its rules alone (58 words in one run, or more) are flagged every time, the goal
with its label 75%, the persona with its label 87% (a short persona and its label are 13
words: a threshold of 14 would catch 43%). A user stating its goal in its own voice (each of
the 2,012 goal sentences turned into the first person): 34% repeat 12 or more words
verbatim and are flagged, as upstream's user prompt would have it ("Do not repeat the exact
instruction in the conversation", that benchmark's user prompt); a threshold of 16 would
still flag 22% and miss most persona recitals (it catches 43% of them), one of 10 would flag
41%. tests/unit/test_recital.py holds both sides: a shared fact, however long, and a goal in
a user's own words pass; the whole message, the rules, and the persona with its label are
caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence, Set
from typing import Literal

from pydantic import BaseModel, ConfigDict

Problem = Literal[
    "several_shards",
    "invented",
    "answered_itself",
    "role_switch",
    "ended_before_start",
    "recited_instructions",
]
#: every code the text checks find, in the order `UserTurnCheck.problems` lists them
PROBLEMS: tuple[Problem, ...] = ("several_shards", "invented", "answered_itself", "role_switch")
#: not a text check: a conversation's first user message that is only an end marker (the
#: user model ended the conversation before the model under test said anything)
ENDED_BEFORE_START: Problem = "ended_before_start"
#: not a `check_user_turn` code: the turn recited its own instructions (`find_recital`)
RECITED: Problem = "recited_instructions"
#: the shortest run of the instructions' words, repeated verbatim, that is a recital (see
#: the module docstring for the measurement)
RECITAL_WORDS = 12
#: what a recited span is replaced with before the text reaches the model under test
RECITAL_MARK = "[…]"

REVEAL_SHARE = 0.5
MIN_DISTINCTIVE = 2
INVENTED_MIN_WORDS = 4
INVENTED_SHARE = 0.6
#: a line counts as English with at least this share of English function words
ENGLISH_SHARE = 0.08
#: shards whose share of English function words is below this are not English
NOT_ENGLISH_SHARE = 0.08
MIN_LINE_WORDS = 6
#: share of a line's content words found in no shard and no allowed text for it to be new
TRANSLATION_NOVEL_SHARE = 0.3

GOAL_MET = "[[GOAL_MET]]"
GIVE_UP = "[[GIVE_UP]]"
EndReason = Literal["goal_met", "abandoned"]
END_MARKERS: dict[str, EndReason] = {GOAL_MET: "goal_met", GIVE_UP: "abandoned"}

_WORDS = re.compile(r"[^\W\d_]+|\d+")
# a word of the recital check: letters and digits together ("4417", "w2378156", "user's");
# an HTML or XML tag is matched first and skipped, so that "<b>Who</b> you <i>are</i>"
# is the run "who you are" (its "b" and "i" would otherwise be words breaking the run)
_RECITAL_WORD = re.compile(
    r"</?[A-Za-z][\w:-]{0,30}(?:\s[^<>]{0,200})?/?>|(?P<word>[^\W_]+(?:['’][^\W_]+)*)"
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_END = re.compile(r"\[\[\s{0,3}(GOAL[\s_]{0,3}MET|GIVE[\s_]{0,3}UP)\s{0,3}\]\]", re.IGNORECASE)

# English words a user says whatever the content (3+ letters): not evidence of invention
_CONVERSATIONAL_WORDS = """
    the and for you your yours are was were with this that these those have has had not but
    can could would should will shall may might must please thanks thank hello hey also just
    what when where which who whom whose how why here there about from into onto some any
    more most one two thing things need needs want wants wanted like know tell help get got
    still yet then than them they their theirs its been being did does doing done now today
    again okay yes sorry well very really sure great good let lets make see look say said
    give take other another next part chunk piece last first new all only same such our
    out too much many each every both either neither nor off over under after before while
    because since though although whether able way time back even ever never always already
    mine myself yourself hers him his her she don doesn isn aren wasn weren won wouldn
    couldn shouldn haven hasn hadn didn
"""
_CONVERSATIONAL = frozenset(_CONVERSATIONAL_WORDS.split())
# English function words German (the translation data's source language) does not also
# spell the same way ("in", "an", "was", "so", "also", "will" are left out for that reason)
_ENGLISH_WORDS = """
    the a of and to is that it for with on as are be this by from at which have has were
    they their been would said not or but its who what when there than then these those
    our into after about more other some only over such because could should he she we
    his her him you your
"""
_ENGLISH = frozenset(_ENGLISH_WORDS.split())

# every repeat is bounded: a user model's reply is untrusted text, and an unbounded
# `\s*` next to another can take quadratic time on a long run of blanks
_ANSWER_PATTERNS = [
    re.compile(p, re.IGNORECASE | re.MULTILINE)
    for p in (
        r"^[^\w\n]{0,8}(?:sure|certainly|of course|absolutely)\b"
        r"[\s,!.:]{0,6}here(?:'s| is| are)\b",
        r"^[^\w\n]{0,8}here(?:'s| is| are)\s{1,4}(?:the|your|a|an|my)\s{1,4}"
        r"(?:\w{1,30}\s{1,4})?"
        r"(?:translation|translated|answer|solution|summary|response|result)",
        r"^[^\w\n]{0,8}(?:english\s{1,4})?translation\s{0,4}:",
        r"^[^\w\n]{0,8}(?:final\s{1,4})?answer\s{0,4}:",
        r"\byour\s{1,4}(?:refund|replacement|order|request|ticket)\s{1,4}has\s{1,4}been\s{1,4}"
        r"(?:processed|issued|approved|shipped|sent|resolved|arranged)",
        r"\bi(?:'ve|\s{1,4}have)\s{1,4}"
        r"(?:processed|issued|approved|arranged|initiated|shipped)\s{1,4}"
        r"(?:your|a|the)\b",
    )
]
_ROLE_PATTERNS = [
    re.compile(p, re.IGNORECASE | re.MULTILINE)
    for p in (
        r"^[^\w\n]{0,8}(?:assistant|ai|system|bot|chatbot|model|gpt|user|human)\s{0,4}:",
        r"<\|\s{0,2}[a-z_]{1,30}\s{0,2}\|>",
        r"\[/?INST\]",
        r"^[ \t]{0,8}#{2,6}\s{0,4}(?:response|assistant|answer|instruction)\b",
        r"\bas an ai\b",
        r"\bas an? (?:large )?language model\b",
        r"\bi(?:'m|\s{1,4}am)\s{1,4}(?:an?\s{1,4})?(?:ai|virtual|helpful)?\s{0,4}"
        r"(?:language\s{1,4}model|assistant)\b",
        r"\bhow\s{1,4}(?:can|may)\s{1,4}i\s{1,4}(?:help|assist)\s{1,4}you\b",
        r"\bis there anything else i can (?:help|do)\b",
        r"\bi(?:'d|\s{1,4}would)\s{1,4}be\s{1,4}(?:happy|glad)\s{1,4}to\s{1,4}"
        r"(?:help|assist)\b",
    )
]


class UserTurnCheck(BaseModel):
    """What one simulated user turn revealed, and the rules it broke.

    `revealed`: 0-based indices of the shards the message holds, already revealed ones
    included; `new`: those not revealed before this turn; `problems`: codes from PROBLEMS,
    in that order, each at most once.
    """

    model_config = ConfigDict(frozen=True)

    revealed: list[int]
    new: list[int]
    problems: list[str]


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.casefold())


def _content(words: Sequence[str]) -> set[str]:
    return {w for w in words if len(w) >= 3 or w.isdigit()}


def _english_share(words: Sequence[str]) -> float:
    return sum(1 for w in words if w in _ENGLISH) / len(words) if words else 0.0


def revealed_shards(user_text: str, shards: Sequence[str]) -> list[int]:
    """0-based indices of the shards whose distinctive words are at least half present in
    the message (see the module docstring for the rule and why)."""
    present = _content(_words(user_text))
    contents = [_content(_words(shard)) for shard in shards]
    revealed = []
    for index, words in enumerate(contents):
        others = set().union(*(c for i, c in enumerate(contents) if i != index))
        distinctive = words - others
        keys = distinctive if len(distinctive) >= MIN_DISTINCTIVE else words
        if keys and len(keys & present) >= REVEAL_SHARE * len(keys):
            revealed.append(index)
    return revealed


def _invented(user_text: str, known: set[str]) -> bool:
    for sentence in _SENTENCES.split(user_text):
        words = _content(_words(sentence))
        novel = {w for w in words - known if w not in _CONVERSATIONAL}
        if len(novel) >= INVENTED_MIN_WORDS and len(novel) >= INVENTED_SHARE * len(words):
            return True
    return False


def _answered_itself(user_text: str, shards: Sequence[str], known: set[str]) -> bool:
    if any(pattern.search(user_text) for pattern in _ANSWER_PATTERNS):
        return True
    shard_words = [w for shard in shards for w in _words(shard)]
    if not shard_words or _english_share(shard_words) >= NOT_ENGLISH_SHARE:
        return False  # an English block is a translation only when the shards are not English
    for line in user_text.splitlines():
        words = _words(line)
        if len(words) < MIN_LINE_WORDS or _english_share(words) < ENGLISH_SHARE:
            continue
        content = _content(words)
        novel = {w for w in content - known if w not in _CONVERSATIONAL}
        if content and len(novel) >= TRANSLATION_NOVEL_SHARE * len(content):
            return True
    return False


def _role_switch(user_text: str) -> bool:
    return any(pattern.search(user_text) for pattern in _ROLE_PATTERNS)


def check_user_turn(
    user_text: str,
    shards: Sequence[str],
    already_revealed: Set[int],
    *,
    allowed_text: str = "",
) -> UserTurnCheck:
    """The shards one user message reveals and the rules it breaks.

    `shards` are all the sample's shards (or a persona's facts); `already_revealed` the
    indices earlier turns revealed; `allowed_text` the protocol's own wording the user model
    may repeat (its instructions, template, persona, goal, opening): words from it are not
    invented. "several_shards" means more than one new shard in this message.
    """
    revealed = revealed_shards(user_text, shards)
    new = [index for index in revealed if index not in already_revealed]
    known = _content(_words(allowed_text)).union(*(_content(_words(s)) for s in shards))
    found: set[Problem] = set()
    if len(new) > 1:
        found.add("several_shards")
    if _invented(user_text, known):
        found.add("invented")
    if _answered_itself(user_text, shards, known):
        found.add("answered_itself")
    if _role_switch(user_text):
        found.add("role_switch")
    return UserTurnCheck(
        revealed=revealed, new=new, problems=[code for code in PROBLEMS if code in found]
    )


def parse_end_marker(text: str) -> tuple[str, EndReason | None]:
    """(the text without end markers, "goal_met" | "abandoned" | None).

    Without a marker the text comes back unchanged. With one, every marker is removed and
    the rest stripped, so a reply that is only a marker gives ("", reason). If both kinds
    appear, the last one written is the user's final word and gives the reason.
    """
    found = list(_END.finditer(text))
    if not found:
        return text, None
    last = re.sub(r"[\s_]+", "_", found[-1].group(1).upper())
    reason: EndReason = "goal_met" if last == "GOAL_MET" else "abandoned"
    return _END.sub("", text).strip(), reason


class Recital(BaseModel):
    """What `find_recital` found in one user model reply: the character spans (start, end)
    that repeat the instructions, and the reply with each replaced by RECITAL_MARK."""

    model_config = ConfigDict(frozen=True)

    spans: list[tuple[int, int]]
    text: str

    @property
    def recited(self) -> bool:
        return bool(self.spans)


def _recital_words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of every word of `text`, case-folded; tags are not words."""
    return [
        (m.group("word").casefold(), m.start(), m.end())
        for m in _RECITAL_WORD.finditer(text)
        if m.group("word") is not None
    ]


def recital_words(text: str) -> list[str]:
    """The words of `text` as the recital check reads them: runs of letters and digits,
    case-folded, tags skipped (for a measurement that must count as the check does:
    benchmarks/recital_threshold.py)."""
    return [word for word, _, _ in _recital_words(text)]


def _source_words(instructions: str, shared: Sequence[str]) -> list[str | None]:
    """The instructions' words, with every occurrence of a shared fact's words blanked
    (None: no run crosses it), so that giving a fact is never a recital."""
    words: list[str | None] = [word for word, _, _ in _recital_words(instructions)]
    starts: dict[str, list[int]] = {}
    for index, word in enumerate(words):
        starts.setdefault(word or "", []).append(index)
    original = list(words)
    for fact in shared:
        fact_words: list[str | None] = [word for word, _, _ in _recital_words(fact)]
        size = len(fact_words)
        for start in starts.get(str(fact_words[0]), []) if size else []:
            if original[start : start + size] == fact_words:
                words[start : start + size] = [None] * size
    return words


class RecitalSource:
    """A user model's instructions, indexed once for `runs`: each word's positions, with
    the words of the facts it may share blanked (no run crosses them)."""

    def __init__(self, instructions: str, shared: Sequence[str] = ()) -> None:
        self.positions: dict[str, list[int]] = {}
        for index, word in enumerate(_source_words(instructions, shared)):
            if word is not None:
                self.positions.setdefault(word, []).append(index)

    def runs(self, said: Sequence[str]) -> Iterator[tuple[int, int]]:
        """(first, last) word indices of `said` of every maximal run of consecutive words
        the instructions hold in the same order. Linear in `said` times the occurrences of
        each of its words in the instructions (a few hundred words), so a hostile reply
        cannot make it slow."""
        positions = self.positions
        previous: dict[int, int] = {}  # end index in the source -> length of the run there
        for index, word in enumerate([*said, None]):  # (None: every run ends at the end)
            current = {}
            for at in positions.get(word, ()) if word is not None else ():
                current[at] = previous.get(at - 1, 0) + 1
            for at, length in previous.items():
                if at + 1 not in current:  # the run ending at `at` goes no further
                    yield index - length, index - 1
            previous = current

    def longest(self, text: str) -> int:
        """The most consecutive words of the instructions `text` repeats verbatim."""
        said = recital_words(text)
        return max((last - first + 1 for first, last in self.runs(said)), default=0)


def longest_recited_run(text: str, instructions: str, shared: Sequence[str] = ()) -> int:
    """The most consecutive words of `instructions` (the shared facts cut out) that `text`
    repeats verbatim."""
    return RecitalSource(instructions, shared).longest(text)


def recited_runs(
    text: str, instructions: str, shared: Sequence[str] = (), min_words: int = RECITAL_WORDS
) -> list[tuple[int, int]]:
    """Word index ranges [first, last] of `text` that repeat at least `min_words`
    consecutive words of `instructions` (the shared facts cut out), merged where they
    overlap."""
    said = recital_words(text)
    runs = sorted(
        (first, last)
        for first, last in RecitalSource(instructions, shared).runs(said)
        if last - first + 1 >= min_words
    )
    merged: list[tuple[int, int]] = []
    for first, last in runs:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def find_recital(
    text: str, instructions: str, shared: Sequence[str] = (), min_words: int = RECITAL_WORDS
) -> Recital:
    """The spans of a user model's reply that recite its instructions (its system message:
    persona, goal, rules), and the reply with each replaced by RECITAL_MARK. `shared`: the
    facts it is meant to give when asked, never a recital (see the module docstring)."""
    words = _recital_words(text)
    spans = [(words[first][1], words[last][2]) for first, last in
             recited_runs(text, instructions, shared, min_words)]  # fmt: skip
    if not spans:
        return Recital(spans=[], text=text)
    parts, at = [], 0
    for start, end in spans:
        parts += [text[at:start], RECITAL_MARK]
        at = end
    parts.append(text[at:])
    return Recital(spans=spans, text="".join(parts))
