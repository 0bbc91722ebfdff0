"""Calibration metrics: numpy reference, Polars row-level and fast paths, DuckDB SQL.

Every metric in ``relcol.metrics.REGISTRY`` goes through the same checks: agreement with
``tests/reference.py``, the two Polars paths and the SQL view agreeing to 1e-9, row-order
invariance, and the edge cases of METRICS.md §2 on every engine.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from relcol.errors import ColumnNotFoundError, RelcolError
from relcol.metrics import (
    REGISTRY,
    ParameterError,
    bin_index,
    calibration,
    calibration_bins,
    ece,
    mce,
)
from relcol.store import CELL, PREDICTIONS, connect_frame, init_script, sql_text
from tests import reference

TOL = 1e-9
KEYS = list(CELL)
METRIC_COLUMNS = list(REGISTRY)
BIN_COLUMNS = [
    "bin",
    "bin_lower",
    "bin_upper",
    "n",
    "sum_confidence",
    "sum_correct",
    "mean_confidence",
    "accuracy",
]


# Data ----------------------------------------------------------------------------------------


def long_table(confidence, correct, **cell) -> pl.DataFrame:
    """Prediction rows with the long table's full schema; cell columns default to one cell."""
    confidence = np.asarray(confidence, dtype=np.float64)
    n = len(confidence)
    columns = {
        "study": "s",
        "dataset": "d",
        "model": "m",
        "corruption": "none",
        "severity": 0.0,
        "seed": 0,
        "repeat": 0,
        "sample_id": np.arange(n),
        "label": None,
        "y_true": 0,
        "y_clean": 0,
        "y_pred": 0,
        "confidence": confidence,
        "correct": np.asarray(correct, dtype=bool),
        "proba": None,
        "run_id": "r",
    } | cell
    frame = pl.DataFrame({name: _column(value, n) for name, value in columns.items()})
    return frame.select(pl.col(name).cast(dtype) for name, dtype in PREDICTIONS.items())


def _column(value, n: int):
    if isinstance(value, np.ndarray | list):
        return pl.Series(value)
    return pl.Series([value] * n)


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    """~24k rows over 72 cells: 2 studies (one multi-label), models, corruptions, severities;
    confidences uniform, exactly on 15ths and 25ths, exactly 0 and 1; cells of unequal size."""
    rng = np.random.default_rng(20240611)
    n = 24_000
    study = rng.choice(["single", "multi"], n)
    kind = rng.integers(0, 4, n)
    confidence = np.select(
        [kind == 0, kind == 1, kind == 2],
        [
            rng.integers(0, 16, n) / 15,
            rng.integers(0, 26, n) / 25,
            rng.choice([0.0, 1.0], n),
        ],
        rng.beta(5, 2, n),
    )
    label = [
        int(x) if s == "multi" else None for s, x in zip(study, rng.integers(0, 2, n), strict=True)
    ]
    return long_table(
        confidence,
        rng.random(n) < np.clip(confidence + rng.normal(-0.05, 0.1, n), 0, 1),
        study=study,
        dataset=rng.choice(["digits", "iris"], n, p=[0.8, 0.2]),
        model=rng.choice(["knn", "lightgbm", "logistic"], n),
        corruption=rng.choice(["mcar", "label_noise"], n),
        severity=rng.choice([0.0, 0.25], n),
        label=label,
        sample_id=np.arange(n),
    )


# Engines: every edge case runs on each ------------------------------------------------------


def polars_fast(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    return calibration(frame, CELL, bins=bins).collect()


def polars_rows(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    exprs = [metric.build(bins=bins) for metric in REGISTRY.values()]
    return frame.group_by(KEYS).agg(exprs).sort(KEYS, nulls_last=True)


def duckdb_view(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    con = connect_frame(workdir, frame, bins=bins)
    try:
        return con.sql(f"SELECT {', '.join(KEYS + METRIC_COLUMNS)} FROM calibration").pl()
    finally:
        con.close()


ENGINES = {"polars": polars_fast, "polars_rows": polars_rows, "duckdb": duckdb_view}


@pytest.fixture(params=list(ENGINES))
def engine(request, tmp_path):
    """``engine(frame, bins)``: the calibration table by one engine, sorted by cell."""
    run = ENGINES[request.param]
    return lambda frame, bins=15: run(frame, bins, tmp_path).sort(KEYS, nulls_last=True)


def sql_bins(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    con = connect_frame(workdir, frame, bins=bins)
    try:
        return con.sql("SELECT * FROM calibration_bins").pl()
    finally:
        con.close()


def assert_close(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert_frame_equal(left, right, check_exact=False, rel_tol=0, abs_tol=TOL)


def one_cell(table: pl.DataFrame) -> dict:
    assert table.height == 1
    return table.row(0, named=True)


# The bin convention ---------------------------------------------------------------------------


def edges_and_neighbours(bins: int) -> np.ndarray:
    """Every edge m/M as a float, and the floats up to 2 ulps either side, inside [0, 1]."""
    values = [m / bins for m in range(bins + 1)]
    for edge in list(values):
        below = above = edge
        for _ in range(2):
            below, above = np.nextafter(below, -1.0), np.nextafter(above, 2.0)
            values += [below, above]
    values = np.array(values)
    return np.unique(values[(values >= 0) & (values <= 1)])


def test_reference_binnings_differ_only_where_float_product_overshoots_an_edge():
    # The two numpy references agree off the edges, and on the edges except where
    # fl(m/M)·M rounds above m: there the literal ⌈c·M⌉ − 1 puts the edge m/M in bin m,
    # while METRICS.md's (m/M, (m+1)/M] puts it in bin m−1. First case: M = 25, m = 7.
    rng = np.random.default_rng(0)
    overshoots = set()
    for bins in range(1, 51):
        uniform = rng.random(1000)
        np.testing.assert_array_equal(
            reference.bin_formula(uniform, bins), reference.bin_searchsorted(uniform, bins)
        )
        edges = np.arange(bins + 1) / bins
        differ = reference.bin_formula(edges, bins) != reference.bin_searchsorted(edges, bins)
        for m in np.flatnonzero(differ):
            assert edges[m] * bins > m  # fl(m/M)·M overshoots; the literal formula says bin m
            assert reference.bin_searchsorted(edges[m : m + 1], bins)[0] == m - 1
            overshoots.add((int(m), bins))
    assert (7, 25) in overshoots and 7 / 25 * 25 == 7.000000000000001
    assert min(bins for _, bins in overshoots) == 25  # M ≤ 24 (10, 15, 20) are unaffected
    assert len(overshoots) == 22


@pytest.mark.parametrize("bins", range(1, 51))
def test_bin_index_puts_every_edge_in_the_lower_bin_both_engines(bins):
    values = edges_and_neighbours(bins)
    expected = reference.bin_searchsorted(values, bins)
    frame = pl.DataFrame({"confidence": values})
    polars = frame.select(bin_index(bins=bins))["bin"].to_numpy()
    np.testing.assert_array_equal(polars, expected)
    con = duckdb.connect()
    con.execute(sql_text("macros/bin_index.sql"))
    sql = con.execute("SELECT bin_index(confidence, ?) FROM frame", [bins]).fetchnumpy()
    np.testing.assert_array_equal(next(iter(sql.values())), expected)


def test_bin_index_named_bin_in_int64_with_zero_and_one_at_the_ends():
    out = pl.DataFrame({"confidence": [0.0, 1e-300, 1 / 15, 0.5, 1.0]}).select(bin_index())
    assert out.schema == pl.Schema({"bin": pl.Int64})
    assert out["bin"].to_list() == [0, 0, 0, 7, 14]


# Reference agreement, both Polars paths, SQL -----------------------------------------------------


@pytest.mark.parametrize("bins", [1, 15, 25])
def test_every_engine_matches_the_numpy_reference(rows, engine, bins):
    assert_close(engine(rows, bins), reference.calibration(rows, KEYS, bins))


@pytest.mark.parametrize("name", list(REGISTRY))
def test_registry_metric_fast_path_equals_row_level_equals_sql(rows, tmp_path, name):
    metric = REGISTRY[name]
    fast = metric.compute(rows, CELL, bins=25).collect().sort(KEYS, nulls_last=True)
    row_level = rows.group_by(KEYS).agg(metric.build(bins=25)).sort(KEYS, nulls_last=True)
    con = connect_frame(tmp_path, rows, bins=25)
    sql = con.sql(f'SELECT {", ".join(KEYS)}, "{metric.column}" AS "{name}" FROM "{metric.view}"')
    assert_close(fast, row_level)
    assert_close(fast, sql.pl().sort(KEYS, nulls_last=True))
    assert fast.height == 72 and fast["label"].null_count() == 24  # null label: one cell


@pytest.mark.parametrize("bins", [1, 15, 25])
def test_calibration_bins_matches_reference_and_sql(rows, tmp_path, bins):
    polars = calibration_bins(rows, CELL, bins=bins).collect()
    assert polars.columns == [*KEYS, *BIN_COLUMNS]
    assert_close(polars, reference.calibration_bins(rows, KEYS, bins))
    assert_close(polars, sql_bins(rows, bins, tmp_path))


def test_metrics_are_invariant_to_row_order(rows, engine):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    assert_close(engine(shuffled, 15), engine(rows, 15))


def test_calibration_bins_are_invariant_to_row_order(rows):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    assert_close(calibration_bins(shuffled).collect(), calibration_bins(rows).collect())


def duckdb_shell() -> str | None:
    """The ``duckdb`` executable if one runs here (a pyenv shim may exist without it)."""
    path = shutil.which("duckdb")
    if path is None:
        return None
    works = subprocess.run([path, "--version"], capture_output=True, check=False).returncode == 0
    return path if works else None


@pytest.mark.skipif(
    duckdb_shell() is None, reason="needs the duckdb shell (pip install duckdb-cli)"
)
def test_the_duckdb_shell_computes_the_same_numbers(rows, tmp_path):
    # the shell may be an older DuckDB than the Python package: the SQL must run on both
    connect_frame(tmp_path, rows, bins=25).close()
    sources = {path.stem: [str(path)] for path in sorted(tmp_path.glob("*.parquet"))}
    query = "SELECT n, ece, mce FROM calibration ORDER BY ALL;"
    shell = subprocess.run(
        [duckdb_shell(), "-csv", "-noheader"],
        input=init_script(sources, bins=25) + query,
        capture_output=True,
        text=True,
        check=True,
    )
    got = np.loadtxt(shell.stdout.splitlines(), delimiter=",")
    expected = calibration(rows, bins=25).select("n", "ece", "mce").sort(pl.all()).collect()
    np.testing.assert_allclose(got, expected.to_numpy(), rtol=0, atol=TOL)


def test_sql_macros_take_bins_without_reconnecting(rows, tmp_path):
    con = connect_frame(tmp_path, rows, bins=15)
    by_macro = con.sql("SELECT * FROM calibration(bins := 7)").pl()
    assert_close(by_macro, calibration(rows, bins=7).collect())
    assert con.execute("SELECT max(bin) FROM calibration_bins(bins := 7)").fetchone() == (6,)


# Edge cases, on every engine ------------------------------------------------------------------


def test_hand_worked_example(engine):
    # M = 4: bins [0, .25], (.25, .5], (.5, .75], (.75, 1]; edges land in the lower bin.
    #   bin 0: c = 0 (wrong), .25 (right)           conf .125,      acc 1/2, |gap| .375
    #   bin 1: c = .5 (right), .375 (right)         conf .4375,     acc 1,   |gap| .5625
    #   bin 2: c = .75 (wrong), .625 (right)        conf .6875,     acc 1/2, |gap| .1875
    #   bin 3: c = 1, .875 (right), .8125 (wrong)   conf 2.6875/3,  acc 2/3, |gap| .6875/3
    # ECE = (2·.375 + 2·.5625 + 2·.1875 + 3·(.6875/3)) / 9 = 2.9375/9 ≈ 0.326389
    # MCE = .5625; accuracy = 6/9; mean confidence = 5.1875/9; gap = −.8125/9
    frame = long_table(
        [0.0, 0.25, 0.5, 0.375, 0.75, 0.625, 1.0, 0.875, 0.8125],
        [False, True, True, True, False, True, True, True, False],
    )
    cell = one_cell(engine(frame, 4))
    assert cell["n"] == 9
    assert cell["accuracy"] == pytest.approx(6 / 9, abs=1e-12)
    assert cell["mean_confidence"] == pytest.approx(5.1875 / 9, abs=1e-12)
    assert cell["gap"] == pytest.approx(-0.8125 / 9, abs=1e-12)
    assert cell["abs_gap"] == pytest.approx(0.8125 / 9, abs=1e-12)
    assert cell["ece"] == pytest.approx(2.9375 / 9, abs=1e-12)
    assert cell["mce"] == pytest.approx(0.5625, abs=1e-12)


def test_hand_worked_bins(tmp_path):
    frame = long_table([0.0, 0.25, 0.5, 0.375, 1.0], [False, True, True, True, True])
    out = calibration_bins(frame, bins=4).collect()
    assert_frame_equal(out, sql_bins(frame, 4, tmp_path), check_exact=True)
    assert out.select(BIN_COLUMNS).rows() == [
        (0, 0.0, 0.25, 2, 0.25, 1.0, 0.125, 0.5),
        (1, 0.25, 0.5, 2, 0.875, 2.0, 0.4375, 1.0),
        (3, 0.75, 1.0, 1, 1.0, 1.0, 1.0, 1.0),  # bin 2 is empty: no row
    ]


@pytest.mark.parametrize("bins", [15, 25])
def test_confidence_on_every_edge_lands_in_the_lower_bin(tmp_path, bins):
    edges = np.arange(bins + 1) / bins
    frame = long_table(edges, np.ones(bins + 1, dtype=bool))
    expected = [0, *range(bins)]  # 0 and 1/M share bin 0; m/M is in bin m−1
    for table in (calibration_bins(frame, bins=bins).collect(), sql_bins(frame, bins, tmp_path)):
        assert table["bin"].to_list() == list(range(bins))
        assert table["n"].to_list() == [expected.count(m) for m in range(bins)]
        # the edge m/M is exactly the bin_upper of its bin, as reported: (m−1)/M < c <= m/M
        assert table["mean_confidence"][1:].to_list() == table["bin_upper"][1:].to_list()
        assert table["mean_confidence"][0] == edges[1] / 2


def test_confidence_exactly_zero_and_one(engine):
    frame = long_table([0.0, 0.0, 1.0, 1.0], [False, True, True, True])
    cell = one_cell(engine(frame, 15))
    # bin 0: conf 0, acc 1/2; bin 14: conf 1, acc 1 → ECE = (2·.5 + 2·0)/4, MCE = .5
    assert (cell["ece"], cell["mce"], cell["gap"]) == pytest.approx((0.25, 0.5, -0.25), abs=1e-12)


@pytest.mark.parametrize("correct", [False, True])
def test_single_row(engine, correct):
    cell = one_cell(engine(long_table([0.7], [correct]), 15))
    error = abs(float(correct) - 0.7)
    assert cell["n"] == 1 and cell["accuracy"] == float(correct)
    assert (cell["ece"], cell["mce"], cell["abs_gap"]) == pytest.approx((error,) * 3, abs=1e-12)


def test_all_correct(engine):
    confidence = [0.05, 0.3, 0.35, 0.9, 1.0]
    cell = one_cell(engine(long_table(confidence, [True] * 5), 10))
    # every bin has acc 1 >= conf, so ECE = 1 − mean c and MCE = 1 − the lowest bin's mean
    assert cell["accuracy"] == 1.0
    assert cell["ece"] == pytest.approx(1 - np.mean(confidence), abs=1e-12)
    assert cell["gap"] == pytest.approx(np.mean(confidence) - 1, abs=1e-12)
    assert cell["mce"] == pytest.approx(0.95, abs=1e-12)


def test_all_wrong(engine):
    confidence = [0.05, 0.3, 0.35, 0.9, 1.0]
    cell = one_cell(engine(long_table(confidence, [False] * 5), 10))
    # every bin has acc 0, so ECE = mean c = gap and MCE = the highest bin's mean, 1.0 here
    assert cell["accuracy"] == 0.0
    assert (cell["ece"], cell["gap"]) == pytest.approx((np.mean(confidence),) * 2, abs=1e-12)
    assert cell["mce"] == pytest.approx(1.0, abs=1e-12)


def test_one_bin_makes_ece_and_mce_the_absolute_gap(rows, engine):
    table = engine(rows, 1)
    assert_close(table.select(ece="abs_gap", mce="abs_gap"), table.select("ece", "mce"))


def test_empty_frame_gives_no_rows_with_the_full_schema(engine):
    empty = engine(long_table([], []), 15)
    assert empty.height == 0
    assert empty.schema == pl.Schema(
        {name: PREDICTIONS[name] for name in KEYS}
        | {"n": pl.Int64}
        | {name: pl.Float64 for name in METRIC_COLUMNS if name != "n"}
    )


def test_empty_frame_gives_empty_bins_with_the_full_schema(tmp_path):
    frame = long_table([], [])
    polars = calibration_bins(frame).collect()
    assert polars.height == 0
    assert polars.schema == sql_bins(frame, 15, tmp_path).schema
    assert polars.schema["bin"] == pl.Int64 and polars.schema["n"] == pl.Int64


def test_whole_frame_as_one_group_and_a_single_key():
    frame = long_table([0.2, 0.8], [False, True], model=["a", "b"])
    assert calibration(frame, (), bins=5).collect()["n"].to_list() == [2]
    assert calibration(frame.head(0), (), bins=5).collect().height == 0
    assert calibration(frame, "model").collect()["model"].to_list() == ["a", "b"]
    expr = frame.select(ece(bins=5), mce(bins=5)).row(0)  # a builder without group_by
    assert expr == pytest.approx((0.2, 0.2), abs=1e-12)


# Bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bins", [0, -3, 2.5, True, "15", None])
def test_bins_must_be_a_positive_int(bins):
    frame = long_table([0.5], [True])
    message = f"bins must be an int >= 1. Got {bins!r}."
    for call in (
        lambda: calibration(frame, bins=bins),
        lambda: calibration_bins(frame, bins=bins),
        lambda: ece(bins=bins),
        lambda: mce(bins=bins),
        lambda: bin_index(bins=bins),
    ):
        with pytest.raises(ParameterError) as caught:
            call()
        assert str(caught.value) == message
        assert isinstance(caught.value, RelcolError) and isinstance(caught.value, ValueError)


def test_sql_refuses_bins_below_one(tmp_path):
    con = connect_frame(tmp_path, long_table([0.5], [True]))
    with pytest.raises(duckdb.Error, match=r"bins must be an int >= 1\. Got 0\."):
        con.sql("SELECT * FROM calibration(bins := 0)").fetchall()


def test_missing_column_is_named():
    frame = pl.DataFrame({"model": ["a"], "score": [0.5], "correct": [True]})
    with pytest.raises(ColumnNotFoundError, match=r"'confidence' not found; available: 'model'"):
        calibration(frame, "model")
    out = calibration(frame, "model", confidence="score").collect()
    assert out["mean_confidence"].to_list() == [0.5]


# Laws ---------------------------------------------------------------------------------------------

confidences = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 0.5, 1 / 15, 7 / 25, 14 / 15]),
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.tuples(confidences, st.booleans()), min_size=1, max_size=60),
    bins=st.integers(1, 40),
)
def test_ece_bounded_by_mce_and_gap(data, bins):
    frame = pl.DataFrame(
        data, schema={"confidence": pl.Float64, "correct": pl.Boolean}, orient="row"
    )
    cell = calibration(frame, (), bins=bins).collect().row(0, named=True)
    slack = 1e-12
    assert 0.0 <= cell["ece"] <= cell["mce"] + slack
    assert cell["mce"] <= 1.0
    assert abs(cell["gap"]) <= cell["ece"] + slack
    assert math.isclose(cell["ece"], frame.select(ece(bins=bins)).item(), abs_tol=slack)
