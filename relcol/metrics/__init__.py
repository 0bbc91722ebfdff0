"""Metrics as Polars expression builders (METRICS.md); their SQL twins live in ``sql/``.

Builders are pure: they return ``pl.Expr`` or ``pl.LazyFrame`` and never read, write or
collect. Row-level builders (``ece()``) work inside any ``group_by().agg()``; the fast
path (``calibration()``) aggregates rows once into per-bin sums (``calibration_bins()``)
and derives every number from those. ``REGISTRY`` lists every metric with the Polars and
SQL code that computes it.

>>> import polars as pl
>>> from relcol.metrics import accuracy, ece, gap
>>> rows = pl.DataFrame({"model": ["a", "a", "b"], "confidence": [0.75, 0.75, 0.5], "correct": [True, False, True]})
>>> rows.group_by("model").agg(accuracy(), gap(), ece(bins=4)).sort("model").rows()
[('a', 0.5, 0.25, 0.25), ('b', 1.0, -0.5, 0.5)]
"""

from __future__ import annotations

from relcol.errors import ParameterError
from relcol.metrics._bins import bin_index, calibration_bins
from relcol.metrics._calibration import (
    abs_gap,
    abs_gap_from_bins,
    accuracy,
    accuracy_from_bins,
    calibration,
    count,
    count_from_bins,
    ece,
    ece_from_bins,
    gap,
    gap_from_bins,
    mce,
    mce_from_bins,
    mean_confidence,
    mean_confidence_from_bins,
)
from relcol.metrics._registry import REGISTRY, Metric

__all__ = [
    "REGISTRY",
    "Metric",
    "ParameterError",
    "abs_gap",
    "abs_gap_from_bins",
    "accuracy",
    "accuracy_from_bins",
    "bin_index",
    "calibration",
    "calibration_bins",
    "count",
    "count_from_bins",
    "ece",
    "ece_from_bins",
    "gap",
    "gap_from_bins",
    "mce",
    "mce_from_bins",
    "mean_confidence",
    "mean_confidence_from_bins",
]
