"""Probability-weighted ratings (`--judge-scoring weighted`) from a judge reply's logprobs.

A parsed rating is one sample of what the judge thinks; the probabilities of the rating
tokens say how sure it was. The rule (the same for every backend that returns logprobs):

- find where the reply's rating was written (the last `[[N]]`, as the parsers read it) and
  the token at which its first character was generated;
- at that position, each top alternative that reads as a whole rating 1-10 (with the same
  text around it as the sampled token, e.g. "[[" before or "]]" after) contributes its
  probability;
- the sampled rating itself, when written as two tokens (such as "1", "0" for 10), counts
  only along the sampled path, with the product of its two tokens' probabilities;
- probabilities are renormalised over the ratings found, and the score is their expected
  value.

The result is a continuous score with far fewer ties than parsed integers. Without logprobs
(or without the rating's tokens among them) there is no weighted score and the caller falls
back to the parsed rating, and counts it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from turnbench.types import TokenLogprob

RATINGS = range(1, 11)
_RATING = re.compile(r"\[\[\s*([0-9]{1,2})\s*\]\]")


@dataclass(frozen=True)
class WeightedRating:
    value: float  # the expected rating
    probabilities: dict[int, float]  # rating -> renormalised probability


def _as_rating(text: str) -> int | None:
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value in RATINGS and str(value) == text else None


def expected_rating(tokens: Sequence[TokenLogprob]) -> WeightedRating | None:
    """The probability-weighted rating of a reply given as its tokens, or None."""
    if not tokens:
        return None
    text = "".join(token.token for token in tokens)
    matches = list(_RATING.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    digits_start, digits_end = match.span(1)
    sampled = _as_rating(match.group(1))
    if sampled is None:
        return None
    starts = []
    offset = 0
    for token in tokens:
        starts.append(offset)
        offset += len(token.token)
    index = max(i for i, start in enumerate(starts) if start <= digits_start)
    token = tokens[index]
    prefix = token.token[: digits_start - starts[index]]
    token_end = starts[index] + len(token.token)
    weights: dict[int, float] = {}
    if token_end >= digits_end:  # the whole rating is in this one token
        suffix = token.token[digits_end - starts[index] :]
        weights[sampled] = math.exp(token.logprob)
    else:  # split over tokens: only along the sampled path, as a product
        suffix = ""
        probability = math.exp(token.logprob)
        position = index + 1
        while position < len(tokens) and starts[position] < digits_end:
            probability *= math.exp(tokens[position].logprob)
            position += 1
        weights[sampled] = probability
    for alternative in token.top:
        piece = alternative.token
        if piece == token.token or not piece.startswith(prefix):
            continue
        rest = piece[len(prefix) :]
        if suffix and rest.endswith(suffix):
            rest = rest[: -len(suffix)]
        rating = _as_rating(rest.strip())
        if rating is not None:  # another token for the sampled rating is another path to it
            weights[rating] = weights.get(rating, 0.0) + math.exp(alternative.logprob)
    total = sum(weights.values())
    if not total > 0 or not math.isfinite(total):
        return None
    probabilities = {rating: weight / total for rating, weight in sorted(weights.items())}
    value = sum(rating * p for rating, p in probabilities.items())
    return WeightedRating(value=value, probabilities=probabilities)
