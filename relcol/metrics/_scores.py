"""Top-label proper scores: ``brier_top``, its Murphy decomposition, ``nll_top`` (docs/metrics.md).

brier_top = (1/n) Σᵢ (cᵢ − zᵢ)², in [0, 1]. On the equal-width bins (per bin m: nₘ, confₘ,
accₘ; ā the overall accuracy), following Stephenson, Coelho & Jolliffe (2008):

- reliability = Σₘ (nₘ/n)(confₘ − accₘ)²
- resolution = Σₘ (nₘ/n)(accₘ − ā)²
- uncertainty = ā(1 − ā)
- within = (1/n) Σₘ Σᵢ∈ₘ [(cᵢ − confₘ)² − 2(cᵢ − confₘ)(zᵢ − accₘ)], the within-bin
  variance of the confidence minus twice its within-bin covariance with the outcome,

and brier_top = reliability − resolution + uncertainty + within, exactly. Each part is
computed from its own formula (never as the remainder), so a test of the sum is a test.

nll_top = −(1/n) Σᵢ [zᵢ log c̃ᵢ + (1 − zᵢ) log(1 − c̃ᵢ)], c̃ clipped to [1e−15, 1 − 1e−15].

Row-level builders (``brier_top()``) work in any ``group_by().agg()``; the ``*_from_bins``
builders aggregate the rows of a ``calibration_bins`` frame (the fast path). The SQL twin is
``sql/macros/calibration.sql``.
"""

from __future__ import annotations

import polars as pl

from relcol.checks import check_bins
from relcol.metrics._bins import _bin_index
from relcol.metrics._exact import exact_sum
from relcol.metrics._runs import mean_square, once

#: nll_top clips c to [EPS, 1 − EPS] (docs/metrics.md); nll clips p to EPS.
EPS = 1e-15


def _c(confidence: str) -> pl.Expr:
    return pl.col(confidence).cast(pl.Float64)


def _z(correct: str) -> pl.Expr:
    return pl.col(correct).cast(pl.Float64)


def _nll_top_terms(c: pl.Expr, z: pl.Expr) -> pl.Expr:
    """Per row: −[z log c̃ + (1 − z) log(1 − c̃)], z in {0, 1}."""
    clipped = c.clip(EPS, 1 - EPS)
    return pl.when(z > 0).then(-clipped.log()).otherwise(-(1 - clipped).log())


# Row-level builders --------------------------------------------------------------------------


def brier_top(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Top-label Brier score (1/n) Σ (c − z)², named ``brier_top`` (range [0, 1]).

    Not the multiclass ``brier`` (which needs the probability vector, range [0, 2]).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import brier_top
    >>> rows = pl.DataFrame({"confidence": [0.8, 0.6], "correct": [True, False]})
    >>> round(rows.select(brier_top()).item(), 12)  # (.2² + .6²) / 2
    0.2
    """
    error = _c(confidence) - _z(correct)
    return (error * error).mean().alias("brier_top")


def nll_top(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Top-label log loss, named ``nll_top``: binary NLL of z against c (clipped to 1e−15).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import nll_top
    >>> out = pl.DataFrame({"confidence": [0.5, 1.0], "correct": [True, False]}).select(nll_top())
    >>> round(out.item(), 6)  # c = 1 wrong costs −log(1 − fl(1 − 1e−15)) ≈ 34.54, not ∞
    17.616362
    """
    return _nll_top_terms(_c(confidence), _z(correct)).mean().alias("nll_top")


def brier_reliability(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """Murphy reliability Σₘ (nₘ/n)(confₘ − accₘ)² on equal-width bins, ``brier_reliability``."""
    bin_gap = _bin_means(_z(correct) - _c(confidence), confidence, check_bins(bins))
    return mean_square(bin_gap).alias("brier_reliability")


def brier_resolution(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """Murphy resolution Σₘ (nₘ/n)(accₘ − ā)² on equal-width bins, ``brier_resolution``."""
    z = _z(correct)
    return mean_square(_bin_means(z, confidence, check_bins(bins)) - z.mean()).alias(
        "brier_resolution"
    )


def brier_uncertainty(correct: str = "correct") -> pl.Expr:
    """Murphy uncertainty ā(1 − ā), named ``brier_uncertainty``."""
    accuracy = _z(correct).mean()
    return (accuracy * (1 - accuracy)).alias("brier_uncertainty")


def brier_within(
    confidence: str = "confidence", correct: str = "correct", *, bins: int = 15
) -> pl.Expr:
    """The within-bin term (1/n) Σ [(c − confₘ)² − 2(c − confₘ)(z − accₘ)], ``brier_within``.

    With it, brier_top = reliability − resolution + uncertainty + within exactly.
    """
    bins = check_bins(bins)
    c, z = _c(confidence), _z(correct)
    per_row = pl.struct(
        dc=c - _bin_means(c, confidence, bins), dz=z - _bin_means(z, confidence, bins)
    )

    def within(rows: pl.Expr) -> pl.Expr:
        dc, dz = rows.struct.field("dc"), rows.struct.field("dz")
        return (dc * dc - 2 * dc * dz).mean()

    return once(per_row, within).alias("brier_within")


def _bin_means(value: pl.Expr, confidence: str, bins: int) -> pl.Expr:
    """Per row, the mean of ``value`` over the row's equal-width bin."""
    return value.mean().over(_bin_index(confidence, bins))


# Bin-level builders: over the rows of a calibration_bins frame -------------------------------


def brier_top_from_bins() -> pl.Expr:
    """``brier_top`` from per-bin sums: Σₘ (Σc² − 2Σcz + Σz) / Σₘ nₘ."""
    total = (
        pl.col("sum_confidence_sq") - 2 * pl.col("sum_confidence_correct") + pl.col("sum_correct")
    )
    return (exact_sum(total) / pl.col("n").sum()).alias("brier_top")


def nll_top_from_bins() -> pl.Expr:
    """``nll_top`` from per-bin sums of the per-row log loss."""
    return (exact_sum(pl.col("sum_nll_top")) / pl.col("n").sum()).alias("nll_top")


def brier_reliability_from_bins() -> pl.Expr:
    """``brier_reliability`` from per-bin sums: Σₘ (Σz − Σc)²/nₘ / n."""
    gap = pl.col("sum_correct") - pl.col("sum_confidence")
    return (exact_sum(gap * gap / pl.col("n")) / pl.col("n").sum()).alias("brier_reliability")


def brier_resolution_from_bins() -> pl.Expr:
    """``brier_resolution`` from per-bin sums: Σₘ nₘ (Σz/nₘ − ā)² / n."""
    n = pl.col("n")
    spread = pl.col("sum_correct") / n - exact_sum(pl.col("sum_correct")) / n.sum()
    return (exact_sum(n * spread * spread) / n.sum()).alias("brier_resolution")


def brier_uncertainty_from_bins() -> pl.Expr:
    """``brier_uncertainty`` from per-bin sums: ā(1 − ā), ā = Σz / n."""
    accuracy = exact_sum(pl.col("sum_correct")) / pl.col("n").sum()
    return (accuracy * (1 - accuracy)).alias("brier_uncertainty")


def brier_within_from_bins() -> pl.Expr:
    """``brier_within`` from per-bin sums: Σₘ [Σc² − (Σc)²/nₘ − 2(Σcz − Σc·Σz/nₘ)] / n."""
    n, s, z = pl.col("n"), pl.col("sum_confidence"), pl.col("sum_correct")
    variance = pl.col("sum_confidence_sq") - s * s / n
    covariance = pl.col("sum_confidence_correct") - s * z / n
    return (exact_sum(variance - 2 * covariance) / n.sum()).alias("brier_within")
