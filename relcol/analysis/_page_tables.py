"""The summaries a report prints beside its metric tables, and the shapes its figures and
tables draw from, computed from the metric tables before anything is drawn:
``relcol.report`` renders these tables and computes none of them."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from relcol.analysis._corruptions import on_realised_axis, realised_rates, realised_trends
from relcol.analysis._degradation import degradation_summary, worst_gaps
from relcol.analysis._headline import GRID_COLUMNS, break_grid, verdicts
from relcol.analysis._multilabel import macro_tables

#: The tables ``summary_tables`` adds, by name.
SUMMARY_TABLES = (
    "degradation",
    "worst_gaps",
    "verdicts",
    "break_grid",
    "realised_rates",
    "realised_trends",
    "realised_axis",
    "multilabel_macro_discrimination",
    "multilabel_macro_selective",
)


def summary_tables(
    tables: Mapping[str, pl.DataFrame], *, missing: bool = False
) -> dict[str, pl.DataFrame]:
    """The report's summaries of ``tables`` (which need ``calibration``), by name.

    ``degradation`` (``degradation_summary``: clean versus worst severity, one row per
    curve, labels included) and ``worst_gaps`` (the most overconfident cell per model)
    always; ``verdicts`` (per model, from the single-label curves) when ``thresholds`` has
    traffic lights, and ``break_grid`` (the headline grid's state per curve) when it also
    has the break points; ``realised_rates``, ``realised_trends`` (accuracy and gap against
    the realised rate) and ``realised_axis`` (``calibration`` with each cell's
    ``realised_rate`` and its curve's ``diverges`` flag, what the degradation figures
    draw) when there is a non-empty ``corruptions`` table; for a multi-label study (a
    ``multilabel`` table) the macro rows of the rank tables (``macro_tables``) unless
    ``tables`` has them already (the statistical layer's, with intervals).

    ``missing``: compute only the tables ``tables`` lacks (for a caller who may bring
    some of them).

    Examples
    --------
    >>> cal = pl.DataFrame({
    ...     "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
    ...     "severity": [0.0, 0.5], "accuracy": [0.75, 0.5],
    ...     "mean_confidence": [0.75, 0.875], "gap": [0.0, 0.375], "ece": [0.125, 0.375],
    ... })
    >>> out = summary_tables({"calibration": cal})
    >>> sorted(out)
    ['degradation', 'worst_gaps']
    >>> out["degradation"].select("accuracy_drop", "ece_rise").row(0)
    (0.25, 0.25)
    """
    calibration = tables["calibration"]
    steps = {
        "degradation": lambda: degradation_summary(calibration),
        "worst_gaps": lambda: worst_gaps(calibration),
    }
    thresholds = tables.get("thresholds")
    if thresholds is not None and "traffic_light" in thresholds.columns:
        if "label" in thresholds.columns:
            thresholds = thresholds.filter(pl.col("label").is_null())
        if not thresholds.is_empty():
            steps["verdicts"] = lambda: verdicts(thresholds)
            if set(GRID_COLUMNS) <= set(thresholds.columns):
                steps["break_grid"] = lambda: break_grid(thresholds)
    corruptions = tables.get("corruptions")
    if corruptions is not None and not corruptions.is_empty():
        steps["realised_rates"] = lambda: realised_rates(corruptions)
        steps["realised_trends"] = lambda: realised_trends(
            calibration, corruptions, ("accuracy", "gap")
        )
        steps["realised_axis"] = lambda: on_realised_axis(calibration, corruptions)
    out = {name: step() for name, step in steps.items() if not (missing and name in tables)}
    if "multilabel" in tables:
        out |= {k: v for k, v in macro_tables(tables).items() if k not in tables}
    return out
