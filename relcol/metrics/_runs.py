"""Groups inside an aggregation, as runs of a sorted key.

A row-level builder runs inside ``group_by().agg()``, where a window cannot partition by a
computed key (an equal-mass bin, a (class, bin) pair, a confidence level). Sorting the
values by the key makes each group a run of equal keys; a group's sum is then a difference
of a running sum taken at the run ends. The fast paths sum with ``group_by`` instead; tests
hold the two to the same numbers.
"""

from __future__ import annotations

import polars as pl


def run_ends(ordered: pl.Expr) -> pl.Expr:
    """True at the last element of each run of equal values of a sorted expression."""
    return (ordered != ordered.shift(-1)).fill_null(True)


def run_totals(values: pl.Expr, ordered_key: pl.Expr) -> pl.Expr:
    """The sum of ``values`` over each run of ``ordered_key`` (both in the same order), one
    value per run."""
    at_ends = values.cast(pl.Float64).cum_sum().filter(run_ends(ordered_key))
    return at_ends - at_ends.shift(1).fill_null(0.0)
