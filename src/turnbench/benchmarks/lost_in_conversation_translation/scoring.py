"""How lost-in-conversation-translation scores an answer: corpus BLEU / 100, as the paper does.

Laban et al. 2025 score a translation with sacrebleu's corpus BLEU (default settings: 13a
tokenizer, exponential smoothing) of the one answer against the one reference translation,
divided by 100, so a score is in [0, 1]. Their translation task takes the assistant's whole
reply as the answer (its answer-extraction strategy is "full response": no model extracts it
and no preamble is cut) and strips surrounding whitespace from answer and reference before
scoring; read in the fork our data file comes from (minglii1998/lost_in_conversation_mt,
task_translation.py and system_agent.py). `extract_translation` does the same: a reply that
opens with "Here is the translation:" keeps that preamble and loses a little BLEU for it, as
in the paper, and the instructions given to the model are what asks it for the translation
alone.
"""

from __future__ import annotations


def extract_translation(answer: str) -> str:
    """The part of a reply that is scored: the whole reply, without surrounding whitespace."""
    return answer.strip()


def bleu(answer: str, reference: str) -> float:
    """sacrebleu corpus BLEU of [answer] against [[reference]], divided by 100.

    sacrebleu's floating-point sums can put a perfect match a hair above 100
    (100.00000000000004); the score is capped at 1.0 so a perfect answer scores exactly 1.
    """
    import sacrebleu  # imported when scoring, not when the CLI starts

    score = sacrebleu.corpus_bleu([extract_translation(answer)], [[reference.strip()]]).score
    return min(1.0, score / 100.0)
