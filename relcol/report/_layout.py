"""The page's building blocks: sections, collapsible blocks, figures, and parts by dataset.

Plain HTML with no script: ``<details>`` opens and closes by itself in every browser, so a
report of hundreds of cells stays readable and still works offline with scripts disabled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from html import escape

import polars as pl


def section(anchor: str, heading: str, body: str, *, lead: str | None = None) -> str:
    """A top-level section; its id and heading become an entry of the page's navigation."""
    lead_html = f'<p class="lead">{lead}</p>\n' if lead else ""
    return f'<section id="{anchor}">\n<h2>{escape(heading)}</h2>\n{lead_html}{body}\n</section>'


def details(summary: str, body: str, *, open: bool = False, css: str = "") -> str:
    """A collapsible block; ``summary`` is HTML (escape text first)."""
    attrs = (' open=""' if open else "") + (f' class="{css}"' if css else "")
    return f"<details{attrs}>\n<summary>{summary}</summary>\n{body}\n</details>"


def figure(svg: str, caption: str) -> str:
    """An inline SVG figure with its caption (``caption`` is HTML)."""
    return f"<figure>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>"


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


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
