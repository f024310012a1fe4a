from turnbench.benchmarks.mt_bench.benchmark import MTBench

BENCHMARK = MTBench
__all__ = ["BENCHMARK", "MTBench"]
