"""What the corruption operators actually did, averaged over their draws, and the curves
read against that realised rate instead of the nominal severity d.

Input is the corruptions side table: one row per (study, dataset, corruption,
operator, severity, repeat) with the realised rate each draw achieved.

A curve's realised rate *diverges* from d when, at some severity, the mean realised rate
differs from d by more than ``max(ABS_TOLERANCE, REL_TOLERANCE·d)`` (0.02, or 10 % of d,
whichever is larger). Such a curve's x-axis is then better read as the realised rate.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from relcol.analysis._frames import require_columns, sort_by_appearance
from relcol.analysis._trends import spearman
from relcol.metrics import exact_mean

#: A mean realised rate within max(ABS_TOLERANCE, REL_TOLERANCE·d) of d tracks d.
ABS_TOLERANCE = 0.02
REL_TOLERANCE = 0.1

_CELL = ("dataset", "corruption", "severity")


def realised_rates(corruptions: pl.DataFrame) -> pl.DataFrame:
    """Mean realised rate per dataset × corruption × severity.

    Parameters
    ----------
    corruptions
        The corruptions table: ``dataset``, ``corruption``, ``severity`` and
        ``realised_rate``; ``study`` and ``changed_share`` are used when present.

    Returns
    -------
    polars.DataFrame
        ``[study,] dataset, corruption, severity, draws, realised_rate[, changed_share],
        deviation, diverges``, where ``draws`` counts the rows averaged and the rates are
        their means, ``deviation`` is realised_rate − d and ``diverges`` whether
        |deviation| exceeds max(0.02, 0.1·d). Datasets and corruptions keep their order
        of first appearance; severities are ascending.
    """
    require_columns(
        corruptions, ("dataset", "corruption", "severity", "realised_rate"), "corruptions"
    )
    keys = [k for k in ("study", "dataset", "corruption") if k in corruptions.columns]
    rates = [c for c in ("realised_rate", "changed_share") if c in corruptions.columns]
    means = corruptions.group_by(*keys, "severity", maintain_order=True).agg(
        pl.len().alias("draws"), *(exact_mean(pl.col(c).cast(pl.Float64)) for c in rates)
    )
    deviation = pl.col("realised_rate") - pl.col("severity")
    tolerance = pl.max_horizontal(pl.lit(ABS_TOLERANCE), REL_TOLERANCE * pl.col("severity"))
    return sort_by_appearance(
        means.with_columns(deviation.alias("deviation")).with_columns(
            diverges=pl.col("deviation").abs() > tolerance
        ),
        keys,
        "severity",
    )


def on_realised_axis(table: pl.DataFrame, corruptions: pl.DataFrame) -> pl.DataFrame:
    """``table`` (any per-cell table, e.g. calibration) with each cell's mean realised rate
    as column ``realised_rate`` and its curve's ``diverges`` flag (any severity of that
    dataset × corruption diverging); both null for cells without corruption draws."""
    rates = realised_rates(corruptions)
    keys = [k for k in ("study", *_CELL) if k in rates.columns and k in table.columns]
    curve = [k for k in keys if k != "severity"]
    flags = rates.group_by(curve).agg(pl.col("diverges").any())
    return table.join(
        rates.select(*keys, "realised_rate"), on=keys, how="left", maintain_order="left"
    ).join(flags, on=curve, how="left", maintain_order="left")


def realised_trends(
    calibration: pl.DataFrame,
    corruptions: pl.DataFrame,
    metrics: tuple[str, ...] = ("accuracy", "mean_confidence", "gap", "ece"),
) -> pl.DataFrame:
    """Spearman ρ of each curve's metric against the realised rate, beside ρ against d.

    One row per curve (study, dataset, model, corruption[, label]) and metric, over the
    pooled curve (one point per severity): ``rho_nominal`` and ``p_nominal`` against d,
    ``rho_realised`` and ``p_realised`` against the mean realised rate (exact permutation
    p-values for ≤ 10 points, see ``spearman``), ``max_deviation`` (largest
    |realised − d|) and ``diverges``. The two ρ differ only where the realised rate does
    not rise with d; ``diverges`` says where the x-axis of a curve is not what d says.
    """
    axis = on_realised_axis(calibration, corruptions).filter(pl.col("realised_rate").is_not_null())
    curve = [k for k in ("study", "dataset", "model", "corruption", "label") if k in axis.columns]
    rows = []
    for key, part in axis.sort("severity").group_by(curve, maintain_order=True):
        d = part.get_column("severity").to_numpy()
        realised = part.get_column("realised_rate").to_numpy()
        for metric in (m for m in metrics if m in part.columns):
            y = part.get_column(metric).cast(pl.Float64).to_numpy()
            nominal, on_realised = spearman(d, y), spearman(realised, y)
            rows.append(
                {
                    **dict(zip(curve, key, strict=True)),
                    "metric": metric,
                    "rho_nominal": nominal[0],
                    "p_nominal": nominal[1],
                    "rho_realised": on_realised[0],
                    "p_realised": on_realised[1],
                    "max_deviation": float(np.max(np.abs(realised - d))),
                    "diverges": bool(part.get_column("diverges").any()),
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
