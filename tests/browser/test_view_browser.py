"""`turnbench view` in a real headless Chromium (Debian's /usr/bin/chromium via Playwright):
the runs page updating while a run against the fake server writes its log, and XSS probes
in a model's answers and in a model's name staying inert text on every page.

Set TURNBENCH_SCREENSHOT_DIR to keep the screenshots (runs while a run writes, runs, run,
conversation, compare, side by side) and
the live-update evidence (live-update.json)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.annotate_support import HOSTILE_MODEL, hostile_answers, judge_run
from tests.browser.test_report_browser import browser, env, screenshot  # noqa: F401
from tests.conftest import shared_data_dir
from tests.e2e.test_report import JUDGE_MODEL, fixed_rating, make_run
from turnbench.testing.fake_server import FakeServer

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ViewServer:
    """`turnbench view DIR` as a child process on a free port of 127.0.0.1."""

    def __init__(self, folder: Path, environ: dict[str, str]) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "turnbench", "view", str(folder), "--port", str(self.port)],
            env={**environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.process.poll() is not None:
                    message = self.process.stderr.read() if self.process.stderr else ""
                    raise RuntimeError(message) from None
                time.sleep(0.1)
        raise RuntimeError("turnbench view did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise


@pytest.fixture
def view_of(env) -> Iterator:  # noqa: F811
    started: list[ViewServer] = []

    def start(folder: Path) -> ViewServer:
        started.append(ViewServer(folder, env))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def watch(browser, url: str):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(url)
    return page, errors, dialogs


def shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TURNBENCH_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_runs_page_updates_live_while_a_run_writes(browser, env, view_of, tmp_path):  # noqa: F811
    folder = tmp_path / "runs"
    make_run(folder / "finished", env, fixed_rating(7))
    server = view_of(folder)
    page, errors, _ = watch(browser, server.url + "/")
    assert page.locator("#runs tbody tr").count() == 1
    page.wait_for_selector("#live:text('live')", timeout=10_000)
    with FakeServer(latency=0.25) as fake:
        run = subprocess.Popen(
            [sys.executable, "-m", "turnbench", "run", "--benchmark", "mt-bench",
             "--model", "openai/model-under-test", "--model-base-url", fake.base_url,
             "--judge", f"openai/{JUDGE_MODEL}", "--judge-base-url", fake.base_url,
             "--out", str(folder / "live"), "--limit", "1", "--concurrency", "1",
             "--no-progress"],
            env={**env, "PYTHONPATH": os.pathsep.join(sys.path)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        row = page.locator('#runs tbody tr[data-path="live"]')
        row.wait_for(timeout=20_000)  # the new run appears while it works
        seen: list[dict] = []
        started = time.monotonic()
        while time.monotonic() - started < 60:
            if row.count():
                cells = {
                    "t": round(time.monotonic() - started, 2),
                    "state": row.locator('[data-field="state"]').inner_text(),
                    "progress": row.locator('[data-field="progress"]').inner_text(),
                    "run_alive": run.poll() is None,
                }
                if not seen or (cells["state"], cells["progress"]) != (
                    seen[-1]["state"],
                    seen[-1]["progress"],
                ):
                    seen.append(cells)
                    if cells["state"] == "running" and len(seen) == 2:
                        screenshot(page, shots_dir(tmp_path), "view-runs-live.png")
                if cells["state"] == "complete":
                    break
            time.sleep(0.2)
        _out, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
    (shots_dir(tmp_path) / "live-update.json").write_text(json.dumps(seen, indent=1))
    running = [s for s in seen if s["state"] == "running" and s["run_alive"]]
    judged = [int(re.split(r"[ ·/]+", s["progress"])[1]) for s in running]
    # the count changed in the page, without a reload, while the run was still writing
    assert len(set(judged)) >= 3, seen
    assert judged == sorted(judged)
    assert seen[-1]["state"] == "complete", seen
    assert seen[-1]["progress"].startswith("16 · 16")
    assert errors == []


def test_xss_probes_in_answers_and_model_names_stay_inert(browser, env, view_of, tmp_path):  # noqa: F811
    folder = tmp_path / "runs"
    answers = hostile_answers(shared_data_dir(), tmp_path / "answers", rename=True)
    judge_run(env, answers, folder / "hostile")
    make_run(folder / "base", env, fixed_rating(6))
    make_run(folder / "new", env, fixed_rating(8))
    server = view_of(folder)
    shots = shots_dir(tmp_path)
    pages = [
        ("/", "view-runs.png"),
        ("/run/0/hostile", None),
        ("/conversation/0/hostile?sample=81", "view-conversation.png"),
        ("/run/0/new", "view-run.png"),
        ("/compare?a_root=0&a=base&b_root=0&b=new", "view-compare.png"),
        ("/pair?a_root=0&a=base&b_root=0&b=new&sample=81", "view-side-by-side.png"),
    ]
    for path, name in pages:
        page, errors, dialogs = watch(browser, server.url + path)
        page.wait_for_load_state("load")
        time.sleep(0.3)
        assert dialogs == [], path
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.locator("img[src='x'], img[src='y']").count() == 0, path
        assert page.locator("body script:not([src])").count() == 0, path
        text = page.inner_text("body")
        if "hostile" in path or path == "/":
            assert HOSTILE_MODEL in text, path  # the name, shown literally
        if "conversation" in path:
            assert "<script>window.__pwned=1</script>" in text
            # a long unbroken answer wraps inside its box instead of widening the page
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert [e for e in errors if "Content Security Policy" not in e] == [], path
        if name is not None:
            screenshot(page, shots, name)
        page.close()
