"""Selective prediction: accept only the most confident rows (docs/metrics.md).

Rows are accepted from the highest confidence down; rows with equal confidence enter
together, so the curve has one point per distinct confidence level t: coverage(t) = share
of rows with c ≥ t, risk(t) = error rate among them.

- ``aurc``: the mean selective risk over the n rows, each row at the coverage at which it
  enters: Σₜ nₜ·risk(t) / n, each tied group contributing its risk × its size (Geifman,
  Uziel & El-Yaniv 2019 with ties entering together).
- ``aurc_optimal``: the AURC of a perfect ranking with the same n₁ correct rows, rows
  entering one by one with every correct row first: (1/n) Σᵢ₌ₙ₁₊₁ⁿ (i − n₁)/i
  = (n₀ − n₁(Hₙ − Hₙ₁))/n, Hₖ the harmonic numbers; ``e_aurc`` = aurc − aurc_optimal.
- ``risk_at_coverage`` (target κ, default 0.8): the risk of the curve point with the smallest
  coverage ≥ κ, i.e. the lowest threshold needed to accept at least κ of the rows (a step
  curve; no interpolation between points). Every cell has one: the lowest level accepts
  all rows.
- ``coverage_at_risk`` (target ρ, default 0.05): the largest coverage among curve points
  with risk ≤ ρ (tested as errors ≤ ρ·accepted), 0 when no threshold reaches it (step
  curve, no interpolation).

Row-level builders (``aurc()``) work in any ``group_by().agg()``; the fast paths
``selective_curve()`` and ``selective()`` derive everything from the confidence levels
(``_levels.py``). The SQL twins are ``sql/macros/selective_curve.sql`` and
``sql/macros/selective.sql``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import polars as pl

from relcol.checks import check_keys, check_share
from relcol.metrics._exact import exact_sum
from relcol.metrics._frames import CELL_ID, with_keys
from relcol.metrics._levels import levels, scored_cells, scored_rows
from relcol.metrics._runs import once, run_ends, sorted_rows
from relcol.store import CELL

#: The columns of ``selective_curve`` after the group keys, in order.
CURVE_COLUMNS = ("score", "threshold", "n", "accepted", "coverage", "risk")
#: The columns of ``selective`` after the group keys, in order.
COLUMNS = (
    "score",
    "n",
    "aurc",
    "aurc_optimal",
    "e_aurc",
    "risk_at_coverage",
    "coverage_at_risk",
    "target_coverage",
    "target_risk",
)

# γ and the Bernoulli-number coefficients of ψ(N + 1) = ln N + γ + 1/(2N) − Σ B₂ₖ/(2k N²ᵏ)
_EULER_GAMMA = 0.5772156649015329
_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_SHIFT = 10


def harmonic(n: pl.Expr) -> pl.Expr:
    """Hₙ = Σᵢ₌₁ⁿ 1/i (H₀ = 0) for an integer expression n, to about 1e−16 relative.

    H_{n+10} from the asymptotic series of ψ (error below 1e−17 at n + 10 ≥ 10), minus
    the ten terms 1/(n+1) … 1/(n+10). The SQL macro ``harmonic`` is the same formula.
    """
    n = n.cast(pl.Float64)
    big = n + _SHIFT
    inverse_square = 1 / (big * big)
    tail = pl.lit(0.0)
    for coefficient in reversed(_ASYMPTOTIC):
        tail = (tail + coefficient) * inverse_square
    value = big.log() + _EULER_GAMMA + 0.5 / big - tail
    for i in range(_SHIFT, 0, -1):
        value = value - 1 / (n + i)
    return pl.when(n == 0).then(0.0).otherwise(value)


def _aurc_optimal(n: pl.Expr, n_correct: pl.Expr) -> pl.Expr:
    n, n_correct = n.cast(pl.Float64), n_correct.cast(pl.Float64)
    return ((n - n_correct) - n_correct * (harmonic(n) - harmonic(n_correct))) / n


# Row-level builders ------------------------------------------------------------------------------


def _curve(rows: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Per level of ``sorted_rows(descending=True)`` from the top: rows at it, accepted,
    errors accepted (inside ``once``)."""
    ends = run_ends(rows.struct.field("c"))
    accepted = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).filter(ends)
    errors = (1 - rows.struct.field("z")).cum_sum().filter(ends)
    size = accepted - accepted.shift(1).fill_null(0)
    return size, accepted, errors


def _on_curve(
    confidence: str, correct: str, compute: Callable[[pl.Expr, pl.Expr, pl.Expr], pl.Expr]
) -> pl.Expr:
    """``compute(size, accepted, errors)`` over the group's curve, its rows sorted once."""
    rows = sorted_rows(confidence, correct, descending=True)
    return once(rows, lambda sorted_: compute(*_curve(sorted_)))


def aurc(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Area under the risk–coverage curve, ties entering together, named ``aurc``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import aurc
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> round(rows.select(aurc()).item(), 12)  # (1·0 + 2·(1/3) + 1·(2/4)) / 4
    0.291666666667
    """

    def area(size: pl.Expr, accepted: pl.Expr, errors: pl.Expr) -> pl.Expr:
        return exact_sum(size * (errors / accepted)) / pl.len()

    return _on_curve(confidence, correct, area).alias("aurc")


def aurc_optimal(correct: str = "correct") -> pl.Expr:
    """AURC of a perfect ranking with the same accuracy, named ``aurc_optimal``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import aurc_optimal
    >>> rows = pl.DataFrame({"correct": [True, True, False, False]})
    >>> round(rows.select(aurc_optimal()).item(), 12)  # (0 + 0 + 1/3 + 2/4) / 4
    0.208333333333
    """
    counts = pl.struct(n=pl.len(), n_correct=pl.col(correct).cast(pl.Float64).sum())
    return once(
        counts, lambda c: _aurc_optimal(c.struct.field("n"), c.struct.field("n_correct")).first()
    ).alias("aurc_optimal")


def e_aurc(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Excess AURC: aurc − aurc_optimal, named ``e_aurc``."""
    return (aurc(confidence, correct) - aurc_optimal(correct)).alias("e_aurc")


def risk_at_coverage(
    confidence: str = "confidence", correct: str = "correct", *, coverage: float = 0.8
) -> pl.Expr:
    """The risk at the smallest curve coverage ≥ ``coverage``, named ``risk_at_coverage``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import risk_at_coverage
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> rows.select(risk_at_coverage(coverage=0.5)).item()  # t = .6 accepts 3 of 4, 1 wrong
    0.3333333333333333
    """
    coverage = check_share("coverage", coverage, low_open=True)

    def risk_there(size: pl.Expr, accepted: pl.Expr, errors: pl.Expr) -> pl.Expr:
        enough = accepted >= coverage * pl.len()
        return (errors / accepted).filter(enough).sort_by(accepted.filter(enough)).first()

    return _on_curve(confidence, correct, risk_there).alias("risk_at_coverage")


def coverage_at_risk(
    confidence: str = "confidence", correct: str = "correct", *, risk: float = 0.05
) -> pl.Expr:
    """The largest curve coverage with risk ≤ ``risk`` (0 if none), ``coverage_at_risk``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import coverage_at_risk
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> rows.select(coverage_at_risk(risk=0.4)).item()  # t = .6: risk 1/3, coverage 3/4
    0.75
    """
    risk = check_share("risk", risk, low_open=False)

    def coverage_there(size: pl.Expr, accepted: pl.Expr, errors: pl.Expr) -> pl.Expr:
        # Polars divides a column by a scalar as a product with its reciprocal, 1 ulp off
        # the quotient (3/5 would read 0.6000000000000001); the largest count divided once
        # is the largest quotient, division by a positive count being monotone.
        return accepted.filter(errors <= risk * accepted).max() / pl.len()

    return _on_curve(confidence, correct, coverage_there).fill_null(0.0).alias("coverage_at_risk")


# The fast paths ---------------------------------------------------------------------------------


def selective_curve(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    score: str = "confidence",
    confidence: str = "confidence",
    correct: str = "correct",
    proba: str = "proba",
) -> pl.LazyFrame:
    """The risk–coverage curve of every group: one row per group × distinct score level.

    Parameters
    ----------
    frame
        Prediction rows (the long table or any frame with the named columns).
    by
        Grouping columns, passed through; default the cell key.
    score
        ``"confidence"`` (default), ``"margin"`` or ``"entropy"``, as in ``discrimination``;
        a group with a row that has no score has no curve.
    confidence, correct, proba
        Columns holding the confidence, whether the prediction is right, the vector.

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``score``, ``threshold`` (the level t: rows with a score ≥ t are
        accepted), ``n`` (rows at t), ``accepted`` (rows with a score ≥ t; Int64),
        ``coverage`` = accepted / n of the group, ``risk`` = error rate of the accepted;
        sorted by ``by`` and threshold from the highest down. The SQL view
        ``selective_curve`` has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import selective_curve
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> selective_curve(rows, "model").collect().select("threshold", "coverage", "risk").rows()
    [(0.9, 0.25, 0.0), (0.6, 0.75, 0.3333333333333333), (0.3, 1.0, 0.5)]
    """
    cells, rows, ordered = scored_rows(
        "selective_curve", frame, by, score, confidence, correct, proba
    )
    table = curve_levels(rows, levels(ordered), score)
    return with_keys(table, cells, check_keys(by), presorted=True)


def selective(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    coverage: float = 0.8,
    risk: float = 0.05,
    score: str = "confidence",
    confidence: str = "confidence",
    correct: str = "correct",
    proba: str = "proba",
) -> pl.LazyFrame:
    """Selective-prediction summaries of every group, from its confidence levels.

    Parameters
    ----------
    frame, by, score, confidence, correct, proba
        As in ``selective_curve``.
    coverage
        Target coverage κ in (0, 1] for ``risk_at_coverage`` (default 0.8).
    risk
        Target risk ρ in [0, 1] for ``coverage_at_risk`` (default 0.05).

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``score``, ``n`` (Int64), ``aurc``, ``aurc_optimal``,
        ``e_aurc``, ``risk_at_coverage``, ``coverage_at_risk``, ``target_coverage``,
        ``target_risk`` (Float64); sorted by ``by``. The SQL view ``selective`` (and the
        macro ``selective(coverage := …, risk := …)``) has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import selective
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> out = selective(rows, "model", coverage=0.5, risk=0.4).collect()
    >>> [round(out[name].item(), 6) for name in ("aurc", "aurc_optimal", "risk_at_coverage", "coverage_at_risk")]
    [0.291667, 0.208333, 0.333333, 0.75]
    """
    coverage = check_share("coverage", coverage, low_open=True)
    risk = check_share("risk", risk, low_open=False)
    cells, rows, ordered = scored_rows("selective", frame, by, score, confidence, correct, proba)
    table = selective_cells(rows, levels(ordered), score, coverage, risk)
    return with_keys(table, cells, check_keys(by))


def sorted_curve(rows: pl.DataFrame, cell: str) -> pl.LazyFrame:
    """The ``selective_curve`` of every cell of rows already sorted by the cell id ``cell``
    and the confidence, both ascending (as ``cell_sorted`` orders them; equal confidences in
    any order), without sorting them again: ``rows`` has ``cell``, ``c`` (the confidence,
    Float64) and ``z`` (1.0 right, 0.0 wrong). The same levels, so the same columns and
    values, keyed by ``cell`` in place of the cell keys, the cells in descending order
    (each one's levels from the highest threshold down, as ``selective_curve`` gives them).
    """
    ids = rows.get_column(cell).to_numpy()
    n = len(ids)
    first = np.ones(n, dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    start = np.flatnonzero(first)
    size = np.diff(np.append(start, n))
    # ``levels`` reads the rows highest first, with each row's rank r in the ascending order
    ordered = rows.select(pl.col(cell).alias(CELL_ID), "c", "z").with_columns(
        n_cell=pl.Series(np.repeat(size, size), dtype=pl.Int64),
        r=pl.Series(np.arange(n) - np.repeat(start, size), dtype=pl.Int64),
    )
    ordered = ordered.reverse().lazy()
    return curve_levels(ordered, levels(ordered), "confidence").rename({CELL_ID: cell})


def curve_levels(rows: pl.LazyFrame, level: pl.LazyFrame, score: str) -> pl.LazyFrame:
    """Per cell × level: the ``selective_curve`` columns (cells with a missing score left out),
    in the order of ``level`` (``levels``): by cell, threshold from the highest down."""
    missing = scored_cells(rows).select(CELL_ID, "missing")
    return (
        level.join(missing, on=CELL_ID, how="left", maintain_order="left")
        .filter(pl.col("missing") == 0)
        .select(CELL_ID, **_points(score, threshold="c"))
    )


def selective_curve_from_counts(
    counts: pl.DataFrame | pl.LazyFrame, by: str | Iterable[str] = CELL, score: str = "confidence"
) -> pl.LazyFrame:
    """``selective_curve`` from the counts of its levels, as the SQL view
    ``selective_curve_counts`` gives them (stored at commit where they are small): the ``by``
    columns, ``threshold``, ``n``, ``accepted``, ``accepted_correct`` and ``n_cell``. The same
    columns, values and order as ``selective_curve`` of the rows they count.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import selective_curve_from_counts
    >>> counts = pl.DataFrame({"model": "a", "threshold": [0.9, 0.6, 0.3], "n": [1, 2, 1],
    ...     "accepted": [1, 3, 4], "accepted_correct": [1, 2, 2], "n_cell": 4})
    >>> selective_curve_from_counts(counts, "model").collect().select("coverage", "risk").rows()
    [(0.25, 0.0), (0.75, 0.3333333333333333), (1.0, 0.5)]
    """
    return counts.lazy().select(*check_keys(by), **_points(score))


def _points(score: str, threshold: str = "threshold") -> dict[str, pl.Expr | str]:
    """The ``selective_curve`` columns after the keys, from a level's counts (``n``,
    ``accepted``, ``accepted_correct``, ``n_cell``): coverage = accepted / n_cell and risk =
    (accepted − accepted_correct) / accepted, each one correctly rounded division, as the SQL
    macro ``selective_curve`` divides them."""
    accepted = pl.col("accepted")
    return {
        "score": pl.lit(score),
        "threshold": threshold,
        "n": "n",
        "accepted": accepted,
        "coverage": accepted / pl.col("n_cell"),
        "risk": (accepted - pl.col("accepted_correct")) / accepted,
    }


def selective_cells(
    rows: pl.LazyFrame, level: pl.LazyFrame, score: str, coverage: float, risk: float
) -> pl.LazyFrame:
    """Per cell: the ``selective`` columns, from the scored rows and their confidence levels.

    Each level's share is computed elementwise and aggregated per cell with plain
    aggregations; levels come highest first, so the first level reaching the target
    coverage is the curve point with the smallest such coverage."""
    accepted, n_cell = pl.col("accepted"), pl.col("n_cell")
    errors = accepted - pl.col("accepted_correct")
    level_risk = errors / accepted
    terms = level.select(
        CELL_ID,
        "n_cell",
        "n_correct_cell",
        risk_sum=pl.col("n") * level_risk,
        risk_at_coverage=pl.when(accepted >= coverage * n_cell).then(level_risk),
        coverage_at_risk=pl.when(errors <= risk * accepted).then(accepted / n_cell),
    )
    summary = (
        terms.group_by(CELL_ID)
        .agg(
            pl.col("n_cell", "n_correct_cell").first(),
            exact_sum(pl.col("risk_sum")),
            pl.col("risk_at_coverage").first(ignore_nulls=True),
            pl.col("coverage_at_risk").max(),
        )
        .with_columns(
            aurc=pl.col("risk_sum") / n_cell,
            aurc_optimal=_aurc_optimal(n_cell, pl.col("n_correct_cell")),
            coverage_at_risk=pl.col("coverage_at_risk").fill_null(0.0),
        )
        .with_columns(e_aurc=pl.col("aurc") - pl.col("aurc_optimal"))
    )
    scored = pl.col("missing") == 0
    metrics = ("aurc", "aurc_optimal", "e_aurc", "risk_at_coverage", "coverage_at_risk")
    return (
        scored_cells(rows)
        .join(summary, on=CELL_ID, how="left")
        .select(
            CELL_ID,
            score=pl.lit(score),
            n="n",
            **{name: pl.when(scored).then(pl.col(name)) for name in metrics},
            target_coverage=pl.lit(coverage, pl.Float64),
            target_risk=pl.lit(risk, pl.Float64),
        )
    )
