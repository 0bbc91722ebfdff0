"""Where trust breaks: clean overconfidence, the break point, d*, the traffic light and the
action (docs/statistics.md).

Every answer here is a test with a stated error rate, decided from the paired bootstrap's
replicates (``relcol.analysis.bootstrap``), one-sided in the direction of harm. A curve is
(study, dataset, model, corruption, label) across its severities d₁ < … < d_K, with Δ(d) the
gap mean confidence − accuracy of the cell at d.

- **Already overconfident when clean** (``clean_overconfident``): the one-sided lower bound
  of Δ(0) at level 1 − α exceeds τ. One test per curve.
- **Break point** (``break_point``): degradation-induced harm, free of the binned-ECE floor.
  At each d > 0 the hypothesis "Δ(d) − Δ(0) ≤ margin" is rejected when the α-quantile of the
  paired replicate differences exceeds the margin. The severities are tested in a **fixed
  sequence from the most severe down**, each at level α, stopping at the first that is not
  rejected; the break point is the last rejected, so the change is significant there and at
  every more severe level. The sequence controls the family-wise error over the severities
  at α (a later test is only reached after every earlier one rejected). An improvement
  (Δ falling) is never a break.
- **d*** (``d_star``): where the model becomes confidently wrong because of the
  degradation: the same fixed sequence, rejecting at d only when both Δ(d) > τ and
  Δ(d) − Δ(0) > margin are significant (an intersection–union test, level α). So d* ≥ the
  break point, and a model only overconfident when clean, and no worse after, has no d*.
  Both are reported with the accuracy and mean confidence there ("confidently wrong":
  confidence stays high while accuracy falls).
- **The traffic light**, per cell, from bounds at level 1 − α/K (Bonferroni over the
  curve's K severities, so a curve shows an undeserved red with probability at most α):

  - red when something is significantly beyond the amber thresholds: the calibration
    error's lower bound > ``amber_ece``, AUROC's upper bound < ``amber_auroc``, or a
    well-filled bin (``mce_min_samples`` samples' worth of rows) whose |accuracy −
    confidence| has a lower bound > ``amber_mce`` (Bonferroni over the judged bins);
  - green when everything is significantly within the green thresholds: the calibration
    error's upper bound ≤ ``green_ece``, AUROC's lower bound ≥ ``green_auroc`` (when AUROC is
    defined), and the MCE over the well-filled bins ≤ ``green_mce``;
  - amber otherwise; no light for a cell with fewer than ``min_samples`` test samples.

  The calibration error's upper bound is the plug-in ECE's (its upward bias makes the bound
  conservative); its lower bound is the larger of |Δ|'s and (ECE − ECE₀)'s, two quantities
  whose expectation does not exceed the true ECE (|Δ| ≤ ECE always; ECE₀ is at least the
  plug-in's bias). ``deciding_metric`` names what made the light: for red the first of
  AUROC, calibration error, MCE beyond its amber threshold; for amber weak discrimination
  first, then a calibration error or MCE whose estimate is beyond green, then whichever
  bound was too wide. The action follows the light and never contradicts it: green → deploy;
  red or amber for discrimination (AUROC significantly below ``retrain_auroc``, or its
  estimate below it) → retrain; red for calibration → isotonic regression, then
  re-evaluate; amber with the calibration error significantly above ``green_ece`` →
  temperature scaling; an amber no estimate explains → more test data (the bounds are too
  wide to call it).

The curve's ``traffic_light`` is its worst cell's, ``light_severity`` the smallest severity
showing it, with that cell's ``deciding_metric`` and ``action``; ``clean_traffic_light`` is
the light at severity 0. Every threshold is a field of ``TrafficLight``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from relcol._cluster import available_cores
from relcol.analysis._bootstrap import quantile_lerp, row_blocks
from relcol.analysis._frames import require_columns
from relcol.checks import check_interval

#: Default τ: the overconfidence margin of the clean test and of d*.
TAU = 0.05
#: Default margin of the break point: the smallest change of Δ that counts as harm.
MARGIN = 0.02
#: Light colours, best first (their index is their badness).
LIGHTS = ("green", "amber", "red")
ACTIONS = {
    "retrain": "retrain",
    "deploy": "deploy",
    "scaling": "temperature scaling",
    "isotonic": "isotonic regression, then re-evaluate",
    "data": "more test data",
}


@dataclass(frozen=True)
class TrafficLight:
    """Thresholds of the traffic light and of the recommended action (docs/statistics.md)."""

    green_ece: float = 0.05
    green_auroc: float = 0.80
    green_mce: float = 0.15
    amber_ece: float = 0.15
    amber_auroc: float = 0.75
    amber_mce: float = 0.20
    retrain_auroc: float = 0.80
    #: A cell with fewer distinct test samples gets no light.
    min_samples: int = 30
    #: MCE is judged only over bins holding at least this many samples' worth of rows
    #: (the bin's rows × the cell's samples / the cell's rows).
    mce_min_samples: int = 30


#: The thresholds of docs/statistics.md.
DEFAULT_LIGHTS = TrafficLight()

#: Columns of ``cell_evidence`` after the cell keys.
EVIDENCE = (
    "samples",
    "accuracy",
    "mean_confidence",
    "gap",
    "gap_lower",
    "change",
    "change_lower",
    "light_level",
    "ece",
    "ece_upper",
    "calibration_lower",
    "auroc",
    "auroc_lower",
    "auroc_upper",
    "mce_judged",
    "mce_samples",
    "mce_lower",
)

#: Columns of ``thresholds`` after the curve keys.
COLUMNS = (
    "tau",
    "margin",
    "alpha",
    "clean_gap",
    "clean_gap_lo",
    "clean_overconfident",
    "break_point",
    "break_accuracy",
    "break_confidence",
    "break_change",
    "break_change_lo",
    "d_star",
    "d_star_accuracy",
    "d_star_confidence",
    "d_star_gap",
    "d_star_gap_lo",
    "traffic_light",
    "light_severity",
    "deciding_metric",
    "action",
    "clean_traffic_light",
    "worst_severity",
)


# Evidence: estimates and one-sided bounds per cell, from the replicates -----------------------


def cell_evidence(
    replicates,
    points: pl.DataFrame,
    bins: pl.DataFrame | None = None,
    samples: pl.DataFrame | None = None,
    *,
    alpha: float = 0.05,
    lights: TrafficLight = DEFAULT_LIGHTS,
) -> pl.DataFrame:
    """Per cell: the estimates and one-sided bounds the verdicts are decided from.

    Parameters
    ----------
    replicates
        ``relcol.analysis.bootstrap``'s result (``gap``, ``ece`` and, when present,
        ``auroc`` replicates; ``bins["width"]``, each bin's accuracy per replicate).
    points
        One row per cell: the cell keys, ``accuracy``, ``mean_confidence``, ``gap``,
        ``ece``, ``ece_null`` and ``auroc`` when known (the point-estimate tables joined).
    bins
        ``calibration_bins`` (``binning``, ``bin``, ``n``, ``mean_confidence``): the bins
        the MCE is judged over. None: MCE not judged.
    samples
        One row per cell with its distinct test samples ``samples``. None: every cell counts
        as having enough samples, and a bin's samples are its rows.
    alpha, lights
        The level (bounds at α for the tests of Δ, at α/K for the lights of a curve of K
        severities) and the thresholds.

    Returns
    -------
    polars.DataFrame
        The cell keys, then ``samples``; ``accuracy``, ``mean_confidence``, ``gap`` and
        ``gap_lower`` (its α-quantile); ``change`` = Δ(d) − Δ(0) and ``change_lower`` (the
        α-quantile of the paired replicate differences; null at d = 0); ``light_level``
        (α/K); ``ece`` with ``ece_upper``; ``calibration_lower``; ``auroc`` with
        ``auroc_lower`` and ``auroc_upper``; ``mce_judged`` (over the well-filled bins),
        ``mce_samples`` (its bin's samples' worth of rows) and ``mce_lower``.
    """
    keys = list(replicates.keys)
    curve = [k for k in keys if k != "severity"]
    frame = replicates.cells.with_row_index("_cell").join(
        points, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    if samples is not None:
        frame = frame.join(
            samples.select(*keys, "samples"),
            on=keys,
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    frame = frame.with_columns(
        _clean=pl.col("_cell").filter(pl.col("severity") == 0.0).first().over(curve),
        _levels=pl.len().over(curve),
    )
    n_cells = frame.height
    index = frame["_cell"].to_numpy().astype(np.int64)
    clean = frame["_clean"].to_numpy()
    clean_index = np.where(np.isnan(clean.astype(np.float64)), -1, clean).astype(np.int64)
    light_level = alpha / frame["_levels"].to_numpy().astype(np.float64)
    values = replicates.values

    def column(name: str) -> np.ndarray:
        if name not in frame.columns:
            return np.full(n_cells, np.nan)
        return frame[name].cast(pl.Float64).fill_null(np.nan).to_numpy()

    gap = values["gap"][index]
    gap_lower, gap_light_lower, gap_light_upper = _quantiles(
        gap, alpha, light_level, 1 - light_level
    )
    has_clean = (clean_index >= 0) & (frame["severity"].to_numpy() != 0.0)
    change = np.full(n_cells, np.nan)
    change_lower = np.full(n_cells, np.nan)
    if has_clean.any():
        rows = np.flatnonzero(has_clean)
        reference = clean_index[rows]
        change[rows] = column("gap")[rows] - column("gap")[_position(index, reference)]
        paired = gap[rows] - values["gap"][reference]
        (change_lower[rows],) = _quantiles(paired, alpha)
    ece = values["ece"][index]
    (ece_upper,) = _quantiles(ece, 1 - light_level)
    absolute_gap_lower = np.maximum(gap_light_lower, -gap_light_upper)
    calibration_lower = np.maximum(absolute_gap_lower, 0.0)
    null = column("ece_null")
    (excess_lower,) = _quantiles(ece - null[:, None], light_level)
    calibration_lower = np.fmax(calibration_lower, excess_lower)
    if "auroc" in values:
        auroc = values["auroc"][index]
        auroc_lower, auroc_upper = _quantiles(auroc, light_level, 1 - light_level)
    else:
        auroc_lower = auroc_upper = np.full(n_cells, np.nan)
    judged = _judged_mce(frame, replicates, bins, light_level, lights)
    out = frame.select(keys).with_columns(
        samples=frame["samples"] if "samples" in frame.columns else pl.lit(None, pl.Int64),
        accuracy=pl.Series(column("accuracy")),
        mean_confidence=pl.Series(column("mean_confidence")),
        gap=pl.Series(column("gap")),
        gap_lower=pl.Series(gap_lower),
        change=pl.Series(change),
        change_lower=pl.Series(change_lower),
        light_level=pl.Series(light_level),
        ece=pl.Series(column("ece")),
        ece_upper=pl.Series(ece_upper),
        calibration_lower=pl.Series(calibration_lower),
        auroc=pl.Series(column("auroc")),
        auroc_lower=pl.Series(auroc_lower),
        auroc_upper=pl.Series(auroc_upper),
        **judged,
    )
    return out.with_columns(pl.col(pl.Float64).fill_nan(None))


def _position(index: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Rows of ``index`` (a permutation of the cells) holding ``cells``."""
    where = np.empty(len(index), dtype=np.int64)
    where[index] = np.arange(len(index))
    return where[cells]


def _quantiles(values: np.ndarray, *levels: float | np.ndarray) -> list[np.ndarray]:
    """Row-wise linear quantiles over each row's defined (finite) replicates, one array per
    level of ``levels`` (a scalar, or one per row): numpy's, bit for bit (``np.nanquantile``
    of the row's finite entries); NaN for a row with fewer than half of them defined (as the
    percentile intervals). Each block of rows is sorted once for every level, the blocks on
    threads (numpy's sort releases the GIL)."""
    values = np.asarray(values, dtype=np.float64)
    n_rows = values.shape[0]
    wanted = [np.broadcast_to(np.asarray(level, dtype=np.float64), (n_rows,)) for level in levels]
    out = [np.full(n_rows, np.nan) for _ in levels]
    if values.size == 0:
        return out

    def block(rows: slice) -> None:
        part = values[rows]
        finite = np.isfinite(part)
        ordered = np.sort(np.where(finite, part, np.inf), axis=1)
        defined = finite.sum(1)
        enough = defined * 2 >= part.shape[1]
        last = np.maximum(defined - 1, 0)
        for level, into in zip(wanted, out, strict=True):
            position = last * level[rows]
            below = np.floor(position).astype(np.int64)
            above = np.minimum(below + 1, last)
            a = np.take_along_axis(ordered, below[:, None], 1)[:, 0]
            b = np.take_along_axis(ordered, above[:, None], 1)[:, 0]
            with np.errstate(invalid="ignore"):  # rows without enough replicates: inf − inf
                into[rows] = np.where(enough, quantile_lerp(a, b, position - below), np.nan)

    blocks = list(row_blocks(*values.shape))
    if len(blocks) == 1:
        block(blocks[0])
    else:
        with ThreadPoolExecutor(min(len(blocks), max(1, available_cores()))) as pool:
            list(pool.map(block, blocks))
    return out


#: Judged bins whose replicates ``_judged_mce`` holds at once (16 MB per array at B = 1000).
_MCE_ROWS = 2048


def _judged_mce(
    frame: pl.DataFrame,
    replicates,
    bins: pl.DataFrame | None,
    light_level: np.ndarray,
    lights: TrafficLight,
) -> dict[str, pl.Series]:
    """``mce_judged``, ``mce_samples`` and ``mce_lower`` per cell of ``frame`` (rows in its
    order, ``_cell`` the replicates' cell index): the largest |accuracy − confidence| over
    the bins holding ``mce_min_samples`` samples' worth of rows (ties: the fuller bin), that
    bin's samples' worth, and the largest lower bound of |accuracy − confidence| over those
    bins, each at level α/K divided by their number (Bonferroni)."""
    n_cells = frame.height
    judged, judged_samples, lower = (np.full(n_cells, np.nan) for _ in range(3))
    accuracy = replicates.bins.get("width")
    if bins is None or accuracy is None or bins.is_empty():
        return _series(mce_judged=judged, mce_samples=judged_samples, mce_lower=lower)
    keys = list(replicates.keys)
    width = bins.filter(pl.col("binning") == "width") if "binning" in bins.columns else bins
    share = (
        pl.col("samples") / pl.col("_rows")
        if {"samples", "n"} <= set(frame.columns)
        else pl.lit(1.0)
    )
    cells = frame.with_row_index("_row").rename({"n": "_rows"}, strict=False)
    cells = cells.select("_row", "_cell", *keys, _share=share.cast(pl.Float64).fill_null(1.0))
    table = (
        width.select(*keys, "bin", "n", "mean_confidence", "accuracy")
        .join(cells, on=keys, how="inner", nulls_equal=True)
        .with_columns(_samples=pl.col("n") * pl.col("_share"))
        .filter(pl.col("_samples") >= lights.mce_min_samples)
        .with_columns(_gap=(pl.col("accuracy") - pl.col("mean_confidence")).abs())
        .sort("_row", "_gap", "n", descending=[False, True, True])
    )
    if table.is_empty():
        return _series(mce_judged=judged, mce_samples=judged_samples, mce_lower=lower)
    # one row per (cell, judged bin), a cell's bins together, its largest gap first
    row = table["_row"].to_numpy()
    first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    size = np.diff(np.r_[first, len(row)])
    judged[row[first]] = table["_gap"].to_numpy()[first]
    judged_samples[row[first]] = table["_samples"].to_numpy()[first]
    cell = table["_cell"].to_numpy()
    bin_index = table["bin"].to_numpy().astype(np.int64)
    confidence = table["mean_confidence"].to_numpy()
    level = light_level[row] / np.repeat(size, size)  # α/K over the cell's K bins
    bounds = np.empty(len(row))
    for lo in range(0, len(row), _MCE_ROWS):  # each bin's quantiles from its own replicates
        hi = min(lo + _MCE_ROWS, len(row))
        replicate = accuracy[cell[lo:hi], bin_index[lo:hi]].astype(np.float64)
        replicate -= confidence[lo:hi, None]
        low, high = _quantiles(replicate, level[lo:hi], 1 - level[lo:hi])
        bounds[lo:hi] = np.fmax(low, -high)
    lower[row[first]] = np.fmax.reduceat(bounds, first)  # NaN only where every bin's is
    return _series(mce_judged=judged, mce_samples=judged_samples, mce_lower=lower)


def _series(**arrays: np.ndarray) -> dict[str, pl.Series]:
    return {name: pl.Series(name, values) for name, values in arrays.items()}


# Lights -----------------------------------------------------------------------------------------


def cell_lights(evidence: pl.DataFrame, lights: TrafficLight = DEFAULT_LIGHTS) -> pl.DataFrame:
    """``evidence`` (from ``cell_evidence``) with ``traffic_light``, ``deciding_metric`` and
    ``action`` per cell.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.analysis import cell_lights
    >>> cells = pl.DataFrame({
    ...     "samples": [500, 500, 500, 500], "ece": [0.02, 0.09, 0.03, 0.04],
    ...     "ece_upper": [0.04, 0.12, 0.09, 0.06], "calibration_lower": [0.0, 0.07, 0.0, 0.0],
    ...     "auroc": [0.9, 0.9, 0.9, 0.7], "auroc_lower": [0.85, 0.85, 0.85, 0.6],
    ...     "auroc_upper": [0.95, 0.95, 0.95, 0.74], "mce_judged": [0.05, 0.1, 0.05, 0.05],
    ...     "mce_lower": [0.0, 0.0, 0.0, 0.0]})
    >>> cell_lights(cells).select("traffic_light", "deciding_metric", "action").rows()
    [('green', None, 'deploy'), ('amber', 'ece', 'temperature scaling'), ('amber', 'ece', 'more test data'), ('red', 'auroc', 'retrain')]
    """
    require_columns(
        evidence,
        ("ece_upper", "calibration_lower", "auroc", "auroc_lower", "auroc_upper"),
        "evidence",
    )
    t = lights
    col = pl.col

    def present(name: str) -> pl.Expr:
        return col(name) if name in evidence.columns else pl.lit(None, pl.Float64)

    mce_judged, mce_lower = present("mce_judged"), present("mce_lower")
    red = {
        "auroc": col("auroc_upper") < t.amber_auroc,
        "ece": col("calibration_lower") > t.amber_ece,
        "mce": mce_lower > t.amber_mce,
    }
    blocks_green = {
        "ece": ~(col("ece_upper") <= t.green_ece).fill_null(False),
        "auroc": (col("auroc_lower") < t.green_auroc)
        | (col("auroc").is_not_null() & col("auroc_lower").is_null()),
        "mce": mce_judged > t.green_mce,
    }
    is_red = pl.any_horizontal(*(e.fill_null(False) for e in red.values()))
    is_amber = pl.any_horizontal(*(e.fill_null(False) for e in blocks_green.values()))
    enough = (
        col("samples").fill_null(t.min_samples) >= t.min_samples
        if "samples" in evidence.columns
        else pl.lit(True)
    )
    light = (
        pl.when(~enough)
        .then(None)
        .when(is_red)
        .then(pl.lit("red"))
        .when(is_amber)
        .then(pl.lit("amber"))
        .otherwise(pl.lit("green"))
    )
    weak = ((col("auroc_upper") < t.retrain_auroc) | (col("auroc") < t.retrain_auroc)).fill_null(
        False
    )
    beyond = {  # amber for a reason an estimate shows, not only for a wide bound
        "ece": (col("calibration_lower") > t.green_ece).fill_null(False),
        "mce": (mce_judged > t.green_mce).fill_null(False),
    }
    deciding = pl.when(~enough | ~(is_red | is_amber)).then(None)
    for name in ("auroc", "ece", "mce"):
        deciding = deciding.when(is_red & red[name].fill_null(False)).then(pl.lit(name))
    deciding = deciding.when(weak).then(pl.lit("auroc"))
    for name, shown in beyond.items():
        deciding = deciding.when(shown).then(pl.lit(name))
    for name in ("auroc", "ece", "mce"):
        deciding = deciding.when(blocks_green[name].fill_null(False)).then(pl.lit(name))
    action = (
        pl.when(~enough)
        .then(None)
        .when(~(is_red | is_amber))
        .then(pl.lit(ACTIONS["deploy"]))
        .when(weak)
        .then(pl.lit(ACTIONS["retrain"]))
        .when(is_red)
        .then(pl.lit(ACTIONS["isotonic"]))
        .when(beyond["ece"] | beyond["mce"])
        .then(pl.lit(ACTIONS["scaling"]))
        .otherwise(pl.lit(ACTIONS["data"]))
    )
    return evidence.with_columns(traffic_light=light, deciding_metric=deciding, action=action)


# The verdicts of a curve -------------------------------------------------------------------------


def check_tau(tau: object) -> float:
    """``tau`` (the d* margin on the gap) as a float in [0, 1): the gap is a difference of
    two shares, so a margin of 1 or more is never exceeded."""
    return check_interval("tau", tau, "[0, 1)")


def thresholds(
    evidence: pl.DataFrame,
    *,
    tau: float = TAU,
    margin: float = MARGIN,
    alpha: float | None = None,
    lights: TrafficLight = DEFAULT_LIGHTS,
) -> pl.DataFrame:
    """Where trust breaks, one row per curve.

    Parameters
    ----------
    evidence
        ``cell_evidence``'s table: one row per cell with the estimates and bounds.
    tau
        The overconfidence margin of the clean test and of d*, a number >= 0.
    margin
        The break point's margin on Δ(d) − Δ(0), a number >= 0.
    alpha
        The level the evidence was computed at (recorded in the ``alpha`` column).
    lights
        Thresholds of the traffic light and the action.

    Returns
    -------
    polars.DataFrame
        The curve keys (``study``, ``dataset``, ``model``, ``corruption``, ``label``), then
        the columns of ``COLUMNS``: ``tau``, ``margin``, ``alpha``; ``clean_gap`` with its
        one-sided lower bound ``clean_gap_lo`` and ``clean_overconfident``;
        ``break_point`` with ``break_accuracy``, ``break_confidence``, ``break_change``
        (Δ(d) − Δ(0)) and its lower bound ``break_change_lo``; ``d_star`` with
        ``d_star_accuracy``, ``d_star_confidence``, ``d_star_gap`` and ``d_star_gap_lo``;
        ``traffic_light``, ``light_severity``, ``deciding_metric``, ``action``,
        ``clean_traffic_light``, ``worst_severity``. Curves in the evidence's order.
    """
    tau = check_tau(tau)
    check_interval("margin", margin, "[0, 1)")
    require_columns(
        evidence,
        ("study", "dataset", "model", "corruption", "severity", "accuracy", "mean_confidence"),
        "evidence",
    )
    require_columns(evidence, ("gap", "gap_lower", "change", "change_lower"), "evidence")
    keys = [
        k
        for k in ("study", "dataset", "model", "corruption", "severity", "label")
        if k in evidence.columns
    ]
    curve = [k for k in keys if k != "severity"]
    lit = cell_lights(evidence, lights).with_columns(
        _badness=pl.col("traffic_light").replace_strict(list(LIGHTS), [0, 1, 2], default=None)
    )
    ordered = lit.sort([*curve, "severity"], nulls_last=True, maintain_order=True)
    degraded = pl.col("severity") > 0
    breaks = degraded & (pl.col("change_lower") > margin).fill_null(False)
    confident = breaks & (pl.col("gap_lower") > tau).fill_null(False)
    badness = pl.col("_badness")
    first_worst = ((badness == badness.max()) & badness.is_not_null()).arg_max()
    clean = pl.col("severity") == 0.0
    summary = ordered.group_by(curve, maintain_order=True).agg(
        clean_gap=pl.col("gap").filter(clean).first(),
        clean_gap_lo=pl.col("gap_lower").filter(clean).first(),
        **_sequence("break", breaks, {"change": "break_change", "change_lower": "break_change_lo"}),
        **_sequence("d_star", confident, {"gap": "d_star_gap", "gap_lower": "d_star_gap_lo"}),
        traffic_light=pl.col("traffic_light").get(first_worst),
        light_severity=pl.col("severity").get(first_worst),
        deciding_metric=pl.col("deciding_metric").get(first_worst),
        action=pl.col("action").get(first_worst),
        clean_traffic_light=pl.col("traffic_light").filter(clean).first(),
        worst_severity=pl.col("severity").max(),
        _any_light=badness.is_not_null().any(),
    )
    unjudged = ~pl.col("_any_light")
    summary = summary.with_columns(
        pl.when(unjudged).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("traffic_light", "light_severity", "deciding_metric", "action")
    ).drop("_any_light")
    return summary.with_columns(
        tau=pl.lit(float(tau)),
        margin=pl.lit(float(margin)),
        alpha=pl.lit(None if alpha is None else float(alpha), pl.Float64),
        clean_overconfident=(pl.col("clean_gap_lo") > tau),
    ).select(*curve, *COLUMNS)


def _sequence(name: str, rejected: pl.Expr, extra: Mapping[str, str]) -> dict[str, pl.Expr]:
    """The fixed sequence from the most severe level down, over a curve's rows sorted by
    severity: the first row of the final run of rejections, when the last row is rejected.

    ``name`` names the outputs (``<name>`` or ``break_point`` for the severity,
    ``<name>_accuracy``, ``<name>_confidence``) and ``extra`` maps further evidence columns
    to output names."""
    severity = "break_point" if name == "break" else name
    # rows from the last non-rejected one (exclusive) to the end are the run; its first row
    # is at the number of rows minus the run's length
    run = rejected.cast(pl.Int64).reverse().cum_prod().sum()
    first = pl.len() - run
    found = run > 0

    def at(column: str) -> pl.Expr:
        return pl.when(found).then(pl.col(column).get(first.clip(0, pl.len() - 1)))

    out = {
        severity: at("severity"),
        f"{name}_accuracy": at("accuracy"),
        f"{name}_confidence": at("mean_confidence"),
    }
    return out | {alias: at(column) for column, alias in extra.items()}


# Scores that are not probabilities -------------------------------------------------------------

#: What the verdicts of a confidence source that is a score (an ordering mapped into [0, 1],
#: not a probability) say instead of a light.
SCORE_ACTION = (
    "no verdict: a score, not a probability; compare it by discrimination and recalibrate it "
    "(relcol recalibrate) before judging its calibration"
)
#: The columns a score gets a note in instead of a verdict (``withhold_scores``).
NOTES = ("deciding_metric", "action")
#: The verdict columns a score gets none of: the columns of ``COLUMNS`` from the clean test on
#: but its notes and the worst severity (its estimates and bounds stay).
VERDICTS = tuple(
    c
    for c in COLUMNS[COLUMNS.index("clean_overconfident") :]
    if c not in (*NOTES, "worst_severity")
)


def withhold_scores(thresholds: pl.DataFrame, scores: Sequence[str]) -> pl.DataFrame:
    """``thresholds`` with no calibration verdict for the
    confidence sources in ``scores``: their verdict columns null, ``deciding_metric``
    ``"score"`` and ``action`` :data:`SCORE_ACTION`.

    A score mapped into [0, 1] (a margin, an entropy, a mean token probability) orders
    predictions; its distance from accuracy measures the mapping, not the model, so a light
    or a break point read from it would judge the wrong thing.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"model": ["llm", "llm:margin"], "traffic_light": ["red", "red"],
    ...                   "break_point": [0.2, 0.2], "deciding_metric": ["ece", "ece"],
    ...                   "action": ["do not deploy", "do not deploy"]})
    >>> withhold_scores(t, ["llm:margin"]).select("traffic_light", "break_point",
    ...                                          "deciding_metric").rows()
    [('red', 0.2, 'ece'), (None, None, 'score')]
    """
    if not scores:
        return thresholds
    require_columns(thresholds, ("model",), "thresholds")
    score = pl.col("model").is_in(list(scores))
    nulled = [pl.when(~score).then(pl.col(c)).alias(c) for c in VERDICTS if c in thresholds.columns]
    notes = [
        pl.when(score).then(pl.lit(text)).otherwise(pl.col(c)).alias(c)
        for c, text in zip(NOTES, ("score", SCORE_ACTION), strict=True)
        if c in thresholds.columns
    ]
    return thresholds.with_columns(*nulled, *notes)
