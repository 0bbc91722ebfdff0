"""The metric tables: every metric of a study's cells, from one pass over its rows.

``calibration()`` is the fast path for docs/metrics.md (one row per cell, its columns
those ``REGISTRY`` lists for the view ``calibration``, each from its builder); the other
tables are in ``_discrimination.py`` and ``_selective.py``. ``metric_tables()`` builds all
of them over shared intermediate frames: the rows with their cell ids, the per-bin sums and
the rows sorted once per cell (equal-mass bins and the confidence levels both read that one
sort). Collect them together (``pl.collect_all``) so Polars computes those frames once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from relcol.checks import (
    check_bins,
    check_choice,
    check_columns,
    check_draws,
    check_keys,
    check_share,
)
from relcol.errors import ParameterError
from relcol.metrics._bins import ORDER
from relcol.metrics._calibration import ece_from_bins
from relcol.metrics._discrimination import discrimination_cells
from relcol.metrics._frames import CELL_ID, cell_rows, with_keys
from relcol.metrics._levels import SCORES, levels, score_column
from relcol.metrics._null import (
    EVENT,
    event_columns,
    event_keys,
    event_statistics,
    null_cells,
    null_draws,
)
from relcol.metrics._proba import class_cells, class_statistics, proba_columns
from relcol.metrics._selective import curve_levels, selective_cells
from relcol.metrics._statistics import (
    bin_frame,
    mass_statistics,
    order_columns,
    outcome_columns,
    sorted_rows,
    width_statistics,
)
from relcol.store import CELL


def calibration(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    bins: int = 15,
    draws: int = 100,
    confidence: str = "confidence",
    correct: str = "correct",
    proba: str | None = "proba",
    y_true: str = "y_true",
    order: Sequence[str] = ORDER,
    events: Sequence[str] = EVENT,
    classwise: bool = True,
) -> pl.LazyFrame:
    """Calibration and proper scores of every group, from its per-bin sufficient statistics.

    Parameters
    ----------
    frame
        Prediction rows (the long table or any frame with the named columns).
    by
        Grouping columns, passed through; default the cell key. A null ``label`` (the
        single-label case) forms one group, as in SQL ``GROUP BY``. With ``by=()`` the
        whole frame is one group (and an empty frame has none).
    bins
        Number of bins M for every binned metric, an int >= 1.
    draws
        Monte Carlo draws R for ``ece_null`` and ``ece_pvalue`` (default 100).
    confidence, correct
        Columns holding the confidence (float) and whether the prediction is right (bool).
    proba, y_true
        The class-probability vector and the evaluation label, for ``classwise_ece``,
        ``brier`` and ``nll``; ``proba=None`` when there is no vector (those are null).
    order
        Columns that break ties in confidence for the equal-mass bins of ``ace``.
    events
        Columns that, with the group and the confidence, identify one prediction event
        (default ``sample_id``, ``seed``, ``y_pred``): rows identical in them are copies of
        one outcome, drawn once by the ``ece_null`` simulation; ``()``: every row is an event.
    classwise
        Whether to compute ``classwise_ece``, which puts each row's K vector entries in their
        bins (K × M sums per group); ``False`` leaves it null where groups are many and K
        large (per predicted class, K² × M sums per cell). ``brier`` and ``nll`` are computed
        either way.

    Returns
    -------
    pl.LazyFrame
        One row per group: ``by`` columns, then ``n`` (Int64), ``accuracy``,
        ``mean_confidence``, ``gap``, ``abs_gap``, ``ece``, ``ece_over``, ``ece_under``, ``mce``, ``mce_n`` (Int64: the
        rows of the bin that attains the MCE, the largest such bin on a tie), ``ace``, ``rmsce``,
        ``classwise_ece``, ``ece_null``, ``ece_excess``, ``ece_pvalue``, ``ece_debiased``,
        ``brier``, ``brier_top``, ``brier_reliability``, ``brier_resolution``,
        ``brier_uncertainty``, ``brier_within``, ``nll``, ``nll_top`` (Float64); sorted by
        ``by``, nulls last. The SQL view ``calibration`` has the same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import calibration
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.3, 0.5, 0.9], "correct": [False, True, True]})
    >>> out = calibration(rows, "model", bins=2, proba=None, order=(), events=()).collect()
    >>> out.select("model", "n", "accuracy").rows()
    [('a', 3, 0.6666666666666666)]
    >>> [round(out[name].item(), 12) for name in ("gap", "ece", "mce", "brier_top")]
    [-0.1, 0.1, 0.1, 0.116666666667]
    """
    bins, draws = check_bins(bins), check_draws(draws)
    columns = (confidence, correct, proba, y_true, order, events)
    keys, cells, rows = _prediction_rows("calibration", frame, by, *columns)
    width = width_statistics(rows, bins)
    ordered, event = _ordered_events(rows, order, events, bins)
    mass = mass_statistics(ordered, bins)
    table = calibration_cells(
        rows, width, mass, event, bins, draws, proba=proba is not None, classwise=classwise
    )
    return with_keys(table, cells, keys)


def calibration_cells(
    rows: pl.LazyFrame,
    width: pl.LazyFrame,
    mass: pl.LazyFrame,
    events: pl.LazyFrame,
    bins: int,
    draws: int,
    *,
    proba: bool,
    classwise: bool = True,
) -> pl.LazyFrame:
    """Per cell id: the ``calibration`` columns, from the rows, their equal-width and
    equal-mass statistics and their prediction events (``event_statistics``); with
    ``classwise=False`` a null ``classwise_ece`` (no class statistics)."""
    # the registry names this module's table functions, so it is read when called
    from relcol.metrics._registry import CALIBRATION_COLUMNS, NEED_PROBA, REGISTRY

    observed = width.group_by(CELL_ID).agg(
        REGISTRY[name].from_bins().alias(name)
        for name in CALIBRATION_COLUMNS
        if REGISTRY[name].from_bins is not None
    )
    adaptive = mass.group_by(CELL_ID).agg(ece_from_bins().alias("ace"))
    out = observed.join(adaptive, on=CELL_ID, how="left").join(
        null_cells(null_draws(width, events, bins, draws), observed), on=CELL_ID, how="left"
    )
    if proba:
        classes = class_cells(rows, class_statistics(rows, bins) if classwise else None)
        out = out.join(classes, on=CELL_ID, how="left")
        complete = pl.col("n_proba") == pl.col("n")
        with_vector = {
            "classwise_ece": pl.when(complete).then(pl.col("classwise_ece")),
            "brier": pl.when(complete).then(pl.col("sum_brier") / pl.col("n")),
            "nll": pl.when(complete).then(pl.col("sum_nll") / pl.col("n")),
        }
    else:
        with_vector = {name: pl.lit(None, pl.Float64) for name in NEED_PROBA}
    return out.select(
        CELL_ID,
        *(with_vector.get(name, pl.col(name)).alias(name) for name in CALIBRATION_COLUMNS),
    )


def metric_tables(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    bins: int = 15,
    draws: int = 100,
    coverage: float = 0.8,
    risk: float = 0.05,
    score: str = "confidence",
    confidence: str = "confidence",
    correct: str = "correct",
    proba: str | None = "proba",
    y_true: str = "y_true",
    order: Sequence[str] = ORDER,
    events: Sequence[str] = EVENT,
) -> dict[str, pl.LazyFrame]:
    """Every metric table of every group, over shared intermediate frames.

    Parameters are those of ``calibration``, ``selective`` and ``discrimination``
    (``score`` ranks rows for the discrimination and selective tables).

    Returns
    -------
    dict of str to pl.LazyFrame
        ``calibration``, ``calibration_bins`` (both binnings, by ``binning`` and ``bin``),
        ``discrimination``, ``selective_curve``, ``selective``: the frames the functions of
        the same names return. Collect them with ``pl.collect_all`` to share the work.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import metric_tables
    >>> rows = pl.DataFrame({"model": "a", "confidence": [0.9, 0.6, 0.6, 0.3], "correct": [True, True, False, False]})
    >>> tables = metric_tables(rows, "model", proba=None, order=(), events=())
    >>> frames = dict(zip(tables, pl.collect_all(tables.values())))
    >>> frames["discrimination"]["auroc"].item(), frames["selective"]["e_aurc"].round(6).item()
    (0.875, 0.083333)
    """
    bins, draws = check_bins(bins), check_draws(draws)
    coverage = check_share("coverage", coverage, low_open=True)
    risk = check_share("risk", risk, low_open=False)
    score = check_choice("score", score, SCORES)
    if score != "confidence" and proba is None:
        raise ParameterError(f"score {score!r} needs the probability vector. Got proba=None.")
    columns = (confidence, correct, proba, y_true, order, events)
    keys, cells, rows = _prediction_rows("metric_tables", frame, by, *columns)
    width = width_statistics(rows, bins)
    ordered, event = _ordered_events(rows, order, events, bins)
    mass = mass_statistics(ordered, bins).cache()
    calibration_table = calibration_cells(
        rows, width, mass, event, bins, draws, proba=proba is not None
    )
    bin_table = pl.concat([bin_frame(mass, "mass"), bin_frame(width, "width")])
    if score == "confidence":
        scored, level = rows, levels(ordered).cache()
    else:
        scored = rows.with_columns(score_column(score, confidence, "p"))
        level = levels(sorted_rows(scored.drop_nulls("c"), 0)).cache()
    return {
        "calibration": with_keys(calibration_table, cells, keys),
        "calibration_bins": with_keys(bin_table, cells, keys, ["binning", "bin"]),
        "discrimination": with_keys(discrimination_cells(scored, level, score), cells, keys),
        "selective_curve": with_keys(
            curve_levels(scored, level, score), cells, keys, presorted=True
        ),
        "selective": with_keys(selective_cells(scored, level, score, coverage, risk), cells, keys),
    }


def _ordered_events(
    rows: pl.LazyFrame, order: Sequence[str], events: Sequence[str], bins: int
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The rows sorted once per cell (``sorted_rows``), carrying the event columns that are
    not tie-breaking columns, and the prediction events stored more than once, read off
    those sorted rows (``event_statistics``)."""
    ordered = sorted_rows(rows, len(order), list(event_columns(events, order)))
    return ordered, event_statistics(ordered, bins, event_keys(events, order))


def _prediction_rows(
    function: str,
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str],
    confidence: str,
    correct: str,
    proba: str | None,
    y_true: str,
    order: Sequence[str],
    events: Sequence[str],
) -> tuple[list[str], pl.LazyFrame, pl.LazyFrame]:
    """The grouping keys, the cells and the rows with the columns every calibration statistic
    reads (outcome, tie-break order, prediction events, the vector's scores when ``proba``),
    after checking that ``frame`` has them (``function`` names the caller in the error)."""
    keys = check_keys(by)
    lazy = frame.lazy()
    extra = (proba, y_true) if proba is not None else ()
    check_columns(function, lazy, [*keys, confidence, correct, *order, *events, *extra])
    columns = outcome_columns(confidence, correct) | order_columns(order)
    columns |= event_columns(events, order)
    finite = {"c": confidence}
    if proba is not None:
        columns |= proba_columns(proba, y_true)
        finite["p"] = proba
    cells, rows = cell_rows(lazy, keys, columns, finite)
    return keys, cells, rows
