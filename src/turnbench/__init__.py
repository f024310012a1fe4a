"""turnbench: evaluate chat models in multi-turn dialogue with an LLM judge."""

__version__ = "0.1.0"

#: Bumped whenever the layout of results.json or of the run log changes incompatibly.
SCHEMA_VERSION = 1
