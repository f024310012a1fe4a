// turnbench annotate page: every text from the server is shown with textContent, never as HTML.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const kind = document.querySelector('meta[name="annotate-kind"]').content;
  const $ = (id) => document.getElementById(id);
  let annotator = "";
  let current = null;
  let skipped = [];
  let busy = false;
  let loads = 0;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function status(text, bad) {
    const box = $("status");
    box.textContent = text;
    box.className = bad ? "status bad" : "status";
  }

  function showProgress(p) {
    $("progress").textContent =
      "your votes: " + p.yours + " · items with " + p.overlap + " votes: " + p.complete +
      " of " + p.items + " · waiting for you: " + p.open_for_you;
  }

  async function call(method, url, body) {
    const options = { method: method, headers: {}, credentials: "same-origin" };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = csrf;
      options.body = JSON.stringify(body);
    }
    const response = await fetch(url, options);
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      throw new Error((data && data.error) || ("HTTP " + response.status));
    }
    return data;
  }

  function conversation(side, label) {
    const box = el("div", "answer");
    box.appendChild(el("div", "who", label));
    side.earlier.forEach(function (pair, index) {
      const turn = el("details", "more");
      turn.appendChild(el("summary", null, "earlier turn " + (index + 1) + " (question and this answer's reply)"));
      turn.appendChild(el("div", "question", pair.user));
      turn.appendChild(el("div", "text", pair.assistant));
      box.appendChild(turn);
    });
    box.appendChild(el("div", "text", side.answer));
    return box;
  }

  function button(label, key, action) {
    const b = el("button", "vote", label);
    b.type = "button";
    b.dataset.key = key;
    b.addEventListener("click", action);
    return b;
  }

  function render(item) {
    current = item;
    $("done").hidden = item !== null;
    $("item").hidden = item === null;
    loads += 1;
    $("item").dataset.key = item === null ? "" : item.key;
    $("item").dataset.loads = String(loads);  // how many items were shown (tests wait on it)
    if (item === null) return;
    $("where").textContent =
      "sample " + item.sample_id + (item.group ? " (" + item.group + ")" : "") + ", turn " + item.turn;
    $("question").textContent = item.question;
    $("reference-box").hidden = !item.reference;
    $("reference").textContent = item.reference || "";
    const answers = $("answers");
    answers.replaceChildren();
    const labels = item.sides.length === 2 ? ["Left answer (1 / a)", "Right answer (2 / b)"] : ["Answer"];
    item.sides.forEach(function (side, i) { answers.appendChild(conversation(side, labels[i])); });
    const controls = $("controls");
    controls.replaceChildren();
    if (kind === "pairwise") {
      controls.appendChild(button("Left is better", "1", function () { vote({ choice: "left" }); }));
      controls.appendChild(button("Right is better", "2", function () { vote({ choice: "right" }); }));
      controls.appendChild(button("Tie", "3", function () { vote({ choice: "tie" }); }));
    } else {
      for (let s = 1; s <= 10; s++) {
        controls.appendChild(button(String(s), String(s % 10), function () { vote({ score: s }); }));
      }
    }
    controls.appendChild(button("Skip →", "ArrowRight", skip));
    controls.appendChild(button("Undo ←", "ArrowLeft", undo));
    window.scrollTo(0, 0);
  }

  async function load(wanted) {
    let url = "/api/annotate/next?annotator=" + encodeURIComponent(annotator);
    if (skipped.length) url += "&skip=" + encodeURIComponent(skipped.join(","));
    if (wanted) url += "&item=" + encodeURIComponent(wanted);
    const data = await call("GET", url);
    showProgress(data.progress);
    render(data.item);
  }

  async function guarded(work) {
    if (busy || !annotator) return;
    busy = true;
    try { await work(); } catch (error) { status(String(error.message || error), true); }
    finally { busy = false; }
  }

  function vote(choice) {
    guarded(async function () {
      if (current === null) return;
      const body = Object.assign({ annotator: annotator, item: current.key }, choice);
      const data = await call("POST", "/api/votes", body);
      status("saved vote #" + data.id, false);
      await load(null);
    });
  }

  function skip() {
    guarded(async function () {
      if (current === null) return;
      skipped.push(current.key);
      status("skipped", false);
      await load(null);
    });
  }

  function undo() {
    guarded(async function () {
      const data = await call("POST", "/api/votes/undo", { annotator: annotator });
      if (data.undone === null) { status("nothing to undo", false); return; }
      skipped = skipped.filter(function (key) { return key !== data.undone; });
      status("undone", false);
      await load(data.undone);
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.target instanceof HTMLInputElement || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!annotator || current === null && event.key !== "Backspace" && event.key !== "ArrowLeft") return;
    const key = event.key.toLowerCase();
    let handled = true;
    if (key === "arrowright") skip();
    else if (key === "arrowleft" || key === "backspace") undo();
    else if (kind === "pairwise" && (key === "1" || key === "a")) vote({ choice: "left" });
    else if (kind === "pairwise" && (key === "2" || key === "b")) vote({ choice: "right" });
    else if (kind === "pairwise" && (key === "3" || key === "t")) vote({ choice: "tie" });
    else if (kind === "single" && /^[0-9]$/.test(key)) vote({ score: key === "0" ? 10 : Number(key) });
    else handled = false;
    if (handled) event.preventDefault();
  });

  $("who").addEventListener("submit", function (event) {
    event.preventDefault();
    const name = $("annotator").value.trim();
    if (!name) { status("enter your name first", true); return; }
    annotator = name;
    try { localStorage.setItem("turnbench-annotator", name); } catch (e) { /* private mode */ }
    $("annotator").blur();
    skipped = [];
    guarded(function () { return load(null); });
  });

  let remembered = "";
  try { remembered = localStorage.getItem("turnbench-annotator") || ""; } catch (e) { remembered = ""; }
  if (remembered) {
    $("annotator").value = remembered;
    annotator = remembered;
    guarded(function () { return load(null); });
  }
})();
