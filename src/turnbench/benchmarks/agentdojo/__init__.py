"""AgentDojo (Debenedetti et al. 2024): prompt injections inside tool results, on the upstream
`agentdojo` package (issue 43).

Everything AgentDojo defines (environments, tools, user and injection tasks, ground truths,
utility and security checks, attack texts, defenses) comes from the package itself, pinned
and installed with the extra `turnbench[agentdojo]`. Only this package's modules import it
(`upstream` first, which names the extra when it is missing; `envcache` and `importer` for
upstream's own loading and reading), and only inside functions: importing this package,
turnbench, or any other benchmark never loads it or the provider SDKs it pulls in.

- `upstream`: the typed seam onto the package (suites, tasks, prompts, tools in a provider's
  shape, a conversation's environment, one tool call as upstream's executor runs it, the
  checks, attacks, defenses, environment diffs).
- `envcache`: a suite's environment parsed once and copied per conversation, equal to
  upstream's own loading.
- `payloads`: finding an attack's text inside a tool result (pure text, no package).
- `fakes`: scripted agents behind an OpenAI-compatible server, for tests and benchmarks.
- `benchmark`, `task`, `driver`, `outcome`, `options`, `importer`: the benchmark itself (its
  samples and tables, one conversation, the tool filter as a step of its own, the typed
  outcome, its options, re-scoring runs AgentDojo's own logger wrote).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARK", "AgentDojoBench"]


def __getattr__(name: str) -> Any:
    """The class, imported when first asked for (PEP 562): listing the built-in benchmarks
    reads its options without loading its rules (and never the package)."""
    if name in __all__:
        from turnbench.benchmarks.agentdojo.benchmark import AgentDojoBench

        return AgentDojoBench
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
