"""Typed results built from a run's log."""
