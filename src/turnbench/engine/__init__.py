"""The engine: the one turn loop, request execution, budgets and batching."""
