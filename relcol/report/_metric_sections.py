"""The report's discrimination and selective-prediction sections (docs/metrics.md).

Formatting only: every number shown is a column of the ``discrimination``, ``selective``,
``confidence_histogram`` and ``risk_coverage`` tables that ``relcol.metrics`` and
``relcol.analysis`` computed. Per dataset (a collapsible block each): the figure, when its
table is present (confidence distributions of right and wrong predictions; risk–coverage
curves), then the great-tables table: rows grouped by corruption, the model in the stub, one
row per model × severity, metrics with ``_lo``/``_hi`` columns shown with their interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

import polars as pl
import polars.selectors as cs
from great_tables import GT

from relcol.analysis import require_columns, sort_by_appearance, with_stage
from relcol.metrics import labels, view_metrics
from relcol.report._drawing import drawn_svg
from relcol.report._figures import (
    Styles,
    correctness_figure,
    model_styles,
    risk_coverage_figure,
)
from relcol.report._layout import by_dataset, figure
from relcol.report._sections import drawn_models, figure_subset
from relcol.report._tables import data_color, merge_intervals, table_html

_GROUP = "__group"

_DISCRIMINATION = {"severity": "d", "n": "n", **labels(view_metrics("discrimination"))}
_SELECTIVE = {"severity": "d", **labels(view_metrics("selective"))}
# Light ends keep the numbers readable: AUROC from chance (white) to perfect (green),
# E-AURC from 0 (white) to its largest value (orange: confidence ranks errors badly).
_AUROC_PALETTE = ["#FFFFFF", "#C7E9C0", "#41AB5D"]
_EXCESS_PALETTE = ["#FFFFFF", "#FDD0A2", "#F16913"]


def metric_sections(tables: Mapping[str, pl.DataFrame], **context: object) -> str:
    """The HTML sections for the ``discrimination`` and ``selective`` tables that are present
    and not empty (an empty string when neither is); ``context``: as for the two sections."""
    parts = [discrimination_section(tables, **context), selective_section(tables, **context)]
    return "\n".join(p for p in parts if p)


def discrimination_section(
    tables: Mapping[str, pl.DataFrame],
    *,
    bins: int | None = None,
    styles: Styles | None = None,
    **_: object,
) -> str | None:
    """Confidence distributions of right vs wrong predictions, and the discrimination table.

    ``bins`` is the number of equal-width bins of ``confidence_histogram``; ``styles`` the
    report's model styles.
    """
    table = tables.get("discrimination")
    if table is None or table.is_empty():
        return None
    require_columns(table, ("dataset", "model", "corruption", *_DISCRIMINATION), "discrimination")
    histograms = _single_label(tables.get("confidence_histogram"))
    styles = styles or model_styles(table.get_column("model").unique(maintain_order=True).to_list())

    def render(part: pl.DataFrame, name: str, index: int) -> str:
        parts = []
        rows = _same_dataset(histograms, part)
        drawn = ""
        if rows is not None and not rows.is_empty():
            rows, drawn = figure_subset(
                rows,
                tables["calibration"],
                "every cell is in <code>confidence_histogram.csv</code>",
            )
            rows, chosen = drawn_models(
                rows, styles, "every model is in <code>confidence_histogram.csv</code>"
            )
            drawn += chosen
        if rows is not None and not rows.is_empty() and bins:
            auroc = {
                (r["model"], r["corruption"], r["severity"]): r["auroc"]
                for r in _single_label(part).iter_rows(named=True)
            }
            svg = drawn_svg(
                correctness_figure,
                rows,
                edges=bins,
                title=name,
                styles=styles,
                auroc=auroc,
                id_prefix=f"conf{index}",
                label=f"Confidence distributions for {name}",
            )
            parts.append(
                figure(
                    svg,
                    f"{escape(name)}: how confidence is spread over right (left half) and "
                    "wrong (right half) predictions, each half scaled to its own peak, on "
                    "clean data and at each corruption's worst severity. The less the two "
                    f"overlap, the better confidence separates them (AUROC above each).{drawn}",
                    css="wide",
                )
            )
        parts.append(table_html(_discrimination(part, f"relcol-discrimination-{index}", name)))
        return "\n".join(parts)

    return _section(
        "discrimination",
        "Discrimination: does confidence separate right from wrong?",
        _DISCRIMINATION_INTRO + "\n" + by_dataset(_prepared(table), render),
    )


def selective_section(
    tables: Mapping[str, pl.DataFrame], *, styles: Styles | None = None, **_: object
) -> str | None:
    """Risk–coverage curves and the selective-prediction table."""
    table = tables.get("selective")
    if table is None or table.is_empty():
        return None
    require_columns(
        table,
        ("dataset", "model", "corruption", *_SELECTIVE, "target_coverage", "target_risk"),
        "selective",
    )
    curves = _single_label(tables.get("risk_coverage"))
    if curves is not None and not curves.is_empty():
        curves = with_stage(curves)
    styles = styles or model_styles(table.get_column("model").unique(maintain_order=True).to_list())

    def render(part: pl.DataFrame, name: str, index: int) -> str:
        parts = []
        rows = _same_dataset(curves, part)
        if rows is not None and not rows.is_empty():
            rows, drawn = drawn_models(rows, styles, "the table below has every model")
            svg = drawn_svg(
                risk_coverage_figure,
                rows,
                title=name,
                styles=styles,
                id_prefix=f"rc{index}",
                label=f"Risk–coverage curves for {name}",
            )
            parts.append(
                figure(
                    svg,
                    f"{escape(name)}: the error rate among accepted predictions when only the "
                    "most confident share (coverage) is accepted, on clean data and at each "
                    "corruption's worst severity. A useful confidence gives a curve that "
                    f"starts low and rises towards the overall error rate at coverage 1.{drawn}",
                )
            )
        parts.append(table_html(_selective(part, f"relcol-selective-{index}", name)))
        return "\n".join(parts)

    return _section(
        "selective",
        "Selective prediction: abstaining when unsure",
        _selective_intro(table) + "\n" + by_dataset(_prepared(table), render),
    )


def _single_label(frame: pl.DataFrame | None) -> pl.DataFrame | None:
    if frame is None or "label" not in frame.columns:
        return frame
    return frame.filter(pl.col("label").is_null())


def _same_dataset(frame: pl.DataFrame | None, part: pl.DataFrame) -> pl.DataFrame | None:
    """The rows of ``frame`` with the study and dataset of ``part``."""
    if frame is None:
        return None
    first = part.row(0, named=True)
    keys = [k for k in ("study", "dataset") if k in frame.columns and k in part.columns]
    return frame.filter(pl.all_horizontal(pl.col(k) == first[k] for k in keys))


def _section(anchor: str, heading: str, body: str) -> str:
    return f'<section id="{anchor}">\n<h2>{escape(heading)}</h2>\n{body}\n</section>'


_DISCRIMINATION_INTRO = (
    "<p>How well the stated confidence ranks right predictions above wrong ones, per cell "
    "(all seeds and repeats pooled). AUROC counts tied confidences as half (0.5 is chance); "
    "AUPR success and error are average precisions with right, respectively wrong, "
    "predictions as the positives; FPR @ 95 % TPR is the share of wrong predictions still "
    "accepted by the highest threshold that keeps 95 % of the right ones. A dash: undefined "
    "(a cell with no right or no wrong prediction).</p>"
)


def _discrimination(frame: pl.DataFrame, table_id: str, name: str) -> GT:
    gt = _table(frame, _DISCRIMINATION, table_id).tab_header(
        title=f"Discrimination by cell: {name}",
        subtitle=f"Score: {_score(frame)}; Cohen's d and point-biserial r of confidence, right vs wrong",
    )
    return data_color(
        gt, columns="auroc", palette=_AUROC_PALETTE, domain=[0.5, 1.0], na_color="#FFFFFF"
    ).tab_source_note("Colour: AUROC from 0.5 (chance, white) to 1 (green).")


def _selective_intro(table: pl.DataFrame) -> str:
    coverage = _only(table, "target_coverage")
    risk = _only(table, "target_risk")
    return (
        "<p>Accepting predictions from the most confident down (tied confidences together), "
        "AURC is the mean error rate of the accepted predictions over all coverages, AURC* "
        "the same for a perfect ranking with the same accuracy, and E-AURC = AURC − AURC*, "
        "the part due to the confidence ranking. Risk @ coverage is the error rate when at "
        f"least {coverage:.0%} of predictions are accepted; coverage @ risk the largest share "
        f"that can be accepted with an error rate of at most {risk:.0%} (0: none can). Both "
        "read the curve as steps, without interpolation.</p>"
    )


def _selective(frame: pl.DataFrame, table_id: str, name: str) -> GT:
    coverage = _only(frame, "target_coverage")
    risk = _only(frame, "target_risk")
    headings = _SELECTIVE | labels(view_metrics("selective"), coverage=coverage, risk=risk)
    gt = _table(frame.drop("target_coverage", "target_risk"), headings, table_id)
    gt = gt.tab_header(
        title=f"Selective prediction by cell: {name}",
        subtitle=f"Score: {_score(frame)}; lower AURC and E-AURC are better",
    )
    top = frame.get_column("e_aurc").max()
    top = float(top) if top is not None and top > 0 else 1.0
    return data_color(
        gt, columns="e_aurc", palette=_EXCESS_PALETTE, domain=[0.0, top], na_color="#FFFFFF"
    ).tab_source_note("Colour: E-AURC from 0 (white) to its largest value (orange).")


def _prepared(table: pl.DataFrame) -> pl.DataFrame:
    """Sorted as the study lists things, with the row-group heading the corruption (each
    dataset has its own table)."""
    keys = [k for k in ("study", "dataset", "corruption", "model") if k in table.columns]
    then = ["label"] if "label" in table.columns else []
    return sort_by_appearance(table, keys, *then, "severity").with_columns(
        pl.col("corruption").alias(_GROUP)
    )


def _table(frame: pl.DataFrame, labels: Mapping[str, str], anchor: str) -> GT:
    shown = [c for c in labels if c in frame.columns]
    if "label" in frame.columns and frame.get_column("label").null_count() < frame.height:
        shown = ["label", *shown]
    bounds = [f"{c}_{end}" for c in shown for end in ("lo", "hi") if f"{c}_{end}" in frame.columns]
    data = frame.select("model", _GROUP, *shown, *bounds)
    gt = (
        GT(data, rowname_col="model", groupname_col=_GROUP, id=anchor)
        .tab_stubhead("model")
        .cols_label(**{c: labels.get(c, c) for c in shown})
        .fmt_number(cs.float() - cs.by_name("severity"), decimals=3)
        .fmt_number("severity", decimals=2)
        .fmt_integer(cs.integer(), use_seps=False)
    )
    return merge_intervals(gt, data)


def _score(frame: pl.DataFrame) -> str:
    if "score" not in frame.columns:
        return "confidence"
    return ", ".join(frame.get_column("score").unique(maintain_order=True).to_list())


def _only(frame: pl.DataFrame, column: str) -> float:
    return float(frame.get_column(column).drop_nulls()[0])
