"""Independent numpy reference implementations of every metric (docs/metrics.md).

Written from the definitions, not from relcol's code: bins by ``np.searchsorted`` on the
edges m/M, per-bin means by ``np.bincount``, ECE as Σₘ (nₘ/n)·|accₘ − confₘ| over the
non-empty bins; AUROC by comparing every correct row with every wrong one; average precision
and the risk–coverage curve by an explicit loop over the distinct thresholds; AURC* by
summing the perfect ranking's risks row by row; ECE₀ with a separate numpy implementation
of the counter-based generator. Grouping is a plain loop over the groups: this is test code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

EPS = 1e-15


def bin_searchsorted(confidence: np.ndarray, bins: int) -> np.ndarray:
    """Bin m such that edge m < c <= edge m+1 (first bin closed at 0), edges = m/M as floats."""
    edges = np.arange(bins + 1) / bins
    return np.maximum(np.searchsorted(edges, confidence, side="left") - 1, 0)


def bin_formula(confidence: np.ndarray, bins: int) -> np.ndarray:
    """The literal max(⌈c·M⌉ − 1, 0) in float64 (one ulp off at some edges; see the tests)."""
    return np.maximum(np.ceil(np.asarray(confidence) * bins).astype(np.int64) - 1, 0)


def bin_table(confidence: np.ndarray, correct: np.ndarray, bins: int) -> dict[str, np.ndarray]:
    """Per non-empty bin: bin, bin_lower, bin_upper, n, sums and means."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=np.float64)
    b = bin_searchsorted(c, bins)
    n = np.bincount(b, minlength=bins)
    sum_c = np.bincount(b, weights=c, minlength=bins)
    sum_z = np.bincount(b, weights=z, minlength=bins)
    used = np.flatnonzero(n)
    return {
        "bin": used,
        "bin_lower": used / bins,
        "bin_upper": (used + 1) / bins,
        "n": n[used],
        "sum_confidence": sum_c[used],
        "sum_correct": sum_z[used],
        "mean_confidence": sum_c[used] / n[used],
        "accuracy": sum_z[used] / n[used],
    }


def metrics(confidence: np.ndarray, correct: np.ndarray, bins: int) -> dict[str, float]:
    """n, accuracy, mean_confidence, gap, abs_gap, ece, ece_over, ece_under, mce, mce_n of one
    group (mce_n: the most rows among the bins within 1e-12 of the MCE)."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=np.float64)
    table = bin_table(c, z, bins)
    weights = table["n"] / len(c)
    signed = table["mean_confidence"] - table["accuracy"]  # > 0: an overconfident bin
    bin_gaps = np.abs(signed)
    gap = float(c.mean() - z.mean())
    return {
        "n": len(c),
        "accuracy": float(z.mean()),
        "mean_confidence": float(c.mean()),
        "gap": gap,
        "abs_gap": abs(gap),
        "ece": float(np.sum(weights * bin_gaps)),
        "ece_over": float(np.sum(weights * np.maximum(signed, 0.0))),
        "ece_under": float(np.sum(weights * np.maximum(-signed, 0.0))),
        "mce": float(bin_gaps.max()),
        "mce_n": int(table["n"][bin_gaps >= bin_gaps.max() - 1e-12].max()),
    }


def mass_bins(confidence: np.ndarray, tiebreak: Sequence[np.ndarray], bins: int) -> np.ndarray:
    """Equal-mass bin of each row: rank r by (confidence, *tiebreak), bin ⌊r·M/n⌋."""
    order = np.lexsort([*reversed(list(tiebreak)), confidence])  # last key is primary
    rank = np.empty(len(confidence), dtype=np.int64)
    rank[order] = np.arange(len(confidence))
    return rank * bins // len(confidence)


def calibration_error(c: np.ndarray, z: np.ndarray, b: np.ndarray) -> float:
    """Σₘ (nₘ/n)·|accₘ − confₘ| for any bin assignment b."""
    total = 0.0
    for m in np.unique(b):
        inside = b == m
        total += inside.sum() / len(c) * abs(z[inside].mean() - c[inside].mean())
    return total


def extended(
    c: np.ndarray, z: np.ndarray, tiebreak: Sequence[np.ndarray], bins: int
) -> dict[str, float]:
    """ace, rmsce, ece_debiased and the top-label scores of one group, from the definitions."""
    c = np.asarray(c, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    n = len(c)
    b = bin_searchsorted(c, bins)
    accuracy = z.mean()
    reliability = resolution = within = square = 0.0
    for m in np.unique(b):
        cm, zm = c[b == m], z[b == m]
        conf, acc = cm.mean(), zm.mean()
        reliability += len(cm) / n * (conf - acc) ** 2
        resolution += len(cm) / n * (acc - accuracy) ** 2
        within += np.sum((cm - conf) ** 2 - 2 * (cm - conf) * (zm - acc)) / n
        if len(cm) >= 2:  # Kumar et al.: bins of one row add nothing
            square += len(cm) / n * ((acc - conf) ** 2 - acc * (1 - acc) / (len(cm) - 1))
    clipped = np.clip(c, EPS, 1 - EPS)
    return {
        "ace": calibration_error(c, z, mass_bins(c, tiebreak, bins)),
        "rmsce": float(np.sqrt(reliability)),
        "ece_debiased": float(np.sqrt(max(square, 0.0))),
        "brier_top": float(np.mean((c - z) ** 2)),
        "brier_reliability": reliability,
        "brier_resolution": resolution,
        "brier_uncertainty": float(accuracy * (1 - accuracy)),
        "brier_within": within,
        "nll_top": float(-np.mean(z * np.log(clipped) + (1 - z) * np.log(1 - clipped))),
    }


def with_vector(proba: Sequence | None, y: np.ndarray, bins: int) -> dict[str, float | None]:
    """classwise_ece, brier, nll of one group; None when a row has no vector."""
    if proba is None or any(p is None or len(p) == 0 for p in proba):
        return {"classwise_ece": None, "brier": None, "nll": None}
    p = np.array([np.asarray(v, dtype=np.float64) for v in proba])
    onehot = (y[:, None] == np.arange(p.shape[1])[None, :]).astype(np.float64)
    classwise = [
        calibration_error(p[:, k], onehot[:, k], bin_searchsorted(p[:, k], bins))
        for k in range(p.shape[1])
    ]
    p_true = np.array([row[label] for row, label in zip(p, y, strict=True)])
    return {
        "classwise_ece": float(np.mean(classwise)),
        "brier": float(np.mean(np.sum((p - onehot) ** 2, axis=1))),
        "nll": float(-np.mean(np.log(np.maximum(p_true, EPS)))),
    }


# Discrimination and selective prediction --------------------------------------------------------


def discrimination_metrics(confidence: np.ndarray, correct: np.ndarray) -> dict[str, float | None]:
    """auroc, aupr_success, aupr_error, fpr_at_95tpr, cohens_d, point_biserial of one group."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=bool)
    right, wrong = c[z], c[~z]
    n1, n0 = len(right), len(wrong)
    out: dict[str, float | None] = dict.fromkeys(
        ("auroc", "aupr_success", "aupr_error", "fpr_at_95tpr", "cohens_d", "point_biserial")
    )
    if n1 and n0:
        above = (right[:, None] > wrong[None, :]).sum()
        ties = (right[:, None] == wrong[None, :]).sum()
        out["auroc"] = float((above + 0.5 * ties) / (n1 * n0))
        rates = [((c[z] >= t).sum() / n1, (c[~z] >= t).sum() / n0) for t in np.unique(c)]
        out["fpr_at_95tpr"] = float(min(fpr for tpr, fpr in rates if tpr >= 0.95))
        if c.max() > c.min():
            out["point_biserial"] = float(np.corrcoef(c, z.astype(np.float64))[0, 1])
    if n1:
        out["aupr_success"] = average_precision(z, c)
    if n0:
        out["aupr_error"] = average_precision(~z, -c)
    if n1 >= 2 and n0 >= 2:
        var1 = 0.0 if right.max() == right.min() else right.var(ddof=1)
        var0 = 0.0 if wrong.max() == wrong.min() else wrong.var(ddof=1)
        if var1 + var0 > 0:
            out["cohens_d"] = float((right.mean() - wrong.mean()) / np.sqrt((var1 + var0) / 2))
    return out


def average_precision(positive: np.ndarray, score: np.ndarray) -> float:
    """Σ (Rₜ − Rₜ₋₁)·Pₜ over the distinct thresholds t from the highest score down."""
    total, recall_before = 0.0, 0.0
    for t in np.unique(score)[::-1]:
        accepted = score >= t
        recall = positive[accepted].sum() / positive.sum()
        precision = positive[accepted].mean()
        total += (recall - recall_before) * precision
        recall_before = recall
    return float(total)


def curve(confidence: np.ndarray, correct: np.ndarray) -> dict[str, np.ndarray]:
    """The risk–coverage curve: per distinct confidence t from the highest down."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=bool)
    thresholds = np.unique(c)[::-1]
    accepted = np.array([(c >= t).sum() for t in thresholds])
    wrong = np.array([(~z[c >= t]).sum() for t in thresholds])
    return {
        "threshold": thresholds,
        "n": np.array([(c == t).sum() for t in thresholds]),
        "accepted": accepted,
        "coverage": accepted / len(c),
        "risk": wrong / accepted,
        "wrong": wrong,
    }


def selective_metrics(
    confidence: np.ndarray, correct: np.ndarray, coverage: float, risk: float
) -> dict[str, float]:
    """aurc, aurc_optimal, e_aurc, risk_at_coverage, coverage_at_risk of one group."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=bool)
    n, n1 = len(c), int(z.sum())
    points = curve(c, z)
    # every row at the risk of the point at which it enters
    at_row = {t: r for t, r in zip(points["threshold"], points["risk"], strict=True)}
    aurc = float(np.mean([at_row[v] for v in c]))
    optimal = float(sum((i - n1) / i for i in range(n1 + 1, n + 1)) / n)
    enough = points["accepted"] >= coverage * n
    low_risk = points["wrong"] <= risk * points["accepted"]
    return {
        "aurc": aurc,
        "aurc_optimal": optimal,
        "e_aurc": aurc - optimal,
        "risk_at_coverage": float(points["risk"][enough][0]),
        "coverage_at_risk": float(points["coverage"][low_risk].max()) if low_risk.any() else 0.0,
    }


# ECE₀: the counter-based generator and the bin-level simulation, written again in numpy --------

_MASK = np.int64(0xFFFFFFFF)


def hash32(*keys) -> np.ndarray:
    """relcol's counter-based hash (relcol/metrics/_random.py), elementwise in numpy."""
    shape = np.broadcast(*[np.asarray(k) for k in keys]).shape
    h = np.full(shape, 0x2545F491, dtype=np.int64)
    for key in keys:
        k = np.asarray(key, dtype=np.int64)
        for word in (k & _MASK, (k >> 32) & _MASK):
            h = ((h ^ word) * 0x5BD1E995) & _MASK
    for _ in range(2):
        h = (((h >> 16) ^ h) * 0x45D9F3B) & _MASK
    return (h >> 16) ^ h


def uniform(*keys) -> np.ndarray:
    return (hash32(*keys).astype(np.float64) + 0.5) / 2.0**32


def ece_null(
    confidence: np.ndarray,
    correct: np.ndarray,
    bins: int,
    draws: int,
    events: Sequence[np.ndarray] = (),
) -> dict:
    """ece_null, ece_excess, ece_pvalue by the bin-level simulation of relcol/metrics/_null.py:
    one outcome per distinct event (``events`` columns and the confidence; none: every row is
    one), counted k times; p = (b + 1)/(R + 1)."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=np.float64)
    b = bin_searchsorted(c, bins)
    observed = calibration_error(c, z, b)
    if len(events):
        keys = np.rec.fromarrays([*events, c])
        _, first, k = np.unique(keys, return_index=True, return_counts=True)
        event_c, event_b = c[first], b[first]
    else:
        event_c, event_b, k = c, b, np.ones(len(c), dtype=np.int64)
    eces = np.zeros(draws)
    r = np.arange(draws)
    for m in np.unique(b):
        size, total = int((b == m).sum()), c[b == m].sum()
        km, cm = k[event_b == m], event_c[event_b == m]
        if len(km) <= 32:
            order = np.sort(km)[::-1]
            u = uniform(1, m, r[:, None], np.arange(len(km))[None, :])
            simulated = ((u * size < total) * order[None, :]).sum(axis=1)
        else:
            variance = max((km * km * cm).sum() - (km * km * cm * cm).sum(), 0.0)
            normal = np.sqrt(np.log(uniform(2, m, r, 0)) * -2.0) * np.cos(
                uniform(2, m, r, 1) * 6.283185307179586
            )
            simulated = total + np.sqrt(variance) * normal
        eces += np.abs(simulated - total)
    eces /= len(c)
    return {
        "ece_null": float(eces.mean()),
        "ece_excess": observed - float(eces.mean()),
        "ece_pvalue": float((np.sum(eces >= observed - 1e-12) + 1) / (draws + 1)),
    }


def calibration(
    frame: pl.DataFrame, by: Sequence[str], bins: int, *, draws: int = 100, full: bool = False
) -> pl.DataFrame:
    """``metrics`` of every group of ``frame``, one row per group, sorted by ``by``; with
    ``full``, every column of relcol's calibration table in its order."""
    rows = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        c, z = group["confidence"].to_numpy(), group["correct"].to_numpy()
        values = metrics(c, z, bins)
        if full:
            tiebreak = [group[k].to_numpy() for k in ("sample_id", "seed", "repeat")]
            events = [group[k].to_numpy() for k in ("sample_id", "seed", "y_pred")]
            values |= extended(c, z, tiebreak, bins) | ece_null(c, z, bins, draws, events)
            values |= with_vector(group["proba"].to_list(), group["y_true"].to_numpy(), bins)
            values = {name: values[name] for name in CALIBRATION_COLUMNS}
        rows.append(dict(zip(by, key, strict=True)) | values)
    return _frame(rows, frame, by, {"n": pl.Int64, "mce_n": pl.Int64})


CALIBRATION_COLUMNS = (
    "n",
    "accuracy",
    "mean_confidence",
    "gap",
    "abs_gap",
    "ece",
    "ece_over",
    "ece_under",
    "mce",
    "mce_n",
    "ace",
    "rmsce",
    "classwise_ece",
    "ece_null",
    "ece_excess",
    "ece_pvalue",
    "ece_debiased",
    "brier",
    "brier_top",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "brier_within",
    "nll",
    "nll_top",
)


def discrimination(frame: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """``discrimination_metrics`` of every group, sorted by ``by`` (with ``score`` and ``n``)."""
    rows = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        values = discrimination_metrics(group["confidence"].to_numpy(), group["correct"].to_numpy())
        head = {"score": "confidence", "n": group.height}
        rows.append(dict(zip(by, key, strict=True)) | head | values)
    return _frame(rows, frame, by, {"n": pl.Int64, "score": pl.String})


def selective(frame: pl.DataFrame, by: Sequence[str], coverage: float, risk: float) -> pl.DataFrame:
    """``selective_metrics`` of every group, sorted by ``by``."""
    rows = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        c, z = group["confidence"].to_numpy(), group["correct"].to_numpy()
        head = {"score": "confidence", "n": group.height}
        tail = {"target_coverage": coverage, "target_risk": risk}
        values = selective_metrics(c, z, coverage, risk)
        rows.append(dict(zip(by, key, strict=True)) | head | values | tail)
    return _frame(rows, frame, by, {"n": pl.Int64, "score": pl.String})


def selective_curve(frame: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """``curve`` of every group, sorted by ``by`` and threshold from the highest down."""
    parts = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        points = curve(group["confidence"].to_numpy(), group["correct"].to_numpy())
        part = pl.DataFrame(points).with_columns(
            *(pl.lit(v, frame.schema[k]).alias(k) for k, v in zip(by, key, strict=True)),
            score=pl.lit("confidence"),
        )
        parts.append(part)
    columns = [*by, "score", "threshold", "n", "accepted", "coverage", "risk"]
    out = pl.concat(parts).select(columns).with_columns(pl.col("n", "accepted").cast(pl.Int64))
    return out.sort([*by, "threshold"], descending=[False] * len(by) + [True], nulls_last=True)


def calibration_bins(frame: pl.DataFrame, by: Sequence[str], bins: int) -> pl.DataFrame:
    """``bin_table`` (equal width) of every group of ``frame``, sorted by ``by`` and bin."""
    rows = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        table = bin_table(group["confidence"].to_numpy(), group["correct"].to_numpy(), bins)
        for i in range(len(table["bin"])):
            values = {name: column[i].item() for name, column in table.items()}
            rows.append(dict(zip(by, key, strict=True)) | values)
    return _frame(rows, frame, by, {"bin": pl.Int64, "n": pl.Int64}).sort(
        [*by, "bin"], nulls_last=True
    )


def _frame(rows: list[dict], frame: pl.DataFrame, by: Sequence[str], ints: dict) -> pl.DataFrame:
    schema = {name: frame.schema[name] for name in by}
    out = pl.DataFrame(rows, schema_overrides=schema | ints, infer_schema_length=None)
    floats = [name for name in out.columns if name not in schema and name not in ints]
    return out.with_columns(pl.col(floats).cast(pl.Float64)).sort(list(by), nulls_last=True)
