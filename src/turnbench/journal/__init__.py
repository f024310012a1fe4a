"""The run's append-only log (the truth of a run) and its in-memory index.

The engine appends to it as work completes; everything else is rebuilt from it.
"""
