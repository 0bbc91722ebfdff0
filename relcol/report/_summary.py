"""The first thing the page shows: where each model's trust breaks, then what was studied.

With the statistical layer's ``thresholds`` table, the page opens with the headline grid: per
dataset, a row per model and a column per corruption, each cell the severity from which the
model's trust breaks (or that it was overconfident already on clean data, or that it holds
within the severities studied), coloured by the curve's traffic light. Below it: the scope,
per model the cell where confidence outruns accuracy the most, the verdicts per model, and
the gap at each corruption's worst severity.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import polars as pl

from relcol.analysis import WORST_FIRST
from relcol.report._layout import section
from relcol.report._sections import single_label
from relcol.report._tables import glance_table, table_html
from relcol.text import plural


def header(study: str, meta: Mapping[str, Any]) -> str:
    """The page's title and the run it reports."""
    run = [f"run <code>{escape(str(meta['run_id']))}</code>"] if meta.get("run_id") else []
    run += [f"created {escape(str(meta['created']))}"] if meta.get("created") else []
    return (
        f"<header>\n<h1>{escape(f'relcol report: {study}')}</h1>\n"
        + (f'<p class="run">{" · ".join(run)}</p>\n' if run else "")
        + "</header>"
    )


#: The summary names the worst cell of at most this many models, the most overconfident.
HEADLINE_MODELS = 16


def summary_section(tables: Mapping[str, pl.DataFrame], **_: object) -> str:
    """The headline grid (with thresholds), scope, the worst cell per model (``worst_gaps``),
    verdicts (``verdicts``) and the glance table (``degradation``): the tables of
    ``relcol.analysis.summary_tables``."""
    calibration = tables["calibration"]
    counts = {k: calibration.get_column(k).n_unique() for k in ("dataset", "model", "corruption")}
    severity = calibration.get_column("severity")
    low, high = severity.min(), severity.max()
    levels = f"severity d = {low:g}" if low == high else f"severity d from {low:g} to {high:g}"
    scope = (
        f"{plural(calibration.height, 'cell')}: {plural(counts['dataset'], 'dataset')}, "
        f"{plural(counts['model'], 'model')}, {plural(counts['corruption'], 'corruption')}, "
        f"{levels}."
    )
    several = {k: calibration.get_column(k).n_unique() > 1 for k in ("study", "dataset")}
    worst = tables["worst_gaps"]  # the most overconfident model first
    items = "\n".join(
        f"<li>{escape(worst_sentence(row, **several))}</li>"
        for row in worst.head(HEADLINE_MODELS).iter_rows(named=True)
    )
    if worst.height > HEADLINE_MODELS:
        items += (
            f"\n<li>{plural(worst.height - HEADLINE_MODELS, 'more model')}, less "
            "overconfident at their worst: every one is in <code>worst_gaps.csv</code></li>"
        )
    thresholds = tables.get("thresholds")
    judged = thresholds is not None and "traffic_light" in thresholds.columns
    if judged and "label" in thresholds.columns:
        thresholds = thresholds.filter(pl.col("label").is_null())
    judged = judged and not thresholds.is_empty()
    grid = tables.get("break_grid") if judged else None
    parts = [headline_grid(grid, calibration)] if grid is not None else []
    parts += [
        f"<p>{escape(scope)} Where confidence outruns accuracy the most, per model "
        "(largest gap Δ = mean confidence − accuracy at any severity):</p>",
        f'<ul class="headline">\n{items}\n</ul>',
    ]
    if judged:
        parts.append(_verdicts(tables["verdicts"]))
    curves = single_label(tables["degradation"])
    if not curves.is_empty():
        parts.append(table_html(glance_table(curves), collapse=judged))
    heading = "Where trust breaks, at a glance" if grid is not None else "Summary"
    return section("summary", heading, "\n".join(parts))


#: What a cell of the headline grid says, per state (``{d}``: the break point).
_STATE_TEXT = {"clean": "clean", "breaks": "{d}", "holds": "holds", "score": "score"}


def headline_grid(grid: pl.DataFrame, calibration: pl.DataFrame) -> str:
    """Per dataset, a model × corruption grid of the severity where trust breaks.

    ``grid``: the ``break_grid`` table (a row per single-label curve); models and
    corruptions appear in the order of the calibration table (the study's order).
    """
    order = [k for k in ("study", "dataset", "model", "corruption") if k in grid.columns]
    rank = [
        pl.col(k).replace_strict(
            calibration.get_column(k).unique(maintain_order=True).to_list(),
            range(calibration.get_column(k).n_unique()),
            default=None,
        )
        for k in order
    ]
    grid = grid.sort(rank, nulls_last=True, maintain_order=True)
    corruptions = grid.get_column("corruption").unique(maintain_order=True).to_list()
    reach = dict(grid.group_by("corruption").agg(pl.col("worst_severity").max()).iter_rows())
    head = "".join(
        f'<th scope="col">{escape(c)}<small>d ≤ {_d(reach[c])}</small></th>' for c in corruptions
    )
    parts = [k for k in ("study", "dataset") if k in grid.columns]
    several = [k for k in parts if grid.get_column(k).n_unique() > 1]
    body = []
    for block in grid.partition_by(parts, maintain_order=True) if parts else [grid]:
        if several:
            name = " / ".join(str(block.get_column(k)[0]) for k in several)
            body.append(
                f'<tr class="group"><th colspan="{len(corruptions) + 1}" scope="rowgroup">'
                f"{escape(name)}</th></tr>"
            )
        for model in block.get_column("model").unique(maintain_order=True):
            cells = {
                r["corruption"]: r
                for r in block.filter(pl.col("model") == model).iter_rows(named=True)
            }
            row = "".join(_grid_cell(cells.get(c), model, c) for c in corruptions)
            body.append(f'<tr><th scope="row">{escape(model)}</th>{row}</tr>')
    legend = (
        "Each cell: the severity d from which the model's gap Δ = mean confidence − accuracy "
        "has risen significantly over clean (the break point; d*, when later, is where Δ is "
        "also significantly above τ). <b>clean</b>: already significantly overconfident on "
        "clean data (it may break further: the severity follows). <b>holds</b>: no break "
        "within the severities studied (d ≤ the column's largest). Colour: the curve's "
        'traffic light, the worst over its severities: <span class="light red">red</span> '
        '<span class="light amber">amber</span> <span class="light green">green</span>; '
        'the full verdicts and actions are in <a href="#trust">Where trust breaks</a>.'
    )
    if (grid.get_column("state") == "score").any():
        legend += (
            " <b>score</b>: a confidence source that is a score, not a probability, gets no "
            "verdict until it is recalibrated."
        )
    return (
        f'<table class="breaks" id="relcol-breaks">\n<thead><tr><th scope="col">model</th>'
        f"{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>\n"
        f'<p class="legend">{legend}</p>'
    )


def _grid_cell(row: Mapping[str, Any] | None, model: str, corruption: str) -> str:
    if row is None:
        return '<td class="none" title="not studied">–</td>'
    state, point, star = row["state"], row["break_point"], row["d_star"]
    text = _STATE_TEXT[state].format(d=_d(point))
    title = f"{model} under {corruption}: "
    if state == "clean":
        title += "already overconfident on clean data"
        if point is not None:
            text += f" <small>+{_d(point)}</small>"
            title += f", and worse from d = {_d(point)}"
    elif state == "breaks":
        title += f"trust breaks at d = {_d(point)}"
        if star is not None and star != point:
            text += f" <small>d* {_d(star)}</small>"
        title += f"; confidently wrong from d* = {_d(star)}" if star is not None else ""
    elif state == "score":
        title += "a score, not a probability: no calibration verdict before recalibration"
    else:
        title += f"holds up to d = {_d(row['worst_severity'])}"
    light = row["light"] if row["light"] in WORST_FIRST else "none"
    title += f"; light {row['light']}" if row["light"] else ""
    return f'<td class="{light} {state}" title="{escape(title)}">{text}</td>'


def _d(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _verdicts(table: pl.DataFrame) -> str:
    items = []
    for row in table.iter_rows(named=True):
        lights = ", ".join(
            f'<span class="light {c}">{c}</span> {row[c]}' for c in WORST_FIRST if row[c]
        )
        text = f"<b>{escape(row['model'])}</b>: {lights} of {plural(row['curves'], 'curve')}"
        if row.get("clean_over"):
            text += f"; already overconfident when clean on {plural(row['clean_over'], 'curve')}"
        if "d_star" in row:
            if row["d_star"] is None:
                text += "; never made significantly overconfident by a corruption"
            else:
                where = " on ".join(
                    escape(str(row[c])) for c in ("corruption", "dataset") if row.get(c)
                )
                text += f"; confidently wrong from d* = {row['d_star']:g}"
                text += f" ({where})" if where else ""
        items.append(f"<li>{text}.</li>")
    return (
        "<p>Verdicts per model (one traffic light per curve, the worst over its severities; "
        "d*: the earliest severity at which a corruption made the model significantly "
        "overconfident):</p>\n"
        f'<ul class="verdicts">\n{chr(10).join(items)}\n</ul>'
    )


def worst_sentence(row: Mapping[str, Any], *, study: bool, dataset: bool) -> str:
    """One model's most overconfident cell in words; ``study``/``dataset``: name them."""
    where = f"{row['model']} under {row['corruption']}"
    if dataset:
        where += f" on {row['dataset']}"
    if study:
        where += f" in {row['study']}"
    if row.get("label") is not None:
        where += f" (label {row['label']})"
    gap = row["gap"]
    if gap is None:
        return f"{where}: no gap could be computed."
    link = "but" if gap > 0 else "and"
    sentence = (
        f"{where}: at d = {row['severity']:g} accuracy {_num(row['accuracy'])} {link} "
        f"mean confidence {_num(row['mean_confidence'])} (gap {gap:+.2f})"
    )
    return sentence + ("; never overconfident." if gap <= 0 else ".")


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
