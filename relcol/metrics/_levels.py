"""Confidence levels: the sufficient statistics of the rank metrics (docs/metrics.md).

Per cell × distinct score level: ``n`` rows at the level, ``n_correct`` of them right, and,
counting from the top, ``accepted`` (rows with a score ≥ the level) and
``accepted_correct``, plus the cell's ``n_cell`` and ``n_correct_cell``. Rows with equal
scores enter together, so nothing depends on row order. AUROC, AUPR, FPR at 95 % TPR and
the whole risk–coverage curve are sums over these levels. The fast path reads them off the
rows sorted once per cell (``sorted_rows``); the SQL twin ``sql/macros/confidence_levels.sql``
reads them off one window per cell (running counts over the rows sorted by score).

The score is the confidence by default; ``score="margin"`` or ``"entropy"`` ranks rows by
the margin p₍₁₎ − p₍₂₎ or by the negative entropy of the probability vector instead. A cell
with a row that has no score (no vector) gets null metrics and no curve.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.checks import check_choice, check_columns, check_keys
from relcol.metrics._frames import CELL_ID, cell_rows
from relcol.metrics._proba import proba_entropy, proba_margin
from relcol.metrics._statistics import sorted_rows

SCORES = ("confidence", "margin", "entropy")


def score_column(score: str, confidence: str, proba: str) -> pl.Expr:
    """The internal ``c``: the confidence, the margin, or the negative entropy (Float64)."""
    if score == "margin":
        value = proba_margin(proba)
    elif score == "entropy":
        value = -proba_entropy(proba)
    else:
        value = pl.col(confidence).cast(pl.Float64)
    return value.alias("c")


def scored_columns(score: str, confidence: str, correct: str, proba: str) -> dict[str, pl.Expr]:
    """The internal ``c`` (the score) and ``z`` columns."""
    return {"c": score_column(score, confidence, proba), "z": pl.col(correct).cast(pl.Float64)}


def scored_cells(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per cell: ``n`` (all rows) and ``missing`` (rows without a score)."""
    return rows.group_by(CELL_ID).agg(
        n=pl.len().cast(pl.Int64), missing=pl.col("c").is_null().sum().cast(pl.Int64)
    )


def levels(ordered: pl.LazyFrame) -> pl.LazyFrame:
    """The levels of rows sorted by cell and score, highest first (``sorted_rows``), in that
    order: per cell × level, ``c``, ``n``, ``n_correct``, ``accepted``,
    ``accepted_correct``, ``n_cell``, ``n_correct_cell``.

    The rows of a cell are contiguous, so within-cell running sums and shifts are global
    ones corrected at the cell boundaries (about twice as fast as windows over the cell id).
    """
    c, cell, z = pl.col("c"), pl.col(CELL_ID), pl.col("z")
    level_end = ((c != c.shift(-1)) | (cell != cell.shift(-1))).fill_null(True)
    cell_start = (cell != cell.shift(1)).fill_null(True)
    running = z.cum_sum()
    before_cell = pl.when(cell_start).then(running - z).forward_fill()
    ends = (
        ordered.with_columns(accepted_correct=running - before_cell)
        .filter(level_end)
        .select(
            CELL_ID,
            "c",
            "n_cell",
            "accepted_correct",
            accepted=pl.col("n_cell") - pl.col("r"),  # rows with a score ≥ the level
        )
    )
    same_cell = cell == cell.shift(1)
    accepted_before = pl.when(same_cell).then(pl.col("accepted").shift(1)).otherwise(0)
    correct_before = pl.when(same_cell).then(pl.col("accepted_correct").shift(1)).otherwise(0.0)
    cell_end = (cell != cell.shift(-1)).fill_null(True)
    return ends.select(
        CELL_ID,
        "c",
        n=pl.col("accepted") - accepted_before,
        n_correct=pl.col("accepted_correct") - correct_before,
        accepted="accepted",
        accepted_correct="accepted_correct",
        n_cell="n_cell",
        n_correct_cell=pl.when(cell_end).then(pl.col("accepted_correct")).backward_fill(),
    )


def scored_rows(
    function: str,
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str],
    score: str,
    confidence: str,
    correct: str,
    proba: str,
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """The cells, the scored rows (``scored_columns``) and the rows with a score sorted once
    per cell, for the table function ``function`` (named in its errors) of ``frame``."""
    score = check_choice("score", score, SCORES)
    keys = check_keys(by)
    lazy = frame.lazy()
    needed = [*keys, correct, *((confidence,) if score == "confidence" else (proba,))]
    check_columns(function, lazy, needed)
    columns = scored_columns(score, confidence, correct, proba)
    finite = {"c": confidence}
    if score != "confidence":  # a score may hide a NaN or infinite entry (entropy: p > 0 only)
        columns["vector_total"] = pl.col(proba).list.sum()
        finite = {"vector_total": proba}
    cells, rows = cell_rows(lazy, keys, columns, finite)
    return cells, rows, sorted_rows(rows.drop_nulls("c"), 0)
