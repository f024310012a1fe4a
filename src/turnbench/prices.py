"""Dollars: token usage priced with a dated table (pure: no network, no clock).

The table ships as package data (turnbench/prices.json: USD per million tokens for input,
cached input, cache writes and output, and the batch discount, with an `as_of` date and
its sources). A user file in the same shape (`{"models": {...}}`, `as_of` optional) adds
models or replaces shipped entries key by key.

A model is found by, in order: its exact `provider/name` key; the name without a trailing
date or `-latest` (`gpt-4o-2024-08-06` -> `gpt-4o`, `claude-3-5-haiku-20241022` ->
`claude-3-5-haiku`); the longest key ending in `*` that it starts with (`local/*`).
Unknown models cost None, never a guess.

The shipped prices are the providers' list prices for their own APIs: a model reached through
another endpoint (a local vLLM serving a model named `gpt-4o-mini`, a proxy, any base URL
that is not the provider's) is not priced by its name. `PriceTable.off_list(specs)` gives
the table a run uses, where those specs find only the entries of the user's own file.

Cost of one usage = (uncached prompt x input + cached prompt x cached_input + cache writes
x cache_write + completion x output) / 1e6, times (1 - batch_discount) for batch requests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from turnbench.errors import UserError
from turnbench.textio import NestingError, json_problem, loads_json, read_text
from turnbench.types import Usage

PER = 1_000_000
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    batch_discount: float = Field(default=0.0, ge=0, lt=1)
    note: str | None = None

    def cost(self, usage: Usage, *, batch: bool = False) -> float:
        cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
        written = min(usage.cache_creation_tokens, usage.prompt_tokens - cached)
        plain = usage.prompt_tokens - cached - written
        dollars = (
            plain * self.input
            + cached * (self.input if self.cached_input is None else self.cached_input)
            + written * (self.input if self.cache_write is None else self.cache_write)
            + usage.completion_tokens * self.output
        ) / PER
        return dollars * (1 - self.batch_discount) if batch else dollars

    def bound(self, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float:
        """The most a request of at most these tokens can cost: every prompt token at the
        highest input price (a prompt-cache write where that costs more than plain input)."""
        highest = max(self.input, self.cache_write or 0.0)
        dollars = (prompt_tokens * highest + completion_tokens * self.output) / PER
        return dollars * (1 - self.batch_discount) if batch else dollars


class PriceFile(BaseModel):
    """The JSON shape of the shipped table and of a user file."""

    model_config = ConfigDict(extra="forbid")

    as_of: str | None = None
    currency: str = "USD"
    unit: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    models: dict[str, ModelPrice]

    @field_validator("as_of")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError("must be a date written YYYY-MM-DD")
        return value

    @field_validator("currency")
    @classmethod
    def _usd(cls, value: str) -> str:
        if value != "USD":
            raise ValueError("only USD prices are supported")
        return value

    @field_validator("models")
    @classmethod
    def _keys(cls, value: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
        for key in value:
            provider, sep, name = key.partition("/")
            if not sep or not provider or not name:
                raise ValueError(f"key {key!r}: write PROVIDER/NAME, e.g. openai/gpt-4o-mini")
        return value


@dataclass(frozen=True)
class PriceTable:
    as_of: str | None
    entries: Mapping[str, ModelPrice]
    sources: Mapping[str, str]
    user_file: Path | None = None
    #: the entries of the user's file (`--prices`), which price a model wherever it is served
    user_entries: Mapping[str, ModelPrice] = field(default_factory=dict)
    #: specs served by an endpoint other than their provider's own API: priced by the user's
    #: entries only, never by the shipped list prices their name happens to match
    unlisted: frozenset[str] = frozenset()

    def price_for(self, model: object) -> ModelPrice | None:
        """The price of `model` (a ModelSpec or a "provider/name" string), or None."""
        key = str(model)
        return _match(key, self.user_entries if key in self.unlisted else self.entries)

    def off_list(self, specs: Iterable[object]) -> PriceTable:
        """This table for a run whose `specs` are not served by their provider's own API."""
        return replace(self, unlisted=self.unlisted | {str(spec) for spec in specs})

    def bound(self, model: object, usage: Usage) -> float | None:
        """The most requests with these token counts (`ModelPrice.bound`) can cost, at live
        prices; None when `model` has no price."""
        price = self.price_for(model)
        return None if price is None else price.bound(usage.prompt_tokens, usage.completion_tokens)

    def cost(self, model: object, usage: Usage, *, batch: bool = False) -> float | None:
        price = self.price_for(model)
        return None if price is None else price.cost(usage, batch=batch)

    def role_cost(self, model: object, usage: Usage, batch: Usage | None = None) -> float | None:
        """Dollars of `usage`, of which `batch` (a part of it) was sent in provider batches
        and is priced with the batch discount; None when `model` has no price."""
        price = self.price_for(model)
        if price is None:
            return None
        if batch is None or batch == Usage():
            return price.cost(usage)
        return price.cost(subtract(usage, batch)) + price.cost(batch, batch=True)


def _match(key: str, entries: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """The entry of `key`: exact, undated, else the longest `*` pattern it starts with."""
    if key in entries:
        return entries[key]
    undated = _DATED.sub("", key)
    if undated != key and undated in entries:
        return entries[undated]
    patterns = [p for p in entries if p.endswith("*") and key.startswith(p[:-1])]
    if patterns:
        return entries[max(patterns, key=len)]
    return None


def subtract(usage: Usage, part: Usage) -> Usage:
    """`usage` without `part` (each count at least 0)."""
    return Usage(
        prompt_tokens=max(0, usage.prompt_tokens - part.prompt_tokens),
        completion_tokens=max(0, usage.completion_tokens - part.completion_tokens),
        cached_prompt_tokens=max(0, usage.cached_prompt_tokens - part.cached_prompt_tokens),
        cache_creation_tokens=max(0, usage.cache_creation_tokens - part.cache_creation_tokens),
    )


def _problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(
        repr(part) if isinstance(part, str) and "/" in part else str(part) for part in first["loc"]
    )
    return f"{where}: {first['msg']}" if where else first["msg"]


def parse_price_file(text: str, origin: str) -> PriceFile:
    try:
        raw: Any = loads_json(text)
    except NestingError as error:
        raise UserError(f"prices file {origin}: {json_problem(error)}") from None
    except ValueError as error:
        raise UserError(f"prices file {origin}: not valid JSON ({error})") from None
    if not isinstance(raw, dict):
        raise UserError(f"prices file {origin}: expected a JSON object with a 'models' field")
    try:
        return PriceFile.model_validate(raw)
    except ValidationError as error:
        raise UserError(f"prices file {origin}: {_problem(error)}") from None


@lru_cache(maxsize=1)
def shipped_prices() -> PriceFile:
    text = resources.files("turnbench").joinpath("prices.json").read_text(encoding="utf-8")
    return parse_price_file(text, "turnbench/prices.json")


def load_prices(user_file: Path | None = None) -> PriceTable:
    """The shipped table, extended and overridden key by key by `user_file` when given."""
    shipped = shipped_prices()
    entries = dict(shipped.models)
    as_of, sources = shipped.as_of, dict(shipped.sources)
    user_entries: dict[str, ModelPrice] = {}
    if user_file is not None:
        try:
            text = read_text(Path(user_file))
        except UserError as error:
            raise UserError(f"prices file: {error.message}") from None
        extra = parse_price_file(text, str(user_file))
        entries.update(extra.models)
        user_entries = dict(extra.models)
        sources.update(extra.sources)
        if extra.as_of:
            as_of = f"{as_of}; {user_file}: {extra.as_of}"
    return PriceTable(
        as_of=as_of,
        entries=entries,
        sources=sources,
        user_file=user_file,
        user_entries=user_entries,
    )


def cost(
    model: object, usage: Usage, *, batch: bool = False, prices: PriceTable | None = None
) -> float | None:
    """Dollars for `usage` of `model` (ModelSpec or "provider/name"); None when unknown."""
    return (prices or load_prices()).cost(model, usage, batch=batch)


@dataclass(frozen=True)
class RoleEstimate:
    """What one role (answers, a judge) is expected to use: from a dry-run plan estimate."""

    role: str
    model: str
    requests: int
    prompt_tokens: int
    completion_tokens: int


def estimate_dollars(
    roles: Iterable[RoleEstimate], *, batch: bool = False, prices: PriceTable | None = None
) -> dict[str, float | None]:
    """Dollars per role (None for a role whose model is unknown), assuming no prompt-cache
    hits: an upper bound when completions use their whole token allowance."""
    table = prices or load_prices()
    totals: dict[str, float | None] = {}
    for estimate in roles:
        usage = Usage(
            prompt_tokens=estimate.prompt_tokens, completion_tokens=estimate.completion_tokens
        )
        dollars = table.cost(estimate.model, usage, batch=batch)
        if estimate.role in totals:
            previous = totals[estimate.role]
            dollars = None if previous is None or dollars is None else previous + dollars
        totals[estimate.role] = dollars
    return totals


def format_dollars(amount: float | None) -> str:
    """'$12.34', '<$0.01', or 'unknown price' (never a made-up figure)."""
    if amount is None:
        return "unknown price"
    if 0 < amount < 0.01:
        return "<$0.01"
    return f"${amount:,.2f}"
