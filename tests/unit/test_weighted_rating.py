"""Probability-weighted ratings on hand-computed logprobs, and through the real CLI."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import run_cli
from turnbench.judging.weighted import expected_rating
from turnbench.testing.fake_server import FakeServer, Reply, default_content
from turnbench.types import TokenLogprob, TopLogprob


def tok(text: str, p: float, *alternatives: tuple[str, float]) -> TokenLogprob:
    return TokenLogprob(
        token=text,
        logprob=math.log(p),
        top=[TopLogprob(token=text, logprob=math.log(p))]
        + [TopLogprob(token=t, logprob=math.log(q)) for t, q in alternatives],
    )


def reply(*middle: TokenLogprob) -> list[TokenLogprob]:
    return [tok("Good. Rating: ", 0.99), tok("[[", 0.99), *middle, tok("]]", 0.99)]


def test_alternatives_at_the_rating_position_are_weighted():
    # sampled 7 (p .5), alternatives 8 (.3), 6 (.1), and "the" (not a rating, ignored)
    result = expected_rating(reply(tok("7", 0.5, ("8", 0.3), ("6", 0.1), ("the", 0.05))))
    assert result is not None
    assert result.probabilities == pytest.approx({6: 0.1 / 0.9, 7: 0.5 / 0.9, 8: 0.3 / 0.9})
    assert result.value == pytest.approx((6 * 0.1 + 7 * 0.5 + 8 * 0.3) / 0.9)


def test_a_rating_split_over_two_tokens_counts_along_the_sampled_path():
    # "10" written as "1" (p .6) then "0" (p .5): rating 10 has .6 * .5 = .3; the
    # alternatives at the first position, 9 (.3) and 8 (.1), count as whole ratings
    result = expected_rating(reply(tok("1", 0.6, ("9", 0.3), ("8", 0.1)), tok("0", 0.5)))
    assert result is not None
    total = 0.3 + 0.3 + 0.1
    assert result.probabilities == pytest.approx({8: 0.1 / total, 9: 0.3 / total, 10: 0.3 / total})
    assert result.value == pytest.approx((10 * 0.3 + 9 * 0.3 + 8 * 0.1) / total)


def test_a_one_token_alternative_1_is_rating_1_and_10_is_rating_10():
    result = expected_rating(reply(tok("5", 0.5, ("1", 0.2), ("10", 0.1))))
    assert result is not None
    assert result.probabilities == pytest.approx({1: 0.2 / 0.8, 5: 0.5 / 0.8, 10: 0.1 / 0.8})


def test_the_text_around_the_digits_must_match():
    # the sampled token is "[[7": alternatives count only with the same "[[" before them
    tokens = [
        tok("Rating: ", 0.99),
        tok("[[7", 0.6, ("[[8", 0.2), ("8", 0.1), ("[[11", 0.05)),
        tok("]]", 0.99),
    ]
    result = expected_rating(tokens)
    assert result is not None
    assert result.probabilities == pytest.approx({7: 0.6 / 0.8, 8: 0.2 / 0.8})


def test_the_last_rating_is_the_one_weighed_and_nothing_without_one():
    quoted = [tok("It said [[2]] but ", 0.9), *reply(tok("9", 0.9, ("8", 0.1)))]
    assert expected_rating(quoted).value == pytest.approx(9 * 0.9 + 8 * 0.1)  # type: ignore[union-attr]
    assert expected_rating([tok("no rating here", 0.9)]) is None
    assert expected_rating([]) is None


# -- through the CLI: the fake server returns scripted logprobs -------------------------------
def test_weighted_scoring_end_to_end(env, tmp_path):
    """The judge's reply is "Rating: [[7]]" with alternatives 8 and 6 at the rating: every
    judged turn scores the expected value, not 7; provenance says weighted was used."""
    logprobs = [
        {"token": "Rating: ", "logprob": 0.0, "top_logprobs": []},
        {"token": "[[", "logprob": 0.0, "top_logprobs": []},
        {
            "token": "7",
            "logprob": math.log(0.5),
            "top_logprobs": [
                {"token": "7", "logprob": math.log(0.5)},
                {"token": "8", "logprob": math.log(0.3)},
                {"token": "6", "logprob": math.log(0.2)},
            ],
        },
        {"token": "]]", "logprob": 0.0, "top_logprobs": []},
    ]

    def responder(request: dict) -> Reply:
        if request["model"] == "judge":
            assert request.get("logprobs") is True and request.get("top_logprobs") == 20
            return Reply(content="Rating: [[7]]", logprobs=logprobs)
        return Reply(content=default_content(request))

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        done = run_cli(
            ["run", "--model", "openai/model", "--model-base-url", server.base_url, "--judge",
             "openai/judge", "--judge-base-url", server.base_url, "--out", str(out), "--limit",
             "1", "--judge-scoring", "weighted", "--no-progress"],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    expected = 7 * 0.5 + 8 * 0.3 + 6 * 0.2
    assert results["overall"] == pytest.approx(expected)
    assert results["provenance"]["judge_scoring"] == "weighted"
    assert results["counts"]["weighted_fallbacks"] == 0
    records = [json.loads(line) for line in (out / "log.jsonl").read_text("utf-8").splitlines()]
    judged = [r for r in records if r["kind"] == "judgment"]
    assert all(r["scoring"] == "weighted" and r["parsed_score"] == 7.0 for r in judged)


def test_without_logprobs_weighted_falls_back_to_parsed_counted_and_said_once(env, tmp_path):
    def responder(request: dict) -> Reply:
        if request["model"] == "judge":
            return Reply(content="Rating: [[7]]", logprobs=[])  # the server sends none
        return Reply(content=default_content(request))

    out = tmp_path / "run"
    with FakeServer(responder=responder) as server:
        done = run_cli(
            ["run", "--model", "openai/model", "--model-base-url", server.base_url, "--judge",
             "openai/judge", "--judge-base-url", server.base_url, "--out", str(out), "--limit",
             "1", "--judge-scoring", "weighted", "--no-progress"],
            env,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text("utf-8"))
    assert results["overall"] == 7.0 and results["counts"]["weighted_fallbacks"] == 16
    assert done.stdout.count("returned no usable logprobs") == 1
