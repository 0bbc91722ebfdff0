"""Order-free sums: the same bits whatever order the terms are added in.

Polars adds a group's floats in an order that changes from run to run, even on one thread
(pola-rs/polars#25163), so a float ``sum``, ``mean`` or ``var`` in a ``group_by`` differs in
its last bits between two runs of the same report. relcol's metric tables are meant to be
byte-identical for the same rows, so every aggregation over a cell's rows goes through
``exact_sum``: each term x is split into two integers, h = round(x·2⁶⁴) and
l = round((x·2⁶⁴ − h)·2⁶⁴), which hold x to 2⁻¹²⁸ (every bit of a Float64 term above
10⁻²²); Σh and Σl are summed as Int128, which is exact and so independent of order and
thread count, and the total is Σh·2⁻⁶⁴ + Σl·2⁻¹²⁸ in Float64, within an ulp of the exact sum
(a float sum of n terms is within about n ulps). Terms must be finite with |x|·n < 2⁶² (every
metric term is bounded by the clipped log loss, about 35). Sums of integer-valued floats (Σz,
counts) need none of this: below 2⁵³ they are exact in any order.

``x`` appears several times in the expression, and Polars does not share it inside an
aggregation: give a column (terms computed in a ``with_columns`` before the ``group_by``), or
call it inside ``_runs.once`` as the row-level builders do, not an expensive expression. Cost:
about 0.12 s against 0.05 s for a float sum of 10⁷ terms in 7500 groups; the whole metric suite
on 10⁷ rows 5.7 s against 4.9 s with float sums. A term that is not elementwise, such as
``exact_var``'s x − min(x), makes Polars evaluate each group on its own (2.6 s against 1.1 s
for the effect sizes' moments on 10⁷ rows): where that is the cost, take the shift in a window
before the ``group_by`` and sum the two integers of ``fixed_parts`` there, per finer group if
need be and then added up; ``fixed_total`` of those sums has the bits of ``exact_sum``.
Where a frame's sums per group are the cost, ``exact_sums_by`` takes them in one compiled pass
over the rows (the two integers held in two 64-bit words each), with the same bits.

The bootstrap's matrix product W·D has the same problem one level down: a BLAS kernel adds
in an order that depends on the CPU (SSE, AVX2, AVX-512 kernels), the BLAS build and its
thread count. ``exact_product`` makes every addition of the product exact instead, so any
kernel gives the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import polars as pl

from relcol._cluster import available_cores

#: Fixed-point scale of each of a term's two integer parts.
SCALE = 2.0**64


def exact_sum(x: pl.Expr) -> pl.Expr:
    """Σx over the group (nulls skipped, 0 for none), the same in any order."""
    high, low = fixed_parts(x)
    return fixed_total(high.sum(), low.sum())


def fixed_parts(x: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """x's two Int128 parts h = round(x·2⁶⁴) and l = round((x·2⁶⁴ − h)·2⁶⁴), elementwise.

    Their sums over any rows, in any order and split into any partial sums, are exact, so
    ``fixed_total`` of Σh and Σl is ``exact_sum`` of those rows to the bit: a sum can be
    taken in two steps (per finer group, then added up) with the bits of one."""
    scaled = x * SCALE
    high = scaled.round()
    low = ((scaled - high) * SCALE).round()
    return high.cast(pl.Int128), low.cast(pl.Int128)


def fixed_total(high: pl.Expr, low: pl.Expr) -> pl.Expr:
    """The Float64 sum Σh·2⁻⁶⁴ + Σl·2⁻¹²⁸ from the summed parts of ``fixed_parts``."""
    return high.cast(pl.Float64) / SCALE + low.cast(pl.Float64) / (SCALE * SCALE)


def word_pair(whole: str, rest: str) -> pl.Expr:
    """The Int128 integer ``whole``·2³² + ``rest`` of two Int64 columns: a sum of integers a
    compiled loop holds exactly as two 64-bit words (its multiples of 2³² and the rest), as
    ``fixed_total`` takes the sums of ``fixed_parts``."""
    return pl.col(whole).cast(pl.Int128) * pl.lit(2**32, pl.Int128) + pl.col(rest)


#: Groups ``group_exact_sums`` holds, at most: 8·(4·terms + 1) bytes each per core.
SUM_GROUPS = 2**21
#: Rows per core ``group_exact_sums`` takes, at least: fewer would not pay for the thread.
_SHARE_ROWS = 2**20
#: Rows of a piece the cores share out, at most (a chunk of more is cut).
_PIECE_ROWS = 2**18


def exact_sums_by(frame: pl.LazyFrame, key: str, terms: dict[str, str]) -> pl.LazyFrame:
    """Per value of ``key`` (an integer column): ``key``, ``n`` (its rows, Int64) and each of
    ``terms`` (output name: the column it sums) with ``exact_sum``. Summed by one compiled
    pass over the rows (``group_exact_sums``), chunk by chunk as Polars holds them (no
    copy), or by Polars' group-by where that cannot (null or negative keys, a null, NaN or
    huge term …): the same bits either way, in any row order."""
    polars = [pl.len().cast(pl.Int64).alias("n")]
    polars += [exact_sum(pl.col(column)).alias(name) for name, column in terms.items()]
    columns = list(dict.fromkeys(terms.values()))
    rows = frame.select(key, *(pl.col(c).cast(pl.Float64) for c in columns))
    schema = rows.group_by(key).agg(polars).collect_schema()

    def summed(batch: pl.DataFrame) -> pl.DataFrame:
        keys, out = batch[key], None
        if batch.height and not any(batch.null_count().row(0)) and keys.min() >= 0:
            at = [columns.index(column) + 1 for column in terms.values()]
            chunks = [
                (b.column(0).to_numpy(), [b.column(i).to_numpy() for i in at])
                for b in batch.to_arrow().to_batches()
            ]
            out = group_exact_sums(chunks, int(keys.max()) + 1, list(terms))
        if out is None:
            return batch.lazy().group_by(key).agg(polars).collect()
        return out.rename({"group": key}).select(
            pl.col(name).cast(dtype) for name, dtype in schema.items()
        )

    return rows.map_batches(summed, schema=schema)


def group_exact_sums(
    chunks: Sequence[tuple[np.ndarray, Sequence[np.ndarray]]], n_groups: int, names: Sequence[str]
) -> pl.DataFrame | None:
    """Per group with rows: ``group``, ``n`` (its rows, Int64) and each term summed under its
    name (``names``) with the bits of ``exact_sum``, in one compiled pass over the rows
    (``group_sums``), the cores taking a share of the pieces each; in the order of the ids.

    ``chunks`` holds the rows a chunk at a time: its group ids (integers in 0 ..
    ``n_groups`` − 1) and its terms (Float64 arrays, one value per row, in the order of
    ``names``). The two parts of every term are added as exact integers of two 64-bit words
    each, which hold any sum while a group's rows times the largest |term| stay below 2³⁰.
    None when they might not (that, or a term NaN or infinite), when there are more than
    ``SUM_GROUPS`` groups, or with no rows: the caller sums with Polars instead, which gives
    the same bits where it can, and raises Polars' own error on a NaN."""
    rows = sum(len(group) for group, _ in chunks)
    if not 0 < rows < 2**31 or n_groups > SUM_GROUPS:
        return None
    from relcol.metrics._compiled import group_sums  # numba: on first use only

    pieces = [
        (
            _read_only(group[a : a + _PIECE_ROWS]),
            tuple(_read_only(x[a : a + _PIECE_ROWS]) for x in terms),
        )
        for group, terms in chunks
        for a in range(0, len(group), _PIECE_ROWS)
    ]
    threads = max(1, min(available_cores(), rows // _SHARE_ROWS, len(pieces)))
    count = np.zeros((threads, n_groups), dtype=np.int64)
    sums = np.zeros((threads, 4 * len(names), n_groups), dtype=np.int64)

    def add(thread: int) -> float:
        largest = 0.0
        for group, terms in pieces[thread::threads]:
            largest = max(largest, group_sums(group, terms, count[thread], sums[thread]))
        return largest

    with ThreadPoolExecutor(threads) as pool:
        largest = max(pool.map(add, range(threads)))
    n = count.sum(axis=0)
    if not largest * n.max() < 2**30:  # False for inf too
        return None
    total = sums.sum(axis=0)
    used = np.flatnonzero(n)
    summed = {name: words_total(total[4 * t : 4 * t + 4, used]) for t, name in enumerate(names)}
    return pl.DataFrame(
        {"group": pl.Series(used, dtype=pl.Int64), "n": pl.Series(n[used], dtype=pl.Int64)} | summed
    )


def words_total(words: np.ndarray) -> pl.Series:
    """``exact_sum``'s Float64 totals from a compiled pass's four rows of 64-bit words (Σh's
    multiple of 2³² and rest, then Σl's, as ``_add_fixed_parts`` keeps them): ``fixed_total``
    of the two Int128 integers ``word_pair`` puts back together."""
    frame = pl.DataFrame({str(row): words[row] for row in range(4)})
    return frame.select(fixed_total(word_pair("0", "1"), word_pair("2", "3"))).to_series()


def _read_only(x: np.ndarray) -> np.ndarray:
    """A contiguous view of ``x`` that cannot be written (Float64 for a term, Int64 for the
    ids): arrays from Arrow are read-only and numpy's are not, and numba compiles a kernel
    for each kind, and types a tuple of both as no tuple of one type."""
    view = np.ascontiguousarray(x, dtype=np.float64 if x.dtype.kind == "f" else np.int64).view()
    view.flags.writeable = False
    return view


def exact_mean(x: pl.Expr) -> pl.Expr:
    """The mean of the non-null x of the group (null for none), the same in any order."""
    count = x.count()
    return exact_sum(x) / pl.when(count > 0).then(count)


def exact_var(x: pl.Expr, ddof: int = 1) -> pl.Expr:
    """The variance (Σd² − (Σd)²/n)/(n − ddof) of d = x − min(x) from order-free sums, null
    when n ≤ ddof.

    The sums are within an ulp of exact, so the cancellation costs about ε·d̄²/var relative.
    On x itself that is ε·x̄²/var, which is no bound at all for values bunched far from 0
    (confidences within a few Float32 steps of 1 have var/x̄² ≈ 1e−15); a variance does not
    change with a shift, and with d ≥ 0, d̄ ≤ the range and var ≥ range²/(2(n − 1)), the
    shifted sums cost at most a few n·ε relative (about 1e−9 for n = 10⁶)."""
    d = x - x.min()
    return variance_from_sums(exact_sum(d), exact_sum(d * d), x.count(), ddof)


def variance_from_sums(total: pl.Expr, squares: pl.Expr, count: pl.Expr, ddof: int) -> pl.Expr:
    """(Σd² − (Σd)²/n)/(n − ddof) from ``total`` = Σd, ``squares`` = Σd² and ``count`` = n
    (``exact_var`` after its sums), null when n ≤ ddof."""
    spread = squares - total * total / count
    return spread.clip(lower_bound=0.0) / pl.when(count > ddof).then(count - ddof)


B = TypeVar("B")  # a block of samples, as a caller of ``blocked_product`` names it

#: Parts a row of D is split into: enough for every bit of a Float64 term in practice.
PRODUCT_PARTS = 3


def exact_product(d: np.ndarray, w: np.ndarray, w_max: float | None = None) -> np.ndarray:
    """d·w for weights w that are non-negative integers (Float64), with the same bits on any
    BLAS kernel, thread count or summation order.

    Each row of d is split into parts on a power-of-two grid per row and part, coarse enough
    that w_max·Σ|row| < 2⁵² grid steps; rounded to the grid, every product of a part with a
    weight and every partial sum of any subset of them is a multiple of the step below 2⁵³
    steps, exactly representable, so the product of each part is exact whatever the order.
    The first part holds a term to about 2⁻⁵²·w_max·Σ|row|, the second what is left of it to
    2⁻⁵² of that, and so on; a row stops when nothing is left (integer-valued rows after the
    first part). The parts' products are added in one fixed order, so the result is a
    deterministic function of d and w, within about 2⁻⁵²·Σ|terms| of the exact product.

    Parameters
    ----------
    d
        (statistics × samples) Float64, finite.
    w
        (samples × replicates) non-negative integers, in any integer or float dtype (a
        uint8 W is turned into Float64 a block of samples at a time, never whole).
    w_max
        The largest weight the grid is sized for (default: w's): the product of a part of
        w with the same ``w_max`` has the bits of the product with all of w.

    Returns
    -------
    numpy.ndarray
        (statistics × replicates) Float64.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0.1, 0.2, 0.3], [1.0, 0.0, 2.0]])
    >>> w = np.array([[1.0, 0.0], [2.0, 1.0], [1.0, 3.0]])
    >>> exact_product(d, w)
    array([[0.8, 1.1],
           [3. , 6. ]])
    """
    d = np.asarray(d, dtype=np.float64)
    w = np.asarray(w)
    w_max = max(float(np.max(w, initial=0)) if w_max is None else w_max, 1.0)
    out = np.empty((len(d), w.shape[1]))
    samples = d.shape[1]
    if np.count_nonzero(d) < SPARSE_SHARE * d.size:
        # mostly zeros (a sample's rows in a few bins of a cell): only the non-zero entries
        from relcol.metrics._compiled import nonzeros_by_row, sparse_parts_product

        nonzeros = nonzeros_by_row(np.ascontiguousarray(d.T))  # the bootstrap's D: no copy
        sparse_parts_product(*nonzeros, w, w_max, PRODUCT_PARTS, out)
        return out
    if samples <= max(1, _W_ENTRIES // max(w.shape[1], 1)):
        # W whole in Float64; a few thousand rows of d at a time, fewer for many samples: the
        # temporaries stay small and are reused, where whole-matrix temporaries would each be
        # fresh memory (page faults cost more than the arithmetic), and the product of a
        # block is still a large GEMM
        wf = w.astype(np.float64, copy=False)
        w32 = w.astype(np.float32)  # exact: whole numbers up to w_max < 2²⁴ (``_whole``)
        rows = max(1, min(_BLOCK_ROWS, _BLOCK_ENTRIES // max(samples, 1)))
        for lo in range(0, len(d), rows):
            _exact_block(d[lo : lo + rows], wf, w32, w_max, out[lo : lo + rows])
        return out
    # many samples: W a block of samples at a time, so that no block of d or W is large and
    # each product is still a GEMM of every row of the block (a few rows of d against all
    # of W read W once per few rows: 45 s for 4 cells of 5·10⁵ samples)
    for lo in range(0, len(d), _BLOCK_ROWS):
        _exact_wide(d[lo : lo + _BLOCK_ROWS], w, w_max, out[lo : lo + _BLOCK_ROWS])
    return out


#: The share of non-zero entries of d below which ``exact_product`` multiplies only those
#: (``sparse_parts_product``), on one thread: 0.14 times the time of the GEMMs of its parts on
#: the bootstrap's D with 11 % of its entries non-zero, 0.58–0.66 times on the built-in study's
#: with 15–25 %, 0.78–0.90 times with 25–50 %, 1.22 times on a synthetic D with 43 %.
SPARSE_SHARE = 0.25
#: Rows of d split and multiplied together by ``exact_product``, at most; and entries (rows
#: × samples): each of a block's parts and temporaries is then at most 16 MB (a product of
#: 1000 rows of 10⁴ samples traced 424 MB of temporaries in blocks of 2048 rows, 95 MB now).
_BLOCK_ROWS = 2048
_BLOCK_ENTRIES = 2**21
#: Entries (samples × replicates) of W turned into Float64 at a time, at most: 32 MB.
_W_ENTRIES = 2**22


def _exact_block(
    d: np.ndarray, w: np.ndarray, w32: np.ndarray, w_max: float, out: np.ndarray
) -> None:
    whole = _whole(d, w_max)
    if whole.all():  # Float32's GEMM, at half the cost, is exact for these rows
        np.add(d.astype(np.float32) @ w32, 0.0, out=out, dtype=np.float64)
        return
    if not whole.any():
        _parts_product(d, w, w_max, out)
        return
    rows = np.flatnonzero(whole)  # one part each: their Float32 product, widened
    _add_parts(d[rows].astype(np.float32) @ w32, [np.arange(len(rows))], out, rows)
    split = np.flatnonzero(~whole)
    _parts_product(d[split], w, w_max, out, split)


def _parts_product(
    d: np.ndarray, w: np.ndarray, w_max: float, out: np.ndarray, at: np.ndarray | None = None
) -> None:
    """``out`` = d·w exactly, from the products of d's parts on its rows' grids; with ``at``,
    d's rows go to those rows of ``out``."""
    rows, parts, rest = np.arange(len(d)), [], d  # parts: (rows of d, their part)
    for _ in range(PRODUCT_PARTS):
        step = _step(_total_in_order(rest), w_max)[:, None]
        part = _on_grid(rest, step)
        parts.append((rows, part))
        rest = rest - part
        left = rest.any(axis=1)
        if not left.any():
            break
        rows, rest = rows[left], rest[left]
    products = np.vstack([part for _, part in parts]) @ w
    _add_parts(products, [index for index, _ in parts], out, at)


def _total_in_order(rest: np.ndarray) -> np.ndarray:
    """Σ|rest| of each row, its samples added one after another in order: the total
    ``sparse_parts_product`` and ``rest_totals`` take (a zero adds nothing), so that a row's
    grid is the same whichever way its product is taken. numpy sums pairwise only along the
    axis fastest in memory and adds term after term along any other, so the rows' samples
    go on the slow axis (the bootstrap's d, D transposed, has them there already)."""
    return np.asfortranarray(np.abs(rest)).sum(axis=1)


def _whole(d: np.ndarray, w_max: float) -> np.ndarray:
    """The rows of d whose product with any weights up to ``w_max`` is exact in Float32:
    whole numbers (counts, Σz) with w_max·Σ|row| < 2²⁴, so that every product and partial sum
    is a whole number below 2²⁴. Their products are those ``_parts_product`` gives (a
    whole-number row is its own first part, and its product is exact either way), at half the
    cost of Float64's GEMM."""
    if w_max >= 2**24:
        return np.zeros(len(d), dtype=bool)
    return (w_max * np.abs(d).sum(axis=1) < 2**24) & (d == np.rint(d)).all(axis=1)


def _step(total: np.ndarray, w_max: float) -> np.ndarray:
    """Each row's grid step 2^(e − 52), for 2^e > w_max·Σ|row| (``total``; frexp: m·2^e with
    ½ ≤ m < 1)."""
    _, e = np.frexp(w_max * total)
    return np.ldexp(1.0, np.maximum(e - 52, -1074))


def _on_grid(rest: np.ndarray, step: np.ndarray) -> np.ndarray:
    """A part: ``rest`` rounded to its rows' grid (``step``, one per row, as a column)."""
    return np.round(rest / step) * step


def _add_parts(
    products: np.ndarray, parts: list[np.ndarray], out: np.ndarray, at: np.ndarray | None = None
) -> None:
    """``out`` from the parts' products stacked in order (``parts``: each part's rows, the
    first every row): each row its first part's product + 0.0 (which turns a −0.0 into 0.0,
    as adding it to 0 would), then what is left of it part after part, in that order; with
    ``at``, row i of d goes to row ``at[i]`` of ``out`` (``add_parts``, compiled)."""
    from relcol.metrics._compiled import add_parts  # numba: on first use only

    later = np.full((len(parts) - 1, len(parts[0])), -1, dtype=np.int64)
    start = len(parts[0])
    for k, index in enumerate(parts[1:]):
        later[k, index] = np.arange(start, start + len(index))
        start += len(index)
    add_parts(products, later, np.arange(len(parts[0])) if at is None else at, out)


def _exact_wide(d: np.ndarray, w: np.ndarray, w_max: float, out: np.ndarray) -> None:
    """``_exact_block`` of rows with many samples, a block of samples at a time
    (``blocked_product``), its blocks' samples in the order of their first non-zero row: a
    block then touches few rows of d (a few bins' statistics, when a sample has few rows in a
    cell), and a row that is zero in a block is left out of its GEMM."""
    span = max(1, min(_BLOCK_ENTRIES // len(d), _W_ENTRIES // max(w.shape[1], 1)))
    first = np.concatenate(
        [np.argmax(d[:, s0 : s0 + span] != 0, axis=0) for s0 in range(0, d.shape[1], span)]
    )
    order = np.argsort(first, kind="stable")
    blocks = [order[s0 : s0 + span] for s0 in range(0, len(order), span)]
    weights = np.empty((span, w.shape[1]))  # reused: fresh memory per block costs page faults

    def block_d(samples: np.ndarray) -> np.ndarray:
        return d[:, samples]

    def block_weights(samples: np.ndarray) -> np.ndarray:
        np.copyto(weights[: len(samples)], w[samples])
        return weights[: len(samples)]

    grid = product_grid(len(d), blocks, block_d, w_max)
    out[...] = parts_total(blocked_product(grid, blocks, block_d, block_weights, w.shape[1]), grid)


def product_grid(
    rows: int,
    blocks: Sequence[B],
    block_d: Callable[[B], np.ndarray],
    w_max: float,
    map_blocks: Callable = map,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The exact product's grid for ``rows`` rows of d given a block of samples at a time
    (``block_d``: (rows × the block's samples) Float64 for each of ``blocks``): per part,
    the rows it has and their steps, from whole rows (Σ|rest| over every sample: each
    block's sums, added up in the order of ``blocks``). Takes d's blocks once per part,
    through ``map_blocks`` (``map``, or a thread pool's: the same result)."""
    from relcol.metrics._compiled import rest_totals  # numba: on first use only

    grid: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, their step) per part
    index = np.arange(rows)

    def block_total(block: B) -> np.ndarray:
        total = np.zeros(len(index))
        rest_totals(block_d(block), index, steps, total)
        return total

    for _ in range(PRODUCT_PARTS):
        # the rows still left × each earlier part's step of them (every earlier part has them)
        steps = np.empty((len(index), len(grid)))
        for p, (rows_p, step) in enumerate(grid):
            steps[:, p] = step[np.searchsorted(rows_p, index)]
        total = np.zeros(len(index))
        for block_sum in map_blocks(block_total, blocks):
            total += block_sum
        if grid and not (total > 0).any():
            break
        if grid:
            index, total = index[total > 0], total[total > 0]
        grid.append((index, _step(total, w_max)))
    return grid


def parts_total(products: np.ndarray, grid: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """d·w from the parts' products of ``blocked_product`` (or the sum of those of several
    sets of blocks, which is exact) and d's ``grid``: (rows × columns) Float64."""
    out = np.empty((len(grid[0][0]), products.shape[1]))
    _add_parts(products, [index for index, _ in grid], out)
    return out


def blocked_product(
    grid: list[tuple[np.ndarray, np.ndarray]],
    blocks: Iterable[B],
    block_d: Callable[[B], np.ndarray],
    block_w: Callable[[B], np.ndarray],
    columns: int,
) -> np.ndarray:
    """The parts' products (stacked as ``_add_parts`` takes them) of d and w given a block of
    samples at a time: ``block_d`` and ``block_w`` give each of ``blocks``' rows of d (rows ×
    its samples) and of w (its samples × ``columns``, Float64), ``grid`` is d's
    (``product_grid``). Every product of a part is a multiple of its step and every partial
    sum below 2⁵³ steps, so the blocks' products add up exactly in any order or grouping:
    the result is the one product's, however the samples are cut into blocks."""
    from relcol.metrics._compiled import grid_parts  # numba: on first use only

    starts = np.cumsum([0] + [len(index) for index, _ in grid])
    products = np.zeros((starts[-1], columns))
    for block in blocks:
        d = block_d(block)
        live = np.flatnonzero(d.any(axis=1))
        # each live row's place among the stacked parts, and its step, per part (−1: none)
        places = np.full((len(live), len(grid)), -1)
        steps = np.ones((len(live), len(grid)))
        at, stacked = [], 0
        for p, ((index, step), start) in enumerate(zip(grid, starts, strict=False)):
            taken = np.flatnonzero(np.isin(index, live, assume_unique=True))
            mine = np.searchsorted(live, index[taken])
            places[mine, p] = stacked + np.arange(len(taken))
            steps[mine, p] = step[taken]
            at.append(start + taken)
            stacked += len(taken)
        parts = np.empty((stacked, d.shape[1]))
        grid_parts(d, live, places, steps, parts)
        products[np.concatenate(at)] += parts @ block_w(block)
    return products
