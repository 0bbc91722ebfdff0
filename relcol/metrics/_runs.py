"""Groups inside an aggregation, as runs of a sorted key.

A row-level builder runs inside ``group_by().agg()``, where a window cannot partition by a
computed key (an equal-mass bin, a (class, bin) pair, a confidence level). Sorting the
values by the key makes each group a run of equal keys; a group's sum is then a difference
of a running sum taken at the run ends. The fast paths sum with ``group_by`` instead; tests
hold the two to the same numbers.

Polars computes a subexpression as often as it appears in an expression, also inside an
aggregation, where it shares none: a builder that read the sorted rows five times would sort
them five times. ``once`` computes such a value once per group and hands it to the rest of
the builder as ``pl.element()``.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl


def once(value: pl.Expr, compute: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """``compute(value)``, with ``value`` computed once per group (``compute`` reads it as
    its argument, as often as it likes).

    ``value`` is collected into one list per group and ``compute`` runs on the list's
    elements (``list.agg``); inside it ``pl.len()`` is the number of values (the group's rows
    unless ``value`` filters them). Several columns travel as one struct (``sorted_rows``).
    """
    return value.implode().list.agg(compute(pl.element()))


def mean_square(value: pl.Expr) -> pl.Expr:
    """The mean of ``value``², ``value`` computed once."""
    return once(value, lambda v: (v * v).mean())


def confidence_rows(confidence: str, correct: str) -> pl.Expr:
    """The group's rows as structs {c: confidence, z: correct}, both Float64 (for ``once``)."""
    c = pl.col(confidence).cast(pl.Float64)
    return pl.struct(c.alias("c"), pl.col(correct).cast(pl.Float64).alias("z"))


def sorted_rows(confidence: str, correct: str, *, descending: bool) -> pl.Expr:
    """``confidence_rows`` sorted by the confidence."""
    c = pl.col(confidence).cast(pl.Float64)
    return confidence_rows(confidence, correct).sort_by(c, descending=descending)


def run_ends(ordered: pl.Expr) -> pl.Expr:
    """True at the last element of each run of equal values of a sorted expression."""
    return (ordered != ordered.shift(-1)).fill_null(True)


def run_totals(values: pl.Expr, ordered_key: pl.Expr) -> pl.Expr:
    """The sum of ``values`` over each run of ``ordered_key`` (both in the same order), one
    value per run."""
    at_ends = values.cast(pl.Float64).cum_sum().filter(run_ends(ordered_key))
    return at_ends - at_ends.shift(1).fill_null(0.0)
