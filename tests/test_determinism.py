"""Byte-identical metric tables (issue 8): the same rows give the same bits in any row order,
on any run and any thread count, because every aggregation over a cell's rows sums in exact
fixed point (``relcol.metrics._exact``) instead of Polars' order-dependent float sums."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relcol
from relcol import metrics
from relcol.metrics._exact import exact_mean, exact_sum, exact_var
from relcol.store import CELL
from tests.conftest import TINY
from tests.test_bootstrap import frame_of

TABLES = ["calibration", "calibration_bins", "discrimination", "selective_curve", "selective"]


def _tables(frame: pl.DataFrame) -> list[pl.DataFrame]:
    lazy = metrics.metric_tables(frame.lazy(), CELL, bins=15, draws=20)
    return pl.collect_all([*(lazy[name] for name in TABLES), metrics.consistency(frame, CELL)])


def test_metric_tables_are_bit_identical_in_any_row_order_and_on_every_run():
    # cells of 90 000 rows: large enough that Polars' own float group sums differ between
    # runs and between row orders (they did before relcol summed in fixed point)
    rows = frame_of(
        np.random.default_rng(3), samples=10_000, seeds=3, repeats=3, decimals=None
    ).with_columns(y_clean="y_true", y_pred=pl.col("proba").list.arg_max().cast(pl.Int32))
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=11)
    first = _tables(rows)
    for other in (_tables(rows), _tables(shuffled)):
        for name, a, b in zip([*TABLES, "consistency"], first, other, strict=True):
            assert a.height > 0 and a.equals(b), name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-40, 40, allow_nan=False), min_size=1, max_size=60), st.randoms())
def test_exact_sum_is_order_free_and_within_an_ulp_of_the_exact_sum(values, random):
    shuffled = values[:]
    random.shuffle(shuffled)
    got = [pl.DataFrame({"x": v}).select(exact_sum(pl.col("x"))).item() for v in (values, shuffled)]
    assert got[0] == got[1]
    exact = math.fsum(values)
    # each term is held to 2⁻¹²⁸; the total is rounded to Float64 twice
    assert abs(got[0] - exact) <= 2 * math.ulp(exact) + len(values) * 2.0**-128


def test_exact_mean_and_variance_match_numpy_and_skip_nulls():
    x = np.random.default_rng(0).random(1001) * 3
    frame = pl.DataFrame({"x": [*x, None]})
    mean, var0, var1 = frame.select(
        exact_mean(pl.col("x")).alias("mean"),
        exact_var(pl.col("x"), 0).alias("var0"),
        exact_var(pl.col("x")).alias("var1"),
    ).row(0)
    assert mean == pytest.approx(np.mean(x), rel=1e-15)
    assert var0 == pytest.approx(np.var(x), rel=1e-13)
    assert var1 == pytest.approx(np.var(x, ddof=1), rel=1e-13)
    empty = pl.DataFrame({"x": [None]}, schema={"x": pl.Float64})
    assert empty.select(exact_sum(pl.col("x")), exact_mean(pl.col("x")).alias("m")).row(0) == (
        0.0,
        None,
    )
    one = pl.DataFrame({"x": [2.5]})
    assert one.select(exact_var(pl.col("x"))).item() is None  # n ≤ ddof


def test_two_reports_of_one_warehouse_write_the_same_metric_parquet_bytes(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(TINY, wh)
    written = []
    for run in range(2):
        relcol.report(wh, out=tmp_path / f"report{run}", bootstrap=50)
        written.append(
            {
                p.relative_to(wh.root): p.read_bytes()
                for p in sorted((wh.root / "metrics").rglob("*.parquet"))
            }
        )
    assert len(written[0]) == 4  # calibration, differences, trends, thresholds
    assert written[0] == written[1]
