"""The page's building blocks: sections, collapsible blocks, figures, and parts by dataset.

Plain HTML with no script: ``<details>`` opens and closes by itself in every browser, so a
report of hundreds of cells stays readable and still works offline with scripts disabled.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from html import escape

import polars as pl

from relcol.report._drawing import then


def section(anchor: str, heading: str, body: str, *, lead: str | None = None) -> str:
    """A top-level section; its id and heading become an entry of the page's navigation."""
    lead_html = f'<p class="lead">{lead}</p>\n' if lead else ""
    return f'<section id="{anchor}">\n<h2>{escape(heading)}</h2>\n{lead_html}{body}\n</section>'


def details(summary: str, body: str, *, open: bool = False, css: str = "") -> str:
    """A collapsible block; ``summary`` is HTML (escape text first)."""
    attrs = (' open=""' if open else "") + (f' class="{css}"' if css else "")
    return f"<details{attrs}>\n<summary>{summary}</summary>\n{body}\n</details>"


def figure(svg: str, caption: str, *, css: str = "") -> str:
    """An inline SVG figure (made compact: :func:`compact_svg`) with its caption (``caption``
    is HTML); ``css``: the figure's classes (``wide``: the full width of the page)."""
    attrs = f' class="{css}"' if css else ""
    svg = then(svg, fitted)  # a figure drawn later (relcol.report._drawing): when it is
    return f"<figure{attrs}>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>"


def fitted(svg: str) -> str:
    """``svg`` made compact (:func:`compact_svg`) and, when drawn small, widened."""
    svg = compact_svg(svg)
    width = re.search(r'<svg [^>]*?width="([0-9.]+)pt"', svg)
    if width is not None and float(width[1]) * 4 / 3 < MIN_FIGURE_PX:
        # A figure of few panels is drawn small: widen it (its text grows with it) so that
        # it reads, up to the width of its column.
        svg = svg.replace(">", f' style="width: min(100%, {MIN_FIGURE_PX}px)">', 1)
    return svg


#: Figures narrower than this (CSS pixels) are widened to it, or to their column's width.
MIN_FIGURE_PX = 640


#: Attributes holding coordinates in matplotlib's SVG.
_GEOMETRY = re.compile(r'\b(d|x|y|x1|x2|y1|y2|width|height|points|transform)="([^"]*)"')
_DIGITS = re.compile(r"(\d\.\d)\d+")


def compact_svg(svg: str) -> str:
    """``svg`` with the same drawing in about 60 % of the bytes: coordinates cut to one decimal
    (an error under 0.1 pt, a thirtieth of a millimetre at print size and far below a pixel on
    screen), no indentation, no ids on groups (nothing refers to them), and each distinct
    ``style`` once as a class. Text, colours and referenced ids are kept."""
    svg = _GEOMETRY.sub(lambda m: m[1] + '="' + _rounded(m[2]) + '"', svg)
    svg = re.sub(r'<g id="[^"]*"', "<g", svg)
    svg = re.sub(r">\s+<", "><", svg)
    # Each distinct style once, as a class named by its own hash: equal styles in several
    # figures share a name and a definition, so figures on one page never clash.
    styles: dict[str, str] = {}

    def to_class(match: re.Match[str]) -> str:
        style = match[1]
        name = styles.setdefault(style, f"s{zlib.crc32(style.encode()):08x}")
        return f' class="{name}"'

    svg = re.sub(r' style="([^"]*)"', to_class, svg)
    rules = "".join(f".{name}{{{style}}}" for style, name in styles.items())
    return re.sub(r"<svg [^>]*>", lambda m: f"{m[0]}<style>{rules}</style>", svg, count=1)


def _rounded(value: str) -> str:
    return _DIGITS.sub(r"\1", " ".join(value.split()))


def by_dataset(
    frame: pl.DataFrame,
    render: Callable[[pl.DataFrame, str, int], str | None],
    *,
    heading: Callable[[str], str] = escape,
    first_open: bool = True,
) -> str:
    """One collapsible block per study × dataset of ``frame``, the first open.

    ``render(part, name, index)`` gives a part's HTML (or None to leave it out); ``name`` is
    the dataset, prefixed by its study when the frame holds several; ``index`` counts from
    1 and is meant for HTML ids.
    """
    several = "study" in frame.columns and frame.get_column("study").n_unique() > 1
    keys = ["study", "dataset"] if "study" in frame.columns else ["dataset"]
    parts = []
    for index, part in enumerate(frame.partition_by(keys, maintain_order=True), start=1):
        row = part.row(0, named=True)
        name = f"{row['study']} / {row['dataset']}" if several else str(row["dataset"])
        body = render(part, name, index)
        if body:
            parts.append((name, body))
    if len(parts) == 1:
        return parts[0][1]  # one dataset: nothing to collapse
    return "\n".join(
        details(heading(name), body, open=first_open and i == 0, css="dataset")
        for i, (name, body) in enumerate(parts)
    )


def anchors(sections: Iterable[str]) -> list[tuple[str, str]]:
    """(id, heading) of every top-level section in the HTML fragments, in order."""
    found = []
    for html in sections:
        found += re.findall(r'<section id="([^"]+)">\s*<h2>(.*?)</h2>', html, flags=re.DOTALL)
    return found
