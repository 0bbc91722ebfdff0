"""The tabular operators (scaling, swapped columns, outliers, categorical shift, label
transition matrices): what defines each one, and realised rates on real datasets.

The laws every operator shares (identity at 0, inputs untouched, same generator → same
output) are checked for these too in tests/test_corruption.py. Statistical checks use 4
standard errors, with fixed seeds.
"""

from __future__ import annotations

import importlib.util
import math
import re

import numpy as np
import pytest

from relcol.corruption import TrainingStats, get_operator
from relcol.corruption._entry import similar_scale_pairs
from relcol.data import DatasetSpec, load_dataset
from relcol.errors import InputError, SpecError

HAS_PENGUINS = importlib.util.find_spec("palmerpenguins") is not None
needs_penguins = pytest.mark.skipif(not HAS_PENGUINS, reason="needs relcol[datasets]")


def tolerance(d: float, n: int) -> float:
    return 4 * math.sqrt(d * (1 - d) / n)


def prepared(name: str, params: dict, *, n_features: int, n_classes: int = 3):
    op = get_operator(name)
    return op, op.validate(params, n_features=n_features, n_classes=n_classes)


def mixed_data(n: int, seed: int):
    """Two numeric features (one constant), one categorical with skewed frequencies."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.normal(10.0, 2.0, n),
            np.full(n, 4.0),
            rng.choice(4, size=n, p=[0.5, 0.3, 0.15, 0.05]).astype(float),
            rng.normal(-3.0, 0.5, n),
        ]
    )
    return X, rng.integers(0, 3, n)


CATEGORICAL = np.array([False, False, True, False])


# ------------------------------------------------------------------- scaling


@pytest.mark.parametrize("d", [0.1, 0.5, 1.0])
def test_scaling_multiplies_a_share_d_of_numeric_cells_by_a_listed_factor(d):
    X, y = mixed_data(4000, 1)
    stats = TrainingStats.fit(mixed_data(1000, 2)[0], 3, categorical=CATEGORICAL)
    op, params = prepared("scaling", {"factors": [10, 0.001]}, n_features=4)
    out = op(X, y, d, np.random.default_rng(3), stats, **params)
    assert out.X[:, 2].tobytes() == X[:, 2].tobytes()  # categorical codes are not quantities
    numeric = np.delete(np.arange(4), 2)
    ratio = out.X[:, numeric] / X[:, numeric]
    moved = ratio != 1
    assert np.all(np.isclose(ratio[moved], 10) | np.isclose(ratio[moved], 0.001))
    assert out.realised_rate == moved.mean() == out.changed_share  # no NaN or 0 cells here
    assert abs(out.realised_rate - d) <= tolerance(d, moved.size)
    # each factor drawn with equal probability
    assert abs(np.isclose(ratio[moved], 10).mean() - 0.5) <= tolerance(0.5, moved.sum())


def test_scaling_rejects_bad_factors():
    for factors, message in [
        ([], "factors must be a non-empty list"),
        ([10, 1], "every factor must be positive and not 1. Got 1.0."),
        ([-10], "every factor must be positive and not 1. Got -10.0."),
        (["x"], "factors must be a finite number. Got 'x'."),
    ]:
        with pytest.raises(SpecError, match=re.escape(f"scaling: {message}")):
            get_operator("scaling").validate({"factors": factors}, n_features=2, n_classes=2)


# ------------------------------------------------------------------ outliers


@pytest.mark.parametrize("d", [0.05, 0.4])
def test_outliers_move_a_share_d_of_cells_exactly_k_training_sds(d):
    X, y = mixed_data(5000, 4)
    X[:100, 0] = np.nan
    train = mixed_data(2000, 5)[0]
    stats = TrainingStats.fit(train, 3, categorical=CATEGORICAL)
    op, params = prepared("outliers", {"k": 6}, n_features=4)
    out = op(X, y, d, np.random.default_rng(6), stats, **params)
    sd = train.std(axis=0)  # numpy reference for the training SDs
    # untouched: the constant feature, the categorical one, NaN cells
    for j in (1, 2):
        assert out.X[:, j].tobytes() == X[:, j].tobytes()
    assert np.isnan(out.X[:100, 0]).all()
    eligible = np.zeros(X.shape, dtype=bool)
    eligible[:, [0, 3]] = True
    eligible[:100, 0] = False
    step = (out.X - X) / np.where(sd > 0, sd, 1)
    hit = eligible & (out.X != X)
    np.testing.assert_allclose(np.abs(step[hit]), 6.0, rtol=1e-9)
    assert out.realised_rate == hit[eligible].mean() == out.changed_share
    assert abs(out.realised_rate - d) <= tolerance(d, eligible.sum())
    assert abs((step[hit] > 0).mean() - 0.5) <= tolerance(0.5, hit.sum())


def test_outliers_k_must_be_positive():
    with pytest.raises(SpecError, match=re.escape("outliers: k must be positive. Got 0.0.")):
        get_operator("outliers").validate({"k": 0}, n_features=2, n_classes=2)


# ----------------------------------------------------------- swapped columns


def test_pairs_are_formed_closest_first_from_training_statistics():
    # (mean, SD) by column: 0 (0, 1), 1 (100, 10), 2 (0.1, 1), 3 (101, 10), 4 (5, 50),
    # 5 constant, 6 categorical. Distances by hand: d(0,2) = 0.1/2 = 0.05,
    # d(1,3) = 1/20 = 0.05, d(0,1) = 100/11 + ln 10 ≈ 11.4, ... ; the tie between (0,2)
    # and (1,3) goes to the lower indices; column 4 is left over, 5 and 6 never pair.
    rng = np.random.default_rng(7)
    z = rng.standard_normal((4000, 5))
    z = (z - z.mean(axis=0)) / z.std(axis=0)  # exact training means and SDs
    train = np.column_stack(
        [z * [1, 10, 1, 10, 50] + [0, 100, 0.1, 101, 5], np.ones(4000), rng.integers(0, 3, 4000)]
    )
    stats = TrainingStats.fit(train, 3, categorical=[False] * 6 + [True])
    assert similar_scale_pairs(stats) == [[0, 2], [1, 3]]


@pytest.mark.parametrize("d", [0.2, 0.75])
def test_swapped_columns_exchange_values_on_a_share_d_of_rows(d):
    X, y = mixed_data(4000, 8)
    stats = TrainingStats.fit(mixed_data(1000, 9)[0], 3, categorical=CATEGORICAL)
    op, params = prepared("swapped_columns", {"pairs": [[3, 0]]}, n_features=4)
    out = op(X, y, d, np.random.default_rng(10), stats, **params)
    swapped = out.X[:, 0] != X[:, 0]
    np.testing.assert_array_equal(out.X[swapped][:, [0, 3]], X[swapped][:, [3, 0]])
    np.testing.assert_array_equal(out.X[~swapped], X[~swapped])
    assert out.realised_rate == swapped.mean() == out.changed_share  # values always differ here
    assert abs(out.realised_rate - d) <= tolerance(d, len(X))


def test_swapped_columns_bad_pairs():
    op = get_operator("swapped_columns")
    for pairs, message in [
        ([[0, 0]], "each pair must be two different column indices in [0, 3]. Got [0, 0]."),
        ([[0, 4]], "each pair must be two different column indices in [0, 3]. Got [0, 4]."),
        ([[0, 1], [1, 2]], "column 1 appears in two pairs"),
        ([], "pairs must be a non-empty list"),
    ]:
        with pytest.raises(SpecError, match=re.escape(f"swapped_columns: {message}")):
            op.validate({"pairs": pairs}, n_features=4, n_classes=2)
    X, y = mixed_data(50, 11)
    stats = TrainingStats.fit(X, 3, categorical=CATEGORICAL)
    with pytest.raises(InputError, match="column 2 is categorical"):
        op(X, y, 0.5, np.random.default_rng(0), stats, pairs=[[2, 0]])
    constant = TrainingStats.fit(np.ones((10, 3)), 3)
    with pytest.raises(InputError, match="fewer than two numeric features with training spread"):
        op(np.ones((5, 3)), np.zeros(5, dtype=int), 0.5, np.random.default_rng(0), constant)


# -------------------------------------------------------- categorical shift


@pytest.mark.parametrize("d", [0.1, 0.6])
def test_categorical_shift_replaces_by_the_training_frequencies_of_the_others(d):
    X, y = mixed_data(40_000, 12)
    X[:1000, 2] = np.nan
    stats = TrainingStats.fit(mixed_data(20_000, 13)[0], 3, categorical=CATEGORICAL)
    out = get_operator("categorical_shift")(X, y, d, np.random.default_rng(14), stats)
    np.testing.assert_array_equal(np.delete(out.X, 2, axis=1), np.delete(X, 2, axis=1))
    assert np.isnan(out.X[:1000, 2]).all()
    before, after = X[1000:, 2], out.X[1000:, 2]
    replaced = after != before
    assert out.realised_rate == out.changed_share == replaced.mean()
    assert abs(out.realised_rate - d) <= tolerance(d, before.size)
    # Given the original category a, the new one is c ≠ a with probability p_c / (1 − p_a),
    # p the training frequencies (computed here with numpy from the training column).
    p = np.bincount(mixed_data(20_000, 13)[0][:, 2].astype(int), minlength=4) / 20_000
    for a in (0, 1):
        new = after[replaced & (before == a)]
        expected = np.where(np.arange(4) == a, 0.0, p) / (1 - p[a])
        observed = np.bincount(new.astype(int), minlength=4) / new.size
        assert observed[a] == 0
        for c in range(4):
            assert abs(observed[c] - expected[c]) <= tolerance(expected[c], new.size) + 1e-12


def test_categorical_shift_needs_a_categorical_feature():
    X, y = mixed_data(20, 15)
    op = get_operator("categorical_shift")
    numeric_only = TrainingStats.fit(X, 3)
    with pytest.raises(InputError, match="no categorical feature with at least two categories"):
        op(X, y, 0.3, np.random.default_rng(0), numeric_only)
    one_category = X.copy()
    one_category[:, 2] = 1.0
    with pytest.raises(InputError, match="no categorical feature with at least two categories"):
        op(
            X,
            y,
            0.3,
            np.random.default_rng(0),
            TrainingStats.fit(one_category, 3, categorical=CATEGORICAL),
        )
    assert op(X, y, 0.0, np.random.default_rng(0), numeric_only).X.tobytes() == X.tobytes()


def test_categorical_shift_same_generator_same_output():
    X, y = mixed_data(500, 16)
    stats = TrainingStats.fit(mixed_data(500, 17)[0], 3, categorical=CATEGORICAL)
    op = get_operator("categorical_shift")
    a, b, c = (op(X, y, 0.3, np.random.default_rng(s), stats) for s in (1, 1, 2))
    assert a.X.tobytes() == b.X.tobytes() and a.realised_rate == b.realised_rate
    assert a.X.tobytes() != c.X.tobytes()


def test_numeric_operators_leave_categorical_codes_alone():
    X, y = mixed_data(300, 18)
    stats = TrainingStats.fit(mixed_data(300, 19)[0], 3, categorical=CATEGORICAL)
    assert np.isnan(stats.mean[2]) and np.isnan(stats.sd[2])
    for name in ("gaussian_noise", "mnar", "scaling", "outliers"):
        op, params = prepared(name, {}, n_features=4)
        out = op(X, y, 0.5, np.random.default_rng(0), stats, **params)
        assert out.X[:, 2].tobytes() == X[:, 2].tobytes(), name
    # ... while missingness blanks them like any other cell
    out = get_operator("mcar")(X, y, 0.5, np.random.default_rng(0), stats)
    assert abs(np.isnan(out.X[:, 2]).mean() - 0.5) <= tolerance(0.5, 300)


def test_categorical_mask_must_match_the_features():
    with pytest.raises(InputError, match=r"one entry per feature \(4\)\. Got shape \(3,\)\."):
        TrainingStats.fit(np.zeros((5, 4)), 2, categorical=[True, False, False])


# --------------------------------------------------------- label transition


def test_label_transition_follows_one_minus_d_identity_plus_d_matrix():
    M = [[0.0, 0.7, 0.3], [0.1, 0.5, 0.4], [0.0, 0.0, 1.0]]
    n, d = 30_000, 0.4
    rng = np.random.default_rng(20)
    y = rng.integers(0, 3, n)
    stats = TrainingStats.fit(np.zeros((1, 1)), 3)
    op, params = prepared("label_transition", {"matrix": M}, n_features=1)
    out = op(np.zeros((n, 1)), y, d, np.random.default_rng(21), stats, **params)
    expected = (1 - d) * np.eye(3) + d * np.array(M)
    for i in range(3):
        rows = out.y[y == i]
        observed = np.bincount(rows, minlength=3) / rows.size
        for j in range(3):
            assert abs(observed[j] - expected[i, j]) <= tolerance(expected[i, j], rows.size)
    assert abs(out.realised_rate - d) <= tolerance(d, n)
    flip = d * np.mean([1 - M[i][i] for i in y])
    assert out.changed_share == (out.y != y).mean()
    assert abs(out.changed_share - flip) <= tolerance(flip, n)


@pytest.mark.parametrize("n_classes", [2, 5])
def test_label_transition_default_flips_with_probability_d_to_the_other_classes(n_classes):
    n, d = 20_000, 0.3
    rng = np.random.default_rng(22)
    y = rng.integers(0, n_classes, n)
    stats = TrainingStats.fit(np.zeros((1, 1)), n_classes)
    out = get_operator("label_transition")(
        np.zeros((n, 1)), y, d, np.random.default_rng(23), stats, matrix=None
    )
    assert out.realised_rate == out.changed_share == (out.y != y).mean()
    assert abs(out.realised_rate - d) <= tolerance(d, n)
    flipped = out.y[(out.y != y) & (y == 0)]
    share = 1 / (n_classes - 1)
    for c in range(1, n_classes):
        assert abs((flipped == c).mean() - share) <= tolerance(share, flipped.size)


def test_label_transition_rejects_a_matrix_that_is_not_stochastic():
    op = get_operator("label_transition")
    with pytest.raises(SpecError, match=re.escape("matrix must be 2 rows of 2 numbers")):
        op.validate({"matrix": [[1.0, 0.0]]}, n_features=1, n_classes=2)
    with pytest.raises(SpecError, match=re.escape("sum to 1. Got row sums [1.0, 0.9].")):
        op.validate({"matrix": [[0.5, 0.5], [0.5, 0.4]]}, n_features=1, n_classes=2)
    with pytest.raises(SpecError, match="non-negative"):
        op.validate({"matrix": [[1.5, -0.5], [0.0, 1.0]]}, n_features=1, n_classes=2)
    assert op.validate({"matrix": [[0, 1], [1, 0]]}, n_features=1, n_classes=2) == {
        "matrix": [[0.0, 1.0], [1.0, 0.0]]
    }


# ------------------------------------------------- real datasets, realised rates

REAL = ["digits", "breast_cancer", "wine", pytest.param("penguins", marks=needs_penguins)]


@pytest.mark.parametrize("dataset", REAL)
@pytest.mark.parametrize(
    "name", ["scaling", "swapped_columns", "outliers", "categorical_shift", "label_transition"]
)
@pytest.mark.parametrize("d", [0.1, 0.3, 0.5])
def test_realised_rate_within_four_standard_errors_of_d_on_real_data(dataset, name, d):
    ds = load_dataset(DatasetSpec(dataset), test_size=0.3, split_seed=0)
    stats = TrainingStats.fit(ds.X_train, ds.n_classes, categorical=ds.categorical)
    op, params = prepared(name, {}, n_features=ds.X_test.shape[1], n_classes=ds.n_classes)
    rng = np.random.default_rng(24)
    if name == "categorical_shift" and not ds.categorical.any():
        with pytest.raises(InputError):
            op(ds.X_test, ds.y_test, d, rng, stats, **params)
        return
    out = op(ds.X_test, ds.y_test, d, rng, stats, **params)
    numeric = ~ds.categorical
    observed = ~np.isnan(ds.X_test)
    sd = np.nanstd(ds.X_train, axis=0)
    eligible = {  # the entries each operator's docstring names, counted independently
        "scaling": ds.X_test[:, numeric].size,
        "swapped_columns": len(ds.y_test) * (np.sum(numeric & (sd > 0)) // 2),
        "outliers": (observed & numeric & (sd > 0)).sum(),
        "categorical_shift": (observed & ds.categorical).sum(),
        "label_transition": len(ds.y_test),
    }[name]
    assert abs(out.realised_rate - d) <= tolerance(d, eligible)


# ----------------------------------------------------------- the registry


def test_new_operators_can_be_the_base_of_structural_bias():
    X, y = mixed_data(600, 25)
    stats = TrainingStats.fit(X, 3, categorical=CATEGORICAL)
    op, params = prepared("structural_bias", {"base": "outliers", "target_class": 1}, n_features=4)
    out = op(X, y, 0.5, np.random.default_rng(26), stats, **params)
    assert out.X[y != 1].tobytes() == X[y != 1].tobytes()
    assert (out.X[y == 1] != X[y == 1]).any()
