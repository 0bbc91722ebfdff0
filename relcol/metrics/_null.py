"""ECE₀, the ECE floor: the expected ECE of a perfectly calibrated model with the same
confidences, its excess and the calibration p-value (docs/metrics.md).

**The unit is a prediction event, not a row.** The long table often stores one prediction
several times: at severity 0 every repeat stores the clean model's predictions again, and a
deterministic operator repeats identical rows at every repeat. Those copies are one outcome
of one prediction, not independent trials, so the null draws one outcome per distinct
**event** = (cell, ``sample_id``, ``seed``, ``y_pred``, confidence) and counts it kₑ times,
kₑ the event's number of rows (``events=()`` makes every row its own event, kₑ = 1). Under
label noise the copies' evaluation labels are redrawn per repeat, so their outcomes are
correlated but not identical; one draw per event errs there on the cautious side (a larger
ECE₀ and p-value than independent rows would give).

docs/metrics.md defines ECE₀ by R draws of zᵢ ~ Bernoulli(cᵢ). At 10⁷ rows and R = 100 that is 10⁹
draws, so relcol simulates at the bin level from sufficient statistics instead: per
equal-width bin m, nₘ rows, Sₘ = Σ_rows c and eₘ events; under perfect calibration the bin's
Σz = Σₑ kₑ·zₑ has mean Sₘ and variance Vₘ = Σₑ kₑ²·cₑ(1 − cₑ). For draw r:

- a bin of eₘ ≤ 32 events draws one Bernoulli(c̄ₘ) per event, c̄ₘ = Sₘ/nₘ, and counts it kₑ
  times: Zₘ = Σⱼ k₍ⱼ₎·1[u·nₘ < Sₘ], u = uniform(1, m, r, j), j = 0…eₘ − 1 over the events in
  descending order of k (events with equal k are interchangeable: they share c̄ₘ, so the
  order among them does not matter). This keeps the sum's discreteness (the small bins are
  where the floor comes from) and its exact mean Sₘ; its variance Σₑ kₑ²·c̄ₘ(1 − c̄ₘ) differs
  from Vₘ by Σₑ kₑ²(cₑ − c̄ₘ)(cₑ + c̄ₘ − 1), which is k²·Σ(c − c̄ₘ)² ≤ k²·eₘ/(4M²) when every
  event of the bin has the same k, and at most Σₑ kₑ²/M in general (|cₑ − c̄ₘ| < 1/M);
- a larger bin draws Sₘ + √Vₘ · N, N the Box–Muller normal of uniform(2, m, r, 0) and
  uniform(2, m, r, 1): the exact mean and variance, the normal shape (by then the sum of
  more than 32 events' outcomes);
- ECE_r = Σₘ |Zₘ − Sₘ| / n, with ``ece_from_bins``, the ECE formula of the observed ECE.

With every kₑ = 1 this is draw for draw the per-row simulation (eₘ = nₘ, Vₘ = Sₘ − Σc²). A
cell whose rows are k copies of a set of events has the ECE_r of those events alone (every
Zₘ − Sₘ is k times theirs, and so is n).

ece_null = mean of ECE_r; ece_excess = ece − ece_null; ece_pvalue = (b + 1)/(R + 1), b the
number of draws with ECE_r ≥ ece (within 1e−12, so an ECE reproduced exactly by a draw counts
whatever the summation order): the observed cell counts as one of the draws, as in a Monte
Carlo test, so the p-value is never 0 (at least 1/(R + 1)). The draws are keyed by (stream,
bin, draw, j), not by the cell: every cell uses the same random numbers, so differences
between cells (severity d against the clean model) carry no extra simulation noise.

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

from collections.abc import Sequence

import polars as pl

from relcol.metrics._bins import _bin_index
from relcol.metrics._calibration import ece_from_bins
from relcol.metrics._exact import exact_mean, exact_sum
from relcol.metrics._frames import CELL_ID
from relcol.metrics._random import STREAMS, normal, uniform

#: The columns that, with the cell and the confidence, identify one prediction event.
EVENT = ("sample_id", "seed", "y_pred")
#: Bins with at most this many events draw one Bernoulli per event; larger ones a normal sum.
SMALL_BIN = 32
#: ECE_r counts as ≥ the observed ECE when it is within this of it.
TIE = 1e-12


def event_columns(events: Sequence[str], order: Sequence[str] = ()) -> dict[str, pl.Expr]:
    """The internal event columns ``e0``, ``e1``… (with ``c``, they identify an event), but
    for the events that are also tie-breaking columns (``order``): those are read as their
    ``o`` column (``event_keys``), so that the sorted rows carry each column once."""
    return {f"e{i}": pl.col(name) for i, name in enumerate(events) if name not in order}


def event_keys(events: Sequence[str], order: Sequence[str] = ()) -> list[str]:
    """The internal columns that identify an event besides the cell and ``c``: ``o{j}`` for an
    event that is the j-th tie-breaking column, ``e{i}`` (``event_columns``) for the others."""
    order = list(order)
    return [f"o{order.index(e)}" if e in order else f"e{i}" for i, e in enumerate(events)]


def event_statistics(ordered: pl.LazyFrame, bins: int, keys: Sequence[str]) -> pl.LazyFrame:
    """Per cell × prediction event stored more than once: its equal-width ``bin``, confidence
    ``c`` and ``k`` ≥ 2, its number of rows. Every other row is an event of its own (k = 1)
    and needs no entry; with no event columns (``keys``, from ``event_keys``) there are none.

    ``ordered`` holds the rows sorted per cell by confidence, with the ``keys`` columns
    (``sorted_rows``). The copies of an event share its cell and confidence, so they lie in
    one run of rows of equal cell and confidence: only the rows of runs of two or more are
    grouped by event (0.01 s against 0.4–0.5 s for all 10⁷ rows of a suite whose confidences
    are continuous)."""
    if keys:
        # eq_missing: rows with a null confidence are one run too (a group-by key as any);
        # a superset of the runs' rows would only add events of one row, which the filter drops
        same = [pl.col(CELL_ID), pl.col("c")]
        tied = ordered.filter(
            pl.all_horizontal(x.eq_missing(x.shift(1)) for x in same)
            | pl.all_horizontal(x.eq_missing(x.shift(-1)) for x in same)
        )
        copies = (
            tied.group_by(CELL_ID, "c", *keys)
            .agg(k=pl.len().cast(pl.Int64))
            .filter(pl.col("k") > 1)
        )
    else:
        copies = ordered.filter(pl.lit(False)).with_columns(k=pl.lit(1, pl.Int64))
    # cached: null_draws reads it twice
    return copies.select(CELL_ID, _bin_index("c", bins), "c", "k").cache()


def null_draws(width: pl.LazyFrame, copies: pl.LazyFrame, bins: int, draws: int) -> pl.LazyFrame:
    """Per cell × draw r: ``ece``, the ECE of one simulated perfectly calibrated outcome.

    ``width`` holds the equal-width statistics (``CELL_ID``, ``bin``, ``n``,
    ``sum_confidence``, ``sum_confidence_sq``), ``copies`` the ``event_statistics`` of the
    same rows. Only the events stored more than once need a pass of their own: a bin has
    eₘ = nₘ − Σ(k − 1) events and Vₘ = (Sₘ − Σc²) + Σ(k² − k)·c(1 − c), both sums over its
    repeated events (so with none, Vₘ is Sₘ − Σc², bit for bit). The random numbers depend on
    (bin, draw, j) only, so they are drawn once, in small tables, and joined to every cell's
    bins.
    """
    n, total, k, c = pl.col("n"), pl.col("sum_confidence"), pl.col("k"), pl.col("c")
    grid = pl.LazyFrame({"bin": range(bins)}, schema={"bin": pl.Int64}).join(
        pl.LazyFrame({"draw": range(draws)}, schema={"draw": pl.Int64}), how="cross"
    )
    noise = grid.with_columns(normal=normal(STREAMS["ece_null_normal"], "bin", "draw"))
    pseudo = grid.join(
        pl.LazyFrame({"j": range(SMALL_BIN)}, schema={"j": pl.Int64}), how="cross"
    ).with_columns(u=uniform(STREAMS["ece_null_bernoulli"], "bin", "draw", "j"))
    repeated = (
        copies.with_columns(extra=(k * k - k).cast(pl.Float64) * c * (1 - c))
        .group_by(CELL_ID, "bin")
        .agg(repeated=(k - 1).sum(), extra=exact_sum(pl.col("extra")))
    )
    per_bin = (
        width.select(CELL_ID, "bin", "n", "sum_confidence", "sum_confidence_sq")
        .join(repeated, on=[CELL_ID, "bin"], how="left")
        .select(
            CELL_ID,
            "bin",
            "n",
            "sum_confidence",
            events=n - pl.col("repeated").fill_null(0),
            variance=(total - pl.col("sum_confidence_sq")) + pl.col("extra").fill_null(0.0),
        )
    )
    # the repeated events of a bin take its first slots j, the most copies first; the
    # events of one row take the rest (events with equal k are interchangeable: they share
    # the bin's S/n)
    ranked = copies.select(
        CELL_ID,
        "bin",
        "k",
        j=k.rank("ordinal", descending=True).over(CELL_ID, "bin").cast(pl.Int64) - 1,
    )
    small = (
        per_bin.filter(pl.col("events") <= SMALL_BIN)
        .join(pseudo, on="bin")
        .filter(pl.col("j") < pl.col("events"))
        .join(ranked, on=[CELL_ID, "bin", "j"], how="left")
        .group_by(CELL_ID, "bin", "draw")
        .agg(
            n.first(),
            total.first(),
            simulated=pl.when(pl.col("u") * n < total)
            .then(k.fill_null(1))
            .otherwise(0)
            .sum()
            .cast(pl.Float64),
        )
    )
    spread = pl.col("variance").clip(lower_bound=0.0).sqrt()
    large = (
        per_bin.filter(pl.col("events") > SMALL_BIN)
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
    """Per cell: ``ece_null``, ``ece_excess``, ``ece_pvalue`` = (b + 1)/(R + 1) from the draws
    and the observed ``ece`` (a frame with ``CELL_ID`` and ``ece``)."""
    ece = pl.col("ece")
    reached = (ece >= pl.col("observed_ece") - TIE).sum()
    return (
        draws.join(observed.select(CELL_ID, observed_ece="ece"), on=CELL_ID)
        .group_by(CELL_ID)
        .agg(
            ece_null=exact_mean(ece),
            ece_pvalue=(reached + 1).cast(pl.Float64) / (pl.len() + 1).cast(pl.Float64),
            observed_ece=pl.col("observed_ece").first(),
        )
        .select(
            CELL_ID,
            "ece_null",
            ece_excess=pl.col("observed_ece") - pl.col("ece_null"),
            ece_pvalue="ece_pvalue",
        )
    )
