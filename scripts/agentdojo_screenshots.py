"""Screenshots of a successful prompt-injection attack in the report and in the viewer (issue
43), made from a real AgentDojo run against a scripted agent, by headless Chromium from Debian.

The run: AgentDojo's banking suite, user tasks 0 and 1, each alone and with each of the
suite's injection tasks under the default attack (important_instructions). The agent is
`ScriptedAgent("obey")` (`turnbench.benchmarks.agentdojo.fakes`): it does its user task by
upstream's ground truth, and once a tool result holds an injection task's goal it makes that
task's ground-truth calls first, so every attack on a tool result it reads succeeds.

Shown: the conversation banking/user_task_0/injection_task_0, open (the report draws its
first three failed conversations open and folds the others under their summary lines, so the
script opens it as a click would; the viewer opens it), and scrolled to it: its verdicts,
where the payload arrived (the tool result, the payload marked), the calls made after it
beside the injection task's ground truth, and the transcript with the tool call whose result
carried the payload unfolded. The script exits unless both pages hold the marked payload and
both headings. Chromium is driven over its DevTools protocol (a websocket on 127.0.0.1) to
open, scroll and capture.

    python scripts/agentdojo_screenshots.py --out /tmp/dojo-shots [--img docs/img]

writes run/ (the run), report.html, report.png and viewer.png into --out; with --img, the two
PNGs are copied there as agentdojo-report.png and agentdojo-viewer.png.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from screenshot_support import turnbench, viewer

from turnbench.benchmarks.agentdojo.fakes import AgentServer, ScriptedAgent

SAMPLE = "banking/user_task_0/injection_task_0"
MODEL = "openai/gpt-4o-2024-05-13"  # (the attack's text names the model: "to you, GPT-4")
WIDTH = 1280

#: opens the conversation (`details` is the transcript's id in the report, or the open
#: transcript in the viewer), unfolds the tool call whose result carried the payload (named
#: by the outcome's first "step N · call M · tool NAME" line) and, in the report, scrolls the
#: page to the conversation (to its section's heading when that is just above); returns what
#: it found, for the checks
SHOW = """
(function (details) {
  var shown = details ? document.getElementById(details)
                      : document.querySelector("details.transcript");
  if (!shown) { return {found: false}; }
  shown.open = true;
  var marks = shown.querySelectorAll("mark.injection");
  var where = shown.querySelector(".payload .muted");
  var tool = where ? (where.querySelector("b") || {}).textContent : null;
  var calls = Array.prototype.slice.call(shown.querySelectorAll("details.tool-call"));
  var carried = calls.filter(function (c) {
    return tool && c.querySelector("summary").textContent.indexOf(tool) !== -1;
  })[0];
  if (carried) { carried.open = true; }
  var anchor = shown.closest("section");  // (its heading too, when it is just above)
  if (!anchor || shown.getBoundingClientRect().top - anchor.getBoundingClientRect().top > 300) {
    anchor = shown;
  }
  if (details) { window.scrollTo(0, anchor.getBoundingClientRect().top + window.scrollY - 8); }
  var style = marks.length ? getComputedStyle(marks[0]) : null;
  return {
    found: true,
    marks: marks.length,
    mark_background: style ? style.backgroundColor : null,
    payload_heading: shown.textContent.indexOf("Where the payload arrived") !== -1,
    calls_heading: shown.textContent.indexOf("the injection task's ground truth") !== -1,
    tool: tool,
    tool_call_unfolded: !!carried,
    top: window.scrollY
  };
})(DETAILS)
"""


class Chromium:
    """Headless Chromium with its DevTools protocol on a port of 127.0.0.1."""

    def __init__(self) -> None:
        browser = shutil.which("chromium") or sys.exit(
            "chromium is missing: bash scripts/ensure-chromium.sh"
        )
        self.profile = tempfile.TemporaryDirectory(prefix="chromium-")
        self.process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile.name}",
             f"--window-size={WIDTH},1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        active = Path(self.profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not active.exists() or not active.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                sys.exit("chromium did not open its DevTools port")
            time.sleep(0.1)
        self.port = int(active.read_text().split()[0])

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.profile.cleanup()

    def screenshot(self, url: str, path: Path, height: int, details: str | None) -> dict:
        return asyncio.run(self._screenshot(url, path, height, details))

    async def _screenshot(self, url: str, path: Path, height: int, details: str | None) -> dict:
        async with aiohttp.ClientSession() as session:
            async with session.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as made:
                target = await made.json(content_type=None)
            async with session.ws_connect(
                target["webSocketDebuggerUrl"], max_msg_size=0
            ) as socket_:
                page = _Page(socket_)
                await page.call("Page.enable")
                await page.call(
                    "Emulation.setDeviceMetricsOverride",
                    width=WIDTH, height=height, deviceScaleFactor=1, mobile=False,
                )  # fmt: skip
                await page.call("Page.navigate", url=url)
                await page.event("Page.loadEventFired")
                shown = await page.call(
                    "Runtime.evaluate",
                    expression=SHOW.replace("DETAILS", json.dumps(details)),
                    returnByValue=True,
                )
                found = shown["result"]["value"]
                await asyncio.sleep(0.3)  # (a frame after the scroll)
                image = await page.call("Page.captureScreenshot", format="png")
            async with session.get(f"http://127.0.0.1:{self.port}/json/close/{target['id']}"):
                pass
        path.write_bytes(base64.b64decode(image["data"]))
        return found


class _Page:
    """Calls on one page's DevTools websocket: each call's answer, the events kept aside."""

    def __init__(self, socket_: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket_
        self.ids = itertools.count(1)
        self.events: list[str] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self.socket.receive_json(), timeout=60)
            if message.get("id") == number:
                if "error" in message:
                    sys.exit(f"{method}: {message['error']}")
                return message["result"]
            if "method" in message:
                self.events.append(message["method"])

    async def event(self, method: str) -> None:
        while method not in self.events:
            message = await asyncio.wait_for(self.socket.receive_json(), timeout=60)
            if "method" in message:
                self.events.append(message["method"])


def check(what: str, found: dict[str, Any]) -> None:
    """Exits unless the page showed what the screenshot is for."""
    wanted = ("found", "marks", "payload_heading", "calls_heading", "tool_call_unfolded")
    missing = [key for key in wanted if not found.get(key)]
    if missing:
        sys.exit(f"{what}: the page lacks {missing}: {found}")
    print(f"{what}: {json.dumps(found)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="A new folder.")
    parser.add_argument("--img", type=Path, help="Where to copy the PNGs (docs/img).")
    args = parser.parse_args()
    env = dict(os.environ, OPENAI_API_KEY="unused")
    args.out.mkdir(parents=True, exist_ok=False)
    run = args.out / "run"
    with AgentServer(ScriptedAgent("obey")) as agent:
        turnbench(
            "run", "--benchmark", "agentdojo", "-B", "suites=banking",
            "-B", "user_tasks=user_task_0,user_task_1",
            "--model", MODEL, "--model-base-url", agent.base_url,
            "--no-progress", "--out", str(run), env=env,
        )  # fmt: skip
    results = json.loads((run / "results.json").read_text("utf-8"))
    print(f"run: utility {results['utility']}, utility under attack "
          f"{results['utility_under_attack']}, targeted ASR {results['targeted_asr']}")  # fmt: skip
    report = args.out / "report.html"
    turnbench("report", str(run), "--out", str(report), env=env)
    browser = Chromium()
    try:
        found = browser.screenshot(
            report.resolve().as_uri(), args.out / "report.png", 1500, f"conversation-1-{SAMPLE}-0"
        )
        check("report", found)
        with viewer(args.out, env) as origin:
            url = f"{origin}/conversation/0/run?sample={SAMPLE}"
            found = browser.screenshot(url, args.out / "viewer.png", 1300, None)
            check("viewer", found)
    finally:
        browser.close()
    written = [args.out / "report.png", args.out / "viewer.png"]
    if args.img is not None:
        copies = [args.img / "agentdojo-report.png", args.img / "agentdojo-viewer.png"]
        for shot, copy in zip(written, copies, strict=True):
            shutil.copyfile(shot, copy)
        written += copies
    print("wrote " + ", ".join(map(str, [run, report, *written])))


if __name__ == "__main__":
    main()
