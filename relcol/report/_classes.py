"""The report's per-class section for ingested single-label prediction files.

Shown when the report's tables include ``by_class``: calibration per predicted class, with
the class names kept in the classes table (``spam``, not ``3``). Formatting only.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import polars.selectors as cs

from relcol.metrics import labels
from relcol.report._tables import grouped_table, table_html

_LABELS = labels(("n", "accuracy", "mean_confidence", "gap", "ece", "mce"))


def by_class_section(tables: Mapping[str, pl.DataFrame], *, bins: int) -> str | None:
    """The section's HTML, or None when there is no ``by_class`` table."""
    table = tables.get("by_class")
    if table is None or table.is_empty():
        return None
    keys = ["model"] + [
        k for k in ("dataset", "corruption", "severity") if table.get_column(k).n_unique() > 1
    ]
    shown = table.with_columns(
        group=pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator=" / "),
        name=pl.coalesce(pl.col("class_name"), pl.col("y_pred").cast(pl.String)),
    ).sort("group", "y_pred")
    metrics = [c for c in _LABELS if c in shown.columns]
    gt = (
        grouped_table(
            shown,
            group="group",
            row="name",
            columns=metrics,
            table_id="relcol-by-class",
            title="Calibration by predicted class",
            subtitle=f"Top-label ECE and MCE on {bins} equal-width bins, rows predicted as each class",
            stubhead="predicted class",
        )
        .cols_label(**{c: _LABELS[c] for c in metrics})
        .fmt_number(cs.float(), decimals=3)
    )
    body = table_html(gt)
    return f'<section id="by-class">\n<h2>By predicted class</h2>\n{body}\n</section>'
