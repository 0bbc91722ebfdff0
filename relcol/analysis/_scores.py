"""Calibration of any (confidence, outcome) pairs with a soft or hard outcome, one row per group.

The multi-label modes and the recalibration before/after table both score pairs whose
outcome is not the long table's ``correct`` (it may be the label's presence, or an
annotator agreement in [0, 1]), so they share this one function. Everything is derived from
per-bin sums, as in ``relcol.metrics.calibration``; ``brier_top`` and ``nll_top`` follow
docs/metrics.md with the outcome in place of z. The SQL twin is the ``multilabel`` view.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.metrics import bin_index, exact_sum

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
#: nll_top's clip: log(c) is taken of c clipped to [EPS, 1 − EPS] (docs/metrics.md).
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
            sum_c=exact_sum(c),
            sum_o=exact_sum(o),
            sum_se=exact_sum((c - o) * (c - o)),
            sum_ll=exact_sum(-(o * clipped.log() + (1 - o) * (1 - clipped).log())),
        )
        .group_by(keys)
        .agg(
            n=n.sum(),
            accuracy=exact_sum(sum_o) / n.sum(),
            mean_confidence=exact_sum(sum_c) / n.sum(),
            ece=exact_sum((sum_o - sum_c).abs()) / n.sum(),
            mce=((sum_o - sum_c).abs() / n).max(),
            brier_top=exact_sum(pl.col("sum_se")) / n.sum(),
            nll_top=exact_sum(pl.col("sum_ll")) / n.sum(),
        )
        .with_columns(gap=pl.col("mean_confidence") - pl.col("accuracy"))
        .with_columns(abs_gap=pl.col("gap").abs())
        .select(*keys, *SCORES)
    )
