"""Human judging in a real headless Chromium: a keyboard-driven session of two annotators,
the server SIGKILLed in the middle and restarted on the same port while the page stays open,
every vote still there, then `turnbench agreement --votes FILE.sqlite` on the result.

Set TURNBENCH_SCREENSHOT_DIR to keep the screenshot, the votes file and the agreement."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from tests.annotate_support import (
    HOSTILE,
    ServerProcess,
    hostile_answers,
    judge_run,
    longer_wins,
)
from tests.browser.test_report_browser import browser, env, screenshot  # noqa: F401
from tests.conftest import run_cli, shared_data_dir

pytestmark = pytest.mark.browser
JUDGE = "openai/judge-model"


def standing(votes: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(votes) as db:
        return db.execute(
            "SELECT annotator, item_key FROM votes WHERE undone_at IS NULL ORDER BY id"
        ).fetchall()


class Session:
    """The page as an annotator drives it: keys only."""

    def __init__(self, page) -> None:
        self.page = page
        self.saved = 0  # rows inserted, undone ones included (the ids the page reports)

    def key(self) -> str:
        return self.page.locator("#item").get_attribute("data-key") or ""

    def where(self) -> tuple[str, int]:
        text = self.page.locator("#where").text_content() or ""
        sample = text.split()[1]
        return sample, int(text.rsplit("turn ", 1)[1])

    def answers(self) -> list[str]:
        return self.page.evaluate(
            "Array.from(document.querySelectorAll('#answers > .answer > .text'))"
            ".map(n => n.textContent)"
        )

    def wait_other_item(self, before: str) -> None:
        self.page.wait_for_function(
            "before => document.getElementById('item').dataset.key !== before", arg=before
        )

    def press(self, key: str) -> None:
        before = self.key()
        self.page.keyboard.press(key)
        if key in ("ArrowRight",):
            self.wait_other_item(before)
            return
        self.saved += 1
        self.page.wait_for_function(
            "n => document.getElementById('status').textContent === 'saved vote #' + n",
            arg=self.saved,
        )
        self.wait_other_item(before)

    def undo(self, expected_key: str) -> None:
        self.page.keyboard.press("Backspace")
        self.page.wait_for_function(
            "k => document.getElementById('status').textContent === 'undone'"
            " && document.getElementById('item').dataset.key === k",
            arg=expected_key,
        )

    def sign_in(self, name: str) -> None:
        """Sign in and wait until the item shown is the one loaded for this annotator."""
        loads = self.page.locator("#item").get_attribute("data-loads") or "0"
        self.page.fill("#annotator", name)
        self.page.press("#annotator", "Enter")
        self.page.wait_for_function(
            "n => !document.getElementById('item').hidden"
            " && Number(document.getElementById('item').dataset.loads || 0) > n",
            arg=int(loads),
        )


#: how each vote relates to the judge (which prefers the longer answer): the key pressed
PLAN = {"longer": ("1", "a"), "shorter": ("2", "b"), "tie": ("3", "t")}


def test_annotation_session_survives_a_kill(browser, env, tmp_path_factory, tmp_path):  # noqa: F811
    root = tmp_path_factory.mktemp("annotate")
    answers = hostile_answers(shared_data_dir(), root / "answers", rename=True)
    run = judge_run(env, answers, root / "run", "--mode", "pairwise-all", responder=longer_wins)
    votes = root / "votes.sqlite"
    server = ServerProcess(run, votes, env)
    port = server.port
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "dialog", lambda dialog: (problems.append("dialog " + dialog.message), dialog.dismiss())
    )
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and "Failed to load resource" not in m.text
            else None
        ),
    )
    session = Session(page)
    # what each annotator chose per item: (sample, turn) -> "longer" | "shorter" | "tie"
    chosen: dict[str, dict[tuple[str, int], str]] = defaultdict(dict)

    def vote(annotator: str, kind: str, index: int) -> None:
        texts = session.answers()
        assert len(texts) == 2 and len(texts[0]) != len(texts[1])
        assert any(text.startswith(HOSTILE) for text in texts)  # shown as text, literally
        longer_is_left = len(texts[0]) > len(texts[1])
        side = {"longer": 0 if longer_is_left else 1, "shorter": 1 if longer_is_left else 0}
        keys = ("1", "a") if side.get(kind) == 0 else ("2", "b")
        if kind == "tie":
            keys = PLAN["tie"]
        chosen[annotator][session.where()] = kind
        session.press(keys[index % 2])  # digits and letters alike

    try:
        page.goto(server.base + "/annotate")
        session.sign_in("alice")
        screenshot(page, tmp_path, "annotate.png")
        alice = ["longer", "longer", "shorter", "tie", "longer", "longer", "shorter", "longer",
                 "tie", "longer"]  # fmt: skip
        for index, kind in enumerate(alice):
            if index == 2:
                session.press("ArrowRight")  # skip one item: it is not voted on
            if index == 5:
                where, key = session.where(), session.key()
                vote("alice", "shorter", 0)
                session.undo(key)  # Backspace: the vote is marked undone, the item back
                assert session.where() == where
                del chosen["alice"][where]
            vote("alice", kind, index)
        session.sign_in("bob")
        bob = ["longer", "shorter", "longer", "tie", "longer", "longer", "longer", "shorter",
               "longer", "longer"]  # fmt: skip
        for index, kind in enumerate(bob[:5]):
            vote("bob", kind, index)
        assert len(standing(votes)) == 15
        server.kill()
        server.stop()
        assert len(standing(votes)) == 15  # every vote survived the SIGKILL
        server = ServerProcess(run, votes, env, port=port)  # the page stays open
        for index, kind in enumerate(bob[5:]):
            vote("bob", kind, index)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("#answers img, #answers script, #answers b").count() == 0
        assert "window.__pwned=3" not in page.content()  # the hostile model name never shown
        assert problems == []
    finally:
        page.close()
        server.stop()

    cast = standing(votes)
    assert len(cast) == 20 and [a for a, _ in cast] == ["alice"] * 10 + ["bob"] * 10
    done = run_cli(["agreement", "--votes", str(votes), "--run", str(run), "--json"], env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    keep = os.environ.get("TURNBENCH_SCREENSHOT_DIR")
    if keep:  # the evidence: the run, its votes (a consistent copy) and the agreement
        shutil.rmtree(Path(keep) / "annotate-run", ignore_errors=True)
        shutil.copytree(run, Path(keep) / "annotate-run")
        (Path(keep) / "annotate-votes.sqlite").unlink(missing_ok=True)
        with (
            sqlite3.connect(votes) as source,
            sqlite3.connect(Path(keep) / "annotate-votes.sqlite") as copy,
        ):
            source.backup(copy)
        (Path(keep) / "annotate-agreement.json").write_text(done.stdout, encoding="utf-8")

    # the figures, counted by hand from the choices made above
    expected: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: defaultdict(lambda: {"S1": [0, 0], "S2": [0, 0]})
    )
    for annotator in ("alice", "bob"):
        for (_, turn), kind in chosen[annotator].items():
            cell = expected[f"{JUDGE}|human"][str(turn)]
            cell["S1"][0] += kind == "longer"
            cell["S1"][1] += 1
            if kind != "tie":
                cell["S2"][0] += kind == "longer"
                cell["S2"][1] += 1
    for item, kind in chosen["alice"].items():
        other = chosen["bob"].get(item)
        if other is None:
            continue
        cell = expected["human|human"][str(item[1])]
        cell["S1"][0] += kind == other
        cell["S1"][1] += 1
        if "tie" not in (kind, other):
            cell["S2"][0] += kind == other
            cell["S2"][1] += 1
    assert sorted(report) == sorted(expected)
    for pair, by_turn in expected.items():
        for turn, setups in by_turn.items():
            for setup, (agree, total) in setups.items():
                got = report[pair][turn][setup]
                assert (got["agree"], got["total"]) == (agree, total), (pair, turn, setup)
    judge_total = sum(t["S1"]["total"] for t in report[f"{JUDGE}|human"].values())
    assert judge_total == 20
    assert sum(t["S1"]["total"] for t in report["human|human"].values()) >= 8
