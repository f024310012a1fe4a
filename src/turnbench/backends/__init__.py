"""Backends: one async interface for the model under test and for the judge."""

from turnbench.backends.base import Backend, BackendStats
from turnbench.backends.factory import BackendOptions, make_backend

__all__ = ["Backend", "BackendOptions", "BackendStats", "make_backend"]
