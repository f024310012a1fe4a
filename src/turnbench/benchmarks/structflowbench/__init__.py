from turnbench.benchmarks.structflowbench.benchmark import StructFlowBench

BENCHMARK = StructFlowBench
__all__ = ["BENCHMARK", "StructFlowBench"]
