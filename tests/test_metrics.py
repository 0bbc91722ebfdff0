"""Every metric of docs/metrics.md on every engine: numpy reference, Polars row-level and
fast paths, DuckDB SQL.

Every metric of those families in ``relcol.metrics.REGISTRY`` goes through the same checks:
agreement with ``tests/reference.py``, the two Polars paths and the SQL views agreeing to
1e-9, row-order invariance, and the edge cases (empty cell, one row, all correct, all wrong,
confidences exactly 0, 1 and on bin edges) on every engine. Hand-worked examples and
scikit-learn agreement are in ``test_metrics_hand.py``, laws in ``test_metrics_laws.py``.
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
    cohens_d,
    discrimination,
    ece,
    mce,
    metric_tables,
    point_biserial,
)
from relcol.metrics._bins import _bin_index_of_float32
from relcol.store import CELL, PREDICTIONS, connect_frame, init_script, sql_text
from tests import reference

TOL = 1e-9
KEYS = list(CELL)
#: The metric families of docs/metrics.md (other families have their own tests).
FAMILIES = ("basics", "calibration", "proper scores", "discrimination", "selective")
OURS = {name: metric for name, metric in REGISTRY.items() if metric.kind in FAMILIES}
METRIC_COLUMNS = list(OURS)
TABLES = ("calibration", "discrimination", "selective")
#: Metrics that are row counts (Int64); every other metric is Float64.
COUNTS = ("n", "mce_n")
TABLE_OF = {name: metric.view for name, metric in OURS.items()}
#: Table-only metrics (no row-level builder): the ECE₀ family.
TABLE_ONLY = [name for name, metric in OURS.items() if metric.expr is None]
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
ALL_BIN_COLUMNS = [
    "binning",
    *BIN_COLUMNS,
    "sum_confidence_sq",
    "sum_confidence_correct",
    "sum_nll_top",
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


def dirichlet(rng: np.random.Generator, n: int, classes: int) -> list[list[float]]:
    """n probability vectors (as float32 values), some with an entry exactly 0 or 1 and some
    with entries on (the Float32 nearest to) bin edges m/15 and m/25."""
    vectors = rng.dirichlet(np.full(classes, 0.7), n).astype(np.float32)
    vectors[::17] = 0.0
    vectors[::17, 0] = 1.0
    edges = np.r_[np.arange(16) / 15, np.arange(26) / 25].astype(np.float32)
    vectors[5::13, 1] = rng.choice(edges, len(vectors[5::13]))
    return vectors.tolist()


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
    # vectors for the single-label study; the multi-label one has none (proba metrics null)
    vectors = dirichlet(rng, n, 3)
    proba = [v if s == "single" else None for s, v in zip(study, vectors, strict=True)]
    return long_table(
        confidence,
        rng.random(n) < np.clip(confidence + rng.normal(-0.05, 0.1, n), 0, 1),
        study=study,
        dataset=rng.choice(["digits", "iris"], n, p=[0.8, 0.2]),
        model=rng.choice(["knn", "lightgbm", "logistic"], n),
        corruption=rng.choice(["mcar", "label_noise"], n),
        severity=rng.choice([0.0, 0.25], n),
        label=label,
        sample_id=rng.integers(0, 2000, n),  # with seed, repeat unique within a cell
        seed=np.arange(n) % 7,
        repeat=np.arange(n) // 7,
        proba=proba,
        y_true=rng.integers(0, 3, n),
    )


# Engines: every edge case runs on each ------------------------------------------------------


def polars_fast(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    tables = metric_tables(frame, CELL, bins=bins)
    return wide(pl.collect_all([tables[name] for name in TABLES]))


def polars_rows(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    exprs = [metric.build(bins=bins) for metric in OURS.values() if metric.expr is not None]
    rows = frame.group_by(KEYS).agg(exprs)
    # the ECE₀ family has no row-level builder: from the fast path
    simulated = calibration(frame, CELL, bins=bins).select(*KEYS, *TABLE_ONLY).collect()
    joined = rows.join(simulated, on=KEYS, how="left", nulls_equal=True)
    return joined.select(*KEYS, *METRIC_COLUMNS).sort(KEYS, nulls_last=True)


def duckdb_view(frame: pl.DataFrame, bins: int, workdir: Path) -> pl.DataFrame:
    con = connect_frame(workdir, frame, bins=bins)
    try:
        return wide([con.sql(f"SELECT * FROM {name}").pl() for name in TABLES])
    finally:
        con.close()


def wide(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """The calibration, discrimination and selective tables side by side, one row per cell."""
    out = frames[0]
    for name, frame in zip(TABLES[1:], frames[1:], strict=True):
        own = [c for c in METRIC_COLUMNS if TABLE_OF[c] == name]
        out = out.join(frame.select(*KEYS, *own), on=KEYS, how="left", nulls_equal=True)
    return out.select(*KEYS, *METRIC_COLUMNS).sort(KEYS, nulls_last=True)


def reference_table(frame: pl.DataFrame, bins: int, draws: int = 100) -> pl.DataFrame:
    """The numpy reference of every metric, side by side as ``wide`` gives them."""
    return wide(
        [
            reference.calibration(frame, KEYS, bins, draws=draws, full=True),
            reference.discrimination(frame, KEYS),
            reference.selective(frame, KEYS, 0.8, 0.05),
        ]
    )


ENGINES = {"polars": polars_fast, "polars_rows": polars_rows, "duckdb": duckdb_view}


@pytest.fixture(params=list(ENGINES))
def engine(request, tmp_path):
    """``engine(frame, bins)``: every metric of every cell by one engine, sorted by cell."""
    run = ENGINES[request.param]
    return lambda frame, bins=15: run(frame, bins, tmp_path)


def sql_bins(
    frame: pl.DataFrame, bins: int, workdir: Path, binning: str | None = "width"
) -> pl.DataFrame:
    """The view ``calibration_bins`` (one binning, or both with ``binning=None``)."""
    con = connect_frame(workdir, frame, bins=bins)
    try:
        where = "" if binning is None else "WHERE binning = ?"
        return con.sql(
            f"SELECT * FROM calibration_bins {where}", params=[binning] if binning else None
        ).pl()
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
    # while docs/metrics.md's (m/M, (m+1)/M] puts it in bin m−1. First case: M = 25, m = 7.
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


@pytest.mark.parametrize("bins", [*range(1, 51), 97, 1000, 4096])
def test_float32_shortcut_gives_every_float32_near_an_edge_the_exact_bin(bins):
    # the probability entries are Float32: max(⌈p·M⌉ − 1, 0) is the exact bin for them
    values = []
    for edge in np.arange(bins + 1, dtype=np.float64) / bins:
        for start in (np.float32(edge), np.float32(np.nextafter(edge, 2.0))):
            below = above = start
            values.append(start)
            for _ in range(3):
                below = np.nextafter(below, np.float32(-1.0))
                above = np.nextafter(above, np.float32(2.0))
                values += [below, above]
    values = np.unique(np.array(values, dtype=np.float32))
    values = values[(values >= 0) & (values <= 1)]
    frame = pl.DataFrame({"p": values})
    fast = frame.select(_bin_index_of_float32(pl.col("p"), bins)).to_series().to_numpy()
    np.testing.assert_array_equal(fast, reference.bin_searchsorted(values.astype(np.float64), bins))


def test_bin_index_named_bin_in_int64_with_zero_and_one_at_the_ends():
    out = pl.DataFrame({"confidence": [0.0, 1e-300, 1 / 15, 0.5, 1.0]}).select(bin_index())
    assert out.schema == pl.Schema({"bin": pl.Int64})
    assert out["bin"].to_list() == [0, 0, 0, 7, 14]


# Reference agreement, both Polars paths, SQL -----------------------------------------------------


@pytest.fixture(scope="module")
def references(rows):
    """``references(bins)``: the numpy reference table of ``rows``, computed once per bins."""
    cache = {}
    return lambda bins: cache.setdefault(bins, reference_table(rows, bins))


@pytest.fixture(scope="module")
def at_25_bins(rows, tmp_path_factory):
    """Every table of ``rows`` at M = 25 by the Polars fast path and by the SQL views."""
    frames = pl.collect_all(metric_tables(rows, bins=25)[t] for t in TABLES)
    polars = dict(zip(TABLES, frames, strict=True))
    con = connect_frame(tmp_path_factory.mktemp("views"), rows, bins=25)
    sql = {name: con.sql(f"SELECT * FROM {name}").pl() for name in TABLES}
    con.close()
    return polars, sql


@pytest.mark.parametrize("bins", [1, 15, 25])
def test_every_engine_matches_the_numpy_reference(rows, engine, references, bins):
    assert_close(engine(rows, bins), references(bins))


def test_registry_compute_is_the_table_column():
    frame = long_table([0.2, 0.6, 0.6, 0.9], [False, True, False, True])
    frames = pl.collect_all(metric_tables(frame, bins=4)[t] for t in TABLES)
    tables = dict(zip(TABLES, frames, strict=True))
    for metric in OURS.values():
        computed = metric.compute(frame, CELL, bins=4).collect()
        assert_close(computed, tables[metric.view].select(*KEYS, metric.column))


def effect_size_cells() -> pl.DataFrame:
    """Cells whose effect sizes hit every branch: confidences bunched within Float32 steps of
    1, spread over (0, 1), and in two separate ranges by outcome; one outcome constant, every
    confidence equal, one right row, all right, all wrong."""
    rng = np.random.default_rng(7)
    bunched = 1 - rng.integers(1, 40, 400) * 2.0**-24
    spread = rng.beta(5, 2, 400)
    right = rng.random(400) < 0.5
    separated = np.where(right, 0.9 + 0.05 * rng.random(400), 0.1 + 0.4 * rng.random(400))
    cells = {
        "bunched": (bunched, rng.random(400) < 0.7),
        "separated": (separated, right),  # each outcome's minimum far from the cell's
        "spread": (spread, rng.random(400) < spread),
        "right_constant": (np.r_[np.full(30, 0.8), spread[:30]], np.r_[[True] * 30, [False] * 30]),
        "all_equal": (np.full(50, 0.6), rng.random(50) < 0.5),
        "one_right": (spread[:20], np.arange(20) == 3),
        "all_right": (spread[:20], np.ones(20, bool)),
        "all_wrong": (spread[:20], np.zeros(20, bool)),
    }
    return pl.concat(
        long_table(confidence, correct, model=name) for name, (confidence, correct) in cells.items()
    )


def test_effect_sizes_of_the_fast_path_have_the_bits_of_the_row_level_builders():
    # The table sums the shifted moments per (cell, outcome) first, then per cell; its bits
    # must still be those of exact_mean and exact_var over each group's rows, in any order.
    frame = effect_size_cells()
    builders = frame.group_by(KEYS).agg(cohens_d(), point_biserial()).sort(KEYS)
    for order in (frame, frame.sample(fraction=1.0, shuffle=True, seed=3)):
        table = discrimination(order).collect().select(*KEYS, "cohens_d", "point_biserial")
        assert_frame_equal(table.sort(KEYS), builders, check_exact=True)
    values = dict(zip(builders["model"], builders["cohens_d"], strict=True))
    assert values["all_equal"] is None and values["one_right"] is None  # σ² = 0; n₁ < 2
    assert values["all_right"] is None and values["all_wrong"] is None
    c, z = frame.filter(model="spread").select("confidence", "correct")
    c, z = c.to_numpy(), z.to_numpy()
    expected = (c[z].mean() - c[~z].mean()) / np.sqrt((c[z].var(ddof=1) + c[~z].var(ddof=1)) / 2)
    assert values["spread"] == pytest.approx(expected, rel=1e-12)


def test_calibration_without_classwise_has_every_other_column_to_the_bit(rows):
    # classwise=False skips only the class statistics: Brier and NLL come from the same sums
    full = calibration(rows).collect()
    without = calibration(rows, classwise=False).collect()
    assert full["classwise_ece"].null_count() < full.height  # the single-label cells have it
    assert without["classwise_ece"].null_count() == without.height
    assert_frame_equal(without.drop("classwise_ece"), full.drop("classwise_ece"), check_exact=True)


@pytest.mark.parametrize("name", METRIC_COLUMNS)
def test_registry_metric_fast_path_equals_row_level_equals_sql(rows, at_25_bins, name):
    metric = REGISTRY[name]
    polars, sql = at_25_bins
    fast = polars[metric.view].select(*KEYS, pl.col(metric.column).alias(name))
    assert_close(fast, sql[metric.view].select(*KEYS, pl.col(metric.column).alias(name)))
    if metric.expr is not None:
        row_level = rows.group_by(KEYS).agg(metric.build(bins=25)).sort(KEYS, nulls_last=True)
        assert_close(fast, row_level)
    assert fast.height == 72 and fast["label"].null_count() == 24  # null label: one cell
    if metric.needs_proba:  # the multi-label study has no vectors: null, not an error
        by_study = fast.group_by("study").agg(pl.col(name).null_count(), pl.len())
        counts = {r["study"]: (r[name], r["len"]) for r in by_study.iter_rows(named=True)}
        assert counts["multi"][0] == counts["multi"][1] and counts["single"][0] == 0
    else:
        assert fast[name].null_count() < fast.height


def test_every_metric_of_the_registry_is_in_its_view_and_table(tmp_path):
    con = connect_frame(tmp_path, long_table([0.5], [True]))
    for name, metric in OURS.items():
        assert name in con.sql(f'SELECT * FROM "{metric.view}"').columns
        assert name in metric.table(long_table([0.5], [True])).collect_schema().names()


@pytest.mark.parametrize("bins", [1, 15, 25])
def test_calibration_bins_matches_reference_and_sql(rows, tmp_path, bins):
    width = calibration_bins(rows, CELL, bins=bins).collect()
    assert width.columns == [*KEYS, *ALL_BIN_COLUMNS]
    assert (width["binning"] == "width").all()
    assert_close(width.select(*KEYS, *BIN_COLUMNS), reference.calibration_bins(rows, KEYS, bins))
    mass = calibration_bins(rows, CELL, bins=bins, binning="mass").collect()
    both = pl.concat([mass, width]).sort([*KEYS, "binning", "bin"], nulls_last=True)
    assert_close(both, sql_bins(rows, bins, tmp_path, binning=None))
    # each binning holds every row once; the sums of the two agree
    for table in (mass, width):
        assert table["n"].sum() == rows.height
    assert math.isclose(mass["sum_correct"].sum(), width["sum_correct"].sum())


@pytest.mark.parametrize("bins", [1, 7, 15, 25])
def test_equal_mass_bins_match_the_reference_assignment(rows, tmp_path, bins):
    # bin ⌊r·M/n⌋ of the rank r by (confidence, sample_id, seed, repeat), in both engines
    expected = []
    for key, group in rows.partition_by(KEYS, as_dict=True).items():
        tiebreak = [group[k].to_numpy() for k in ("sample_id", "seed", "repeat")]
        b = reference.mass_bins(group["confidence"].to_numpy(), tiebreak, bins)
        for m in np.unique(b):
            inside = b == m
            expected.append(
                dict(zip(KEYS, key, strict=True))
                | {
                    "bin": int(m),
                    "n": int(inside.sum()),
                    "sum_correct": float(group["correct"].to_numpy()[inside].sum()),
                }
            )
    expected = pl.DataFrame(expected, schema_overrides={k: rows.schema[k] for k in KEYS})
    expected = expected.sort([*KEYS, "bin"], nulls_last=True)
    polars = calibration_bins(rows, bins=bins, binning="mass").collect()
    sql = sql_bins(rows, bins, tmp_path, binning="mass")
    for table in (polars, sql):
        assert_close(table.select(*KEYS, "bin", "n", "sum_correct"), expected)


def test_metrics_are_invariant_to_row_order(rows, engine):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    assert_close(engine(shuffled, 15), engine(rows, 15))


@pytest.mark.parametrize("binning", ["width", "mass"])
def test_calibration_bins_are_invariant_to_row_order(rows, binning):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    assert_close(
        calibration_bins(shuffled, binning=binning).collect(),
        calibration_bins(rows, binning=binning).collect(),
    )


def test_the_other_tables_are_invariant_to_row_order(rows):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    for frame_a, frame_b in zip(
        pl.collect_all(metric_tables(shuffled).values()),
        pl.collect_all(metric_tables(rows).values()),
        strict=True,
    ):
        assert_close(frame_a, frame_b)


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
    tables = metric_tables(rows, bins=25)
    queries = {
        "calibration": ["n", "ece", "ace", "rmsce", "ece_null", "ece_pvalue", "brier_top"],
        "discrimination": ["n", "auroc", "aupr_success", "aupr_error", "point_biserial"],
        "selective": ["n", "aurc", "aurc_optimal", "risk_at_coverage", "coverage_at_risk"],
        "selective_curve": ["threshold", "accepted", "coverage", "risk"],
        "calibration_bins": ["bin", "n", "bin_lower", "bin_upper", "sum_correct"],
    }
    for view, columns in queries.items():
        query = f"SELECT {', '.join(columns)} FROM {view} ORDER BY ALL;"
        shell = subprocess.run(
            [duckdb_shell(), "-csv", "-noheader"],
            input=init_script(sources, bins=25) + query,
            capture_output=True,
            text=True,
            check=True,
        )
        got = np.loadtxt(shell.stdout.splitlines(), delimiter=",")
        expected = tables[view].select(columns).sort(pl.all()).collect()
        np.testing.assert_allclose(got, expected.to_numpy(), rtol=0, atol=TOL)


def test_sql_macros_take_bins_without_reconnecting(rows, tmp_path):
    con = connect_frame(tmp_path, rows, bins=15)
    by_macro = con.sql("SELECT * FROM calibration(bins := 7, draws := 20)").pl()
    assert_close(by_macro, calibration(rows, bins=7, draws=20).collect())
    assert con.sql("SELECT max(bin) FROM calibration_bins(bins := 7)").fetchall() == [(6,)]
    mass = con.sql("SELECT * FROM calibration_bins(bins := 7, binning := 'mass')").pl()
    assert_close(mass, calibration_bins(rows, bins=7, binning="mass").collect())


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
    assert cell["mce_n"] == 2  # bin 1 attains the MCE


def test_mce_n_is_the_largest_bin_attaining_the_mce(engine):
    # M = 4: bin 0 holds c = .125 (right) → |gap| .875; bin 3 holds c = .875 three times,
    # all wrong → |gap| .875 too; bin 1 holds c = .5, .5 (one right) → 0. Tie at .875:
    # the larger bin, 3 rows. With one of bin 3's rows right (|gap| .875 − 1/3 < .875),
    # bin 0 alone attains the MCE: 1 row.
    confidence = [0.125, 0.875, 0.875, 0.875, 0.5, 0.5]
    tie = long_table(confidence, [True, False, False, False, True, False])
    cell = one_cell(engine(tie, 4))
    assert cell["mce"] == pytest.approx(0.875, abs=1e-12) and cell["mce_n"] == 3
    alone = long_table(confidence, [True, True, False, False, True, False])
    cell = one_cell(engine(alone, 4))
    assert cell["mce"] == pytest.approx(0.875, abs=1e-12) and cell["mce_n"] == 1


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


def assert_cell(cell: dict, expected: dict) -> None:
    """Each expected value (None: null) to 1e-12."""
    for name, value in expected.items():
        if value is None:
            assert cell[name] is None, name
        else:
            assert cell[name] == pytest.approx(value, abs=1e-12), name


def test_confidence_exactly_zero_and_one(engine):
    frame = long_table([0.0, 0.0, 1.0, 1.0], [False, True, True, True])
    cell = one_cell(engine(frame, 15))
    # bin 0: conf 0, acc 1/2; bin 14: conf 1, acc 1 → ECE = (2·.5 + 2·0)/4, MCE = .5
    assert (cell["ece"], cell["mce"], cell["gap"]) == pytest.approx((0.25, 0.5, -0.25), abs=1e-12)
    log_eps = -math.log(1e-15)  # c = 0 and right: −log(1e−15); the rest ≈ 1e−15 each
    assert_cell(
        cell,
        {
            "ace": 0.25,  # 4 rows, 15 equal-mass bins: one row each
            "rmsce": math.sqrt(0.125),
            "ece_debiased": 0.0,  # bin 0: .5² − .5·.5/1 = 0
            "brier_top": 0.25,
            "brier_reliability": 0.125,
            "brier_resolution": 0.0625,  # ā = .75: ½(.5 − .75)² + ½(1 − .75)²
            "brier_uncertainty": 0.1875,
            "brier_within": 0.0,
            "nll_top": (log_eps + 3 * -math.log1p(-1e-15)) / 4,
            "auroc": 2.5 / 3,  # right {0, 1, 1} vs wrong {0}: ½ + 1 + 1
            "aupr_success": 2 / 3 + 1 / 3 * 0.75,
            "aupr_error": 0.5,
            "fpr_at_95tpr": 1.0,  # all three right rows need t = 0
            "cohens_d": None,  # one wrong row
            "point_biserial": 0.125 / (0.5 * math.sqrt(0.1875)),
            "aurc": 0.125,  # 2 rows at risk 0, 2 at risk 1/4
            "aurc_optimal": 0.0625,  # the fourth row at risk 1/4
            "e_aurc": 0.0625,
            "risk_at_coverage": 0.25,
            "coverage_at_risk": 0.5,
            "brier": None,  # no probability vectors
            "nll": None,
            "classwise_ece": None,
        },
    )


@pytest.mark.parametrize("correct", [False, True])
def test_single_row(engine, correct):
    cell = one_cell(engine(long_table([0.7], [correct]), 15))
    z = float(correct)
    error = abs(z - 0.7)
    assert cell["n"] == 1 and cell["accuracy"] == z
    assert (cell["ece"], cell["mce"], cell["abs_gap"]) == pytest.approx((error,) * 3, abs=1e-12)
    assert_cell(
        cell,
        {
            "ace": error,
            "rmsce": error,
            "ece_debiased": 0.0,  # a bin of one row adds nothing
            "brier_top": error**2,
            "brier_reliability": error**2,
            "brier_resolution": 0.0,
            "brier_uncertainty": 0.0,
            "brier_within": 0.0,
            "nll_top": -math.log(0.7 if correct else 0.3),
            "auroc": None,
            "aupr_success": 1.0 if correct else None,
            "aupr_error": None if correct else 1.0,
            "fpr_at_95tpr": None,
            "cohens_d": None,
            "point_biserial": None,
            "aurc": 1 - z,
            "aurc_optimal": 1 - z,
            "e_aurc": 0.0,
            "risk_at_coverage": 1 - z,
            "coverage_at_risk": z,
        },
    )
    # ECE₀: Z ~ Bernoulli(.7) gives ECE .3 or .7, mean 2·.7·.3 = .42 (100 draws)
    assert 0.36 < cell["ece_null"] < 0.48
    assert cell["ece_excess"] == pytest.approx(error - cell["ece_null"], abs=1e-12)
    if correct:  # every draw has ECE ≥ .3
        assert cell["ece_pvalue"] == 1.0
    else:  # only draws with Z = 0 reach .7
        assert 0.15 < cell["ece_pvalue"] < 0.45


def test_all_correct(engine):
    confidence = [0.05, 0.3, 0.35, 0.9, 1.0]
    cell = one_cell(engine(long_table(confidence, [True] * 5), 10))
    # every bin has acc 1 >= conf, so ECE = 1 − mean c and MCE = 1 − the lowest bin's mean
    assert cell["accuracy"] == 1.0
    assert cell["ece"] == pytest.approx(1 - np.mean(confidence), abs=1e-12)
    assert cell["gap"] == pytest.approx(np.mean(confidence) - 1, abs=1e-12)
    assert cell["mce"] == pytest.approx(0.95, abs=1e-12)
    assert_cell(
        cell,
        {
            "ace": 1 - np.mean(confidence),
            "brier_top": np.mean((1 - np.array(confidence)) ** 2),
            "brier_uncertainty": 0.0,
            "brier_resolution": 0.0,
            "auroc": None,
            "aupr_success": 1.0,
            "aupr_error": None,
            "fpr_at_95tpr": None,
            "cohens_d": None,
            "point_biserial": None,
            "aurc": 0.0,
            "aurc_optimal": 0.0,
            "e_aurc": 0.0,
            "risk_at_coverage": 0.0,
            "coverage_at_risk": 1.0,
        },
    )


def test_all_wrong(engine):
    confidence = [0.05, 0.3, 0.35, 0.9, 1.0]
    cell = one_cell(engine(long_table(confidence, [False] * 5), 10))
    # every bin has acc 0, so ECE = mean c = gap and MCE = the highest bin's mean, 1.0 here
    assert cell["accuracy"] == 0.0
    assert (cell["ece"], cell["gap"]) == pytest.approx((np.mean(confidence),) * 2, abs=1e-12)
    assert cell["mce"] == pytest.approx(1.0, abs=1e-12)
    assert_cell(
        cell,
        {
            "ace": np.mean(confidence),
            "brier_top": np.mean(np.array(confidence) ** 2),
            "brier_uncertainty": 0.0,
            "auroc": None,
            "aupr_success": None,
            "aupr_error": 1.0,
            "fpr_at_95tpr": None,
            "cohens_d": None,
            "point_biserial": None,
            "aurc": 1.0,
            "aurc_optimal": 1.0,
            "e_aurc": 0.0,
            "risk_at_coverage": 1.0,
            "coverage_at_risk": 0.0,
        },
    )
    # c = 1 and wrong costs −log(1e−15), not infinity
    assert math.isfinite(cell["nll_top"]) and cell["nll_top"] > -math.log(1e-15) / 5


def test_one_bin_makes_ece_and_mce_the_absolute_gap(rows, engine):
    table = engine(rows, 1)
    assert_close(table.select(ece="abs_gap", mce="abs_gap"), table.select("ece", "mce"))


def test_empty_frame_gives_no_rows_with_the_full_schema(engine):
    empty = engine(long_table([], []), 15)
    assert empty.height == 0
    assert empty.schema == pl.Schema(
        {name: PREDICTIONS[name] for name in KEYS}
        | {name: pl.Int64 if name in COUNTS else pl.Float64 for name in METRIC_COLUMNS}
    )


def test_empty_frame_gives_empty_bins_with_the_full_schema(tmp_path):
    frame = long_table([], [])
    polars = calibration_bins(frame).collect()
    assert polars.height == 0
    assert polars.schema == sql_bins(frame, 15, tmp_path).schema
    assert polars.schema["bin"] == pl.Int64 and polars.schema["n"] == pl.Int64


def test_empty_frame_gives_every_table_empty_with_the_sql_schema(tmp_path):
    frame = long_table([], [])
    con = connect_frame(tmp_path, frame)
    for name, table in metric_tables(frame).items():
        polars = table.collect()
        sql = con.sql(f"SELECT * FROM {name}").pl()
        assert polars.height == sql.height == 0
        assert polars.schema == sql.schema, name


def test_whole_frame_as_one_group_and_a_single_key():
    frame = long_table([0.2, 0.8], [False, True], model=["a", "b"])
    assert calibration(frame, (), bins=5).collect()["n"].to_list() == [2]
    assert calibration(frame.head(0), (), bins=5).collect().height == 0
    assert calibration(frame, "model").collect()["model"].to_list() == ["a", "b"]
    expr = frame.select(ece(bins=5), mce(bins=5)).row(0)  # a builder without group_by
    assert expr == pytest.approx((0.2, 0.2), abs=1e-12)


# Bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bins", [0, -3, 2.5, True, "15", None, 1001, 10**9])
def test_bins_must_be_an_int_from_1_to_1000(bins):
    frame = long_table([0.5], [True])
    message = f"bins must be an int in [1, 1000]. Got {bins!r}."
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


@pytest.mark.parametrize("bins", [0, 1001])
def test_sql_refuses_bins_outside_1_to_1000(tmp_path, bins):
    con = connect_frame(tmp_path, long_table([0.5], [True]))
    with pytest.raises(duckdb.Error, match=rf"bins must be an int in \[1, 1000\]\. Got {bins}\."):
        con.sql(f"SELECT * FROM calibration(bins := {bins})").fetchall()


def test_missing_column_is_named():
    frame = pl.DataFrame({"model": ["a"], "score": [0.5], "correct": [True]})
    with pytest.raises(
        ColumnNotFoundError, match=r"'confidence', .* not found; available: 'model'"
    ):
        calibration(frame, "model")
    out = calibration(frame, "model", confidence="score", proba=None, order=(), events=()).collect()
    assert out["mean_confidence"].to_list() == [0.5]
    assert out["brier"].to_list() == [None]  # no vector: null, not an error


# Laws ---------------------------------------------------------------------------------------------

confidences = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 0.5, 1 / 15, 7 / 25, 14 / 15]),
)


@settings(max_examples=100, deadline=None)
@given(
    data=st.lists(st.tuples(confidences, st.booleans()), min_size=1, max_size=60),
    bins=st.integers(1, 40),
)
def test_ece_bounded_by_mce_and_gap(data, bins):
    frame = pl.DataFrame(
        data, schema={"confidence": pl.Float64, "correct": pl.Boolean}, orient="row"
    )
    table = calibration(frame, (), bins=bins, draws=5, proba=None, order=(), events=())
    cell = table.collect().row(0, named=True)
    slack = 1e-12
    assert 0.0 <= cell["ece"] <= cell["mce"] + slack
    assert cell["mce"] <= 1.0
    assert abs(cell["gap"]) <= cell["ece"] + slack
    assert math.isclose(cell["ece"], frame.select(ece(bins=bins)).item(), abs_tol=slack)
