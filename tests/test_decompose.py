"""docs/development.md: the report decomposes over partitions. Per-partition sufficient statistics,
merged by summing, give exactly the single-pass metrics, so partitions (files, workers,
machines) can be aggregated separately."""

from __future__ import annotations

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal

from relcol import metrics
from relcol.metrics._frames import by_chunks, chunk_spans
from relcol.store import CELL

SUMS = [
    "n",
    "sum_confidence",
    "sum_correct",
    "sum_confidence_sq",
    "sum_confidence_correct",
    "sum_nll_top",
]


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
        np.testing.assert_allclose(
            merged[column].to_numpy(), single[column].to_numpy(), rtol=0, atol=1e-12
        )


def test_metric_tables_by_chunks_of_cells_equal_the_single_pass(tiny_warehouse):
    """The report computes the metric suite and consistency one run of whole cells at a time
    (bounded memory at 10⁸ rows); any chunk size gives the single pass's tables."""
    rows = tiny_warehouse.predictions()
    cells = rows.group_by(CELL).agg(n=pl.len()).sort(CELL, nulls_last=True).collect()
    names = ["calibration", "calibration_bins", "discrimination", "selective_curve", "selective"]

    def plans(frame: pl.LazyFrame) -> list[pl.LazyFrame]:
        tables = metrics.metric_tables(frame, CELL, bins=10, draws=20)
        return [*(tables[name] for name in names), metrics.consistency(frame, CELL)]

    single = pl.collect_all(plans(rows))
    assert chunk_spans(cells["n"].to_list(), 1000) != [(0, cells.height)]
    for budget in (1, 1000, 5000, 10**9):
        chunked = by_chunks(rows, cells, CELL, plans, budget=budget)
        for name, got, want in zip([*names, "consistency"], chunked, single, strict=True):
            assert got.height == want.height > 0, name
            assert_frame_equal(got, want, check_exact=False, rel_tol=0, abs_tol=1e-12)


def test_chunk_spans_cover_every_cell_once_within_the_budget():
    sizes = [5, 3, 9, 1, 1, 12, 2]
    spans = chunk_spans(sizes, 10)
    assert spans == [(0, 2), (2, 2), (4, 1), (5, 1), (6, 1)]  # 8, 10, 1, 12 (alone), 2
    assert [i for start, length in spans for i in range(start, start + length)] == list(range(7))
    assert chunk_spans([], 10) == [(0, 0)]
