"""The paired Poisson bootstrap (docs/statistics.md): weights, the matrix product against
explicitly weighted rows, intervals, paired differences, per-seed values."""

from __future__ import annotations

import math
import time

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from relcol import metrics
from relcol.analysis import (
    _bootstrap,
    bin_metrics,
    bootstrap,
    paired_differences,
    percentile_interval,
    poisson_weight,
    poisson_weights,
    rank_metrics,
    risk_coverage,
    seed_spread,
    with_intervals,
)
from relcol.analysis._bootstrap import (
    MIN_BIN_SAMPLES,
    MOMENT_METRICS,
    POISSON_CDF,
    RANK_METRICS,
    SEED_METRICS,
    WIDTH_METRICS,
    bin_intervals,
    bootstrap_stream,
)
from relcol.errors import ParameterError
from relcol.metrics import weighted_rank_metrics
from relcol.store import CELL
from relcol.store._sql import MACROS, sql_text
from tests.test_metrics import long_table
from tests.test_metrics_hand import bunched_near_one, exact_effect_sizes

LINEAR = (*WIDTH_METRICS, *MOMENT_METRICS, "brier", "nll")


def frame_of(
    rng: np.random.Generator,
    *,
    models=("a", "b"),
    severities=(0.0, 0.5),
    samples: int = 40,
    seeds: int = 2,
    repeats: int = 2,
    decimals: int | None = 2,
    classes: int = 3,
    study: str = "s",
) -> pl.DataFrame:
    """A small long table: confidences rounded (ties), probability vectors, labels null."""
    parts = []
    for model in models:
        for d in severities:
            for seed in range(seeds):
                for repeat in range(repeats):
                    logits = rng.normal(0, 1.5, (samples, classes))
                    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
                    c = p.max(1)
                    if decimals is not None:
                        c = np.round(c, decimals)
                    y_pred = p.argmax(1)
                    right = rng.random(samples) < np.clip(c - 0.3 * d, 0, 1)
                    y_true = np.where(right, y_pred, (y_pred + 1) % classes)
                    parts.append(
                        pl.DataFrame(
                            {
                                "study": study,
                                "dataset": "ds",
                                "model": model,
                                "corruption": "mcar",
                                "severity": d,
                                "seed": np.full(samples, seed, dtype=np.int32),
                                "repeat": np.full(samples, repeat, dtype=np.int32),
                                "sample_id": np.arange(samples, dtype=np.int64) * 7 + 3,
                                "label": pl.Series([None] * samples, dtype=pl.Int32),
                                "y_true": y_true.astype(np.int32),
                                "y_pred": y_pred.astype(np.int32),
                                "confidence": c,
                                "correct": y_pred == y_true,
                                "proba": pl.Series(p.astype(np.float32)).cast(pl.List(pl.Float32)),
                            }
                        )
                    )
    return pl.concat(parts)


def explicit(frame: pl.DataFrame, weights: np.ndarray, sample_ids: np.ndarray) -> pl.DataFrame:
    """The rows of ``frame`` repeated as many times as their sample's weight."""
    w = pl.DataFrame({"sample_id": sample_ids, "_w": weights})
    joined = frame.join(w, on="sample_id").filter(pl.col("_w") > 0)
    return joined.select(pl.exclude("_w").repeat_by(pl.col("_w")).explode())


def suite(rows: pl.DataFrame, bins: int) -> pl.DataFrame:
    """Every metric of the suite per cell, one frame."""
    cal = metrics.calibration(rows, CELL, bins=bins).collect()
    dis = metrics.discrimination(rows, CELL).collect().drop("n", "score")
    sel = metrics.selective(rows, CELL).collect().drop("n", "score")
    on = list(CELL)
    return cal.join(dis, on=on, nulls_equal=True).join(sel, on=on, nulls_equal=True).sort(on)


def column(table: pl.DataFrame, name: str) -> np.ndarray:
    return table[name].cast(pl.Float64).fill_null(np.nan).to_numpy()


# Weights -----------------------------------------------------------------------------------


def test_weights_are_the_same_in_numpy_polars_and_sql():
    ids = np.array([0, 1, 2, 5, 2**31 + 7, 2**40, -3, 10**15], dtype=np.int64)
    b = 64
    npw = poisson_weights("my-study", ids, b, seed=5)
    stream = bootstrap_stream("my-study")
    grid = pl.DataFrame({"b": np.repeat(np.arange(b), len(ids)), "s": np.tile(ids, b)})
    plw = grid.select(poisson_weight(stream, 5, "b", "s"))["weight"].to_numpy().reshape(b, -1)
    con = duckdb.connect()
    for macro in MACROS[: MACROS.index("poisson_weight") + 1]:
        con.execute(sql_text(f"macros/{macro}.sql"))
    con.register("grid", grid.to_arrow())
    sqlw = con.sql(f"SELECT poisson_weight({stream}, 5, b, s) AS w FROM grid").pl()["w"].to_numpy()
    assert (npw == plw).all() and (npw == sqlw.reshape(b, -1)).all()


@pytest.mark.parametrize("entries", [64 * 3, 64, 2**40], ids=["blocks", "one-sample", "whole"])
def test_weights_drawn_in_blocks_of_samples_are_the_sql_weights(monkeypatch, entries):
    # a large test set's weights are hashed a block of samples at a time, on threads: the
    # same weights as the SQL macro's, after the column of unit weights
    from relcol.analysis import _bootstrap

    monkeypatch.setattr(_bootstrap, "HASH_ENTRIES", entries)
    ids = np.array([0, 1, 2, 5, 2**31 + 7, 2**40, -3, 10**15, 11, 12], dtype=np.int64)
    columns = _bootstrap.weight_columns("my-study", ids, 64, seed=5)
    assert columns.dtype == np.uint8 and columns.shape == (len(ids), 65)
    assert (columns[:, 0] == 1).all()
    con = duckdb.connect()
    for macro in MACROS[: MACROS.index("poisson_weight") + 1]:
        con.execute(sql_text(f"macros/{macro}.sql"))
    stream = bootstrap_stream("my-study")
    grid = pl.DataFrame({"s": np.repeat(ids, 64), "b": np.tile(np.arange(64), len(ids))})
    con.register("grid", grid.to_arrow())
    sqlw = con.sql(f"SELECT poisson_weight({stream}, 5, b, s) AS w FROM grid").pl()["w"]
    assert (columns[:, 1:] == sqlw.to_numpy().reshape(len(ids), 64)).all()
    # drawn straight into a Float64 block, as a streamed product takes them: the same numbers
    out = np.full((len(ids), 65), np.nan)
    assert _bootstrap.weight_columns("my-study", ids, 64, seed=5, out=out) is out
    assert (out == columns).all()


def test_weights_are_poisson_one():
    w = poisson_weights("default", np.arange(2000), 500)
    assert abs(w.mean() - 1) < 0.005 and abs(w.var() - 1) < 0.01
    for k in range(4):  # P(w = k) = e⁻¹/k!
        expected = np.exp(-1) / np.prod(np.arange(1, k + 1))
        assert abs((w == k).mean() - expected) < 0.003
    assert POISSON_CDF[0] == pytest.approx(np.exp(-1)) and POISSON_CDF[-1] < 1.0


def test_a_samples_weight_depends_on_study_seed_replicate_and_sample_only():
    all_ids = np.arange(100)
    some = np.array([3, 50, 97])
    full = poisson_weights("s", all_ids, 30)
    assert (poisson_weights("s", some, 30) == full[:, some]).all()  # any subset, same weights
    assert (poisson_weights("s", all_ids, 10) == full[:10]).all()  # fewer replicates: a prefix
    assert (poisson_weights("s", all_ids, 30, seed=1) != full).mean() > 0.5
    assert (poisson_weights("t", all_ids, 30) != full).mean() > 0.5


# The matrix product against explicitly weighted rows ---------------------------------------


def test_unit_weights_reproduce_the_suite():
    rows = frame_of(np.random.default_rng(1), decimals=3)
    result = bootstrap(rows, replicates=20, bins=10)
    table = suite(rows, 10)
    for name, point in result.points.items():
        np.testing.assert_allclose(point, column(table, name), rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("replicate", [0, 17, 99])
def test_a_gemm_replicate_equals_the_metric_on_explicitly_weighted_rows(replicate):
    rows = frame_of(np.random.default_rng(2))
    result = bootstrap(rows, replicates=100, bins=10)
    ids = np.sort(rows["sample_id"].unique().to_numpy())
    weights = poisson_weights("s", ids, 100)[replicate]
    table = suite(explicit(rows, weights, ids), 10)
    for name in LINEAR:
        got = result.values[name][:, replicate]
        np.testing.assert_allclose(got, column(table, name), rtol=0, atol=1e-12, err_msg=name)
    for name in RANK_METRICS:  # exact levels (fewer than 1024): Float32 counts, Float64 ratios
        got = result.values[name][:, replicate]
        np.testing.assert_allclose(got, column(table, name), rtol=0, atol=1e-12, err_msg=name)


def test_ace_replicates_keep_the_point_estimates_bins():
    rows = frame_of(np.random.default_rng(3))
    bins = 6
    result = bootstrap(rows, replicates=40, bins=bins)
    ids = np.sort(rows["sample_id"].unique().to_numpy())
    weights = poisson_weights("s", ids, 40)[7]
    binned = rows.with_columns(
        metrics.mass_bin_index(bins=bins).over(list(CELL), order_by=None).alias("mass")
    )
    reweighted = explicit(binned, weights, ids)
    expected = (
        reweighted.group_by(*CELL, "mass")
        .agg(
            n=pl.len(),
            sum_confidence=pl.col("confidence").sum(),
            sum_correct=pl.col("correct").cast(pl.Float64).sum(),
        )
        .group_by(CELL)
        .agg(metrics.ece_from_bins())
        .sort(CELL)
    )
    np.testing.assert_allclose(result.values["ace"][:, 7], expected["ece"], atol=1e-12)


def test_effect_size_replicates_of_confidences_bunched_near_one():
    # the replicates' moments are sums of confidences centred on the cell's mean; a variance
    # is zeroed only below their rounding residue (an all-equal group), never for being small
    c, z = bunched_near_one(np.random.default_rng(5))
    rows = long_table(c, z, study="s")
    result = bootstrap(rows, replicates=20)
    d, r = exact_effect_sizes(c, z)
    assert result.points["cohens_d"][0] == pytest.approx(d, rel=1e-9)
    assert result.points["point_biserial"][0] == pytest.approx(r, rel=1e-9)
    weights = poisson_weights("s", np.arange(len(c)), 20)
    for b in (3, 11):
        resample = np.repeat(np.arange(len(c)), weights[b])
        d, r = exact_effect_sizes(c[resample], z[resample])
        assert result.values["cohens_d"][0, b] == pytest.approx(d, rel=1e-9)
        assert result.values["point_biserial"][0, b] == pytest.approx(r, rel=1e-9)


cells = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.1, 1 / 3, 0.5, 0.6, 0.8, 0.9, 0.95, 1.0]),
        st.booleans(),
        st.integers(0, 7),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells, st.integers(0, 49))
def test_gemm_equals_explicit_weights_on_any_cell(rows, replicate):
    """Edge confidences (0, 1, bin edges), duplicated samples, one-row cells, all right/wrong."""
    frame = pl.DataFrame(
        {
            "study": "h",
            "dataset": "d",
            "model": "m",
            "corruption": "none",
            "severity": 0.0,
            "seed": pl.Series([0] * len(rows), dtype=pl.Int32),
            "repeat": pl.Series(list(range(len(rows))), dtype=pl.Int32),
            "sample_id": [s for _, _, s in rows],
            "label": pl.Series([None] * len(rows), dtype=pl.Int32),
            "confidence": [c for c, _, _ in rows],
            "correct": [z for _, z, _ in rows],
        }
    )
    result = bootstrap(frame, replicates=50, bins=5)
    ids = np.sort(frame["sample_id"].unique().to_numpy())
    weights = poisson_weights("h", ids, 50)[replicate]
    if weights.sum() == 0:
        assert all(np.isnan(result.values[m][0, replicate]) for m in ("accuracy", "ece"))
        return
    reweighted = explicit(frame, weights, ids)
    table = metrics.calibration(reweighted, CELL, bins=5, proba=None, events=()).collect()
    for name in WIDTH_METRICS:
        got = result.values[name][0, replicate]
        np.testing.assert_allclose(got, column(table, name)[0], atol=1e-12, err_msg=name)


def test_rows_order_and_chunks_do_not_change_anything():
    rows = frame_of(np.random.default_rng(4), models=("a", "b", "c"))
    one = bootstrap(rows, replicates=30)
    shuffled = bootstrap(rows.sample(fraction=1.0, shuffle=True, seed=1), replicates=30)
    chunked = bootstrap(rows, replicates=30, chunk_rows=300)  # a chunk per cell or two
    for name in one.values:
        np.testing.assert_array_equal(one.values[name], shuffled.values[name], err_msg=name)
        # other chunks, other matrix shapes: the exact product gives the same bits whatever
        # order BLAS sums in
        np.testing.assert_array_equal(one.values[name], chunked.values[name], err_msg=name)
    for name in SEED_METRICS:  # group-by sums: rounding may follow the row order
        np.testing.assert_allclose(
            column(one.seeds, name), column(shuffled.seeds, name), atol=1e-12
        )


@pytest.mark.parametrize(("points", "chunk_rows", "seed_rows"), [(50, None, None), (7, 300, 159)])
def test_the_risk_coverage_grid_read_off_the_sorted_rows_is_the_curves(
    points, chunk_rows, seed_rows, monkeypatch
):
    # the grid the report reads off the rows the bootstrap sorts (ties broken by sample,
    # seed and repeat there, not at all in the curve's own sort) has the curve's bits; in
    # chunks of a cell or two, and for cells too large to split, read after the replicates
    rng = np.random.default_rng(21)
    rows = pl.concat(
        [
            frame_of(rng, models=("b", "a"), decimals=1),  # few levels, many ties
            frame_of(rng, models=("a",), severities=(0.0,), decimals=None, study="r"),
            frame_of(rng, models=("a",), severities=(0.3,), samples=5, study="r"),
        ]
    ).sample(fraction=1.0, shuffle=True, seed=2)
    if seed_rows is not None:
        monkeypatch.setattr(_bootstrap, "SEED_ROWS", seed_rows)
    options = {} if chunk_rows is None else {"chunk_rows": chunk_rows}
    result = bootstrap(rows, replicates=5, curve_points=points, **options)
    expected = risk_coverage(metrics.selective_curve(rows, CELL), points=points).collect()
    assert expected.height == points * result.cells.height
    assert_frame_equal(result.risk_coverage, expected, check_exact=True)
    assert bootstrap(rows, replicates=5).risk_coverage is None
    with pytest.raises(ParameterError, match="curve_points"):
        bootstrap(rows, replicates=5, curve_points=-1)


def test_the_risk_coverage_grid_of_no_rows_has_the_curves_columns():
    rows = frame_of(np.random.default_rng(5), models=("a",), severities=(0.0,)).clear()
    expected = risk_coverage(metrics.selective_curve(rows, CELL)).collect()
    got = bootstrap(rows, replicates=5, curve_points=50).risk_coverage
    assert got.is_empty() and got.schema == expected.schema


@pytest.mark.parametrize("kept", [("width",), ("mass",), ()])
def test_binnings_whose_bins_are_not_kept_change_nothing_else(kept):
    rows = frame_of(np.random.default_rng(12), models=("a", "b"))
    every = bootstrap(rows, replicates=40, bins=10)
    some = bootstrap(rows, replicates=40, bins=10, bin_replicates=kept)
    assert set(every.bins) == {"width", "mass"} and set(some.bins) == set(kept)
    for binning in kept:
        np.testing.assert_array_equal(every.bins[binning], some.bins[binning])
    for name in every.values:
        np.testing.assert_array_equal(every.values[name], some.values[name], err_msg=name)
        np.testing.assert_array_equal(every.points[name], some.points[name], err_msg=name)
    for binning in ("width", "mass"):
        np.testing.assert_array_equal(every.bin_accuracy[binning], some.bin_accuracy[binning])
        np.testing.assert_array_equal(every.bin_samples[binning], some.bin_samples[binning])
    assert bin_intervals(some).equals(bin_intervals(every))
    assert some.seeds.equals(every.seeds)


def test_replicates_of_some_cells_combined_are_one_bootstrap_of_them_all():
    # a cell's replicates depend on its rows and the draws alone: bootstraps of two sets of
    # cells (overlapping, drawn apart) combined are one bootstrap of every cell, bit for bit
    rows = frame_of(np.random.default_rng(13), models=("a", "b", "c"))
    options = {"replicates": 30, "curve_points": 20}
    whole = bootstrap(rows, **options)
    first = bootstrap(rows.filter(pl.col("model") != "c"), **options)
    second = bootstrap(rows.filter(pl.col("model") != "a"), bin_replicates=("width",), **options)
    got = _bootstrap.combined([second, first], whole.cells.reverse())
    assert got.cells.equals(whole.cells) and got.draws == whole.draws
    assert list(got.values) == list(whole.values)  # in the bootstrap's order
    for name in whole.values:
        np.testing.assert_array_equal(got.values[name], whole.values[name], err_msg=name)
        np.testing.assert_array_equal(got.points[name], whole.points[name], err_msg=name)
    assert set(got.bins) == {"width"}  # the binnings every part kept
    np.testing.assert_array_equal(got.bins["width"], whole.bins["width"])
    for binning in ("width", "mass"):
        np.testing.assert_array_equal(got.bin_samples[binning], whole.bin_samples[binning])
        np.testing.assert_array_equal(got.bin_accuracy[binning], whole.bin_accuracy[binning])
    assert_frame_equal(got.seeds, whole.seeds, check_exact=True)
    assert_frame_equal(got.risk_coverage, whole.risk_coverage, check_exact=True)
    # the cells asked for only, each from the first part that holds it
    b = _bootstrap.combined([first], first.cells.filter(pl.col("model") == "b"))
    assert b.cells["model"].unique().to_list() == ["b"]
    at = whole.cells.with_row_index("i").filter(pl.col("model") == "b")["i"].to_numpy()
    np.testing.assert_array_equal(b.values["ece"], whole.values["ece"][at])
    with pytest.raises(ValueError, match="one set of draws"):
        _bootstrap.combined([first, bootstrap(rows, replicates=30, seed=1)], whole.cells)
    with pytest.raises(ValueError, match="none of the parts"):
        _bootstrap.combined([first], whole.cells)


def test_the_chunk_budget_holds_where_each_run_sends_the_work(monkeypatch):
    # a cluster's each_run hands a worker a run of many cells; the worker still reads and
    # resamples them in chunks of at most chunk_rows rows, with the same bits as here
    rows = frame_of(np.random.default_rng(4), models=("a", "b", "c"))
    sizes = rows.group_by(CELL).len()["len"]
    one = bootstrap(rows, replicates=30)
    chunks = []
    chunk = _bootstrap._chunk

    def counted(lazy, cells, ctx):
        chunks.append(cells["n"].sum())
        return chunk(lazy, cells, ctx)

    monkeypatch.setattr(_bootstrap, "_chunk", counted)

    def halves(cells, work):  # two runs of cells, as a cluster's partitions
        return [work(rows.lazy(), run) for run in (cells[:3], cells[3:])]

    sent = bootstrap(rows, replicates=30, chunk_rows=2 * sizes.max(), each_run=halves)
    assert len(chunks) > 2 and max(chunks) <= 2 * sizes.max()  # two runs, split further
    assert sum(chunks) == rows.height
    for name in one.values:
        np.testing.assert_array_equal(one.values[name], sent.values[name], err_msg=name)
    assert_frame_equal(one.seeds, sent.seeds, check_exact=True)


def test_a_chunk_of_small_cells_is_bounded_by_its_replicates(monkeypatch):
    # many small cells: the rows alone would put them all in one chunk, with every cell's
    # replicates held at once; each cell weighs at least its share of CHUNK_REPLICATES
    rows = frame_of(np.random.default_rng(4), models=("a", "b", "c"))
    one = bootstrap(rows, replicates=30)
    cells = []
    chunk = _bootstrap._chunk

    def counted(lazy, run, ctx):
        cells.append(run.height)
        return chunk(lazy, run, ctx)

    monkeypatch.setattr(_bootstrap, "_chunk", counted)
    monkeypatch.setattr(_bootstrap, "CHUNK_REPLICATES", 2 * 31)  # two cells of B = 30
    small = bootstrap(rows, replicates=30, chunk_rows=10**9)
    assert cells == [2, 2, 2]
    for name in one.values:
        np.testing.assert_array_equal(one.values[name], small.values[name], err_msg=name)
    for source in ("bins", "bin_samples", "bin_accuracy"):
        for binning, array in getattr(one, source).items():
            np.testing.assert_array_equal(array, getattr(small, source)[binning])
    assert_frame_equal(one.seeds, small.seeds, check_exact=True)


def test_per_seed_values_beside_the_replicates_fail_and_stop_with_them(monkeypatch):
    # the per-seed values run on a thread of their own beside the replicates: an error on
    # either side reaches the caller, and one in the replicates stops the per-seed values at
    # their next run of cells instead of computing values nobody will read
    rows = frame_of(np.random.default_rng(4), models=("a", "b", "c"))
    # a run of one cell (160 rows) each: six runs, beside the replicates (a larger cell's run
    # after them)
    monkeypatch.setattr(_bootstrap, "SEED_ROWS", 160)
    seed_values, started = _bootstrap._seed_values, []

    def slow(part, ctx):
        started.append(part.height)
        time.sleep(0.2)
        return seed_values(part, ctx)

    def failing(*args):  # once the per-seed values are under way
        deadline = time.monotonic() + 30
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError("the replicates failed")

    monkeypatch.setattr(_bootstrap, "_seed_values", slow)
    monkeypatch.setattr(_bootstrap, "_block", failing)
    with pytest.raises(RuntimeError, match="the replicates failed"):
        bootstrap(rows, replicates=30)
    assert 1 <= len(started) <= 2  # of six runs
    monkeypatch.undo()

    def broken(part, ctx):
        raise ValueError("a per-seed value failed")

    monkeypatch.setattr(_bootstrap, "_seed_values", broken)
    with pytest.raises(ValueError, match="a per-seed value failed"):
        bootstrap(rows, replicates=30)


def test_grouped_levels_keep_the_exact_point_and_nearly_the_exact_interval():
    rows = frame_of(np.random.default_rng(5), samples=150, decimals=None)  # distinct confidences
    exact = bootstrap(rows, replicates=400, levels=10**6)
    grouped = bootstrap(rows, replicates=400, levels=64)
    for name in RANK_METRICS:
        np.testing.assert_allclose(grouped.points[name], exact.points[name], atol=1e-12)
    lo_e, hi_e = percentile_interval(exact.values["auroc"])
    lo_g, hi_g = percentile_interval(grouped.values["auroc"])
    width = hi_e - lo_e
    assert np.max(np.abs(lo_g - lo_e) / width) < 0.1 and np.max(np.abs(hi_g - hi_e) / width) < 0.1


@pytest.mark.parametrize("grouped", [False, True], ids=["dense", "grouped"])
def test_rank_replicates_count_a_level_past_float32s_last_exact_integer_exactly(grouped):
    """70 000 rows at one level, each with weight 255 in the first replicate, count
    17 850 000 > 2²⁴, which Float32 adding 255 at a time cannot hold: the replicates are
    ``rank_metrics`` of the Int64 counts, bit for bit."""
    from relcol.analysis._bootstrap import _Context, _GroupWeights, _rank_replicates

    n, replicates = 70_000, 3
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 256, size=(replicates, n)).astype(np.uint8)
    weights[0] = 255
    # level 0: a right row on every sample; level 1: a wrong row on each of the first ten
    part = {
        "cell": np.zeros(n + 10, dtype=np.int64),
        "grid": np.r_[np.zeros(n, dtype=np.int64), np.ones(10, dtype=np.int64)],
        "z": np.r_[np.ones(n), np.zeros(10)],
        "sid": np.r_[np.arange(n), np.arange(10)],
    }
    wt = np.c_[np.ones(n, dtype=np.int64), weights.T.astype(np.int64)]
    right, wrong = wt.sum(axis=0), wt[:10].sum(axis=0)
    assert right[1] == 17_850_000 > 2**24
    zero = np.zeros_like(right)
    expected = rank_metrics(
        np.stack([right, zero]).astype(np.float64), np.stack([zero, wrong]).astype(np.float64)
    )
    if grouped:
        source = _GroupWeights({0: wt.astype(np.uint8)}, replicates + 1)
        part["group"] = np.zeros(n + 10, dtype=np.int64)
    else:
        source = wt.astype(np.uint8)  # as the layer holds Wᵀ
    ctx = _Context(replicates, 15, 0, 1024, 0.8, 0.05, False)
    got = _rank_replicates(part, 1, n, source, ctx)
    for name in RANK_METRICS:
        np.testing.assert_array_equal(got[name][0], expected[name], err_msg=name)


def test_weighted_rank_metrics_are_rank_metrics_of_the_weighted_level_counts():
    # groups of rows (ties, levels without rows, samples drawn twice, a group without rows)
    # under 300 columns of Poisson weights, in one call: each group's values are the bits of
    # rank_metrics on its counts H·W laid out in an array
    rng = np.random.default_rng(4)
    weights = rng.poisson(1.0, (150, 300)).astype(np.float32)
    shapes = [(1, 1), (7, 3), (0, 1), (400, 50), (2000, 1024)]
    groups = []
    for rows, levels in shapes:
        level = np.sort(rng.integers(0, levels, rows))
        groups.append(
            (level, (rng.random(rows) < 0.7).astype(np.float64), rng.integers(0, 150, rows))
        )
    bounds = np.cumsum([0] + [rows for rows, _ in shapes])
    got = weighted_rank_metrics(
        *(np.concatenate(column) for column in zip(*groups, strict=True)),
        weights,
        bounds,
        coverage=0.7,
        risk=0.1,
    )
    for g, ((level, correct, sample), (rows, levels)) in enumerate(
        zip(groups, shapes, strict=True)
    ):
        right = np.zeros((levels, 300))
        wrong = np.zeros((levels, 300))
        np.add.at(right, level[correct > 0], weights[sample[correct > 0]])
        np.add.at(wrong, level[correct == 0], weights[sample[correct == 0]])
        expected = rank_metrics(right, wrong, coverage=0.7, risk=0.1)
        for name in RANK_METRICS:
            np.testing.assert_array_equal(got[name][g], expected[name], err_msg=f"{name} {rows}")
    assert np.isnan(got["auroc"][2]).all()


def test_rank_metrics_of_level_counts():
    # levels .3 (1 wrong), .6 (1 right, 1 wrong), .9 (1 right): the suite's docstring example
    out = rank_metrics(np.array([0.0, 1, 1]), np.array([1.0, 1, 0]), coverage=0.5, risk=0.4)
    assert out["auroc"] == 0.875 and out["fpr_at_95tpr"] == 0.5
    assert out["aupr_success"] == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert out["risk_at_coverage"] == pytest.approx(1 / 3) and out["coverage_at_risk"] == 0.75
    # empty levels anywhere change nothing
    padded = rank_metrics(np.array([0.0, 0, 0, 1, 0, 1, 0]), np.array([0.0, 1, 0, 1, 0, 0, 0]))
    plain = rank_metrics(np.array([0.0, 1, 1]), np.array([1.0, 1, 0]))
    for name in RANK_METRICS:
        assert padded[name] == pytest.approx(plain[name], abs=1e-15)
    none_wrong = rank_metrics(np.array([1.0, 2]), np.array([0.0, 0]))
    assert np.isnan(none_wrong["auroc"]) and np.isnan(none_wrong["aupr_error"])


def _rank_pass_by_level(right, wrong, coverage, risk):
    """The rank kernel's recurrences (docs/metrics.md), one level at a time in plain Python
    floats: AUROC, AUPR of successes and errors, FPR at 95 % TPR, AURC, risk at coverage,
    coverage at risk of one column of counts."""
    n1, n0 = sum(right), sum(wrong)
    n = n1 + n0
    below_r = below_w = rank_sum = error_p = success_p = risk_sum = fp = within = 0.0
    at = math.nan
    for r, w in zip(right, wrong, strict=True):
        rank_sum += r * below_w + 0.5 * r * w
        error_p += w * ((below_w + w) / max(below_r + r + below_w + w, 1.0))
        accepted, errors = n - below_r - below_w, n0 - below_w
        fp = errors if 20.0 * below_r <= n1 else fp
        within = accepted if errors <= risk * accepted and accepted > within else within
        safe = max(accepted, 1.0)
        success_p += r * ((n1 - below_r) / safe)
        risk_sum += (r + w) * (errors / safe)
        at = errors / safe if accepted >= coverage * n else at
        below_r, below_w = below_r + r, below_w + w
    both = n1 > 0 and n0 > 0
    return [
        rank_sum / (n1 * n0) if both else math.nan,
        success_p / n1 if n1 > 0 else math.nan,
        error_p / n0 if n0 > 0 else math.nan,
        fp / n0 if both else math.nan,
        risk_sum / n if n > 0 else math.nan,
        at if n > 0 else math.nan,
        within / n if n > 0 else math.nan,
    ]


@pytest.mark.parametrize("levels", range(1, 10))
def test_rank_kernel_takes_levels_in_passes_with_the_bits_of_one_level_at_a_time(levels):
    # the compiled loop takes four levels per pass over the groups, the rest one by one: every
    # count of levels left over (0–3, after 0–2 whole passes) gives the plain loop's bits
    rng = np.random.default_rng(levels)
    right = rng.poisson(1.0, (levels, 23)).astype(np.float32)
    wrong = rng.poisson(0.4, (levels, 23)).astype(np.float32)
    right[:, 0], wrong[:, 1] = 0, 0
    got = rank_metrics(right, wrong, coverage=0.6, risk=0.2)
    names = ("auroc", "aupr_success", "aupr_error", "fpr_at_95tpr", "aurc")
    names += ("risk_at_coverage", "coverage_at_risk")
    for g in range(right.shape[1]):
        column = (right[:, g].astype(float).tolist(), wrong[:, g].astype(float).tolist())
        expected = _rank_pass_by_level(*column, coverage=0.6, risk=0.2)
        for name, value in zip(names, expected, strict=True):
            assert np.array_equal(got[name][g], value, equal_nan=True), (name, g)


def test_rank_metrics_of_weighted_counts_equal_the_suite_on_the_rows_they_count():
    # 600 groups × 40 levels of Poisson counts, as the replicates hand them over (Float32,
    # levels often empty, a column sometimes all right or all wrong): each column expanded
    # into its rows (confidence = the level) and measured by the Polars suite's builders
    rng = np.random.default_rng(11)
    levels, groups, coverage, risk = 40, 600, 0.7, 0.1
    right = rng.poisson(rng.uniform(0, 2, groups), (levels, groups)).astype(np.float32)
    wrong = rng.poisson(rng.uniform(0, 1, groups), (levels, groups)).astype(np.float32)
    right[:, 0], wrong[:, 1] = 0, 0  # no right rows; no wrong rows
    got = rank_metrics(right.reshape(levels, 20, 30), wrong.reshape(levels, 20, 30), coverage, risk)
    level, group = np.meshgrid(np.arange(levels), np.arange(groups), indexing="ij")
    rows = pl.DataFrame(
        {
            "group": np.concatenate(
                [np.repeat(group.ravel(), c.ravel().astype(int)) for c in (right, wrong)]
            ),
            "confidence": np.concatenate(
                [np.repeat(level.ravel() / levels, c.ravel().astype(int)) for c in (right, wrong)]
            ),
            "correct": np.repeat([True, False], [int(right.sum()), int(wrong.sum())]),
        }
    )
    suite = (
        rows.group_by("group")
        .agg(
            metrics.auroc(),
            metrics.aupr_success(),
            metrics.aupr_error(),
            metrics.fpr_at_95tpr(),
            metrics.aurc(),
            metrics.aurc_optimal(),
            metrics.e_aurc(),
            metrics.risk_at_coverage(coverage=coverage),
            metrics.coverage_at_risk(risk=risk),
        )
        .sort("group")
    )
    assert suite["group"].to_list() == list(range(groups))
    for name in RANK_METRICS:
        expected = suite[name].fill_null(np.nan).to_numpy()
        np.testing.assert_allclose(
            got[name].ravel(), expected, rtol=1e-12, atol=1e-14, err_msg=name
        )
    one_sided = (right.sum(0) == 0) | (wrong.sum(0) == 0)
    assert one_sided[:2].all() and np.array_equal(np.isnan(got["auroc"].ravel()), one_sided)


def test_bin_metrics_skip_empty_bins():
    n = np.array([[2.0], [0.0], [1.0]])
    s = np.array([[1.2], [0.0], [0.9]])
    z = np.array([[1.0], [0.0], [1.0]])
    out = bin_metrics(n, s, z, names=("ece", "mce", "rmsce", "accuracy"))
    assert out["ece"][0] == pytest.approx((0.2 + 0.1) / 3)
    assert out["mce"][0] == pytest.approx(0.1 / 1) or out["mce"][0] == pytest.approx(0.1)
    assert out["accuracy"][0] == pytest.approx(2 / 3)
    empty = bin_metrics(np.zeros((3, 1)), np.zeros((3, 1)), np.zeros((3, 1)), names=("ece",))
    assert np.isnan(empty["ece"][0])


# Intervals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("block_rows", [None, 3])
def test_percentile_interval_is_numpys_linear_quantile(block_rows, monkeypatch):
    import relcol.analysis._bootstrap as layer_module

    if block_rows is not None:  # rows taken 3 at a time, where the default takes all 50
        monkeypatch.setattr(layer_module, "ROW_BLOCK_ENTRIES", block_rows * 1000)
    values = np.random.default_rng(6).normal(size=(50, 1000))
    lo, hi = percentile_interval(values, alpha=0.05)
    expected = np.quantile(values, [0.025, 0.975], axis=1)
    np.testing.assert_allclose(lo, expected[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(hi, expected[1], rtol=0, atol=1e-15)
    holes = values.copy()
    holes[0, :400] = np.nan  # 60 % defined: over the defined ones
    holes[1, :600] = np.nan  # 40 % defined: none
    holes[4, 7] = np.nan  # in the second block of 3: over its 999 defined ones
    lo, hi = percentile_interval(holes)
    assert lo[0] == pytest.approx(np.quantile(values[0, 400:], 0.025)) and np.isnan(lo[1])
    assert hi[4] == pytest.approx(np.quantile(np.delete(values[4], 7), 0.975))
    np.testing.assert_array_equal(lo[5:], percentile_interval(values[5:])[0])
    with pytest.raises(ParameterError, match="alpha"):
        percentile_interval(values, alpha=1.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.5])
def test_percentile_interval_has_the_bits_of_numpys_quantile_and_leaves_its_input(dtype, alpha):
    # rows of 1001 replicates (as B = 1000 gives), ties among them, in Float32 (the bins'
    # accuracies) and Float64; numpy's quantile of the rows widened to Float64, bit for bit
    rng = np.random.default_rng(8)
    values = rng.normal(size=(40, 1001)).astype(dtype)
    values[:10] = np.round(values[:10] * 4) / 4  # many ties
    values[10, :] = 0.25  # one value throughout
    given = values.copy()
    lo, hi = percentile_interval(values, alpha=alpha)
    expected = np.quantile(values.astype(np.float64), [alpha / 2, 1 - alpha / 2], axis=1)
    assert lo.dtype == hi.dtype == np.float64
    assert lo.tobytes() == expected[0].tobytes() and hi.tobytes() == expected[1].tobytes()
    assert values.tobytes() == given.tobytes()


def test_with_intervals_places_bounds_and_spread_beside_each_metric():
    rows = frame_of(np.random.default_rng(7))
    result = bootstrap(rows, replicates=200)
    table = metrics.calibration(rows, CELL).collect()
    out = with_intervals(
        table, result, metrics=("accuracy", "gap", "abs_gap", "ece", "ece_excess"), spread=("ece",)
    )
    i = out.columns.index("ece")
    # ECE is descriptive (NO_INTERVAL): its per-seed spread, no interval
    assert out.columns[i + 1 : i + 4] == ["ece_sd", "ece_min", "ece_max"]
    assert not {"ece_lo", "ece_excess_lo", "ece_excess_hi"} & set(out.columns)
    assert ((out["accuracy_lo"] <= out["accuracy"]) & (out["accuracy"] <= out["accuracy_hi"])).all()
    # |Δ|'s interval is the image of Δ's under |·|
    lo, hi = out["gap_lo"].to_numpy(), out["gap_hi"].to_numpy()
    folded_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(abs(lo), abs(hi)))
    np.testing.assert_array_equal(out["abs_gap_lo"].to_numpy(), folded_lo)
    np.testing.assert_array_equal(out["abs_gap_hi"].to_numpy(), np.maximum(abs(lo), abs(hi)))
    assert out.height == table.height and out.select(CELL).equals(table.select(CELL))
    spread = [c for c in out.columns if c.endswith(("_sd", "_min", "_max"))]
    assert spread == ["ece_sd", "ece_min", "ece_max"]
    # no spread asked for: no spread columns (the selective table once carried calibration's)
    bare = with_intervals(table, result, metrics=("accuracy",), spread=())
    assert bare.columns == [
        *table.columns[: table.columns.index("accuracy") + 1],
        "accuracy_lo",
        "accuracy_hi",
        *table.columns[table.columns.index("accuracy") + 1 :],
    ]


def test_per_bin_intervals_are_wilson_on_the_bins_distinct_samples():
    rows = frame_of(np.random.default_rng(8))
    result = bootstrap(rows, replicates=200, bins=10)
    bins = metrics.calibration_bins(rows, CELL, bins=10).collect()
    samples = (
        rows.with_columns(bin=metrics.bin_index(bins=10))
        .group_by(*CELL, "bin")
        .agg(expected=pl.col("sample_id").n_unique())
    )
    joined = (
        bins.with_columns(binning=pl.lit("width"))
        .join(bin_intervals(result), on=[*CELL, "binning", "bin"], nulls_equal=True)
        .join(samples, on=[*CELL, "bin"], nulls_equal=True)
    )
    assert joined.height == bins.height
    assert (joined["samples"] == joined["expected"]).all()
    enough = joined.filter(pl.col("samples") >= MIN_BIN_SAMPLES)
    few = joined.filter(pl.col("samples") < MIN_BIN_SAMPLES)
    assert enough.height > 0 and few["accuracy_lo"].null_count() == few.height
    # Wilson by hand, z = Φ⁻¹(0.975), on the distinct samples (not the rows)
    p, n = enough["accuracy"].to_numpy(), enough["samples"].to_numpy()
    z = 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    np.testing.assert_allclose(enough["accuracy_lo"], np.clip(np.minimum(centre - half, p), 0, 1))
    np.testing.assert_allclose(enough["accuracy_hi"], np.clip(np.maximum(centre + half, p), 0, 1))


# Paired differences --------------------------------------------------------------------------


def test_differences_are_paired():
    rng = np.random.default_rng(9)
    rows = frame_of(rng, models=("a", "b"), severities=(0.0, 0.3))
    # model c: a copy of model a, so every c − a difference is 0 in every replicate
    copy = rows.filter(pl.col("model") == "a").with_columns(model=pl.lit("c"))
    rows = pl.concat([rows, copy])
    result = bootstrap(rows, replicates=200)
    points = suite(rows, 15)
    table = paired_differences(result, points, compare="all")
    same = table.filter(
        (pl.col("contrast") == "model")
        & (pl.col("model") == "c")
        & (pl.col("reference_model") == "a")
    )
    assert same.height > 0
    assert (same["difference_lo"].abs().max() < 1e-12) and (
        same["difference_hi"].abs().max() < 1e-12
    )
    # vs clean: the replicate differences of the cell and its clean cell
    row = table.filter(
        (pl.col("contrast") == "clean") & (pl.col("model") == "b") & (pl.col("metric") == "gap")
    ).row(0, named=True)
    keys = result.cells.with_row_index("i")
    index = keys.filter((pl.col("model") == "b") & (pl.col("severity") == 0.3))["i"][0]
    clean = keys.filter((pl.col("model") == "b") & (pl.col("severity") == 0.0))["i"][0]
    diff = result.values["gap"][index] - result.values["gap"][clean]
    assert row["difference_lo"] == pytest.approx(np.quantile(diff, 0.025), abs=1e-15)
    assert row["reference_severity"] == 0.0 and row["reference_model"] == "b"
    # each model pair both ways, mirrored
    ab = table.filter(
        (pl.col("contrast") == "model")
        & (pl.col("model") == "a")
        & (pl.col("reference_model") == "b")
        & (pl.col("metric") == "gap")
    )
    ba = table.filter(
        (pl.col("contrast") == "model")
        & (pl.col("model") == "b")
        & (pl.col("reference_model") == "a")
        & (pl.col("metric") == "gap")
    )
    np.testing.assert_allclose(ab["difference_lo"], -ba["difference_hi"], atol=1e-12)


# Per-seed values ---------------------------------------------------------------------------


def test_per_seed_values_are_the_suite_on_each_seeds_rows():
    rows = frame_of(np.random.default_rng(10), seeds=3)
    result = bootstrap(rows, replicates=10)
    by = [*CELL, "seed"]
    cal = metrics.calibration(rows, by).collect()
    dis = metrics.discrimination(rows, by).collect().drop("n", "score")
    sel = metrics.selective(rows, by).collect().drop("n", "score")
    expected = cal.join(dis, on=by, nulls_equal=True).join(sel, on=by, nulls_equal=True).sort(by)
    seeds = result.seeds.sort(by)
    assert seeds.height == expected.height == 2 * 2 * 3
    for name in SEED_METRICS:
        np.testing.assert_allclose(
            column(seeds, name), column(expected, name), atol=1e-12, err_msg=name
        )
    spread = seed_spread(result, ["ece"])
    per_cell = expected.group_by(CELL).agg(
        sd=pl.col("ece").std(), low=pl.col("ece").min(), high=pl.col("ece").max()
    )
    joined = spread.join(per_cell, on=list(CELL), nulls_equal=True)
    assert (joined["ece_sd"] - joined["sd"]).abs().max() < 1e-12
    assert (joined["ece_min"] - joined["low"]).abs().max() < 1e-12 and (joined["seeds"] == 3).all()


def test_per_seed_values_of_scattered_seeds_missing_from_some_cells_are_the_suites():
    # each (cell, seed) is numbered among the seeds present: seeds far apart, one negative,
    # and a seed that one cell lacks
    rows = frame_of(np.random.default_rng(12), seeds=3)
    rows = rows.with_columns(
        seed=pl.col("seed").replace_strict({0: -7, 1: 40_000, 2: 3}, return_dtype=pl.Int32)
    ).filter(~((pl.col("model") == "b") & (pl.col("severity") == 0.5) & (pl.col("seed") == 3)))
    result = bootstrap(rows, replicates=10)
    by = [*CELL, "seed"]
    cal = metrics.calibration(rows, by).collect()
    dis = metrics.discrimination(rows, by).collect().drop("n", "score")
    expected = cal.join(dis, on=by, nulls_equal=True).sort(by)
    seeds = result.seeds.sort(by)
    assert seeds.height == expected.height == 2 * 2 * 3 - 1
    assert seeds["seed"].to_list() == expected["seed"].to_list()
    assert seeds["n"].to_list() == expected["n"].to_list()
    for name in ("ece", "mce", "brier_top", "nll_top", "accuracy", "auroc", "cohens_d"):
        np.testing.assert_allclose(
            column(seeds, name), column(expected, name), atol=1e-12, err_msg=name
        )


@pytest.mark.parametrize("key", ["seed", "repeat", "sample_id"])
def test_a_row_without_a_seed_repeat_or_sample_id_is_one_clear_error(key):
    rows = frame_of(np.random.default_rng(13), seeds=2)
    rows = rows.with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(None).otherwise(key).alias(key)
    )
    with pytest.raises(
        ParameterError, match=f"bootstrap needs every row's {key}: null {key} in 1 of these"
    ):
        bootstrap(rows, replicates=5)


def test_per_seed_values_computed_a_few_cells_at_a_time_are_the_same_bits(monkeypatch):
    # a chunk's per-seed values are computed in runs of whole cells of SEED_ROWS rows
    from polars.testing import assert_frame_equal

    from relcol.analysis import _bootstrap

    rows = frame_of(np.random.default_rng(11), models=("a", "b", "c"), seeds=3)
    whole = bootstrap(rows, replicates=10)
    monkeypatch.setattr(_bootstrap, "SEED_ROWS", 150)  # a run per cell or two
    runs = []
    real = _bootstrap._seed_values
    monkeypatch.setattr(
        _bootstrap, "_seed_values", lambda part, ctx: runs.append(part.height) or real(part, ctx)
    )
    sliced = bootstrap(rows, replicates=10)
    assert len(runs) > 3 and sum(runs) == rows.height
    assert_frame_equal(sliced.seeds, whole.seeds, check_exact=True)


def test_per_seed_values_of_a_cell_too_large_to_split_run_after_the_replicates(monkeypatch):
    # beside the products their memory would add to the products'; a cell of more than
    # SEED_ROWS rows cannot be split, so its per-seed values wait for the replicates
    from polars.testing import assert_frame_equal

    from relcol.analysis import _bootstrap

    rows = frame_of(np.random.default_rng(13), models=("a", "b"))  # cells of 160 rows
    whole = bootstrap(rows, replicates=10)
    events = []
    block, seed_values = _bootstrap._block, _bootstrap._seed_values

    def spy_block(*args):
        out = block(*args)
        events.append("replicates")
        return out

    def spy_seeds(part, ctx):
        events.append("seeds")
        return seed_values(part, ctx)

    monkeypatch.setattr(_bootstrap, "_block", spy_block)
    monkeypatch.setattr(_bootstrap, "_seed_values", spy_seeds)
    monkeypatch.setattr(_bootstrap, "SEED_ROWS", 159)
    after = bootstrap(rows, replicates=10)
    assert events == ["replicates", "seeds", "seeds", "seeds", "seeds"]
    assert_frame_equal(after.seeds, whole.seeds, check_exact=True)
    for name in whole.values:
        np.testing.assert_array_equal(after.values[name], whole.values[name], err_msg=name)


def test_batches_of_any_size_give_the_same_bits(monkeypatch):
    # BATCH_ENTRIES sizes the runs of cells whose products (and level counts) are computed
    # together; the exact product and the per-cell kernels make the batching invisible
    from relcol.analysis import _bootstrap

    rows = frame_of(np.random.default_rng(12), models=("a", "b", "c"), decimals=None)
    whole = bootstrap(rows, replicates=20)
    linear = []
    real = _bootstrap._linear
    monkeypatch.setattr(
        _bootstrap,
        "_linear",
        lambda part, n_cells, *args, **kwargs: (
            linear.append(n_cells) or real(part, n_cells, *args, **kwargs)
        ),
    )
    monkeypatch.setattr(_bootstrap, "BATCH_ENTRIES", 2_000)  # a cell per batch
    batched = bootstrap(rows, replicates=20)
    assert len(linear) == whole.cells.height and set(linear) == {1}
    for source in ("values", "points", "bins", "bin_samples", "bin_accuracy"):
        for name, array in getattr(whole, source).items():
            np.testing.assert_array_equal(
                getattr(batched, source)[name], array, err_msg=f"{source} {name}"
            )


@pytest.mark.parametrize(
    "values",
    [
        np.array([], dtype=np.int64),
        np.array([7]),
        np.random.default_rng(0).integers(-50, 50, 1000),  # a dense range: the table
        np.random.default_rng(1).integers(0, 10**9, 100),  # a sparse one: a sort
        np.array([-(2**62), 2**62, 0, 2**62]),  # a range past int64: a sort, no overflow
        np.random.default_rng(2).integers(0, 600, 10**5).astype(np.uint32),
        np.random.default_rng(3).integers(0, 300, 5000).astype(np.int32),
    ],
)
def test_unique_is_numpys_unique_with_its_inverse(values):
    from relcol.analysis._bootstrap import _unique

    expected, inverse = np.unique(values, return_inverse=True)
    got, got_inverse = _unique(values)
    assert got.dtype == expected.dtype and got_inverse.dtype == inverse.dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_inverse, inverse)


def test_bad_parameters_are_named():
    rows = frame_of(np.random.default_rng(11), models=("a",), severities=(0.0,))
    with pytest.raises(ParameterError, match=r"replicates must be an int >= 1\. Got 0"):
        bootstrap(rows, replicates=0)
    with pytest.raises(ParameterError, match="seed"):
        bootstrap(rows, seed=-1)
    with pytest.raises(ParameterError, match=r"bin_replicates must name binnings .*'quantile'"):
        bootstrap(rows, bin_replicates=("width", "quantile"))
