"""The report's recalibration section: before vs after on the evaluation split.

Shown when the report's tables include ``recalibration`` (a study written by
``relcol recalibrate``). Formatting only: every number is a column of that table.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
from great_tables import GT

from relcol.analysis import CELL as _CELL
from relcol.analysis import named_labels
from relcol.metrics import labels
from relcol.report._tables import TOP_SCORE_LABELS, data_color, grouped_table, table_html

# the registry's labels; the before/after table scores the top label only, so "Brier", "NLL"
_METRICS = labels(("ece", "brier_top", "nll_top", "gap", "mce")) | TOP_SCORE_LABELS


def recalibration_section(tables: Mapping[str, pl.DataFrame], *, bins: int) -> str | None:
    """The section's HTML, or None when there is no recalibration table."""
    table = tables.get("recalibration")
    if table is None or table.is_empty():
        return None
    intro = (
        "<p>Each map was fitted on the calibration split (the clean, severity-0 predictions "
        "of a share of the sample ids) and is judged here on the disjoint evaluation split, "
        "at every severity. The rows of this study are those evaluation samples, once as "
        "stated (each model under its own name) and once per map (<code>model+method</code>); "
        "the calibration table above compares them too. Paired bootstrap intervals of the "
        "change are pending the statistical layer.</p>"
    )
    body = intro + table_html(recalibration_gt(table, bins=bins))
    return f'<section id="recalibration">\n<h2>Recalibration: before and after</h2>\n{body}\n</section>'


def recalibration_gt(table: pl.DataFrame, *, bins: int) -> GT:
    """A row per cell × method; before, after and change of each metric side by side."""
    shown = table.filter(pl.col("metric").is_in(list(_METRICS)))
    # the row group names the model and whatever else varies between cells
    group = ["model"] + [
        k
        for k in ("dataset", "corruption", "severity", "label")
        if shown.get_column(k).n_unique() > 1
    ]
    shown = named_labels(shown)  # a label by its name where the study has one
    wide = shown.pivot(
        on="metric",
        index=[*_CELL, "method", "n"],
        values=["before", "after", "change"],
        aggregate_function="first",
    ).with_columns(
        group=pl.concat_str(
            [pl.format(f"{k} {{}}", pl.col(k)) if k != "model" else pl.col(k) for k in group],
            separator=" / ",
        )
    )
    metrics = [m for m in _METRICS if f"before_{m}" in wide.columns]
    columns = [f"{part}_{m}" for m in metrics for part in ("before", "after", "change")]
    gt = (
        grouped_table(
            wide,
            group="group",
            row="method",
            columns=["n", *columns],
            table_id="relcol-recalibration",
            title="Recalibration on the evaluation split",
            subtitle=f"ECE and MCE on {bins} equal-width bins; change = after − before",
            stubhead="method",
        )
        .fmt_number(columns, decimals=3)
        .fmt_number([c for c in columns if c.startswith("change_")], decimals=3, force_sign=True)
    )
    for m in metrics:
        gt = gt.tab_spanner(
            _METRICS[m], columns=[f"{p}_{m}" for p in ("before", "after", "change")]
        )
    labels = {f"{p}_{m}": p for m in metrics for p in ("before", "after")}
    labels |= {f"change_{m}": "Δ" for m in metrics}
    gt = gt.cols_label(**labels)
    for m in metrics:
        if m != "gap":  # a smaller gap is not better when it turns negative
            gt = data_color(
                gt,
                columns=f"change_{m}",
                palette=["#1A9850", "#F7F7F7", "#D73027"],
                domain=_domain(wide.get_column(f"change_{m}")),
                na_color="#FFFFFF",
            )
    return gt.tab_source_note(
        "Green: the map lowered the metric (better); red: raised it. Brier and NLL are the "
        "top-label scores brier_top and nll_top."
    )


def _domain(values: pl.Series) -> list[float]:
    top = values.abs().max()
    top = float(top) if top is not None and top > 0 else 1.0
    return [-top, top]
