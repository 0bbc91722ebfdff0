"""DESIGN.md §7: the report decomposes over partitions. Per-partition sufficient statistics,
merged by summing, give exactly the single-pass metrics, so partitions (files, workers,
machines) can be aggregated separately."""

from __future__ import annotations

import numpy as np
import polars as pl

from relcol import metrics
from relcol.store import CELL

SUMS = ["n", "sum_confidence", "sum_correct", "sum_confidence_sq", "sum_confidence_correct", "sum_nll_top"]


def test_calibration_from_merged_partition_bins_equals_the_single_pass(tiny_warehouse):
    files = tiny_warehouse.sources()["predictions"][1:]
    assert len(files) == 12
    per_part = [metrics.calibration_bins(pl.scan_parquet(f)).collect() for f in files]
    merged = (
        pl.concat(per_part)
        .filter(pl.col("binning") == "width")
        .group_by([*CELL, "bin"])
        .agg(pl.col(SUMS).sum())
        .group_by(CELL)
        .agg(
            metrics.count_from_bins().alias("n"),
            metrics.accuracy_from_bins().alias("accuracy"),
            metrics.gap_from_bins().alias("gap"),
            metrics.ece_from_bins().alias("ece"),
            metrics.mce_from_bins().alias("mce"),
            metrics.brier_top_from_bins().alias("brier_top"),
            metrics.nll_top_from_bins().alias("nll_top"),
        )
        .sort(CELL, nulls_last=True)
    )
    single = (
        metrics.calibration(tiny_warehouse.predictions())
        .select([*CELL, "n", "accuracy", "gap", "ece", "mce", "brier_top", "nll_top"])
        .collect()
        .sort(CELL, nulls_last=True)
    )
    assert merged.height == single.height == 72
    assert merged.select(CELL).equals(single.select(CELL))
    for column in ["n", "accuracy", "gap", "ece", "mce", "brier_top", "nll_top"]:
        np.testing.assert_allclose(merged[column].to_numpy(), single[column].to_numpy(), rtol=0, atol=1e-12)
