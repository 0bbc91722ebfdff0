"""Trend over severity (docs/statistics.md): Spearman ρ, its exact and t p-values, the bootstrap
interval of the pooled curve's ρ."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats

from relcol.analysis import _trends, bootstrap, spearman, spearman_rows, trends
from relcol.metrics import calibration
from relcol.store import CELL
from tests.test_bootstrap import frame_of


def enumerate_p(x, y) -> float:
    """Two-sided permutation p-value of Spearman's ρ by plain enumeration of every ordering:
    ρ of an ordering is the Pearson correlation of x's mid-ranks with y's mid-ranks in that
    order (ranking commutes with reordering), for all n! orderings at once."""
    observed = stats.spearmanr(x, y).statistic
    orders = np.array(list(itertools.permutations(range(len(y)))))
    rx = stats.rankdata(x)
    ry = stats.rankdata(y)[orders]  # (n! × n)
    rx, ry = rx - rx.mean(), ry - ry.mean(axis=1, keepdims=True)
    rho = (ry @ rx) / np.sqrt((rx @ rx) * (ry * ry).sum(axis=1))
    return float(np.mean(np.abs(rho) >= abs(observed) - 1e-12))


def test_hand_worked_exact_p_value():
    # ρ = 1 − 6Σd²/(n(n²−1)) = 1 − Σd²/10 with Σd² = 2: ρ = 0.8. Of the 24 orderings, |ρ| ≥ 0.8
    # needs Σd² ≤ 2 (identity + 3 adjacent swaps) or Σd² ≥ 18 (their reverses): 8 of 24.
    rho, p, method = spearman([0, 1, 2, 3], [0.1, 0.3, 0.2, 0.4])
    assert rho == pytest.approx(0.8) and p == pytest.approx(8 / 24) and method == "exact"
    rho, p, _ = spearman([0, 1, 2, 3, 4], [5, 4, 3, 2, 1])  # perfect: 2 of 120 orderings
    assert rho == -1.0 and p == pytest.approx(2 / 120)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=3, max_size=7),
    st.lists(st.integers(0, 4), min_size=7, max_size=7),
)
def test_exact_p_value_equals_an_independent_enumeration(x, y):
    """Ties in both variables (severity × seeds points share severities)."""
    y = y[: len(x)]
    rho, p, method = spearman(x, y)
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert np.isnan(rho) and method == "none"
        return
    assert rho == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert method == "exact" and p == pytest.approx(enumerate_p(x, y), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_exact_p_value_of_nine_points_with_ties_equals_the_enumeration(seed):
    """The orderings are counted by their integer statistic, not enumerated; nine points
    with ties in both variables, against every one of the 9! orderings."""
    rng = np.random.default_rng(seed)
    x = np.arange(9.0) if seed % 2 else rng.integers(0, 5, 9).astype(float)
    y = rng.integers(0, 4, 9).astype(float)
    _, p, method = spearman(x, y)
    assert method == "exact" and p == enumerate_p(x, y)


def test_t_approximation_above_ten_points_matches_scipy():
    rng = np.random.default_rng(0)
    x = np.repeat([0.0, 0.1, 0.2, 0.3, 0.4, 0.5], 3)  # 6 severities × 3 seeds
    for _ in range(20):
        y = np.round(rng.normal(x, 0.2), 2)  # ties in y too
        rho, p, method = spearman(x, y)
        expected = stats.spearmanr(x, y)
        assert method == "t"
        assert rho == pytest.approx(expected.statistic, abs=1e-12)
        assert p == pytest.approx(expected.pvalue, rel=1e-9)


def test_ten_points_are_exact_and_eleven_use_t():
    x = np.arange(10.0)
    y = np.array([0, 2, 1, 3, 5, 4, 6, 8, 7, 9.0])
    rho, p, method = spearman(x, y)
    assert method == "exact"
    # without ties ρ = 1 − 6Σd²/(n(n²−1)): count the orderings by Σd², enumerated by itertools
    flat = np.fromiter(itertools.chain.from_iterable(itertools.permutations(range(10))), np.int8)
    orders = flat.reshape(-1, 10).astype(np.int64)
    squares = ((orders - np.arange(10)) ** 2).sum(1)
    observed = ((np.argsort(np.argsort(y)) - np.arange(10)) ** 2).sum()
    extreme = np.abs(1 - 6 * squares / 990) >= abs(1 - 6 * observed / 990) - 1e-12
    assert rho == pytest.approx(1 - 6 * observed / 990) and p == pytest.approx(extreme.mean())
    assert spearman(np.arange(11.0), np.append(y, 10))[2] == "t"


def test_undefined_rho():
    assert np.isnan(spearman([0, 1], [1, 2])[0])  # two points
    assert np.isnan(spearman([0, 1, 2], [1, 1, 1])[0])  # constant metric


def test_spearman_rho_is_spearmans_rho_without_the_p_value(monkeypatch):
    """What ``trends`` uses for a curve's ρ: the bits of ``spearman``'s, with no ordering
    enumerated (the exact p-value made a study of many curves with tied values spend
    minutes on p-values nobody read)."""
    rng = np.random.default_rng(7)
    cases = [(np.arange(n, dtype=float), np.round(rng.random(n), 1)) for n in range(3, 13)]
    cases += [([0, 1], [1, 2]), ([0, 1, 2], [1, 1, 1]), ([0, 0, 0], [1, 2, 3])]
    expected = [spearman(x, y)[0] for x, y in cases]
    monkeypatch.setattr(_trends, "_exact_p", lambda *args: pytest.fail("enumerated"))
    for (x, y), rho in zip(cases, expected, strict=True):
        got = _trends.spearman_rho(x, y)
        assert (np.isnan(got) and np.isnan(rho)) or got == rho
        if np.isfinite(rho):
            assert got == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("short_rows", [_trends.SHORT_ROWS, 0])  # compiled ranks, rankdata's
def test_spearman_rows_is_spearman_per_row(short_rows, monkeypatch):
    monkeypatch.setattr(_trends, "SHORT_ROWS", short_rows)
    rng = np.random.default_rng(1)
    x = np.array([0.0, 0.1, 0.2, 0.3, 0.5])
    values = np.round(rng.random((30, 5)), 1)
    values[3, 2] = np.nan
    values[4] = 0.5
    got = spearman_rows(x, values)
    for i in range(30):
        expected = spearman(x, values[i])[0] if np.isfinite(values[i]).all() else np.nan
        if np.isnan(expected):
            assert np.isnan(got[i])
        else:
            assert got[i] == pytest.approx(expected, abs=1e-12)


def test_short_rows_get_rankdatas_mid_ranks_exactly():
    rng = np.random.default_rng(4)
    for n in (1, 3, 10, _trends.SHORT_ROWS):
        values = np.round(rng.normal(size=(500, n)), 1)  # many ties
        np.testing.assert_array_equal(_trends._row_ranks(values), stats.rankdata(values, axis=1))


def test_a_pooled_curve_without_one_severity_has_the_rho_of_the_others():
    rng = np.random.default_rng(8)
    rows = frame_of(rng, models=("a", "b"), severities=(0.0, 0.2, 0.4, 0.6), samples=60)
    result = bootstrap(rows, replicates=50)
    cells = result.cells.with_row_index("i")
    hole = cells.filter(model="b", severity=0.4)["i"].item()
    result.points["accuracy"] = result.points["accuracy"].copy()
    result.points["accuracy"][hole] = np.nan
    table = trends(result, metrics=["accuracy"]).sort("model")
    for row in table.iter_rows(named=True):
        mine = cells.filter(model=row["model"]).sort("severity")
        y = result.points["accuracy"][mine["i"].to_numpy()]
        keep = np.isfinite(y)
        expected = stats.spearmanr(mine["severity"].to_numpy()[keep], y[keep]).statistic
        assert row["spearman_rho"] == pytest.approx(expected, abs=1e-12)
        assert row["points"] == int(keep.sum())
    assert table["points"].to_list() == [4, 3]


def test_trends_of_a_degrading_curve(monkeypatch):
    rng = np.random.default_rng(2)
    rows = frame_of(rng, models=("a",), severities=(0.0, 0.2, 0.4, 0.6), seeds=3, samples=80)
    result = bootstrap(rows, replicates=300)
    # the trend's p-value comes from the replicates: no ordering of a curve is enumerated
    monkeypatch.setattr(_trends, "_exact_p", lambda *args: pytest.fail("enumerated"))
    table = trends(result)
    assert set(table["metric"]) == {"accuracy", "mean_confidence", "gap", "brier_top", "auroc"}
    accuracy = table.filter(pl.col("metric") == "accuracy").row(0, named=True)
    assert accuracy["points"] == 4 and accuracy["severities"] == 4
    order = result.cells.with_row_index("i").sort("severity")["i"].to_numpy()
    pooled = result.points["accuracy"][order]
    expected = stats.spearmanr([0.0, 0.2, 0.4, 0.6], pooled)
    assert accuracy["spearman_rho"] == pytest.approx(expected.statistic, abs=1e-12)
    assert accuracy["spearman_rho"] < -0.5 and accuracy["p_value"] < 0.05  # accuracy falls with d
    # the p-value from the replicates of ρ, recomputed here: 2·min(share ≤ 0, share ≥ 0)
    rho = np.array(
        [
            stats.spearmanr([0, 1, 2, 3], result.values["accuracy"][order, b]).statistic
            for b in range(300)
        ]
    )
    below, above = (rho <= 0).sum(), (rho >= 0).sum()
    assert accuracy["p_value"] == pytest.approx(min(1, 2 * (min(below, above) + 1) / 301))
    assert accuracy["rho_lo"] <= accuracy["spearman_rho"] <= accuracy["rho_hi"]


def test_each_curve_of_many_gets_its_own_rho_interval_and_p(monkeypatch):
    # curves on two severity grids (ranked together per grid, in blocks) and one too short
    rng = np.random.default_rng(6)
    rows = pl.concat(
        [
            frame_of(rng, models=("a", "b", "c"), severities=(0.0, 0.2, 0.4, 0.6), samples=50),
            frame_of(rng, models=("a", "b"), severities=(0.0, 0.3, 0.5), study="t", samples=50),
            frame_of(rng, models=("a",), severities=(0.0, 0.5), study="u", samples=50),
        ]
    )
    result = bootstrap(rows, replicates=200)
    table = trends(result)
    monkeypatch.setattr(_trends, "_CURVES", 2)  # the grid of three curves in two blocks
    assert_frame_equal(trends(result), table, check_exact=True)
    metrics = ["accuracy", "mean_confidence", "gap", "brier_top", "auroc"]
    curves = [("s", m) for m in ("a", "b", "c")] + [("t", m) for m in ("a", "b")]
    assert table.select("study", "model", "metric").rows() == [
        (study, model, metric) for study, model in curves for metric in metrics
    ]
    cells = result.cells.with_row_index("i")
    for row in table.iter_rows(named=True):
        mine = cells.filter(study=row["study"], model=row["model"]).sort("severity")
        order, severity = mine["i"].to_numpy(), mine["severity"].to_numpy()
        values = result.values[row["metric"]][order]
        rho = np.array([stats.spearmanr(severity, values[:, b]).statistic for b in range(200)])
        lo, hi = np.quantile(rho, [0.025, 0.975])
        assert row["rho_lo"] == pytest.approx(lo, abs=1e-12)
        assert row["rho_hi"] == pytest.approx(hi, abs=1e-12)
        below, above = (rho <= 0).sum(), (rho >= 0).sum()
        assert row["p_value"] == pytest.approx(min(1, 2 * (min(below, above) + 1) / 201))
        point = stats.spearmanr(severity, result.points[row["metric"]][order]).statistic
        assert row["spearman_rho"] == pytest.approx(point, abs=1e-12)


def test_ece_excess_trend_needs_ece_null():
    rng = np.random.default_rng(5)
    rows = frame_of(rng, models=("a",), severities=(0.0, 0.2, 0.4), seeds=2, samples=60)
    result = bootstrap(rows, replicates=100)
    points = calibration(rows, CELL, proba=None).collect()
    table = trends(result, points)
    excess = table.filter(pl.col("metric") == "ece_excess").row(0, named=True)
    order = points.sort("severity")
    expected = stats.spearmanr(order["severity"], order["ece_excess"]).statistic
    assert excess["spearman_rho"] == pytest.approx(expected, abs=1e-12)


def test_curves_with_fewer_than_three_severities_have_no_trend():
    rows = frame_of(np.random.default_rng(3), models=("a",), severities=(0.0, 0.5))
    assert trends(bootstrap(rows, replicates=20)).is_empty()


def test_values_equal_but_for_summation_order_are_ties_regression_last_bits():
    from relcol.analysis._trends import spearman, spearman_rows

    x = np.repeat([0.0, 0.1, 0.2], 3)
    equal = np.full(9, 0.8)
    jittered = equal + np.array([0, 1, -1, 2, 0, -2, 1, 0, -1]) * np.spacing(0.8)
    assert np.isnan(spearman(x, jittered)[0]) and np.isnan(spearman(x, equal)[0])
    assert np.isnan(spearman_rows(x, np.vstack([jittered, equal]))).all()


def test_the_t_and_normal_quantiles_from_scipy_special_have_scipy_stats_bits():
    # a report does not import scipy.stats (0.7 s): its t tail and quantile and its normal
    # quantile are the scipy.special functions scipy.stats calls, with the same bits
    from scipy import special

    from relcol.analysis._trends import _t_p

    rng = np.random.default_rng(8)
    for n in range(3, 60):
        rho = float(rng.uniform(-0.999, 0.999))
        t = rho * np.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
        assert _t_p(rho, n) == float(2 * stats.t.sf(abs(t), n - 2))
    alphas = np.array([0.001, 0.01, 0.05, 0.1, 0.2, 0.5])
    for df in (1.0, 2.0, 3.0, 4.0, 9.0, 29.0, 1000.0):
        np.testing.assert_array_equal(
            special.stdtrit(df, 1 - alphas / 2), stats.t.ppf(1 - alphas / 2, df)
        )
    np.testing.assert_array_equal(special.ndtri(1 - alphas / 2), stats.norm.ppf(1 - alphas / 2))
