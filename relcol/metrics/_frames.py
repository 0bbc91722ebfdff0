"""Cell ids: the fast paths group, sort and join on one integer instead of the six cell keys.

``cell_rows`` numbers the groups of a frame in key order (so sorting by the id is sorting by
the keys, nulls last, as SQL's ``ORDER BY``) and gives every row its group's id beside the
columns a metric needs, under short internal names; ``with_keys`` puts the keys back on a
per-cell result. A null ``label`` is one group, as in SQL ``GROUP BY``.

``by_chunks`` runs any per-cell computation over runs of whole cells of a bounded number of
rows and concatenates the results: every metric of a cell depends on that cell's rows only
(docs/development.md), so the result is the single pass's, and memory is bounded by the chunk, not
by the study (10⁸ rows in a few GB).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import polars as pl

from relcol.errors import InputError
from relcol.store import chunk_spans

CELL_ID = "_cell"

#: Rows read and processed together by ``by_chunks`` (a larger cell is a chunk of its own).
CHUNK_ROWS = 3_000_000

#: Cell keys that are never null: a chunk's rows are first narrowed by ``is_in`` on these,
#: which Parquet statistics can prune on, before the exact semi-join on every key.
_NARROW = ("study", "dataset", "model", "corruption")


def cell_rows(
    frame: pl.LazyFrame,
    keys: Sequence[str],
    columns: Mapping[str, pl.Expr],
    finite: Mapping[str, str] | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``(cells, rows)``: the groups with their ids, and the rows with ``CELL_ID`` and ``columns``.

    With no keys the whole frame is one group (id 0). Both frames are cached: a plan that
    reads them several times computes them once. ``finite`` names internal columns that must
    hold no NaN or infinity (every entry, for a list column), each with the caller's column
    it comes from: collecting the rows raises ``InputError`` naming that column instead of an
    error from deep inside an aggregation.
    """
    keys = list(keys)
    if not keys:
        cells = pl.LazyFrame({CELL_ID: [0]}, schema={CELL_ID: pl.UInt32})
        rows = frame.select(pl.lit(0, pl.UInt32).alias(CELL_ID), **columns)
        return cells, _checked(rows, finite)
    # sorted, so ids are deterministic (a plan may evaluate `cells` more than once) and in
    # the order the output is sorted in
    cells = frame.select(keys).unique().sort(keys, nulls_last=True).with_row_index(CELL_ID)
    cells = cells.cache()
    rows = frame.join(cells, on=keys, how="inner", nulls_equal=True).select(CELL_ID, **columns)
    # cached: metrics read the rows several times, each branch wanting other columns, which
    # the optimiser alone would scan once per branch (measured: no higher peak memory)
    return cells, _checked(rows, finite).cache()


def _checked(rows: pl.LazyFrame, finite: Mapping[str, str] | None) -> pl.LazyFrame:
    """``rows``, raising ``InputError`` when collected if a ``finite`` column (``cell_rows``)
    holds a NaN or an infinity: a vector's entries through their sum, which is not finite
    when one of them is not (nulls pass)."""
    if not finite:
        return rows

    def check(frame: pl.DataFrame) -> pl.DataFrame:
        for name, source in finite.items():
            values = frame[name]
            if isinstance(values.dtype, pl.List):
                values = values.list.sum()
            bad = values.len() - values.null_count() - int(values.is_finite().sum())
            if bad:
                raise InputError(
                    f"column {source!r}: {bad} row{'s' if bad > 1 else ''} with a NaN or "
                    "infinite value; the metrics need finite numbers (drop or fix those rows)"
                )
        return frame

    return rows.map_batches(check)


def with_keys(
    table: pl.LazyFrame,
    cells: pl.LazyFrame,
    keys: Sequence[str],
    then: Sequence[str] = (),
    *,
    descending: bool = False,
    presorted: bool = False,
) -> pl.LazyFrame:
    """``table`` (one row per cell id, or per cell id × ``then``) with the keys in front,
    sorted by the keys and then by ``then`` (``descending``: ``then`` in descending order).

    ``presorted``: ``table`` is already in that order (a large curve need not be sorted
    again); the keys are joined on without reordering it.
    """
    keys = list(keys)
    columns = [*keys, pl.exclude(CELL_ID, *keys)]
    if presorted:
        return table.join(cells, on=CELL_ID, how="left", maintain_order="left").select(columns)
    out = table.join(cells, on=CELL_ID, how="inner")
    order = [False] + [descending] * len(then)
    return out.sort([CELL_ID, *then], descending=order).select(columns)


def chunk_filter(cells: pl.DataFrame) -> pl.Expr:
    """A predicate that keeps every row of ``cells`` (and perhaps rows of neighbouring cells:
    follow it with an exact join). Cells sorted by their keys make a run cover few (study,
    dataset, model) combinations, so the predicate narrows the read to them."""
    keep = pl.lit(True)
    for key in _NARROW:
        if key in cells.columns:
            keep = keep & pl.col(key).is_in(cells[key].unique().implode())
    return keep


def by_chunks(
    frame: pl.LazyFrame,
    cells: pl.DataFrame,
    keys: Sequence[str],
    plans: Callable[[pl.LazyFrame], Sequence[pl.LazyFrame]],
    *,
    budget: int = CHUNK_ROWS,
) -> list[pl.DataFrame]:
    """Collect ``plans(rows)`` for each run of whole cells of ``cells`` (the ``keys`` and the
    row count ``n`` of every cell, sorted by the keys, nulls last) and concatenate each plan's
    results over the runs, in cell order.

    ``plans`` must compute per cell (each output row belongs to one cell), as every metric
    table does; then the result equals ``pl.collect_all(plans(frame))``.
    """
    keys = list(keys)
    results: list[list[pl.DataFrame]] = []
    for start, length in chunk_spans(cells["n"].to_list(), budget):
        if length == cells.height:  # one run holds every cell: the single pass itself
            results.append(pl.collect_all(plans(frame)))
            continue
        rows = run_rows(frame, cells.slice(start, length).select(keys), keys)
        results.append(pl.collect_all(plans(rows)))
    return concat_runs(results)


def run_rows(frame: pl.LazyFrame, run: pl.DataFrame, keys: Sequence[str]) -> pl.LazyFrame:
    """The rows of ``frame`` that belong to the cells ``run`` (their ``keys``), all of them."""
    keys = list(keys)
    return frame.filter(chunk_filter(run)).join(run.lazy(), on=keys, how="semi", nulls_equal=True)


def concat_runs(results: Sequence[Sequence[pl.DataFrame]]) -> list[pl.DataFrame]:
    """Each plan's results over the runs (``results[run][plan]``), concatenated in run order."""
    return [pl.concat(parts, how="vertical") for parts in zip(*results, strict=True)]
