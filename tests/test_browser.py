"""The report as a person sees it: a small study's report opened in headless Chromium.

The page must load with no console error, no failed and no outside request (it opens
offline), show every main section and reach every one from its navigation, and draw every
figure and nanoplot at a non-zero size once its collapsible block is opened. Screenshots
land in the test's temporary folder.

Skipped when no Chromium is installed, unless ``RELCOL_REQUIRE_BROWSER`` is set (as
``.ci/run`` does, after installing Debian's chromium): then a missing browser fails.
"""

from __future__ import annotations

import os

import polars as pl
import pytest

import relcol
from relcol import report_tables
from relcol.report import write_report
from tests.chromium import chromium, find_chromium

#: The sections a single-label study with seeds, repeats and corruptions must show, in order.
MAIN_SECTIONS = (
    "summary",
    "trust",
    "degradation",
    "reliability",
    "calibration",
    "discrimination",
    "selective",
    "consistency",
    "scorecard",
    "corruptions",
    "methods",
)

_CHECK = """
(() => {
  const closed = [...document.querySelectorAll('details:not([open])')].length;
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const size = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const name = e => e.getAttribute('aria-label') || e.id || e.outerHTML.slice(0, 80);
  const svgs = [...document.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg'));
  const images = [...document.querySelectorAll('img')];
  return {
    closed,
    svgs: svgs.length,
    images: images.length,
    empty: svgs.filter(s => size(s).some(v => v <= 0)).map(name),
    broken: images.filter(i => !i.complete || i.naturalWidth === 0 || size(i).some(v => v <= 0))
      .map(i => i.src),
    sections: [...document.querySelectorAll('main > section[id]')].map(s => s.id),
    nav: [...document.querySelectorAll('nav a')].map(a => a.getAttribute('href')),
    unresolved: [...document.querySelectorAll('a[href^="#"]')]
      .map(a => a.getAttribute('href').slice(1)).filter(id => !document.getElementById(id)),
    scripts: document.scripts.length,
    tables: document.querySelectorAll('table').length,
    exports: document.querySelectorAll('p.exports a').length,
  };
})()
"""


# Boxes a person would see cut off: at a 1400 px window nothing is wider than the page or
# sticks out of ``main``; no text of a figure (legend, labels) leaves its SVG's frame.
_BOXES = """
(() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const main = document.querySelector('main').getBoundingClientRect();
  const name = e => e.getAttribute('aria-label') || e.id || (e.closest('[id]') ? e.className + ' in #' + e.closest('[id]').id : e.className) || e.tagName;
  const out = [];
  for (const e of document.querySelectorAll('main table, main figure, main svg, main pre')) {
    if (e.parentElement.closest('svg')) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.left < main.left - 0.5 || r.right > main.right + 0.5)) {
      out.push(`${name(e)}: ${Math.round(r.left)}–${Math.round(r.right)} outside main`);
    }
  }
  for (const e of document.querySelectorAll('main section, main details')) {
    if (e.scrollWidth > e.clientWidth + 1) out.push(`${name(e)} scrolls sideways`);
  }
  const clipped = [];
  const figures = [...document.querySelectorAll('figure > svg')];
  for (const svg of figures) {
    const frame = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0 || !t.textContent.trim()) continue;
      if (r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1 ||
          r.bottom > frame.bottom + 1) clipped.push(`${name(svg)}: "${t.textContent}"`);
    }
  }
  const grid = document.getElementById('relcol-breaks');
  return {
    overflow: out,
    clipped,
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    widths: figures.map(s => [name(s), Math.round(s.getBoundingClientRect().width)]),
    main: Math.round(main.width),
    grid: grid && {bottom: grid.getBoundingClientRect().bottom,
                   cells: grid.querySelectorAll('tbody td').length,
                   text: [...grid.querySelectorAll('tbody td')].map(td => td.textContent)},
  };
})()
"""


@pytest.fixture(scope="module")
def browser_binary() -> str:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("RELCOL_REQUIRE_BROWSER"):
            pytest.fail("RELCOL_REQUIRE_BROWSER is set but no Chromium was found")
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    return binary


@pytest.fixture(scope="module")
def report_page(tiny_warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "report"
    return relcol.report(tiny_warehouse, study="tiny", out=out).html


def test_report_in_a_real_browser(browser_binary, report_page, tmp_path):
    with chromium(browser_binary) as browser:
        page = browser.open(report_page.as_uri(), width=1400, height=1600)
        first = browser.screenshot(tmp_path / "report.png")
        full = browser.screenshot(tmp_path / "report-full.png", full_page=True)
        seen = browser.evaluate(_CHECK)
        opened = browser.screenshot(tmp_path / "report-opened.png", full_page=True)

    assert page.errors == [], page.errors
    assert page.outside_requests == [], "the page must open offline"
    for shot in (first, full, opened):
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    assert seen["scripts"] == 0
    missing = [s for s in MAIN_SECTIONS if s not in seen["sections"]]
    assert missing == [], f"sections missing: {missing}; shown: {seen['sections']}"
    # The order of docs/report.md.
    shown = [s for s in seen["sections"] if s in MAIN_SECTIONS]
    assert shown == list(MAIN_SECTIONS)
    assert seen["nav"] == [f"#{s}" for s in seen["sections"]]
    assert seen["unresolved"] == []
    # Figures (matplotlib SVG) all drawn.
    assert seen["svgs"] >= 9 and seen["empty"] == [], seen["empty"]
    assert seen["broken"] == []
    assert seen["closed"] > 0, "per-dataset parts and long tables start collapsed"
    assert seen["tables"] >= 10 and seen["exports"] >= 4 * 8


def test_the_headline_is_on_the_first_screen_and_nothing_is_cut_off(browser_binary, report_page):
    with chromium(browser_binary) as browser:
        page = browser.open(report_page.as_uri(), width=1400, height=900)
        boxes = browser.evaluate(_BOXES)
    assert page.errors == [], page.errors
    grid = boxes["grid"]
    # 2 datasets × 3 models × 4 corruptions, every cell a verdict, all on the first screen.
    assert grid is not None and grid["cells"] == 2 * 3 * 4
    assert all(t == "clean" or t.startswith(("clean ", "holds")) or t[0].isdigit()
               for t in grid["text"]), grid["text"]  # fmt: skip
    assert grid["bottom"] <= 900, "the break severities need no scrolling at 1400 × 900"
    width, visible = boxes["page"]
    assert width <= visible == 1400, "the page scrolls sideways"
    assert boxes["overflow"] == [], boxes["overflow"]
    assert boxes["clipped"] == [], boxes["clipped"]
    # The page stays light: no table of hundreds of rows, no nanoplot per cell.
    assert report_page.stat().st_size < 1_500_000


@pytest.fixture(scope="module")
def one_corruption(browser_binary, tiny_warehouse, tmp_path_factory):
    """The tiny study's report cut to its first corruption, as seen at 1400 × 900."""
    tables = report_tables(tiny_warehouse, "tiny", bins=10, bootstrap=50)
    first = tables["calibration"]["corruption"][0]
    one = {
        name: t.filter(pl.col("corruption") == first) if "corruption" in t.columns else t
        for name, t in tables.items()
    }
    out = tmp_path_factory.mktemp("one-corruption")
    index = write_report(out, tables=one, meta={"bins": 10, "study": "tiny"})
    with chromium(browser_binary) as browser:
        page = browser.open(index.as_uri(), width=1400, height=900)
        return page, browser.evaluate(_BOXES)


def test_a_study_of_one_corruption_draws_no_text_outside_its_figures(one_corruption):
    _, boxes = one_corruption
    assert boxes["clipped"] == [], boxes["clipped"]


def test_a_study_of_one_corruption_gets_figures_that_read(one_corruption):
    page, boxes = one_corruption
    assert page.errors == [], page.errors
    assert boxes["overflow"] == [], boxes["overflow"]
    assert boxes["grid"]["cells"] == 2 * 3
    # No thumbnail (a one-corruption diagram used to be 140 px wide): a figure alone is at
    # least 640 px wide, a model's reliability diagram beside the others' at least 400 px.
    narrow = [(n, w) for n, w in boxes["widths"] if w < min(640, boxes["main"] - 1)]
    assert narrow and all(n.startswith("Reliability diagrams for ") for n, _ in narrow), narrow
    assert all(w >= 400 for _, w in narrow), narrow
    assert len(boxes["widths"]) >= 2 * (1 + 3 + 1 + 1)  # degr., 3 models' rel., conf., r–c


@pytest.mark.parametrize("width", [1024, 1280])
def test_nothing_scrolls_sideways_in_a_laptop_window(browser_binary, report_page, width):
    """At 1024 px (a laptop's window beside another) the contents go above the page instead of
    beside it, so that the widest tables (the trust tables, the summary) fit without a
    scroll bar of their own; at 1280 px the contents stay beside the page and they still fit."""
    with chromium(browser_binary) as browser:
        page = browser.open(report_page.as_uri(), width=width, height=800)
        boxes = browser.evaluate(_BOXES)
        layout = browser.evaluate(_LAYOUT)
    assert page.errors == [], page.errors
    assert boxes["overflow"] == [], boxes["overflow"]
    width_seen, visible = boxes["page"]
    assert width_seen <= visible == width, "the page scrolls sideways"
    assert layout["beside"] is (width >= 1280), layout


# Where the contents are: beside the page (a column left of main) or above it.
_LAYOUT = """
(() => {
  const nav = document.querySelector('nav.toc').getBoundingClientRect();
  const main = document.querySelector('main').getBoundingClientRect();
  return {beside: nav.right <= main.left + 0.5 && nav.bottom > main.top,
          nav: [Math.round(nav.left), Math.round(nav.right), Math.round(nav.bottom)],
          main: [Math.round(main.left), Math.round(main.right), Math.round(main.top)]};
})()
"""
