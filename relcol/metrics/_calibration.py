"""Calibration: accuracy, mean confidence, the gap Δ, ECE and MCE (METRICS.md §2).

Each metric is written twice on purpose, for two grains:

- a **row-level** builder (``ece()``) for any ``group_by().agg()`` over prediction rows;
- a **bin-level** builder (``ece_from_bins()``) that aggregates the rows of a
  ``calibration_bins`` frame, used by ``calibration()``, the fast path the report takes
  (one scan into per-bin sums, then a few thousand rows; several times faster than the
  row-level ECE, whose per-bin means need a window over the rows).

Tests hold the two to the same numbers. The SQL twin is ``sql/macros/calibration.sql``.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.metrics._bins import _bin_index, _bin_statistics
from relcol.metrics._params import check_bins, check_columns, check_keys
from relcol.store import CELL

# Row-level builders: over prediction rows --------------------------------------------------


def count() -> pl.Expr:
    """The number of rows, named ``n`` (Int64, as SQL ``count(*)``).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import count
    >>> pl.DataFrame({"confidence": [0.5, 0.7]}).select(count()).item()
    2
    """
    return pl.len().cast(pl.Int64).alias("n")


def accuracy(correct: str = "correct") -> pl.Expr:
    """Mean of z = 1[prediction is right], named ``accuracy``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import accuracy
    >>> pl.DataFrame({"correct": [True, False, True, True]}).select(accuracy()).item()
    0.75
    """
    return pl.col(correct).cast(pl.Float64).mean().alias("accuracy")


def mean_confidence(confidence: str = "confidence") -> pl.Expr:
    """Mean stated confidence, named ``mean_confidence``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import mean_confidence
    >>> pl.DataFrame({"confidence": [0.5, 1.0]}).select(mean_confidence()).item()
    0.75
    """
    return pl.col(confidence).cast(pl.Float64).mean().alias("mean_confidence")


def gap(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Δ = mean(c) − mean(z), named ``gap``: > 0 overconfident, < 0 underconfident.

    Needs no bins, so it carries no binning bias.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import gap
    >>> rows = pl.DataFrame({"confidence": [0.75, 0.75], "correct": [True, False]})
    >>> rows.select(gap()).item()
    0.25
    """
    return (mean_confidence(confidence) - accuracy(correct)).alias("gap")


def abs_gap(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """|Δ| = |mean(c) − mean(z)|, named ``abs_gap``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import abs_gap
    >>> rows = pl.DataFrame({"confidence": [0.25, 0.25], "correct": [True, True]})
    >>> rows.select(abs_gap()).item()
    0.75
    """
    return gap(confidence, correct).abs().alias("abs_gap")


def ece(confidence: str = "confidence", correct: str = "correct", *, bins: int = 15) -> pl.Expr:
    """Expected calibration error on equal-width bins, named ``ece``.

    ECE = Σₘ (nₘ/n)·|accₘ − confₘ| over non-empty bins (bin convention: ``bin_index``),
    computed as the mean over rows of their bin's |acc − conf|.

    Parameters
    ----------
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).
    bins
        Number of bins M, an int >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ece
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(ece(bins=2)).item(), 12)  # bin 0: |0.5 − 0.4|, bin 1: |1 − 0.9|
    0.1
    """
    return _row_bin_gaps(confidence, correct, check_bins(bins)).mean().alias("ece")


def mce(confidence: str = "confidence", correct: str = "correct", *, bins: int = 15) -> pl.Expr:
    """Maximum calibration error on equal-width bins, named ``mce``.

    MCE = maxₘ |accₘ − confₘ| over non-empty bins (bin convention: ``bin_index``).

    Parameters
    ----------
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).
    bins
        Number of bins M, an int >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import mce
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(mce(bins=2)).item(), 12)
    0.1
    """
    return _row_bin_gaps(confidence, correct, check_bins(bins)).max().alias("mce")


def _row_bin_gaps(confidence: str, correct: str, bins: int) -> pl.Expr:
    """Per row, |accₘ − confₘ| of the row's bin m; its row mean is ECE, its max MCE."""
    z_minus_c = pl.col(correct).cast(pl.Float64) - pl.col(confidence).cast(pl.Float64)
    return z_minus_c.mean().over(_bin_index(confidence, bins)).abs()


# Bin-level builders: over the rows of a calibration_bins frame -----------------------------


def count_from_bins(n: str = "n") -> pl.Expr:
    """``n`` from per-bin counts: Σₘ nₘ."""
    return pl.col(n).sum().alias("n")


def accuracy_from_bins(n: str = "n", sum_correct: str = "sum_correct") -> pl.Expr:
    """``accuracy`` from per-bin sums: Σₘ Σz / Σₘ nₘ."""
    return (pl.col(sum_correct).sum() / pl.col(n).sum()).alias("accuracy")


def mean_confidence_from_bins(n: str = "n", sum_confidence: str = "sum_confidence") -> pl.Expr:
    """``mean_confidence`` from per-bin sums: Σₘ Σc / Σₘ nₘ."""
    return (pl.col(sum_confidence).sum() / pl.col(n).sum()).alias("mean_confidence")


def gap_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``gap`` from per-bin sums: mean confidence − accuracy."""
    return (
        mean_confidence_from_bins(n, sum_confidence) - accuracy_from_bins(n, sum_correct)
    ).alias("gap")


def abs_gap_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``abs_gap`` from per-bin sums: |mean confidence − accuracy|."""
    return gap_from_bins(n, sum_confidence, sum_correct).abs().alias("abs_gap")


def ece_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``ece`` from per-bin sums: Σₘ |Σz − Σc| / Σₘ nₘ = Σₘ (nₘ/n)·|accₘ − confₘ|."""
    bin_error = (pl.col(sum_correct) - pl.col(sum_confidence)).abs()
    return (bin_error.sum() / pl.col(n).sum()).alias("ece")


def mce_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``mce`` from per-bin sums: maxₘ |Σz − Σc| / nₘ = maxₘ |accₘ − confₘ|."""
    bin_gap = (pl.col(sum_correct) - pl.col(sum_confidence)).abs() / pl.col(n)
    return bin_gap.max().alias("mce")


# The fast path -------------------------------------------------------------------------------


def calibration(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    bins: int = 15,
    confidence: str = "confidence",
    correct: str = "correct",
) -> pl.LazyFrame:
    """Calibration of every group, from its per-bin sufficient statistics.

    Parameters
    ----------
    frame
        Prediction rows (the long table or any frame with the named columns).
    by
        Grouping columns, passed through; default the cell key. A null ``label`` (the
        single-label case) forms one group, as in SQL ``GROUP BY``. With ``by=()`` the
        whole frame is one group (and an empty frame has none).
    bins
        Number of bins M for ECE and MCE, an int >= 1.
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).

    Returns
    -------
    pl.LazyFrame
        One row per group: ``by`` columns, then ``n`` (Int64), ``accuracy``,
        ``mean_confidence``, ``gap``, ``abs_gap``, ``ece``, ``mce`` (Float64); sorted by
        ``by``, nulls last. The SQL view ``calibration`` has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import calibration
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> out = calibration(rows, "model", bins=2).collect()
    >>> out.select("model", "n", "accuracy").rows()
    [('a', 3, 0.6666666666666666)]
    >>> [round(out[name].item(), 12) for name in ("gap", "ece", "mce")]
    [-0.1, 0.1, 0.1]
    """
    bins = check_bins(bins)
    keys = check_keys(by)
    lazy = frame.lazy()
    check_columns("calibration", lazy, [*keys, confidence, correct])
    out = (
        _bin_statistics(lazy, keys, bins, confidence, correct)
        .group_by(keys)
        .agg(
            count_from_bins(),
            accuracy_from_bins(),
            mean_confidence_from_bins(),
            gap_from_bins(),
            abs_gap_from_bins(),
            ece_from_bins(),
            mce_from_bins(),
        )
    )
    if not keys:
        # group_by([]) gives one row even over no rows; a frame with no rows has no group
        return out.filter(pl.col("n") > 0)
    return out.sort(keys, nulls_last=True)
