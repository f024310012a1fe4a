"""`aggregate` returns its benchmark's typed tables, and they give results.json's entries
in the order results.json has always had them.

The expected keys are those of runs written before the tables were typed (MT-Bench-101
puts `overall_ci95` after its tables, the translation benchmark `overall` last, the
default tables `by_<group_kind>`): a benchmark whose `aggregate` returned a dict again, or
whose fields moved, fails here; so does a built-in benchmark with no entry below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.toy_bench import ToyBench
from turnbench.benchmarks import builtin_benchmarks
from turnbench.benchmarks.base import Benchmark, BenchmarkSettings, JudgedTurn, ScoredSample
from turnbench.benchmarks.custom.benchmark import benchmark_from_file
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.benchmarks.tables import GroupTables, ScoreTables
from turnbench.testing.simulated_fakes import SCENARIOS
from turnbench.types import SamplingConfig

REPO = Path(__file__).resolve().parents[2]

#: benchmark -> (its results_header keys, the keys of its tables, its own counts)
EXPECTED: dict[str, tuple[list[str], list[str], list[str]]] = {
    "mt-bench": (
        [],
        ["overall", "overall_ci95", "by_turn", "by_turn_ci95", "by_category",
         "by_category_ci95", "by_category_turn"],
        [],
    ),
    "mt-bench-101": (
        ["context", "reference_mode"],
        ["overall", "by_task", "by_ability", "overall_mean_over_turns",
         "by_task_mean_over_turns", "by_task_turn", "by_turn", "overall_ci95",
         "incomplete_dialogue_ids"],
        ["dialogues", "dialogues_scored", "incomplete_dialogues", "dialogues_with_dropped_turns"],
    ),
    "structflowbench": (
        ["history_format"],
        ["overall", "overall_ci95", "metrics", "by_constraint_type", "by_task", "by_turn",
         "other_verdicts"],
        ["dialogues", "constraints", "constraints_met", "other_verdicts"],
    ),
    "lost-in-conversation-translation": (
        ["conversations_held", "simulations"],
        ["by_conversation", "conversation_means", "scores_by_document", "degradation",
         "score_by_turn", "conversations", "overall", "overall_ci95"],
        [],
    ),
}  # fmt: skip
#: benchmarks scored a whole conversation at a time (`aggregate_samples`), same triple
TAU_TABLES = (
    ["domain", "split", "max_steps", "trials"],
    ["overall", "overall_ci95", "pass_hat_k", "pass_hat_k_ci95", "tasks", "conversations",
     "ended", "db_match_rate", "outputs_rate", "failures"],
    ["conversations"],
)  # fmt: skip
EXPECTED_WHOLE = {"tau-bench-airline": TAU_TABLES, "tau-bench-retail": TAU_TABLES}
CUSTOM_TABLES = [
    "overall", "overall_ci95", "history", "dialogue_score", "by_tag", "by_check", "by_turn",
    "by_dialogue", "rubric_mean", "turns", "incomplete_dialogue_ids",
]  # fmt: skip
CUSTOM_COUNTS = ["dialogues", "dialogues_scored", "checks_run", "checks_passed"]
SCENARIO_TABLES = [
    *CUSTOM_TABLES, "simulations", "success_threshold", "success_rate", "pass_hat_k",
    "pass_at_k", "by_scenario", "scores_by_scenario",
]  # fmt: skip


def scored(bench: Benchmark) -> list[JudgedTurn]:
    """Every planned judged turn of `bench`, scored, with an answer and a checklist."""
    return [
        JudgedTurn(sample, turn, "scored", 7.0, ("Yes", "No"), answer="An answer.")
        for sample in bench.samples
        for turn in sample.judged_turns()
    ]


def built(cls: type[Benchmark], data_dir: Path | None, **options: str) -> Benchmark:
    files = cls.locate_files(DataLocator(data_dir, allow_download=False))
    settings = BenchmarkSettings(
        limit=1, answer=SamplingConfig(max_tokens=64), options=dict(options)
    )
    return cls(files, settings)


#: built-in benchmarks whose tables are tested beside their optional extra (tests/agentdojo)
WITH_AN_EXTRA = {"agentdojo"}


def test_every_built_in_benchmark_has_its_expected_keys():
    assert set(EXPECTED) | set(EXPECTED_WHOLE) | WITH_AN_EXTRA == set(builtin_benchmarks())


@pytest.mark.parametrize("name", sorted(EXPECTED_WHOLE))
def test_a_benchmark_scored_by_conversation_aggregates_to_its_results_model(name, data_dir):
    cls = builtin_benchmarks()[name]
    bench = built(cls, data_dir)
    whole = [ScoredSample(sample, 0, "scored", 1.0, "user_stop", {"db_match": True})
             for sample in bench.samples]  # fmt: skip
    tables = bench.aggregate_samples(whole)
    header, fields, counts = EXPECTED_WHOLE[name]
    assert type(tables) is cls.results_model
    assert list(tables.results_fields()) == fields
    assert list(tables.counts) == counts
    assert list(bench.results_header()) == header
    assert cls.header_model is not None
    assert list(cls.header_model.model_validate(bench.results_header()).model_dump()) == header


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_built_in_benchmark_aggregates_to_its_results_model(name, data_dir):
    cls = builtin_benchmarks()[name]
    bench = built(cls, data_dir)
    tables = bench.aggregate(scored(bench))
    header, fields, counts = EXPECTED[name]
    assert cls.results_model is not None and type(tables) is cls.results_model
    assert list(tables.results_fields()) == fields
    assert list(tables.counts) == counts
    assert list(bench.results_header()) == header
    if cls.header_model is not None:  # what the schema documents is what the header holds
        assert list(cls.header_model.model_validate(bench.results_header()).model_dump()) == header


def test_degradation_is_absent_unless_both_conversation_types_are_held(data_dir):
    cls = builtin_benchmarks()["lost-in-conversation-translation"]
    bench = built(cls, data_dir, conversation="sharded")
    fields = bench.aggregate(scored(bench)).results_fields()
    assert "degradation" not in fields
    assert list(fields)[-2:] == ["overall", "overall_ci95"]


def test_a_benchmark_file_and_a_scenario_file_aggregate_to_their_results_models(tmp_path):
    scenarios = tmp_path / "support.yaml"
    scenarios.write_text(SCENARIOS, "utf-8")
    cases = [(REPO / "examples" / "kitchen-and-travel.yaml", CUSTOM_TABLES),
             (scenarios, SCENARIO_TABLES)]  # fmt: skip
    for path, fields in cases:
        cls = benchmark_from_file(path)
        bench = built(cls, None)
        tables = bench.aggregate(scored(bench))
        assert type(tables) is cls.results_model
        assert list(tables.results_fields()) == fields
        assert list(tables.counts) == CUSTOM_COUNTS


def test_the_default_tables_name_the_group_kind():
    bench = built(ToyBench, None)
    tables = bench.aggregate(scored(bench))
    assert type(tables) is GroupTables
    fields = tables.results_fields()
    assert list(fields) == ["overall", "overall_ci95", "by_topic"]
    assert fields["overall"] == 7.0 and fields["by_topic"] == {"small-talk": 7.0, "numbers": 7.0}


def test_counts_and_unset_defaults_stay_out_of_the_results_fields():
    class WithOptional(ScoreTables):
        extra: list[int] | None = None

        trailing = ("overall",)

    tables = WithOptional(overall=5.0, overall_ci95=None, counts={"dialogues": 2})
    assert tables.results_fields() == {"overall_ci95": None, "overall": 5.0}
    assert WithOptional(overall=None, overall_ci95=None, extra=None).results_fields() == {
        "overall_ci95": None,
        "extra": None,
        "overall": None,
    }
