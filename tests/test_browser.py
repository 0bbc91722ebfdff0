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

import pytest

import relcol
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
    # The order of DESIGN.md §6.
    shown = [s for s in seen["sections"] if s in MAIN_SECTIONS]
    assert shown == list(MAIN_SECTIONS)
    assert seen["nav"] == [f"#{s}" for s in seen["sections"]]
    assert seen["unresolved"] == []
    # Figures (matplotlib SVG) and nanoplots (SVG in the trend tables) all drawn.
    assert seen["svgs"] >= 12 and seen["empty"] == [], seen["empty"]
    assert seen["broken"] == []
    assert seen["closed"] > 0, "per-dataset parts and long tables start collapsed"
    assert seen["tables"] >= 10 and seen["exports"] >= 4 * 8
