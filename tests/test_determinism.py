"""Byte-identical metric tables (issue 8): the same rows give the same bits in any row order,
on any run and any thread count, because every aggregation over a cell's rows sums in exact
fixed point (``relcol.metrics._exact``) instead of Polars' order-dependent float sums, and
the bootstrap's matrix product is exact in every addition, so any BLAS kernel gives the same
bits. "Another machine" is emulated on this one: the generic OpenBLAS kernel instead of the
CPU's own, one thread instead of several, glibc's libm without its FMA/AVX2 code paths and
numpy with its baseline loops only (no AVX2, no AVX-512)."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relcol
from relcol import metrics
from relcol.metrics._exact import exact_mean, exact_product, exact_sum, exact_var
from relcol.store import CELL
from relcol.study._numerics import cpu_dispatch
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


def test_exact_product_is_order_free_and_within_an_ulp_of_the_exact_product():
    rng = np.random.default_rng(5)
    n = 3000
    d = rng.random((40, n)) * rng.choice([1.0, 1e-9, 35.0], size=(40, 1))
    d[:10] = np.round(d[:10] * 7)  # integer-valued rows: counts, Σz
    d[10:20] -= d[10:20].mean(axis=1, keepdims=True)  # signed rows: centred confidences
    d[20, ::2] = 0.0
    w = rng.poisson(1.0, (n, 9)).astype(np.float64)
    w[:, 0] = 1.0
    got = exact_product(d, w)
    for order in (rng.permutation(n), np.arange(n)[::-1]):
        assert np.array_equal(exact_product(d[:, order], w[order]), got)
    assert np.array_equal(exact_product(np.asfortranarray(d), np.ascontiguousarray(w)), got)
    assert np.array_equal(got[:10], d[:10] @ w)  # integer sums are exact either way
    for i in (0, 12, 20, 25, 39):
        for j in (0, 4):
            terms = [Fraction(float(x)) * int(v) for x, v in zip(d[i], w[:, j], strict=True)]
            exact = sum(terms)
            scale = float(sum(abs(t) for t in terms))
            assert abs(Fraction(float(got[i, j])) - exact) <= Fraction(2.0**-52) * scale


def test_exact_product_has_the_same_bits_in_blocks_of_any_size(monkeypatch):
    # many samples: rows are split and multiplied a few hundred at a time (bounded memory)
    from relcol.metrics import _exact

    rng = np.random.default_rng(6)
    d = rng.random((300, 5000)) - 0.5
    d[:50] = np.round(d[:50] * 9)  # whole rows (−0.0 among them): a block of them alone
    w = rng.poisson(1.0, (5000, 7)).astype(np.float64)
    got = exact_product(d, w)
    for entries in (5000 * 7, 5000, 2**40):  # 7 rows, one row, every row at once
        monkeypatch.setattr(_exact, "_BLOCK_ENTRIES", entries)
        assert np.array_equal(exact_product(d, w), got)
    np.testing.assert_allclose(got, d @ w, rtol=0, atol=1e-11)


@pytest.mark.parametrize("layout", ["C", "F"])
def test_the_compiled_grid_passes_and_parts_have_numpys_bits(layout):
    # a streamed product's grid passes (Σ|rest| of each row, the samples in order) and its
    # parts, compiled, against numpy's formulas: the same bits, negative zeros included
    from relcol.metrics._compiled import grid_parts, rest_totals
    from relcol.metrics._exact import _on_grid

    rng = np.random.default_rng(8)
    d = (rng.random((40, 300)) - 0.5) * rng.choice([1.0, 1e-9, 35.0], size=(40, 1))
    d[rng.random(d.shape) < 0.5] = 0.0
    d[1, :2] = -1e-300, -0.0  # parts of −0.0
    d = np.asarray(d, order=layout)
    rows = np.array([1, 4, 5, 17, 39])
    steps = np.ldexp(1.0, np.array([-40, -75, -110]) + rng.integers(-8, 8, (5, 1)))  # rows × parts
    rest, parts = d[rows], []
    for p in range(3):
        total = np.zeros(len(rows))
        for j in range(d.shape[1]):  # numpy, the samples in order
            total += np.abs(rest[:, j])
        got = np.full(len(rows), 0.5)
        rest_totals(d, rows, steps[:, :p], got)
        assert np.array_equal(got, total + 0.5)  # added to what ``out`` held
        parts.append(_on_grid(rest, steps[:, p, None]))
        rest = rest - parts[-1]
    places = np.array([[0, 5, 8], [1, -1, -1], [2, 6, -1], [3, 7, 9], [4, -1, -1]])
    out = np.full((10, d.shape[1]), np.nan)
    grid_parts(d, rows, places, steps, out)
    for (r, p), place in np.ndenumerate(places):
        if place >= 0:
            assert np.array_equal(out[place].view(np.int64), parts[p][r].view(np.int64))
    assert np.signbit(out[out == 0]).any()  # negative zeros, as numpy gives them


def test_the_parts_products_are_put_together_with_numpys_bits():
    # the compiled assembly of the product's rows (first part + 0.0, then each later part in
    # order, each row where ``at`` puts it; whole-number rows widened from Float32) against
    # numpy's additions, bit for bit: negative zeros turned into 0.0, subsets of rows
    from relcol.metrics._exact import _add_parts, _exact_block

    rng = np.random.default_rng(12)
    rows, columns = 30, 7
    first = rng.normal(size=(rows, columns)) * 1e3
    first[0] = -0.0
    second_rows, third_rows = np.array([1, 2, 5, 9, 29]), np.array([2, 9])
    second = rng.normal(size=(len(second_rows), columns)) * 1e-13
    second[0] = -0.0
    third = rng.normal(size=(len(third_rows), columns)) * 1e-29
    products = np.vstack([first, second, third])
    expected = np.add(first, 0.0)
    expected[second_rows] += second
    expected[third_rows] += third
    at = rng.permutation(2 * rows)[:rows]
    out = np.full((2 * rows, columns), np.nan)
    _add_parts(products, [np.arange(rows), second_rows, third_rows], out, at)
    assert np.array_equal(out[at].view(np.int64), expected.view(np.int64))
    assert np.isnan(np.delete(out, at, axis=0)).all()  # no other row written
    assert not np.signbit(out[at][0]).any()

    # a block of whole-number rows (Float32's GEMM) and rows split into parts, interleaved
    d = rng.random((12, 50))
    d[::3] = np.rint(d[::3] * 4) * np.where(rng.random((4, 50)) < 0.5, -1, 1)
    d[3] = -0.0
    w = rng.poisson(1.0, (50, 5)).astype(np.uint8)
    wf, w32 = w.astype(np.float64), w.astype(np.float32)
    got = np.full((12, 5), np.nan)
    _exact_block(d, wf, w32, 16.0, got)
    whole = np.add(d[::3].astype(np.float32) @ w32, 0.0, dtype=np.float64)
    assert np.array_equal(got[::3].view(np.int64), whole.view(np.int64))
    assert not np.signbit(got[3]).any()
    split = np.full((8, 5), np.nan)
    _exact_block(np.delete(d, np.s_[::3], axis=0), wf, w32, 16.0, split)
    assert np.array_equal(np.delete(got, np.s_[::3], axis=0).view(np.int64), split.view(np.int64))


def test_exact_product_with_w_a_block_of_samples_at_a_time_has_the_bits_of_w_whole(monkeypatch):
    # a test set of many samples: W (uint8, as the bootstrap holds it) turned into Float64 a
    # block of samples at a time, the grid from whole rows, the blocks' products added up
    # (rows that are zero in a block, as a bin's are outside it, left out of its product)
    from relcol.metrics import _exact

    rng = np.random.default_rng(7)
    n = 4000
    d = rng.random((60, n)) * rng.choice([1.0, 1e-9, 35.0], size=(60, 1))
    d[:10] = np.round(d[:10] * 7)  # integer rows: one part
    d[10:20] -= d[10:20].mean(axis=1, keepdims=True)  # signed rows
    d[20] = 0.0
    d[21, 1:] = 0.0
    bins = rng.integers(0, 8, n)  # rows of bins: each sample in one, zero elsewhere
    d[30:38] *= bins == np.arange(8)[:, None]
    d[38:46] = np.round(d[38:46]) * (bins == np.arange(8)[:, None])
    w = rng.poisson(1.0, (n, 9)).astype(np.uint8)
    w[:, 0] = 1
    whole = exact_product(d, w.astype(np.float64))
    coarse = exact_product(d, w.astype(np.float64), w_max=255.0)  # a grid for larger weights
    assert np.array_equal(exact_product(d, w), whole)  # the dtype of W changes nothing
    for w_entries, entries in ((9 * 1000, 2**40), (9 * 7, 2**40), (2**40, 60 * 3)):
        monkeypatch.setattr(_exact, "_W_ENTRIES", w_entries)
        monkeypatch.setattr(_exact, "_BLOCK_ENTRIES", entries)
        assert np.array_equal(exact_product(d, w), whole), (w_entries, entries)
        assert np.array_equal(exact_product(d, w, w_max=255.0), coarse)
    for i in (0, 12, 21, 30, 40, 59):
        terms = [Fraction(float(x)) * int(v) for x, v in zip(d[i], w[:, 3], strict=True)]
        scale = float(sum(abs(t) for t in terms))
        got = Fraction(float(whole[i, 3]))
        assert abs(got - sum(terms)) <= Fraction(2.0**-52) * scale


@pytest.mark.parametrize("layout", ["C", "F"])
def test_a_mostly_zero_d_multiplies_its_non_zero_entries_with_the_bits_of_the_gemms(
    layout, monkeypatch
):
    # a bootstrap's D when each sample has one row in a cell: a few bins' statistics non-zero
    # per sample. Its non-zero entries alone, a part at a time, give the bits of the parts'
    # GEMMs (whole-number rows in Float32 among them): every product of a part is exact, and
    # the grid is the same (Σ|rest| over the samples in order in both)
    from relcol.metrics import _compiled, _exact

    rng = np.random.default_rng(13)
    rows, n = 48, 900
    bins = rng.integers(0, 12, n)
    d = rng.random((rows, n)) * rng.choice([1.0, 1e-9, 35.0, 1e-300], size=(rows, 1))
    d[:12] = np.round(d[:12] * 7)  # whole-number rows: counts, Σz
    d[12:24] -= 0.5 * d[12:24].max(axis=1, keepdims=True)  # signed rows
    d[24, 5] = 1 - 2.0**-53  # a row whose terms need every part
    d[24, 6:20] = 2.0**-60
    d *= bins == np.arange(rows)[:, None] % 12  # each sample in one bin of each statistic
    d[40] = 0.0  # an empty row, and one of negative zeros
    d[41] = -0.0
    d = np.asarray(d, order=layout)
    assert np.count_nonzero(d) < _exact.SPARSE_SHARE * d.size
    used = []
    sparse = _compiled.sparse_parts_product
    monkeypatch.setattr(_compiled, "sparse_parts_product", lambda *a: used.append(1) or sparse(*a))
    w = rng.poisson(1.0, (n, 11)).astype(np.uint8)
    got = {w_max: exact_product(d, w, w_max) for w_max in (None, 255.0)}
    assert np.array_equal(exact_product(d, w.astype(np.float64)), got[None])
    assert len(used) == 3
    monkeypatch.setattr(_exact, "SPARSE_SHARE", 0.0)  # every row through the GEMMs
    for w_max, product in got.items():
        gemm = exact_product(d, w, w_max)
        assert np.array_equal(product.view(np.int64), gemm.view(np.int64)), w_max
    assert len(used) == 3
    assert not np.signbit(got[None][40:42]).any()
    for i in (0, 13, 24, 30):
        terms = [Fraction(float(x)) * int(v) for x, v in zip(d[i], w[:, 2], strict=True)]
        scale = float(sum(abs(t) for t in terms))
        assert abs(Fraction(float(got[None][i, 2])) - sum(terms)) <= Fraction(2.0**-52) * scale


@pytest.mark.parametrize("layout", ["C", "F"])
def test_non_zero_entries_by_row_are_numpys_in_either_layout(layout):
    from relcol.metrics._compiled import nonzeros_by_row

    rng = np.random.default_rng(14)
    d = np.where(rng.random((30, 70)) < 0.2, rng.normal(size=(30, 70)), 0.0)
    d[3] = -0.0  # a negative zero is a zero
    d[4, 9] = 5e-324
    d = np.asarray(d, order=layout)
    starts, samples, values = nonzeros_by_row(np.ascontiguousarray(d.T))
    r, c = np.nonzero(d)
    np.testing.assert_array_equal(starts, np.searchsorted(r, np.arange(31)))
    np.testing.assert_array_equal(samples, c)
    np.testing.assert_array_equal(values, d[r, c])


def test_the_grids_total_adds_a_rows_samples_in_order():
    # the total a row's grid step comes from: its samples in order, as the compiled passes
    # add them, not numpy's pairwise sum (here a step apart: 1 − 2⁻⁵³ against 1 + 2⁻⁵²)
    from relcol.metrics._exact import _step, _total_in_order

    row = np.array([[1 - 2.0**-53, *[2.0**-55] * 15], [0.0] * 16])
    total = 0.0
    for x in row[0]:
        total += abs(x)
    assert _total_in_order(row).tolist() == [total, 0.0]
    assert _step(np.array([total]), 1.0) != _step(row[:1].sum(axis=1), 1.0)
    assert _total_in_order(np.zeros((2, 0))).tolist() == [0.0, 0.0]
    rng = np.random.default_rng(15)
    rows = rng.normal(size=(9, 5000)) * rng.choice([1.0, 1e-9, 35.0], size=(9, 1))
    in_order = np.zeros(9)
    for j in range(rows.shape[1]):
        in_order += np.abs(rows[:, j])
    assert not np.array_equal(np.abs(rows).sum(axis=1), in_order)  # numpy's pairwise sums
    for layout in ("C", "F"):
        assert np.array_equal(_total_in_order(np.asarray(rows, order=layout)), in_order)


def test_exact_product_of_an_empty_or_zero_matrix():
    w = np.ones((3, 2))
    assert exact_product(np.zeros((0, 3)), w).shape == (0, 2)
    assert np.array_equal(exact_product(np.zeros((2, 3)), w), np.zeros((2, 2)))
    tiny = np.full((1, 3), 5e-324)  # the smallest subnormal: steps cannot go below it
    assert exact_product(tiny, w)[0, 0] == 3 * 5e-324


def test_whole_number_rows_take_float32s_gemm_with_the_bits_of_the_parts(monkeypatch):
    # counts and Σz (whole numbers, w_max·Σ|row| < 2²⁴) are multiplied in Float32, where
    # every product and partial sum is a whole number below 2²⁴: exact, so the same bits as
    # the Float64 parts every other row takes
    from relcol.metrics import _exact

    rng = np.random.default_rng(11)
    n, w_max = 700, 12.0
    d = rng.poisson(0.6, (9, n)).astype(np.float64)
    d[1] = -d[1]  # whole numbers of either sign
    d[2, :] = 0.0
    d[2, ::3] = -0.0
    d[3] = rng.random(n)  # not whole: the parts
    d[4, :] = 0.0
    d[4, 0] = 2**24 // w_max + 1  # whole, but w_max·Σ|row| reaches 2²⁴: Float64
    d[5, :] = 0.0
    d[5, 0] = 2**24 // w_max  # just below: Float32
    d[6] *= 0.5  # halves: not whole numbers
    w = rng.poisson(1.0, (n, 6)).astype(np.uint8)
    w[:5] = 12  # the largest weights the grid is sized for
    assert _exact._whole(d, w_max).tolist() == [1, 1, 1, 0, 0, 1, 0, 1, 1]
    got = exact_product(d, w, w_max)
    monkeypatch.setattr(_exact, "_whole", lambda d, w_max: np.zeros(len(d), dtype=bool))
    assert np.array_equal(exact_product(d, w, w_max), got)
    assert not np.signbit(got[2]).any()  # no −0.0 from a row of zeros
    whole = [0, 1, 2, 5, 7, 8]
    np.testing.assert_array_equal(got[whole], d[whole] @ w.astype(np.float64))


def _other_machine() -> dict[str, str]:
    """Environment variables that make this process compute like a plainer machine."""
    env = {
        "OPENBLAS_CORETYPE": "Prescott",  # the generic x86-64 kernel
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "POLARS_MAX_THREADS": "1",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F,-AVX512VL,-AVX512DQ",
    }
    if dispatched := cpu_dispatch():  # numpy's baseline loops only (no AVX2, no AVX-512)
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(dispatched)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _blas_kernels(env: dict[str, str], cwd: Path) -> list[str]:
    code = (
        "import numpy, scipy.linalg; from threadpoolctl import threadpool_info; "
        "print(*sorted(str(i.get('architecture')) for i in threadpool_info() "
        "if i['internal_api'] == 'openblas'))"
    )
    return _run(["-c", code], cwd, env).split()


def _parquet_bytes(root: Path) -> dict[str, bytes]:
    """Every Parquet file under ``root``, by path, run ids left out (they name the folder)."""
    out = {}
    for path in sorted(root.rglob("*.parquet")):
        parts = [p for p in path.relative_to(root).parts if not p.startswith("run_id=")]
        if parts[0] != "_schema" and parts[-1] != "_run.parquet":  # runs record: timestamps
            out["/".join(parts)] = path.read_bytes()
    return out


@pytest.mark.skipif(
    platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
    reason="emulates another x86-64 Linux machine (OpenBLAS kernels, glibc code paths)",
)
def test_the_same_predictions_give_the_same_metric_bytes_on_an_emulated_other_machine(tmp_path):
    plain = _other_machine()
    if _blas_kernels({}, tmp_path) == _blas_kernels(plain, tmp_path):
        pytest.skip("this machine already runs the generic OpenBLAS kernel")
    wh = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(TINY, wh)
    written = []
    for name, env in (("native", {}), ("plain", plain)):
        shutil.copytree(wh.root, tmp_path / name)
        _run(
            ["-m", "relcol.cli", "report", "--warehouse", name, "--bootstrap", "100", "-q"],
            tmp_path,
            env,
        )
        written.append(_parquet_bytes(tmp_path / name / "metrics"))
    assert sorted(written[0]) == [
        "calibration/study=tiny.parquet",
        "differences/study=tiny.parquet",
        "thresholds/study=tiny.parquet",
        "trends/study=tiny.parquet",
    ]
    assert written[0] == written[1]


NO_BLAS_NOR_LIBM = """
name = "portable"
seeds = [0, 1]
repeats = 2
severities = [0.0, 0.5]

[[datasets]]
name = "synthetic"
n_samples = 300
n_features = 6
n_classes = 3

[[models]]
name = "random_forest"
n_estimators = 20

[[corruptions]]
name = "mar"

[[corruptions]]
name = "gaussian_noise"

[[corruptions]]
name = "label_noise"
"""


@pytest.mark.skipif(
    platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
    reason="emulates another x86-64 Linux machine (OpenBLAS kernels, glibc code paths)",
)
def test_relcols_own_steps_give_the_same_prediction_bytes_on_an_emulated_other_machine(tmp_path):
    # The split, the corruption draws and the table writing are relcol's; a random forest's
    # probabilities are averages of leaf frequencies (no BLAS, no exp). Models whose outputs
    # go through BLAS or libm's exp (logistic regression, naive Bayes, LightGBM's softmax)
    # differ in their last bits between such machines: see the README's Determinism section.
    (tmp_path / "portable.toml").write_text(NO_BLAS_NOR_LIBM)
    written, numerics = [], []
    for name, env in (("native", {}), ("plain", _other_machine())):
        args = ["ingest", "--study", "portable.toml", "--warehouse", name, "-q"]
        _run(["-m", "relcol.cli", *args], tmp_path, env)
        written.append(_parquet_bytes(tmp_path / name / "predictions"))
        runs = relcol.open_warehouse(tmp_path / name).sql("SELECT versions FROM runs")
        numerics.append(json.loads(runs.item()))
    assert len([p for p in written[0] if "part-" in p]) == 2  # one per seed
    assert written[0] == written[1]
    # the runs record says which BLAS kernel and C library were behind the models' outputs
    assert numerics[0]["machine"] == numerics[1]["machine"] == "x86_64"
    assert numerics[0]["libc"].startswith("glibc ")
    if _blas_kernels({}, tmp_path) != _blas_kernels(_other_machine(), tmp_path):
        assert numerics[0]["blas"] != numerics[1]["blas"]


@pytest.fixture(scope="module")
def portable_here(tmp_path_factory) -> Path:
    """The tiny study ingested by `relcol ingest --portable` on this machine as it is."""
    folder = tmp_path_factory.mktemp("portable")
    args = ["ingest", "--study", str(TINY), "--warehouse", "native", "--portable", "-q"]
    _run(["-m", "relcol.cli", *args], folder, {})
    return folder / "native"


@pytest.mark.skipif(
    platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
    reason="pins OpenBLAS's and glibc's x86-64 code paths",
)
def test_portable_ingest_gives_the_same_prediction_bytes_on_an_emulated_other_machine(
    tmp_path, portable_here
):
    # the tiny study's logistic regression, naive Bayes and LightGBM go through BLAS and
    # libm's exp: without --portable their last bits follow the CPU's code paths
    args = ["ingest", "--study", str(TINY), "--warehouse", "plain", "--portable", "-q"]
    _run(["-m", "relcol.cli", *args], tmp_path, _other_machine())
    written, numerics = [], []
    for warehouse in (portable_here, tmp_path / "plain"):
        written.append(_parquet_bytes(warehouse / "predictions"))
        runs = relcol.open_warehouse(warehouse).sql("SELECT versions FROM runs")
        numerics.append(json.loads(runs.item()))
    assert len([p for p in written[0] if "part-" in p]) == 12
    assert written[0] == written[1]
    assert numerics[0]["portable"] == numerics[1]["portable"] == "yes"
    assert numerics[0]["blas"] == numerics[1]["blas"]  # the generic kernel in both


@pytest.mark.skipif(
    platform.machine() != "x86_64" or not sys.platform.startswith("linux"),
    reason="pins OpenBLAS's and glibc's x86-64 code paths",
)
def test_portable_from_python_writes_what_the_command_line_writes(tmp_path, portable_here):
    from relcol.errors import WarehouseError
    from relcol.study import n_fits
    from tests.test_sandbox import snapshot

    fits = []
    result = relcol.ingest(TINY, tmp_path / "py", portable=True, progress=fits.append)
    assert _parquet_bytes(tmp_path / "py" / "predictions") == _parquet_bytes(
        portable_here / "predictions"
    )
    assert fits == [1] * n_fits(relcol.load_study(TINY)) and result.parts == len(fits) == 12
    runs = relcol.open_warehouse(tmp_path / "py").sql("SELECT run_id, versions FROM runs")
    assert json.loads(runs["versions"].item())["portable"] == "yes"  # the child's numerics
    assert runs["run_id"].item() == result.run_id
    # an error in the child is the same one-line RelcolError here, and nothing changes
    before = snapshot(tmp_path / "py")
    with pytest.raises(WarehouseError, match="is already in warehouse"):
        relcol.ingest(TINY, tmp_path / "py", portable=True)
    assert snapshot(tmp_path / "py") == before


def test_portable_is_refused_where_it_cannot_pin(tmp_path, monkeypatch):
    from relcol.study import portable_environment

    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    with pytest.raises(relcol.errors.ParameterError, match="not available on"):
        portable_environment()
