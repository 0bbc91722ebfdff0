"""Where trust breaks: d*, the break point, the traffic light and the action (METRICS.md §6).

Per curve (study, dataset, model, corruption, label) across severities:

- ``d_star`` (silent failure): the smallest severity whose lower bound of the gap Δ exceeds
  τ (default 0.05): significantly overconfident by more than τ. Severity 0 counts: a model
  overconfident on clean data has d* = 0.
- ``break_point``: the smallest severity d > 0 where the paired interval of
  ECE(d) − ECE(0) excludes 0 (either way: ``break_change`` gives the sign).
- Both null where never reached, and reported with the accuracy and mean confidence there
  ("confidently wrong": confidence stays high while accuracy falls).
- The traffic light is judged at every severity of the curve from the point estimates:
  green when ECE ≤ 0.05, AUROC ≥ 0.80 and MCE ≤ 0.15; amber when ECE ≤ 0.15, AUROC ≥ 0.75
  and MCE ≤ 0.20; red otherwise. ``traffic_light`` is the curve's worst light,
  ``light_severity`` the smallest severity showing it, ``deciding_metric`` the metric that
  sets it there (the first of ece, auroc, mce whose own light is that colour), and
  ``action`` the recommendation at that severity: AUROC < 0.80 retrain; else ECE ≤ 0.05
  deploy; ECE ≤ 0.15 temperature scaling; else isotonic regression, then re-evaluate.
  ``clean_traffic_light`` is the light at severity 0. A null metric (AUROC of a cell
  without a wrong row) is not judged; all thresholds are fields of ``TrafficLight``.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from relcol.analysis._frames import require_columns
from relcol.errors import ParameterError

#: Default τ for d*.
TAU = 0.05
#: Light colours, best first (their index is their badness).
LIGHTS = ("green", "amber", "red")
ACTIONS = {
    "retrain": "retrain",
    "deploy": "deploy",
    "scaling": "temperature scaling",
    "isotonic": "isotonic regression, then re-evaluate",
}


@dataclass(frozen=True)
class TrafficLight:
    """Thresholds of the traffic light and of the recommended action (METRICS.md §6)."""

    green_ece: float = 0.05
    green_auroc: float = 0.80
    green_mce: float = 0.15
    amber_ece: float = 0.15
    amber_auroc: float = 0.75
    amber_mce: float = 0.20
    retrain_auroc: float = 0.80
    deploy_ece: float = 0.05
    scaling_ece: float = 0.15


#: The thresholds of METRICS.md §6.
DEFAULT_LIGHTS = TrafficLight()

#: Columns of ``thresholds`` after the curve keys.
COLUMNS = (
    "tau",
    "d_star",
    "d_star_accuracy",
    "d_star_confidence",
    "d_star_gap",
    "d_star_gap_lo",
    "d_star_gap_hi",
    "break_point",
    "break_accuracy",
    "break_confidence",
    "break_change",
    "break_change_lo",
    "break_change_hi",
    "traffic_light",
    "light_severity",
    "deciding_metric",
    "action",
    "clean_traffic_light",
    "worst_severity",
)


def cell_lights(frame: pl.DataFrame, lights: TrafficLight = DEFAULT_LIGHTS) -> pl.DataFrame:
    """``frame`` (one row per cell with ``ece``, ``auroc``, ``mce``) with ``traffic_light``,
    ``deciding_metric`` and ``action`` per row.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.analysis import cell_lights
    >>> cells = pl.DataFrame({"ece": [0.03, 0.08, 0.03], "auroc": [0.9, 0.9, 0.7], "mce": [0.1, 0.1, 0.1]})
    >>> cell_lights(cells).select("traffic_light", "deciding_metric", "action").rows()
    [('green', 'ece', 'deploy'), ('amber', 'ece', 'temperature scaling'), ('red', 'auroc', 'retrain')]
    """
    require_columns(frame, ("ece", "auroc", "mce"), "calibration")
    t = lights
    levels = {
        "ece": _level(pl.col("ece"), t.green_ece, t.amber_ece, higher_is_better=False),
        "auroc": _level(pl.col("auroc"), t.green_auroc, t.amber_auroc, higher_is_better=True),
        "mce": _level(pl.col("mce"), t.green_mce, t.amber_mce, higher_is_better=False),
    }
    worst = pl.max_horizontal(*levels.values())
    deciding = pl.when(levels["ece"] == worst).then(pl.lit("ece"))
    deciding = deciding.when(levels["auroc"] == worst).then(pl.lit("auroc"))
    deciding = deciding.when(levels["mce"] == worst).then(pl.lit("mce"))
    ece, auroc = pl.col("ece"), pl.col("auroc")
    action = (
        pl.when(auroc < t.retrain_auroc)
        .then(pl.lit(ACTIONS["retrain"]))
        .when(ece <= t.deploy_ece)
        .then(pl.lit(ACTIONS["deploy"]))
        .when(ece <= t.scaling_ece)
        .then(pl.lit(ACTIONS["scaling"]))
        .when(ece.is_not_null())
        .then(pl.lit(ACTIONS["isotonic"]))
    )
    return frame.with_columns(
        traffic_light=worst.replace_strict([0, 1, 2], list(LIGHTS), default=None),
        deciding_metric=deciding,
        action=action,
    )


def _level(value: pl.Expr, green: float, amber: float, *, higher_is_better: bool) -> pl.Expr:
    """0 green, 1 amber, 2 red; null for a null metric (it is not judged)."""
    if higher_is_better:
        return (
            pl.when(value >= green)
            .then(0)
            .when(value >= amber)
            .then(1)
            .when(value.is_not_null())
            .then(2)
        )
    return (
        pl.when(value <= green)
        .then(0)
        .when(value <= amber)
        .then(1)
        .when(value.is_not_null())
        .then(2)
    )


def check_tau(tau: object) -> float:
    """``tau`` (the d* margin on the gap) as a float in [0, 1): the gap is a difference of
    two shares, so a margin of 1 or more is never exceeded."""
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not 0 <= tau < 1:
        raise ParameterError(f"tau must be a number in [0, 1). Got {tau!r}.")
    return float(tau)


def thresholds(
    calibration: pl.DataFrame,
    discrimination: pl.DataFrame,
    differences: pl.DataFrame | None = None,
    *,
    tau: float = TAU,
    lights: TrafficLight = DEFAULT_LIGHTS,
) -> pl.DataFrame:
    """Where trust breaks, one row per curve.

    Parameters
    ----------
    calibration
        One row per cell: the cell keys, ``accuracy``, ``mean_confidence``, ``gap``,
        ``gap_lo`` and ``gap_hi`` (its bootstrap interval), ``ece`` and ``mce``.
    discrimination
        One row per cell with ``auroc``.
    differences
        The ``paired_differences`` table (its ``clean`` contrast of ``ece`` gives the break
        point); None: no break point.
    tau
        The overconfidence margin of d*, a number >= 0.
    lights
        Thresholds of the traffic light and the action.

    Returns
    -------
    polars.DataFrame
        The curve keys (``study``, ``dataset``, ``model``, ``corruption``, ``label``), then
        ``tau``, ``d_star`` with ``d_star_accuracy``, ``d_star_confidence``,
        ``d_star_gap``, ``d_star_gap_lo``, ``d_star_gap_hi``; ``break_point`` with ``break_accuracy``,
        ``break_confidence``, ``break_change`` (ECE(d) − ECE(0)), ``break_change_lo``,
        ``break_change_hi``; ``traffic_light``, ``light_severity``, ``deciding_metric``,
        ``action``, ``clean_traffic_light``, ``worst_severity``. Curves in the
        calibration table's order.
    """
    tau = check_tau(tau)
    require_columns(
        calibration,
        ("study", "dataset", "model", "corruption", "severity", "accuracy", "mean_confidence"),
        "calibration",
    )
    require_columns(calibration, ("gap", "gap_lo", "gap_hi", "ece", "mce"), "calibration")
    require_columns(discrimination, ("auroc",), "discrimination")
    keys = [
        k
        for k in ("study", "dataset", "model", "corruption", "severity", "label")
        if k in calibration.columns
    ]
    curve = [k for k in keys if k != "severity"]
    cells = calibration.select(
        *keys, "accuracy", "mean_confidence", "gap", "gap_lo", "gap_hi", "ece", "mce"
    ).join(
        discrimination.select(*keys, "auroc"),
        on=keys,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    lit = cell_lights(cells, lights).with_columns(
        _badness=pl.col("traffic_light").replace_strict(list(LIGHTS), [0, 1, 2], default=None)
    )
    by_severity = lit.sort([*curve, "severity"], nulls_last=True, maintain_order=True)
    above = pl.col("gap_lo") > tau
    badness = pl.col("_badness")
    first_worst = ((badness == badness.max()) & badness.is_not_null()).arg_max()
    summary = by_severity.group_by(curve, maintain_order=True).agg(
        d_star=pl.col("severity").filter(above).first(),
        d_star_accuracy=pl.col("accuracy").filter(above).first(),
        d_star_confidence=pl.col("mean_confidence").filter(above).first(),
        d_star_gap=pl.col("gap").filter(above).first(),
        d_star_gap_lo=pl.col("gap_lo").filter(above).first(),
        d_star_gap_hi=pl.col("gap_hi").filter(above).first(),
        traffic_light=pl.col("traffic_light").get(first_worst),
        light_severity=pl.col("severity").get(first_worst),
        deciding_metric=pl.col("deciding_metric").get(first_worst),
        action=pl.col("action").get(first_worst),
        clean_traffic_light=pl.col("traffic_light").filter(pl.col("severity") == 0.0).first(),
        worst_severity=pl.col("severity").max(),
        _any_light=pl.col("_badness").is_not_null().any(),
    )
    unjudged = ~pl.col("_any_light")
    summary = summary.with_columns(
        pl.when(unjudged).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("traffic_light", "light_severity", "deciding_metric", "action")
    ).drop("_any_light")
    summary = summary.join(
        _break_points(lit, differences, keys, curve),
        on=curve,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    return summary.with_columns(tau=pl.lit(float(tau))).select(*curve, *COLUMNS)


def _break_points(
    cells: pl.DataFrame, differences: pl.DataFrame | None, keys: list[str], curve: list[str]
) -> pl.DataFrame:
    """Per curve: the break point and the accuracy, confidence and ECE change there."""
    empty = {
        "break_point": pl.Float64,
        "break_accuracy": pl.Float64,
        "break_confidence": pl.Float64,
        "break_change": pl.Float64,
        "break_change_lo": pl.Float64,
        "break_change_hi": pl.Float64,
    }
    if differences is None or differences.is_empty():
        return (
            cells.select(curve)
            .unique(maintain_order=True)
            .with_columns(pl.lit(None, dtype).alias(name) for name, dtype in empty.items())
        )
    change = differences.filter(
        (pl.col("contrast") == "clean") & (pl.col("metric") == "ece")
    ).select(
        *keys,
        break_change="difference",
        break_change_lo="difference_lo",
        break_change_hi="difference_hi",
    )
    joined = cells.select(*keys, "accuracy", "mean_confidence").join(
        change, on=keys, how="inner", nulls_equal=True
    )
    excludes = (pl.col("break_change_lo") > 0) | (pl.col("break_change_hi") < 0)
    found = (
        joined.filter(excludes)
        .sort([*curve, "severity"], nulls_last=True)
        .group_by(curve, maintain_order=True)
        .first()
        .select(
            *curve,
            break_point="severity",
            break_accuracy="accuracy",
            break_confidence="mean_confidence",
            break_change="break_change",
            break_change_lo="break_change_lo",
            break_change_hi="break_change_hi",
        )
    )
    return (
        cells.select(curve)
        .unique(maintain_order=True)
        .join(found, on=curve, how="left", nulls_equal=True, maintain_order="left")
    )
