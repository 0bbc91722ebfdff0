"""Equal-width calibration bins and their sufficient statistics (METRICS.md §2, DESIGN.md §7).

Bin m of M is (m/M, (m+1)/M]; the first bin is [0, 1/M] and a confidence of exactly 1.0
lands in the last: bin(c) = max(⌈c·M⌉ − 1, 0). The SQL twin is ``sql/macros/bin_index.sql``
and ``sql/macros/calibration_bins.sql``.

Every calibration number is a function of three sums per group × bin (n, Σc, Σz), so the
report scans the rows once into this small frame and derives ECE, MCE, the gap and later
their bootstrap replicates from it.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.metrics._params import check_bins, check_columns, check_keys
from relcol.store import CELL


def bin_index(confidence: str = "confidence", *, bins: int = 15) -> pl.Expr:
    """The 0-based equal-width bin of each row's confidence, named ``bin`` (Int64).

    bin(c) = max(⌈c·M⌉ − 1, 0): bins are (m/M, (m+1)/M], the first is [0, 1/M], and
    c = 1 is in the last bin. A confidence equal to an edge m/M (the float that
    ``bin_lower`` reports) is always in the lower bin, even where ⌈c·M⌉ computed in
    floating point is one too high (fl(7/25)·25 = 7.000000000000001).

    Parameters
    ----------
    confidence
        Column holding the stated confidence, in [0, 1].
    bins
        Number of bins M, an int >= 1.

    Returns
    -------
    pl.Expr
        A row-level Int64 expression.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import bin_index
    >>> pl.DataFrame({"confidence": [0.0, 0.2, 0.21, 1.0]}).select(bin_index(bins=5))["bin"].to_list()
    [0, 0, 1, 4]
    """
    return _bin_index(confidence, check_bins(bins))


def _bin_index(confidence: str, bins: int) -> pl.Expr:
    c = pl.col(confidence).cast(pl.Float64)
    # upper = ⌈c·M⌉ is the index of the bin's upper edge, but the float product can land one
    # off an exact edge; comparing c with the float edges (upper−1)/M and upper/M settles it,
    # so the bin is exactly the number of inner edges k/M (as floats) strictly below c.
    # Float64 until the final cast: casting between steps made it ~4× slower.
    upper = (c * bins).ceil().clip(1, bins)
    above_lower = (c > _per_bins(upper - 1, bins)).cast(pl.Float64)
    above_upper = (c > _per_bins(upper, bins)).cast(pl.Float64)
    return (upper - 2 + above_lower + above_upper).clip(lower_bound=0).cast(pl.Int64).alias("bin")


def _per_bins(k: pl.Expr, bins: int) -> pl.Expr:
    """k/M as the correctly rounded Float64 (the value numpy and DuckDB give), for k in 0..M.

    Polars divides a column by a scalar as a product with the scalar's reciprocal, which is
    one ulp off for many k/M (3/5 gives 0.6000000000000001; pola-rs/polars#27753, closed as
    intended), and an edge one ulp off moves a confidence sitting on it to the wrong bin. A
    column divided by a column is a true division, so M enters as a column.
    """
    k = k.cast(pl.Float64)
    return k / (k * 0 + bins)


def calibration_bins(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    bins: int = 15,
    confidence: str = "confidence",
    correct: str = "correct",
) -> pl.LazyFrame:
    """Per-bin sufficient statistics: one row per group × non-empty equal-width bin.

    Parameters
    ----------
    frame
        Prediction rows (the long table or any frame with the named columns).
    by
        Grouping columns, passed through; default the cell key. A null ``label`` (the
        single-label case) forms one group, as in SQL ``GROUP BY``.
    bins
        Number of bins M, an int >= 1.
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``bin`` (0-based, Int64), ``bin_lower`` = bin/M,
        ``bin_upper`` = (bin+1)/M, ``n`` (Int64), ``sum_confidence``, ``sum_correct``,
        ``mean_confidence``, ``accuracy`` (Float64); sorted by ``by`` and ``bin``, nulls last.
        The SQL view ``calibration_bins`` has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import calibration_bins
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> calibration_bins(rows, "model", bins=2).collect().select("bin", "n", "accuracy").rows()
    [(0, 2, 0.5), (1, 1, 1.0)]
    """
    bins = check_bins(bins)
    keys = check_keys(by)
    lazy = frame.lazy()
    check_columns("calibration_bins", lazy, [*keys, confidence, correct])
    return _bin_statistics(lazy, keys, bins, confidence, correct).sort(
        [*keys, "bin"], nulls_last=True
    )


def _bin_statistics(
    frame: pl.LazyFrame, keys: list[str], bins: int, confidence: str, correct: str
) -> pl.LazyFrame:
    """``calibration_bins`` without the checks and the final sort."""
    n, sum_c, sum_z = pl.col("n"), pl.col("sum_confidence"), pl.col("sum_correct")
    return (
        frame.group_by([*keys, _bin_index(confidence, bins)])
        .agg(
            n=pl.len().cast(pl.Int64),
            sum_confidence=pl.col(confidence).cast(pl.Float64).sum(),
            sum_correct=pl.col(correct).cast(pl.Float64).sum(),
        )
        .select(
            *keys,
            "bin",
            bin_lower=_per_bins(pl.col("bin"), bins),
            bin_upper=_per_bins(pl.col("bin") + 1, bins),
            n=n,
            sum_confidence=sum_c,
            sum_correct=sum_z,
            mean_confidence=sum_c / n,
            accuracy=sum_z / n,
        )
    )
