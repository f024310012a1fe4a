"""lost-in-conversation-translation: BLEU as the paper scores it, and the document loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu

from turnbench.benchmarks.lost_in_conversation_translation.data import (
    DOCUMENTS,
    ShardedDocument,
    load_documents,
)
from turnbench.benchmarks.lost_in_conversation_translation.scoring import (
    bleu,
    extract_translation,
)
from turnbench.errors import UserError


@pytest.fixture(scope="module")
def documents(data_dir: Path) -> list[ShardedDocument]:
    return load_documents(data_dir / DOCUMENTS)


def _sacrebleu(answer: str, reference: str) -> float:
    return sacrebleu.corpus_bleu([answer.strip()], [[reference.strip()]]).score / 100.0


def test_a_perfect_answer_scores_one_on_every_document(documents):
    for document in documents:
        assert bleu(document.document_en, document.document_en) == 1.0
        # sacrebleu's own figure for it, a floating-point hair from 100
        assert _sacrebleu(document.document_en, document.document_en) == pytest.approx(1.0)
        # surrounding whitespace is not part of the answer (the paper strips it)
        assert bleu(f"\n  {document.document_en}\n\n", document.document_en) == 1.0


def test_partial_and_wrong_answers_score_what_sacrebleu_says(documents):
    for document in documents:
        reference = document.document_en
        lines = reference.split("\n")
        half = "\n".join(lines[: max(1, len(lines) // 2)])
        score = bleu(half, reference)
        assert score == pytest.approx(_sacrebleu(half, reference), abs=1e-12)
        assert 0.0 < score < 1.0
        # the German source is not a translation
        source = bleu(document.document_de, reference)
        assert source == pytest.approx(_sacrebleu(document.document_de, reference), abs=1e-12)
        assert source < score
    assert bleu("", documents[0].document_en) == 0.0


def test_the_whole_reply_is_scored_preamble_included(documents):
    reference = documents[0].document_en
    reply = f"Here is the translation of the document:\n\n{reference}"
    assert extract_translation(reply) == reply  # nothing is cut, as in the paper
    assert bleu(reply, reference) == pytest.approx(_sacrebleu(reply, reference), abs=1e-12)
    assert bleu(reply, reference) < 1.0


def test_the_real_file(documents):
    assert len(documents) == 30
    assert len({d.task_id for d in documents}) == 30
    assert all(3 <= len(d.shards) <= 5 for d in documents)
    for document in documents:
        assert [s.shard_id for s in document.shards] == list(range(1, len(document.shards) + 1))
        # found on this file: the shards joined by one newline are the source exactly
        # (not only up to whitespace)
        assert "\n".join(s.shard for s in document.shards) == document.document_de
    # two documents end with an empty shard (kept as the file has it); counting only
    # shards with text, every document still has 3-5
    empty = [(d.task_id, i) for d in documents for i, s in enumerate(d.shards) if not s.shard]
    assert empty == [("wmt-news-17-de-en", 3), ("wmt-news-20-de-en", 4)]
    assert all(3 <= sum(1 for s in d.shards if s.shard) <= 5 for d in documents)


GOOD = {
    "task_id": "t1",
    "task": "translation",
    "document_de": "Ein Satz.\nNoch einer.",
    "document_en": "A sentence.\nAnother one.",
    "shards": [{"shard_id": 1, "shard": "Ein Satz."}, {"shard_id": 2, "shard": "Noch einer."}],
}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "docs.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_loader_reads_a_small_file(tmp_path):
    trailing = GOOD | {"task_id": "t2", "shards": [*GOOD["shards"], {"shard_id": 3, "shard": ""}]}
    documents = load_documents(_write(tmp_path, json.dumps([GOOD, trailing], indent=1)))
    assert [d.task_id for d in documents] == ["t1", "t2"]
    assert [s.shard for s in documents[0].shards] == ["Ein Satz.", "Noch einer."]
    assert [s.shard for s in documents[1].shards] == ["Ein Satz.", "Noch einer.", ""]


def test_the_loader_names_the_line_and_field_of_each_problem(tmp_path):
    missing = {k: v for k, v in GOOD.items() if k != "document_en"} | {"task_id": "t2"}
    disordered = GOOD | {"task_id": "t3", "shards": [{"shard_id": 2, "shard": "x"}]}
    no_text = GOOD | {"task_id": "t4", "shards": [{"shard_id": 1}]}
    text = json.dumps([GOOD, missing, disordered, no_text, GOOD, 7], indent=1)
    path = _write(tmp_path, text)
    starts = [i + 1 for i, line in enumerate(text.split("\n")) if line in (" {", " 7")]
    with pytest.raises(UserError) as caught:
        load_documents(path)
    message = caught.value.message
    assert message.startswith(f"{path} has 5 problems:")
    assert f"{path}:{starts[1]}: missing field 'document_en'" in message
    assert f"{path}:{starts[2]}: document 3 ('t3'): field 'shards': shard_id must" in message
    assert f"{path}:{starts[3]}: missing field 'shards.0.shard'" in message
    assert f"{path}:{starts[4]}: document 5 ('t1'): duplicate task_id (first on line 2)" in message
    assert f"{path}:{starts[5]}: expected a JSON object, got int" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty"),
        ("[]", "the file holds no document"),
        ('{"task_id": "t1"}', "expected a JSON array of documents, got dict"),
        ('[{"task_id": "t1",}]', ":1: malformed JSON"),
    ],
)
def test_the_loader_refuses_a_malformed_file(tmp_path, text, expected):
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        load_documents(path)
    assert expected in caught.value.message


def test_the_loader_refuses_a_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_documents(tmp_path / "absent.json")
