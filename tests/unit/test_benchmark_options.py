"""Benchmark options: declared by each package, set by -B, by their own flags or in the API."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnbench.api import _options
from turnbench.benchmarks.mt_bench.options import MTBenchOptions
from turnbench.benchmarks.mt_bench_101.options import MTBench101Options
from turnbench.benchmarks.options import option_flags, parse_assignments, validate_options
from turnbench.errors import UserError


def test_every_package_flag_is_found_without_naming_it_anywhere():
    flags = {item.flag: item.name for item in option_flags()}
    assert flags == {
        "--context": "context",
        "--conversation": "conversation",
        "--history-format": "history_format",
        "--reference-file": "reference_file",
        "--reference-mode": "reference_mode",
        "--simulations": "simulations",
    }


def test_only_given_options_are_kept_and_converted():
    assert validate_options("mt-bench-101", MTBench101Options, {}) == {}
    assert validate_options("mt-bench-101", MTBench101Options, {"context": "self"}) == {
        "context": "self"
    }
    converted = validate_options("mt-bench", MTBenchOptions, {"reference_file": "refs.jsonl"})
    assert converted == {"reference_file": Path("refs.jsonl")}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"context": "mine"}, "--context 'mine' is not one of: golden, self"),
        ({"colour": "red"}, "mt-bench-101 has no option --colour"),
    ],
)
def test_a_bad_option_names_its_flag(given, message):
    with pytest.raises(UserError, match=message):
        validate_options("mt-bench-101", MTBench101Options, given)


def test_assignments():
    assert parse_assignments(["context=self", "reference-mode=compat", "x=a=b"]) == {
        "context": "self",
        "reference_mode": "compat",
        "x": "a=b",
    }
    with pytest.raises(UserError, match="key=value"):
        parse_assignments(["context"])
    with pytest.raises(UserError, match="given twice"):
        parse_assignments(["context=self", "context=golden"])


def test_the_api_takes_benchmark_options_and_the_flag_names():
    by_dict = _options("mt-bench-101", {"benchmark_options": {"context": "self"}})
    by_name = _options("mt-bench-101", {"context": "self"})
    assert by_dict.benchmark_options == by_name.benchmark_options == {"context": "self"}
    with pytest.raises(UserError, match="disagree"):
        _options("mt-bench-101", {"context": "self", "benchmark_options": {"context": "golden"}})
