"""The summaries a report prints beside its metric tables, computed from them before anything
is drawn: ``relcol.report`` renders these tables and computes none of them."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from relcol.analysis._corruptions import realised_rates, realised_trends
from relcol.analysis._degradation import degradation_summary, worst_gaps
from relcol.analysis._headline import verdicts

#: The tables ``summary_tables`` adds, by name.
SUMMARY_TABLES = ("degradation", "worst_gaps", "verdicts", "realised_rates", "realised_trends")


def summary_tables(tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The report's summaries of ``tables`` (which need ``calibration``), by name.

    ``degradation`` (``degradation_summary``: clean versus worst severity, one row per
    curve, labels included) and ``worst_gaps`` (the most overconfident cell per model)
    always; ``verdicts`` (per model, from the single-label curves) when ``thresholds`` has
    traffic lights; ``realised_rates`` and ``realised_trends`` (accuracy and gap against
    the realised rate) when there is a non-empty ``corruptions`` table.

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
    out = {"degradation": degradation_summary(calibration), "worst_gaps": worst_gaps(calibration)}
    thresholds = tables.get("thresholds")
    if thresholds is not None and "traffic_light" in thresholds.columns:
        if "label" in thresholds.columns:
            thresholds = thresholds.filter(pl.col("label").is_null())
        if not thresholds.is_empty():
            out["verdicts"] = verdicts(thresholds)
    corruptions = tables.get("corruptions")
    if corruptions is not None and not corruptions.is_empty():
        out["realised_rates"] = realised_rates(corruptions)
        out["realised_trends"] = realised_trends(calibration, corruptions, ("accuracy", "gap"))
    return out
