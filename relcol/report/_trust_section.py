"""The report's first section after the summary: where trust breaks (docs/statistics.md).

For each model × corruption: whether the model is already overconfident when clean, the
break point (from which severity the gap has risen significantly over clean), d* (where it
is also significantly overconfident by more than τ), the gap and accuracy there, the trend
of the gap (Spearman ρ of the pooled curve with its exact p-value) and the traffic light
with the metric that decided it and the recommended action. Formatting only: every number is a column of
the statistical layer's ``thresholds`` and ``trends`` tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import polars as pl
from great_tables import GT, style

from relcol.analysis import require_columns, sort_by_appearance
from relcol.report._layout import by_dataset, section
from relcol.report._tables import NBSP, table_html
from relcol.report._terminal import WITHOUT_CLEAN

_GROUP = "__group"
#: Background of each traffic light (light tints, so the text stays readable).
_LIGHT_COLOURS = {"green": "#C7E9C0", "amber": "#FDD49E", "red": "#FCAE91"}
#: Columns whose value may put its bound or p-value on a second line.
_WRAPPING = ("clean_gap", "break_change", "d_star_gap", "trend")
_LABELS = {
    "clean_gap": "gap when clean",
    "clean_overconfident": "overconfident when clean",
    "break_point": "break point",
    "break_change": "Δ(d) − Δ(0)",
    "d_star": "d*",
    "d_star_gap": "gap at d*",
    "d_star_accuracy": "accuracy at d*",
    "trend": "gap trend ρ (p)",
    "traffic_light": "light",
    "light_severity": "at d",
    "deciding_metric": "decided by",
    "action": "action",
}


def trust_section(
    tables: Mapping[str, pl.DataFrame], *, meta: Mapping[str, Any] | None = None, **_: object
) -> str | None:
    """The "Where trust breaks" section, or None without a ``thresholds`` table."""
    thresholds = tables.get("thresholds")
    if thresholds is None or thresholds.is_empty():
        return None
    require_columns(
        thresholds, ("dataset", "model", "corruption", "d_star", "traffic_light"), "thresholds"
    )
    frame = _with_trend(thresholds, tables.get("trends"))
    if "label" in frame.columns:
        frame = frame.filter(pl.col("label").is_null())  # per-label curves: multi-label section
    if frame.is_empty():
        return None
    body = by_dataset(
        frame, lambda part, name, index: table_html(_table(part, name, index), collapse=False)
    )
    return section("trust", "Where trust breaks", body, lead=_lead(thresholds, meta or {}))


def _with_trend(thresholds: pl.DataFrame, trends: pl.DataFrame | None) -> pl.DataFrame:
    """``thresholds`` with ``trend``, the gap's Spearman ρ and p-value as text."""
    if trends is None or trends.is_empty() or "spearman_rho" not in trends.columns:
        return thresholds.with_columns(trend=pl.lit(None, pl.String))
    keys = [
        k
        for k in ("study", "dataset", "model", "corruption", "label")
        if k in thresholds.columns and k in trends.columns
    ]
    gap = trends.filter(pl.col("metric") == "gap")
    text = [
        None if rho is None else f"{rho:+.2f} ({_p(p).replace(' ', NBSP)})"
        for rho, p in zip(gap["spearman_rho"], gap["p_value"], strict=True)
    ]
    gap = gap.select(*keys).with_columns(trend=pl.Series(text, dtype=pl.String))
    return thresholds.join(gap, on=keys, how="left", nulls_equal=True, maintain_order="left")


def _p(p: float | None) -> str:
    if p is None:
        return "p –"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _table(part: pl.DataFrame, name: str, index: int) -> GT:
    texts = part.with_columns(
        *(_bound(name, part) for name in ("clean_gap", "d_star_gap", "break_change")),
        pl.col("clean_overconfident").replace_strict(
            {True: "yes", False: "no"}, default=None, return_dtype=pl.String
        ),
    )
    frame = sort_by_appearance(texts, ["corruption", "model"]).with_columns(
        pl.col("corruption").alias(_GROUP)
    )
    shown = [c for c in _LABELS if c in frame.columns]
    data = frame.select("model", _GROUP, *shown)
    gt = (
        GT(data, rowname_col="model", groupname_col=_GROUP, id=f"relcol-trust-{index}")
        .tab_header(
            title=f"Where trust breaks: {name}",
            subtitle="break point: from which severity the gap Δ has risen significantly "
            "over clean; d*: from which it is also significantly above τ",
        )
        .tab_stubhead("model")
        .cols_label(**{c: _LABELS[c] for c in shown})
        .fmt_number(
            [c for c in ("d_star", "break_point", "light_severity") if c in shown], decimals=2
        )
        .fmt_number([c for c in ("d_star_accuracy",) if c in shown], decimals=3)
        .sub_missing(missing_text="–")
        .tab_options(table_font_size="13px")
    )
    # So that the table fits a laptop's page (1 280 px), the action's words wrap, and a value
    # may put its bound or p-value on a second line (the bracket and the parentheses stay whole).
    # The deciding metric, one short word, stays on one line.
    # (One style per cell: great-tables joins a cell's styles with a space only.)
    wrapping = [c for c in _WRAPPING if c in shown]
    if wrapping:
        gt = gt.tab_style(style.css("white-space: normal"), locations=_body(gt, wrapping, None))
    if "action" in shown:
        gt = gt.tab_style(
            style.css("white-space: normal; min-width: 7rem"), locations=_body(gt, "action", None)
        )
    for light, colour in _LIGHT_COLOURS.items():
        gt = gt.tab_style(
            style.fill(color=colour),
            locations=_body(gt, "traffic_light", pl.col("traffic_light") == light),
        )
    if "clean_gap" in part.columns and part.get_column("clean_gap").null_count():
        unmeasured = sort_by_appearance(
            part.filter(pl.col("clean_gap").is_null()), ["corruption", "model"]
        )
        gt = gt.tab_source_note(
            f"{WITHOUT_CLEAN}: "
            + ", ".join(
                f"{c} of {m}" for c, m in unmeasured.select("corruption", "model").iter_rows()
            )
            + "."
        )
    return gt.tab_source_note(
        "Numbers in brackets are one-sided lower bounds at the report's level. The break "
        "point and d* are tested in a fixed sequence from the most severe level down, so "
        "the change is significant there and at every more severe level, and the chance of "
        "declaring either for a curve that did not degrade is at most α; – never reached "
        "within the severities studied. The light is the worst over the curve's severities, "
        "each judged with bounds at level α/K (K severities): red when the calibration "
        "error is significantly above 0.15, AUROC significantly below 0.75 or a well-filled "
        "bin significantly off by more than 0.20; green when the calibration error is "
        "significantly below 0.05, AUROC significantly above 0.80 and no well-filled bin is "
        'off by more than 0.15; amber otherwise. "At d" is where it first appears, with '
        "the metric that decided it and the action recommended there."
    )


def _bound(name: str, frame: pl.DataFrame) -> pl.Series:
    """``value [≥ lower]`` as text (null without a value), replacing the column ``name``."""
    if not {name, f"{name}_lo"} <= set(frame.columns):
        return pl.Series(name, [None] * frame.height, dtype=pl.String)
    text = [
        None if value is None else f"{value:+.3f}" + ("" if lo is None else f" [≥{NBSP}{lo:+.3f}]")
        for value, lo in zip(frame[name], frame[f"{name}_lo"], strict=True)
    ]
    return pl.Series(name, text, dtype=pl.String)


def _body(gt: GT, column: str | list[str], rows: pl.Expr | None):
    from great_tables import loc

    return loc.body(columns=column, rows=rows)


def _lead(thresholds: pl.DataFrame, meta: Mapping[str, Any]) -> str:
    tau = thresholds.get_column("tau")[0] if "tau" in thresholds.columns else None
    replicates = meta.get("bootstrap")
    level = meta.get("level")
    parts = ["Per model and corruption: where confidence stops meaning what it says."]
    if replicates:
        parts.append(
            f"Intervals: paired Poisson bootstrap over test samples, B = {int(replicates):,}"
            + (f", {float(level):.0%} percentile" if level else "")
            + "; the same resample in every cell, so differences between severities and "
            "models are paired."
        )
    if tau is not None:
        margin = thresholds.get_column("margin")[0] if "margin" in thresholds.columns else None
        parts.append(
            f"Overconfident when clean: the clean gap Δ = mean confidence − accuracy has a "
            f"one-sided lower bound above τ = {tau:g}. Break point: the smallest severity "
            "from which Δ(d) − Δ(0) is significantly above "
            + (f"{margin:g}" if margin is not None else "the margin")
            + "; an improvement is never a break. d*: the same, where Δ(d) is also "
            "significantly above τ. These verdicts are about the trained models in the "
            "warehouse: their bounds resample test samples and hold the models fixed."
        )
    if meta.get("intervals") == "training":
        parts.append(
            "The metric tables' intervals also include training variation: each is widened "
            "by the spread between training seeds (t quantile with seeds − 1 degrees of "
            "freedom)."
        )
    elif replicates:
        parts.append(
            "The metric tables' intervals cover test-sample variation only, not retraining: "
            "the spread over training seeds is shown beside them (relcol report --intervals "
            "training widens them by it)."
        )
    return escape(" ".join(parts))
