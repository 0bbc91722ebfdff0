"""p-values of the paired differences and their Benjamini–Hochberg adjustment."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from scipy import stats

from relcol.analysis import bootstrap, paired_differences
from relcol.analysis._multiplicity import benjamini_hochberg, bootstrap_p_values
from relcol.metrics import calibration
from relcol.store import CELL
from tests.test_bootstrap import frame_of


def test_benjamini_hochberg_matches_scipy():
    p = np.random.default_rng(0).random(200) ** 3
    assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(p, method="bh"))


def test_benjamini_hochberg_by_hand_and_nan():
    # sorted 0.01, 0.03, 0.04, 0.2 (m = 4): 0.04, 0.06, 0.0533, 0.2 → running minimum from the top
    q = benjamini_hochberg(np.array([0.01, 0.04, 0.03, np.nan, 0.2]))
    assert q[:3] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3]) and np.isnan(q[3]) and q[4] == 0.2


def test_bootstrap_p_value_is_never_zero_and_counts_ties_both_ways():
    replicates = np.array([[0.5] * 99, [0.0] * 99, [-1.0] * 50 + [1.0] * 49])
    p = bootstrap_p_values(replicates)
    assert p[0] == pytest.approx(2 / 100)  # all above 0: 2·(0 + 1)/(99 + 1)
    assert p[1] == 1.0  # all exactly 0
    assert p[2] == pytest.approx(min(1, 2 * 50 / 100))
    assert np.isnan(bootstrap_p_values(np.array([[np.nan] * 60 + [1.0] * 40]))[0])


def test_differences_carry_p_and_q_values_per_family():
    rows = frame_of(np.random.default_rng(7), models=("a", "b", "c"), severities=(0.0, 0.3, 0.6))
    result = bootstrap(rows, replicates=200)
    points = calibration(rows, CELL, proba=None).collect()
    table = paired_differences(result, points, metrics=["gap", "accuracy"], compare="all")
    assert table["p_value"].min() > 0 and table["p_value"].max() <= 1
    # a model pair appears both ways with the same p- and q-value
    model = table.filter(pl.col("contrast") == "model", pl.col("metric") == "gap")
    ab = model.filter(pl.col("model") == "a", pl.col("reference_model") == "b")
    ba = model.filter(pl.col("model") == "b", pl.col("reference_model") == "a")
    assert ab.sort("severity")["q_value"].to_list() == ba.sort("severity")["q_value"].to_list()
    # the family of one contrast × metric, each pair once: BH over its p-values
    one_way = model.filter(pl.col("model") < pl.col("reference_model"))
    expected = stats.false_discovery_control(one_way["p_value"].to_numpy(), method="bh")
    assert one_way["q_value"].to_numpy() == pytest.approx(expected)
    assert (table["q_value"] >= table["p_value"] - 1e-15).all()


def test_each_study_is_its_own_family():
    # two studies in one bootstrap: each study's q-values (per contrast and metric) are BH
    # over its own p-values, as if the other study were not there
    rng = np.random.default_rng(9)
    rows = pl.concat(
        [
            frame_of(rng, models=("a", "b"), severities=(0.0, 0.4, 0.8)).with_columns(
                study=pl.lit(study)
            )
            for study in ("first", "second")
        ]
    )
    result = bootstrap(rows, replicates=200)
    points = calibration(rows, CELL, proba=None).collect()
    table = paired_differences(result, points, metrics=["gap"], baseline="a")
    for study, contrast in itertools.product(("first", "second"), ("clean", "model")):
        family = table.filter(
            pl.col("study") == study,
            pl.col("contrast") == contrast,
            pl.col("p_value").is_not_null(),
        )
        assert family.height >= 3
        expected = stats.false_discovery_control(family["p_value"].to_numpy(), method="bh")
        assert family["q_value"].to_numpy() == pytest.approx(expected)


def test_training_variation_widens_each_side_in_quadrature():
    from relcol.analysis._training import with_training_variation

    table = pl.DataFrame(
        {"cell": [1, 2], "gap": [0.1, 0.2], "gap_lo": [0.07, 0.15], "gap_hi": [0.12, 0.3]}
    )
    seeds = pl.DataFrame(
        {"cell": [1, 1, 1, 1, 2], "seed": [0, 1, 2, 3, 0], "gap": [0.05, 0.1, 0.12, 0.13, 0.2]}
    )
    out = with_training_variation(table, seeds, ["cell"], alpha=0.1)
    s = np.std([0.05, 0.1, 0.12, 0.13], ddof=1)
    extra = stats.t.ppf(0.95, 3) * s / 2
    assert out["gap_lo"][0] == pytest.approx(0.1 - np.hypot(0.03, extra))
    assert out["gap_hi"][0] == pytest.approx(0.1 + np.hypot(0.02, extra))
    # one seed: nothing to add, and the scope says so
    assert out.row(1, named=True)["gap_lo"] == 0.15 and out["gap_hi"][1] == 0.3
    assert out["interval_scope"].to_list() == [
        "test samples and training seeds",
        "test samples",
    ]
