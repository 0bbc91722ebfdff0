"""Calibration: accuracy, mean confidence, the gap Δ, ECE and its over/under-confidence
split, ACE, MCE, RMSCE and Kumar's debiased estimate (docs/metrics.md).

Each metric is written twice on purpose, for two grains:

- a **row-level** builder (``ece()``) for any ``group_by().agg()`` over prediction rows;
- a **bin-level** builder (``ece_from_bins()``) that aggregates the rows of a
  ``calibration_bins`` frame, used by ``calibration()``, the fast path the report takes
  (one scan into per-bin sums, then a few thousand rows; several times faster than the
  row-level ECE, whose per-bin means need a window over the rows). ``ece_from_bins`` is
  the one ECE formula of the fast path: ACE, the classwise ECE and every ECE₀ draw use it.

Tests hold the two to the same numbers. The SQL twin is ``sql/macros/calibration.sql``, with
``sql/macros/ece_from_bins.sql``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from relcol.checks import check_bins
from relcol.metrics._bins import ORDER, _bin_index
from relcol.metrics._exact import exact_sum
from relcol.metrics._runs import mean_square, once, run_totals

#: Bins whose |accₘ − confₘ| is within this of the MCE attain it (``mce_n``): the two engines
#: add a bin's confidences in different orders, so equal gaps may differ in their last bits.
MCE_TIE = 1e-12

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


def ece_over(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """The overconfident share of the ECE, named ``ece_over``.

    ECE_over = Σₘ (nₘ/n)·max(confₘ − accₘ, 0) over the equal-width bins of ``ece``: the bins
    whose confidence exceeds their accuracy. ``ece_over + ece_under = ece``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ece_over
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(ece_over(bins=2)).item(), 12)  # both bins: accuracy above confidence
    0.0
    """
    return _row_bin_part(confidence, correct, bins, -1.0).alias("ece_over")


def ece_under(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """The underconfident share of the ECE, named ``ece_under``.

    ECE_under = Σₘ (nₘ/n)·max(accₘ − confₘ, 0) over the equal-width bins of ``ece``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ece_under
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(ece_under(bins=2)).item(), 12)
    0.1
    """
    return _row_bin_part(confidence, correct, bins, 1.0).alias("ece_under")


def mce(confidence: str = "confidence", correct: str = "correct", *, bins: int = 15) -> pl.Expr:
    """Maximum calibration error on equal-width bins, named ``mce``.

    MCE = maxₘ |accₘ − confₘ| over non-empty bins (bin convention: ``bin_index``).

    Parameters are those of :func:`ece`.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import mce
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(mce(bins=2)).item(), 12)
    0.1
    """
    return _row_bin_gaps(confidence, correct, check_bins(bins)).max().alias("mce")


def mce_n(confidence: str = "confidence", correct: str = "correct", *, bins: int = 15) -> pl.Expr:
    """The number of rows of the equal-width bin that attains the MCE, named ``mce_n`` (Int64).

    When several bins attain it (within 1e-12), the one with the most rows: an MCE read off a
    bin of a handful of rows says little, and this puts that count beside it.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import mce_n
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> rows.select(mce_n(bins=2)).item()  # both bins are .1 off: the larger one
    2
    """
    bins = check_bins(bins)
    per_row = pl.struct(
        gap=_row_bin_gaps(confidence, correct, bins),
        size=pl.len().over(_bin_index(confidence, bins)),
    )

    def largest(rows: pl.Expr) -> pl.Expr:
        gaps = rows.struct.field("gap")
        return rows.struct.field("size").filter(gaps >= gaps.max() - MCE_TIE).max()

    return once(per_row, largest).cast(pl.Int64).alias("mce_n")


def ace(
    confidence: str = "confidence",
    correct: str = "correct",
    order: Sequence[str] = ORDER,
    *,
    bins: int = 15,
) -> pl.Expr:
    """Adaptive calibration error: ECE on equal-mass bins, named ``ace``.

    Rows are ordered by ``confidence`` and then ``order`` (ties split by those columns) and
    the row of rank r among n is in bin ⌊r·M/n⌋ (``mass_bin_index``).

    Parameters
    ----------
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).
    order
        Tie-breaking columns (default ``sample_id``, ``seed``, ``repeat``).
    bins
        Number of bins M, an int >= 1.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ace
    >>> rows = pl.DataFrame({"confidence": [0.2, 0.6, 0.6], "correct": [True, False, True], "sample_id": [3, 1, 2]})
    >>> round(rows.select(ace(order=["sample_id"], bins=2)).item(), 12)  # bins {.2, .6₁}, {.6₂}
    0.2
    """
    bins = check_bins(bins)
    by = [confidence, *order]
    error = (pl.col(correct).cast(pl.Float64) - pl.col(confidence).cast(pl.Float64)).sort_by(by)
    mass_bin = pl.int_range(pl.len(), dtype=pl.Int64) * bins // pl.len()
    return (run_totals(error, mass_bin).abs().sum() / pl.len()).alias("ace")


def rmsce(confidence: str = "confidence", correct: str = "correct", *, bins: int = 15) -> pl.Expr:
    """Root-mean-square calibration error √(Σₘ (nₘ/n)(accₘ − confₘ)²), named ``rmsce``.

    Equal-width bins; the square root of ``brier_reliability``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import rmsce
    >>> rows = pl.DataFrame({"confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> round(rows.select(rmsce(bins=2)).item(), 12)  # √((2·.01 + .01)/3)
    0.1
    """
    return mean_square(_row_bin_errors(confidence, correct, check_bins(bins))).sqrt().alias("rmsce")


def ece_debiased(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """Kumar, Liang & Ma's debiased calibration error on equal-width bins, ``ece_debiased``.

    √max(Σₘ (nₘ/n)[(accₘ − confₘ)² − accₘ(1 − accₘ)/(nₘ − 1)], 0): the squared gap of each
    bin minus the sampling variance of its accuracy. As in their reference code, a bin of a
    single row contributes 0 (its variance cannot be estimated).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ece_debiased
    >>> rows = pl.DataFrame({"confidence": [0.5, 0.5, 0.5, 0.5], "correct": [True, True, True, False]})
    >>> round(rows.select(ece_debiased(bins=1)).item(), 12)  # √(.25² − .75·.25/3)
    0.0
    """
    bins = check_bins(bins)
    c, z = pl.col(confidence).cast(pl.Float64), pl.col(correct).cast(pl.Float64)
    key = _bin_index(confidence, bins)
    per_row = pl.struct(
        gap=(z - c).mean().over(key),
        accuracy=z.mean().over(key),
        size=pl.len().cast(pl.Float64).over(key),
    )

    def squared(rows: pl.Expr) -> pl.Expr:
        gap, accuracy, size = (rows.struct.field(f) for f in ("gap", "accuracy", "size"))
        term = gap * gap - accuracy * (1 - accuracy) / (size - 1)
        return pl.when(size >= 2).then(term).otherwise(0.0).mean()

    return once(per_row, squared).clip(lower_bound=0.0).sqrt().alias("ece_debiased")


def _row_bin_gaps(confidence: str, correct: str, bins: int) -> pl.Expr:
    """Per row, |accₘ − confₘ| of the row's bin m; its row mean is ECE, its max MCE."""
    return _row_bin_errors(confidence, correct, bins).abs()


def _row_bin_part(confidence: str, correct: str, bins: int, sign: float) -> pl.Expr:
    """The row mean of max(sign·(accₘ − confₘ), 0) of each row's bin m: ``ece_under`` (+1)
    or ``ece_over`` (−1)."""
    bin_error = _row_bin_errors(confidence, correct, check_bins(bins))
    return (sign * bin_error).clip(lower_bound=0.0).mean()


def _row_bin_errors(confidence: str, correct: str, bins: int) -> pl.Expr:
    """Per row, accₘ − confₘ of the row's equal-width bin m."""
    z_minus_c = pl.col(correct).cast(pl.Float64) - pl.col(confidence).cast(pl.Float64)
    return z_minus_c.mean().over(_bin_index(confidence, bins))


# Bin-level builders: over the rows of a calibration_bins frame -----------------------------


def count_from_bins(n: str = "n") -> pl.Expr:
    """``n`` from per-bin counts: Σₘ nₘ."""
    return pl.col(n).sum().alias("n")


def accuracy_from_bins(n: str = "n", sum_correct: str = "sum_correct") -> pl.Expr:
    """``accuracy`` from per-bin sums: Σₘ Σz / Σₘ nₘ."""
    return (exact_sum(pl.col(sum_correct)) / pl.col(n).sum()).alias("accuracy")


def mean_confidence_from_bins(n: str = "n", sum_confidence: str = "sum_confidence") -> pl.Expr:
    """``mean_confidence`` from per-bin sums: Σₘ Σc / Σₘ nₘ."""
    return (exact_sum(pl.col(sum_confidence)) / pl.col(n).sum()).alias("mean_confidence")


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
    n: str = "n",
    sum_confidence: str | pl.Expr = "sum_confidence",
    sum_correct: str | pl.Expr = "sum_correct",
) -> pl.Expr:
    """``ece`` from per-bin sums: Σₘ |Σz − Σc| / Σₘ nₘ = Σₘ (nₘ/n)·|accₘ − confₘ|.

    The sums are column names or expressions (a simulated Σz, an error sum Σz − Σc with
    Σc = 0): the one ECE formula of the fast path."""
    return _share_of_rows(_bin_error(sum_confidence, sum_correct).abs(), n).alias("ece")


def ece_over_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``ece_over`` from per-bin sums: Σₘ max(Σc − Σz, 0) / Σₘ nₘ."""
    bin_excess = (-_bin_error(sum_confidence, sum_correct)).clip(lower_bound=0.0)
    return _share_of_rows(bin_excess, n).alias("ece_over")


def ece_under_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``ece_under`` from per-bin sums: Σₘ max(Σz − Σc, 0) / Σₘ nₘ."""
    bin_shortfall = _bin_error(sum_confidence, sum_correct).clip(lower_bound=0.0)
    return _share_of_rows(bin_shortfall, n).alias("ece_under")


def _col(name: str | pl.Expr) -> pl.Expr:
    return pl.col(name) if isinstance(name, str) else name


def _bin_error(sum_confidence: str | pl.Expr, sum_correct: str | pl.Expr) -> pl.Expr:
    """Σz − Σc of each bin: its rows' accuracy minus confidence, times nₘ."""
    return _col(sum_correct) - _col(sum_confidence)


def _share_of_rows(per_bin: pl.Expr, n: str) -> pl.Expr:
    """Σₘ ``per_bin`` / Σₘ nₘ, the sum exact."""
    return exact_sum(per_bin) / pl.col(n).sum()


def _bin_gap(n: str, sum_confidence: str, sum_correct: str) -> pl.Expr:
    """|accₘ − confₘ| of each bin."""
    return _bin_error(sum_confidence, sum_correct).abs() / pl.col(n)


def mce_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``mce`` from per-bin sums: maxₘ |Σz − Σc| / nₘ = maxₘ |accₘ − confₘ|."""
    return _bin_gap(n, sum_confidence, sum_correct).max().alias("mce")


def mce_n_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``mce_n`` from per-bin sums: the largest nₘ among the bins whose |Σz − Σc| / nₘ is
    within 1e-12 of the MCE."""
    bin_gap = _bin_gap(n, sum_confidence, sum_correct)
    return pl.col(n).filter(bin_gap >= bin_gap.max() - MCE_TIE).max().alias("mce_n")


def rmsce_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``rmsce`` from per-bin sums: √(Σₘ (Σz − Σc)²/nₘ / Σₘ nₘ)."""
    bin_error = _bin_error(sum_confidence, sum_correct)
    return _share_of_rows(bin_error * bin_error / pl.col(n), n).sqrt().alias("rmsce")


def ece_debiased_from_bins(
    n: str = "n", sum_confidence: str = "sum_confidence", sum_correct: str = "sum_correct"
) -> pl.Expr:
    """``ece_debiased`` from per-bin sums (bins of one row contribute 0)."""
    size = pl.col(n).cast(pl.Float64)
    gap = _bin_error(sum_confidence, sum_correct) / size
    accuracy = pl.col(sum_correct) / size
    term = gap * gap - accuracy * (1 - accuracy) / (size - 1)
    weighted = pl.when(size >= 2).then(size * term).otherwise(0.0)
    return (exact_sum(weighted) / size.sum()).clip(lower_bound=0.0).sqrt().alias("ece_debiased")
