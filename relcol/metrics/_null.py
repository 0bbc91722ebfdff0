"""ECE₀, the ECE floor: the expected ECE of a perfectly calibrated model with the same
confidences, its excess and the calibration p-value (METRICS.md §2).

METRICS.md defines ECE₀ by R draws of zᵢ ~ Bernoulli(cᵢ) per row. At 10⁷ rows and R = 100
that is 10⁹ draws, so relcol simulates at the bin level from the equal-width sufficient
statistics instead (per bin m: nₘ, Sₘ = Σc, Qₘ = Σc²); under perfect calibration the
bin's Σz has mean Sₘ and variance Vₘ = Σc(1 − c) = Sₘ − Qₘ. For draw r:

- a bin of nₘ ≤ 32 rows draws nₘ Bernoulli(Sₘ/nₘ) pseudo-rows, ``u·nₘ < Sₘ`` with
  u = uniform(1, m, r, j), j = 0…nₘ − 1: a Binomial(nₘ, c̄ₘ), which keeps the sum's
  discreteness (the small bins are where the floor comes from) and overstates its variance
  by Σ(c − c̄ₘ)², at most nₘ/(4M²) within a bin of width 1/M;
- a larger bin draws Sₘ + √Vₘ · N, N the Box–Muller normal of uniform(2, m, r, 0) and
  uniform(2, m, r, 1): the exact mean and variance, the normal shape (by then the sum of
  more than 32 Bernoullis);
- ECE_r = Σₘ |Zₘ − Sₘ| / n, with ``ece_from_bins``, the ECE formula of the observed ECE.

ece_null = mean of ECE_r; ece_excess = ece − ece_null; ece_pvalue = share of draws with
ECE_r ≥ ece (within 1e−12, so an ECE reproduced exactly by a draw counts whatever the
summation order). The draws are keyed by (stream, bin, draw, j), not by the cell: every
cell uses the same random numbers, so differences between cells (severity d against the
clean model) carry no extra simulation noise.

Measured against per-row Bernoulli draws (``tests/benchmarks/ece_null_error.py``: 4000 draws
each way, cells of 30 to 5000 rows, five confidence laws), the bin-level ECE₀ is within
±0.9 % of the per-row value for spread confidences and up to 2.2 % low for sharply peaked
ones (Beta(20, 1)), whose large bins hold rows all near 1 and so have a small, skewed Σz
that the normal rounds off; the Monte Carlo error of ECE₀ itself at R = 100 is about ±3 %.
``tests/test_metrics_laws.py`` holds the difference below 4 %. The random numbers depend on
(bin, draw[, j]) only, so they are drawn once, in small tables, and joined to every cell.
The SQL twin is the ``null_*`` steps of ``sql/macros/calibration.sql``.
"""

from __future__ import annotations

import polars as pl

from relcol.metrics._calibration import ece_from_bins
from relcol.metrics._exact import exact_mean
from relcol.metrics._frames import CELL_ID
from relcol.metrics._random import STREAMS, normal, uniform

#: Bins with at most this many rows draw Bernoulli pseudo-rows; larger ones a normal sum.
SMALL_BIN = 32
#: ECE_r counts as ≥ the observed ECE when it is within this of it.
TIE = 1e-12


def null_draws(width: pl.LazyFrame, bins: int, draws: int) -> pl.LazyFrame:
    """Per cell × draw r: ``ece``, the ECE of one simulated perfectly calibrated outcome.

    ``width`` holds the equal-width statistics (``CELL_ID``, ``bin``, ``n``,
    ``sum_confidence``, ``sum_confidence_sq``). The random numbers depend on (bin, draw, j)
    only, so they are drawn once, in small tables, and joined to every cell's bins.
    """
    n, total = pl.col("n"), pl.col("sum_confidence")
    grid = pl.LazyFrame({"bin": range(bins)}, schema={"bin": pl.Int64}).join(
        pl.LazyFrame({"draw": range(draws)}, schema={"draw": pl.Int64}), how="cross"
    )
    noise = grid.with_columns(normal=normal(STREAMS["ece_null_normal"], "bin", "draw"))
    pseudo = grid.join(
        pl.LazyFrame({"j": range(SMALL_BIN)}, schema={"j": pl.Int64}), how="cross"
    ).with_columns(u=uniform(STREAMS["ece_null_bernoulli"], "bin", "draw", "j"))
    small = (
        width.filter(n <= SMALL_BIN)
        .select(CELL_ID, "bin", "n", "sum_confidence")
        .join(pseudo, on="bin")
        .filter(pl.col("j") < n)
        .group_by(CELL_ID, "bin", "draw")
        .agg(n.first(), total.first(), simulated=(pl.col("u") * n < total).sum().cast(pl.Float64))
    )
    spread = (total - pl.col("sum_confidence_sq")).clip(lower_bound=0.0).sqrt()
    large = (
        width.filter(n > SMALL_BIN)
        .join(noise, on="bin")
        .select(
            CELL_ID,
            "bin",
            "draw",
            "n",
            "sum_confidence",
            simulated=total + spread * pl.col("normal"),
        )
    )
    return (
        pl.concat([small, large], how="vertical")
        .group_by(CELL_ID, "draw")
        .agg(ece_from_bins(sum_correct="simulated"))
    )


def null_cells(draws: pl.LazyFrame, observed: pl.LazyFrame) -> pl.LazyFrame:
    """Per cell: ``ece_null``, ``ece_excess``, ``ece_pvalue`` from the draws and the
    observed ``ece`` (a frame with ``CELL_ID`` and ``ece``)."""
    ece = pl.col("ece")
    return (
        draws.join(observed.select(CELL_ID, observed_ece="ece"), on=CELL_ID)
        .group_by(CELL_ID)
        .agg(
            ece_null=exact_mean(ece),
            ece_pvalue=(ece >= pl.col("observed_ece") - TIE).cast(pl.Float64).mean(),
            observed_ece=pl.col("observed_ece").first(),
        )
        .select(
            CELL_ID,
            "ece_null",
            ece_excess=pl.col("observed_ece") - pl.col("ece_null"),
            ece_pvalue="ece_pvalue",
        )
    )
