// turnbench view: the runs page's filter, sort, comparison pick and live updates (SSE).
// Every text from the server is set with textContent: nothing received becomes markup.
(function () {
  "use strict";
  var table = document.getElementById("runs");
  if (!table) { return; }
  var body = table.tBodies[0];
  var filter = document.getElementById("filter");
  var stateFilter = document.getElementById("state-filter");
  var compare = document.getElementById("compare");
  var live = document.getElementById("live");

  function applyFilter() {
    var words = (filter.value || "").toLowerCase().split(/\s+/).filter(Boolean);
    var state = stateFilter.value;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = [row.dataset.path, row.dataset.benchmark, row.dataset.model, row.dataset.judge]
        .join(" ").toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !(ok && (!state || row.dataset.state === state));
    });
  }
  filter.addEventListener("input", applyFilter);
  stateFilter.addEventListener("change", applyFilter);

  var sortKey = null, sortDir = 1;
  var numeric = { overall: true, cost: true, progress: true };
  function sortRows() {
    if (!sortKey) { return; }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.dataset[sortKey] || "", y = b.dataset[sortKey] || "";
      if (numeric[sortKey]) {
        var nx = x === "" ? -Infinity : Number(x), ny = y === "" ? -Infinity : Number(y);
        return (nx - ny) * sortDir;
      }
      return x.localeCompare(y) * sortDir;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(table.tHead.querySelectorAll("th.sortable"), function (th) {
    th.addEventListener("click", function () {
      var key = th.dataset.key;
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      Array.prototype.forEach.call(table.tHead.querySelectorAll("th"), function (h) {
        h.classList.remove("sorted-asc", "sorted-desc");
      });
      th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
      sortRows();
    });
  });

  function picked() {
    return Array.prototype.filter.call(body.rows, function (row) {
      return row.querySelector("input.pick").checked;
    });
  }
  body.addEventListener("change", function () { compare.disabled = picked().length !== 2; });
  compare.addEventListener("click", function () {
    var rows = picked();
    if (rows.length !== 2) { return; }
    var query = new URLSearchParams({
      a_root: rows[0].dataset.root, a: rows[0].dataset.path,
      b_root: rows[1].dataset.root, b: rows[1].dataset.path
    });
    window.location.href = "/compare?" + query.toString();
  });

  function number(value, digits) {
    return typeof value === "number" ? value.toFixed(digits) : "–";
  }
  function progress(run) {
    var c = run.counts || {};
    var text = c.logged_answers + " · " + c.logged_judgments;
    if (c.expected) { text += " / " + c.expected; }
    if (c.open_failures) { text += " · " + c.open_failures + " failing"; }
    return text;
  }
  function update(runs) {
    var byId = {};
    Array.prototype.forEach.call(body.rows, function (row) { byId[row.dataset.id] = row; });
    var unknown = false;
    runs.forEach(function (run) {
      var row = byId[run.root + "/" + run.path];
      if (!row) { unknown = true; return; }
      // a run of several models has no overall of its own: its best model's is shown
      var shown = typeof run.overall !== "number" && run.best ? run.best : run;
      var cells = {
        state: run.state,
        progress: progress(run),
        overall: number(shown.overall, 2),
        best: shown === run ? "" : "best of " + Object.keys(run.overalls || {}).length + ": " + run.best.model,
        interval: Array.isArray(shown.overall_ci95) && shown.overall_ci95.length === 2 &&
          typeof shown.overall_ci95[0] === "number"
          ? "[" + shown.overall_ci95[0].toFixed(2) + ", " + shown.overall_ci95[1].toFixed(2) + "]" : "–",
        started: run.started_at || "–",
        cost: typeof run.cost_usd === "number" ? "$" + run.cost_usd.toFixed(4) : "–"
      };
      var changed = false;
      Object.keys(cells).forEach(function (name) {
        var cell = row.querySelector('[data-field="' + name + '"]');
        if (cell && cell.textContent !== cells[name]) { cell.textContent = cells[name]; changed = true; }
      });
      var badge = row.querySelector(".badge.state");
      badge.className = "badge state " + run.state;
      row.dataset.state = run.state;
      row.dataset.overall = typeof shown.overall === "number" ? String(shown.overall) : "";
      row.dataset.progress = String((run.counts || {}).logged_judgments || 0);
      row.dataset.cost = typeof run.cost_usd === "number" ? String(run.cost_usd) : "";
      if (changed) { row.classList.add("changed"); setTimeout(function () { row.classList.remove("changed"); }, 1200); }
    });
    if (unknown) { window.location.reload(); return; }
    applyFilter();
    sortRows();
  }

  if (window.EventSource) {
    var source = new EventSource("/api/events");
    source.addEventListener("open", function () { live.textContent = "live"; });
    source.addEventListener("error", function () { live.textContent = "reconnecting"; });
    source.addEventListener("runs", function (event) {
      live.textContent = "live";
      update(JSON.parse(event.data));
    });
  }
})();
