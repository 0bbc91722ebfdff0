"""Metrics that need the class-probability vector p (docs/metrics.md).

- ``classwise_ece``: the mean over classes k of the equal-width ECE of pᵢₖ against
  1[yᵢ = k] (each class's ECE over the rows whose vector has a k-th entry: all of them
  when every vector has K entries).
- ``brier`` = (1/n) Σᵢ Σₖ (pᵢₖ − 1[yᵢ = k])², range [0, 2] (not ``brier_top``).
- ``nll`` = −(1/n) Σᵢ log max(pᵢ,yᵢ, 1e−15).
- ``proba_entropy`` −Σₖ pₖ log pₖ (nats, 0·log 0 = 0) and ``proba_margin`` p₍₁₎ − p₍₂₎
  (p₍₂₎ = 0 for a single class): alternative confidence scores for the discrimination and
  selective-prediction tables (``score="entropy"`` ranks by −entropy).

``brier`` and ``nll`` are sums of per-row terms, Σₖ pₖ² − 2p_y + 1 and −log max(p_y, 1e−15)
(list operations, no explosion); the classwise ECE needs every entry (row i, class k) in
its bin, so the fast path sums per cell × class × bin (``class_statistics``), in one
compiled pass over the long table's Float32 entries, or by exploding other vectors. A cell
with a row whose vector is null or empty gets null for all three metrics, not an error; p is
Float32 in the long table and is widened to Float64 before any arithmetic. A label outside
the vector (y < 0 or y ≥ K, which ingest refuses) counts as a true class of probability 0.
The SQL twin is ``sql/macros/calibration.sql`` (with ``proba_entropy.sql`` and
``proba_margin.sql``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

from relcol._cluster import available_cores
from relcol.checks import check_bins
from relcol.metrics._bins import _bin_index, _bin_index_of_float32
from relcol.metrics._calibration import ece_from_bins
from relcol.metrics._exact import exact_mean, exact_sum, exact_sums_by, words_total
from relcol.metrics._frames import CELL_ID
from relcol.metrics._runs import once
from relcol.metrics._scores import EPS

# Alternative confidence scores -----------------------------------------------------------------


def proba_entropy(proba: str = "proba") -> pl.Expr:
    """Entropy −Σₖ pₖ log pₖ of each row's probability vector, in nats (null if no vector).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import proba_entropy
    >>> rows = pl.DataFrame({"proba": [[0.5, 0.5], [1.0, 0.0], None]})
    >>> [None if v is None else round(v, 6) for v in rows.select(proba_entropy()).to_series()]
    [0.693147, 0.0, None]
    """
    p = pl.element().cast(pl.Float64)
    plogp = pl.when(p > 0).then(p * p.log()).otherwise(0.0)
    vector = pl.col(proba)
    entropy = vector.list.eval(plogp).list.sum().abs()  # every term ≤ 0; abs: never −0.0
    return pl.when(vector.list.len() > 0).then(entropy).alias("proba_entropy")


def proba_margin(proba: str = "proba") -> pl.Expr:
    """Margin p₍₁₎ − p₍₂₎ between the two largest probabilities (null if no vector).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import proba_margin
    >>> rows = pl.DataFrame({"proba": [[0.25, 0.5, 0.25], [1.0], None]})
    >>> rows.select(proba_margin()).to_series().to_list()
    [0.25, 1.0, None]
    """
    ordered = pl.col(proba).list.eval(pl.element().cast(pl.Float64)).list.sort(descending=True)
    second = ordered.list.get(1, null_on_oob=True).fill_null(0.0)
    return (ordered.list.get(0, null_on_oob=True) - second).alias("proba_margin")


# Row-level builders ------------------------------------------------------------------------------


def classwise_ece(proba: str = "proba", y_true: str = "y_true", *, bins: int = 15) -> pl.Expr:
    """Classwise ECE: mean over classes k of the ECE of pₖ against 1[y = k], ``classwise_ece``.

    Each class's ECE uses the equal-width bins of pₖ (bin convention: ``bin_index``). Null
    when a row of the group has no probability vector.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import classwise_ece
    >>> rows = pl.DataFrame({"proba": [[0.75, 0.25], [0.25, 0.75]], "y_true": [0, 0]})
    >>> rows.select(classwise_ece(bins=2)).item()  # class 0: (.25 + .75)/2; class 1 the same
    0.5
    """
    bins = check_bins(bins)
    p, target, k = _entries(proba, y_true)

    def keyed(entries: pl.Expr) -> pl.Expr:
        """Each entry's key (class, bin), k·M + the bin of p, its class and 1[y = k] − p."""
        p, k = entries.struct.field("p"), entries.struct.field("k")
        error = entries.struct.field("target") - p
        return pl.struct(key=k * bins + _bin_index(p, bins), k=k, error=error)

    def mean_over_classes(entries: pl.Expr) -> pl.Expr:
        """The mean over classes k of Σ over k's bins |Σ (1[y = k] − p)| / (k's entries)."""
        key, k = entries.struct.field("key"), entries.struct.field("k")
        bin_error = entries.struct.field("error").sum().over(key).abs()
        per_bin = (bin_error / pl.len().over(k)).filter(key.is_first_distinct())
        return per_bin.sum() / k.n_unique()

    entries = pl.struct(p=p, target=target, k=k)
    per_class = once(entries, lambda e: once(keyed(e), mean_over_classes))
    return _unless_missing(per_class, proba).alias("classwise_ece")


def brier(proba: str = "proba", y_true: str = "y_true") -> pl.Expr:
    """Multiclass Brier score (1/n) Σᵢ Σₖ (pᵢₖ − 1[yᵢ = k])², named ``brier`` (range [0, 2]).

    Null when a row of the group has no probability vector.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import brier
    >>> rows = pl.DataFrame({"proba": [[0.75, 0.25], [0.5, 0.5]], "y_true": [0, 1]})
    >>> rows.select(brier()).item()  # (.0625 + .0625 + .25 + .25) / 2
    0.3125
    """
    return _unless_missing(once(_brier_terms(proba, y_true), exact_mean), proba).alias("brier")


def nll(proba: str = "proba", y_true: str = "y_true") -> pl.Expr:
    """Negative log-likelihood −(1/n) Σ log max(p_y, 1e−15), named ``nll`` (natural log).

    Null when a row of the group has no probability vector.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import nll
    >>> rows = pl.DataFrame({"proba": [[0.5, 0.5], [0.0, 1.0]], "y_true": [0, 0]})
    >>> round(rows.select(nll()).item(), 6)  # (log 2 − log 1e−15) / 2
    17.615962
    """
    return _unless_missing(once(_nll_terms(proba, y_true), exact_mean), proba).alias("nll")


def _true_probability(proba: str, y_true: str) -> pl.Expr:
    """Per row, p_y as Float64; 0 for a label outside the vector."""
    y = pl.col(y_true).cast(pl.Int64)
    p_y = pl.col(proba).list.get(y, null_on_oob=True).cast(pl.Float64)
    return pl.when(y >= 0).then(p_y).otherwise(None).fill_null(0.0)


def _brier_terms(proba: str, y_true: str) -> pl.Expr:
    """Per row, Σₖ (pₖ − 1[y = k])² = Σₖ pₖ² − 2p_y + 1."""
    p = pl.element().cast(pl.Float64)
    squares = pl.col(proba).list.eval(p * p).list.sum()
    return squares - 2 * _true_probability(proba, y_true) + 1


def _nll_terms(proba: str, y_true: str) -> pl.Expr:
    """Per row, −log max(p_y, 1e−15)."""
    return -_true_probability(proba, y_true).clip(lower_bound=EPS).log()


def _entries(proba: str, y_true: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Inside an aggregation: every (row, class) entry's p (Float64), 1[y = k] and k."""
    vector = pl.col(proba)
    size = vector.list.len()
    p = vector.explode().cast(pl.Float64)
    k = pl.int_ranges(size).explode()
    y = pl.col(y_true).cast(pl.Int64).repeat_by(size).explode()
    return p, (y == k).cast(pl.Float64), k


def _unless_missing(value: pl.Expr, proba: str) -> pl.Expr:
    vector = pl.col(proba)
    missing = vector.is_null().any() | (vector.list.len() == 0).any()
    return pl.when(missing).then(None).otherwise(value)


# The fast path -----------------------------------------------------------------------------------


def proba_columns(proba: str, y_true: str) -> dict[str, pl.Expr]:
    """The internal ``p`` (the vector) and ``y`` (the label, Int64) columns."""
    return {"p": pl.col(proba), "y": pl.col(y_true).cast(pl.Int64)}


def class_statistics(rows: pl.LazyFrame, bins: int) -> pl.LazyFrame:
    """Per cell × class k × equal-width bin of pₖ: ``n`` and ``sum_error``, Σ(1[y = k] − pₖ).

    One sum per bin is all a class's ECE needs (Σₘ |Σ(1[y = k] − pₖ)| / n), and with ten
    classes there are ten entries per row, so this is the costliest step of the suite. The
    long table's Float32 vectors go through a compiled loop over their entries
    (``_class_sums``), the same numbers to the bit; other vectors are exploded and summed in
    Polars (``_class_entries``)."""
    entry = rows.collect_schema()["p"]
    float32 = isinstance(entry, pl.List) and entry.inner == pl.Float32 and bins < 2**24
    with_vector = rows.filter(pl.col("p").list.len() > 0).select(CELL_ID, "y", "p")
    entries = _class_entries(with_vector, bins, float32=float32)
    if not float32:
        return entries
    return with_vector.map_batches(
        lambda frame: _class_sums(frame, bins), schema=entries.collect_schema()
    )


def _class_entries(rows: pl.LazyFrame, bins: int, *, float32: bool) -> pl.LazyFrame:
    """``class_statistics`` in Polars: every (row, class) entry exploded, binned and summed."""
    p = pl.col("p").cast(pl.Float64)
    bin_ = _bin_index_of_float32(pl.col("p"), bins) if float32 else _bin_index(p, bins)
    entries = (
        rows.select(CELL_ID, "y", k=pl.int_ranges(pl.col("p").list.len()), p="p")
        .explode("k", "p")
        .select(CELL_ID, "k", bin_, error=(pl.col("y") == pl.col("k")).cast(pl.Float64) - p)
    )
    return entries.group_by(CELL_ID, "k", "bin").agg(
        n=pl.len().cast(pl.Int64), sum_error=exact_sum(pl.col("error"))
    )


#: Groups (cells × classes × bins) ``_class_sums`` holds, at most: 40 bytes each per thread.
_CLASS_GROUPS = 1 << 21
#: Vector entries ``_class_sums`` reads at a time, at most (16 MB of Float32).
_BLOCK_ENTRIES = 1 << 22


def _class_sums(frame: pl.DataFrame, bins: int) -> pl.DataFrame:
    """``class_statistics`` of rows with non-empty Float32 vectors, by one compiled pass over
    their entries (``class_bin_sums``), a block of rows at a time, the blocks shared among the
    cores: 0.30 s where Polars' explosion and group-by take 1.8 s for 10⁸ entries. Rows it
    cannot sum exactly (a null label or entry, an entry outside [0, 1], too many groups) go
    to ``_class_entries``."""
    sizes = frame["p"].list.len().to_numpy()
    cells = frame[CELL_ID].to_numpy()
    classes = int(sizes.max(initial=0))
    groups = (int(cells.max(initial=0)) + 1) * classes * bins
    # a group's sums are exact below 2³¹ entries, so below 2³¹ rows
    if not 0 < frame.height < 2**31 or frame["y"].null_count() or groups > _CLASS_GROUPS:
        return _class_entries(frame.lazy(), bins, float32=True).collect()
    from relcol.metrics._compiled import class_bin_sums

    labels = frame["y"].to_numpy()
    span = max(1, _BLOCK_ENTRIES // classes)
    blocks = [(a, min(a + span, frame.height)) for a in range(0, frame.height, span)]
    threads = max(1, min(available_cores(), len(blocks)))
    sums = np.zeros((threads, 5, groups), dtype=np.int64)

    def add(thread: int) -> bool:
        """Adds the thread's blocks to its sums; False at a block it cannot sum exactly."""
        for a, b in blocks[thread::threads]:
            vectors = frame["p"].slice(a, b - a).to_arrow()
            entries = vectors.flatten()
            values = entries.to_numpy(zero_copy_only=False)
            if entries.null_count or not (values.min() >= 0 and values.max() <= 1):  # or NaN
                return False
            offsets = vectors.offsets.to_numpy()
            offsets = offsets - offsets[0]
            class_bin_sums(
                offsets, values, labels[a:b], cells[a:b], bins, classes, 0, b - a, sums[thread]
            )
        return True

    with ThreadPoolExecutor(threads) as pool:
        if not all(pool.map(add, range(threads))):
            return _class_entries(frame.lazy(), bins, float32=True).collect()
    total = sums.sum(axis=0)
    used = np.flatnonzero(total[4])
    return pl.DataFrame(
        {
            CELL_ID: pl.Series(used // (classes * bins), dtype=frame.schema[CELL_ID]),
            "k": pl.Series(used // bins % classes, dtype=pl.Int64),
            "bin": pl.Series(used % bins, dtype=pl.Int64),
            "n": pl.Series(total[4, used], dtype=pl.Int64),
            "sum_error": words_total(total[:4, used]),
        }
    )


def class_cells(rows: pl.LazyFrame, stats: pl.LazyFrame | None) -> pl.LazyFrame:
    """Per cell: ``classwise_ece`` (from the class statistics; null when ``stats`` is None),
    the sums of the per-row Brier and NLL terms, and ``n_proba``, the rows with a vector."""
    with_vector = pl.col("p").list.len() > 0
    terms = rows.select(
        CELL_ID,
        with_vector=with_vector.cast(pl.Float64),
        brier=pl.when(with_vector).then(_brier_terms("p", "y")),
        nll=pl.when(with_vector).then(_nll_terms("p", "y")),
    )
    sums = {"n_proba": "with_vector", "sum_brier": "brier", "sum_nll": "nll"}
    scores = exact_sums_by(terms, CELL_ID, sums).select(
        CELL_ID, "sum_brier", "sum_nll", n_proba=pl.col("n_proba").cast(pl.Int64)
    )
    if stats is None:
        return scores.with_columns(classwise_ece=pl.lit(None, pl.Float64))
    per_class = stats.group_by(CELL_ID, "k").agg(
        ece_from_bins(sum_confidence=pl.lit(0.0), sum_correct="sum_error")
    )
    classwise = per_class.group_by(CELL_ID).agg(classwise_ece=exact_mean(pl.col("ece")))
    return scores.join(classwise, on=CELL_ID, how="left")
