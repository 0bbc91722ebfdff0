"""Figure-ready tables for the report: reliability bins with per-bin intervals, confidence
histograms of right and wrong predictions, and the risk–coverage curve on a coverage grid.

The report draws these frames as they are (docs/development.md: it never computes a number). Each
keeps the cell keys of docs/warehouse.md, so every figure can be redrawn from its export.

- ``reliability_bins``: the bins of ``calibration_bins`` at each curve's clean (smallest)
  and worst (largest) severity, with ``accuracy_lo``/``accuracy_hi``: the statistical
  layer's columns when ``calibration_bins`` has them (a Wilson score interval on the bin's
  distinct test samples, none below ``MIN_BIN_SAMPLES``), else a Wilson score interval on
  the bin's rows deflated by the cell's replicates per sample (rows of one sample under
  several seeds and repeats are not independent draws).
- ``confidence_histograms``: from the same equal-width bins, the share of right and of wrong
  predictions in each confidence bin (no extra pass over the rows).
- ``risk_coverage``: ``selective_curve`` read at coverages 1/K, 2/K … 1, each as the risk at
  the curve point with the smallest coverage at or above it (the step reading of
  ``risk_at_coverage``, docs/metrics.md), so a curve of 10⁴ points becomes K rows.
- ``bin_errors`` and ``oracle_risk``: the ECE and MCE of each cell from its reliability
  bins, and the best risk–coverage curve a cell's errors allow; the figures print and draw
  them as the ``reliability`` table's ``cell_ece``/``cell_mce`` and the ``risk_coverage``
  table's ``oracle_risk``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist

import polars as pl

from relcol.analysis._frames import require_columns
from relcol.checks import check_int
from relcol.metrics import grid_value
from relcol.store import CELL

#: The cell keys (``label`` included: null for single-label rows).
KEYS = CELL
#: A curve: a cell without its severity.
CURVE = tuple(k for k in KEYS if k != "severity")
_BIN_INPUTS = (*KEYS, "binning", "bin", "bin_lower", "bin_upper", "n", "accuracy")


def with_stage(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of each curve's clean and worst severity, with ``stage`` ``clean``/``worst``.

    Clean is the smallest severity of the curve (0 for every study), worst the largest; a
    curve with one severity has only a clean stage.
    """
    curve = [pl.col(k) for k in CURVE if k in frame.columns]
    low = pl.col("severity").min().over(curve)
    high = pl.col("severity").max().over(curve)
    return frame.filter((pl.col("severity") == low) | (pl.col("severity") == high)).with_columns(
        stage=pl.when(pl.col("severity") == low).then(pl.lit("clean")).otherwise(pl.lit("worst"))
    )


def reliability_bins(
    calibration_bins: pl.DataFrame,
    samples: pl.DataFrame | None = None,
    *,
    level: float = 0.95,
) -> pl.DataFrame:
    """Reliability-diagram rows: bins at the clean and worst severity, with intervals.

    Parameters
    ----------
    calibration_bins
        The ``calibration_bins`` table (both binnings; docs/warehouse.md names). When it has
        ``accuracy_lo`` and ``accuracy_hi``, those are kept: with ``samples`` (the
        statistical layer's Wilson intervals on each bin's distinct samples) ``interval`` is
        ``"wilson"`` and ``effective_n`` the samples, otherwise ``"bootstrap"``.
    samples
        Cell keys plus ``samples``, the distinct test samples of each cell. Without it each
        row counts as one draw.
    level
        Coverage of the Wilson interval, in (0, 1).

    Returns
    -------
    polars.DataFrame
        The cell keys, ``stage``, ``binning``, ``bin``, ``bin_lower``, ``bin_upper``, ``n``,
        ``share`` (n / the cell's rows), ``mean_confidence``, ``accuracy``, ``accuracy_lo``,
        ``accuracy_hi``, ``interval`` (``"bootstrap"`` or ``"wilson"``), ``effective_n``
        (the n the Wilson interval used; null for bootstrap intervals), and the cell's
        ``cell_ece`` and ``cell_mce`` over its bins of that binning (:func:`bin_errors`,
        the same on every row of the cell: the figures print them).

    Examples
    --------
    >>> import polars as pl
    >>> bins = pl.DataFrame({
    ...     "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
    ...     "severity": 0.0, "label": None, "binning": "width", "bin": [13, 14],
    ...     "bin_lower": [13 / 15, 14 / 15], "bin_upper": [14 / 15, 1.0], "n": [20, 80],
    ...     "mean_confidence": [0.9, 0.97], "accuracy": [0.8, 0.95],
    ... })
    >>> out = reliability_bins(bins)
    >>> out.select("share", "interval", pl.col("accuracy_lo").round(3)).rows()
    [(0.2, 'wilson', 0.584), (0.8, 'wilson', 0.878)]
    """
    require_columns(calibration_bins, _BIN_INPUTS, "calibration_bins")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1). Got {level!r}.")
    frame = with_stage(calibration_bins)
    cell = [*KEYS, "binning"]
    frame = frame.with_columns(share=pl.col("n") / pl.col("n").sum().over(cell))
    given = {"accuracy_lo", "accuracy_hi"} <= set(frame.columns)
    if given and "samples" in frame.columns:  # the statistical layer's: Wilson on samples
        frame = frame.with_columns(
            interval=pl.lit("wilson"), effective_n=pl.col("samples").cast(pl.Float64)
        )
    elif given:
        frame = frame.with_columns(
            interval=pl.lit("bootstrap"), effective_n=pl.lit(None, pl.Float64)
        )
    else:
        deflate = pl.lit(1.0)
        if samples is not None:
            require_columns(samples, (*KEYS, "samples"), "samples")
            frame = _join_cells(frame, samples.select(*KEYS, "samples"))
            deflate = pl.col("samples") / pl.col("n").sum().over(cell)
        effective = (pl.col("n") * deflate).cast(pl.Float64)
        lo, hi = _wilson(pl.col("accuracy"), effective, level)
        frame = frame.with_columns(
            accuracy_lo=lo, accuracy_hi=hi, interval=pl.lit("wilson"), effective_n=effective
        )
    errors = bin_errors(frame, by=("binning",)).rename({"ece": "cell_ece", "mce": "cell_mce"})
    frame = frame.join(
        errors, on=[*KEYS, "binning"], how="left", nulls_equal=True, maintain_order="left"
    )
    return frame.select(
        *KEYS,
        "stage",
        "binning",
        "bin",
        "bin_lower",
        "bin_upper",
        "n",
        "share",
        "mean_confidence",
        "accuracy",
        "accuracy_lo",
        "accuracy_hi",
        "interval",
        "effective_n",
        "cell_ece",
        "cell_mce",
    )


def _wilson(p: pl.Expr, n: pl.Expr, level: float) -> tuple[pl.Expr, pl.Expr]:
    """The Wilson score interval of a proportion p from n draws (n need not be whole)."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * (p * (1 - p) / n + z2 / (4 * n * n)).sqrt()
    # The interval holds p exactly; rounding at p = 0 or 1 could leave it a hair outside.
    low = pl.min_horizontal(centre - half, p).clip(0.0, 1.0)
    high = pl.max_horizontal(centre + half, p).clip(0.0, 1.0)
    return low, high


def confidence_histograms(calibration_bins: pl.DataFrame) -> pl.DataFrame:
    """Right and wrong predictions per equal-width confidence bin, at clean and worst severity.

    Parameters
    ----------
    calibration_bins
        The ``calibration_bins`` table; only its ``binning == "width"`` rows are used.

    Returns
    -------
    polars.DataFrame
        The cell keys, ``stage``, ``bin``, ``bin_lower``, ``bin_upper``, ``correct``
        (bool), ``n`` (rows of that outcome in the bin) and ``share`` (n over the cell's
        rows of that outcome: each outcome's histogram sums to 1; null when the cell has
        none).

    Examples
    --------
    >>> import polars as pl
    >>> bins = pl.DataFrame({
    ...     "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
    ...     "severity": 0.0, "label": None, "binning": "width", "bin": [0, 1],
    ...     "bin_lower": [0.0, 0.5], "bin_upper": [0.5, 1.0], "n": [4, 6],
    ...     "sum_correct": [1.0, 5.0],
    ... })
    >>> confidence_histograms(bins).select("bin", "correct", "n", "share").rows()
    [(0, True, 1, 0.16666666666666666), (0, False, 3, 0.75), (1, True, 5, 0.8333333333333334), (1, False, 1, 0.25)]
    """
    needed = [c for c in _BIN_INPUTS if c != "accuracy"]
    require_columns(calibration_bins, (*needed, "sum_correct"), "calibration_bins")
    width = with_stage(calibration_bins.filter(pl.col("binning") == "width"))
    right = pl.col("sum_correct").round().cast(pl.Int64)
    long = width.select(
        *KEYS,
        "stage",
        "bin",
        "bin_lower",
        "bin_upper",
        pl.concat_list(pl.lit(True), pl.lit(False)).alias("correct"),
        pl.concat_list(right, pl.col("n").cast(pl.Int64) - right).alias("n"),
    ).explode("correct", "n")
    total = pl.col("n").sum().over(*KEYS, "correct")
    return long.with_columns(share=pl.when(total > 0).then(pl.col("n") / total))


def risk_coverage(
    selective_curve: pl.LazyFrame | pl.DataFrame,
    *,
    points: int = 50,
    by: Sequence[str] = (*KEYS, "score"),
) -> pl.LazyFrame:
    """The risk–coverage curve of every cell at coverages 1/points, 2/points … 1.

    Parameters
    ----------
    selective_curve
        The ``selective_curve`` table (lazy or not): cell keys, ``score``, ``threshold``,
        ``coverage``, ``risk``; the rows of a cell together, coverage ascending within it
        (as ``relcol.metrics.selective_curve`` and the SQL view give them).
    points
        Grid size K >= 1.
    by
        The columns that tell the curve's cells apart (default: the cell keys and
        ``score``; a cell id will do).

    Returns
    -------
    polars.LazyFrame
        The ``by`` columns (by default the cell keys and ``score``), ``coverage`` (the grid
        value κ), ``risk`` and ``threshold`` of the curve point with the smallest coverage ≥ κ,
        and ``oracle_risk`` (:func:`oracle_risk` at κ from the cell's risk at full coverage,
        the figures' dotted curve); K rows per cell, the cells in the curve's order, coverage
        ascending. Grid values past a curve that stops short of coverage 1 have no risk.

    Examples
    --------
    >>> import polars as pl
    >>> curve = pl.DataFrame({
    ...     "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
    ...     "severity": 0.0, "label": None, "score": "confidence",
    ...     "threshold": [0.9, 0.6, 0.3], "coverage": [0.25, 0.75, 1.0], "risk": [0.0, 1 / 3, 0.5],
    ... })
    >>> risk_coverage(curve, points=4).collect().select("coverage", "risk").rows()
    [(0.25, 0.0), (0.5, 0.3333333333333333), (0.75, 0.3333333333333333), (1.0, 0.5)]
    """
    check_int("points", points)
    keys = list(by)
    first, reached = pl.col("__first"), pl.col("__reached")
    j = pl.col("__j")
    return (
        selective_curve.lazy()
        .select(*keys, "coverage", "risk", "threshold")
        .with_columns(
            __first=(pl.int_range(pl.len()) == 0)
            | pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift()) for k in keys),
            __reached=_reached(pl.col("coverage"), points),
        )
        # One pass over the curve in its order, no join: a point serves the grid values from
        # the one above the point before it in its cell (from 1/K at the cell's first point)
        # up to its own coverage; the last point of a cell also serves those past it, with
        # no risk (a curve that stops short of coverage 1). At most K points of a cell serve.
        .with_columns(
            __cell=first.cum_sum(),
            __from=pl.when(first).then(0).otherwise(reached.shift()) + 1,
            __to=pl.when(first.shift(-1, fill_value=True)).then(points).otherwise(reached),
        )
        .filter(pl.col("__to") >= pl.col("__from"))
        .with_columns(__j=pl.int_ranges("__from", pl.col("__to") + 1, dtype=pl.Int64))
        .explode("__j")
        .with_columns(
            # j/K and accepted/n are both correctly rounded: equal shares compare equal
            coverage=grid_value(j, points),
            risk=pl.when(j <= reached).then("risk"),
            threshold=pl.when(j <= reached).then("threshold"),
        )
        .with_columns(oracle_risk("coverage", pl.col("risk").last().over("__cell")))
        .select(*keys, "coverage", "risk", "threshold", "oracle_risk")
    )


def _reached(coverage: pl.Expr, points: int) -> pl.Expr:
    """How many grid values j/K (j = 1 … K) are at most ``coverage``: ⌊coverage·K⌋, corrected
    by one where the rounded product and the rounded j/K disagree, so the count is the one the
    float comparison of a search of the grid gives."""
    guess = (coverage * points).floor().clip(0, points).cast(pl.Int64)
    return (
        pl.when((guess > 0) & (grid_value(guess, points) > coverage))
        .then(guess - 1)
        .when((guess < points) & (grid_value(guess + 1, points) <= coverage))
        .then(guess + 1)
        .otherwise(guess)
    )


def bin_errors(reliability: pl.DataFrame, by: Sequence[str] = ()) -> pl.DataFrame:
    """ECE and MCE of every cell from its reliability bins (docs/metrics.md).

    Parameters
    ----------
    reliability
        Rows of the ``reliability`` table: cell keys, ``n``, ``mean_confidence``,
        ``accuracy``; one binning unless ``by`` names ``binning``.
    by
        Further columns that split a cell (``binning``).

    Returns
    -------
    polars.DataFrame
        The cell keys present, ``ece`` = Σₘ (nₘ/n)·|accₘ − confₘ| and ``mce`` =
        maxₘ |accₘ − confₘ| over the non-empty bins: on equal-width bins, the
        ``calibration`` table's ``ece`` and ``mce`` of the same M.

    Examples
    --------
    >>> import polars as pl
    >>> bins = pl.DataFrame({"model": "m", "n": [20, 80], "mean_confidence": [0.9, 0.97],
    ...                      "accuracy": [0.8, 0.95]})
    >>> bin_errors(bins).select(pl.col("ece", "mce").round(4)).rows()
    [(0.036, 0.1)]
    """
    from relcol.metrics import ece_from_bins, mce_from_bins

    require_columns(reliability, ("n", "mean_confidence", "accuracy"), "reliability")
    keys = [k for k in KEYS if k in reliability.columns] + list(by)
    sums = reliability.with_columns(
        sum_confidence=pl.col("mean_confidence") * pl.col("n"),
        sum_correct=pl.col("accuracy") * pl.col("n"),
    )
    errors = [ece_from_bins(), mce_from_bins()]
    if not keys:
        return sums.select(errors)
    return sums.group_by(keys, maintain_order=True).agg(errors)


def oracle_risk(coverage: pl.Expr | str, error_rate: pl.Expr | str) -> pl.Expr:
    """The smallest selective risk any confidence could reach at ``coverage``.

    A confidence that ranks every right prediction above every wrong one accepts
    right predictions first: with an overall error rate e, the risk is 0 up to coverage
    1 − e and (κ − (1 − e)) / κ beyond it, ending at e at full coverage (Geifman et al.,
    2019, the "optimal" curve of AURC). Null where e is null (a curve that stops short of
    full coverage has none). Between this curve and a model's own curve lies
    what its ranking of right and wrong predictions loses.

    Examples
    --------
    >>> import polars as pl
    >>> curve = pl.DataFrame({"coverage": [0.5, 0.9, 1.0], "error_rate": 0.2})
    >>> curve.select(oracle_risk("coverage", "error_rate").round(4)).to_series().to_list()
    [0.0, 0.1111, 0.2]
    """
    c = pl.col(coverage) if isinstance(coverage, str) else coverage
    e = pl.col(error_rate) if isinstance(error_rate, str) else error_rate
    # max_horizontal skips nulls: an unknown error rate would read as a risk of 0
    risk = pl.max_horizontal(c - (1.0 - e), pl.lit(0.0)) / c
    return pl.when(e.is_not_null()).then(risk).alias("oracle_risk")


def _join_cells(frame: pl.DataFrame, other: pl.DataFrame) -> pl.DataFrame:
    return frame.join(other, on=list(KEYS), how="left", nulls_equal=True, maintain_order="left")


def figure_tables(
    tables: Mapping[str, pl.DataFrame], samples: pl.DataFrame | None = None
) -> dict[str, pl.DataFrame]:
    """The figure-ready tables derived from the report's ``calibration_bins``.

    ``reliability`` (:func:`reliability_bins`) and ``confidence_histogram``
    (:func:`confidence_histograms`); nothing when there is no ``calibration_bins`` table.
    ``samples``: as for :func:`reliability_bins`.
    """
    bins = tables.get("calibration_bins")
    if bins is None or bins.is_empty():
        return {}
    return {
        "reliability": reliability_bins(bins, samples),
        "confidence_histogram": confidence_histograms(bins),
    }
