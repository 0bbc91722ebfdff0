"""Cell ids: the fast paths group, sort and join on one integer instead of the six cell keys.

``cell_rows`` numbers the groups of a frame in key order (so sorting by the id is sorting by
the keys, nulls last, as SQL's ``ORDER BY``) and gives every row its group's id beside the
columns a metric needs, under short internal names; ``with_keys`` puts the keys back on a
per-cell result. A null ``label`` is one group, as in SQL ``GROUP BY``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

CELL_ID = "_cell"


def cell_rows(
    frame: pl.LazyFrame, keys: Sequence[str], columns: Mapping[str, pl.Expr]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``(cells, rows)``: the groups with their ids, and the rows with ``CELL_ID`` and ``columns``.

    With no keys the whole frame is one group (id 0). ``cells`` is cached (a plan reads it
    twice); callers cache the columns of ``rows`` they read more than once (``narrow_rows``).
    """
    keys = list(keys)
    if not keys:
        cells = pl.LazyFrame({CELL_ID: [0]}, schema={CELL_ID: pl.UInt32})
        return cells, frame.select(pl.lit(0, pl.UInt32).alias(CELL_ID), **columns)
    # sorted, so ids are deterministic (a plan may evaluate `cells` more than once) and in
    # the order the output is sorted in
    cells = frame.select(keys).unique().sort(keys, nulls_last=True).with_row_index(CELL_ID)
    cells = cells.cache()
    rows = frame.join(cells, on=keys, how="inner", nulls_equal=True).select(CELL_ID, **columns)
    return cells, rows


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
