"""A benchmark's own options, declared by its package as a pydantic model.

They are set with `-B key=value` on the command line (as inspect's `-T`) and with
`benchmark_options={...}` in the API. A field may also name a flag of its own (`--context`
of MT-Bench-101): the command line offers it beside `-B`, and the API takes its name as a
keyword (`evaluate(..., context="self")`). The flags are found in the packages' `options`
modules, so adding a benchmark adds its flags without a line of the command line changed.
"""

from __future__ import annotations

import importlib
import pkgutil
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from turnbench.errors import UserError


class BenchmarkOptions(BaseModel):
    """No options: the base of every benchmark's options model. A field left unset keeps
    the benchmark's default (an unset field is not part of the run's settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def option(*, flag: str | None = None, help: str) -> Any:
    """A benchmark option (unset by default), with its own `flag` if it has one."""
    return Field(default=None, description=help, json_schema_extra={"flag": flag} if flag else {})


MAX_SIMULATIONS = 1000


class SimulationsOption(BenchmarkOptions):
    """`--simulations N` of every benchmark whose conversations are simulated (one flag,
    declared once, so every such benchmark declares it alike)."""

    simulations: int | None = option(
        flag="--simulations",
        help="Simulated conversations per sample (and conversation type), each with its own "
        "recorded seed (default 1); raising it on a resume only adds conversations.",
    )

    @field_validator("simulations")
    @classmethod
    def _simulations(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_SIMULATIONS:
            raise ValueError(f"must be between 1 and {MAX_SIMULATIONS}")
        return value


@dataclass(frozen=True)
class OptionFlag:
    """A benchmark option that is also a flag of its own."""

    flag: str  # "--context"
    name: str  # the option's name, "context"
    annotation: Any  # its type, for the command line
    help: str


def flag_of(model: type[BenchmarkOptions], name: str) -> str:
    """How the user names an option: its own flag, else `-B name`."""
    field = model.model_fields.get(name)
    extra = field.json_schema_extra if field is not None else None
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return str(flag) if flag else f"-B {name}"


def validate_options(
    benchmark: str, model: type[BenchmarkOptions], given: dict[str, Any]
) -> dict[str, Any]:
    """The options given for `benchmark`, checked and converted by its model (only those
    given: the benchmark applies its defaults), with one message naming the flag."""
    unknown = sorted(set(given) - set(model.model_fields))
    if unknown:
        flags = ", ".join("--" + name.replace("_", "-") for name in unknown)
        raise UserError(f"{benchmark} has no option {flags}")
    try:
        checked = model.model_validate(given)
    except ValidationError as error:
        problem = error.errors()[0]
        name = str(problem["loc"][0]) if problem["loc"] else ""
        value = given.get(name)
        if problem["type"] == "literal_error":
            choices = typing.get_args(_without_none(model.model_fields[name].annotation))
            raise UserError(
                f"{flag_of(model, name)} {value!r} is not one of: {', '.join(map(str, choices))}"
            ) from None
        raise UserError(f"{flag_of(model, name)} {value!r}: {problem['msg']}") from None
    return {name: getattr(checked, name) for name in checked.model_fields_set}


def parse_assignments(values: list[str]) -> dict[str, str]:
    """`-B key=value` flags as a dict (dashes in a key read as underscores)."""
    options: dict[str, str] = {}
    for text in values:
        key, equals, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or not key:
            raise UserError(f"-B {text!r}: give a benchmark option as key=value")
        if key in options:
            raise UserError(f"-B {key} is given twice")
        options[key] = value
    return options


def _without_none(annotation: Any) -> Any:
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    return args[0] if len(args) == 1 else annotation


@cache
def option_flags() -> tuple[OptionFlag, ...]:
    """Every built-in benchmark's options that have a flag of their own (one flag may serve
    several benchmarks only if they declare it alike)."""
    found: dict[str, OptionFlag] = {}
    here = Path(__file__).parent
    for info in pkgutil.iter_modules([str(here)]):
        if not info.ispkg or not (here / info.name / "options.py").is_file():
            continue  # (a package without options is not imported for nothing)
        try:
            module = importlib.import_module(f"{__package__}.{info.name}.options")
        except ModuleNotFoundError:
            continue
        for model in vars(module).values():
            if not (isinstance(model, type) and issubclass(model, BenchmarkOptions)):
                continue
            for name, field in model.model_fields.items():
                extra = field.json_schema_extra
                flag = extra.get("flag") if isinstance(extra, dict) else None
                if flag:
                    found[str(flag)] = OptionFlag(
                        str(flag), name, field.annotation, field.description or ""
                    )
    return tuple(found[flag] for flag in sorted(found))
