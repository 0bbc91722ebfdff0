"""Trend over severity: Spearman ρ per curve, with a p-value and a bootstrap interval
(docs/statistics.md).

A curve is (study, dataset, model, corruption, label) across severities. Per curve and
metric, on the **pooled curve**: one value per severity, the metric of all the cell's rows
(every seed and repeat).

- ``spearman_rho``: Spearman's ρ between d and the metric, ties at mid-ranks (ρ is
  Pearson's r of the ranks); null when d or the metric is constant or fewer than 3
  severities have a value.
- ``rho_lo``, ``rho_hi``: the percentile interval of ρ over the paired bootstrap replicates
  of the curve (each replicate the same resample of test samples in every cell).
- ``p_value``: two-sided, from the same replicates: p = min(1, 2·min(#{ρ*_b ≤ 0} + 1,
  #{ρ*_b ≥ 0} + 1)/(B + 1)), so p < α about when the interval excludes 0.

Why the paired bootstrap and not a permutation test. The seeds of a cell share the test set
and give nearly identical models, so severities × seeds points are far from independent: a
test counting them as independent rejects a true null in a quarter of curves or more. The
pooled curve has one value per severity, but those values still share the test samples:
as a corruption moves confidences steadily, a sample's outcome is a fixed draw against a
moving confidence, so the estimation errors of neighbouring severities are correlated like
the steps of a random walk, and a permutation test over the severities (which assumes them
exchangeable) then finds trends that are not there: 18 % of curves at α = 0.05 for the gap
of a calibrated model whose confidence falls with d. The bootstrap resamples the test
samples, so every replicate carries that shared dependence; the simulation suite
(``relcol.analysis.world_study``) measures its false-alarm rate under each null.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
import polars as pl
from scipy import special

from relcol.analysis._bootstrap import ALPHA, Replicates, percentile_interval
from relcol.analysis._multiplicity import bootstrap_p_values

#: Metrics whose trend is tested by default. Calibration enters as the gap Δ and as
#: ``ece_excess`` = ECE − ECE₀, not as the plain binned ECE: the binned ECE of a calibrated
#: model rises as its confidences spread, so a trend in it can be the estimator's floor
#: moving rather than calibration changing.
TREND_METRICS = ("accuracy", "mean_confidence", "gap", "ece_excess", "brier_top", "auroc")
#: Exact permutation p-values up to this many points (10! = 3 628 800 orderings, counted by
#: ``_null_counts``).
EXACT_POINTS = 10
#: Columns of ``trends`` after the curve keys.
COLUMNS = (
    "metric",
    "spearman_rho",
    "p_value",
    "rho_lo",
    "rho_hi",
    "points",
    "severities",
)


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float, str]:
    """Spearman's ρ of ``x`` and ``y`` with its two-sided p-value and how it was computed.

    Returns ``(rho, p_value, method)`` with ``method`` ``"exact"`` (≤ 10 points: all
    orderings counted) or ``"t"``; NaNs and ``"none"`` when ρ is undefined (fewer than
    3 points, or a constant variable).

    Examples
    --------
    >>> from relcol.analysis import spearman
    >>> rho, p, method = spearman([0, 1, 2, 3], [0.1, 0.3, 0.2, 0.4])
    >>> round(rho, 3), round(p, 4), method   # 4 of the 24 orderings reach |ρ| = 0.8
    (0.8, 0.3333, 'exact')
    """
    ranked = _ranked(x, y)
    if ranked is None:
        return np.nan, np.nan, "none"
    rx, ry, rho = ranked
    if len(rx) <= EXACT_POINTS:
        return rho, _exact_p(rx, ry), "exact"
    return rho, _t_p(rho, len(rx)), "t"


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ of ``spearman`` alone, without its p-value (whose exact form counts
    every ordering); NaN where ρ is undefined."""
    ranked = _ranked(x, y)
    return np.nan if ranked is None else ranked[2]


def _ranked(x, y) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The centred ranks of ``x`` and ``y`` and ρ; None when ρ is undefined."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 3:
        return None
    rx, ry = _centred_ranks(x), _centred_ranks(y)
    scale = np.sqrt((rx @ rx) * (ry @ ry))
    if scale == 0:
        return None
    return rx, ry, float(np.clip((rx @ ry) / scale, -1.0, 1.0))


#: Values equal to this many decimals are ties. Metrics summed in a different order (Polars'
#: parallel sums are not ordered) differ in their last bits; without this, equal values such
#: as the constant mean confidence under label noise broke ties differently from run to run.
TIE_DECIMALS = 12


def _centred_ranks(values: np.ndarray) -> np.ndarray:
    ranks = _row_ranks(np.round(values, TIE_DECIMALS)[None, :])[0]  # mid-ranks for ties
    return ranks - ranks.mean()


def _t_p(rho: float, n: int) -> float:
    if abs(rho) >= 1.0:
        return 0.0
    t = rho * np.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
    return float(2 * special.stdtr(n - 2, -abs(t)))  # Student's t upper tail, as stats.t.sf


def _exact_p(rx: np.ndarray, ry: np.ndarray) -> float:
    """Share of the n! orderings of ``ry`` against ``rx`` with |ρ| ≥ |ρ observed|.

    Centred mid-ranks are multiples of ½, so 4·Σ rx·ry is an integer S and the orderings are
    counted by S (``_null_counts``) instead of enumerated: two values of |ρ| that differ at
    all differ by at least 1/(4·√(Σrx²·Σry²)), far beyond rounding, so comparing the
    integers is comparing the |ρ|."""
    a, b = _doubled(rx), _doubled(ry)
    observed = abs(int(a @ b))
    values, orderings = _null_counts(tuple(a.tolist()), tuple(sorted(b.tolist())))
    return int(orderings[np.abs(values) >= observed].sum()) / math.factorial(len(a))


def _doubled(ranks: np.ndarray) -> np.ndarray:
    return np.rint(2 * ranks).astype(np.int64)


@lru_cache(maxsize=1024)
def _null_counts(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every value S = Σ a_i·b_π(i) over the n! orderings π of ``b``, and how many orderings
    give it: the distinct arrangements of the multiset ``b`` counted by dynamic programming
    over the positions, a state being how many of each distinct value are placed (at most
    2¹⁰ states for ten points), each standing for the orderings of its tied values; so a
    tie pattern costs milliseconds, not the n! orderings."""
    distinct = sorted(set(b))
    counts = tuple(b.count(v) for v in distinct)
    bound = sum(abs(x) for x in a) * max((abs(v) for v in distinct), default=0)
    layer = {(0,) * len(distinct): np.zeros(2 * bound + 1, dtype=np.int64)}
    layer[(0,) * len(distinct)][bound] = 1
    for x in a:
        grown: dict[tuple[int, ...], np.ndarray] = {}
        for state, ways in layer.items():
            for k, value in enumerate(distinct):
                if state[k] == counts[k]:
                    continue
                placed = (*state[:k], state[k] + 1, *state[k + 1 :])
                shift = x * value
                target = grown.setdefault(placed, np.zeros_like(ways))
                if shift >= 0:
                    target[shift:] += ways[: len(ways) - shift]
                else:
                    target[:shift] += ways[-shift:]
        layer = grown
    (ways,) = layer.values()
    present = np.flatnonzero(ways)
    tied = math.prod(math.factorial(c) for c in counts)  # orderings per arrangement
    return present - bound, ways[present] * tied


def spearman_rows(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Spearman's ρ of ``x`` (points) with each row of ``values`` (rows × points), NaN where
    a row has a NaN or is constant: the ρ of every bootstrap replicate at once."""
    values = np.asarray(values, dtype=np.float64)
    out = np.full(values.shape[0], np.nan)
    rx = _centred_ranks(np.asarray(x, dtype=np.float64))
    complete = np.isfinite(values).all(1)
    if not complete.any() or rx @ rx == 0:
        return out
    ranks = _row_ranks(np.round(values[complete], TIE_DECIMALS))
    ry = ranks - ranks.mean(1, keepdims=True)
    norm = np.sqrt((ry * ry).sum(1) * (rx @ rx))
    with np.errstate(invalid="ignore", divide="ignore"):
        out[complete] = np.where(norm > 0, np.clip(ry @ rx / norm, -1.0, 1.0), np.nan)
    return out


#: Rows of at most this many values are ranked by ``mid_ranks`` (compiled, O(n²) per row);
#: longer ones by sorting (scipy's ``rankdata``). The ranks are the same.
SHORT_ROWS = 32


def _row_ranks(values: np.ndarray) -> np.ndarray:
    """Each row's mid-ranks (rows × n), as ``scipy.stats.rankdata(values, axis=1)``, which
    ranks long rows and rows with a NaN (imported there alone: scipy.stats takes most of a
    second to import, a report's trends do not need it)."""
    if values.shape[1] > SHORT_ROWS or values.size == 0 or np.isnan(values).any():
        from scipy.stats import rankdata

        return rankdata(values, axis=1)
    from relcol.analysis._compiled import mid_ranks  # numba: on first use only

    return mid_ranks(np.ascontiguousarray(values, dtype=np.float64))


#: Curves whose replicates' ρ are ranked at once (at B = 1000 and 6 severities, 12 MB).
_CURVES = 256


def trends(
    replicates: Replicates,
    points: pl.DataFrame | None = None,
    *,
    metrics: Iterable[str] = TREND_METRICS,
    alpha: float = ALPHA,
) -> pl.DataFrame:
    """Spearman trend of each metric over severity, per curve, on the pooled curve.

    Parameters
    ----------
    replicates
        From ``relcol.analysis.bootstrap``: the cells, the point estimates and the
        replicates of the pooled curve (its interval).
    points
        One row per cell with the cell keys and the metric columns (the report's point
        tables); it supplies metrics the replicates do not hold as points, such as
        ``ece_excess`` (whose replicates are ECE's less the cell's ``ece_null``, ECE₀ held at
        its point estimate). None: the replicates' own points.
    metrics
        Metrics to test (default ``TREND_METRICS``); those neither table holds are skipped.
    alpha
        1 − the level of ρ's bootstrap interval.

    Returns
    -------
    polars.DataFrame
        One row per curve × metric: ``study``, ``dataset``, ``model``, ``corruption``,
        ``label``, then ``metric``, ``spearman_rho`` (of the pooled curve: one value per
        severity), ``p_value`` (two-sided, from the paired bootstrap replicates of ρ),
        ``rho_lo``, ``rho_hi`` (their percentile interval), ``points`` (severities with a
        defined value) and ``severities``. Curves with fewer than 3 severities are left
        out.
    """
    keys = [k for k in replicates.keys if k != "severity"]
    cells = replicates.cells.with_row_index("_cell")
    curves = cells.group_by(keys, maintain_order=True).agg(pl.col("severity"), pl.col("_cell"))
    values, point_values = _trend_values(replicates, points)
    names = [m for m in metrics if m in values]
    tested = []  # (curve, its severities in order, its cells in that order)
    for curve in curves.iter_rows(named=True):
        order = np.argsort(curve["severity"])
        severity = np.asarray(curve["severity"], dtype=np.float64)[order]
        if len(severity) >= 3:
            tested.append((curve, severity, np.asarray(curve["_cell"])[order]))
    # curves on the same severities have their replicates' ρ ranked together, row by row
    grids: dict[bytes, list[int]] = {}
    for i, (_, severity, _) in enumerate(tested):
        grids.setdefault(severity.tobytes(), []).append(i)
    by_curve: list[list[dict]] = [[] for _ in tested]
    for name in names:
        per_replicate = np.empty((len(tested), values[name].shape[1]))
        rhos = np.empty(len(tested))
        points = np.empty(len(tested), dtype=np.int64)  # severities with a value
        for grid in grids.values():
            severity = tested[grid[0]][1]
            for start in range(0, len(grid), _CURVES):  # (curves × B) × severities at once
                members = grid[start : start + _CURVES]
                stacked = np.concatenate([values[name][tested[i][2]].T for i in members])
                each = spearman_rows(severity, stacked)  # curve by curve, B rows each
                per_replicate[members] = each.reshape(len(members), -1)
            # the pooled curves' ρ: every curve with a value at each severity at once (the
            # same ρ as spearman_rho's, whose ranks are exact), the others curve by curve
            y = np.stack([point_values[name][tested[i][2]] for i in grid])
            finite = np.isfinite(y)
            rhos[grid] = spearman_rows(severity, y)
            points[grid] = finite.sum(1)
            for row in np.flatnonzero(~finite.all(1)):
                keep = finite[row]
                rhos[grid[row]] = spearman_rho(severity[keep], y[row][keep])
        lo, hi = percentile_interval(per_replicate, alpha)
        p_values = bootstrap_p_values(per_replicate)
        for i, (curve, severity, _) in enumerate(tested):
            rho = rhos[i]
            by_curve[i].append(
                {
                    **{k: curve[k] for k in keys},
                    "metric": name,
                    "spearman_rho": rho,
                    "p_value": p_values[i] if np.isfinite(rho) else np.nan,
                    "rho_lo": lo[i],
                    "rho_hi": hi[i],
                    "points": int(points[i]),
                    "severities": len(severity),
                }
            )
    rows = [row for curve_rows in by_curve for row in curve_rows]  # curve by curve
    schema = {k: replicates.cells.schema[k] for k in keys} | {
        "metric": pl.String,
        "spearman_rho": pl.Float64,
        "p_value": pl.Float64,
        "rho_lo": pl.Float64,
        "rho_hi": pl.Float64,
        "points": pl.Int64,
        "severities": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return frame.with_columns(pl.col(pl.Float64).fill_nan(None))


def _trend_values(
    replicates: Replicates, points: pl.DataFrame | None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per metric: the (cells × B) replicates and the (cells,) point estimates, in the
    replicates' cell order; ``ece_excess`` where ``points`` has ``ece_null``."""
    values = dict(replicates.values)
    point_values = dict(replicates.points)
    if points is None:
        return values, point_values
    keys = list(replicates.keys)
    joined = replicates.cells.join(
        points, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )

    def column(name: str) -> np.ndarray:
        return joined[name].cast(pl.Float64).fill_null(np.nan).to_numpy()

    if "ece" in values and {"ece_null", "ece_excess"} <= set(joined.columns):
        values["ece_excess"] = values["ece"] - column("ece_null")[:, None]
        point_values["ece_excess"] = column("ece_excess")
    return values, point_values
