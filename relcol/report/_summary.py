"""The first thing the page shows: what was studied, the headline, and a table at a glance.

The headline names, per model, the cell where confidence outruns accuracy the most; when the
statistical layer's ``thresholds`` table is present it adds each model's traffic lights and
the earliest severity d* at which it is significantly overconfident.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import polars as pl

from relcol.analysis import LIGHTS, degradation_summary, verdicts, worst_gaps
from relcol.report._layout import plural, section
from relcol.report._sections import single_label
from relcol.report._tables import glance_table, table_html


def header(study: str, meta: Mapping[str, Any]) -> str:
    """The page's title and the run it reports."""
    run = [f"run <code>{escape(str(meta['run_id']))}</code>"] if meta.get("run_id") else []
    run += [f"created {escape(str(meta['created']))}"] if meta.get("created") else []
    return (
        f"<header>\n<h1>{escape(f'relcol report: {study}')}</h1>\n"
        + (f'<p class="run">{" · ".join(run)}</p>\n' if run else "")
        + "</header>"
    )


def summary_section(tables: Mapping[str, pl.DataFrame], **_: object) -> str:
    """Scope, the headline per model, verdicts (with thresholds) and the glance table."""
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
    items = "\n".join(
        f"<li>{escape(worst_sentence(row, **several))}</li>"
        for row in worst_gaps(calibration).iter_rows(named=True)
    )
    parts = [
        f"<p>{escape(scope)} Where confidence outruns accuracy the most, per model "
        "(largest gap Δ = mean confidence − accuracy at any severity):</p>",
        f'<ul class="headline">\n{items}\n</ul>',
    ]
    thresholds = tables.get("thresholds")
    if (
        thresholds is not None
        and not thresholds.is_empty()
        and "traffic_light" in thresholds.columns
    ):
        parts.append(_verdicts(verdicts(thresholds)))
    curves = single_label(calibration)
    if not curves.is_empty():
        parts.append(table_html(glance_table(degradation_summary(curves)), collapse=False))
    return section("summary", "Summary", "\n".join(parts))


def _verdicts(table: pl.DataFrame) -> str:
    items = []
    for row in table.iter_rows(named=True):
        lights = ", ".join(f'<span class="light {c}">{c}</span> {row[c]}' for c in LIGHTS if row[c])
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
