"""The roles of one evaluation, built once from their flags: the model under test, the
judges, the simulated user; and what the run records of where each is reached."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from turnbench.backends.options import BackendOptions
from turnbench.backends.providers import display_endpoint, parse_model_spec, served_by_provider
from turnbench.backends.retry import RetryPolicy
from turnbench.backends.roles import MODEL, USER, RoleConfig, UserSettings
from turnbench.benchmarks.base import Benchmark
from turnbench.errors import UserError
from turnbench.judging.config import JudgeChoices, JudgeConfig, build_judges
from turnbench.options import DEFAULT_USER_MAX_TOKENS, EvalOptions, RoleFields
from turnbench.specs import ModelSpec
from turnbench.types import SamplingConfig

#: the temperature of a role a driver asks besides the model and its judges, when its flag
#: is not given (a simulated user should vary)
DEFAULT_ROLE_TEMPERATURE = 1.0


def judge_configs(options: EvalOptions, cls: type[Benchmark] | None = None) -> list[JudgeConfig]:
    """The judges, built once from their flags; without --judge-temperature the
    benchmark's default for the parser mode (0, or none sent where the reference sends
    none)."""
    temperature = options.judge_temperature
    if temperature is None:
        temperature = 0.0 if cls is None else cls.default_judge_temperature.get(options.parser, 0.0)
    choices = JudgeChoices(
        max_tokens=options.judge_max_tokens,
        max_reasks=options.max_reasks_or_default(),
        policy=RetryPolicy.from_flags(options),
        temperature=temperature,
        reask_max_tokens=options.reask_max_tokens,
        extra=options.judge_extra,
        token_param=options.judge_token_param,
        parser=options.parser,
        scoring=options.judge_scoring,
        guard=options.judge_guard,
        concurrency=options.judge_concurrency or options.concurrency,
    )
    return build_judges(options.judge, choices)


def run_judges(
    options: EvalOptions, cls: type[Benchmark], warn: Callable[[str], None]
) -> list[JudgeConfig]:
    """The run's judges; none for a benchmark scored without one (a --judge given for it
    is left out, with a warning: nothing would ask it)."""
    if cls.needs_judge:
        if not options.judge:
            raise UserError("--judge is required")
        return judge_configs(options, cls)
    if options.judge:
        warn(f"{cls.name} is scored without a judge: --judge is not used")
    return []


def answer_sampling(options: EvalOptions, max_tokens: int) -> SamplingConfig:
    return SamplingConfig(
        temperature=options.temperature,
        max_tokens=max_tokens,
        system_prompt=options.system_prompt,
        extra=options.model_extra,
        token_param=options.model_token_param,
    )


def model_role(options: EvalOptions, spec: ModelSpec, cls: type[Benchmark]) -> RoleConfig:
    """The model under test of a `run`; without --max-new-tokens the benchmark's answer
    token limit."""
    return RoleConfig(
        name=MODEL,
        model_spec=spec,
        backend=BackendOptions(
            role=MODEL,
            base_urls=tuple(options.model_base_url),
            api_key_env=options.model_api_key_env,
            concurrency=options.concurrency,
            token_param=options.model_token_param,
            policy=RetryPolicy.from_flags(options),
        ),
        sampling=answer_sampling(options, answer_limit(options, spec, cls)),
    )


def embedded(spec: ModelSpec) -> bool:
    return spec.provider == "local"


def answer_limit(options: EvalOptions, spec: ModelSpec, cls: type[Benchmark]) -> int:
    """--max-new-tokens, else the benchmark's limit (its embedded one for `local/...`)."""
    if options.max_new_tokens:
        return options.max_new_tokens
    if embedded(spec) and cls.embedded_max_new_tokens:
        return cls.embedded_max_new_tokens
    return cls.default_max_new_tokens


def flag_role(options: EvalOptions, role: str) -> RoleConfig | None:
    """A role a driver asks besides the model and its judges, from its flag family
    (`--ROLE-model`, `--ROLE-base-url`, ...: `options.RoleFields`); None without its spec."""
    fields = RoleFields.of(role)
    given = getattr(options, fields.spec)
    if given is None:
        return None
    flag = "--" + role.replace("_", "-")
    spec = parse_model_spec(given, f"{flag}-model")
    temperature = getattr(options, fields.temperature)
    sampling = SamplingConfig(
        temperature=DEFAULT_ROLE_TEMPERATURE if temperature is None else temperature,
        max_tokens=getattr(options, fields.max_tokens),
    )
    backend = BackendOptions(
        role=role,
        base_urls=tuple(getattr(options, fields.base_url)),
        api_key_env=getattr(options, fields.api_key_env),
        concurrency=getattr(options, fields.concurrency) or options.concurrency,
        policy=RetryPolicy.from_flags(options),
    )
    return RoleConfig(name=role, model_spec=spec, backend=backend, sampling=sampling)


def user_role(options: EvalOptions, cls: type[Benchmark], mode: str) -> RoleConfig | None:
    """The simulated user, when --user-model names one: checked against what the
    benchmark's conversations take (none, optional, required)."""
    if options.user_model is None:
        if cls.user_model == "required":
            raise UserError(f"{cls.name} needs --user-model (the simulated user)")
        if options.strict_user:
            raise UserError("--strict-user is only used with --user-model")
        return None
    if mode != "run":
        raise UserError("--user-model is only used with turnbench run")
    if cls.user_model == "no":
        raise UserError(f"{cls.name} has no simulated user: --user-model is not used")
    role = flag_role(options, USER)
    assert role is not None and role.sampling is not None
    unchanged = options.user_max_tokens == DEFAULT_USER_MAX_TOKENS
    if embedded(role.model_spec) and unchanged and cls.embedded_user_max_tokens:
        sampling = role.sampling.model_copy(update={"max_tokens": cls.embedded_user_max_tokens})
        role = RoleConfig(role.name, role.model_spec, role.backend, sampling)
    assert role.sampling is not None
    settings = UserSettings(spec=role.spec, sampling=role.sampling, strict=options.strict_user)
    return RoleConfig(
        name=USER,
        model_spec=role.model_spec,
        backend=role.backend,
        sampling=role.sampling,
        settings=settings,
    )


def served_elsewhere(roles: Mapping[str, RoleConfig]) -> list[str]:
    """The specs some role reaches through an endpoint other than their provider's own
    API (a local server, a proxy): the shipped list prices do not price them."""
    return [
        role.spec
        for role in roles.values()
        if not served_by_provider(role.model_spec, role.backend)
    ]


def recorded_endpoints(roles: Mapping[str, RoleConfig]) -> dict[str, Any]:
    """Every role's endpoints as recorded: redacted, comma-separated (the judges' as one
    value, or a list when there are several)."""
    judges = [role for role in roles.values() if isinstance(role, JudgeConfig)]
    shown = [display_endpoint(judge.model_spec, judge.backend) for judge in judges]
    model = roles.get(MODEL)
    endpoints = {
        MODEL: None if model is None else display_endpoint(model.model_spec, model.backend),
        "judge": shown[0] if len(shown) == 1 else shown,
    }
    for name, role in roles.items():
        if name != MODEL and not isinstance(role, JudgeConfig):
            endpoints[name] = display_endpoint(role.model_spec, role.backend)
    return endpoints
