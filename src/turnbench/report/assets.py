"""The report's fixed style sheet, filter script and page frame.

The page carries a Content-Security-Policy that allows exactly one script, this file's
SCRIPT (by its sha256), and images only from `data:` URIs. Escaping keeps untrusted text
inert; the policy is a second lock: even markup that slipped through could not run.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from markupsafe import Markup

from turnbench.report.templating import render

STYLE = """
:root { --fg:#1d1d1f; --muted:#6b6b70; --line:#e2e2e6; --bg:#fafafb; --card:#fff;
        --good:#2e7d32; --bad:#c62828; --warn:#b26a00; --accent:#1f5fbf; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
       color:var(--fg); background:var(--bg); }
header.top { padding:18px 28px 10px; background:var(--card); border-bottom:1px solid var(--line); }
header.top h1 { margin:0 0 4px; font-size:22px; }
nav.toc { margin-top:8px; display:flex; flex-wrap:wrap; gap:6px 14px; font-size:13px; }
nav.toc a { color:var(--accent); text-decoration:none; }
main { padding:8px 28px 40px; max-width:1500px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px;
          padding:14px 18px; margin:16px 0; }
section h2 { margin:0 0 10px; font-size:18px; }
section h3 { margin:16px 0 8px; font-size:15px; }
.muted { color:var(--muted); }
.small { font-size:12px; }
table { border-collapse:collapse; margin:6px 0 10px; font-size:13px; }
th, td { border-bottom:1px solid var(--line); padding:4px 10px; text-align:right;
         vertical-align:top; white-space:nowrap; }
th { background:#f3f3f6; font-weight:600; }
th:first-child, td:first-child, td.text, th.text { text-align:left; }
td.wrap { white-space:normal; min-width:170px; max-width:460px; overflow-wrap:anywhere; }
.scroll { overflow-x:auto; }
.charts { display:flex; flex-wrap:wrap; gap:14px; align-items:flex-start; }
.charts figure { margin:0; }
.charts img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px;
              background:#fff; }
.badge { display:inline-block; padding:1px 7px; border-radius:10px; font-size:12px;
         font-weight:600; background:#eee; white-space:nowrap; }
.better { background:#e3f3e4; color:var(--good); }
.worse { background:#fbe5e5; color:var(--bad); }
.no_change { background:#eeeeef; color:#555; }
.insufficient_data { background:#fff4d6; color:#7a5b00; }
.fail { background:#fdecd6; color:var(--warn); }
.ok { background:#e3f3e4; color:var(--good); }
.simulated { background:#e8eefc; color:#2a4a8a; white-space:normal; }
.warnings { border-color:#f1c27d; background:#fffaf1; }
.warnings li { white-space:pre-wrap; }
.filters { display:flex; flex-wrap:wrap; gap:10px 18px; align-items:center;
           padding:8px 0 12px; position:sticky; top:0; background:var(--card); z-index:2; }
.filters label { font-size:13px; }
.filters input[type=number] { width:70px; }
.filters input[type=search] { width:220px; }
details.sample { border:1px solid var(--line); border-radius:6px; margin:6px 0;
                 background:#fcfcfd; }
details.sample > summary { cursor:pointer; padding:6px 10px; list-style-position:inside; }
details.sample[open] > summary { border-bottom:1px solid var(--line); background:#f3f5fa; }
.sample-body { padding:8px 12px; }
.turn { margin:8px 0 14px; }
.turn h4 { margin:4px 0; font-size:13px; color:var(--muted); }
.question { white-space:pre-wrap; overflow-wrap:anywhere; background:#eef3fb;
            border-left:3px solid var(--accent); padding:6px 10px; border-radius:4px; }
.golden { white-space:pre-wrap; overflow-wrap:anywhere; background:#f4f4f4;
          padding:6px 10px; border-radius:4px; }
.answers { display:grid; gap:10px; margin-top:8px;
           grid-template-columns:repeat(auto-fit, minmax(320px, 1fr)); }
.answer { border:1px solid var(--line); border-radius:6px; padding:6px 9px; background:#fff;
          min-width:0; }
.answer .who { font-weight:600; font-size:12px; color:var(--muted); display:flex;
               justify-content:space-between; gap:8px; }
.answer .text { white-space:pre-wrap; overflow-wrap:anywhere; margin:6px 0;
                max-height:420px; overflow:auto; }
.judge pre, pre.raw { white-space:pre-wrap; overflow-wrap:anywhere; background:#f7f7f9;
                      padding:6px 8px; border-radius:4px; margin:4px 0; font-size:12px; }
.judge summary { cursor:pointer; font-size:12px; color:var(--accent); }
.long { word-break:break-all; }
details.more > summary { cursor:pointer; font-size:12px; color:var(--accent); margin:2px 0; }
.score { font-weight:700; }
details.transcript { border:1px solid var(--line); border-radius:6px; margin:6px 0;
                     background:#fcfcfd; padding:0 12px; }
details.transcript > summary { cursor:pointer; padding:6px 0; }
.lines { padding:4px 0 10px; }
.line { margin:6px 0; }
.answer-text { white-space:pre-wrap; overflow-wrap:anywhere; padding:4px 8px; border-radius:4px; }
.line.user .answer-text { background:#eef3fb; border-left:3px solid var(--accent); }
.line.agent .answer-text { border:1px solid var(--line); background:#fff; }
details.tool-call { border-left:3px solid #c9c9d1; margin:6px 0; padding:2px 8px; }
details.tool-call > summary { cursor:pointer; }
details.system-message > summary { cursor:pointer; }
mark.injection { background:#ffe08a; color:inherit; outline:1px solid #d4a000;
                 border-radius:2px; padding:0 2px; }
"""

SCRIPT = """
(function () {
  "use strict";
  function number(input, fallback) {
    var value = parseFloat(input.value);
    return isNaN(value) ? fallback : value;
  }
  document.querySelectorAll(".browser").forEach(function (browser) {
    var group = browser.querySelector(".f-group");
    var low = browser.querySelector(".f-min");
    var high = browser.querySelector(".f-max");
    var failed = browser.querySelector(".f-failed");
    var search = browser.querySelector(".f-search");
    var count = browser.querySelector(".f-count");
    var samples = Array.prototype.slice.call(browser.querySelectorAll(".sample"));
    function apply() {
      var lo = number(low, -Infinity), hi = number(high, Infinity);
      var ranged = low.value !== "" || high.value !== "";
      var needle = search.value.trim().toLowerCase();
      var shown = 0;
      samples.forEach(function (sample) {
        var ok = !group.value || sample.getAttribute("data-group") === group.value;
        if (ok && ranged) {
          var scores = (sample.getAttribute("data-scores") || "").split(" ")
            .filter(function (s) { return s !== ""; }).map(Number);
          ok = scores.some(function (s) { return s >= lo && s <= hi; });
        }
        if (ok && failed.checked) { ok = sample.getAttribute("data-failed") === "1"; }
        if (ok && needle) { ok = sample.textContent.toLowerCase().indexOf(needle) !== -1; }
        sample.hidden = !ok;
        if (ok) { shown += 1; }
      });
      count.textContent = shown + " of " + samples.length + " shown";
    }
    [group, low, high, failed, search].forEach(function (el) {
      el.addEventListener("input", apply);
      el.addEventListener("change", apply);
    });
    browser.querySelector(".f-open").addEventListener("click", function () {
      samples.forEach(function (s) { if (!s.hidden) { s.open = true; } });
    });
    browser.querySelector(".f-close").addEventListener("click", function () {
      samples.forEach(function (s) { s.open = false; });
    });
    apply();
  });
  if (location.hash) {
    var target = document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }
  document.querySelectorAll("a.to-sample").forEach(function (link) {
    link.addEventListener("click", function () {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (target) { target.hidden = false; target.open = true; }
    });
  });
})();
"""


@functools.cache
def script_hash() -> str:
    digest = hashlib.sha256(SCRIPT.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def policy() -> str:
    """The page's Content-Security-Policy: its own script by hash, images from data: URIs."""
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src '{script_hash()}'; base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: Markup) -> Markup:
    """The whole document (`page.html`) around `body`, markup a template rendered. The style,
    the script and the policy are this module's constants, so they go in as markup."""
    return render(
        "page.html",
        title=title,
        body=body,
        policy=Markup(policy()),  # (fixed text and a base64 hash)
        style=Markup(STYLE),  # (this module's constant)
        script=Markup(SCRIPT),  # (this module's constant, allowed by its hash)
    )
