"""Every flag of `turnbench run` and `turnbench judge`, declared once.

A flag names the commands it belongs to; each command's signature is generated from this
table (typer reads the generated signature), and its values become `EvalOptions` fields of
the same name, so the two commands and the Python API cannot drift apart.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from turnbench.benchmarks.options import option_flags
from turnbench.errors import UserError
from turnbench.options import JudgeOption, RoleFields
from turnbench.textio import NestingError, json_problem, loads_json
from turnbench.types import MAX_TOKEN_LIMIT

RUN, JUDGE = "run", "judge"
BOTH = frozenset({RUN, JUDGE})
TokenParam = Literal["auto", "max_tokens", "max_completion_tokens"]


@dataclass(frozen=True)
class Flag:
    name: str  # the parameter (and EvalOptions field) name
    type: Any
    default: Any
    option: Any  # typer.Option(...)
    commands: frozenset[str] = BOTH
    cli_only: bool = False  # not an EvalOptions field (handled by the command)


def _opt(*decls: str, **kwargs: Any) -> Any:
    return typer.Option(*decls, **kwargs)


def role_flags(
    role: str, who: str, *, spec_help: str, commands: frozenset[str], max_tokens: int = 512
) -> tuple[Flag, ...]:
    """The flag family of a role that a driver asks besides the model and its judges (the
    simulated user: `--user-model`, `--user-base-url`, ...), from one definition: its
    `EvalOptions` fields are `ROLE_model`, `ROLE_base_url`, ... (`options.RoleFields`)."""
    fields = RoleFields.of(role)
    flag = "--" + role.replace("_", "-")
    return (
        Flag(fields.spec, str | None, None, _opt(f"{flag}-model", help=spec_help), commands),
        Flag(fields.base_url, list[str] | None, None, _opt(f"{flag}-base-url", help=f"The "
             f"{who}'s endpoint (default: $OPENAI_BASE_URL or OpenAI); repeat it for "
             "replicas."), commands),
        Flag(fields.api_key_env, str | None, None, _opt(f"{flag}-api-key-env", help="Variable "
             f"holding the {who}'s API key."), commands),
        Flag(fields.temperature, float | None, None, _opt(f"{flag}-temperature", min=0.0,
             help=f"The {who}'s temperature (default 1)."), commands),
        Flag(fields.max_tokens, int, max_tokens, _opt(f"{flag}-max-tokens", min=1,
             max=MAX_TOKEN_LIMIT, help=f"Token limit of a {who}'s turn."), commands),
        Flag(fields.concurrency, str | None, None, _opt(f"{flag}-concurrency",
             help=f"{who.capitalize()} requests in flight, a number or auto (default: "
             "--concurrency)."), commands),
    )  # fmt: skip


FLAGS: tuple[Flag, ...] = (
    Flag("benchmark", str, "mt-bench", _opt("--benchmark", "-b", help="A built-in benchmark "
         "(mt-bench, mt-bench-101, ...; `turnbench data status` lists them), a benchmark file "
         "(.yaml, .yml, .json; docs/custom-benchmarks.md), a data folder in a built-in "
         "benchmark's layout (e.g. FastChat's question.jsonl, reference_answer/, "
         "judge_prompts.jsonl), or package.module:ClassName.")),
    Flag("model", str | None, None, _opt("--model", "-m", help="Model under test, e.g. "
         "openai/NAME or local/smollm2."), frozenset({RUN})),
    Flag("model_base_url", list[str] | None, None, _opt("--model-base-url", help="Model endpoint "
         "(default: $OPENAI_BASE_URL or OpenAI). Repeat it for replicas of one model."),
         frozenset({RUN})),
    Flag("model_api_key_env", str | None, None, _opt("--model-api-key-env", help="Variable "
         "holding the model's API key."), frozenset({RUN})),
    Flag("answers", list[Path] | None, None, _opt("--answers", help="Answer file, or a folder of "
         "them (one per model; the model is named after the file, or after its folder for "
         "MODEL/results.jsonl), or a turnbench run directory. Repeat it to judge several."),
         frozenset({JUDGE})),
    Flag("mode", Literal["single", "pairwise", "pairwise-all"], "single", _opt("--mode",
         help="single ratings, pairwise against --baseline, or all pairs."), frozenset({JUDGE})),
    Flag("baseline", str | None, None, _opt("--baseline", help="Baseline model name for --mode "
         "pairwise."), frozenset({JUDGE})),
    Flag("judge", list[str] | None, None, _opt("--judge", help="Judge spec, e.g. openai/gpt-4o "
         "or local/smollm2.")),
    Flag("judge_base_url", list[str] | None, None, _opt("--judge-base-url", help="Judge endpoint "
         "(default: $OPENAI_BASE_URL or OpenAI); applies to the --judge it follows."),
         cli_only=True),
    Flag("judge_api_key_env", list[str] | None, None, _opt("--judge-api-key-env", help="Variable "
         "holding the judge's API key; applies to the --judge it follows."), cli_only=True),
    *role_flags(
        "user",
        "user model",
        spec_help="The simulated user: a model that writes the user's turns (scenarios with a "
        "persona and a goal; sharded turns in its own words), e.g. openai/NAME or "
        "local/smollm2.",
        commands=frozenset({RUN}),
    ),
    Flag("strict_user", bool, False, _opt("--strict-user", help="Re-ask the user model when "
         "its turn breaks a rule (reveals several shards, invents one, answers itself, "
         "switches roles); results count such turns either way."), frozenset({RUN})),
    Flag("judge_repeats", int, 1, _opt("--judge-repeats", min=1, max=100, help="Judge every "
         "item K times (at the judge's temperature); results report the spread. Raising it on "
         "a resume only adds the missing repeats.")),
    Flag("repeat_aggregate", Literal["mean", "median"], "mean", _opt("--repeat-aggregate",
         help="How an item's repeated judgments combine (verdicts: majority).")),
    Flag("panel_aggregate", Literal["mean", "median", "majority"], "mean", _opt(
         "--panel-aggregate", help="How the judges of a panel (--judge given several times) "
         "combine per item; majority: the most common rating (ties: the median); verdicts "
         "always by majority.")),
    Flag("judge_guard", bool, False, _opt("--judge-guard", help="Hardened judging: the judged "
         "answers stand between random boundary markers, the judge is told they are data, not "
         "instructions, and only a verdict outside them counts.")),
    Flag("out", Path | None, None, _opt("--out", "-o", help="Run directory (created; re-running "
         "the same command resumes it).")),
    Flag("limit", int | None, None, _opt("--limit", min=1, help="Smoke run: the first N samples "
         "of every category (MT-Bench) or task (MT-Bench-101, StructFlowBench).")),
    Flag("concurrency", str, "8", _opt("--concurrency", "-c", help="Requests in flight per "
         "endpoint: a number, or auto (adapts to 429/503, timeouts and rate-limit headers).")),
    Flag("judge_concurrency", str | None, None, _opt("--judge-concurrency", help="Judge "
         "requests in flight, a number or auto (default: --concurrency)."), frozenset({RUN})),
    Flag("data_dir", Path | None, None, _opt("--data-dir", help="Folder with the benchmark data "
         "files (else $TURNBENCH_DATA_DIR, then the user cache).")),
    Flag("parser", Literal["strict", "compat"], "strict", _opt("--parser", help="strict: "
         "exactly one valid rating, else re-ask; compat: the reference implementation's "
         "regex.")),
    Flag("max_reasks", int | None, None, _opt("--max-reasks", min=0, help="Re-asks after an "
         "unreadable judge reply (default 2 strict, 0 compat).")),
    Flag("system_prompt", str | None, None, _opt("--system-prompt", help="System message for "
         "the model (default: none; the server applies the model's chat template)."),
         frozenset({RUN})),
    Flag("max_new_tokens", int | None, None, _opt("--max-new-tokens", min=1, max=MAX_TOKEN_LIMIT,
         help="Answer token limit (default: the benchmark's, 1024 for MT-Bench, 4096 for "
         "MT-Bench-101)."),
         frozenset({RUN})),
    Flag("temperature", float | None, None, _opt("--temperature", min=0.0, help="Answer "
         "temperature for every sample (default: the benchmark's own table)."),
         frozenset({RUN})),
    Flag("model_extra", str | None, None, _opt("--model-extra", help="Extra JSON fields for "
         "answer requests."), frozenset({RUN})),
    Flag("model_token_param", TokenParam, "auto", _opt("--model-token-param", help="The "
         "request field that carries the answer token limit; auto: max_completion_tokens and "
         "no temperature for OpenAI reasoning models, max_tokens otherwise."), frozenset({RUN})),
    Flag("strip_think", bool, True, _opt("--strip-think/--no-strip-think", help="Remove "
         "<think>...</think> blocks from answers before judging (an answer cut off inside one "
         "is not judged: counted as failed); --no-strip-think judges the text as written.")),
    Flag("judge_max_tokens", int, 2048, _opt("--judge-max-tokens", min=1, max=MAX_TOKEN_LIMIT,
         help="Token limit of a judge reply.")),
    Flag("reask_max_tokens", int | None, None, _opt("--reask-max-tokens", min=1,
         max=MAX_TOKEN_LIMIT, help="Token limit of a judge re-ask, which only needs the rating "
         "(default: --judge-max-tokens).")),
    Flag("judge_temperature", float | None, None, _opt("--judge-temperature", min=0.0,
         help="Judge temperature (default 0; none is sent with StructFlowBench's --parser "
         "compat, as its reference sends none).")),
    Flag("judge_extra", str | None, None, _opt("--judge-extra", help="Extra JSON fields for "
         "judge requests, e.g. '{\"seed\": 1}'.")),
    Flag("judge_token_param", TokenParam, "auto", _opt("--judge-token-param", help="The "
         "request field that carries the judge's token limit; auto: max_completion_tokens and "
         "no temperature for OpenAI reasoning models, max_tokens otherwise.")),
    Flag("judge_scoring", Literal["parsed", "weighted"], "parsed", _opt("--judge-scoring",
         help="parsed: the rating the judge wrote; weighted: the expected rating from the "
         "reply's log probabilities (continuous, fewer ties; falls back to parsed, counted, "
         "where the server returns none).")),
    Flag("benchmark_option", list[str] | None, None, _opt("--benchmark-option", "-B", help="A "
         "benchmark option as key=value (repeatable), e.g. -B context=self for MT-Bench-101; "
         "docs/benchmarks.md lists each benchmark's.", metavar="KEY=VALUE"), cli_only=True),
    Flag("dry_run", bool, False, _opt("--dry-run", help="Print what would be requested (counts, "
         "estimated tokens) and send nothing."), cli_only=True),
    Flag("allow_new_judge", bool, False, _opt("--allow-new-judge", help="Resume with a different "
         "judge, keeping old judgments.")),
    Flag("max_requests", int | None, None, _opt("--max-requests", min=1, help="Start at most "
         "this many requests of any role in this invocation (their retries and re-asks "
         "included), let them finish, then stop cleanly; re-run to continue.")),
    Flag("max_tokens_total", int | None, None, _opt("--max-tokens-total", min=1, help="Start no "
         "new request once this invocation has logged this many tokens (prompt + completion, "
         "all endpoints); requests in flight finish, then the run stops cleanly.")),
    Flag("max_cost", float | None, None, _opt("--max-cost", min=0.0, help="Start "
         "no request whose worst-case price (its prompt at one token per byte, its whole "
         "token limit, every re-ask) would take this invocation's dollars past USD; requests "
         "in flight finish and are logged, then the run stops cleanly. Needs a price for "
         "every model used (see --prices).")),
    Flag("prices", Path | None, None, _opt("--prices", help="JSON price file that adds models "
         "to the shipped price table or replaces entries (same shape: {\"models\": "
         "{\"openai/NAME\": {\"input\": USD, \"output\": USD, ...}}} per million tokens).")),
    Flag("judge_batch", bool, False, _opt("--judge-batch", help="Send the judge requests "
         "through the provider's batch API (OpenAI Batch, Anthropic Message Batches: about "
         "half price, results within 24 h). Batch ids are logged: re-running the command "
         "resumes the same batches. Re-asks of unreadable replies are sent live.")),
    Flag("model_batch", bool, False, _opt("--model-batch", help="Send the answer requests "
         "through the provider's batch API (one batch per turn round when later turns "
         "build on the model's own answers)."), frozenset({RUN})),
    Flag("batch_poll_interval", float, 30.0, _opt("--batch-poll-interval", min=0.01, help="Seconds "
         "between two status checks of a provider batch.")),
    Flag("request_timeout", float, 600.0, _opt("--request-timeout", min=0.1, help="Seconds "
         "before one request times out.")),
    Flag("max_attempts", int, 10, _opt("--max-attempts", min=1, help="Attempts per request "
         "(retries + 1).")),
    Flag("retry_max_time", float, 900.0, _opt("--retry-max-time", min=0.0, help="Seconds one "
         "request may spend retrying.")),
    Flag("retry_initial_wait", float, 1.0, _opt("--retry-initial-wait", min=0.0, help="First "
         "backoff in seconds (doubles, jittered, capped at 60).")),
    Flag("no_progress", bool, False, _opt("--no-progress", help="No live progress bars."),
         cli_only=True),
    Flag("no_download", bool, False, _opt("--no-download", help="Never fetch data files."),
         cli_only=True),
    Flag("demo", bool, False, _opt("--demo", help="The embedded demo (what `turnbench run` with "
         "no flags does)."), frozenset({RUN})),
    Flag("perturb", list[str] | None, None, _opt("--perturb", help="A stress arm, beside the "
         "unperturbed run: planted-error, distractor or injection (repeatable); the turns "
         "with history are answered and judged again with that history perturbed, and "
         "results give the paired difference (docs/stress.md).", metavar="KIND"),
         frozenset({RUN})),
    Flag("planted_answers", Path | None, None, _opt("--planted-answers", help="The flawed "
         "earlier answers of --perturb planted-error: any answer file turnbench reads "
         "(FastChat model_answer JSONL, {\"id\", \"turn\", \"answer\"} lines) or a run "
         "directory.", metavar="FILE"), frozenset({RUN})),
    Flag("perturb_seed", int, 0, _opt("--perturb-seed", min=0, help="Seed of the stress arms' "
         "draws (distractors, injected documents) and of the order the arms are asked in."),
         frozenset({RUN})),
)  # fmt: skip


#: `turnbench audit-judge`: the judge flags it shares with `run` and `judge` (declared above),
#: then its own. A shared flag left at its default takes the audit's default (smaller for an
#: embedded judge).
AUDIT_SHARED = (
    "judge",
    "judge_base_url",
    "judge_api_key_env",
    "benchmark",
    "out",
    "parser",
    "max_reasks",
    "judge_max_tokens",
    "reask_max_tokens",
    "judge_temperature",
    "judge_extra",
    "judge_token_param",
    "concurrency",
    "request_timeout",
    "max_attempts",
    "retry_max_time",
    "retry_initial_wait",
    "data_dir",
    "no_download",
    "no_progress",
)
AUDIT_FLAGS: tuple[Flag, ...] = (
    Flag("questions", int | None, None, _opt("--questions", min=2, help="Probe questions to use "
         "(default: all 12; 3 for an embedded judge).")),
    Flag("repeats", int | None, None, _opt("--repeats", min=2, max=20, help="Judgments of the same "
         "answer for the stability number (default 3; 2 for an embedded judge).")),
    Flag("fail_if", list[str] | None, None, _opt("--fail-if", help="Fail (exit 5) when a metric "
         "crosses a threshold or was not measured, e.g. 'position_consistency<0.8' or "
         "'manipulation.fake_rating.without_guard>1'; repeatable.")),
    Flag("seed", int, 0, _opt("--seed", help="Seed of the bootstrap intervals.")),
    Flag("resamples", int, 2000, _opt("--resamples", min=100, help="Bootstrap resamples.")),
)  # fmt: skip


def _benchmark_flags() -> tuple[Flag, ...]:
    """The flags the benchmark packages declare for their options (`--context`, ...): each
    is a shorthand for `-B name=value`."""
    return tuple(
        Flag(item.name, item.annotation, None, _opt(item.flag, help=item.help), cli_only=True)
        for item in option_flags()
    )


FLAGS = FLAGS + _benchmark_flags()
BENCHMARK_FLAG_NAMES = frozenset(item.name for item in option_flags())


def flags_signature(flags: Sequence[Flag]) -> inspect.Signature:
    """A typer signature (a typer.Context, then the given flags) for a command that is not
    generated by `make_command`."""
    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    parameters += [
        inspect.Parameter(
            flag.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=flag.default,
            annotation=Annotated[flag.type, flag.option],
        )
        for flag in flags
    ]
    return inspect.Signature(parameters)


def command_signature(command: str) -> inspect.Signature:
    """The signature typer reads for `command`: a typer.Context, then its flags."""
    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    for flag in FLAGS:
        if command in flag.commands:
            parameters.append(
                inspect.Parameter(
                    flag.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=flag.default,
                    annotation=Annotated[flag.type, flag.option],
                )
            )
    return inspect.Signature(parameters)


def make_command(command: str, body: Callable[..., None]) -> Callable[..., None]:
    """A typer command function for `command` whose body receives (ctx, params)."""

    def handler(ctx: typer.Context, **params: Any) -> None:
        body(ctx, params)

    handler.__signature__ = command_signature(command)  # type: ignore[attr-defined]
    handler.__name__ = command
    handler.__doc__ = body.__doc__
    return handler


def parse_json_object(text: str | None, flag: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = loads_json(text)
    except NestingError as error:
        raise UserError(f"{flag}: {json_problem(error)}") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{flag}: not valid JSON ({error.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise UserError(f"{flag}: expected a JSON object such as '{{\"seed\": 1}}'")
    return value


def _flag_values(argv: Sequence[str], names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(flag, value) of the given options in command-line order."""
    found = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            break
        flag, eq, value = token.partition("=")
        if flag in names:
            if not eq:
                index += 1
                value = argv[index] if index < len(argv) else ""
            found.append((flag, value))
        index += 1
    return found


def group_judges(
    specs: list[str], base_urls: list[str], key_envs: list[str], argv: Sequence[str] | None
) -> list[JudgeOption]:
    """Attach each --judge-base-url / --judge-api-key-env to the --judge it follows.

    With one judge they all belong to it, wherever they stand. With several, the order of
    the command line decides (a base URL repeated after one --judge adds a replica).
    """
    if len(specs) <= 1:
        if len(key_envs) > 1:
            raise UserError("--judge-api-key-env is given twice for one --judge")
        return [
            JudgeOption(
                spec=spec, base_urls=tuple(base_urls), api_key_env=key_envs[0] if key_envs else None
            )
            for spec in specs
        ]
    if argv is None:
        if base_urls or key_envs:
            raise UserError(
                "with several --judge, give each judge's --judge-base-url after its --judge"
            )
        return [JudgeOption(spec=spec) for spec in specs]
    groups: list[dict[str, Any]] = []
    for flag, value in _flag_values(argv, ("--judge", "--judge-base-url", "--judge-api-key-env")):
        if flag == "--judge":
            groups.append({"spec": value, "base_urls": [], "api_key_env": None})
        elif not groups:
            raise UserError(f"{flag} {value} comes before any --judge; put it after its judge")
        elif flag == "--judge-base-url":
            groups[-1]["base_urls"].append(value)
        elif groups[-1]["api_key_env"] is not None:
            raise UserError(f"--judge-api-key-env is given twice for --judge {groups[-1]['spec']}")
        else:
            groups[-1]["api_key_env"] = value
    return [
        JudgeOption(spec=g["spec"], base_urls=tuple(g["base_urls"]), api_key_env=g["api_key_env"])
        for g in groups
    ]
