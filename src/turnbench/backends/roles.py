"""Roles by name: who is asked in a run, how, and where.

A run asks several models, each in a role: the model under test ("model"), each judge (its
spec is its name), the simulated user ("user"), and whatever role a driver of another kind
of conversation names. Every role is one `RoleConfig`: its name, its parsed spec, how it is
reached (`BackendOptions`), how it is asked (`SamplingConfig`) and what identifies its
requests in the run's configuration (`settings`: a judge's `JudgeSettings`, a user's
`UserSettings`). The session builds them once, from one flag family per role, and keeps
them by name; the engine's `RunContext` asks a role by the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from turnbench.backends.options import BackendOptions
from turnbench.specs import ModelSpec
from turnbench.types import SamplingConfig

#: the names of the roles every run may have (a judge's name is its spec)
MODEL, USER = "model", "user"


@dataclass(frozen=True)
class RoleConfig:
    """One role of a run: its name, parsed spec, how it is reached and asked, and what
    identifies its requests (None for the model under test, whose sampling is recorded as
    the run's `answer_sampling`)."""

    name: str
    model_spec: ModelSpec
    backend: BackendOptions
    sampling: SamplingConfig | None = None
    settings: Any = None

    @property
    def spec(self) -> str:
        return str(self.model_spec)


class UserSettings(BaseModel):
    """What identifies a simulated user's turns (recorded in the run's configuration: a
    resumed run with another user model or other settings is refused)."""

    model_config = ConfigDict(frozen=True)

    spec: str
    sampling: SamplingConfig
    strict: bool = False  # --strict-user: re-ask when a turn breaks a rule
