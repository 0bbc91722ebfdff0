"""Calibration bins: equal-width and equal-mass (docs/metrics.md).

**Equal width.** Bin m of M is (m/M, (m+1)/M]; the first bin is [0, 1/M] and a confidence
of exactly 1.0 lands in the last: bin(c) = max(⌈c·M⌉ − 1, 0). The SQL twin is
``sql/macros/bin_index.sql``.

**Equal mass.** Within a group, rows are ordered by (confidence, sample_id, seed, repeat)
and the row of 0-based rank r of n gets bin ⌊r·M/n⌋, so tied confidences are split
deterministically and both engines assign every row the same bin. The SQL twin is the
``'mass'`` branch of ``sql/macros/calibration_bins.sql``.

The per-bin sums built on these (``calibration_bins``) are in ``_statistics.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from relcol.checks import check_bins

#: The columns that order rows for equal-mass bins after the confidence (docs/metrics.md).
ORDER = ("sample_id", "seed", "repeat")


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


def mass_bin_index(
    confidence: str = "confidence", order: Sequence[str] = ORDER, *, bins: int = 15
) -> pl.Expr:
    """The 0-based equal-mass bin of each row within its group, named ``bin`` (Int64).

    Rows are ranked by ``confidence`` and then by ``order`` (ties split by those columns);
    the row of 0-based rank r among n gets ⌊r·M/n⌋. Use it with ``.over(keys)`` to bin
    within groups; the bins hold ⌊n/M⌋ or ⌈n/M⌉ rows, and with n < M some are empty.

    Parameters
    ----------
    confidence
        Column holding the stated confidence.
    order
        Columns that break ties in confidence (default ``sample_id``, ``seed``,
        ``repeat``: unique within a cell). With ``()``, tied rows are split in row order.
    bins
        Number of bins M, an int >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import mass_bin_index
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.5, 0.5, 0.7], "sample_id": [0, 2, 1, 3]})
    >>> rows.select(mass_bin_index(order=["sample_id"], bins=2))["bin"].to_list()
    [1, 0, 0, 1]
    """
    bins = check_bins(bins)
    rank = pl.arg_sort_by([confidence, *order]).arg_sort().cast(pl.Int64)
    return (rank * bins // pl.len()).alias("bin")


def _bin_index(confidence: str | pl.Expr, bins: int) -> pl.Expr:
    c = (pl.col(confidence) if isinstance(confidence, str) else confidence).cast(pl.Float64)
    # upper = ⌈c·M⌉ is the index of the bin's upper edge, but the float product can land one
    # off an exact edge; comparing c with the float edges (upper−1)/M and upper/M settles it,
    # so the bin is exactly the number of inner edges k/M (as floats) strictly below c.
    # Float64 until the final cast: casting between steps made it ~4× slower.
    upper = (c * bins).ceil().clip(1, bins)
    above_lower = (c > grid_value(upper - 1, bins)).cast(pl.Float64)
    above_upper = (c > grid_value(upper, bins)).cast(pl.Float64)
    return (upper - 2 + above_lower + above_upper).clip(lower_bound=0).cast(pl.Int64).alias("bin")


def _bin_index_of_float32(value: pl.Expr, bins: int) -> pl.Expr:
    """``_bin_index`` of Float32 values (the long table's probability entries), faster.

    For a Float32 value p and M < 2^24, p·M is exact in Float64 (24 + 24 significant bits),
    so ⌈p·M⌉ is exact; and no Float32 value lies between k/M and its Float64 rounding (for
    non-dyadic k/M the rounding needs 29 trailing zero bits, which the period of k/M in
    binary cannot give for M < 2^24). So max(⌈p·M⌉ − 1, 0) is the convention's bin exactly,
    without the edge comparisons; a test checks every Float32 next to every edge. The SQL
    side takes the same shortcut for FLOAT values.
    """
    upper = (value.cast(pl.Float64) * bins).ceil().clip(1, bins)
    return (upper - 1).cast(pl.Int64).alias("bin")


def grid_value(k: pl.Expr, steps: int) -> pl.Expr:
    """k/M (M = ``steps``) as the correctly rounded Float64, the value numpy and DuckDB give:
    the edges of M equal-width bins, the points of a grid of M steps.

    Polars divides a column by a scalar as a product with the scalar's reciprocal, which is
    one ulp off for many k/M (3/5 gives 0.6000000000000001; pola-rs/polars#27753, closed as
    intended), and an edge one ulp off moves a confidence sitting on it to the wrong bin. A
    column divided by a column is a true division, so M enters as a column.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import grid_value
    >>> pl.DataFrame({"k": [3, 3]}).select(grid_value(pl.col("k"), 10)).to_series().to_list()
    [0.3, 0.3]
    """
    k = k.cast(pl.Float64)
    return k / (k * 0 + steps)
