"""The documentation stands on its own: every relative link resolves, and the README's quick
start is what CI runs."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code, where links are links."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to -.

    >>> slug("The statistical layer: intervals, trends, where trust breaks")
    'the-statistical-layer-intervals-trends-where-trust-breaks'
    >>> slug("The seed's email example")
    'the-seeds-email-example'
    >>> slug("The long table (`predictions`)")
    'the-long-table-predictions'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    kept = (ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return "".join(kept).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the page's headings (a repeated heading gets -1, -2, …)."""
    seen: dict[str, int] = {}
    found = set()
    for _, title in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    targets = LINK.findall(prose(page.read_text()))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def test_the_docs_exist():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/statistics.md", "docs/warehouse.md", "docs/performance.md"} <= names
    assert len(relative_links(ROOT / "README.md")) >= 15


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if ROOT not in dest.parents:
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    assert not broken, "\n".join(broken)


def test_the_link_checker_finds_broken_links(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A section\n\n[ok](#a-section) [gone](#nowhere) [file](missing.md)\n"
        "`[code](not-a-link.md)`\n\n```\n[fenced](not-a-link.md)\n```\n[web](https://example.org)\n"
    )
    assert relative_links(page) == ["#a-section", "#nowhere", "missing.md"]
    assert anchors(page) == {"title", "a-section"}


def quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_the_quick_start_is_what_ci_runs():
    setup = "python3 -m venv .venv && . .venv/bin/activate && "
    study, tests = quick_start()
    assert study == setup + "pip install . && relcol ingest && relcol report"
    assert tests == setup + 'pip install -e ".[test]" && pytest'
    ci = (ROOT / ".ci" / "run").read_text()
    # CI sets up the same virtual environment and runs the README's test command verbatim
    assert "python3 -m venv .venv" in ci and ". .venv/bin/activate" in ci
    # (in a subshell, so that `set -e` also stops CI when the install on the left of && fails)
    assert f"({tests.removeprefix(setup)})" in ci.splitlines()
    # and it installs the package (as a wheel) and runs ingest and report as a user would
    commands = re.findall(r'"\$work/venv/bin/relcol" (\w+)', ci)
    assert commands[:2] == ["ingest", "report"]
    assert "relcol-*.whl" in ci


def test_every_docstring_example_is_collected():
    """pytest runs every module's examples (--doctest-modules over relcol/), not a kept list."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in config["addopts"].split()
    paths = [ROOT / p for p in config["testpaths"]]
    with_examples = [
        f
        for d in ("relcol", "cli", "sql")
        for f in (ROOT / d).rglob("*.py")
        if ">>> " in f.read_text()
    ]
    assert len(with_examples) >= 20
    outside = [f for f in with_examples if not any(p in f.parents for p in paths)]
    assert not outside


def test_the_docs_name_only_public_python_objects():
    """Every `relcol.x.y` the docs mention exists and is reached without a private module."""
    import importlib

    named = {
        name for page in PAGES for name in re.findall(r"`(relcol(?:\.\w+)+)", page.read_text())
    }
    assert len(named) >= 20
    wrong = []
    for name in sorted(named):
        parts = name.split(".")
        if any(part.startswith("_") for part in parts):
            wrong.append(f"{name}: private")
            continue
        obj = importlib.import_module("relcol")
        for i, part in enumerate(parts[1:], start=2):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                except ImportError:
                    wrong.append(f"{name}: no such object")
                    break
    assert not wrong, "\n".join(wrong)
