"""Everything an evaluation needs, validated before anything is written.

The "bad input writes nothing" rule: the roles, the benchmark and its data, the answer
files, the stress arms, batches and prices are all checked here, before the run directory is
created or touched; the result is the invocation's `Prepared` (its benchmark, its `Work`,
its configuration as the log records it, its roles by name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from turnbench.backends.fields import check_extra_fields
from turnbench.backends.providers import parse_model_spec
from turnbench.backends.roles import MODEL, USER, RoleConfig
from turnbench.benchmarks import benchmark_class
from turnbench.benchmarks.answers import load_answer_sets
from turnbench.benchmarks.base import Benchmark, BenchmarkSettings
from turnbench.benchmarks.datafiles import DataLocator
from turnbench.errors import UserError
from turnbench.journal.config import RunConfig
from turnbench.judging.config import JudgeConfig
from turnbench.options import EvalOptions
from turnbench.perturb.arms import Arm, build_arms
from turnbench.perturb.planted import load_planted
from turnbench.prices import PriceTable, load_prices
from turnbench.session.roles import (
    model_role,
    recorded_endpoints,
    run_judges,
    served_elsewhere,
    user_role,
)

if TYPE_CHECKING:  # (the engine is imported when work is prepared: a run that nothing
    # changed since it finished answers without it, `Session._unchanged_run`)
    from turnbench.engine.work import Work


@dataclass
class Prepared:
    benchmark: Benchmark
    work: Work
    config: RunConfig
    #: every role by name: "model", each judge's id, "user", any a driver asks
    roles: dict[str, RoleConfig] = field(default_factory=dict)
    prices: PriceTable | None = None

    @property
    def judges(self) -> list[JudgeConfig]:
        return [role for role in self.roles.values() if isinstance(role, JudgeConfig)]

    @property
    def model(self) -> RoleConfig | None:
        return self.roles.get(MODEL)

    @property
    def user(self) -> RoleConfig | None:
        """The simulated user's role, when a user model plays it."""
        return self.roles.get(USER)

    def header(self) -> str:
        """Who is asked where: each role's spec and endpoint (redacted)."""
        config = self.config
        endpoints = config.endpoints
        lines = []

        def where(url: str | None) -> str:
            return f"at {url}" if url else "(in process)"

        if config.model is not None:
            lines.append(f"model {config.model} {where(endpoints.get(MODEL))}")
        judges = endpoints.get("judge")
        judge_urls = judges if isinstance(judges, list) else [judges]
        for judge, url in zip(self.judges, judge_urls, strict=False):
            lines.append(f"judge {judge.spec} {where(url)}")
        for name, role in self.roles.items():
            if name != MODEL and not isinstance(role, JudgeConfig):
                lines.append(f"{name} {role.spec} {where(endpoints.get(name))}")
        return "; ".join(lines)


def prepare(options: EvalOptions, mode: str, warn: Callable[[str], None]) -> Prepared:
    """Validate everything and build the invocation (writes nothing)."""
    check_extra_fields(options.model_extra, "--model-extra")
    check_extra_fields(options.judge_extra, "--judge-extra")
    model_spec = None
    if mode == "run":
        if options.model is None:
            raise UserError("--model is required")
        model_spec = parse_model_spec(options.model, "--model")  # parsed here, once
    elif options.answers is None:
        raise UserError("--answers is required")
    cls = benchmark_class(options.benchmark)
    roles: dict[str, RoleConfig] = {}
    if model_spec is not None:
        roles[MODEL] = model_role(options, model_spec, cls)
    judges = run_judges(options, cls, warn)
    roles.update((judge.id, judge) for judge in judges)
    user = user_role(options, cls, mode)
    if user is not None:
        roles[USER] = user
    small = [
        role.spec
        for name, role in roles.items()
        if name in (MODEL, USER) and role.spec.startswith("local/")
    ]
    if small and (cls.user_model != "no" or not cls.needs_judge):
        warn(
            f"{' and '.join(dict.fromkeys(small))} is a small embedded model playing the "
            f"conversation: this run of {cls.name} is a smoke test of the pipeline, not a "
            "measurement; its scores mean nothing"
        )
    locator = DataLocator(options.data_dir, allow_download=options.download)
    files = cls.locate_files(locator)
    model = roles.get(MODEL)
    answer_sampling = model.sampling if model is not None else None
    benchmark = cls(
        files,
        BenchmarkSettings(
            parser=options.parser,
            limit=options.limit,
            answer=answer_sampling,
            options=dict(options.benchmark_options),
            user_model=user.spec if user is not None else None,
            model=model.spec if model is not None else None,
        ),
    )
    answer_sets = []
    if mode == "judge":
        assert options.answers is not None
        answer_sets = load_answer_sets(benchmark, options.answers)
    settings = [judge.settings for judge in judges]
    arms = _arms(options, mode, benchmark)
    from turnbench.engine.drivers.base import driver_roles
    from turnbench.engine.work import Work

    work = Work(
        benchmark=benchmark,
        judges=settings,
        mode=mode,  # type: ignore[arg-type]
        judging=options.mode if mode == "judge" else "single",
        model=options.model if mode == "run" else None,
        answer_sets=answer_sets,
        baseline=options.baseline,
        repeats=options.judge_repeats,
        arms=arms,
        shuffle_seed=options.perturb_seed,
    )
    roles.update(_driver_roles(work, roles))
    config = RunConfig(
        benchmark=cls.name,
        benchmark_ref=cls.source_ref
        or (None if options.benchmark == cls.name else options.benchmark),
        mode=mode,
        judging=work.judging,
        model=work.model,
        models=[s.model for s in answer_sets],
        judges=settings,
        answer_sampling=answer_sampling,
        user=user.settings if user is not None else None,
        roles={name: roles[name].spec for name in driver_roles(work.driver)},
        strip_think=options.strip_think,
        options=work.config_options(),
        prompt_versions=_prompt_versions(work, roles),
        data_sha256=dict(sorted(locator.checksums.items())),
        reference_sha256=benchmark.reference_sha256(),
        answers_sha256={s.model: s.sha256 for s in answer_sets},
        limit=options.limit,
        demo=options.demo,
        endpoints=recorded_endpoints(roles),
        concurrency=options.concurrency,
        judge_repeats=options.judge_repeats,
        repeat_aggregate=options.repeat_aggregate,
        panel_aggregate=options.panel_aggregate,
        perturb={arm.kind: arm.settings() for arm in arms},
    )
    prices = load_prices(options.prices).off_list(served_elsewhere(roles))
    _check_batch_and_cost(options, roles, prices)
    return Prepared(benchmark, work, config, roles, prices)


def _arms(options: EvalOptions, mode: str, benchmark: Benchmark) -> list[Arm]:
    """The stress arms `--perturb` names (checked: nothing is written yet)."""
    kinds = options.perturb
    planted_wanted = "planted-error" in kinds
    if options.planted_answers is not None and not planted_wanted:
        raise UserError("--planted-answers is only used with --perturb planted-error")
    if not kinds:
        return []
    if mode != "run":
        raise UserError("--perturb is only available for turnbench run")
    planted = None
    if planted_wanted:
        if options.planted_answers is None:
            raise UserError(
                "--perturb planted-error needs --planted-answers FILE: the flawed earlier "
                "answers (e.g. a weak model's FastChat answer file, or a run directory)"
            )
        samples = {sample.id: sample for sample in benchmark.all_samples()}
        planted = load_planted(options.planted_answers, samples)
    return build_arms(
        kinds,
        benchmark.samples,
        benchmark.history,  # type: ignore[arg-type]
        planted=planted,
        seed=options.perturb_seed,
    )


def _check_batch_and_cost(
    options: EvalOptions, roles: dict[str, RoleConfig], prices: PriceTable
) -> None:
    """--judge-batch / --model-batch need a provider with a batch API; --max-cost needs
    a price for every model that will be asked."""
    judges = [role for role in roles.values() if isinstance(role, JudgeConfig)]
    model = roles.get(MODEL)
    batched = []
    if options.judge_batch:
        batched += [("--judge-batch", j.model_spec) for j in judges]
    if options.model_batch:
        if model is None:
            raise UserError("--model-batch is only used with turnbench run")
        batched.append(("--model-batch", model.model_spec))
    for flag, spec in batched:
        from turnbench.batch import batch_providers  # (only a batched run needs it)

        if spec.provider not in batch_providers():
            raise UserError(
                f"{flag}: {spec} has no batch API; batches are available for "
                f"{' and '.join(f'{p}/...' for p in batch_providers())} models"
            )
    if options.max_cost is not None:
        models = ([model.spec] if model is not None else []) + [j.spec for j in judges]
        models += [r.spec for n, r in roles.items() if n != MODEL and r not in judges]
        unknown = [m for m in dict.fromkeys(models) if m and prices.price_for(m) is None]
        elsewhere = [m for m in unknown if m in prices.unlisted]
        if elsewhere:
            raise UserError(
                f"--max-cost needs the price of {', '.join(elsewhere)}: it is served by an "
                "endpoint other than its provider's own API (a local server, a proxy), so "
                "the price table's list price for its name does not apply; give its price "
                "with --prices FILE"
            )
        if unknown:
            raise UserError(
                f"--max-cost needs the price of {', '.join(unknown)}, which the price "
                f"table (as of {prices.as_of}) does not list; add it with --prices FILE"
            )


def _driver_roles(work: Work, roles: dict[str, RoleConfig]) -> dict[str, RoleConfig]:
    """The roles the work's driver asks of its own, each played by the model of a role the
    flags gave (its spec, endpoints and sampling), under its own name."""
    from turnbench.engine.drivers.base import driver_roles

    found: dict[str, RoleConfig] = {}
    for name, played_by in driver_roles(work.driver).items():
        if name in roles or name == "judge":
            raise UserError(f"{work.benchmark.name}: its role {name!r} takes a name in use")
        player = roles.get(played_by)
        if player is None or played_by not in (MODEL, USER):
            flag = "--user-model" if played_by == USER else "--model"
            raise UserError(
                f"{work.benchmark.name} asks a role {name!r} played by the {played_by} "
                f"model: give {flag}"
            )
        found[name] = RoleConfig(name, player.model_spec, player.backend, player.sampling)
    return found


def _prompt_versions(work: Work, roles: dict[str, RoleConfig]) -> dict[str, str]:
    from turnbench.judging.formats import followup

    judges = [role.settings for role in roles.values() if isinstance(role, JudgeConfig)]
    user = roles.get(USER)
    versions = dict(work.prompt_versions())
    if user is not None and user.settings is not None and user.settings.strict:
        from turnbench.engine.user_turns import USER_REASK_LABEL

        versions["user_reask"] = USER_REASK_LABEL
    if any(j.parser == "strict" and j.max_reasks > 0 for j in judges):
        kind = "verdict" if work.pairwise else work.benchmark.verdict_kind
        versions["reask"] = followup(kind).label
    if any(j.guard for j in judges):
        from turnbench.judging.guard import guard_text

        versions["guard"] = guard_text().label
    return versions
