from turnbench.benchmarks.mt_bench_101.benchmark import MTBench101

BENCHMARK = MTBench101
__all__ = ["BENCHMARK", "MTBench101"]
