"""A built-in benchmark named on the command line is found by importing its package alone,
and it is the same class the full discovery finds."""

from __future__ import annotations

import subprocess
import sys

from turnbench.benchmarks import benchmark_class, builtin_benchmarks


def test_every_builtin_name_gives_the_class_discovery_finds():
    for name, cls in builtin_benchmarks().items():
        assert benchmark_class(name) is cls


def test_naming_one_benchmark_imports_no_other():
    code = (
        "import sys\n"
        "from turnbench.benchmarks import benchmark_class\n"
        "assert benchmark_class('mt-bench').name == 'mt-bench'\n"
        "print(sorted(m for m in sys.modules if m.startswith('turnbench.benchmarks.')"
        " and m.count('.') == 2))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.strip()
    assert "turnbench.benchmarks.mt_bench'" in loaded
    assert "mt_bench_101" not in loaded and "structflowbench" not in loaded
