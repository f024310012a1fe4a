"""The run's append-only log (the truth of a run) and its in-memory index; the engine appends to it as work completes."""
