"""The paired Poisson bootstrap over test samples, as a matrix product (docs/statistics.md).

**Weights.** Replicate b gives test sample s the weight w_{s,b} ~ Poisson(1): the inverse
Poisson CDF of the counter-based uniform ``uniform(stream, seed, b, sample_id)``
(``relcol.metrics.uniform``), with stream = ``stream_key("bootstrap:<study>")`` and ``seed``
the ``--seed`` offset. So the weights are a pure function of (study, seed, b, sample_id):
every cell of a study, every engine (``poisson_weight`` in Polars, the SQL macro
``poisson_weight``, ``poisson_weights`` in numpy agree bit for bit) and every partition
order sees the same resample. Rows of a cell sharing a sample_id (all its seeds and
repeats, all its labels) share the weight: the bootstrap resamples test samples, not rows.
Differences between two cells on the same samples (severity d against clean, model A
against model B) are therefore paired.

**The matrix product.** One sort of a cell's rows by (confidence, sample_id, seed, repeat)
gives every row its equal-width bin, its equal-mass bin and its confidence level. The rows
are then summed per sample into D (samples × statistics): for each equal-width bin the
sample's row count, Σc, Σz, Σc², Σcz and Σ of the top-label log loss; for each equal-mass
bin the count, Σc, Σz; per cell the confidence moments of right and wrong rows and the
proba scores. All replicates' sums are W·D, with W (replicates × samples) generated for the
samples the cells have (one block of cells per (study, dataset), never the study's whole
sample set at once), and every metric of a replicate comes from its sums through the
metric suite's own ``*_from_bins`` builders, grouped by (cell, replicate). Replicate 0 of
the product has unit weights: it reproduces the point estimates, which the tests hold to
the suite's tables.

**Rank metrics** (AUROC, AUPR, FPR at 95 % TPR, the selective-prediction summaries) are
not linear in the weights. Their replicates come from each confidence level's right and
wrong rows weighted by W (the product H · W of the rows' one-hot levels with W), with the
weighted Mann–Whitney sums and the risk–coverage steps over the levels, sorted once, in one
compiled loop per cell that holds the counts of a few levels at a time. A cell with at
most ``levels`` distinct confidences (default 1024) is exact; a cell with more has its
distinct confidences grouped into ``levels`` consecutive runs of (nearly) equal size, and
its replicates are shifted by the exact point estimate minus the grouped one, so the
interval sits on the exact estimate and only its spread carries the grouping (measured
against exact replicates in ``tests/test_bootstrap.py``).

**Conventions** (documented in the README):

- ACE: the equal-mass bins are fixed at the point estimate's assignment; a replicate
  reweights the rows of each bin rather than re-binning the resample, so ACE's replicates
  are conditional on the bins, like every equal-width metric's.
- ECE − ECE₀ (``ece_excess``): ECE₀ depends on the confidences only; it is held at its
  point estimate, so the replicate is ECE_b − ECE₀.
- Which metrics print an interval: ``INTERVAL_METRICS``, those whose realised coverage
  ``relcol.analysis.coverage_study`` verifies; ``NO_INTERVAL`` lists the others with the
  reason (an estimator biased by about its interval's width). ``ece_null``,
  ``ece_pvalue``, ``classwise_ece`` and ``n`` have no replicates.
- Percentile interval [Q_{α/2}, Q_{1−α/2}] over the replicates in which the metric is
  defined (numpy's linear quantile, Hyndman–Fan type 7); null when fewer than half of the
  replicates define it (an AUROC of a cell with one wrong row, say). |Δ| gets the image of
  Δ's interval under |·| (``metric_interval``).
- A bin's accuracy gets a Wilson score interval on the bin's distinct test samples
  (``bin_intervals``), none below ``MIN_BIN_SAMPLES`` samples.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import scipy.sparse as sparse
import scipy.sparse.csgraph as csgraph
from scipy import special
from threadpoolctl import threadpool_limits

from relcol._cluster import available_cores
from relcol._memory import release_freed_memory
from relcol.analysis._bins import risk_coverage
from relcol.analysis._multiplicity import benjamini_hochberg, bootstrap_p_values
from relcol.checks import check_int, check_interval, check_seed
from relcol.errors import ParameterError
from relcol.metrics import (
    BIN_SUMS,
    BINNINGS,
    REGISTRY,
    TWO_32,
    WIDTH_METRICS,
    bin_index,
    bin_metrics,
    bin_terms,
    blocked_product,
    cell_sorted,
    chunk_filter,
    chunk_spans,
    exact_product,
    exact_sums_by,
    exact_var,
    moment_metrics,
    parts_total,
    product_grid,
    rank_metrics,
    replicated,
    rows_by_key,
    sorted_curve,
    stream_key,
    uniform,
    weighted_rank_metrics,
    width_metrics,
)
from relcol.metrics import HASH_ABSORB as ABSORB
from relcol.metrics import HASH_MASK as MASK
from relcol.metrics import HASH_MIX as MIX
from relcol.metrics import HASH_SEED as SEED
from relcol.metrics import brier_terms as _brier_terms
from relcol.metrics import nll_terms as _nll_terms
from relcol.metrics import nll_top_terms as _nll_top_terms
from relcol.store import CELL

#: Default number of replicates B, level α, rank-metric levels and the selective summaries'
#: targets (``risk_at_coverage``'s coverage, ``coverage_at_risk``'s risk).
REPLICATES = 1000
ALPHA = 0.05
LEVELS = 1024
COVERAGE = 0.8
RISK = 0.05

#: Poisson(1) CDF F(0), F(1), … as the Float64 both engines compare the uniform with;
#: w = #{j : F(j) < u}. F(15) rounds to 1 − 1e−14, beyond a 32-bit uniform's reach.
POISSON_CDF: tuple[float, ...] = tuple(
    math.fsum(math.exp(-1.0) / math.factorial(i) for i in range(j + 1)) for j in range(16)
)

#: Metrics from per-cell sums that need the probability vector.
PROBA_METRICS = replicated("proba")
#: Effect sizes from the confidence moments of right and wrong rows.
MOMENT_METRICS = replicated("moments")
#: Metrics from counts per confidence level.
RANK_METRICS = replicated("ranks")
#: Every metric the replicates hold: the registry's metrics with a kernel, family by family.
REPLICATED = (*WIDTH_METRICS, *replicated("mass"), *PROBA_METRICS, *MOMENT_METRICS, *RANK_METRICS)
#: Every metric with replicates or replicates derived from them (``ece_excess``: ECE's), and
#: the table each belongs to.
TABLES: Mapping[str, tuple[str, ...]] = {
    view: tuple(m.name for m in REGISTRY.values() if m.view == view and m.interval is not None)
    for view in ("calibration", "discrimination", "selective")
}
#: Metrics printed as a descriptive number only, and why (``Metric.interval``): the
#: estimator's bias is of the order of its interval, so its bootstrap interval misses the
#: population value far more often than α (``relcol.analysis.coverage_study`` measures it;
#: docs/statistics.md has the table).
NO_INTERVAL: Mapping[str, str] = {
    name: REGISTRY[name].interval
    for names in TABLES.values()
    for name in names
    if REGISTRY[name].interval
}
#: Metrics printed with an interval (``<metric>_lo``/``<metric>_hi``), each realised
#: coverage verified by ``relcol.analysis.coverage_study`` on every law of ``LAWS``.
INTERVAL_METRICS = tuple(
    name for names in TABLES.values() for name in names if name not in NO_INTERVAL
)
#: A bin's accuracy gets an interval (Wilson score on its distinct test samples) from this
#: many samples on: Wilson covers in bins of every size (README, "Coverage, verified"), but
#: below 5 samples it spans most of [0, 1] and says nothing.
MIN_BIN_SAMPLES = 5
#: Metrics with per-seed values (ACE and the ECE₀ family need a pooled cell).
SEED_METRICS = tuple(name for name in REPLICATED if REGISTRY[name].needs != "mass")

#: Entries of one dense D (samples × statistics) or rank-count array processed at once. Small
#: enough that a batch's arrays (D, its exact product, the per-bin sums) are a few MB each: they
#: stay in the caches and the allocator hands the memory of one batch to the next, where batches
#: of 10⁷ entries made arrays of 100 MB and more, fresh pages from the kernel for every batch
#: (``bench_bootstrap.py``'s shape of the built-in study: 15 s of CPU against 13 s, 2.4 GB peak
#: against 2.0 GB).
BATCH_ENTRIES = 1_000_000
#: Rows of a chunk whose per-seed values are computed at once (runs of whole cells): their
#: group-bys and sorts hold about 0.2 GB per 10⁶ rows above the chunk's own arrays, and they
#: run beside the chunk's products, so that memory adds to the products' at the top of a
#: report's memory (the 10⁸-row report: 1.63 GB against 1.53 GB when they ran after the
#: products); those of a cell of more rows, which cannot be split, run after them. Every
#: per-seed value is an order-free sum over its own rows, so the values are the same bits
#: however the cells are grouped.
SEED_ROWS = 500_000
#: Rows of a chunk read and resampled at once (runs of whole cells). The chunk's sorted rows and
#: its blocks' arrays come to 0.2–0.4 GB per 10⁶ rows at the top of a report's memory: the
#: built-in study's report (2.7·10⁶ rows) peaked at 2.1–2.2 GB in one chunk and 1.6–1.7 GB in
#: two, the 10⁸-row report at 2.1 GB and 1.9 GB in about the same time (docs/performance.md,
#: "The bootstrap's chunks"). A cell's replicates depend on its own rows only, so they are the
#: same bits however the cells are chunked.
BOOTSTRAP_ROWS = 1_500_000
#: Cells × (B + 1) of a chunk at most, whatever its rows: each cell's replicates take about
#: 0.36 MB at B = 1000 and M = 15 (30 metrics in Float64, two binnings' M bins in Float32),
#: and a chunk's products hold them two to three times over. Bounded by its rows alone, a
#: chunk of 15 000 cells of 100 rows each peaked at 17.6 GB. Cells of at least
#: ``BOOTSTRAP_ROWS`` / 1024 rows (the built-in study's, 1 539 and more) are chunked as before.
CHUNK_REPLICATES = 1024 * 1001


# Weights -------------------------------------------------------------------------------------


def bootstrap_stream(study: str) -> int:
    """The generator's first key for ``study``: ``stream_key("bootstrap:<study>")``."""
    return stream_key(f"bootstrap:{study}")


def poisson_weight(*keys: pl.Expr | str | int) -> pl.Expr:
    """Poisson(1) weight of ``uniform(*keys)`` by the inverse CDF, Int64: #{j : F(j) < u}.

    With keys (stream, seed, replicate, sample_id) this is the bootstrap weight; the SQL
    macro ``poisson_weight(k0, k1, k2, k3)`` and ``poisson_weights`` give the same integers.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.analysis import poisson_weight
    >>> frame = pl.DataFrame({"b": [0, 0, 1, 1], "s": [0, 1, 0, 1]})
    >>> frame.select(w=poisson_weight(7, 0, "b", "s"))["w"].to_list()
    [3, 1, 1, 0]
    """
    u = uniform(*keys)
    total = pl.lit(0, pl.Int64)
    for level in POISSON_CDF:
        total = total + (u > level).cast(pl.Int64)
    return total.alias("weight")


def poisson_weights(
    study: str, sample_ids: Sequence[int] | np.ndarray, replicates: int, *, seed: int = 0
) -> np.ndarray:
    """The weights of replicates 0 … B−1 for ``sample_ids``: a uint8 (B × n) array.

    Equal to ``poisson_weight(bootstrap_stream(study), seed, b, sample_id)``: the same
    32-bit hash h, computed with numpy on unsigned 64-bit words, and u = (h + ½)/2³² > F(j)
    tested exactly as h ≥ T(j), the smallest such integer.

    Examples
    --------
    >>> from relcol.analysis import poisson_weights
    >>> poisson_weights("default", [0, 1, 2], 2).tolist()
    [[2, 4, 1], [2, 1, 4]]
    """
    columns = weight_columns(study, sample_ids, replicates, seed=seed)
    return np.ascontiguousarray(columns[:, 1:].T)


def weight_columns(
    study: str,
    sample_ids: Sequence[int] | np.ndarray,
    replicates: int,
    *,
    seed: int = 0,
    out: np.ndarray | None = None,
    threads: int | None = None,
) -> np.ndarray:
    """Wᵀ as the bootstrap multiplies it: a uint8 (n × (1 + B)) array, a column of ones (the
    point estimates' unit weights), then ``poisson_weights(...).T``; or the same numbers
    written into ``out`` (n × (1 + B), any numeric dtype), which is returned. ``threads``:
    at most this many blocks drawn at once (default: the cores).

    One byte per weight (they are integers below 2⁸): the exact product turns a block of
    samples into Float64 at a time and the rank kernel adds them in Float64, so no wider copy
    of every sample's weights is ever held (for 5·10⁵ samples and B = 1000 that was 6 GB); a
    block streamed into a product is drawn straight into its Float64 ``out``.
    Each weight is its hash's count of thresholds reached, in one compiled pass
    (``relcol.analysis._compiled.poisson_block``: about 10× faster than numpy's passes over the
    hashes, on one core, and no array of them), a block of samples at a time side by side
    on the cores: each weight is its own hash, so the blocks are those of one draw."""
    from relcol.analysis._compiled import poisson_block  # numba: on first use only

    ids = np.asarray(sample_ids).astype(np.int64)
    if out is None:
        out = np.empty((len(ids), replicates + 1), dtype=np.uint8)
    low = (ids & MASK).astype(np.uint64)
    high = ((ids >> 32) & MASK).astype(np.uint64)
    keys = _replicate_keys(bootstrap_stream(study), seed, replicates)
    words = np.uint64(ABSORB), np.uint64(MIX), np.array(_THRESHOLDS, dtype=np.uint64)
    span = max(1, HASH_ENTRIES // max(replicates, 1))

    def draw(s0: int) -> None:
        s1 = s0 + span
        poisson_block(low[s0:s1], high[s0:s1], keys, *words, out[s0:s1])

    starts = range(0, len(ids), span)
    threads = _threads() if threads is None else threads
    if len(starts) > 1 and threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(draw, starts))
    else:
        for s0 in starts:
            draw(s0)
    return out


#: Weights drawn at a time by one core in ``weight_columns`` (samples × replicates).
HASH_ENTRIES = 2**22


#: T(j): u = (h + ½)/2³² > F(j) exactly when the integer h ≥ T(j) (F(j)·2³² − ½ is exact);
#: a T(j) of 2³² or more no 32-bit hash reaches.
_THRESHOLDS = tuple(
    np.uint32(t) for f in POISSON_CDF if (t := math.floor(f * TWO_32 - 0.5) + 1) < 2**32
)

#: The largest weight any hash gives (Poisson(1) reaches 12 with probability 8·10⁻¹⁰, 13 below
#: 2⁻³²): the exact product's grid is sized for it, so it is the same for every draw and every
#: part of one, and is known before any weight is drawn.
WEIGHT_MAX = len(_THRESHOLDS)


def _replicate_keys(stream: int, seed: int, replicates: int) -> np.ndarray:
    """The hash state after the keys (stream, seed, b) for each replicate b < ``replicates``
    (uint64 words below 2³²): the rest of hash32(stream, seed, b, s) absorbs the sample's
    two words."""
    h = SEED
    for key in (stream, seed):
        h = _absorb_int(_absorb_int(h, key & MASK), (key >> 32) & MASK)
    b = np.arange(replicates, dtype=np.uint64)
    return _absorb(_absorb(np.uint64(h), b), np.uint64(0))  # b < 2^32: its high word is 0


def _absorb_int(h: int, word: int) -> int:
    return ((h ^ word) * ABSORB) & MASK


def _absorb(h: np.ndarray, word: np.ndarray) -> np.ndarray:
    return ((h ^ word) * np.uint64(ABSORB)) & np.uint64(MASK)


# The result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates of every metric of every cell, and the per-seed values.

    Attributes
    ----------
    cells
        The cell keys, one row per cell; row i is cell i of ``values``.
    values
        Metric name → (cells × B) Float64 array of replicate values; NaN where the metric
        is undefined in a replicate.
    points
        Metric name → (cells,) the values at unit weights (the point estimates; the rank
        metrics exact), which the tests hold to the metric suite's tables.
    seeds
        One row per cell × seed: the cell keys, ``seed``, ``n`` and every metric of
        ``SEED_METRICS`` computed on that seed's rows alone.
    replicates, seed, levels
        B, the generator offset, and the rank metrics' level cap.
    bins
        Binning (``"width"``, ``"mass"``, those of ``bootstrap``'s ``bin_replicates``) →
        (cells × M × B) Float32 replicates of each bin's accuracy (NaN where a replicate
        leaves the bin empty).
    bin_samples, bin_accuracy
        Binning → (cells × M): the distinct test samples with a row in each bin, and the
        bin's accuracy (NaN for an empty bin), for the per-bin intervals.
    risk_coverage
        With ``bootstrap``'s ``curve_points`` K > 0, each cell's risk–coverage curve at
        coverages 1/K … 1 (``relcol.analysis.risk_coverage`` of its ``selective_curve``, the
        same table), cells in ``cells``' order; else None.
    n_bins, coverage, risk
        The bins M and the selective summaries' targets the replicates were computed with.
    """

    cells: pl.DataFrame
    values: Mapping[str, np.ndarray]
    points: Mapping[str, np.ndarray]
    seeds: pl.DataFrame
    replicates: int
    seed: int
    levels: int
    bins: Mapping[str, np.ndarray] = field(default_factory=dict)
    bin_samples: Mapping[str, np.ndarray] = field(default_factory=dict)
    bin_accuracy: Mapping[str, np.ndarray] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=CELL)
    risk_coverage: pl.DataFrame | None = None
    n_bins: int = 15
    coverage: float = COVERAGE
    risk: float = RISK

    @property
    def draws(self) -> tuple:
        """``draws_of`` the settings these replicates were computed with."""
        return draws_of(
            self.replicates, self.seed, self.levels, self.n_bins, self.coverage, self.risk
        )


def draws_of(
    replicates: int,
    seed: int,
    levels: int = LEVELS,
    bins: int = 15,
    coverage: float = COVERAGE,
    risk: float = RISK,
) -> tuple:
    """What a cell's replicates depend on besides its rows: B, the generator offset, the
    level cap, M and the targets (``bootstrap``'s parameters, its defaults). Two bootstraps
    with equal draws give a cell with the same rows the same replicates, bit for bit (its
    weights are keyed by the study, the sample and the replicate, never by the other cells)."""
    return (replicates, seed, levels, bins, coverage, risk)


def bootstrap(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    replicates: int = REPLICATES,
    bins: int = 15,
    seed: int = 0,
    levels: int = LEVELS,
    coverage: float = COVERAGE,
    risk: float = RISK,
    proba: bool | None = None,
    cells: pl.DataFrame | None = None,
    chunk_rows: int = BOOTSTRAP_ROWS,
    each_run: Callable | None = None,
    bin_replicates: Collection[str] = BINNINGS,
    curve_points: int = 0,
) -> Replicates:
    """Paired Poisson bootstrap replicates of every metric of every cell of ``frame``.

    Parameters
    ----------
    frame
        Prediction rows with the cell keys (``study``, ``dataset``, ``model``,
        ``corruption``, ``severity``, ``label``), ``sample_id``, ``seed``, ``repeat``,
        ``confidence``, ``correct`` and, for ``brier`` and ``nll``, ``proba`` and
        ``y_true``. A LazyFrame is read one chunk of cells at a time.
    replicates
        B, an int >= 1.
    bins
        Equal-width (and equal-mass) bins M, as for the point estimates.
    seed
        Offset of the generator (the second key): another seed, another resample.
    levels
        Cap on the confidence levels of the rank metrics' replicates (exact below it).
    coverage, risk
        Targets of ``risk_at_coverage`` and ``coverage_at_risk``.
    proba
        Whether to compute ``brier`` and ``nll`` (default: when ``frame`` has ``proba``).
    cells
        The cells with their row counts ``n`` (a calibration table), if known: saves a scan.
    chunk_rows
        Rows read and processed together (runs of whole cells; a larger cell alone), here
        or on the workers of ``each_run``.
    each_run
        Where the runs of cells are computed, elsewhere (a Dask cluster:
        ``relcol.workflows._report_backend``): ``each_run(cells, work)`` returns
        ``work(rows, run)`` for consecutive runs of whole ``cells``, ``rows`` being the rows
        ``frame`` reads (its files, unfiltered). Every cell's replicates depend on its rows
        only, so the result is the same.
    bin_replicates
        The binnings whose per-bin accuracy replicates are kept (``Replicates.bins``): at
        B = 1000 and M = 15 each takes 60 kB per cell, and the report reads the equal-width
        ones alone. Every other output is the same whatever they are.
    curve_points
        K > 0: also each cell's risk–coverage curve at coverages 1/K … 1
        (``Replicates.risk_coverage``), read off the rows as they are sorted here for the
        rank metrics, where the metric tables would sort them again; 0 (default): none.

    Returns
    -------
    Replicates
    """
    replicates = _check_int("replicates", replicates, 1)
    bins = _check_int("bins", bins, 1)
    levels = _check_int("levels", levels, 2)
    curve_points = check_int("curve_points", curve_points, 0)
    check_seed(seed)
    if isinstance(bin_replicates, str):
        bin_replicates = (bin_replicates,)
    kept = tuple(b for b in BINNINGS if b in set(bin_replicates))
    if set(bin_replicates) - set(kept):
        raise ParameterError(
            f"bin_replicates must name binnings among {', '.join(BINNINGS)}. "
            f"Got {sorted(set(bin_replicates) - set(kept))}."
        )
    lazy = frame.lazy()
    names = lazy.collect_schema().names()
    if proba is None:
        proba = "proba" in names and "y_true" in names
    keys = list(CELL)
    if cells is None:
        cells = lazy.group_by(keys).agg(n=pl.len()).collect()
    counts = (
        cells.select(*keys, pl.col("n").cast(pl.Int64)).sort(keys, nulls_last=True)
    ).with_row_index("cell")
    cells = counts.select(keys)
    context = _Context(replicates, bins, seed, levels, coverage, risk, proba, kept, curve_points)
    work = _ChunkWork(context, chunk_rows)
    runs = [work(lazy, counts)] if each_run is None else each_run(counts, work)
    parts = [part for run in runs for part in run]
    names = REPLICATED
    values = {
        name: _gathered([p.values for p in parts], name) if parts else np.empty((0, replicates))
        for name in names
    }
    points = {
        name: np.concatenate([p.points[name] for p in parts]) if parts else np.empty(0)
        for name in names
    }

    def per_bin(
        source: str, prefix: str, empty: np.ndarray, binnings: Sequence[str] = BINNINGS
    ) -> dict[str, np.ndarray]:
        return {
            binning: _gathered([getattr(p, source) for p in parts], f"{prefix}:{binning}")
            if parts
            else empty
            for binning in binnings
        }

    bin_accuracy = per_bin("points", "bin", np.empty((0, bins)))
    empty = np.empty((0, bins, replicates), dtype=np.float32)
    bin_values = per_bin("values", "bin", empty, kept)
    bin_samples = per_bin("values", "samples", np.empty((0, bins), dtype=np.int64))
    seeds = pl.concat([p.seeds for p in parts]) if parts else _empty_seeds()
    seeds = (
        seeds.join(counts.select("cell", *keys), on="cell", how="left")
        .sort("cell", "seed")
        .select(*keys, "seed", pl.exclude("cell", "seed", *keys))
    )
    curve = None
    if curve_points:
        curve = pl.concat([p.curve for p in parts]) if parts else _empty_curve(counts)
    return Replicates(
        cells,
        values,
        points,
        seeds,
        replicates,
        seed,
        levels,
        bin_values,
        bin_samples,
        bin_accuracy,
        risk_coverage=curve,
        n_bins=bins,
        coverage=coverage,
        risk=risk,
    )


def combined(parts: Sequence[Replicates], cells: pl.DataFrame) -> Replicates:
    """The replicates of ``cells`` (a frame of their keys), each cell's taken from the first
    of ``parts`` that holds it, in ``bootstrap``'s order (the keys sorted, nulls last).

    Every part must have the same ``draws``: then this is what one bootstrap of those cells'
    rows gives, bit for bit, provided each part was drawn from the same rows of the cells it
    gives (which only the caller can know). The per-bin arrays are those of the binnings
    every part has, the risk–coverage curve there when every part has one. Raises
    ``ValueError`` for parts of different draws or a cell no part holds.
    """
    draws = {part.draws for part in parts}
    if len(draws) != 1:
        raise ValueError(f"combined needs parts of one set of draws. Got {sorted(draws)}.")
    first = parts[0]
    keys = list(first.keys)
    left = cells.select(keys).sort(keys, nulls_last=True).with_row_index("at")
    n = left.height
    taken = []  # (part, its rows, their places in the result, their keys)
    for part in parts:
        hit = left.join(part.cells.with_row_index("row"), on=keys, nulls_equal=True)
        if hit.height:
            taken.append((part, hit["row"].to_numpy(), hit["at"].to_numpy(), hit.select(keys)))
            left = left.join(hit.select("at"), on="at", how="anti")
    if left.height:
        raise ValueError(f"combined: {left.height} of the cells are in none of the parts.")

    def placed(arrays: Callable[[Replicates], Mapping[str, np.ndarray]]) -> dict:
        names = [name for name in arrays(first) if all(name in arrays(part) for part in parts)]
        out = {}
        for name in names:
            like = arrays(first)[name]
            out[name] = np.empty((n, *like.shape[1:]), like.dtype)
            for part, rows, at, _ in taken:
                out[name][at] = arrays(part)[name][rows]
        return out

    def per_cell(frame: Callable[[Replicates], pl.DataFrame], then: Sequence[str]) -> pl.DataFrame:
        pieces = [
            frame(part).join(held, on=keys, how="semi", nulls_equal=True)
            for part, _, _, held in taken
        ] or [frame(first).clear()]
        return pl.concat(pieces).sort([*keys, *then], nulls_last=True, maintain_order=True)

    curves = all(part.risk_coverage is not None for part in parts)
    return Replicates(
        cells.select(keys).sort(keys, nulls_last=True),
        placed(lambda part: part.values),
        placed(lambda part: part.points),
        per_cell(lambda part: part.seeds, ["seed"]),
        first.replicates,
        first.seed,
        first.levels,
        placed(lambda part: part.bins),
        placed(lambda part: part.bin_samples),
        placed(lambda part: part.bin_accuracy),
        first.keys,
        per_cell(lambda part: part.risk_coverage, []) if curves else None,
        first.n_bins,
        first.coverage,
        first.risk,
    )


def _gathered(pieces: list[dict[str, np.ndarray]], name: str) -> np.ndarray:
    """The chunks' arrays ``name`` in one, each chunk's let go of as it is copied: the
    replicates of every cell are held once, not twice, at the end of the bootstrap. One
    chunk's is taken as it is (a copy of the 800 cells of 500 samples each took 0.3 s)."""
    if len(pieces) == 1:
        return pieces[0].pop(name)
    out = np.empty(
        (sum(len(p[name]) for p in pieces), *pieces[0][name].shape[1:]), pieces[0][name].dtype
    )
    start = 0
    for piece in pieces:
        array = piece.pop(name)
        out[start : start + len(array)] = array
        start += len(array)
    return out


@dataclass(frozen=True)
class _Context:
    replicates: int
    bins: int
    seed: int
    levels: int
    coverage: float
    risk: float
    proba: bool
    # the binnings whose per-bin replicates are kept (the others: their point alone)
    kept_bins: tuple[str, ...] = BINNINGS
    # K of the risk–coverage curve read off the sorted rows (0: none)
    curve_points: int = 0
    # the last block's weights: consecutive chunks of one dataset reuse them
    cache: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class _Part:
    values: dict[str, np.ndarray]
    points: dict[str, np.ndarray]
    seeds: pl.DataFrame
    curve: pl.DataFrame | None = None


def _check_int(name: str, value: object, low: int) -> int:
    return check_int(name, value, low)


# One chunk of cells ----------------------------------------------------------------------------


def _chunk(lazy: pl.LazyFrame, cells: pl.DataFrame, ctx: _Context) -> _Part:
    """Replicates and per-seed values of a run of consecutive cells."""
    rows = _rows(lazy, cells, ctx)
    cell = rows["cell"].to_numpy() - cells["cell"][0]
    starts = np.searchsorted(cell, np.arange(cells.height + 1))
    spans = chunk_spans(np.diff(starts).tolist(), SEED_ROWS)
    stop = threading.Event()

    def seed_values() -> pl.DataFrame | None:
        seeds = []
        for a, n in spans:
            if stop.is_set():  # the replicates failed or were interrupted: nobody reads these
                return None
            seeds.append(_seed_values(rows.slice(starts[a], starts[a + n] - starts[a]), ctx))
        return pl.concat(seeds, how="vertical")

    def beside() -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        seeds = seed_values()
        return seeds, None if stop.is_set() else _curve(rows, cells, ctx)

    if max((starts[a + n] - starts[a] for a, n in spans), default=0) > SEED_ROWS:
        # a cell of more rows than SEED_ROWS, whose per-seed values cannot be split: beside
        # the products their memory would add to the products' (10⁷ rows of one cell: 4.40 GB
        # against 3.15 GB), and its product keeps both cores busy on its own
        values, points = _replicates(rows, cells, cell, starts, ctx)
        return _Part(values, points, *beside())
    # The per-seed values (Polars) run beside the replicates' products (numpy and BLAS),
    # which leave the cores idle between their batches. A kernel that the per-seed values
    # compile off the main thread is not held from Ctrl-C (``held_while_compiling``), and
    # needs not be: Python delivers the signal to the main thread, never inside this
    # thread's compilation.
    with ThreadPoolExecutor(1) as side:
        done = side.submit(beside)
        try:
            values, points = _replicates(rows, cells, cell, starts, ctx)
            return _Part(values, points, *done.result())
        except BaseException:
            stop.set()
            raise


def _curve(rows: pl.DataFrame, cells: pl.DataFrame, ctx: _Context) -> pl.DataFrame | None:
    """The chunk's rows of ``Replicates.risk_coverage`` (None without ``curve_points``):
    ``risk_coverage`` of the cells' curves, read off their rows in ``_rows``' order."""
    if not ctx.curve_points:
        return None
    curve = sorted_curve(rows.select("cell", "c", "z"), "cell")
    return (
        risk_coverage(curve, points=ctx.curve_points, by=("cell", "score"))
        .join(cells.lazy().select("cell", *CELL), on="cell", how="left", maintain_order="left")
        .sort("cell", maintain_order=True)
        .select(*CELL, pl.exclude("cell", *CELL))
        .collect()
    )


def _empty_curve(counts: pl.DataFrame) -> pl.DataFrame:
    """``Replicates.risk_coverage`` of no cells."""
    measures = dict.fromkeys(("coverage", "risk", "threshold", "oracle_risk"), pl.Float64)
    return pl.DataFrame(
        schema={k: counts.schema[k] for k in CELL} | {"score": pl.String} | measures
    )


def _replicates(
    rows: pl.DataFrame, cells: pl.DataFrame, cell: np.ndarray, starts: np.ndarray, ctx: _Context
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every replicated metric's replicates and point estimates of a chunk's cells (``cell``:
    each row's cell within the chunk, ``starts``: where each cell's rows start)."""
    n_cells = cells.height
    study = cells["study"].to_list()
    dataset = cells["dataset"].to_list()
    values = {name: np.full((n_cells, ctx.replicates), np.nan) for name in REPLICATED}
    points = {name: np.full(n_cells, np.nan) for name in values}
    for binning in BINNINGS:
        kept = ctx.replicates if binning in ctx.kept_bins else 0
        values[f"bin:{binning}"] = np.full((n_cells, ctx.bins, kept), np.nan, dtype=np.float32)
        values[f"samples:{binning}"] = np.zeros((n_cells, ctx.bins), dtype=np.int64)
        points[f"bin:{binning}"] = np.full((n_cells, ctx.bins), np.nan)
    columns = {name: rows[name].to_numpy() for name in rows.columns if name != "cell"}
    # Blocks: consecutive cells of one (study, dataset) share their sample ids.
    block_starts = [0] + [
        i for i in range(1, n_cells) if (study[i], dataset[i]) != (study[i - 1], dataset[i - 1])
    ]
    for b0, b1 in zip(block_starts, [*block_starts[1:], n_cells], strict=True):
        lo, hi = starts[b0], starts[b1]
        block = {name: array[lo:hi] for name, array in columns.items()}
        block["cell"] = cell[lo:hi] - b0
        _block(block, b1 - b0, study[b0], ctx, _Into(values, points, np.arange(b0, b1)))
    return values, points


@dataclass(frozen=True)
class _Into:
    """Where the replicates of a block's cells go: ``values`` and ``points`` (``_replicates``'
    arrays, a row per cell of the chunk), cell i of the block at row ``rows[i]``. Each batch
    of cells is written there as it is done: no array of the block's replicates is put
    together first (fresh memory, whose page faults cost more than the copy: 0.4 s for the
    800 cells of 500 samples each)."""

    values: dict[str, np.ndarray]
    points: dict[str, np.ndarray]
    rows: np.ndarray

    def of(self, cells: np.ndarray) -> _Into:
        """The same for a set of the block's cells (numbered from 0 in that order)."""
        return _Into(self.values, self.points, self.rows[cells])

    def put_all(self, c0: int, arrays: dict[str, np.ndarray]) -> None:
        """A batch's arrays (``_linear``'s) for cells c0, c0 + 1, …: in each, the unit-weight
        column (first) is the point estimate, the others its replicates (a ``samples:``
        count has no replicates)."""
        for name, array in arrays.items():
            if name.startswith("samples:"):
                self.values[name][self.rows[c0 : c0 + len(array)]] = array
            else:
                self.put_parts(c0, name, array[..., 0], array[..., 1:])

    def put_parts(self, c0: int, name: str, point: np.ndarray, replicates: np.ndarray) -> None:
        """The point estimates and replicates of ``name`` for cells c0, c0 + 1, …"""
        rows = self.rows[c0 : c0 + len(point)]
        self.values[name][rows] = replicates
        self.points[name][rows] = point


@dataclass(frozen=True)
class _ChunkWork:
    """``_chunk`` of a run of cells, here or elsewhere (``bootstrap``'s ``each_run``), in
    chunks of whole cells of at most ``chunk_rows`` rows wherever it runs, the memory each
    chunk freed handed back after it; no parts for no cells."""

    ctx: _Context
    chunk_rows: int

    def __call__(self, rows: pl.LazyFrame, run: pl.DataFrame) -> list[_Part]:
        parts = []
        # a cell weighs at least its share of CHUNK_REPLICATES, so that a chunk of many
        # small cells is bounded by its replicates too
        least = -(-self.chunk_rows * (self.ctx.replicates + 1) // CHUNK_REPLICATES)
        for start, length in chunk_spans([max(n, least) for n in run["n"]], self.chunk_rows):
            if length:
                parts.append(_chunk(rows, run.slice(start, length), self.ctx))
                release_freed_memory()  # or the arrays every chunk freed pile up in the process
        return parts


def _rows(lazy: pl.LazyFrame, cells: pl.DataFrame, ctx: _Context) -> pl.DataFrame:
    """The chunk's rows sorted by (cell, confidence, sample_id, seed, repeat), with the
    per-row quantities every later step needs."""
    keys = list(CELL)
    c = pl.col("confidence").cast(pl.Float64)
    z = pl.col("correct").cast(pl.Float64)
    extra = {}
    if ctx.proba:
        extra = {
            "brier": _brier_terms("proba", "y_true"),
            "nll": _nll_terms("proba", "y_true"),
            "has_proba": (pl.col("proba").list.len() > 0).fill_null(False).cast(pl.Float64),
        }
    rows = (
        lazy.filter(chunk_filter(cells))
        .join(cells.lazy().select("cell", *keys), on=keys, how="inner", nulls_equal=True)
        .select(
            "cell",
            "sample_id",
            pl.col("seed").cast(pl.Int64),
            pl.col("repeat").cast(pl.Int64),
            c=c,
            z=z,
            wbin=bin_index("confidence", bins=ctx.bins).cast(pl.Int32),
            nll_top=_nll_top_terms(c, z),
            **extra,
        )
    )
    if ctx.proba:
        # a row without a vector has no score terms; the cell's brier/nll are then null
        rows = rows.with_columns(pl.col("brier", "nll").fill_null(0.0))
    frame = rows.collect()
    for name in ("sample_id", "seed", "repeat"):  # the keys a sample's weights and rows hang on
        if missing := frame[name].null_count():
            raise ParameterError(
                f"bootstrap needs every row's {name}: null {name} in {missing} of these cells' rows"
            )
    frame = cell_sorted(frame, "cell", "c", ("sample_id", "seed", "repeat"))
    cell = frame["cell"].to_numpy()
    c_values = frame["c"].to_numpy()
    n = len(cell)
    new_cell = np.ones(n, dtype=bool)
    new_cell[1:] = cell[1:] != cell[:-1]
    start = np.flatnonzero(new_cell)
    size = np.diff(np.append(start, n))
    rank = np.arange(n) - np.repeat(start, size)
    new_level = new_cell.copy()
    new_level[1:] |= c_values[1:] != c_values[:-1]
    level = np.cumsum(new_level) - 1
    level -= np.repeat(level[start], size)
    distinct = np.repeat(level[np.append(start[1:], n) - 1] + 1, size)
    n_cell = np.repeat(size, size)
    mean_c = np.repeat(np.add.reduceat(c_values, start) / size, size) if n else c_values
    grid = np.where(distinct <= ctx.levels, level, level * ctx.levels // np.maximum(distinct, 1))
    return frame.with_columns(
        mbin=pl.Series(rank * ctx.bins // np.maximum(n_cell, 1), dtype=pl.Int32),
        level=pl.Series(level, dtype=pl.Int64),
        grid=pl.Series(grid, dtype=pl.Int64),
        centred=pl.Series(c_values - mean_c),
    )


def _block(
    block: dict[str, np.ndarray], n_cells: int, study: str, ctx: _Context, into: _Into
) -> None:
    """Replicates of the cells of one (study, dataset) block, written ``into`` its rows.

    Cells that share their test samples (the cells of one model, of models on one test set)
    form a group with one W (replicates × the group's samples); cells on disjoint or mostly
    different samples go to different groups, so the work is linear in the rows whatever
    the structure. A block that is one group (every dense study) is one product, as ever. A
    group of very many samples (``STREAM_ENTRIES``) is multiplied a block of samples at a time
    with its weights drawn where they are used (``_streamed``), never whole."""
    samples, sid = _unique(block["sample_id"])
    groups = sample_groups(block["cell"], sid, n_cells, len(samples))
    large = [len(members) * (ctx.replicates + 1) > STREAM_ENTRIES for _, members in groups]
    if len(groups) == 1 and large[0]:
        return _product(block, n_cells, sid, len(samples), _Drawn(study, samples), ctx, into)
    if any(large):  # each large group streamed on its own, the others together as ever
        small = [cells for (cells, _), big in zip(groups, large, strict=True) if not big]
        sets = [cells for (cells, _), big in zip(groups, large, strict=True) if big]
        sets += [np.sort(np.concatenate(small))] if small else []
        return _merged(block, sets, lambda sub, n, to: _block(sub, n, study, ctx, to), into)
    if len(groups) == 1:
        wt = _cached_weights(study, samples, ctx)
        return _product(block, n_cells, sid, len(samples), wt, ctx, into)
    group_of_cell = np.empty(n_cells, dtype=np.int64)
    for g, (cells, _) in enumerate(groups):
        group_of_cell[cells] = g
    row_group = group_of_cell[block["cell"]]
    local = np.empty(len(sid), dtype=np.int64)  # each row's position in its group's samples
    order = np.argsort(row_group, kind="stable")
    edges = np.searchsorted(row_group[order], np.arange(len(groups) + 1))
    for g, (_, members) in enumerate(groups):
        rows = order[edges[g] : edges[g + 1]]
        local[rows] = np.searchsorted(members, sid[rows])
    grouped = _Groups(study, [samples[m] for _, m in groups], group_of_cell, ctx)
    return _product(block | {"group": row_group}, n_cells, local, 0, grouped, ctx, into)


@dataclass(frozen=True)
class _Groups:
    """A block's groups (``sample_groups``): ``samples[g]`` is group g's sample ids,
    ``group_of_cell`` each cell's group. Their weights are drawn where a batch of cells uses
    them (``drawn``), never every group's at once: the 800 models of 500 samples each held
    400 MB of weights, memory new to the process, whose first writes (page faults) cost
    about as much as drawing them."""

    study: str
    samples: list[np.ndarray]
    group_of_cell: np.ndarray
    ctx: _Context

    def size(self, g: int) -> int:
        return len(self.samples[g])

    def drawn(self, groups: np.ndarray, scratch: threading.local) -> _GroupWeights:
        """The weights of ``groups`` (group numbers) in a buffer of the thread's
        (``scratch``), which the next batch on that thread overwrites. A thread keeps the
        groups it drew last while its batches need no other: batches of the cells of one
        large group draw its weights once per thread, not once per batch."""
        held = getattr(scratch, "held", None)
        if held is not None and set(groups.tolist()) <= held.weights.keys():
            return held
        width = self.ctx.replicates + 1
        need = sum(self.size(g) for g in groups) * width
        buffer = getattr(scratch, "buffer", None)
        if buffer is None or len(buffer) < need:
            scratch.held = None  # let the views of the old buffer go with it
            buffer = scratch.buffer = np.empty(need, dtype=np.uint8)
        weights, start = {}, 0
        for g in groups.tolist():
            stop = start + self.size(g) * width
            out = buffer[start:stop].reshape(self.size(g), width)
            weights[g] = weight_columns(
                self.study, self.samples[g], width - 1, seed=self.ctx.seed, out=out, threads=1
            )
            start = stop
        scratch.held = _GroupWeights(weights, width)
        return scratch.held


@dataclass(frozen=True)
class _GroupWeights:
    """The weights of a batch's groups: ``weights[g]`` is group g's ``weight_columns``
    (samples × ``width`` = 1 + B, uint8)."""

    weights: dict[int, np.ndarray]
    width: int

    def size(self, g: int) -> int:
        return len(self.weights[g])

    def columns(self, g: int) -> np.ndarray:
        return self.weights[g]


#: A group of cells whose weights (samples × (1 + B), a byte each) would be more than this many
#: entries never holds them whole: they are drawn a block of samples at a time where the product
#: and the rank counts use them (``_streamed``). Below it W whole is faster (one draw, every
#: batch of cells reading it); above, W and D grew with the samples (a cell of 2·10⁶ samples:
#: 2 GB of weights and 2.3 GB of its D).
STREAM_ENTRIES = 2**28


@dataclass(frozen=True)
class _Drawn:
    """The weights of a group of ``samples`` (sample ids) of ``study`` too many to hold
    (``STREAM_ENTRIES``): ``_streamed`` draws them a block at a time."""

    study: str
    samples: np.ndarray


def _merged(
    block: dict[str, np.ndarray],
    sets: list[np.ndarray],
    replicates_of: Callable[[dict[str, np.ndarray], int, _Into], None],
    into: _Into,
) -> None:
    """A block's replicates from those of sets of its cells (sorted cell numbers, every cell
    in one): ``replicates_of(rows, n, to)`` of each set's rows, its n cells numbered from 0,
    writing them ``to`` those cells' rows."""
    number = np.empty(len(into.rows), dtype=np.int64)
    for cells in sets:
        number[cells] = np.arange(len(cells))
        rows = np.isin(block["cell"], cells)
        sub = {name: array[rows] for name, array in block.items()}
        sub["cell"] = number[sub["cell"]]
        replicates_of(sub, len(cells), into.of(cells))


#: A set of cells linked by shared samples is one group (one dense product over the union
#: of their samples) when that product is at most this many times the cells' own entries.
DENSE_SLACK = 1.25


def sample_groups(
    cell: np.ndarray, sid: np.ndarray, n_cells: int, n_samples: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The groups of cells whose replicates are one product: (cells, samples) per group, both
    sorted index arrays (cell numbers; positions among the block's ``n_samples`` samples).

    Cells linked through shared samples (the connected parts of the cell–sample graph) are
    one group when dense enough (``DENSE_SLACK``): the cells of a model and of models on one
    test set. A sparse part is split into the cells with identical sample sets, each set
    joining a group it overlaps while the group stays dense enough (``_merge_sets``). A block
    with all its cells on all its samples is one group of everything.

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.analysis._bootstrap import sample_groups
    >>> groups = sample_groups(np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 0, 1, 2, 3]), 3, 4)
    >>> [(c.tolist(), s.tolist()) for c, s in groups]
    [([0, 1], [0, 1]), ([2], [2, 3])]
    """
    cell = cell.astype(np.int64)
    key = cell * n_samples + sid
    if _fits_table(n_cells * n_samples, len(key)):
        seen = np.zeros(n_cells * n_samples, dtype=bool)
        seen[key] = True
        counts = np.count_nonzero(seen.reshape(n_cells, n_samples), axis=1)
        if (counts == n_samples).all():
            return [(np.arange(n_cells), np.arange(n_samples))]
        key = np.flatnonzero(seen)
    else:
        key = _distinct(key)
    pair_cell, pair_sid = key // n_samples, key % n_samples
    counts = np.bincount(pair_cell, minlength=n_cells)
    starts = np.concatenate([[0], np.cumsum(counts)])
    graph = sparse.coo_matrix(
        (np.ones(len(key), dtype=np.int8), (pair_cell, pair_sid + n_cells)),
        shape=(n_cells + n_samples, n_cells + n_samples),
    )
    _, label = csgraph.connected_components(graph, directed=False)
    label = label[:n_cells]
    order = np.argsort(label, kind="stable")
    split = np.flatnonzero(np.diff(label[order])) + 1
    groups = []
    for cells in np.split(order, split):
        members = _distinct(np.concatenate([pair_sid[starts[c] : starts[c + 1]] for c in cells]))
        if len(members) * len(cells) <= DENSE_SLACK * counts[cells].sum():
            groups.append((cells, members))
            continue
        groups += _merge_sets(cells, pair_sid, starts, n_samples)
    groups.sort(key=lambda group: int(group[0][0]))
    return groups


def _merge_sets(
    cells: np.ndarray, pair_sid: np.ndarray, starts: np.ndarray, n_samples: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cells of a sparse part grouped: cells with identical sample sets together, then
    each such set, largest first, joined to a group it shares samples with while the
    group's product stays within ``DENSE_SLACK`` of its cells' entries."""
    same: dict[bytes, list[int]] = {}
    for c in cells:
        same.setdefault(pair_sid[starts[c] : starts[c + 1]].tobytes(), []).append(int(c))
    sets = sorted(
        ((pair_sid[starts[m[0]] : starts[m[0] + 1]], m) for m in same.values()),
        key=lambda item: (-len(item[0]), item[1][0]),
    )
    owner = np.full(n_samples, -1)
    merged: list[list] = []  # [cells, samples, entries]
    for members, group_cells in sets:
        entries = len(members) * len(group_cells)
        for g in np.unique(owner[members]):
            if g < 0:
                continue
            union = np.union1d(merged[g][1], members)
            size = len(merged[g][0]) + len(group_cells)
            if len(union) * size <= DENSE_SLACK * (merged[g][2] + entries):
                merged[g] = [merged[g][0] + group_cells, union, merged[g][2] + entries]
                owner[members] = g
                break
        else:
            owner[members] = len(merged)
            merged.append([group_cells, members, entries])
    return [(np.array(sorted(c)), members) for c, members, _ in merged]


def _product(
    block: dict[str, np.ndarray],
    n_cells: int,
    sid: np.ndarray,
    n_samples: int,
    wt: np.ndarray | _Groups | _Drawn,
    ctx: _Context,
    into: _Into,
) -> None:
    """Replicates of a block's cells, written ``into`` their rows: on one set of
    ``n_samples`` samples with ``wt`` their Wᵀ (``sid``: each row's position in it) or a
    ``_Drawn`` (its weights drawn a block at a time), or on a block's groups with ``wt`` a
    ``_Groups`` (``sid``: each row's position in its group's samples, and the rows'
    ``group``; each batch's weights drawn as it starts)."""
    cell = block["cell"]
    bounds = np.searchsorted(cell, np.arange(n_cells + 1))

    def part(c0: int, c1: int) -> dict[str, np.ndarray]:
        rows = {name: a[bounds[c0] : bounds[c1]] for name, a in block.items()}
        rows["cell"] = rows["cell"] - c0
        rows["sid"] = sid[bounds[c0] : bounds[c1]]
        return rows

    grid = np.minimum(block["level"][bounds[1:] - 1] + 1, ctx.levels) * 2 * (ctx.replicates + 1)
    if isinstance(wt, _Drawn):
        # one pass over the samples per batch of cells, its rank counts bounded; the batch's
        # blocks of samples on the cores
        batches = _batches(grid, STREAM_COUNTS)
        exact = _exact_rank(block, n_cells, ctx)
        for c0, c1 in batches:
            linear, rank = _streamed(part(c0, c1), c1 - c0, n_samples, wt, ctx)
            into.put_all(c0, linear)
            _put_rank(c0, rank, into, exact)
        return
    # batches of cells whose dense D (samples × statistics) stays small, and of cells with
    # about equal rank-kernel work (levels × replicates), so that the threads share it evenly
    statistics = 6 * ctx.bins + 3 * ctx.bins + 9
    if isinstance(wt, _Groups):  # a cell's D spans its group's samples only
        # both kinds of replicates of a batch at once, on the weights drawn for it
        sizes = np.array([wt.size(g) for g in range(len(wt.samples))])
        batches = _batches(sizes[wt.group_of_cell] * statistics, BATCH_ENTRIES)
        jobs = [("both", c0, c1) for c0, c1 in batches]
    else:
        step = max(1, BATCH_ENTRIES // max(n_samples * statistics, 1))
        jobs = [("linear", c0, min(n_cells, c0 + step)) for c0 in range(0, n_cells, step)]
        jobs += [("rank", c0, c1) for c0, c1 in _batches(grid)]
    scratch = threading.local()

    def run(job):
        kind, c0, c1 = job
        rows, n = part(c0, c1), c1 - c0
        if kind == "linear":
            return _linear(rows, n, n_samples, wt, ctx)
        if kind == "rank":
            return _rank_replicates(rows, n, n_samples, wt, ctx)
        drawn = wt.drawn(_distinct(rows["group"]), scratch)
        return _linear(rows, n, 0, drawn, ctx), _rank_replicates(rows, n, 0, drawn, ctx)

    exact = _exact_rank(block, n_cells, ctx)

    def put(job, done) -> None:
        kind, c0 = job[:2]
        if kind == "both":
            into.put_all(c0, done[0])
            _put_rank(c0, done[1], into, exact)
        elif kind == "linear":
            into.put_all(c0, done)
        else:
            _put_rank(c0, done, into, exact)

    if len(jobs) > 2 and _threads() > 1:
        # numpy, BLAS and scipy release the GIL: batches run side by side on the cores, each
        # product on its own thread (BLAS threads of its own on top would put twice as many
        # threads as cores to work, spinning while they wait for each other); each batch's
        # replicates are written as it is done and let go of
        with ThreadPoolExecutor(_threads()) as pool, threadpool_limits(1, user_api="blas"):
            for job, done in zip(jobs, pool.map(run, jobs), strict=True):
                put(job, done)
    else:
        for job in jobs:
            put(job, run(job))


def _put_rank(
    c0: int, rank: dict[str, np.ndarray], into: _Into, exact: dict[str, np.ndarray]
) -> None:
    """A batch's rank metrics (cells c0, c0 + 1, …) written ``into`` their rows, shifted to
    their ``exact`` point estimates (``_exact_rank``: on the exact confidence levels, where
    the replicates' are on the grouped levels)."""
    for name in RANK_METRICS:
        grouped = rank[name]
        c1 = c0 + len(grouped)
        shift = exact[name][c0:c1] - grouped[:, 0]  # exact point minus the grouped point
        into.put_parts(c0, name, exact[name][c0:c1], grouped[:, 1:] + shift[:, None])


def _batches(entries: np.ndarray, limit: int = BATCH_ENTRIES) -> list[tuple[int, int]]:
    """Runs (c0, c1) of consecutive cells whose ``entries`` add up to at most ``limit`` (a
    larger cell alone)."""
    batches, c0, n = [], 0, len(entries)
    while c0 < n:
        c1, total = c0 + 1, entries[c0]
        while c1 < n and total + entries[c1] <= limit:
            total += entries[c1]
            c1 += 1
        batches.append((c0, c1))
        c0 = c1
    return batches


def _fits_table(span: int, count: int) -> bool:
    """Whether ``count`` integers over a range of ``span`` values are numbered through a table
    of that range (a flag per value) rather than a sort: when the range is at most a few
    times their count."""
    return span <= 4 * count + 1024


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` through a sort: numpy 2.3 and later take a plain ``np.unique``
    of integers through a hash table, which is slow when most values are distinct (0.17 s
    against 2 ms for 400 000 (cell, sample) keys)."""
    ordered = np.sort(values)
    keep = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers: through a table of their range
    when it is at most a few times their count (as the sample ids of a test set and the
    (cell, bin) keys of a batch are), with no sort (30× faster on 10⁶ sample ids)."""
    if not len(values):
        return np.unique(values, return_inverse=True)
    low, high = values.min(), values.max()
    if not _fits_table(int(high) - int(low) + 1, len(values)):
        return np.unique(values, return_inverse=True)
    shifted = values - low
    present = np.zeros(int(high) - int(low) + 1, dtype=bool)
    present[shifted] = True
    position = np.cumsum(present) - 1
    return (np.flatnonzero(present) + low).astype(values.dtype), position[shifted]


def _cached_weights(study: str, samples: np.ndarray, ctx: _Context) -> np.ndarray:
    """Wᵀ for ``samples`` with a first column of unit weights (the point estimates)."""
    cached = ctx.cache.get("weights")
    if cached is not None and cached[0] == study and np.array_equal(cached[1], samples):
        return cached[2]
    wt = weight_columns(study, samples, ctx.replicates, seed=ctx.seed)
    ctx.cache["weights"] = (study, samples, wt)
    return wt


# Linear statistics: W·D ------------------------------------------------------------------------


def _linear(
    part: dict,
    n_cells: int,
    n_samples: int,
    wt: np.ndarray,
    ctx: _Context,
) -> dict:
    """Per cell × (1 + B): every metric derived from sums linear in the weights."""
    statistics, pairs, mass_pairs = _statistics(part, n_cells, ctx)
    sums, nonzero = _sums(statistics, part, n_samples, wt)
    return _linear_metrics(statistics, pairs, mass_pairs, sums, nonzero, n_cells, ctx)


def _statistics(part: dict, n_cells: int, ctx: _Context) -> tuple[list, np.ndarray, np.ndarray]:
    """The linear statistics of a batch of cells' rows, as ``_sums`` takes them, and the
    non-empty (cell, bin) pairs of each binning (pair = cell·M + bin) they are kept for.

    A statistic's values are a function of the rows wanted (None: every row), products of
    the rows' columns taken when D is built: a D built a block of rows at a time then holds
    no value of the others (15 Float64 per row, 1.2 GB for a cell of 10⁷ rows)."""
    cell = part["cell"]
    m = ctx.bins
    width_key = cell * m + part["wbin"]
    pairs, pair = _unique(width_key)
    mass_key = cell * m + part["mbin"]
    mass_pairs, mass_pair = _unique(mass_key)

    def product(*names: str) -> Callable[[np.ndarray | None], np.ndarray]:
        # the named columns multiplied left to right ("wrong": 1 − z; none: ones)
        def value(rows: np.ndarray | None) -> np.ndarray:
            if not names:
                return np.ones(len(cell) if rows is None else len(rows))
            out = None
            for name in names:
                column = part["z" if name == "wrong" else name]
                taken = column if rows is None else column[rows]
                factor = 1.0 - taken if name == "wrong" else taken
                out = factor if out is None else out * factor
            return out

        return value

    width = [product(), product("c"), product("z"), product("c", "c"), product("c", "z")]
    width.append(product("nll_top"))
    statistics = [(pair, pairs // m, value) for value in width]
    mass = [product(), product("c"), product("z")]
    statistics += [(mass_pair, mass_pairs // m, value) for value in mass]
    cell_values = [
        product("z"),
        product("wrong"),
        product("z", "centred"),
        product("z", "centred", "centred"),
        product("wrong", "centred"),
        product("wrong", "centred", "centred"),
    ]
    if ctx.proba:
        cell_values += [product("brier"), product("nll"), product("has_proba")]
    statistics += [(cell, np.arange(n_cells), value) for value in cell_values]
    return statistics, pairs, mass_pairs


def _linear_metrics(
    statistics: list,
    pairs: np.ndarray,
    mass_pairs: np.ndarray,
    sums: np.ndarray,
    nonzero: np.ndarray,
    n_cells: int,
    ctx: _Context,
) -> dict:
    """``_linear``'s metrics from the statistics' weighted ``sums`` (columns × (1 + B)) and
    each column's samples with a non-zero entry."""
    m = ctx.bins
    columns = np.cumsum([0] + [len(owner) for _, owner, _ in statistics])
    stat = [sums[columns[i] : columns[i + 1]] for i in range(len(statistics))]
    width = [_per_bin(pairs, array, n_cells, m) for array in stat[:6]]
    out = bin_metrics(*width)
    mass = [_per_bin(mass_pairs, array, n_cells, m) for array in stat[6:9]]
    out |= bin_metrics(*mass, names=replicated("mass"))
    with np.errstate(invalid="ignore", divide="ignore"):  # an empty bin: NaN, undefined
        for binning, (n, _, correct, *_) in (("width", width), ("mass", mass)):
            if binning not in ctx.kept_bins:  # the bins' accuracy at unit weights alone
                n, correct = n[..., :1], correct[..., :1]
            out[f"bin:{binning}"] = np.moveaxis(correct / n, 0, 1).astype(np.float32)
    # the distinct test samples with a row in each bin (a sample's rows count once)
    for binning, keys, first in (("width", pairs, columns[0]), ("mass", mass_pairs, columns[6])):
        samples = np.zeros((n_cells, m), dtype=np.int64)
        samples[keys // m, keys % m] = nonzero[first : first + len(keys)]
        out[f"samples:{binning}"] = samples
    out |= moment_metrics(*stat[9:15])
    if ctx.proba:
        n = stat[9] + stat[10]
        complete = stat[17] == n
        for name, total in zip(PROBA_METRICS, stat[15:17], strict=True):
            out[name] = REGISTRY[name].kernel(total, n, complete)
    else:
        out["brier"] = out["nll"] = np.full(stat[9].shape, np.nan)
    return out


def _sums(
    statistics: list[tuple[np.ndarray, np.ndarray, Callable]],
    part: dict,
    n_samples: int,
    wt: np.ndarray | _GroupWeights,
) -> tuple[np.ndarray, np.ndarray]:
    """(columns × (1 + B)) weighted sums of the statistics and each column's samples with a
    non-zero entry. A statistic is (each row's column, each column's cell, its values of the
    rows given, ``_statistics``).

    D (samples × columns) holds the per-sample sums; the product Wᵀ·D is exact in every
    addition, so any BLAS kernel or thread count gives the same bits. With one W the product
    is one GEMM; with a block's groups it is one GEMM per group, over its samples and its
    cells' columns: the same bits as the one dense product, the grid being sized for the
    largest weight any hash gives (``WEIGHT_MAX``), not for a draw's."""
    sid = part["sid"]
    offsets = np.cumsum([0] + [len(owner) for _, owner, _ in statistics])
    if not isinstance(wt, _GroupWeights):
        d = _dense(statistics, offsets, None, sid, n_samples, offsets[-1])
        return exact_product(d.T, wt, WEIGHT_MAX), np.count_nonzero(d, axis=0)
    group_of_cell = np.zeros(len(statistics[-1][1]), dtype=np.int64)
    group_of_cell[part["cell"]] = part["group"]
    column_group = np.concatenate([group_of_cell[owner] for _, owner, _ in statistics])
    sums = np.empty((offsets[-1], wt.width))
    nonzero = np.empty(offsets[-1], dtype=np.int64)
    column_order = np.argsort(column_group, kind="stable")
    row_order = np.argsort(part["group"], kind="stable")
    groups = _distinct(part["group"])
    column_edges = np.searchsorted(column_group[column_order], np.append(groups, groups[-1] + 1))
    row_edges = np.searchsorted(part["group"][row_order], np.append(groups, groups[-1] + 1))
    position = np.empty(offsets[-1], dtype=np.int64)
    for i, g in enumerate(groups):
        columns = column_order[column_edges[i] : column_edges[i + 1]]
        rows = row_order[row_edges[i] : row_edges[i + 1]]
        position[columns] = np.arange(len(columns))
        d = _dense(statistics, offsets, rows, sid[rows], wt.size(g), len(columns), position)
        sums[columns] = exact_product(d.T, wt.columns(g), WEIGHT_MAX)
        nonzero[columns] = np.count_nonzero(d, axis=0)
    return sums, nonzero


def _dense(
    statistics: list,
    offsets: np.ndarray,
    rows: np.ndarray | None,
    sample: np.ndarray,
    size: int,
    width: int,
    position: np.ndarray | None = None,
) -> np.ndarray:
    """D (``size`` samples × ``width`` columns) of the statistics' ``rows`` (default: every
    row), ``sample`` giving each of those rows' row of D and ``position`` each statistic
    column's column of D (default: itself; a statistic's columns start at its ``offsets``).
    One bincount: an entry gathers its rows in their order, as a bincount per statistic
    would, so D has the same bits whichever rows and columns it is cut to."""
    keys = []
    for offset, (key, _, _) in zip(offsets, statistics, strict=False):
        column = offset + (key if rows is None else key[rows])
        keys.append(sample * width + (column if position is None else position[column]))
    values = [value(rows) for _, _, value in statistics]
    d = np.bincount(np.concatenate(keys), weights=np.concatenate(values), minlength=size * width)
    return d.astype(np.float64, copy=False).reshape(size, width)  # no rows: integer zeros


# A group of many samples, a block of samples at a time ------------------------------------------

#: A streamed batch of cells' rank counts (levels × 2 × (1 + B) each, Float64) at most: 256 MB,
#: held once per core. Each batch draws the group's weights again, so a group of 16 cells or
#: fewer draws them once.
STREAM_COUNTS = 2**25
#: Entries of a streamed block's W (samples × (1 + B)) and of its D (samples × columns) at most,
#: each 32 MB in Float64 (a block of 4 190 samples at B = 1000).
STREAM_BLOCK = 2**22


def _streamed(
    part: dict, n_cells: int, n_samples: int, drawn: _Drawn, ctx: _Context
) -> tuple[dict, dict]:
    """``_linear`` and ``_rank_replicates`` of a batch of cells of a group too large to hold
    its weights (``drawn``), with the same bits, a block of samples at a time.

    D and W are never whole: the exact product's grid comes from passes over D's blocks (each
    built from its rows, ``_dense``), then each block's W is drawn, its parts of D multiplied
    by it, and the weights of its rows added to their cell's counts of right and wrong rows
    per confidence level (H·W, row by row: ``add_rows``). The rank metrics run on those counts
    (``rank_metrics``: the counts ``weighted_rank_metrics`` sums, exact integers). The blocks
    take the samples in the order of their first row (by cell and confidence), so a block
    touches few bins' columns; they are shared out over the cores, each with its own sums,
    which add up exactly."""
    from relcol.analysis._compiled import add_rows, first_row_order  # numba: on first use only

    statistics, pairs, mass_pairs = _statistics(part, n_cells, ctx)
    offsets = np.cumsum([0] + [len(owner) for _, owner, _ in statistics])
    width, columns, sid = int(offsets[-1]), ctx.replicates + 1, part["sid"]
    # the samples in the order of the blocks (of their first row), each row's place in it and
    # the rows by place; only the samples with a row in these cells (the others add nothing,
    # and draw no weights) go into blocks
    order, row_place, n_samples = first_row_order(sid, n_samples)
    place_starts, by_place = rows_by_key(row_place, n_samples)
    span = max(1, STREAM_BLOCK // max(columns, width))
    starts = np.arange(0, n_samples, span)
    edges = place_starts[np.append(starts, n_samples)]  # each block's first row in by_place

    def block_d(i: int) -> np.ndarray:
        rows = by_place[edges[i] : edges[i + 1]]
        size = min(span, n_samples - starts[i])
        return _dense(statistics, offsets, rows, row_place[rows] - starts[i], size, width).T

    cell = part["cell"]
    bounds = np.searchsorted(cell, np.arange(n_cells + 1))
    levels = np.where(np.diff(bounds) > 0, part["grid"][np.maximum(bounds[1:] - 1, 0)] + 1, 0)
    level_start = np.concatenate([[0], np.cumsum(levels)])
    count_key = (level_start[cell] + part["grid"]) * 2 + (part["z"] != 0)

    def share(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        weights = np.empty((span, columns))  # reused: fresh memory per block costs page faults
        nonzero = np.zeros(width, dtype=np.int64)
        counts = np.zeros((2 * level_start[-1], columns))

        def counted_d(i: int) -> np.ndarray:
            d = block_d(i)
            np.add(nonzero, np.count_nonzero(d, axis=1), out=nonzero)
            return d

        def drawn_w(i: int) -> np.ndarray:
            lo, rows = starts[i], by_place[edges[i] : edges[i + 1]]
            w = weights[: min(span, n_samples - lo)]
            samples = drawn.samples[order[lo : lo + len(w)]]
            weight_columns(drawn.study, samples, ctx.replicates, seed=ctx.seed, out=w)
            add_rows(counts, count_key[rows], row_place[rows] - lo, w)
            return w

        try:
            left = (i for i in blocks if not stop.is_set())
            return blocked_product(grid, left, counted_d, drawn_w, columns), nonzero, counts
        except BaseException:
            stop.set()
            raise

    # A share is a core's part of the samples: when one fails or Ctrl-C ends the wait, the
    # others stop at their next block, and no pass waits for blocks not yet begun.
    stop = threading.Event()
    shares = np.array_split(np.arange(len(starts)), max(1, min(_threads(), len(starts))))
    with ThreadPoolExecutor(len(shares)) as pool, threadpool_limits(1, user_api="blas"):
        try:
            grid = product_grid(width, range(len(starts)), block_d, WEIGHT_MAX, pool.map)
            done = list(pool.map(share, shares))
        except BaseException:
            stop.set()
            pool.shutdown(cancel_futures=True)
            raise
    sums = parts_total(sum(d[0] for d in done), grid)
    nonzero = sum(d[1] for d in done)
    counts = sum(d[2] for d in done)
    linear = _linear_metrics(statistics, pairs, mass_pairs, sums, nonzero, n_cells, ctx)
    rank = {name: np.full((n_cells, columns), np.nan) for name in RANK_METRICS}
    for c in np.flatnonzero(levels):
        cell_counts = counts[2 * level_start[c] : 2 * level_start[c + 1]].reshape(-1, 2, columns)
        metrics = rank_metrics(cell_counts[:, 1], cell_counts[:, 0], ctx.coverage, ctx.risk)
        for name in RANK_METRICS:
            rank[name][c] = metrics[name]
    return linear, rank


def _per_bin(pairs: np.ndarray, sums: np.ndarray, n_cells: int, bins: int) -> np.ndarray:
    """(bins × cells × replicates) array of a statistic from its rows of non-empty pairs
    (pair = cell·M + bin); zero in bins a cell does not have."""
    full = np.zeros((bins, n_cells, sums.shape[1]))
    full[pairs % bins, pairs // bins] = sums
    return full


# Rank metrics: counts per confidence level ----------------------------------------------------


def _rank_replicates(
    part: dict, n_cells: int, n_samples: int, wt: np.ndarray | _GroupWeights, ctx: _Context
) -> dict[str, np.ndarray]:
    """Per cell × (1 + B): the rank metrics on the grouped levels, each cell's rows weighted
    by W's columns in one compiled loop; with a ``_GroupWeights``, each run of consecutive
    cells of one group by that group's columns."""
    out = {name: np.full((n_cells, ctx.replicates + 1), np.nan) for name in RANK_METRICS}
    rows = len(part["cell"])
    if not rows:  # no rows: every rank metric undefined
        return out
    bounds = np.searchsorted(part["cell"], np.arange(n_cells + 1))
    edges, groups = np.array([0, n_cells]), [None]
    if isinstance(wt, _GroupWeights):
        # each cell's group from its first row (a cell without rows reads no weights)
        group = part["group"][np.minimum(bounds[:-1], rows - 1)]
        edges = np.r_[np.flatnonzero(np.r_[True, group[1:] != group[:-1]]), n_cells]
        groups = group[edges[:-1]]
    for c0, c1, g in zip(edges[:-1], edges[1:], groups, strict=True):
        lo, hi = bounds[c0], bounds[c1]
        metrics = weighted_rank_metrics(
            part["grid"][lo:hi],
            part["z"][lo:hi],
            part["sid"][lo:hi],
            wt if g is None else wt.columns(g),
            bounds[c0 : c1 + 1] - lo,
            ctx.coverage,
            ctx.risk,
        )
        for name in RANK_METRICS:
            out[name][c0:c1] = metrics[name]
    return out


def _threads() -> int:
    """Threads for the batches: the cores this process may run on, at most 8."""
    return max(1, min(8, available_cores()))


def _exact_rank(block: dict, n_cells: int, ctx: _Context) -> dict[str, np.ndarray]:
    """Per cell: the rank metrics on its exact confidence levels, unit weights."""
    return _level_metrics(block["cell"], block["level"], block["z"], n_cells, ctx)


def _level_metrics(
    group: np.ndarray, level: np.ndarray, z: np.ndarray, n_groups: int, ctx: _Context
) -> dict[str, np.ndarray]:
    """Per group (rows sorted by group): the rank metrics on the exact levels, unit weights."""
    out = {name: np.full(n_groups, np.nan) for name in RANK_METRICS}
    if not n_groups:
        return out
    sizes = np.zeros(n_groups, dtype=np.int64)
    np.maximum.at(sizes, group, level + 1)
    bounds = np.searchsorted(group, np.arange(n_groups + 1))
    g0 = 0
    while g0 < n_groups:
        g1, width = g0 + 1, sizes[g0]
        while g1 < n_groups and max(width, sizes[g1]) * (g1 + 1 - g0) * 2 <= BATCH_ENTRIES:
            width = max(width, sizes[g1])
            g1 += 1
        lo, hi = bounds[g0], bounds[g1]
        index = (level[lo:hi] * (g1 - g0) + group[lo:hi] - g0) * 2 + z[lo:hi].astype(np.int64)
        flat = np.bincount(index, minlength=width * (g1 - g0) * 2).astype(np.float64)
        flat = flat.reshape(width, g1 - g0, 2)
        metrics = rank_metrics(flat[:, :, 1], flat[:, :, 0], ctx.coverage, ctx.risk)
        for name in RANK_METRICS:
            out[name][g0:g1] = metrics[name]
        g0 = g1
    return out


# Per-seed values ---------------------------------------------------------------------------------


#: The sums of a cell's rows per seed that ``_seed_values`` takes (name: the column summed):
#: the right rows and the centred confidence's moments over the right and the wrong rows (the
#: wrong rows are the others). Five terms, and three with the probability vectors, as the
#: metric suite's bins and scores have: the compiled pass is compiled once per number of terms.
SEED_SUMS = {"n1": "z", "s1": "s1", "q1": "q1", "s0": "s0", "q0": "q0"}
PROBA_SEED_SUMS = {"sum_brier": "brier", "sum_nll": "nll", "n_proba": "has_proba"}


def _seed_values(rows: pl.DataFrame, ctx: _Context) -> pl.DataFrame:
    """Per cell × seed: ``n`` and the metrics of ``SEED_METRICS`` on that seed's rows.

    Each (cell, seed) of the rows is numbered (its ``pair``), and the sums per pair and
    equal-width bin and per pair are taken by ``exact_sums_by``: one compiled pass over the
    rows for each, with the bits of ``exact_sum``. On the 3.0 M rows of the built-in study's
    shape those sums took 0.21–0.23 s of CPU against 0.73–0.81 s for Polars' group-bys of
    them (each term split into two Int128 integers, ``exact_sum``), and the whole of this
    0.44–0.47 s against 0.94–1.01 s."""
    seed, cell = rows["seed"].to_numpy(), rows["cell"].to_numpy().astype(np.int64)
    seeds = np.sort(rows["seed"].unique().to_numpy())
    low = int(cell.min()) if len(cell) else 0
    m, z, centred = ctx.bins, pl.col("z"), pl.col("centred")
    pair = (cell - low) * len(seeds) + np.searchsorted(seeds, seed)
    frame = rows.lazy().with_columns(pair=pl.Series(pair))
    # one after the other, each query with the columns of its own sums: they run beside the
    # products, which keep the cores busy
    by_bin = frame.select("c", "z", key=pl.col("pair") * m + pl.col("wbin"), **bin_terms())
    per_bin = exact_sums_by(by_bin, "key", BIN_SUMS).collect()
    centred_terms = {"s1": z * centred, "q1": z * centred * centred}
    centred_terms |= {"s0": (1 - z) * centred, "q0": (1 - z) * centred * centred}
    by_pair = frame.select("pair", "z", **centred_terms)
    per_pair = exact_sums_by(by_pair, "pair", SEED_SUMS).sort("pair").collect()
    per_pair = per_pair.with_columns(n0=pl.col("n") - pl.col("n1"))  # counts: exact
    if ctx.proba:
        scores = frame.select("pair", *PROBA_SEED_SUMS.values())
        per_pair = per_pair.hstack(
            exact_sums_by(scores, "pair", PROBA_SEED_SUMS).sort("pair").drop("pair", "n").collect()
        )

    def keyed(frame: pl.DataFrame, pair: np.ndarray) -> pl.DataFrame:
        # the pair's cell and seed in front
        return frame.select(
            cell=pl.Series(pair // max(len(seeds), 1) + low, dtype=rows.schema["cell"]),
            seed=pl.Series(seeds[pair % max(len(seeds), 1)], dtype=pl.Int64),
        ).hstack(frame)

    key = per_bin["key"].to_numpy()
    width = (
        keyed(per_bin.drop("key"), key // m)
        .with_columns(wbin=pl.Series(key % m, dtype=pl.Int32))
        .group_by("cell", "seed")
        .agg(width_metrics())
    )
    cell_seed = keyed(per_pair.drop("pair"), per_pair["pair"].to_numpy())
    moments = moment_metrics(
        *(
            cell_seed[name].to_numpy().astype(np.float64)
            for name in ("n1", "n0", "s1", "q1", "s0", "q0")
        )
    )
    table = cell_seed.select("cell", "seed", pl.col("n").cast(pl.Int64)).with_columns(
        **{name: pl.Series(values) for name, values in moments.items()}
    )
    if ctx.proba:
        complete = pl.col("n_proba") == pl.col("n")
        table = table.with_columns(
            cell_seed.select(
                brier=pl.when(complete).then(pl.col("sum_brier") / pl.col("n")),
                nll=pl.when(complete).then(pl.col("sum_nll") / pl.col("n")),
            )
        )
    else:
        table = table.with_columns(brier=pl.lit(None, pl.Float64), nll=pl.lit(None, pl.Float64))
    rank = _seed_rank(rows, cell_seed.select("cell", "seed"), ctx)
    return (
        table.with_columns(**{name: pl.Series(values) for name, values in rank.items()})
        .join(width, on=["cell", "seed"], how="left", maintain_order="left")
        .select("cell", "seed", "n", *SEED_METRICS)
    )


def _seed_rank(rows: pl.DataFrame, groups: pl.DataFrame, ctx: _Context) -> dict[str, np.ndarray]:
    """The rank metrics of each (cell, seed) of ``groups`` (in its order), exact levels.

    A seed's rows hold a share of its cell's confidence levels: the levels are renumbered
    within each (cell, seed), so no array is padded to the whole cell's levels."""
    index = groups.with_row_index("group")
    joined = (
        rows.select("cell", "seed", "level", "z")
        .join(index, on=["cell", "seed"], how="left", maintain_order="left")
        .sort("group", maintain_order=True)  # stable: levels stay in order within a group
    )
    group = joined["group"].to_numpy().astype(np.int64)
    level = joined["level"].to_numpy()
    fresh = np.ones(len(group), dtype=bool)
    fresh[1:] = (group[1:] != group[:-1]) | (level[1:] != level[:-1])
    compact = np.cumsum(fresh) - 1
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(group) else group
    compact -= np.repeat(compact[starts], np.diff(np.append(starts, len(group))))
    return _level_metrics(group, compact, joined["z"].to_numpy(), index.height, ctx)


def _empty_seeds() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"cell": pl.UInt32, "seed": pl.Int64, "n": pl.Int64}
        | {name: pl.Float64 for name in SEED_METRICS}
    )


# Intervals, spread, differences -------------------------------------------------------------


#: Entries (rows × B) of replicates that row-wise steps take at a time: 2 MB, so that each
#: step of an interval or a test reads them from the cache, not memory.
ROW_BLOCK_ENTRIES = 2**18


def row_blocks(rows: int, width: int) -> Iterator[slice]:
    """Consecutive slices of ``rows`` rows of ``width`` entries, each of at most
    ``ROW_BLOCK_ENTRIES`` entries (one row at least)."""
    step = max(1, ROW_BLOCK_ENTRIES // max(width, 1))
    return (slice(start, start + step) for start in range(0, rows, step))


def percentile_interval(values: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise percentile interval [Q_{α/2}, Q_{1−α/2}] of (groups × B) replicates.

    Quantiles are numpy's linear ones (Hyndman–Fan type 7) over the replicates that are
    defined (not NaN); a row with fewer than half of them defined gets NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.analysis import percentile_interval
    >>> lo, hi = percentile_interval(np.arange(101.0)[None, :], alpha=0.1)
    >>> float(lo[0]), float(hi[0])
    (5.0, 95.0)
    """
    alpha = _check_alpha(alpha)
    values = np.asarray(values)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    lo = np.full(values.shape[0], np.nan)
    hi = np.full(values.shape[0], np.nan)
    if values.size == 0:
        return lo, hi
    for rows in row_blocks(*values.shape):
        _interval_rows(values[rows], alpha, lo[rows], hi[rows])
    return lo, hi


def _interval_rows(values: np.ndarray, alpha: float, lo: np.ndarray, hi: np.ndarray) -> None:
    """``percentile_interval`` of a block of rows (Float32 or Float64), into ``lo`` and
    ``hi`` (NaN as given)."""
    defined = np.isfinite(values)
    if defined.all():
        lo[:], hi[:] = _quantile_pair(values.copy(), alpha)
        return
    enough = defined.sum(1) * 2 >= values.shape[1]
    complete = enough & defined.all(1)
    if complete.any():
        lo[complete], hi[complete] = _quantile_pair(values[complete], alpha)
    partial = enough & ~complete
    if partial.any():
        rows = np.where(defined[partial], values[partial].astype(np.float64), np.nan)
        q = np.nanquantile(rows, [alpha / 2, 1 - alpha / 2], axis=1)
        lo[partial], hi[partial] = q[0], q[1]


def _quantile_pair(values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """np.quantile(values, [α/2, 1 − α/2], axis=1) (linear) of finite rows, which it sorts
    in place: the four order statistics the quantiles interpolate between are those of any
    selection, and numpy's vectorised sort of a row of 1001 replicates took 2.2 µs where its
    partition at those four took 10.7 (1.2 µs in Float32, whose order statistics are then
    widened to Float64 exactly, as numpy's quantile of the widened row would read them)."""
    count = values.shape[1]
    positions = [(count - 1) * alpha / 2, (count - 1) * (1 - alpha / 2)]
    values.sort(axis=1)
    out = []
    for h in positions:
        below = int(np.floor(h))
        above = min(below + 1, count - 1)
        a, b = values[:, below].astype(np.float64), values[:, above].astype(np.float64)
        out.append(quantile_lerp(a, b, h - below))
    return out[0], out[1]


def quantile_lerp(a: np.ndarray, b: np.ndarray, fraction: float | np.ndarray) -> np.ndarray:
    """numpy's linear quantile between the order statistics ``a`` and ``b`` at ``fraction``
    (0 ≤ f ≤ 1; a scalar, or one per entry), term for term: from the nearer order statistic,
    a + (b − a)·f below ½ and b − (b − a)·(1 − f) from ½ on, so the bits are numpy's."""
    diff = b - a
    return np.where(np.asarray(fraction) >= 0.5, b - diff * (1 - fraction), a + diff * fraction)


def _check_alpha(alpha: object) -> float:
    return check_interval("alpha", alpha, "(0, 1)")


def intervals(
    replicates: Replicates, alpha: float = ALPHA, metrics: Iterable[str] | None = None
) -> pl.DataFrame:
    """Cell keys, then ``<metric>_lo`` and ``<metric>_hi`` (``metric_interval``) for each
    metric of ``INTERVAL_METRICS`` (those of ``metrics`` among them, if given)."""
    names = [m for m in (metrics or INTERVAL_METRICS) if m in INTERVAL_METRICS]
    columns = {}
    # the metrics side by side on threads, as the differences' tests: the sorts release the GIL
    with ThreadPoolExecutor(_threads()) as pool:
        done = pool.map(lambda name: metric_interval(replicates, name, alpha), names)
        for name, (lo, hi) in zip(names, done, strict=True):
            columns[f"{name}_lo"] = lo
            columns[f"{name}_hi"] = hi
    return replicates.cells.with_columns(
        pl.Series(name, values).fill_nan(None) for name, values in columns.items()
    )


def metric_interval(
    replicates: Replicates,
    metric: str,
    alpha: float = ALPHA,
) -> tuple[np.ndarray, np.ndarray]:
    """The printed interval of ``metric`` for every cell (NaN where it has none).

    - ``abs_gap``: the image of Δ's percentile interval under |·| ([0, max |end|] when it
      holds 0): |Δ| lies in it whenever Δ lies in Δ's interval, also at Δ = 0, where the
      percentile interval of |Δ| itself never reaches 0.
    - every other metric: the percentile interval of its replicates.
    """
    values = replicates.values
    if metric == "abs_gap":
        lo, hi = percentile_interval(values["gap"], alpha)
        inside = (lo <= 0) & (hi >= 0)
        low = np.where(inside, 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        return low, np.maximum(np.abs(lo), np.abs(hi))
    return percentile_interval(values[metric], alpha)


def bin_intervals(replicates: Replicates, alpha: float = ALPHA) -> pl.DataFrame:
    """Per cell × binning × bin: ``samples`` (the distinct test samples with a row in the
    bin) and ``accuracy_lo``/``accuracy_hi``, the Wilson score interval of the bin's accuracy
    on its samples (each sample counted once, whatever its seeds and repeats); null for a
    bin with fewer than ``MIN_BIN_SAMPLES`` samples. The bootstrap's percentile interval of
    a bin's accuracy undercovers (README, "Coverage, verified"). Join on the cell keys,
    ``binning`` and ``bin`` to ``calibration_bins``."""
    frames = []
    for binning, counts in replicates.bin_samples.items():
        bins = counts.shape[1]
        samples = counts.reshape(-1)
        accuracy = replicates.bin_accuracy[binning].reshape(-1)
        lo, hi = proportion_interval(accuracy, samples, alpha)
        enough = samples >= MIN_BIN_SAMPLES
        frames.append(
            replicates.cells.join(
                pl.DataFrame({"bin": np.arange(bins, dtype=np.int64)}), how="cross"
            ).with_columns(
                binning=pl.lit(binning),
                samples=pl.Series(samples, dtype=pl.Int64),
                accuracy_lo=pl.Series(np.where(enough, lo, np.nan)).fill_nan(None),
                accuracy_hi=pl.Series(np.where(enough, hi, np.nan)).fill_nan(None),
            )
        )
    columns = ["binning", "bin", "samples", "accuracy_lo", "accuracy_hi"]
    if not frames:
        return replicates.cells.clear().with_columns(
            binning=pl.lit(None, pl.String),
            bin=pl.lit(None, pl.Int64),
            samples=pl.lit(None, pl.Int64),
            accuracy_lo=pl.lit(None, pl.Float64),
            accuracy_hi=pl.lit(None, pl.Float64),
        )
    keys = list(replicates.keys)
    return pl.concat(frames).select(*keys, *columns)


def proportion_interval(
    accuracy: np.ndarray, samples: np.ndarray, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a proportion ``accuracy`` from ``samples`` draws, each
    element; NaN where ``samples`` is 0 or the proportion undefined.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = proportion_interval(np.array([0.8]), np.array([10]))
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.4902, 0.9433)
    """
    p = np.asarray(accuracy, dtype=np.float64)
    n = np.asarray(samples, dtype=np.float64)
    z = float(special.ndtri(1 - alpha / 2))  # the normal quantile, as stats.norm.ppf
    with np.errstate(invalid="ignore", divide="ignore"):
        z2n = z * z / n
        centre = (p + z2n / 2) / (1 + z2n)
        half = z / (1 + z2n) * np.sqrt(p * (1 - p) / n + z2n / (4 * n))
        lo = np.clip(np.minimum(centre - half, p), 0.0, 1.0)
        hi = np.clip(np.maximum(centre + half, p), 0.0, 1.0)
    undefined = (n <= 0) | ~np.isfinite(p)
    return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)


def seed_spread(replicates: Replicates, metrics: Iterable[str] | None = None) -> pl.DataFrame:
    """Cell keys, then ``<metric>_sd`` (ddof 1; null with one seed), ``<metric>_min``,
    ``<metric>_max`` of the per-seed values, and ``seeds`` (how many)."""
    names = [
        m for m in (SEED_METRICS if metrics is None else metrics) if m in replicates.seeds.columns
    ]
    keys = list(replicates.keys)
    aggs = [pl.len().cast(pl.Int32).alias("seeds")]
    for name in names:
        value = pl.col(name).fill_nan(None)
        aggs += [
            exact_var(value, 1).sqrt().alias(f"{name}_sd"),
            value.min().alias(f"{name}_min"),
            value.max().alias(f"{name}_max"),
        ]
    spread = replicates.seeds.group_by(keys).agg(aggs)
    return replicates.cells.join(
        spread, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )


def with_intervals(
    table: pl.DataFrame,
    replicates: Replicates,
    alpha: float = ALPHA,
    metrics: Iterable[str] | None = None,
    spread: Iterable[str] | None = None,
) -> pl.DataFrame:
    """``table`` (one row per cell) with ``_lo``/``_hi`` beside each of ``metrics`` it has
    that ``INTERVAL_METRICS`` lists (the others stay descriptive numbers) and the per-seed
    ``_sd``/``_min``/``_max`` columns after those of ``spread`` (default: the same
    metrics)."""
    keys = list(replicates.keys)
    wanted = [m for m in (metrics or table.columns) if m in table.columns]
    base = [m for m in wanted if m in INTERVAL_METRICS]
    bounds = intervals(replicates, alpha, base)
    out = table.join(bounds, on=keys, how="left", nulls_equal=True, maintain_order="left")
    spread_names = [
        m
        for m in (wanted if spread is None else spread)
        if m in SEED_METRICS and m in table.columns
    ]
    if spread_names:
        spread = seed_spread(replicates, spread_names)
        spread = spread.drop("seeds") if "seeds" in out.columns else spread
        out = out.join(spread, on=keys, how="left", nulls_equal=True, maintain_order="left")
    order = []
    for name in table.columns:
        order.append(name)
        if name in base:
            order += [f"{name}_lo", f"{name}_hi"]
        if name in spread_names:
            order += [f"{name}_sd", f"{name}_min", f"{name}_max"]
    order += [c for c in out.columns if c not in order]
    return out.select(order)


#: Columns of ``paired_differences``.
DIFFERENCE_COLUMNS = (
    *CELL,
    "contrast",
    "reference_model",
    "reference_severity",
    "reference_rule",
    "metric",
    "value",
    "reference_value",
    "difference",
    "difference_lo",
    "difference_hi",
    "p_value",
    "q_value",
)
#: The ``reference_rule`` of each way a reference is chosen.
REFERENCE_RULES = {
    "clean": "severity 0",
    "baseline": "baseline",
    "first": "first model",
    "chosen": "compare",
    "all": "all pairs",
}


def model_references(
    models: Iterable[str], compare: str | Sequence[str] | None = None, baseline: str | None = None
) -> tuple[tuple[str, ...] | None, str]:
    """The reference models of the model contrast and its ``reference_rule``.

    ``compare`` None: the study's ``baseline`` (the model its spec names or lists first), or
    without one the first of ``models``; ``"all"``: every model (returned as None: all
    ordered pairs); else the models named, as a comma-separated string or a sequence.

    Examples
    --------
    >>> model_references(["b", "a"])
    (('b',), 'first model')
    >>> model_references(["a", "b", "c"], "c,a")
    (('c', 'a'), 'compare')
    """
    models = list(dict.fromkeys(models))
    if compare is None:
        if baseline is not None:
            _check_models("the study's baseline", [baseline], models)
            return (baseline,), REFERENCE_RULES["baseline"]
        return tuple(models[:1]), REFERENCE_RULES["first"]
    if isinstance(compare, str):
        if compare.strip() == "all":
            return None, REFERENCE_RULES["all"]
        compare = [name.strip() for name in compare.split(",")]
    chosen = tuple(dict.fromkeys(compare))
    if not chosen or any(not name for name in chosen):
        raise ParameterError(
            f"compare must be 'all' or model names separated by commas. Got {compare!r}."
        )
    _check_models("compare", chosen, models)
    return chosen, REFERENCE_RULES["chosen"]


def _check_models(what: str, names: Iterable[str], models: Sequence[str]) -> None:
    unknown = [name for name in names if name not in models]
    if unknown:
        raise ParameterError(
            f"{what} names {unknown[0]!r}, which is not a model of the study; its models: "
            f"{', '.join(models)}."
        )


def paired_differences(
    replicates: Replicates,
    points: pl.DataFrame,
    alpha: float = ALPHA,
    metrics: Iterable[str] | None = None,
    *,
    compare: str | Sequence[str] | None = None,
    baseline: str | None = None,
) -> pl.DataFrame:
    """Paired bootstrap intervals of differences between cells on the same samples.

    Two contrasts, one row per cell × contrast × reference × metric:

    - ``"clean"``: the cell minus the same (study, dataset, model, corruption, label) at
      severity 0 (cells at severity 0 are left out);
    - ``"model"``: the cell minus a reference model's cell at the same (study, dataset,
      corruption, severity, label). The references (``model_references``): by default
      ``baseline`` (``relcol report`` passes the study's: the model its spec names, else the
      first it lists), else the first model in alphabetical order, so the table grows
      linearly with the models; ``compare`` names others, or ``"all"`` for every ordered pair. A pair of two
      references appears both ways (the interval of B − A is that of A − B negated, up to
      rounding). ``reference_rule`` says how the reference was chosen.

    ``difference`` is the difference of the point estimates in ``points`` (one row per
    cell, the metric columns; ``ece_excess`` from ``ece_null``), ``difference_lo`` /
    ``difference_hi`` the percentile interval of the replicate differences, each
    replicate giving a sample the same weight in both cells: paired on the samples the two
    cells share, unpaired (independent weights) for cells on disjoint samples. ``p_value``
    is the two-sided bootstrap p-value of no difference and ``q_value`` its
    Benjamini–Hochberg adjustment within the family of one study × contrast × metric (a
    model pair counted once, not both ways): calling the rows with q ≤ α different keeps
    the expected share of false calls at α. A metric that prints no interval of its own
    (``NO_INTERVAL``) gets neither an interval nor a test here: the difference of two binned
    estimates carries both their biases (``difference_coverage_study`` measures it).
    """
    keys = list(replicates.keys)
    cells = replicates.cells.with_row_index("index")
    study_models = sorted(cells["model"].drop_nulls().unique())
    references, rule = model_references(study_models, compare, baseline)
    joined = cells.join(points, on=keys, how="left", nulls_equal=True, maintain_order="left")
    available = dict(replicates.values)
    if "ece" in available and "ece_null" in joined.columns:
        null = joined["ece_null"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        available["ece_excess"] = available["ece"] - null[:, None]
    names = [m for m in (metrics or available) if m in available and m in joined.columns]
    curve = [k for k in keys if k != "severity"]
    clean = (
        joined.filter(pl.col("severity") == 0.0)
        .select(*curve, reference_index="index")
        .join(
            joined.filter(pl.col("severity") != 0.0).select(*curve, "index", "severity"),
            on=curve,
            how="inner",
            nulls_equal=True,
        )
        .select("index", "reference_index", forward=pl.lit(True), backward=pl.lit(False))
    )
    place = [k for k in keys if k != "model"]
    models = joined.select(*place, "model", "index")
    if references is None:
        models = models.with_columns(reference=pl.lit(True))
    else:
        models = models.with_columns(reference=pl.col("model").is_in(references))
    # each unordered pair once (its first cell with the smaller index), kept when one side
    # is a reference; forward: the first minus the second, backward: the second minus the first
    pairs = (
        models.filter("reference")
        .join(models, on=place, how="inner", nulls_equal=True, suffix="_other")
        .filter(pl.col("index") != pl.col("index_other"))
        .select(
            index=pl.min_horizontal("index", "index_other"),
            reference_index=pl.max_horizontal("index", "index_other"),
        )
        .unique(maintain_order=True)
        .join(models.select("index", backward="reference"), on="index")
        .join(models.select(reference_index="index", forward="reference"), on="reference_index")
        .sort("index", "reference_index")
    )
    if (clean.height + pairs.height) == 0 or not names:
        return _empty_differences()
    frames = []
    for contrast, label, reference_rule in (
        (clean, "clean", REFERENCE_RULES["clean"]),
        (pairs, "model", rule),
    ):
        if contrast.is_empty():
            continue
        index = contrast["index"].to_numpy().astype(np.int64)
        reference = contrast["reference_index"].to_numpy().astype(np.int64)
        forward = contrast["forward"].to_numpy()
        backward = contrast["backward"].to_numpy()
        study = joined["study"].to_numpy()[index]
        # a metric without an interval gets no test either
        tested = [name for name in names if name not in NO_INTERVAL]
        tests = _difference_tests(available, tested, index, reference, study, alpha)
        untested = (np.full(len(index), np.nan),) * 4
        for name in names:
            lo, hi, p, q = tests.get(name, untested)
            point = joined[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
            # B − A: the quantiles of the negated replicates
            for keep, i, r, low, high in (
                (forward, index, reference, lo, hi),
                (backward, reference, index, -hi, -lo),
            ):
                if not keep.any():
                    continue
                i, r = i[keep], r[keep]
                frames.append(
                    pl.DataFrame(
                        {
                            "_i": i,
                            "_r": r,
                            "contrast": label,
                            "reference_rule": reference_rule,
                            "metric": name,
                            "value": point[i],
                            "reference_value": point[r],
                            "difference": point[i] - point[r],
                            "difference_lo": low[keep],
                            "difference_hi": high[keep],
                            "p_value": p[keep],
                            "q_value": q[keep],
                        }
                    )
                )
    table = pl.concat(frames).with_columns(pl.col(pl.Float64).fill_nan(None))
    info = cells.select("index", *keys)
    ref = cells.select(
        pl.col("index").alias("_r"),
        pl.col("model").alias("reference_model"),
        pl.col("severity").alias("reference_severity"),
    )
    return (
        table.join(info, left_on="_i", right_on="index", how="left")
        .join(ref, on="_r", how="left")
        .sort("_i", "contrast", "_r", "metric", maintain_order=True)
        .select(DIFFERENCE_COLUMNS)
    )


def _difference_tests(
    available: Mapping[str, np.ndarray],
    names: Sequence[str],
    index: np.ndarray,
    reference: np.ndarray,
    study: np.ndarray,
    alpha: float,
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per metric of ``names``: the percentile interval (lo, hi), p-value and q-value (within
    each study) of the replicate differences values[index] − values[reference]. The metrics
    run side by side on threads: numpy's selection and comparisons release the GIL, and each
    metric's numbers depend on its own replicates only."""

    families = [study == one for one in np.unique(study)]  # once: the studies are strings

    def test(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        values = available[name]
        lo, hi, p = (np.empty(len(index)) for _ in range(3))
        for rows in row_blocks(len(index), values.shape[1]):
            replicate = values[index[rows]] - values[reference[rows]]
            lo[rows], hi[rows] = percentile_interval(replicate, alpha)
            p[rows] = bootstrap_p_values(replicate)
        q = np.full(len(p), np.nan)
        for family in families:
            q[family] = benjamini_hochberg(p[family])
        return lo, hi, p, q

    with ThreadPoolExecutor(_threads()) as pool:
        return dict(zip(names, pool.map(test, names), strict=True))


def _empty_differences() -> pl.DataFrame:
    schema = {
        "study": pl.String,
        "dataset": pl.String,
        "model": pl.String,
        "corruption": pl.String,
        "severity": pl.Float64,
        "label": pl.Int32,
        "contrast": pl.String,
        "reference_model": pl.String,
        "reference_severity": pl.Float64,
        "reference_rule": pl.String,
        "metric": pl.String,
    }
    schema |= {name: pl.Float64 for name in DIFFERENCE_COLUMNS[11:]}
    return pl.DataFrame(schema=schema)
