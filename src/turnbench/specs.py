"""Model specs: `provider/name` strings that pick a backend."""

from __future__ import annotations

from dataclasses import dataclass

from turnbench.errors import UserError
from turnbench.safetext import name_problem

PROVIDERS = ("openai", "local", "anthropic", "azure")


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_spec(text: str, flag: str = "--model") -> ModelSpec:
    """Split at the first `/`: `openai/meta-llama/Llama-3-8B` is provider `openai`."""
    provider, sep, name = text.partition("/")
    if not sep or not provider or not name:
        raise UserError(
            f"{flag} {text!r} is not a model spec: write PROVIDER/NAME, for example "
            f"openai/gpt-4o-mini or local/smollm2 (providers: {', '.join(PROVIDERS)})."
        )
    if provider not in PROVIDERS:
        raise UserError(
            f"{flag} {text!r}: unknown provider {provider!r}; known providers: "
            f"{', '.join(PROVIDERS)}."
        )
    problem = name_problem(text)
    if problem is not None:
        raise UserError(f"{flag} {text!r}: a model name that {problem}")
    return ModelSpec(provider=provider, name=name)
