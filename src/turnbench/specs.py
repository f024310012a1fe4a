"""Model specs: `provider/name` strings that pick a backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from turnbench.errors import UserError
from turnbench.safetext import name_problem


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_spec(
    text: str, flag: str = "--model", providers: Sequence[str] | None = None
) -> ModelSpec:
    """Split at the first `/`: `openai/meta-llama/Llama-3-8B` is provider `openai`.
    `providers`: the names a spec may start with (the backends' registry knows them:
    `backends.providers.parse_model_spec`); None checks the form only."""
    provider, sep, name = text.partition("/")
    if not sep or not provider or not name:
        listed = f" (providers: {', '.join(providers)})" if providers else ""
        raise UserError(
            f"{flag} {text!r} is not a model spec: write PROVIDER/NAME, for example "
            f"openai/gpt-4o-mini or local/smollm2{listed}."
        )
    if providers is not None and provider not in providers:
        raise UserError(
            f"{flag} {text!r}: unknown provider {provider!r}; known providers: "
            f"{', '.join(providers)}."
        )
    problem = name_problem(text)
    if problem is not None:
        raise UserError(f"{flag} {text!r}: a model name that {problem}")
    return ModelSpec(provider=provider, name=name)
