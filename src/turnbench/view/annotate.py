"""Human judging in `turnbench view --annotate RUN`: blind items, votes into SQLite.

An item is one judged turn: for a pairwise run (or any run holding two or more models'
answers) the answers of two models to the same turn, for a single-grading run of one model
its one answer. The page never learns the models' names: it votes `left`, `right` or `tie`
on an opaque item key (an HMAC of the item under a random salt kept in the votes file, so
nobody can compute it from the run's models), and the server, which chose the left/right
order (a hash of the item and the annotator, so a reload shows the same order), stores the
vote under the real names with the order shown. The same `POST /api/votes` also takes a
vote by names (`model_a`, `model_b`, `winner`; or `model`, `score`), the interface scripts
use.

Items come in one seeded order for everyone, and an item stays in the queue until `overlap`
different annotators voted on it: annotators working side by side cover the same items,
which is what inter-annotator agreement needs.

Security: every state-changing request (a vote, an undo) must carry the page's CSRF token in
`X-CSRF-Token` (an HMAC of the session cookie under a secret kept in the votes file, so a
restarted server still accepts an open page) and an `Origin` that names an allowed host
(`hosts.py`) and is the address the server was reached at; anything else is 403. An undo
undoes the last vote of the name *cast from the same browser session*, never another's.
Every field is validated (unknown sample, turn or model: 400). Texts reach the page as JSON
and are shown with `textContent`; the page runs one script file under a strict
Content-Security-Policy. The votes export names models: it needs the operator's token.

The votes file is used from one thread (its one connection, `votes_db`), never from the
event loop: a vote waits at most DB_QUEUE_WAIT for its turn and BUSY_TIMEOUT for a lock
another process holds, then gets 503 with the reason as JSON, and the other pages go on.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Literal, TypeVar

from aiohttp import web
from jinja2 import Environment
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from turnbench.benchmarks.base import Benchmark, BenchmarkSettings, Sample
from turnbench.errors import UserError
from turnbench.journal.logindex import AnswerDone
from turnbench.report.templating import environment
from turnbench.safetext import name_problem
from turnbench.store.rundir import Run, load_run, sample_sort_key
from turnbench.textio import NestingError, describe_validation_error, loads_json
from turnbench.view.hosts import LOOPBACK, Hosts, ensure_host_check
from turnbench.view.static import static_route
from turnbench.view.tokens import offered_token, same_token
from turnbench.view.votes_db import (
    MAX_NAME,
    NewVote,
    StoredVote,
    VotesDB,
    VotesUnavailable,
    fastchat_lines,
)

HERE = Path(__file__).parent
STATIC = {"annotate.js": "text/javascript", "annotate.css": "text/css"}
SESSION_COOKIE = "turnbench_annotate_session"
CSRF_COOKIE = "turnbench_csrf"
CSRF_HEADER = "X-CSRF-Token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)
MAX_SKIPS = 500
SESSION_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,64}")
#: seconds a request waits for the votes file's thread before it is told 503 (each job
#: there waits at most votes_db.BUSY_TIMEOUT for a lock, so a request waits at most both)
DB_QUEUE_WAIT = 3.0
Kind = Literal["pairwise", "single"]
T = TypeVar("T")
LOG = logging.getLogger("turnbench.view")


# -- items ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    """One model's answer to the item's turn, with that model's conversation before it."""

    model: str
    answer: str
    earlier: tuple[tuple[str, str], ...]  # (user, assistant) of turns 1..turn-1


@dataclass(frozen=True)
class Item:
    key: str
    sample_id: str
    turn: int
    group: str | None
    question: str
    reference: str | None
    sides: tuple[Side, ...]  # sorted by model: two (pairwise) or one (single grading)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(side.model for side in self.sides)


def item_key(salt: str, sample_id: str, turn: int, models: tuple[str, ...]) -> str:
    """An opaque key, stable for one votes file: the page sees it instead of the models'
    names. Salted (an HMAC under the votes file's random salt): without the salt nobody can
    compute which models a key stands for, though the run's models are no secret."""
    text = json.dumps([sample_id, turn, *models], ensure_ascii=False)
    return hmac.new(salt.encode(), text.encode("utf-8"), hashlib.sha256).hexdigest()[:20]


def _benchmark(run: Run) -> tuple[dict[str, Sample], Benchmark | None]:
    """The benchmark's samples (questions, golden turns, reference answers), when its data
    files are here; without them the questions come from the run log only."""
    from turnbench.benchmarks.datafiles import DataLocator

    try:
        cls = run.benchmark_class
        if cls is None:
            return {}, None
        bench = cls(cls.locate_files(DataLocator(None, allow_download=False)), BenchmarkSettings())
        return {str(sample.id): sample for sample in bench.all_samples()}, bench
    except (UserError, KeyError, OSError, ValueError):
        return {}, None


@dataclass
class Items:
    kind: Kind
    benchmark: str
    items: list[Item]

    def __post_init__(self) -> None:
        self.by_key = {item.key: item for item in self.items}
        self.by_content = {(i.sample_id, i.turn, i.models): i for i in self.items}

    def salted(self, salt: str) -> Items:
        """The same items, keyed under `salt` (the votes file's)."""
        keyed = [
            replace(item, key=item_key(salt, item.sample_id, item.turn, item.models))
            for item in self.items
        ]
        return Items(self.kind, self.benchmark, keyed)

    def of_vote(self, vote: StoredVote) -> Item | None:
        """The item a stored vote is about (by its sample, turn and models, so that votes
        of a file written before its keys were salted count too), or None."""
        models = (
            tuple(sorted((vote.model_a, vote.model_b)))
            if vote.model_a is not None and vote.model_b is not None
            else (vote.model,)
        )
        return self.by_content.get((vote.sample_id, vote.turn, models))  # type: ignore[arg-type]


def load_items(run_dir: Path, salt: str | None = None) -> Items:
    """Every item of a run directory (validated as `turnbench report` validates it), keyed
    under `salt` (None: a random one)."""
    salt = secrets.token_hex(32) if salt is None else salt
    run = load_run(run_dir)
    samples, bench = _benchmark(run)
    names = set(run.model_names)
    answers: dict[str, dict[tuple[str, int], AnswerDone]] = {}
    for done in run.index.done.values():
        if isinstance(done, AnswerDone) and not done.unclosed_think:
            if names and done.model not in names:
                continue
            answers.setdefault(done.model, {})[(str(done.sample_id), done.turn)] = done
    every = [done for by_turn in answers.values() for done in by_turn.values()]
    texts = dict(zip((id(d) for d in every), run.log.shown(list(every)), strict=True))

    def text(model: str, sample_id: str, turn: int) -> str | None:
        done = answers.get(model, {}).get((sample_id, turn))
        found = texts.get(id(done)) if done is not None else None
        return found if isinstance(found, str) else None

    def question(sample_id: str, turn: int) -> str:
        asked = run.log.questions.get(sample_id, {}).get(turn)
        if asked is not None:
            return asked
        sample = samples.get(sample_id)
        if sample is not None and turn <= len(sample.turns):
            return sample.turns[turn - 1].user
        return "(the question is not in the run log, and the benchmark's data is not here)"

    def side(model: str, sample_id: str, turn: int) -> Side:
        sample = samples.get(sample_id)
        earlier = []
        for number in range(1, turn):
            golden = (
                sample.turns[number - 1].golden if sample and number <= len(sample.turns) else None
            )
            said = golden if golden is not None else text(model, sample_id, number)
            earlier.append((question(sample_id, number), said or "(no answer recorded)"))
        return Side(model, text(model, sample_id, turn) or "", tuple(earlier))

    def judged(sample_id: str, turn: int) -> bool:
        sample = samples.get(sample_id)
        return sample is None or turn in sample.judged_turns()

    groups = {(str(d.sample_id), d.turn): d.group for by in answers.values() for d in by.values()}
    turns = sorted(groups, key=lambda k: (sample_sort_key(k[0]), k[1]))
    if run.pairwise:
        pairs: dict[tuple[str, int], set[tuple[str, str]]] = {}
        for game in run.games():
            if game.pair is not None:
                first, second = sorted(game.pair)
                pairs.setdefault((str(game.sample_id), game.turn), set()).add((first, second))
        model_sets = {k: sorted(v) for k, v in pairs.items()}
        kind: Kind = "pairwise"
    elif len(answers) >= 2:
        every_pair = list(combinations(sorted(answers), 2))
        model_sets = {k: every_pair for k in turns}
        kind = "pairwise"
    else:
        model_sets = {k: [(m,) for m in sorted(answers)] for k in turns}
        kind = "single"
    items = []
    for sample_id, turn in turns:
        if not judged(sample_id, turn):
            continue
        for models in model_sets.get((sample_id, turn), []):
            if any(text(m, sample_id, turn) is None for m in models):
                continue
            sample = samples.get(sample_id)
            reference = bench.reference_answer(sample, turn) if bench and sample else None
            items.append(
                Item(
                    key=item_key(salt, sample_id, turn, tuple(models)),
                    sample_id=sample_id,
                    turn=turn,
                    group=groups[(sample_id, turn)],
                    question=question(sample_id, turn),
                    reference=reference,
                    sides=tuple(side(m, sample_id, turn) for m in models),
                )
            )
    if not items:
        raise UserError(f"--annotate {run_dir}: the run holds no answers to judge")
    return Items(kind, run.benchmark, items)


# -- requests ------------------------------------------------------------------------------
Name = Field(min_length=1, max_length=MAX_NAME)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    annotator: str = Name


class PageVote(_Strict):
    """A vote from the page: on an item key, by side (pairwise) or by score."""

    item: str = Field(min_length=1, max_length=64)
    choice: Literal["left", "right", "tie"] | None = None
    score: StrictInt | None = Field(default=None, ge=1, le=10)


class PairVote(_Strict):
    """A pairwise vote by the models' names (the interface of issue 24)."""

    sample_id: StrictInt | str = Field(union_mode="left_to_right")
    turn: StrictInt = Field(ge=1)
    model_a: str = Name
    model_b: str = Name
    winner: Literal["model_a", "model_b", "tie"]


class ScoreVote(_Strict):
    """A single-grading vote by the model's name: a score from 1 to 10."""

    sample_id: StrictInt | str = Field(union_mode="left_to_right")
    turn: StrictInt = Field(ge=1)
    model: str = Name
    score: StrictInt = Field(ge=1, le=10)


class Undo(_Strict):
    pass


def _bad(message: str, status: type[web.HTTPException] = web.HTTPBadRequest) -> web.HTTPException:
    return status(text=json.dumps({"error": message}), content_type="application/json")


def _annotator(name: str | None) -> str:
    if name is None or not 1 <= len(name) <= MAX_NAME:
        raise _bad(f"an annotator name of 1 to {MAX_NAME} characters is needed")
    problem = name_problem(name)
    if problem is not None:
        raise _bad(f"the annotator name {problem}")
    return name


class Annotation:
    """The state behind the annotation routes: the run's items and the votes file (used
    from its own thread: `db`)."""

    def __init__(
        self,
        run_dir: Path,
        votes_path: Path,
        overlap: int,
        templates: Environment,
        hosts: Hosts = LOOPBACK,
    ):
        if overlap < 1:
            raise UserError(f"--overlap must be 1 or more, got {overlap}")
        items = load_items(run_dir)  # (checked before the votes file is made)
        self.run_name = run_dir.resolve().name
        self.votes = VotesDB(votes_path, create=True)
        self.items = items.salted(self.votes.meta("item_salt") or "")
        self.overlap = overlap
        self.templates = templates
        self.hosts = hosts
        self.secret = self.votes.meta("csrf_secret") or ""
        seed = self.votes.meta("order_seed") or ""
        self.order = sorted(
            self.items.items,
            key=lambda item: hashlib.sha256(f"{seed}:{item.key}".encode()).hexdigest(),
        )
        self.seed = seed
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnbench-votes")

    async def db(self, work: Callable[[], T]) -> T:
        """`work` (which uses the votes file) on the file's own thread, off the event loop.
        A job that waited DB_QUEUE_WAIT for its turn is not started (VotesUnavailable, so
        nothing is stored after the page was told it was not); a started one waits at most
        BUSY_TIMEOUT for another process's lock."""
        deadline = time.monotonic() + DB_QUEUE_WAIT

        def job() -> T:
            if time.monotonic() > deadline:
                raise VotesUnavailable(
                    f"the votes database {self.votes.path} is busy (waited {DB_QUEUE_WAIT:g} s "
                    "behind other requests); nothing was stored, try again"
                )
            return work()

        return await asyncio.get_running_loop().run_in_executor(self.executor, job)

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        self.votes.close()

    # -- sessions and checks ---------------------------------------------------------------
    def token(self, session: str) -> str:
        return hmac.new(self.secret.encode(), session.encode(), hashlib.sha256).hexdigest()

    def check(self, request: web.Request) -> str:
        """The session id of a state-changing request that passed both checks, else 403."""
        if not self.hosts.allows_origin(request.headers.get("Origin"), request.headers.get("Host")):
            raise _bad("cross-origin or Origin-less request refused", web.HTTPForbidden)
        session = _session_id(request.cookies.get(SESSION_COOKIE))
        sent = request.headers.get(CSRF_HEADER, "")
        expected_token = self.token(session).encode() if session else b""
        if not session or not hmac.compare_digest(
            sent.encode("utf-8", "surrogateescape"), expected_token
        ):
            raise _bad("missing or wrong CSRF token; reload the page", web.HTTPForbidden)
        return session

    # -- items -------------------------------------------------------------------------------
    def voters(self) -> dict[str, set[str]]:
        """item key -> the annotators with a standing vote on it (read now: on the votes
        file's thread). Votes are matched to items by their content, not their stored key."""
        found: dict[str, set[str]] = {}
        for annotator, sample_id, turn, models in self.votes.standing():
            item = self.items.by_content.get((sample_id, turn, models))
            if item is not None:
                found.setdefault(item.key, set()).add(annotator)
        return found

    def left_first(self, annotator: str, item: Item) -> bool:
        """The order shown, fixed per annotator and item (a reload shows the same)."""
        digest = hashlib.sha256(f"{self.seed}:{annotator}:{item.key}".encode()).digest()
        return digest[0] % 2 == 0

    def shown(self, annotator: str, item: Item) -> tuple[Side, ...]:
        if len(item.sides) == 2 and not self.left_first(annotator, item):
            return (item.sides[1], item.sides[0])
        return item.sides

    def progress(self, annotator: str, voters: dict[str, set[str]]) -> dict[str, int]:
        mine = sum(annotator in names for names in voters.values())
        complete = sum(len(voters.get(item.key, ())) >= self.overlap for item in self.order)
        open_for_me = sum(
            annotator not in voters.get(item.key, set())
            and len(voters.get(item.key, ())) < self.overlap
            for item in self.order
        )
        return {
            "yours": mine,
            "items": len(self.order),
            "complete": complete,
            "open_for_you": open_for_me,
            "overlap": self.overlap,
        }

    def next_item(
        self, annotator: str, skip: set[str], wanted: str | None, voters: dict[str, set[str]]
    ) -> Item | None:
        if wanted is not None:
            item = self.items.by_key.get(wanted)
            if item is not None and annotator not in voters.get(item.key, set()):
                return item
        for item in self.order:
            names = voters.get(item.key, set())
            if item.key in skip or annotator in names or len(names) >= self.overlap:
                continue
            return item
        return None

    # -- the votes file's thread -----------------------------------------------------------
    def store(self, new: NewVote) -> dict[str, Any]:
        """Store a vote unless its annotator has one on the item (409): one job on the votes
        file's thread, so no other vote comes between the check and the write."""
        if new.annotator in self.voters().get(new.item_key, set()):
            raise _bad(
                "this annotator already voted on this item (undo it first)", web.HTTPConflict
            )
        vote_id = self.votes.add(new)
        return {"id": vote_id, "progress": self.progress(new.annotator, self.voters())}

    def undo(self, annotator: str, session: str) -> dict[str, Any]:
        """Undo the last standing vote `annotator` cast from this browser session."""
        undone = self.votes.undo(annotator, session)
        item = self.items.of_vote(undone) if undone is not None else None
        progress = self.progress(annotator, self.voters())
        key = item.key if item is not None else undone.item_key if undone is not None else None
        return {"undone": key, "progress": progress}

    def export(self) -> str:
        return "".join(line + "\n" for line in fastchat_lines(self.votes.votes()))

    def payload(self, annotator: str, item: Item) -> dict[str, Any]:
        return {
            "key": item.key,
            "kind": self.items.kind,
            "sample_id": item.sample_id,
            "turn": item.turn,
            "group": item.group,
            "question": item.question,
            "reference": item.reference,
            "sides": [
                {
                    "answer": side.answer,
                    "earlier": [{"user": u, "assistant": a} for u, a in side.earlier],
                }
                for side in self.shown(annotator, item)
            ],
        }

    # -- votes -------------------------------------------------------------------------------
    def vote_from(self, body: Any, session: str) -> NewVote:
        if not isinstance(body, dict):
            raise _bad("expected a JSON object")
        form: type[_Strict] = (
            PageVote if "item" in body else PairVote if "winner" in body else ScoreVote
        )
        try:
            vote = form.model_validate(body)
        except ValidationError as error:
            raise _bad(describe_validation_error(error)) from None
        annotator = _annotator(vote.annotator)
        if isinstance(vote, PageVote):
            return self._page_vote(vote, annotator, session)
        if isinstance(vote, PairVote):
            if self.items.kind != "pairwise":
                raise _bad("this run's items are graded singly: send model and score")
            if vote.model_a == vote.model_b:
                raise _bad("model_a and model_b are the same model")
            models = tuple(sorted((vote.model_a, vote.model_b)))
            item = self._find(str(vote.sample_id), vote.turn, models)
            return NewVote(
                annotator, session, item.key, item.sample_id, item.turn,
                model_a=vote.model_a, model_b=vote.model_b, winner=vote.winner,
            )  # fmt: skip
        assert isinstance(vote, ScoreVote)
        if self.items.kind != "single":
            raise _bad("this run's items are pairwise: send model_a, model_b and winner")
        item = self._find(str(vote.sample_id), vote.turn, (vote.model,))
        return NewVote(
            annotator, session, item.key, item.sample_id, item.turn,
            model=vote.model, score=vote.score,
        )  # fmt: skip

    def _find(self, sample_id: str, turn: int, models: tuple[str, ...]) -> Item:
        item = self.items.by_content.get((sample_id, turn, models))
        if item is not None:
            return item
        if not any(i.sample_id == sample_id for i in self.items.items):
            raise _bad(f"unknown sample {sample_id!r}")
        if not any(i.sample_id == sample_id and i.turn == turn for i in self.items.items):
            raise _bad(f"sample {sample_id!r} has no turn {turn} to judge")
        raise _bad(f"no item of sample {sample_id!r} turn {turn} for models {list(models)}")

    def _page_vote(self, vote: PageVote, annotator: str, session: str) -> NewVote:
        item = self.items.by_key.get(vote.item)
        if item is None:
            raise _bad("unknown item")
        if self.items.kind == "pairwise":
            if vote.choice is None or vote.score is not None:
                raise _bad("a pairwise item takes a choice: left, right or tie")
            left, right = self.shown(annotator, item)
            winner = {"left": left.model, "right": right.model}.get(vote.choice)
            model_a, model_b = item.models
            return NewVote(
                annotator, session, item.key, item.sample_id, item.turn,
                model_a=model_a, model_b=model_b,
                winner="tie" if winner is None else "model_a" if winner == model_a else "model_b",
                shown_left=left.model,
            )  # fmt: skip
        if vote.score is None or vote.choice is not None:
            raise _bad("a single-grading item takes a score from 1 to 10")
        return NewVote(
            annotator, session, item.key, item.sample_id, item.turn,
            model=item.models[0], score=vote.score, shown_left=item.models[0],
        )  # fmt: skip


# -- routes --------------------------------------------------------------------------------
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(value: Any, status: int = 200) -> web.Response:
    response = web.json_response(value, status=status)
    response.headers["Cache-Control"] = "no-store"
    return response


async def _body(request: web.Request) -> Any:
    try:
        return loads_json(await request.text())
    except (json.JSONDecodeError, NestingError, UnicodeDecodeError):
        raise _bad("the body is not JSON (or nested too deep)") from None


def _session_id(value: str | None) -> str | None:
    """A session cookie as this server issues it, or None (anything else is ignored)."""
    return value if value is not None and SESSION_SHAPE.fullmatch(value) else None


def _unavailable(error: UserError) -> web.Response:
    """A votes file that cannot be used now (503: try again) or is broken (500): the reason
    as JSON for the page, one line in the server's log, no traceback."""
    status = 503 if isinstance(error, VotesUnavailable) else 500
    LOG.warning("turnbench view: %s", error.message)
    response = _json({"error": error.message}, status=status)
    if status == 503:
        response.headers["Retry-After"] = "2"
    return response


def _votes_errors(handler: Handler) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except UserError as error:
            return _unavailable(error)

    return handle


def add_annotation_routes(
    app: web.Application,
    *,
    run_dir: Path,
    votes_path: Path,
    overlap: int = 2,
    base_template_dir: Path | None = None,
    hosts: Hosts = LOOPBACK,
    export_token: str | None = None,
) -> None:
    """Add the annotation page and its API to `app` (the votes file is created if missing).

    `base_template_dir` is searched before this package's templates: a page layout there
    named `annotate.html` replaces ours. `hosts`: the host names requests may name (the host
    check is put first in `app` unless it is there). `export_token`: the token the votes
    export needs (`Authorization: Bearer` or `?token=`; None: the export is refused)."""
    ensure_host_check(app, hosts)
    folders = [str(HERE / "templates")]
    if base_template_dir is not None:
        folders.insert(0, str(base_template_dir))
    templates = environment(*folders)
    state = Annotation(run_dir, votes_path, overlap, templates, hosts)

    async def page(request: web.Request) -> web.Response:
        session = _session_id(request.cookies.get(SESSION_COOKIE)) or secrets.token_urlsafe(24)
        token = state.token(session)
        html = templates.get_template("annotate.html").render(
            csrf_token=token,
            kind=state.items.kind,
            benchmark=state.items.benchmark,
            run_name=state.run_name,
            items=len(state.order),
            overlap=state.overlap,
        )
        response = web.Response(text=html, content_type="text/html")
        secure = request.secure
        response.set_cookie(
            SESSION_COOKIE, session, httponly=True, samesite="Strict", path="/", secure=secure
        )
        response.set_cookie(CSRF_COOKIE, token, samesite="Strict", path="/", secure=secure)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    static = static_route(STATIC, cache_control="no-cache")

    @_votes_errors
    async def next_item(request: web.Request) -> web.Response:
        annotator = _annotator(request.query.get("annotator"))
        skip = set(request.query.get("skip", "").split(",")[:MAX_SKIPS]) - {""}
        voters = await state.db(state.voters)
        item = state.next_item(annotator, skip, request.query.get("item"), voters)
        return _json(
            {
                "item": None if item is None else state.payload(annotator, item),
                "progress": state.progress(annotator, voters),
            }
        )

    @_votes_errors
    async def vote(request: web.Request) -> web.Response:
        session = state.check(request)
        new = state.vote_from(await _body(request), session)
        return _json(await state.db(lambda: state.store(new)), status=201)

    @_votes_errors
    async def undo(request: web.Request) -> web.Response:
        session = state.check(request)
        body = await _body(request)
        try:
            asked = Undo.model_validate(body)
        except ValidationError as error:
            raise _bad(describe_validation_error(error)) from None
        annotator = _annotator(asked.annotator)
        return _json(await state.db(lambda: state.undo(annotator, session)))

    @_votes_errors
    async def export(request: web.Request) -> web.Response:
        offered, _ = offered_token(request)
        if export_token is None or not same_token(offered, export_token.encode("utf-8")):
            raise _bad(
                "the votes export names the models: it needs the operator's token (printed "
                "when the server started)",
                web.HTTPForbidden,
            )
        text = await state.db(state.export)
        response = web.Response(text=text, content_type="application/x-ndjson")
        response.headers["Content-Disposition"] = 'attachment; filename="human_judgments.jsonl"'
        response.headers["Cache-Control"] = "no-store"
        return response

    async def close(_: web.Application) -> None:
        state.close()

    app.router.add_get("/annotate", page)
    app.router.add_get("/annotate/static/{name}", static)
    app.router.add_get("/api/annotate/next", next_item)
    app.router.add_post("/api/votes", vote)
    app.router.add_post("/api/votes/undo", undo)
    app.router.add_get("/api/votes/export.jsonl", export)
    app.on_cleanup.append(close)
