"""`turnbench report`, `compare` and `export` through the real CLI, on runs made against the
fake server (one of them with hostile answers and judge replies)."""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli, shared_data_dir
from turnbench.benchmarks import builtin_benchmarks
from turnbench.testing.fake_server import FakeServer, Reply, default_content

HOSTILE = (
    '<script>document.title="pwned";window.__pwned=1</script>'
    "<img src=x onerror=\"window.__pwned=2;document.title='pwned'\">"
    "</textarea></pre></details><b>bold?</b> & done"
)
HOSTILE_JUDGE = 'Refusing. <script>window.__pwned=3</script><img src=y onerror="window.__pwned=4">'
MARKER = "HOSTILE-ANSWER"
JUDGE_MODEL = "judge-model"
has_mt_bench_101 = pytest.mark.skipif(
    "mt-bench-101" not in builtin_benchmarks(), reason="MT-Bench-101 is not registered yet"
)


def hostile_responder(request: dict) -> Reply | str:
    """Question 81 gets a hostile answer; its first judge reply is hostile and unparseable
    (then re-asked); question 91's judge never gives a rating (a final parse failure)."""
    messages = request["messages"]
    if request["model"] == JUDGE_MODEL:
        prompt = messages[1]["content"]
        if "Pretend yourself to be Elon Musk" in prompt:
            return "I cannot rate this."
        if MARKER in prompt and len(messages) == 2:
            return HOSTILE_JUDGE
        return default_content(request)
    last = messages[-1]["content"]
    if last.startswith("Compose an engaging travel blog post"):
        return f"{MARKER} {HOSTILE}"
    return default_content(request)


def fixed_rating(rating: int) -> Callable[[dict], str]:
    def responder(request: dict) -> str:
        if request["model"] == JUDGE_MODEL:
            return f"Fixed. Rating: [[{rating}]]"
        return default_content(request)

    return responder


def make_run(
    out: Path,
    env: dict[str, str],
    responder: Callable[[dict], Reply | str] | None = None,
    *,
    benchmark: str = "mt-bench",
    model: str = "openai/model-under-test",
    judge: str = f"openai/{JUDGE_MODEL}",
) -> Path:
    with FakeServer(responder=responder) as server:
        done = run_cli(
            [
                "run",
                "--benchmark",
                benchmark,
                "--model",
                model,
                "--model-base-url",
                server.base_url,
                "--judge",
                judge,
                "--judge-base-url",
                server.base_url,
                "--out",
                str(out),
                "--limit",
                "1",
                "--no-progress",
            ],
            env,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def make_judged(out: Path, env: dict[str, str], answers: Path, *extra: str) -> Path:
    with FakeServer() as server:
        done = run_cli(
            [
                "judge",
                "--answers",
                str(answers),
                "--judge",
                f"openai/{JUDGE_MODEL}",
                "--judge-base-url",
                server.base_url,
                "--out",
                str(out),
                "--limit",
                "1",
                "--no-progress",
                *extra,
            ],
            env,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Runs shared by the tests of this module (each costs a couple of seconds)."""
    root = tmp_path_factory.mktemp("runs")
    env = cli_env(shared_data_dir(), root)
    made = {
        "hostile": make_run(root / "hostile", env, hostile_responder),
        "eight": make_run(root / "eight", env, fixed_rating(8)),
        "five": make_run(root / "five", env, fixed_rating(5)),
        "judged": make_judged(root / "judged", env, shared_data_dir() / "mt_bench/model_answer"),
    }
    return made


@pytest.fixture
def report_env(tmp_path) -> dict[str, str]:
    return cli_env(shared_data_dir(), tmp_path)


def test_report_escapes_answers_and_judge_replies(runs, report_env, tmp_path):
    out = tmp_path / "report.html"
    done = run_cli(["report", str(runs["hostile"]), "--out", str(out)], report_env)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert page.count("<script") == 1  # only the report's own filter script
    assert "<img src=x" not in page and "<img src=y" not in page
    assert page.count("</textarea>") == 0 and "<b>bold?</b>" not in page
    assert "&lt;script&gt;document.title=&#34;pwned&#34;" in page  # shown as text
    assert "&lt;img src=x onerror=" in page and "&lt;/textarea&gt;" in page
    assert "Refusing. &lt;script&gt;window.__pwned=3" in page  # the raw judge reply
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "script-src 'sha256-" in policy.group(1)
    assert "default-src 'none'" in policy.group(1)
    # nothing is fetched from the network: every image is an inline data URI
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert sources and all(s.startswith("data:image/svg+xml;base64,") for s in sources)


def test_report_shows_summary_charts_comparison_diagnostics_and_dialogues(
    runs, report_env, tmp_path
):
    out = tmp_path / "report.html"
    done = run_cli(
        ["report", str(runs["eight"]), str(runs["five"]), str(runs["hostile"]), "-o", str(out)],
        report_env,
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert 'id="summary"' in page and page.count("openai/model-under-test") >= 3
    assert "<b>8.00</b>" in page and "<b>5.00</b>" in page  # the overall scores
    assert page.count('<img src="data:image/svg+xml;base64,') >= 4
    assert 'id="compare-mt-bench"' in page
    assert "eight: openai/model-under-test → five: openai/model-under-test" in page
    assert "delta -3.000" in page
    # the judge diagnostics list question 91's unparseable judgments (both turns)
    diagnostics = page.split('id="judge"')[1].split("</section>")[0]
    assert diagnostics.count("#91</a>") == 2 and "Failed judgments" in diagnostics
    # one closed <details> per question, each turn's question text from the log
    assert page.count('<details class="sample"') == 8
    assert "Compose an engaging travel blog post" in page


def test_report_of_a_judge_only_run_lists_every_model(runs, report_env, tmp_path):
    out = tmp_path / "r.html"
    done = run_cli(["report", str(runs["judged"]), "--out", str(out)], report_env)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "judged: alpaca-13b" in page and "judged: vicuna-13b-v1.3" in page
    # imported answers carry no messages: the questions come from the data files
    assert "Compose an engaging travel blog post" in page


def test_report_rejects_a_folder_that_is_not_a_run(report_env, tmp_path):
    done = run_cli(["report", str(tmp_path), "--out", str(tmp_path / "r.html")], report_env)
    assert done.returncode == 2
    assert "no results.json" in done.stderr and "Traceback" not in done.stderr


def compare_json(base: Path, new: Path, env: dict[str, str], *extra: str) -> tuple[int, dict]:
    done = run_cli(["compare", str(base), str(new), "--json", *extra], env)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def test_compare_json_and_the_ci_gate(runs, report_env):
    code, result = compare_json(runs["eight"], runs["five"], report_env)
    assert code == 0
    assert result["overall"] == {
        "base": 8.0,
        "new": 5.0,
        "delta": -3.0,
        "ci_low": -3.0,
        "ci_high": -3.0,
        "verdict": "worse",
    }
    assert result["paired"] == 8
    assert [row["category"] for row in result["rows"]][:2] == ["writing", "roleplay"]
    # one question per category (--limit 1): too few for a verdict, per category
    assert all(
        (r["n"], r["delta"], r["ci_low"], r["verdict"]) == (1, -3.0, None, "insufficient_data")
        for r in result["rows"]
    )
    # --fail-if-worse D exits 1 exactly when ci_high < -D
    assert compare_json(runs["eight"], runs["five"], report_env, "--fail-if-worse", "2")[0] == 1
    assert compare_json(runs["eight"], runs["five"], report_env, "--fail-if-worse", "3")[0] == 0
    assert compare_json(runs["eight"], runs["five"], report_env, "--fail-if-worse", "3.5")[0] == 0
    # the other way round it is better, and the gate never fires
    code, result = compare_json(runs["five"], runs["eight"], report_env, "--fail-if-worse", "0")
    assert code == 0 and result["overall"]["verdict"] == "better"


def test_compare_table_output(runs, report_env):
    done = run_cli(["compare", str(runs["eight"]), str(runs["five"])], report_env)
    assert done.returncode == 0, done.stderr
    assert "overall" in done.stdout and "worse" in done.stdout and "-3.00" in done.stdout


def test_compare_warns_and_strict_refuses_when_judges_differ(runs, report_env, tmp_path):
    other = make_run(
        tmp_path / "other-judge", report_env, fixed_rating(5), judge="openai/other-judge"
    )
    done = run_cli(["compare", str(runs["eight"]), str(other), "--json"], report_env)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr and "judge" in done.stderr
    assert json.loads(done.stdout)["differences"]
    strict = run_cli(["compare", str(runs["eight"]), str(other), "--strict"], report_env)
    assert strict.returncode == 2
    assert "--strict" in strict.stderr and "Traceback" not in strict.stderr


def test_compare_picks_models_of_a_judge_only_run(runs, report_env):
    done = run_cli(["compare", str(runs["judged"]), str(runs["judged"])], report_env)
    assert done.returncode == 2 and "--base-model" in done.stderr
    code, result = compare_json(
        runs["judged"],
        runs["judged"],
        report_env,
        "--base-model",
        "alpaca-13b",
        "--new-model",
        "vicuna-13b-v1.3",
    )
    assert code == 0 and result["new"]["model"] == "vicuna-13b-v1.3"
    assert result["overall"]["delta"] == pytest.approx(
        result["overall"]["new"] - result["overall"]["base"]
    )


def test_export_csv_and_jsonl(runs, report_env, tmp_path):
    target = tmp_path / "j.csv"
    done = run_cli(
        ["export", str(runs["hostile"]), "--format", "csv", "--out", str(target)], report_env
    )
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert len(rows) == 16
    assert {r["status"] for r in rows} == {"scored", "parse_failed"}
    assert sum(r["status"] == "parse_failed" for r in rows) == 2  # question 91, both turns
    done = run_cli(["export", str(runs["hostile"]), "--format", "jsonl", "--out", "-"], report_env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    hostile = next(r for r in lines if r["sample_id"] == 81 and r["turn"] == 1)
    assert hostile["answer"] == f"{MARKER} {HOSTILE}"
    assert hostile["judge_outputs"][0] == HOSTILE_JUDGE and hostile["reasks"] == 1


def test_export_fastchat_round_trips_through_turnbench_judge(runs, report_env, tmp_path):
    folder = tmp_path / "fastchat"
    done = run_cli(
        ["export", str(runs["hostile"]), "--format", "fastchat", "--out", str(folder)], report_env
    )
    assert done.returncode == 0, done.stderr
    answer_file = folder / "model_answer" / "model-under-test.jsonl"
    judgment_file = folder / "model_judgment" / f"{JUDGE_MODEL}_single.jsonl"
    judged = [json.loads(line) for line in judgment_file.read_text().splitlines()]
    assert len(judged) == 16 and sum(j["score"] == -1 for j in judged) == 2
    # the exported answers are readable by `turnbench judge --answers` (FastChat's format)
    again = make_judged(tmp_path / "rejudged", report_env, folder / "model_answer")
    results = json.loads((again / "results.json").read_text())
    assert list(results["models"]) == ["model-under-test"]
    assert results["models"]["model-under-test"]["counts"]["judged"] == 16
    original = {
        (r["sample_id"], r["turn"]): r["text"]
        for r in map(json.loads, (runs["hostile"] / "log.jsonl").read_text().splitlines())
        if r["kind"] == "answer"
    }
    imported = {
        (r["sample_id"], r["turn"]): r["text"]
        for r in map(json.loads, (again / "log.jsonl").read_text().splitlines())
        if r["kind"] == "answer"
    }
    assert imported == original
    assert answer_file.exists()


@has_mt_bench_101
def test_mt_bench_101_report_compare_and_export(report_env, tmp_path):
    base = make_run(tmp_path / "a", report_env, fixed_rating(8), benchmark="mt-bench-101")
    new = make_run(tmp_path / "b", report_env, fixed_rating(6), benchmark="mt-bench-101")
    out = tmp_path / "r.html"
    done = run_cli(["report", str(base), str(new), "--out", str(out)], report_env)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert 'id="scores-mt-bench-101"' in page and "Turn-wise scores" in page
    assert "Perceptivity" in page and "Proactive Interaction" in page
    assert page.count('<details class="sample"') == 13  # one dialogue of each task
    assert "context only: not answered or judged" in page  # skip-first tasks' turn 1
    code, result = compare_json(base, new, report_env, "--fail-if-worse", "1")
    assert code == 1
    assert result["overall"]["delta"] == pytest.approx(-2.0)
    assert len(result["rows"]) == 13 and {"task", "n"} <= set(result["rows"][0])
    done = run_cli(["export", str(base), "--format", "jsonl", "--out", "-"], report_env)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and all(r["task"] for r in rows)
    refused = run_cli(["export", str(base), "--format", "fastchat"], report_env)
    assert refused.returncode == 2 and "only for MT-Bench" in refused.stderr


def test_report_without_data_files_still_works_from_the_log(runs, tmp_path):
    env = cli_env(shared_data_dir(), tmp_path, TURNBENCH_DATA_DIR=str(tmp_path / "empty"))
    out = tmp_path / "r.html"
    done = run_cli(["report", str(runs["hostile"]), str(runs["judged"]), "-o", str(out)], env)
    assert done.returncode == 0, done.stderr
    assert "dialogue text from the run logs only" in done.stderr
    page = out.read_text(encoding="utf-8")
    assert "Compose an engaging travel blog post" in page  # from the generated run's log
    assert "dialogue text from the run logs only" in page


def paged_report(
    out: Path, *runs: Path, data_dir: Path | None = None, page_limit: int = 20_000
) -> tuple[str, list[Path]]:
    """A report whose dialogues must go to pages (small limits), built in-process."""
    from turnbench.report.assets import page
    from turnbench.report.html import ReportOptions, build_report, write_report
    from turnbench.store.rundir import load_runs

    options = ReportOptions(
        out=out, data_dir=data_dir or shared_data_dir(), inline_limit=1, page_limit=page_limit
    )
    text = build_report(load_runs(list(runs)), options)
    write_report(text, out)
    assert options.pages is not None and page  # (the frame every page is built with)
    return text, options.pages.written


def test_large_dialogues_go_to_pages_beside_the_report(runs, tmp_path):
    out = tmp_path / "my report.html"
    folder = tmp_path / "my report-files"
    folder.mkdir()
    stale = folder / "dialogues-1-99.html"  # left by an earlier, larger report
    stale.write_text("old")
    keep = folder / "notes.txt"  # not ours: never touched
    keep.write_text("mine")
    text, written = paged_report(out, runs["hostile"], runs["eight"])
    assert written and all(path.parent == folder for path in written)
    assert not stale.exists() and keep.read_text() == "mine"
    # the report keeps one row per sample (filters work on all of them), no transcripts
    assert text.count('<details class="sample"') == 8
    assert "Compose an engaging travel blog post" not in text.split('id="dialogues-mt-bench"')[1]
    links = re.findall(
        r'<a href="(my%20report-files/dialogues-1-\d+\.html)#(s-mt-bench-\d+)"', text
    )
    assert len(links) == 8
    pages = {path.name: path.read_text("utf-8") for path in written}
    for href, target in links:
        body = pages[href.split("/")[1]]
        assert f'id="{target}"' in body  # the link lands on its sample
    # every page: the report's content policy and script only, everything escaped
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', text)
    assert policy
    joined = "".join(pages.values())
    assert joined.count('<details class="sample"') == 8
    for body in pages.values():
        assert policy.group(1) in body and body.count("<script") == 1
        assert '<a href="../my%20report.html#dialogues-mt-bench">' in body
    assert "<img src=x" not in joined and "<b>bold?</b>" not in joined
    assert "&lt;script&gt;document.title=&#34;pwned&#34;" in joined
    assert "Refusing. &lt;script&gt;window.__pwned=3" in joined
    assert "Compose an engaging travel blog post" in joined


def test_a_link_planted_where_a_page_goes_is_not_followed(runs, tmp_path):
    out = tmp_path / "report.html"
    folder = tmp_path / "report-files"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (folder / "dialogues-1-1.html").symlink_to(victim)
    _, written = paged_report(out, runs["hostile"])
    assert victim.read_text() == "untouched"
    assert not (folder / "dialogues-1-1.html").is_symlink() and written


def test_small_reports_keep_their_dialogues_inline(runs, report_env, tmp_path):
    out = tmp_path / "report.html"
    done = run_cli(["report", str(runs["hostile"]), "--out", str(out)], report_env)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "report-files").exists()
    assert "Compose an engaging travel blog post" in out.read_text("utf-8")


def test_a_huge_unbroken_answer_is_in_the_page_whole_and_escaped(report_env, tmp_path):
    """Issue 22 item 8: an answer with one 300,000-character word (hostile markup inside)
    is shown breakable and folded, and nothing of it is dropped or left unescaped."""
    piece = "\u0633\u0644\u0627\u0645e\u0301<img/src=x/onerror=alert(1)>&amp;</div>" + "k" * 50
    token = piece * (300_000 // len(piece))

    def responder(request: dict) -> str:
        if request["model"] != JUDGE_MODEL and request["messages"][-1]["content"].startswith(
            "Compose an engaging travel blog post"
        ):
            return token
        return default_content(request)

    run = make_run(tmp_path / "run", report_env, responder)
    out = tmp_path / "report.html"
    done = run_cli(["report", str(run), "--out", str(out)], report_env)
    assert done.returncode == 0, done.stderr
    page = out.read_text("utf-8")
    assert "<img/src" not in page and page.count("<script") == 1
    sample = page.split('id="s-mt-bench-81"')[1]
    answer = sample.split('<div class="answer">')[1].split('<details class="judge">')[0]
    assert answer.count("<wbr>") >= len(token) // 200 - 2 and '<details class="more">' in answer
    answer = re.sub(r"<summary>[^<]*</summary>", "", answer)
    shown = re.sub(r"<[^>]*>", "", answer.split("</span></div>", 1)[1])  # after the label
    assert html.unescape(shown) == token


TEMPLATE_SYNTAX = "{{ 7 * 7 }} {% for x in range(3) %}{{ x }}{% endfor %} {# hidden? #}"
SHOWN_SYNTAX = TEMPLATE_SYNTAX  # (no entity in it: its characters are all text)


def test_template_syntax_and_markup_in_answers_replies_and_the_title_are_text(report_env, tmp_path):
    """The report is rendered by autoescaped jinja2 templates: an answer or a judge reply
    holding template syntax and markup is shown as those characters, never run as a
    template or parsed as markup; so is a title given on the command line."""
    answer = f"{TEMPLATE_SYNTAX} <script>window.__pwned=5</script><b>answer</b>"
    reply = f"{TEMPLATE_SYNTAX} <img src=z onerror=alert(6)> Rating: [[7]]"

    def responder(request: dict) -> str:
        if request["model"] == JUDGE_MODEL:
            return reply
        if request["messages"][-1]["content"].startswith("Compose an engaging travel blog"):
            return answer
        return default_content(request)

    run = make_run(tmp_path / "run", report_env, responder)
    out = tmp_path / "report.html"
    title = "<i>My</i> {{ title }} & {% raw %}"
    done = run_cli(["report", str(run), "--out", str(out), "--title", title], report_env)
    assert done.returncode == 0, done.stderr
    page = out.read_text("utf-8")
    assert page.count("<script") == 1 and "<b>answer</b>" not in page and "<img src=z" not in page
    assert f"{SHOWN_SYNTAX} &lt;script&gt;window.__pwned=5&lt;/script&gt;" in page
    assert f"{SHOWN_SYNTAX} &lt;img src=z onerror=alert(6)&gt;" in page
    shown_title = "&lt;i&gt;My&lt;/i&gt; {{ title }} &amp; {% raw %}"
    assert f"<title>{shown_title}</title>" in page and f"<h1>{shown_title}</h1>" in page


def test_a_results_file_of_another_shape_is_one_clear_error(runs, report_env, tmp_path_factory):
    """The report and compare read results.json into its typed model: a file without the
    keys this turnbench writes is refused with one message, not a traceback. (Outside
    tmp_path: the file is made not to match the results schema.)"""
    import shutil

    tmp_path = tmp_path_factory.mktemp("other-shape")
    run = tmp_path / "edited"
    shutil.copytree(runs["eight"], run)
    results = json.loads((run / "results.json").read_text("utf-8"))
    del results["usage"]
    (run / "results.json").write_text(json.dumps(results), "utf-8")
    for args in (
        ["report", str(run), "--out", str(tmp_path / "r.html")],
        ["compare", str(runs["eight"]), str(run)],
    ):
        done = run_cli(args, report_env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "not the results this turnbench writes" in done.stderr
        assert "usage" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.html").exists()
