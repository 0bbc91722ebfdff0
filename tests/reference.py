"""Independent numpy reference implementations of the calibration metrics (METRICS.md §2).

Written from the definitions, not from relcol's code: bins by ``np.searchsorted`` on the
edges m/M, per-bin means by ``np.bincount``, ECE as Σₘ (nₘ/n)·|accₘ − confₘ| over the
non-empty bins. Grouping is a plain loop over the groups: this is test code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl


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
    """n, accuracy, mean_confidence, gap, abs_gap, ece, mce of one group."""
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=np.float64)
    table = bin_table(c, z, bins)
    weights = table["n"] / len(c)
    bin_gaps = np.abs(table["accuracy"] - table["mean_confidence"])
    gap = float(c.mean() - z.mean())
    return {
        "n": len(c),
        "accuracy": float(z.mean()),
        "mean_confidence": float(c.mean()),
        "gap": gap,
        "abs_gap": abs(gap),
        "ece": float(np.sum(weights * bin_gaps)),
        "mce": float(bin_gaps.max()),
    }


def calibration(frame: pl.DataFrame, by: Sequence[str], bins: int) -> pl.DataFrame:
    """``metrics`` of every group of ``frame``, one row per group, sorted by ``by``."""
    rows = []
    for key, group in frame.partition_by(list(by), as_dict=True).items():
        values = metrics(group["confidence"].to_numpy(), group["correct"].to_numpy(), bins)
        rows.append(dict(zip(by, key, strict=True)) | values)
    return _frame(rows, frame, by, {"n": pl.Int64})


def calibration_bins(frame: pl.DataFrame, by: Sequence[str], bins: int) -> pl.DataFrame:
    """``bin_table`` of every group of ``frame``, sorted by ``by`` and bin."""
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
