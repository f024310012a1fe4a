"""The README and the documentation site keep their interface (issue 26).

The README stays a short entry point (at most 12 KB) that still holds the two set-up
commands and whose every link leads to a page and heading that exist; the version is one
number in three places; the generated reference pages (scripts/mkdocs_hooks.py) cover every
command option, results key and benchmark option, and keep code text inert. `mkdocs build
--strict` itself runs in `make test`; these checks need no MkDocs.
"""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

import turnbench

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_LIMIT = 12_288
LINK = re.compile(r"\]\(([^)\s]+)\)")


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts/mkdocs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slug(heading: str) -> str:
    """Python-Markdown's default heading id (toc extension), for Markdown heading text."""
    text = re.sub(r"\{[^}]*\}\s*$", "", heading).replace("`", "").strip()
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
    found = set()
    for match in re.finditer(r"^#{1,6}\s+(.*?)\s*$", text, re.MULTILINE):
        explicit = re.search(r"\{\s*#([\w-]+)\s*\}\s*$", match.group(1))
        found.add(explicit.group(1) if explicit else slug(match.group(1)))
    return found


def test_the_readme_is_short_and_keeps_the_two_set_up_commands():
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes, over {README_LIMIT}"
    text = README.read_text("utf-8")
    blocks = re.findall(r"^```\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    assert "make demo" in commands and "make test" in commands
    makefile = (ROOT / "Makefile").read_text("utf-8")
    for target in ("demo", "test", "check", "docs"):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"no `make {target}`"


def test_make_test_builds_the_site_strictly_before_the_suite():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    recipe = re.search(r"^test:.*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, "no test target"
    steps = recipe.group(1)
    assert "mkdocs build --strict" in steps
    assert steps.index("mkdocs build --strict") < steps.index("pytest")
    assert ".[local,test,docs,agentdojo]" in makefile


def test_every_link_of_the_readme_leads_to_a_file_and_heading_that_exist():
    links = LINK.findall(README.read_text("utf-8"))
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local), "the README links into docs/"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README links to {link}: no such file"
        if anchor:
            assert anchor in anchors(target), f"README links to {link}: no such heading"


def test_the_readme_links_to_every_guide_the_issue_names():
    text = README.read_text("utf-8")
    for page in ("getting-started", "mt-bench", "mt-bench-101", "structflowbench",
                 "custom-benchmarks", "judges", "scale", "run-directory", "results-reference",
                 "cli", "api", "reliability", "security"):  # fmt: skip
        assert f"(docs/{page}.md" in text, f"README does not link docs/{page}.md"


def test_every_page_of_the_navigation_exists_and_every_page_is_in_it():
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    nav = config[config.index("\nnav:") :]
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", nav, re.MULTILINE))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert listed == pages, f"only listed: {listed - pages}; not listed: {pages - listed}"


def test_the_version_is_one_number():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert config["project"]["version"] == turnbench.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    first = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert first and first.group(1) == turnbench.__version__, "CHANGELOG starts elsewhere"


def test_every_generated_section_has_a_page_and_every_marker_a_generator():
    module = hooks()
    used = set()
    for page in (ROOT / "docs").rglob("*.md"):
        used |= set(module.MARKER.findall(page.read_text("utf-8")))
    assert used == set(module.GENERATORS)


def test_the_cli_reference_lists_every_option_of_every_command():
    import typer

    from turnbench.cli import load

    app = load()  # (registers the commands)

    page = hooks().cli_reference()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="turnbench")
    seen = 0

    def walk(command, ctx, path):
        nonlocal seen
        assert re.search(rf"^#+ {re.escape(' '.join(path))}$", page, re.MULTILINE), path
        for param in command.get_params(ctx):
            if param.name == "help" or param.param_type_name == "argument":
                continue
            for name in param.opts:
                assert f"<code>{name}" in page or f", {name}" in page, (path, name)
                seen += 1
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, sub.context_class(sub, info_name=name, parent=ctx), [*path, name])

    walk(root, ctx, ["turnbench"])
    assert seen > 100  # run and judge alone have dozens
    assert "turnbench data status" in page and "turnbench audit-judge" in page


def test_generated_text_is_inert():
    module = hooks()
    page = module.cli_reference()
    assert "<think>" not in page and "&lt;think&gt;" in page  # --strip-think's help
    assert module.cell("a | b `x|y` <b>*c*</b>") == (
        "a &#124; b <code>x&#124;y</code> &lt;b&gt;&#42;c&#42;&lt;/b&gt;"
    )


def test_the_results_reference_lists_every_key_of_every_object():
    module = hooks()
    for name in ("results.schema.json", "audit.schema.json"):
        schema = json.loads((ROOT / "docs" / name).read_text("utf-8"))
        page = module.schema_reference(ROOT / "docs" / name)
        objects = dict(schema.get("$defs", {}))
        objects[schema["title"]] = schema
        for title, definition in objects.items():
            if "properties" not in definition:
                continue
            if title != schema["title"]:
                assert f"{{ #{module._anchor(title)} }}" in page, title
            for key in definition["properties"]:
                assert f"<code>{module.inert(key)}</code>" in page, (title, key)


def test_the_benchmark_options_page_lists_every_builtin_benchmark_option():
    from turnbench.benchmarks import builtin_benchmarks

    page = hooks().benchmark_options()
    for name, cls in builtin_benchmarks().items():
        assert f"## {name}\n" in page
        for option in cls.options_model.model_fields:
            assert f"-B {option.replace('_', '&#95;')}=VALUE" in page, (name, option)
