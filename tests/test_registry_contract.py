"""The registry is the contract: every metric it lists is a column of its SQL view and of its
Polars table, the report heads it with the registry's label, and its numpy replicate kernel
(where it has one) gives the table's value on the sufficient statistics of a cell.

Also the over/under-confidence split of the ECE, against a hand-worked example and a numpy
reference of its definition.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from relcol.analysis._bootstrap import (
    INTERVAL_METRICS,
    NO_INTERVAL,
    REPLICATED,
    SEED_METRICS,
    TABLES,
)
from relcol.metrics import (
    CALIBRATION_COLUMNS,
    REGISTRY,
    REPLICATE_INPUTS,
    WIDTH_METRICS,
    bin_metrics,
    calibration,
    calibration_bins,
    labels,
    metric_tables,
    moment_metrics,
    rank_metrics,
    row_mean,
)
from relcol.report._metric_sections import _discrimination, _prepared, _selective
from relcol.report._tables import calibration_table
from relcol.store import CELL, PREDICTIONS, connect_frame

KEYS = list(CELL)
BINS = 15
CLASSES = 3
VIEWS = sorted({metric.view for metric in REGISTRY.values()})


def random_rows(seed: int = 7, n: int = 300) -> pl.DataFrame:
    """Two cells (clean and corrupted) of n test samples × 2 seeds, 3 classes, with
    probability vectors; the prediction is the vector's argmax and its confidence the max."""
    rng = np.random.default_rng(seed)
    parts = []
    for severity in (0.0, 0.5):
        for run in (0, 1):
            proba = rng.dirichlet(np.full(CLASSES, 0.6 + 2 * severity), n)
            y_true = rng.integers(0, CLASSES, n)
            y_pred = proba.argmax(1)
            parts.append(
                pl.DataFrame(
                    {
                        "study": "s",
                        "dataset": "d",
                        "model": "m",
                        "corruption": "none" if severity == 0 else "noise",
                        "severity": severity,
                        "seed": run,
                        "repeat": 0,
                        "sample_id": np.arange(n),
                        "label": pl.Series([None] * n, dtype=pl.String),
                        "y_true": y_true,
                        "y_clean": y_true,
                        "y_pred": y_pred,
                        "confidence": proba.max(1),
                        "correct": y_pred == y_true,
                        "proba": pl.Series(proba.tolist()),
                        "run_id": "r",
                    }
                )
            )
    frame = pl.concat(parts, how="vertical_relaxed")
    return frame.select(pl.col(name).cast(dtype) for name, dtype in PREDICTIONS.items())


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return random_rows()


@pytest.fixture(scope="module")
def tables(rows) -> dict[str, pl.DataFrame]:
    lazy = metric_tables(rows, bins=BINS)
    names = ("calibration", "discrimination", "selective")
    frames = dict(zip(names, pl.collect_all(lazy[name] for name in names), strict=True))
    consistency = REGISTRY["pa"].table(rows, KEYS).collect()
    return frames | {"consistency": consistency}


@pytest.fixture(scope="module")
def views(rows, tmp_path_factory) -> dict[str, pl.DataFrame]:
    con = connect_frame(tmp_path_factory.mktemp("contract"), rows, bins=BINS)
    try:
        return {view: con.sql(f'SELECT * FROM "{view}"').pl() for view in VIEWS}
    finally:
        con.close()


# Columns of the views and tables ------------------------------------------------------------


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_metric_is_a_column_of_its_view_and_table(name, tables, views):
    metric = REGISTRY[name]
    assert metric.column in views[metric.view].columns
    assert metric.column in tables[metric.view].columns
    table = (
        tables[metric.view].select(*KEYS, *metric.keys, metric.column).sort([*KEYS, *metric.keys])
    )
    view = views[metric.view].select(*KEYS, *metric.keys, metric.column).sort([*KEYS, *metric.keys])
    np.testing.assert_allclose(
        table[metric.column].cast(pl.Float64).to_numpy(),
        view[metric.column].cast(pl.Float64).to_numpy(),
        rtol=1e-9,
        atol=1e-12,
    )


def test_the_calibration_columns_are_the_registry_entries_in_order(tables, views):
    assert tables["calibration"].columns == [*KEYS, *CALIBRATION_COLUMNS]
    assert views["calibration"].columns == [*KEYS, *CALIBRATION_COLUMNS]


def test_the_bootstrap_lists_are_the_registry_entries():
    with_kernel = {name for name, metric in REGISTRY.items() if metric.kernel is not None}
    assert set(REPLICATED) == with_kernel and len(REPLICATED) == len(with_kernel)
    assert all(REGISTRY[name].needs in REPLICATE_INPUTS for name in REPLICATED)
    assert set(SEED_METRICS) == with_kernel - {"ace"}
    for view, names in TABLES.items():
        assert all(REGISTRY[name].view == view for name in names)
    assert set(INTERVAL_METRICS) == {n for n, m in REGISTRY.items() if m.interval == ""}
    assert NO_INTERVAL == {n: m.interval for n, m in REGISTRY.items() if m.interval}
    # the new split follows ECE's rule: replicates, a per-seed spread, no printed interval
    for name in ("ece", "ece_over", "ece_under"):
        assert name in WIDTH_METRICS and name in NO_INTERVAL and name not in INTERVAL_METRICS


# Labels --------------------------------------------------------------------------------------


def _headings(gt) -> dict[str, str]:
    return {column.var: str(column.column_label) for column in gt._boxhead}


def test_the_report_heads_every_metric_with_its_registry_label(tables):
    calibration_gt = calibration_table(tables["calibration"], study="s", bins=BINS)
    discrimination_gt = _discrimination(_prepared(tables["discrimination"]), "t", "d")
    selective_gt = _selective(_prepared(tables["selective"]), "t", "d")
    shown = 0
    for gt in (calibration_gt, discrimination_gt, selective_gt):
        for column, heading in _headings(gt).items():
            if column in REGISTRY and column != "n":
                assert heading == labels([column])[column], column
                shown += 1
    assert shown >= len(CALIBRATION_COLUMNS) + 5  # every metric column of the three tables
    assert _headings(calibration_gt)["ece_over"] == "ECE (over)"
    assert _headings(discrimination_gt)["auroc"] == "AUROC"
    assert _headings(selective_gt)["risk_at_coverage"] == "risk @ 80% cov."


# Kernels against the Polars tables ------------------------------------------------------------


def _kernel_inputs(cell: pl.DataFrame) -> dict[str, object]:
    """Each kind of sufficient statistic of one cell's rows, computed here with numpy and the
    per-bin sums of ``calibration_bins``."""
    width = calibration_bins(cell, CELL, bins=BINS).collect()
    mass = calibration_bins(cell, CELL, bins=BINS, binning="mass").collect()
    sums = ("n", "sum_confidence", "sum_correct")
    extra = ("sum_confidence_sq", "sum_confidence_correct", "sum_nll_top")
    c = cell["confidence"].to_numpy().astype(np.float64)
    z = cell["correct"].to_numpy().astype(np.float64)
    proba = np.array(cell["proba"].to_list(), dtype=np.float64)
    y = cell["y_true"].to_numpy()
    onehot = np.eye(CLASSES)[y]
    centred = c - c.mean()
    levels, level = np.unique(c, return_inverse=True)
    return {
        "bins": [width[s].to_numpy().astype(np.float64) for s in (*sums, *extra)],
        "mass": [mass[s].to_numpy().astype(np.float64) for s in sums],
        "proba": {
            "brier": ((proba - onehot) ** 2).sum(1).sum(),
            "nll": -np.log(np.maximum(proba[np.arange(len(y)), y], 1e-15)).sum(),
            "n": float(len(c)),
        },
        "moments": [
            np.array([v])
            for v in (
                z.sum(),
                (1 - z).sum(),
                (z * centred).sum(),
                (z * centred**2).sum(),
                ((1 - z) * centred).sum(),
                ((1 - z) * centred**2).sum(),
            )
        ],
        "ranks": (
            np.bincount(level, weights=z, minlength=len(levels)),
            np.bincount(level, weights=1 - z, minlength=len(levels)),
        ),
    }


def _kernel_value(name: str, inputs: dict[str, object]) -> float:
    metric = REGISTRY[name]
    if metric.needs in ("bins", "mass"):
        return float(bin_metrics(*inputs[metric.needs], names=(name,))[name])
    if metric.needs == "proba":
        scores = inputs["proba"]
        n = np.array(scores["n"])
        return float(metric.kernel(np.array(scores[name]), n, np.array(True)))
    if metric.needs == "moments":
        return float(metric.kernel(*inputs["moments"])[name][0])
    return float(metric.kernel(*inputs["ranks"])[name])


@pytest.mark.parametrize("name", [n for n, m in REGISTRY.items() if m.kernel is not None])
@pytest.mark.parametrize("severity", [0.0, 0.5])
def test_each_kernel_equals_the_polars_table_on_a_cell(name, severity, rows, tables):
    cell = rows.filter(pl.col("severity") == severity)
    expected = tables[REGISTRY[name].view].filter(pl.col("severity") == severity)[name].item()
    assert _kernel_value(name, _kernel_inputs(cell)) == pytest.approx(expected, abs=1e-12)


def test_the_kernel_families_are_the_shared_functions():
    assert REGISTRY["auroc"].kernel is rank_metrics
    assert REGISTRY["cohens_d"].kernel is moment_metrics
    assert REGISTRY["brier"].kernel is row_mean
    assert REGISTRY["ace"].kernel is REGISTRY["ece"].kernel


@pytest.mark.parametrize(
    ("groups_shape", "step"),
    [
        ((), 2),
        ((1,), 2),
        ((2,), 2),
        ((7,), 2),
        ((7,), 3),
        ((5, 13), 4),
        ((4, 1001), 100),
        ((0, 3), 2),
    ],
)
def test_bin_kernels_in_blocks_of_groups_have_the_bits_of_the_whole_arrays(
    monkeypatch, groups_shape, step
):
    # blocks of `step` groups (7 in steps of 3: 3 + 4, no lone last group, whose bins numpy
    # would sum pairwise) against every group at once; bins that are empty, groups without
    # rows, a -0.0 sum, and every bin metric with the proper scores
    rng = np.random.default_rng(3)
    shape = (BINS, *groups_shape)
    n = rng.poisson(2.0, shape).astype(np.float64)
    n.reshape(BINS, -1)[:, ::4] = 0.0  # every fourth group without rows
    confidence = n * rng.random(shape)
    correct = np.floor(n * rng.random(shape))
    confidence[n == 0] = -0.0
    sums = (n, confidence, correct, confidence * 0.7, correct * 0.4, n * rng.random(shape))
    names = tuple(m for m in WIDTH_METRICS if REGISTRY[m].kernel is not None)
    monkeypatch.setattr("relcol.metrics._kernels.BLOCK_BYTES", 8 * BINS * 10**9)
    whole = bin_metrics(*sums, names=names)
    monkeypatch.setattr("relcol.metrics._kernels.BLOCK_BYTES", 8 * BINS * step)
    blocks = bin_metrics(*sums, names=names)
    for name in names:
        assert blocks[name].shape == whole[name].shape == groups_shape, name
        assert blocks[name].tobytes() == whole[name].tobytes(), name


def test_the_bin_kernels_shared_quantities_have_the_bits_of_each_formula_written_out():
    # BinSums computes a bin's gap and accuracy and the reliability sum once for the kernels
    # that read them: each kernel against its formula in full, bit for bit, on signed gaps,
    # empty bins, bins of one row and groups without rows
    from relcol.metrics import _kernels as k

    rng = np.random.default_rng(5)
    n = rng.poisson(1.5, (BINS, 40, 9)).astype(np.float64)
    n[:, ::5] = 0.0
    s, z = n * rng.random(n.shape), np.floor(n * rng.random(n.shape))
    b = k.BinSums(n, s, z)
    error, size, present = z - s, np.where(n > 0, n, 1.0), n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        reliability = np.where(present, error * error / size, 0.0).sum(0) / n.sum(0)
        gap, accuracy = error / size, z / size
        term = gap * gap - accuracy * (1 - accuracy) / (size - 1)
        debiased = np.where(present & (n >= 2), n * term, 0.0).sum(0) / n.sum(0)
        spread = z / size - z.sum(0) / n.sum(0)
        written = {
            k.mce_kernel: np.where(present, np.abs(error) / size, -np.inf).max(0),
            k.brier_reliability_kernel: reliability,
            k.rmsce_kernel: np.sqrt(reliability),
            k.ece_debiased_kernel: np.sqrt(np.clip(debiased, 0.0, None)),
            k.brier_resolution_kernel: np.where(present, n * spread * spread, 0.0).sum(0)
            / n.sum(0),
        }
        for kernel, expected in written.items():
            assert kernel(b).tobytes() == expected.tobytes(), kernel.__name__
    assert (error < 0).any() and (error > 0).any() and (n == 1).any()


def test_a_metric_name_without_a_bin_kernel_is_an_error():
    one = np.ones((2, 1))
    with pytest.raises(ValueError, match="auroc"):
        bin_metrics(one, one, one, names=("auroc",))


# The over/under-confidence split of the ECE --------------------------------------------------


def test_the_split_by_hand():
    # 4 bins of width 1/4. (0.25, 0.5]: c = 0.3, 0.4 both wrong: conf .35, acc 0 → over .35;
    # (0.5, 0.75]: c = 0.6 right: conf .6, acc 1 → under .4; (0.75, 1]: c = 0.8, 0.9, one
    # right: conf .85, acc .5 → over .35. n = 5: over = (2·.35 + 2·.35)/5 = .28, under = .4/5
    frame = pl.DataFrame(
        {"confidence": [0.3, 0.4, 0.6, 0.8, 0.9], "correct": [False, False, True, True, False]}
    )
    out = calibration(frame, (), bins=4, proba=None, order=(), events=()).collect()
    assert out["ece_over"].item() == pytest.approx(0.28, abs=1e-12)
    assert out["ece_under"].item() == pytest.approx(0.08, abs=1e-12)
    assert out["ece"].item() == pytest.approx(0.36, abs=1e-12)
    row_level = frame.select(
        REGISTRY["ece_over"].build(bins=4), REGISTRY["ece_under"].build(bins=4)
    )
    assert row_level.row(0) == pytest.approx((0.28, 0.08), abs=1e-12)


def _split_reference(c: np.ndarray, z: np.ndarray, bins: int) -> tuple[float, float]:
    """Σ_b (n_b/n)·max(conf_b − acc_b, 0) and Σ_b (n_b/n)·max(acc_b − conf_b, 0) on the bins
    (m/M, (m+1)/M] (0 in the first), each bin's means taken over its rows."""
    index = np.clip(np.ceil(c * bins).astype(int) - 1, 0, bins - 1)
    over = under = 0.0
    for b in np.unique(index):
        inside = index == b
        signed = c[inside].mean() - z[inside].mean()
        over += inside.mean() * max(signed, 0.0)
        under += inside.mean() * max(-signed, 0.0)
    return over, under


@pytest.mark.parametrize("bins", [1, 7, 15])
def test_the_split_equals_the_numpy_reference_and_sums_to_the_ece(rows, views, bins):
    out = calibration(rows, CELL, bins=bins).collect()
    for cell in out.iter_rows(named=True):
        part = rows.filter(pl.col("severity") == cell["severity"])
        c = part["confidence"].to_numpy().astype(np.float64)
        z = part["correct"].to_numpy().astype(np.float64)
        over, under = _split_reference(c, z, bins)
        assert cell["ece_over"] == pytest.approx(over, abs=1e-12)
        assert cell["ece_under"] == pytest.approx(under, abs=1e-12)
        assert cell["ece_over"] + cell["ece_under"] == pytest.approx(cell["ece"], abs=1e-12)
    if bins == BINS:
        sql = views["calibration"]
        assert (sql["ece_over"] + sql["ece_under"] - sql["ece"]).abs().max() < 1e-15


def test_a_perfectly_calibrated_bin_adds_to_neither_part():
    frame = pl.DataFrame({"confidence": [0.5, 0.5], "correct": [True, False]})
    out = calibration(frame, (), bins=2, proba=None, order=(), events=()).collect()
    assert out.select("ece", "ece_over", "ece_under").row(0) == (0.0, 0.0, 0.0)
