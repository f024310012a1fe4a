"""lost-in-conversation-translation (Laban et al. 2025): 30 WMT news documents, German to
English, translated in one turn or revealed a chunk per turn.

Each run holds one or more conversation types per document (`--conversation`): `full` (the
whole document in one user turn), `concat` (all chunks in one turn, as a list) and `sharded`
(one chunk per user turn; every reply must translate the whole document so far). Every type
is held `--simulations` times per document, each conversation with its own seed, derived
from (document, type, simulation index), recorded with its user turns and sent as the
request's `seed`. The user turns are made at run time by our own templates
(`prompts/translation_turns.json`) and logged before the model answers them: this is the
engine's simulated mode, with templates playing the user.

Scoring is the paper's: sacrebleu corpus BLEU of the final answer against `document_en`,
divided by 100, with no judge. Every earlier answer is scored too (the trajectory), against
the reference of the chunks revealed by then (the documents' German and English lines align
one to one). Per conversation type: the mean over documents with a 95% interval, aptitude
and unreliability (`turnbench.stats.reliability`); with both `full` and `sharded` held, the
degradation `1 - sharded/full` with a paired interval.

A chunk the file leaves empty (two documents end with one) is not sent as a turn of its
own: there is nothing in it to translate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from turnbench.benchmarks.base import (
    Benchmark,
    BenchmarkSettings,
    Chart,
    ComparisonRule,
    JudgedTurn,
    JudgeTask,
    Pair,
    ReportSpec,
    Sample,
    TableNote,
    TableRow,
    TextTable,
    Turn,
    UserAsk,
    UserTurn,
    package_sources,
)
from turnbench.benchmarks.datafiles import DataFile
from turnbench.benchmarks.lost_in_conversation_translation.data import (
    DOCUMENTS,
    Shard,
    ShardedDocument,
    load_documents,
)
from turnbench.benchmarks.lost_in_conversation_translation.options import (
    ConversationType,
    TranslationOptions,
)
from turnbench.benchmarks.lost_in_conversation_translation.scoring import bleu
from turnbench.benchmarks.tables import ScoreTables
from turnbench.errors import UserError
from turnbench.types import RequestParams

DEFAULT_CONVERSATIONS: tuple[ConversationType, ...] = ("full", "sharded")
SCORING = "sacrebleu-corpus-bleu/100"


@dataclass(frozen=True)
class Templates:
    """Our user turns (prompts/translation_turns.json), named and versioned."""

    name: str
    version: int
    texts: Mapping[str, str]

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"


@cache
def templates() -> Templates:
    raw = json.loads(
        resources.files("turnbench").joinpath("prompts/translation_turns.json").read_text("utf-8")
    )
    keys = (
        "full",
        "concat",
        "concat_item",
        "sharded_first",
        "sharded_next",
        "user_system",
        "user_first",
        "user_next",
    )
    return Templates(raw["name"], int(raw["version"]), {key: raw[key] for key in keys})


def conversation_seed(task_id: str, kind: str, simulation: int) -> int:
    """The seed of one conversation: fixed by what it is, so a resumed or extended run gives
    every conversation the seed it had (31 bits: every server accepts it)."""
    digest = hashlib.sha256(f"{task_id}\n{kind}\n{simulation}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class Conversation:
    """What one sample of this benchmark is: a document held as one conversation type,
    the `simulation`-th time. `chunks` are the shards sent (non-empty, in order) and
    `references[i]` the English reference of the document up to and including chunk i
    (None when the document's lines do not align: only the final answer is scored)."""

    document: ShardedDocument
    kind: ConversationType
    simulation: int
    seed: int
    chunks: tuple[Shard, ...]
    references: tuple[str | None, ...]

    def meta(self) -> dict[str, Any]:
        return {
            "document": self.document.task_id,
            "conversation": self.kind,
            "simulation": self.simulation,
            "seed": self.seed,
        }


def references_so_far(document: ShardedDocument) -> list[str | None]:
    """The English reference up to each non-empty chunk, by the lines the German chunks
    span (None for all but the last when the document's lines do not align)."""
    german = document.document_de.split("\n")
    english = document.document_en.split("\n")
    aligned = len(german) == len(english)
    found: list[str | None] = []
    line = 0
    for shard in document.shards:
        line += shard.shard.count("\n") + 1
        if shard.shard.strip():
            found.append("\n".join(english[:line]).strip() if aligned else None)
    if found:
        found[-1] = document.document_en  # the final answer: the whole reference
    return found


class ConversationSummary(BaseModel):
    """One conversation type over the documents: the mean of each document's mean final
    score with its 95% interval (resampling documents), aptitude (the 90th percentile of a
    document's scores, averaged) and unreliability (90th minus 10th, averaged)."""

    mean: float
    mean_ci95: list[float]
    aptitude: float
    unreliability: float
    samples: int
    simulations: int


class DegradationInterval(BaseModel):
    """1 - mean(sharded) / mean(full), with a 95% interval pairing each document's types."""

    value: float
    ci_low: float
    ci_high: float


class ConversationScore(BaseModel):
    """One conversation: what it is, its seed, its final score and its trajectory (the
    score of the answer at every turn; null where the turn is not answered)."""

    sample_id: str
    document: str
    conversation: str
    simulation: int
    seed: int
    score: float | None
    by_turn: list[float | None]


class TranslationSettings(BaseModel):
    """The settings lost-in-conversation-translation's results name first
    (`results_header`): the conversation types held and how often each is held."""

    conversations_held: list[str]
    simulations: int


class TranslationTables(ScoreTables):
    """lost-in-conversation-translation's tables: `overall` is the sharded mean (the first
    type held when sharded is not). `by_conversation` per type held (null: nothing scored
    yet); `degradation` when full and sharded are both held (null: not defined);
    `score_by_turn` the mean trajectory of sharded conversations, per turn;
    `conversation_means` each type's mean; `scores_by_document` each document's final
    scores per type (the report's strip plot); `conversations` each one."""

    by_conversation: dict[str, ConversationSummary | None]
    conversation_means: dict[str, float | None]
    scores_by_document: dict[str, dict[str, list[float]]]
    degradation: DegradationInterval | None = None
    score_by_turn: dict[str, dict[str, float | None]]
    conversations: list[ConversationScore]

    trailing = ("overall", "overall_ci95")


class LostInConversationTranslation(Benchmark):
    name = "lost-in-conversation-translation"
    description = (
        "Lost in Conversation, translation (Laban et al. 2025): 30 WMT news documents, "
        "German to English, in one turn or a chunk per turn; BLEU, no judge"
    )
    sample_noun = "conversations"
    group_kind = "conversation"
    history = "simulated"
    needs_judge = False
    #: with --user-model, a user model writes the sharded turns (one chunk each, verbatim)
    user_model = "optional"
    needs_answer_text = True
    #: the paper samples every conversation at temperature 1, so that repeated
    #: conversations differ (`--temperature` sets another)
    default_answer_temperature = 1.0
    default_max_new_tokens = 2048
    comparison = ComparisonRule(combine="min", overall="mean", score_range=(0.0, 1.0))
    options_model = TranslationOptions
    results_model = TranslationTables
    header_model = TranslationSettings
    report = ReportSpec(
        charts=(
            Chart("bars", "conversation_means", "Mean score per conversation type",
                  "bar chart of the mean BLEU/100 per conversation type", scale_max=1.0),
            Chart("strips", "scores_by_document", "Each document's conversations",
                  "strip plot of every conversation's score, a row per document, a colour "
                  "per conversation type", scale_max=1.0),
            Chart("turn_lines", "score_by_turn", "Score by turn (sharded)",
                  "line chart of the mean BLEU/100 of sharded conversations at each turn",
                  scale_max=1.0),
        ),
        overall_note="lost-in-conversation-translation: the mean BLEU/100 of the final "
        "answers of sharded conversations",
        summary_fields=("conversations_held", "simulations"),
    )  # fmt: skip

    def __init__(self, files: dict[str, Path], settings: BenchmarkSettings) -> None:
        super().__init__(files, settings)
        options = settings.options
        self.kinds: tuple[ConversationType, ...] = tuple(
            options.get("conversation") or DEFAULT_CONVERSATIONS  # (checked names)
        )
        self.simulations = int(options.get("simulations") or 1)
        self.documents = load_documents(files[DOCUMENTS])
        self.templates = templates()

    @classmethod
    def data_files(cls) -> list[DataFile]:
        return package_sources(__package__)

    # -- content ---------------------------------------------------------------------------
    def _conversation(
        self, document: ShardedDocument, kind: ConversationType, simulation: int
    ) -> Conversation:
        chunks = tuple(shard for shard in document.shards if shard.shard.strip())
        if not chunks:
            raise UserError(f"{DOCUMENTS}: document {document.task_id} has only empty shards")
        references = tuple(references_so_far(document))
        if kind != "sharded":
            references = references[-1:]
        return Conversation(
            document,
            kind,
            simulation,
            conversation_seed(document.task_id, kind, simulation),
            chunks,
            references,
        )

    def _texts(self, conversation: Conversation) -> list[str]:
        """The user turns of a conversation, as our templates word them."""
        texts = self.templates.texts
        chunks = [shard.shard for shard in conversation.chunks]
        if conversation.kind == "full":
            return [texts["full"].format(document=conversation.document.document_de.strip())]
        if conversation.kind == "concat":
            listed = "\n".join(texts["concat_item"].format(chunk=chunk) for chunk in chunks)
            return [texts["concat"].format(chunks=listed)]
        first, *rest = chunks
        return [texts["sharded_first"].format(chunk=first)] + [
            texts["sharded_next"].format(chunk=chunk) for chunk in rest
        ]

    def _sample(self, conversation: Conversation) -> Sample:
        document = conversation.document
        return Sample(
            id=f"{document.task_id}-{conversation.kind}-{conversation.simulation}",
            group=conversation.kind,
            turns=tuple(Turn(user=text) for text in self._texts(conversation)),
            source=conversation,
        )

    def _samples(self, documents: Sequence[ShardedDocument]) -> list[Sample]:
        return [
            self._sample(self._conversation(document, kind, simulation))
            for document in documents
            for kind in self.kinds
            for simulation in range(self.simulations)
        ]

    def all_samples(self) -> list[Sample]:
        return self._samples(self.documents)

    @cached_property
    def samples(self) -> list[Sample]:
        """The planned conversations: every type and simulation of the first --limit
        documents."""
        limit = self.settings.limit
        return self._samples(self.documents if limit is None else self.documents[:limit])

    # -- the simulated user ----------------------------------------------------------------
    def user_turn(
        self, sample: Sample, turn: int, earlier: Sequence[Pair]
    ) -> UserTurn | UserAsk | None:
        conversation: Conversation = sample.source
        if turn > len(sample.turns):
            return None
        if conversation.kind == "sharded" and self.settings.user_model is not None:
            return self._user_ask(conversation, turn, earlier)
        if conversation.kind == "sharded":
            revealed: tuple[int, ...] = (conversation.chunks[turn - 1].shard_id,)
        else:
            revealed = tuple(shard.shard_id for shard in conversation.chunks)
        return UserTurn(
            text=self._texts(conversation)[turn - 1],
            revealed=revealed,
            origin="template",
            meta=conversation.meta(),
        )

    def _user_ask(self, conversation: Conversation, turn: int, earlier: Sequence[Pair]) -> UserAsk:
        """The request that has the user model write sharded turn `turn`, and how its reply
        is read: the shards it revealed and the rules it broke (`engine.user_quality`)."""
        from turnbench.engine.user_quality import RECITED, check_user_turn, find_recital

        texts = self.templates.texts
        chunk = conversation.chunks[turn - 1].shard
        if turn == 1:
            task = texts["user_first"].format(chunk=chunk)
        else:
            task = texts["user_next"].format(reply=earlier[-1][1], chunk=chunk)
        messages = [
            {"role": "system", "content": texts["user_system"]},
            {"role": "user", "content": task},
        ]
        shards = [shard.shard for shard in conversation.chunks]
        before = set(range(turn - 1))  # (0-based: the chunks earlier turns were to give)
        allowed = "\n".join(text for key, text in texts.items() if key.startswith("sharded"))

        def read(reply: str) -> UserTurn:
            # (its system message recited never reaches the model; the chunks are its to give)
            recital = find_recital(reply, texts["user_system"], shards)
            check = check_user_turn(recital.text, shards, before, allowed_text=allowed)
            return UserTurn(
                text=recital.text.strip(),
                revealed=tuple(conversation.chunks[i].shard_id for i in check.revealed),
                origin="user-model",
                meta=conversation.meta(),
                problems=tuple(check.problems) + ((RECITED,) if recital.recited else ()),
            )

        return UserAsk(messages=messages, read=read, seed=conversation.seed)

    def answer_params(self, sample: Sample) -> RequestParams:
        """The run's sampling, with the conversation's own seed."""
        params = super().answer_params(sample)
        conversation: Conversation = sample.source
        return params.model_copy(update={"extra": {**params.extra, "seed": conversation.seed}})

    def judge_tasks(
        self, sample: Sample, turn: int, earlier: Sequence[Pair], answer: str
    ) -> list[JudgeTask]:
        return []  # scored from the answer alone (BLEU)

    # -- identity --------------------------------------------------------------------------
    def prompt_versions(self) -> dict[str, str]:
        return {"user_turns": self.templates.label, "scoring": SCORING}

    def results_header(self) -> dict[str, Any]:
        return {"conversations_held": list(self.kinds), "simulations": self.simulations}

    # -- results ---------------------------------------------------------------------------
    def aggregate(self, judged: Sequence[JudgedTurn]) -> TranslationTables:
        from turnbench.stats.reliability import (
            DegradationUndefinedError,
            degradation,
            reliability_summary,
        )

        trajectories: dict[object, dict[int, float]] = {}
        for item in judged:
            if item.status != "scored" or item.answer is None:
                continue
            conversation: Conversation = item.sample.source
            reference = conversation.references[item.turn - 1]
            if reference is not None:
                trajectories.setdefault(item.sample.id, {})[item.turn] = bleu(
                    item.answer, reference
                )
        rows: list[ConversationScore] = []
        finals: dict[str, dict[str, list[float]]] = {kind: {} for kind in self.kinds}
        for sample in self.samples:
            conversation = sample.source
            scored = trajectories.get(sample.id, {})
            final = scored.get(len(sample.turns))
            rows.append(
                ConversationScore(
                    sample_id=str(sample.id),
                    document=conversation.document.task_id,
                    conversation=conversation.kind,
                    simulation=conversation.simulation,
                    seed=conversation.seed,
                    score=final,
                    by_turn=[scored.get(turn) for turn in range(1, len(sample.turns) + 1)],
                )
            )
            if final is not None:
                finals[conversation.kind].setdefault(conversation.document.task_id, []).append(
                    final
                )
        by_conversation = {
            kind: (
                ConversationSummary(**reliability_summary(finals[kind]).model_dump())
                if any(finals[kind].values())
                else None
            )
            for kind in self.kinds
        }
        paired: dict[str, DegradationInterval | None] = {}  # degradation: full and sharded held
        if "full" in self.kinds and "sharded" in self.kinds:
            try:
                interval = degradation(finals["full"], finals["sharded"])
                paired["degradation"] = DegradationInterval(**interval.model_dump())
            except DegradationUndefinedError:
                paired["degradation"] = None
        by_turn: dict[str, dict[str, float | None]] = {}
        if "sharded" in self.kinds:
            turns = max((len(s.turns) for s in self.samples if s.group == "sharded"), default=0)
            by_turn["sharded"] = {}
            for turn in range(1, turns + 1):
                values = [
                    row.by_turn[turn - 1]
                    for row in rows
                    if row.conversation == "sharded"
                    and len(row.by_turn) >= turn
                    and row.by_turn[turn - 1] is not None
                ]
                by_turn["sharded"][str(turn)] = (
                    sum(v for v in values if v is not None) / len(values) if values else None
                )
        headline = "sharded" if "sharded" in self.kinds else self.kinds[0]
        primary = by_conversation.get(headline)
        return TranslationTables(
            overall=primary.mean if primary else None,
            overall_ci95=primary.mean_ci95 if primary else None,
            by_conversation=by_conversation,
            conversation_means={
                kind: block.mean if block else None for kind, block in by_conversation.items()
            },
            scores_by_document={kind: dict(finals[kind]) for kind in self.kinds},
            **paired,
            score_by_turn=by_turn,
            conversations=rows,
        )

    @classmethod
    def terminal_table(cls, results: Mapping[str, Any]) -> TextTable:
        blocks = results.get("by_conversation") or {}
        rows = []
        for kind, block in blocks.items():
            if not isinstance(block, dict):
                rows.append(TableRow((str(kind), None, "-", None, None, "-")))
                continue
            low, high = (block.get("mean_ci95") or [None, None])[:2]
            interval = f"{low:.2f}-{high:.2f}" if low is not None and high is not None else "-"
            rows.append(
                TableRow(
                    (
                        str(kind),
                        block.get("mean"),
                        interval,
                        block.get("aptitude"),
                        block.get("unreliability"),
                        f"{block.get('samples')} x {block.get('simulations')}",
                    )
                )
            )
        notes = []
        degraded = results.get("degradation")
        if isinstance(degraded, dict):
            notes.append(
                TableNote(
                    f"degradation 1 - sharded/full: {degraded['value']:.3f} "
                    f"(95% CI {degraded['ci_low']:.3f} to {degraded['ci_high']:.3f})"
                )
            )
        return TextTable(
            title=f"{results.get('benchmark')}: {results.get('model')} (BLEU / 100)",
            headers=("conversation", "mean", "95% CI", "aptitude", "unreliability", "docs x sims"),
            sections=(tuple(rows),),
            notes=tuple(notes),
            names_whole=True,
        )
