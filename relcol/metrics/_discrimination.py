"""Discrimination: does the confidence separate right from wrong? (docs/metrics.md)

With n₁ correct and n₀ wrong rows in a cell:

- ``auroc`` = P(c of a correct row > c of a wrong row) + ½ P(tie): Mann–Whitney U with
  mid-ranks over n₁n₀. Null unless n₁ > 0 and n₀ > 0.
- ``aupr_success``: average precision with positive = correct and score c,
  Σₗ (Rₗ − Rₗ₋₁)·Pₗ over the distinct thresholds t (accept c ≥ t) from the highest down,
  scikit-learn's step definition. Null when n₁ = 0.
- ``aupr_error``: the same with positive = wrong and score −c (thresholds from the lowest
  confidence up). Null when n₀ = 0.
- ``fpr_at_95tpr``: positive = correct, accept c ≥ t; the smallest false-positive rate
  FP/n₀ among the thresholds t (distinct confidences, tied rows entering together) whose
  true-positive rate TP/n₁ is at least 0.95 (tested as 20·TP ≥ 19·n₁, exactly). Since both
  rates fall as t rises, that is the rate at the highest such threshold. Null unless
  n₁ > 0 and n₀ > 0.
- ``cohens_d`` = (μ₁ − μ₀)/√((σ₁² + σ₀²)/2), σ with ddof = 1. Null unless n₁ ≥ 2, n₀ ≥ 2
  and σ₁² + σ₀² > 0 (a group whose confidences are all equal has σ² = 0 exactly).
- ``point_biserial`` = Pearson correlation of c and z = (μ₁ − μ₀)·√(n₁n₀)/(n·σ), σ the
  population SD of c. Null unless n₁ > 0, n₀ > 0 and σ > 0.

Row-level builders (``auroc()``) work in any ``group_by().agg()``; the fast path
``discrimination()`` derives the rank metrics from the confidence levels (``_levels.py``)
and the effect sizes from per-cell moments. The SQL twin is ``sql/macros/discrimination.sql``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from relcol.checks import check_keys
from relcol.metrics._exact import (
    exact_mean,
    exact_sums_by,
    exact_var,
    fixed_parts,
    fixed_total,
    variance_from_sums,
    word_pair,
)
from relcol.metrics._frames import CELL_ID, with_keys
from relcol.metrics._levels import levels, scored_cells, scored_rows
from relcol.metrics._runs import confidence_rows, once, run_ends, sorted_rows
from relcol.store import CELL

#: The columns of ``discrimination`` after the group keys, in order.
COLUMNS = (
    "score",
    "n",
    "auroc",
    "aupr_success",
    "aupr_error",
    "fpr_at_95tpr",
    "cohens_d",
    "point_biserial",
)


def _c(confidence: str) -> pl.Expr:
    return pl.col(confidence).cast(pl.Float64)


def _z(correct: str) -> pl.Expr:
    return pl.col(correct).cast(pl.Float64)


# Row-level builders --------------------------------------------------------------------------


def auroc(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """AUROC of the confidence for correct vs wrong, with mid-ranks for ties, ``auroc``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import auroc
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> rows.select(auroc()).item()  # pairs: .9>.6 ✓ .9>.3 ✓ .6=.6 ½ .6>.3 ✓
    0.875
    """
    z = _z(correct)
    n1 = z.sum()
    n0 = pl.len() - n1
    ranks = _c(confidence).rank("average")
    u = (ranks * z).sum() - n1 * (n1 + 1) / 2
    return pl.when((n1 > 0) & (n0 > 0)).then(u / (n1 * n0)).alias("auroc")


def aupr_success(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Average precision with positive = correct and score c, named ``aupr_success``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import aupr_success
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> round(rows.select(aupr_success()).item(), 12)  # ½·1 + ½·(2/3)
    0.833333333333
    """
    rows = sorted_rows(confidence, correct, descending=True)
    return once(rows, lambda r: _average_precision(r.struct.field("c"), r.struct.field("z"))).alias(
        "aupr_success"
    )


def aupr_error(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Average precision with positive = wrong and score −c, named ``aupr_error``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import aupr_error
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> round(rows.select(aupr_error()).item(), 12)  # ½·1 + ½·(2/3)
    0.833333333333
    """
    rows = sorted_rows(confidence, correct, descending=False)
    return once(
        rows, lambda r: _average_precision(r.struct.field("c"), 1 - r.struct.field("z"))
    ).alias("aupr_error")


def _average_precision(ordered: pl.Expr, positive: pl.Expr) -> pl.Expr:
    """Σ over thresholds (runs of ``ordered``, best first) of ΔTP/P · TP/accepted (inside
    ``once``)."""
    ends = run_ends(ordered)
    true_pos = positive.cum_sum().filter(ends)
    accepted = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).filter(ends)
    gained = true_pos - true_pos.shift(1).fill_null(0.0)
    total = positive.sum()
    ap = (gained / total * (true_pos / accepted)).sum()
    return pl.when(total > 0).then(ap)


def fpr_at_95tpr(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """False-positive rate at the thresholds reaching 95 % true-positive rate, ``fpr_at_95tpr``.

    Positive = correct; accepting c ≥ t; the smallest FP/n₀ among thresholds t with
    TP/n₁ ≥ 0.95 (ties enter together).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import fpr_at_95tpr
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> rows.select(fpr_at_95tpr()).item()  # both correct rows need t = .6, which accepts one wrong
    0.5
    """

    def rate(rows: pl.Expr) -> pl.Expr:
        positive = rows.struct.field("z")
        ends = run_ends(rows.struct.field("c"))
        true_pos = positive.cum_sum().filter(ends)
        false_pos = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).filter(ends) - true_pos
        n1 = positive.sum()
        n0 = pl.len() - n1
        fpr = (false_pos / n0).filter(20 * true_pos >= 19 * n1).min()
        return pl.when((n1 > 0) & (n0 > 0)).then(fpr)

    return once(sorted_rows(confidence, correct, descending=True), rate).alias("fpr_at_95tpr")


def cohens_d(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Cohen's d of the confidence, correct vs wrong rows (pooled σ, ddof = 1), ``cohens_d``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import cohens_d
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.7, 0.5, 0.3], "correct": [True, True, False, False]})
    >>> round(rows.select(cohens_d()).item(), 12)  # (.8 − .4) / √((.02 + .02)/2)
    2.828427124746
    """

    def d(rows: pl.Expr) -> pl.Expr:
        c, right = rows.struct.field("c"), rows.struct.field("z") > 0
        return _cohens_d(
            once(c.filter(right), exact_mean),
            once(c.filter(~right), exact_mean),
            once(c.filter(right), lambda x: _variance(x, 1)),
            once(c.filter(~right), lambda x: _variance(x, 1)),
            right.sum(),
            (~right).sum(),
        )

    return once(confidence_rows(confidence, correct), d).alias("cohens_d")


def point_biserial(confidence: str = "confidence", correct: str = "correct") -> pl.Expr:
    """Point-biserial correlation: Pearson r of c and z, named ``point_biserial``.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import point_biserial
    >>> rows = pl.DataFrame({"confidence": [0.9, 0.7, 0.5, 0.3], "correct": [True, True, False, False]})
    >>> round(rows.select(point_biserial()).item(), 12)
    0.894427191
    """

    def r(rows: pl.Expr) -> pl.Expr:
        c, right = rows.struct.field("c"), rows.struct.field("z") > 0
        return _point_biserial(
            once(c.filter(right), exact_mean),
            once(c.filter(~right), exact_mean),
            once(c, lambda x: _variance(x, 0)),
            right.sum(),
            (~right).sum(),
        )

    return once(confidence_rows(confidence, correct), r).alias("point_biserial")


def _variance(values: pl.Expr, ddof: int) -> pl.Expr:
    """The variance, exactly 0 when every value is equal (both engines, any algorithm)."""
    return _zero_if_constant(values.min(), values.max(), exact_var(values, ddof))


#: The terms whose fixed-point parts ``_outcome_sums`` adds up, in its columns' order: the score
#: c, d = c − the outcome's minimum and a = c − the cell's, and their squares.
_TERMS = ("c", "d", "dd", "a", "aa")


def _outcome_sums(scored: pl.LazyFrame) -> pl.LazyFrame:
    """Per cell × outcome z of the scored rows: the sums of the fixed-point parts of the
    ``_TERMS`` (``{term}_h``, ``{term}_l``, Int128), ``count``, ``low`` and ``high``."""
    c = pl.col("c")
    d, a = pl.col("d"), pl.col("a")  # shifted by the minimum of the outcome, of the cell
    terms = dict(zip(_TERMS, (c, d, d * d, a, a * a), strict=True))
    parts = {
        f"{name}_{part}": value
        for name, term in terms.items()
        for part, value in zip("hl", fixed_parts(term), strict=True)
    }
    return (
        scored.with_columns(d=c - c.min().over(CELL_ID, "z"), a=c - c.min().over(CELL_ID))
        .select(CELL_ID, "z", "c", **parts)
        .group_by(CELL_ID, "z")
        .agg(pl.col(*parts).sum(), count=pl.len(), low=c.min(), high=c.max())
    )


def _compiled_outcome_sums(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """``_outcome_sums`` of the scored rows in two compiled passes (``moment_sums``), the same
    bits; Polars' when an outcome is not 0 or 1, a score is NaN, the cell ids are sparse, or
    the terms are so large that their exact sums could pass 2⁶³."""
    c = frame["c"].cast(pl.Float64).to_numpy()
    cells = frame[CELL_ID].to_numpy()
    span = float(c.max() - c.min()) if len(c) else 0.0
    largest = max(float(np.abs(c).max()) if len(c) else 0.0, span, span * span)
    n_cells = int(cells.max(initial=0)) + 1
    if (
        not 0 < frame.height < 2**31
        or frame["z"].null_count()
        or frame["z"].is_in([0.0, 1.0]).not_().any()
        or not largest * frame.height < 2**30  # False for NaN too
        or n_cells > 2 * frame.height + 1024
    ):
        return _outcome_sums(frame.lazy()).collect()
    from relcol.metrics._compiled import moment_sums

    groups = 2 * n_cells
    low, high = np.full(groups, np.inf), np.full(groups, -np.inf)
    count = np.zeros(groups, dtype=np.int64)
    sums = np.zeros((4 * len(_TERMS), groups), dtype=np.int64)
    moment_sums(cells, frame["z"].cast(pl.Float64).to_numpy(), c, low, high, count, sums)
    used = np.flatnonzero(count)
    words = pl.DataFrame({str(row): sums[row, used] for row in range(len(sums))})
    parts = {
        f"{term}_{part}": word_pair(str(row), str(row + 1))
        for t, term in enumerate(_TERMS)
        for part, row in (("h", 4 * t), ("l", 4 * t + 2))
    }
    columns = {CELL_ID: used // 2, "z": (used % 2).astype(np.float64), "count": count[used]}
    columns |= {"low": low[used], "high": high[used]}
    return words.select(**parts, **{k: pl.Series(v) for k, v in columns.items()}).select(
        pl.col(name).cast(dtype) for name, dtype in schema.items()
    )


def _zero_if_constant(low: pl.Expr, high: pl.Expr, variance: pl.Expr) -> pl.Expr:
    """``variance``, or exactly 0 when the values' minimum ``low`` equals their maximum."""
    return pl.when(high == low).then(0.0).otherwise(variance)


def _cohens_d(mean1, mean0, var1, var0, n1, n0) -> pl.Expr:
    pooled = (var1 + var0) / 2
    defined = (n1 >= 2) & (n0 >= 2) & (pooled > 0)
    return pl.when(defined).then((mean1 - mean0) / pooled.sqrt())


def _point_biserial(mean1, mean0, var_all, n1, n0) -> pl.Expr:
    n1, n0 = n1.cast(pl.Float64), n0.cast(pl.Float64)
    defined = (n1 > 0) & (n0 > 0) & (var_all > 0)
    r = (mean1 - mean0) * (n1 * n0).sqrt() / ((n1 + n0) * var_all.sqrt())
    return pl.when(defined).then(r)


# The fast path ---------------------------------------------------------------------------------


def discrimination(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    score: str = "confidence",
    confidence: str = "confidence",
    correct: str = "correct",
    proba: str = "proba",
) -> pl.LazyFrame:
    """Discrimination of every group, from its confidence levels and moments.

    Parameters
    ----------
    frame
        Prediction rows (the long table or any frame with the named columns).
    by
        Grouping columns, passed through; default the cell key.
    score
        What ranks the rows: ``"confidence"`` (default), ``"margin"`` (p₍₁₎ − p₍₂₎) or
        ``"entropy"`` (lower entropy ranks higher); the last two need ``proba`` and give
        null metrics for a group with a row that has no vector.
    confidence, correct, proba
        Columns holding the confidence, whether the prediction is right, the vector.

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``score`` (the score's name), ``n`` (Int64), ``auroc``,
        ``aupr_success``, ``aupr_error``, ``fpr_at_95tpr``, ``cohens_d``,
        ``point_biserial`` (Float64); sorted by ``by``. The SQL view ``discrimination`` (and
        the macro ``discrimination(score := …)``) has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import discrimination
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> discrimination(rows, "model").collect().select("auroc", "fpr_at_95tpr").row(0)
    (0.875, 0.5)
    """
    args = (score, confidence, correct, proba)
    cells, rows, ordered = scored_rows("discrimination", frame, by, *args)
    table = discrimination_cells(rows, levels(ordered), score)
    return with_keys(table, cells, check_keys(by))


def discrimination_cells(rows: pl.LazyFrame, level: pl.LazyFrame, score: str) -> pl.LazyFrame:
    """Per cell: the ``discrimination`` columns, from the scored rows (``n``, the rows without
    a score, the moments) and their confidence levels (``levels``).

    Each level's share of a metric is computed elementwise and summed per cell: the exact
    sums in one compiled pass (``exact_sums_by``), the rest by plain aggregations, which
    Polars runs fastest."""
    n, n_correct, accepted = pl.col("n"), pl.col("n_correct"), pl.col("accepted")
    accepted_correct, n_cell = pl.col("accepted_correct"), pl.col("n_cell")
    n_correct_cell = pl.col("n_correct_cell")
    below = n_cell - accepted + n  # rows with a score ≤ the level
    wrong_below = below - (n_correct_cell - accepted_correct + n_correct)
    terms = level.select(
        CELL_ID,
        "n_cell",
        "n_correct_cell",
        # right rows at the level × its ascending mid-rank (the rows below it, plus (n + 1)/2)
        rank_sum=n_correct * (n_cell - accepted + (n + 1) / 2),
        precision_sum=n_correct * (accepted_correct / accepted),
        error_precision_sum=(n - n_correct) * (wrong_below / below),
        false_positives=pl.when(20 * accepted_correct >= 19 * n_correct_cell).then(
            accepted - accepted_correct
        ),
    )
    n1 = pl.col("n_correct_cell").cast(pl.Float64)
    n0 = n_cell - n1
    both = (n1 > 0) & (n0 > 0)
    sums = ("rank_sum", "precision_sum", "error_precision_sum")
    ranked = (
        terms.group_by(CELL_ID)
        .agg(pl.col("n_cell", "n_correct_cell").first(), pl.col("false_positives").min())
        .join(exact_sums_by(terms, CELL_ID, {name: name for name in sums}), on=CELL_ID)
        .select(
            CELL_ID,
            auroc=pl.when(both).then((pl.col("rank_sum") - n1 * (n1 + 1) / 2) / (n1 * n0)),
            aupr_success=pl.when(n1 > 0).then(pl.col("precision_sum") / n1),
            aupr_error=pl.when(n0 > 0).then(pl.col("error_precision_sum") / n0),
            fpr_at_95tpr=pl.when(both).then(pl.col("false_positives") / n0),
        )
    )
    scored = pl.col("missing") == 0
    return (
        scored_cells(rows)
        .join(ranked, on=CELL_ID, how="left")
        .join(_moments(rows), on=CELL_ID, how="left")
        .select(
            CELL_ID,
            score=pl.lit(score),
            n="n",
            **{name: pl.when(scored).then(pl.col(name)) for name in COLUMNS[2:]},
        )
    )


def _moments(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Per cell: ``cohens_d`` and ``point_biserial`` from the score's mean and variance among
    right rows, among wrong rows and overall.

    The bits are those of the row-level builders (``exact_mean`` and ``_variance`` of each
    group's rows), but the group-by holds plain sums only: the shifts d = c − min c of
    ``exact_var`` (per cell and outcome, and per cell for the overall variance) are windows
    taken before it, and the terms' fixed-point parts are summed per (cell, outcome), then
    added up per cell. Integer sums, so the two steps give the bits of one. The sums per
    (cell, outcome) come from two compiled passes over the rows (``_compiled_outcome_sums``):
    0.22 s on one core for 10⁷ rows in 500 cells, where Polars' windows and group-by take
    0.55 s on two."""
    scored = rows.drop_nulls("c").select(CELL_ID, "z", "c")
    schema = _outcome_sums(scored).collect_schema()
    by_outcome = scored.map_batches(
        lambda frame: _compiled_outcome_sums(frame, schema), schema=schema
    ).cache()  # read twice: Polars would run the function for each
    count = pl.col("count")

    def total(name: str) -> pl.Expr:
        return fixed_total(pl.col(f"{name}_h"), pl.col(f"{name}_l"))

    def variance(shifted: str, ddof: int) -> pl.Expr:
        value = variance_from_sums(total(shifted), total(f"{shifted}{shifted}"), count, ddof)
        return _zero_if_constant(pl.col("low"), pl.col("high"), value)

    outcome = by_outcome.select(CELL_ID, "z", count, mean=total("c") / count, var=variance("d", 1))
    right = outcome.filter(pl.col("z") > 0).select(CELL_ID, n1="count", mean1="mean", var1="var")
    wrong = outcome.filter(pl.col("z") == 0).select(CELL_ID, n0="count", mean0="mean", var0="var")
    overall = (
        by_outcome.group_by(CELL_ID)
        .agg(
            pl.col("a_h", "a_l", "aa_h", "aa_l").sum(),
            count.sum(),
            pl.col("low").min(),
            pl.col("high").max(),
        )
        .select(CELL_ID, var_all=variance("a", 0))
    )
    columns = [pl.col(name).fill_null(0) for name in ("n1", "n0")]
    args = ("mean1", "mean0")
    return (
        overall.join(right, on=CELL_ID, how="left")
        .join(wrong, on=CELL_ID, how="left")
        .with_columns(columns)
        .select(
            CELL_ID,
            cohens_d=_cohens_d(*map(pl.col, (*args, "var1", "var0", "n1", "n0"))),
            point_biserial=_point_biserial(*map(pl.col, (*args, "var_all", "n1", "n0"))),
        )
    )
