"""Calibration of any (confidence, outcome) pairs with a soft or hard outcome, one row per group.

The multi-label modes and the recalibration before/after table both score pairs whose
outcome is not the long table's ``correct`` (it may be the label's presence, or an
annotator agreement in [0, 1]), so they share this one function. Everything is derived from
per-bin sums, as in ``relcol.metrics.calibration``; ``brier_top`` and ``nll_top`` follow
METRICS.md §3 with the outcome in place of z. The SQL twin is the ``multilabel`` view.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.metrics import bin_index

#: The columns ``binary_scores`` adds after the group keys, in order.
SCORES = (
    "n",
    "accuracy",
    "mean_confidence",
    "gap",
    "abs_gap",
    "ece",
    "mce",
    "brier_top",
    "nll_top",
)
#: nll_top's clip: log(c) is taken of c clipped to [EPS, 1 − EPS] (METRICS.md §3).
EPS = 1e-15


def binary_scores(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Iterable[str],
    *,
    bins: int = 15,
    confidence: str = "confidence",
    outcome: str = "outcome",
) -> pl.LazyFrame:
    """n, accuracy (the mean outcome), mean confidence, gap, ECE, MCE, brier_top, nll_top.

    Parameters
    ----------
    frame
        Rows with the ``by`` columns, a ``confidence`` in [0, 1] and an ``outcome`` in
        [0, 1] (a bool, 0/1, or a soft target such as an agreement share).
    by
        Grouping columns (a null key is one group).
    bins
        Equal-width bins M for ECE and MCE (``relcol.metrics.bin_index``).

    Returns
    -------
    pl.LazyFrame
        ``by`` then ``SCORES``; one row per group, unsorted.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({"g": "a", "confidence": [0.8, 0.8], "outcome": [1.0, 0.5]})
    >>> binary_scores(rows, ["g"], bins=10).collect().select("accuracy", "gap").rows()
    [(0.75, 0.050000000000000044)]
    """
    keys = list(by)
    c = pl.col(confidence).cast(pl.Float64)
    o = pl.col(outcome).cast(pl.Float64)
    clipped = c.clip(EPS, 1 - EPS)
    n, sum_c, sum_o = pl.col("n"), pl.col("sum_c"), pl.col("sum_o")
    return (
        frame.lazy()
        .group_by([*keys, bin_index(confidence, bins=bins)])
        .agg(
            n=pl.len().cast(pl.Int64),
            sum_c=c.sum(),
            sum_o=o.sum(),
            sum_se=((c - o) * (c - o)).sum(),
            sum_ll=(-(o * clipped.log() + (1 - o) * (1 - clipped).log())).sum(),
        )
        .group_by(keys)
        .agg(
            n=n.sum(),
            accuracy=sum_o.sum() / n.sum(),
            mean_confidence=sum_c.sum() / n.sum(),
            ece=(sum_o - sum_c).abs().sum() / n.sum(),
            mce=((sum_o - sum_c).abs() / n).max(),
            brier_top=pl.col("sum_se").sum() / n.sum(),
            nll_top=pl.col("sum_ll").sum() / n.sum(),
        )
        .with_columns(gap=pl.col("mean_confidence") - pl.col("accuracy"))
        .with_columns(abs_gap=pl.col("gap").abs())
        .select(*keys, *SCORES)
    )
