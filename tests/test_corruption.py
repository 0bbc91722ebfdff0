"""Corruption operators (docs/study.md): the laws each one must obey.

Statistical checks use a tolerance of 4 standard errors of the quantity tested,
with fixed seeds, so they are deterministic and fail only on a real change.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import brentq
from scipy.special import expit, log_expit, logit, logsumexp

from relcol.corruption import OPERATORS, Corrupted, TrainingStats, get_operator
from relcol.corruption._base import solve_intercept
from relcol.errors import InputError, SpecError

K = 3

#: Every operator, and the variants whose mechanism differs, as (name, params).
CONFIGS = [
    ("mcar", {}),
    ("mar", {}),
    ("mar", {"driver": 2, "beta": -1.5}),
    ("mnar", {}),
    ("mnar", {"variant": "logistic", "beta": 1.0}),
    ("gaussian_noise", {}),
    ("label_noise", {}),
    ("structural_bias", {}),
    ("structural_bias", {"base": "gaussian_noise", "target_class": 1}),
    ("structural_bias", {"base": "label_noise", "target_class": 2}),
    ("structural_bias", {"base": "mar", "base_params": {"beta": 1.0}}),
    ("scaling", {}),
    ("swapped_columns", {}),
    ("swapped_columns", {"pairs": [[2, 0]]}),
    ("outliers", {"k": 3.0}),
    ("label_transition", {}),
    ("ampute", {}),
    (
        "ampute",
        {
            "patterns": [
                {"incomplete": [0, 1], "freq": 0.7, "shape": "tail"},
                {"incomplete": [2], "freq": 0.3, "mechanism": "MNAR", "shape": "mid"},
            ]
        },
    ),
]
CONFIG_IDS = [
    f"{name}-{'-'.join(map(str, params.values())) or 'default'}" for name, params in CONFIGS
]

#: Configurations that use no randomness at all: their output ignores the generator.
DETERMINISTIC = {("mnar", "quantile"), ("structural_bias", "mnar")}


def prepared(name: str, params: dict, *, n_features: int = 4, n_classes: int = K):
    op = get_operator(name)
    return op, op.validate(params, n_features=n_features, n_classes=n_classes)


def normal_data(n: int, n_features: int, seed: int, n_classes: int = K):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n_features)), rng.integers(0, n_classes, size=n)


def binomial_tolerance(p: float, n: int) -> float:
    return 4 * math.sqrt(p * (1 - p) / n)


# ---------------------------------------------------------------- identity at 0

cells = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(np.nan))


@st.composite
def datasets(draw, *, spread: bool = False):
    """Test rows, labels and training statistics; with ``spread``, every training
    column holds two distinct values (mar refuses a driver without spread)."""
    n_features = draw(st.integers(3, 5))
    n = draw(st.integers(0, 25))
    X = draw(hnp.arrays(np.float64, (n, n_features), elements=cells))
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, K - 1)))
    train = draw(hnp.arrays(np.float64, (draw(st.integers(1, 25)), n_features), elements=cells))
    if spread:
        train = np.vstack([train, np.zeros(n_features), np.ones(n_features)])
    return X, y, TrainingStats.fit(train, K)


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
@settings(max_examples=25, deadline=None)
@given(data=datasets(), seed=st.integers(0, 2**32 - 1))
def test_identity_at_zero(name, params, data, seed):
    X, y, stats = data
    op, params = prepared(name, params, n_features=X.shape[1])
    out = op(X, y, 0.0, np.random.default_rng(seed), stats, **params)
    assert out.X is not X and out.y is not y
    assert out.X.dtype == np.float64 and out.X.tobytes() == X.tobytes()
    assert out.y.dtype == y.dtype and out.y.tobytes() == y.tobytes()
    assert (out.realised_rate, out.changed_share) == (0.0, 0.0)


MISSINGNESS = [i for i, (name, _) in enumerate(CONFIGS) if name in ("mcar", "mar", "mnar")]


@pytest.mark.parametrize(
    ("name", "params"), [CONFIGS[i] for i in MISSINGNESS], ids=[CONFIG_IDS[i] for i in MISSINGNESS]
)
@settings(max_examples=25, deadline=None)
@given(data=datasets(spread=True), d=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_missingness_only_blanks_cells(name, params, data, d, seed):
    X, y, stats = data
    op, params = prepared(name, params, n_features=X.shape[1])
    assert np.all(stats.sd > 0)  # the strategy's spread, which mar needs
    X_before, y_before = X.tobytes(), y.tobytes()
    out = op(X, y, d, np.random.default_rng(seed), stats, **params)
    assert X.tobytes() == X_before and y.tobytes() == y_before  # inputs untouched
    kept = ~np.isnan(out.X)
    assert np.array_equal(out.X[kept], X[kept])  # a cell is either kept exactly or NaN
    assert out.y.tobytes() == y.tobytes()
    newly_missing = np.isnan(out.X) & ~np.isnan(X)
    eligible = X.size - (X.shape[0] if name == "mar" else 0)
    assert out.changed_share == pytest.approx(newly_missing.sum() / eligible if eligible else 0)
    assert 0.0 <= out.changed_share <= out.realised_rate <= 1.0


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
def test_inputs_never_mutated_and_int_input_becomes_float(name, params):
    X, y = normal_data(200, 4, seed=1)
    X_int = np.round(X * 10).astype(np.int64)
    stats = TrainingStats.fit(normal_data(300, 4, seed=2)[0], K)
    op, params = prepared(name, params)
    before = (X_int.copy(), y.copy())
    out = op(X_int, y, 0.5, np.random.default_rng(0), stats, **params)
    assert np.array_equal(X_int, before[0]) and np.array_equal(y, before[1])
    assert out.X.dtype == np.float64 and out.X.shape == X_int.shape
    assert isinstance(out, Corrupted)
    assert isinstance(out.realised_rate, float) and isinstance(out.changed_share, float)


# ------------------------------------------------------------ reproducibility


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
def test_same_generator_state_same_output(name, params):
    X, y = normal_data(300, 4, seed=3)
    stats = TrainingStats.fit(normal_data(500, 4, seed=4)[0], K)
    op, params = prepared(name, params)
    a = op(X, y, 0.3, np.random.default_rng(7), stats, **params)
    b = op(X, y, 0.3, np.random.default_rng(7), stats, **params)
    c = op(X, y, 0.3, np.random.default_rng(8), stats, **params)
    assert a.X.tobytes() == b.X.tobytes() and a.y.tobytes() == b.y.tobytes()
    assert (a.realised_rate, a.changed_share) == (b.realised_rate, b.changed_share)
    variant = params.get("variant", params.get("base"))
    same_as_other_seed = a.X.tobytes() == c.X.tobytes() and a.y.tobytes() == c.y.tobytes()
    # The quantile rule of mnar draws nothing: its output must not depend on the seed.
    assert same_as_other_seed == ((name, variant) in DETERMINISTIC)


@pytest.mark.parametrize(("name", "params"), CONFIGS, ids=CONFIG_IDS)
def test_draws_only_from_the_given_generator(name, params):
    X, y = normal_data(100, 4, seed=5)
    stats = TrainingStats.fit(normal_data(100, 4, seed=6)[0], K)
    op, params = prepared(name, params)
    # The legacy global generator is read on purpose: an operator must never touch it.
    np.random.seed(123)  # noqa: NPY002
    legacy_before = np.random.get_state()[1].copy()  # noqa: NPY002
    rng = np.random.default_rng(9)
    rng_before = rng.bit_generator.state
    op(X, y, 0.4, rng, stats, **params)
    assert np.array_equal(np.random.get_state()[1], legacy_before)  # noqa: NPY002
    used = rng.bit_generator.state != rng_before
    assert used == ((name, params.get("variant", params.get("base"))) not in DETERMINISTIC)


# ------------------------------------------------------------ realised rates


@pytest.mark.parametrize("d", [0.05, 0.3, 0.7, 1.0])
def test_mcar_realised_rate(d):
    X, y = normal_data(2000, 5, seed=10)
    stats = TrainingStats.fit(X, K)
    out = OPERATORS["mcar"](X, y, d, np.random.default_rng(11), stats)
    missing = np.isnan(out.X).mean()
    assert out.realised_rate == missing == out.changed_share  # clean input: all three agree
    assert abs(out.realised_rate - d) <= binomial_tolerance(d, X.size)
    assert np.isnan(out.X).mean(axis=0) == pytest.approx(
        np.full(5, d), abs=5 * binomial_tolerance(d, 2000)
    )


def test_realised_rate_counts_selected_cells_changed_share_only_new_nans():
    X, y = normal_data(1000, 4, seed=12)
    X[:250] = np.nan  # a quarter of the cells already missing
    stats = TrainingStats.fit(normal_data(1000, 4, seed=13)[0], K)
    out = OPERATORS["mcar"](X, y, 1.0, np.random.default_rng(0), stats)
    assert out.realised_rate == 1.0
    assert out.changed_share == 0.75


@pytest.mark.parametrize(
    ("d", "beta"), [(0.05, 2.0), (0.3, 2.0), (0.3, 0.0), (0.6, -3.0), (1.0, 2.0)]
)
def test_mar_realised_rate_and_driver_kept(d, beta):
    X, y = normal_data(3000, 4, seed=14)
    stats = TrainingStats.fit(normal_data(3000, 4, seed=15)[0], K)
    op, params = prepared("mar", {"driver": 1, "beta": beta})
    out = op(X, y, d, np.random.default_rng(16), stats, **params)
    assert out.X[:, 1].tobytes() == X[:, 1].tobytes()  # the driver is never made missing
    targets = np.delete(out.X, 1, axis=1)
    assert out.realised_rate == np.isnan(targets).mean() == out.changed_share
    # b is solved on the 3000 training rows: the test rate moves with the cells drawn, the
    # test rows' drivers and the training rows' drivers (each variance at most d(1 − d)).
    tolerance = 4 * math.sqrt(d * (1 - d) * (1 / targets.size + 2 / 3000))
    assert abs(out.realised_rate - d) <= tolerance


@pytest.mark.parametrize("d", [1e-300, 1e-6, 0.01, 0.3, 0.5, 0.97, 1 - 1e-9])
@pytest.mark.parametrize("beta", [0.0, 2.0, -5.0, 40.0])
def test_intercept_makes_mean_probability_exactly_d(d, beta):
    rng = np.random.default_rng(17)
    z = np.concatenate([rng.exponential(size=500), rng.normal(size=500), [0.0, 12.0]])
    b = solve_intercept(beta * z, d)
    assert math.isfinite(b)
    assert np.exp(logsumexp(log_expit(beta * z + b))) / z.size == pytest.approx(d, rel=1e-12)
    if beta == 0.0:
        assert b == logit(d)


@pytest.mark.parametrize("d", [0.05, 0.25, 0.5, 0.9])
def test_mnar_realised_rate_on_continuous_data(d):
    rng = np.random.default_rng(18)
    train = rng.normal(size=(200_000, 3)) * [1.0, 5.0, 0.1] + [0.0, 3.0, -2.0]
    X = rng.normal(size=(20_000, 3)) * [1.0, 5.0, 0.1] + [0.0, 3.0, -2.0]
    stats = TrainingStats.fit(train, K)
    out = OPERATORS["mnar"](X, rng.integers(0, K, 20_000), d, np.random.default_rng(0), stats)
    assert out.realised_rate == out.changed_share == np.isnan(out.X).mean()
    # Sampling error of the test cells plus that of the training quantile.
    tolerance = 4 * math.sqrt(d * (1 - d) * (1 / X.size + 1 / train.shape[0]))
    assert abs(out.realised_rate - d) <= tolerance


@pytest.mark.parametrize("d", [0.1, 0.4])
def test_mnar_logistic_realised_rate(d):
    X, y = normal_data(5000, 3, seed=19)
    stats = TrainingStats.fit(normal_data(5000, 3, seed=20)[0], K)
    op, params = prepared("mnar", {"variant": "logistic"}, n_features=3)
    out = op(X, y, d, np.random.default_rng(21), stats, **params)
    assert abs(out.realised_rate - d) <= binomial_tolerance(d, X.size)
    # Self-masking: the blanked values are the large ones.
    values, missing = X[:, 0], np.isnan(out.X[:, 0])
    assert values[missing].mean() > values[~missing].mean() + 0.5


@pytest.mark.parametrize(("d", "n_classes"), [(0.1, 2), (0.5, 3), (0.9, 10)])
def test_label_noise_realised_and_changed(d, n_classes):
    X, y = normal_data(20_000, 2, seed=22, n_classes=n_classes)
    stats = TrainingStats.fit(X, n_classes)
    out = OPERATORS["label_noise"](X, y, d, np.random.default_rng(23), stats)
    assert out.X.tobytes() == X.tobytes()  # features untouched
    assert out.y.dtype == y.dtype and out.y.min() >= 0 and out.y.max() < n_classes
    assert abs(out.realised_rate - d) <= binomial_tolerance(d, y.size)
    flip = d * (n_classes - 1) / n_classes
    assert out.changed_share == (out.y != y).mean()
    assert abs(out.changed_share - flip) <= binomial_tolerance(flip, y.size)


@pytest.mark.parametrize(("d", "n_classes"), [(0.2, 2), (0.5, 3), (0.9, 10)])
def test_label_noise_on_frozen_model_gives_expected_accuracy(d, n_classes):
    """Observed accuracy of fixed predictions with clean accuracy a is a·(1 − d) + d/K."""
    n, draws, a = 2000, 50, 0.7
    rng = np.random.default_rng(24)
    y = rng.integers(0, n_classes, size=n)
    predictions = np.where(np.arange(n) < a * n, y, (y + 1) % n_classes)
    assert (predictions == y).mean() == a
    stats = TrainingStats.fit(np.zeros((1, 1)), n_classes)
    X = np.zeros((n, 1))
    accuracy = np.mean(
        [
            (predictions == OPERATORS["label_noise"](X, y, d, rng, stats).y).mean()
            for _ in range(draws)
        ]
    )
    hit_right, hit_wrong = (1 - d) + d / n_classes, d / n_classes
    variance = a * hit_right * (1 - hit_right) + (1 - a) * hit_wrong * (1 - hit_wrong)
    assert abs(accuracy - (a * (1 - d) + d / n_classes)) <= 4 * math.sqrt(variance / (n * draws))


# ------------------------------------------------------------------------ mnar


@pytest.mark.parametrize("d", [1e-9, 0.1, 0.5, 0.9])
def test_mnar_blanks_the_values_above_the_training_quantile_and_some_ties(d):
    rng = np.random.default_rng(25)
    train = np.column_stack(
        [rng.normal(size=5000), rng.integers(0, 5, 5000), rng.exponential(size=5000)]
    )
    train[::7, 0] = np.nan  # the quantile ignores missing training values
    X = np.column_stack(
        [rng.normal(size=3000), rng.integers(0, 5, 3000), rng.exponential(size=3000)]
    )
    out = OPERATORS["mnar"](X, rng.integers(0, K, 3000), d, rng, TrainingStats.fit(train, K))
    threshold = np.nanquantile(train, 1 - d, axis=0)  # linear interpolation, numpy's default
    missing = np.isnan(out.X)
    assert missing[X > threshold].all() and not missing[X < threshold].any()
    assert np.array_equal(out.X[~missing], X[~missing])
    # Continuous features: nothing sits exactly at the quantile, the rule is x >= q.
    assert np.array_equal(missing[:, [0, 2]], X[:, [0, 2]] >= threshold[[0, 2]])
    # The discrete feature: values at q vanish with p = (d − P(x > q)) / P(x = q).
    tied = X[:, 1] == threshold[1]
    above, at = (train[:, 1] > threshold[1]).mean(), (train[:, 1] == threshold[1]).mean()
    p = min(max((d - above) / at, 0.0), 1.0)
    assert abs(missing[tied, 1].mean() - p) <= binomial_tolerance(p, tied.sum()) + 1e-12


def test_mnar_ties_on_a_discrete_feature_are_broken_at_random_so_the_rate_is_d():
    train = np.repeat([0.0, 1.0], [800, 200])[:, None]  # 20 % ones: Q_0.9 = 1
    X = np.repeat([0.0, 1.0], [8000, 2000])[:, None]
    stats = TrainingStats.fit(train, K)
    y = np.zeros(10_000, dtype=int)
    mnar = OPERATORS["mnar"]
    a = mnar(X, y, 0.1, np.random.default_rng(0), stats)
    b = mnar(X, y, 0.1, np.random.default_rng(1), stats)
    # Half of the ones vanish (p = 0.1 / 0.2), never a zero: a tenth of the cells, not all ones.
    assert not np.isnan(a.X[:8000]).any()
    assert abs(a.realised_rate - 0.1) <= binomial_tolerance(0.5, 2000) * 0.2
    assert a.X.tobytes() != b.X.tobytes()  # repeats are independent draws
    # A constant feature (every training value tied) loses a random share d of its cells.
    constant = mnar(
        np.zeros((10_000, 1)),
        y,
        0.3,
        np.random.default_rng(2),
        TrainingStats.fit(np.zeros((50, 1)), K),
    )
    assert abs(constant.realised_rate - 0.3) <= binomial_tolerance(0.3, 10_000)


@pytest.mark.parametrize("d", [0.1, 0.2, 0.3, 0.5])
def test_mnar_realised_rate_tracks_d_on_digits_issue_15(d):
    """Before random tie-breaking the digits missing share was 0.374 / 0.447 / 0.537 / 0.741."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    train, test = X[::2], X[1::2]
    out = OPERATORS["mnar"](
        test, y[1::2], d, np.random.default_rng(3), TrainingStats.fit(train, 10)
    )
    assert abs(out.realised_rate - d) <= 0.02
    # No feature is blanked wholesale (16 of 64 were at d = 0.1).
    assert (np.isnan(out.X).mean(axis=0) < 0.5 + d).all()


def test_mnar_endpoints():
    X, y = normal_data(500, 2, seed=26)
    stats = TrainingStats.fit(X[:100], K)  # the test set reaches beyond the training extremes
    mnar, rng = OPERATORS["mnar"], np.random.default_rng(0)
    assert mnar(X, y, 0.0, rng, stats).X.tobytes() == X.tobytes()
    everything = mnar(X, y, 1.0, rng, stats)
    assert np.isnan(everything.X).all() and everything.realised_rate == 1.0


def test_mnar_never_blanks_a_feature_with_no_training_values():
    X, y = normal_data(200, 2, seed=27)
    train = normal_data(200, 2, seed=28)[0]
    train[:, 1] = np.nan
    out = OPERATORS["mnar"](X, y, 0.5, np.random.default_rng(0), TrainingStats.fit(train, K))
    assert not np.isnan(out.X[:, 1]).any() and np.isnan(out.X[:, 0]).any()


# ------------------------------------------------------------------------- mar


def _logistic_fit(features: np.ndarray, outcome: np.ndarray):
    """Maximum-likelihood logistic regression (Newton); coefficients and standard errors."""
    design = np.column_stack([np.ones(len(outcome)), features])
    coef = np.zeros(design.shape[1])
    for _ in range(30):
        p = expit(design @ coef)
        hessian = design.T @ (design * (p * (1 - p))[:, None])
        coef = coef + np.linalg.solve(hessian, design.T @ (outcome - p))
    p = expit(design @ coef)
    covariance = np.linalg.inv(design.T @ (design * (p * (1 - p))[:, None]))
    return coef, np.sqrt(np.diag(covariance))


def _mar_sample(n: int, seed: int, driver_sd: float = 1.0):
    """A driver and a target strongly correlated with it (ρ = 0.8), plus a noise feature."""
    rng = np.random.default_rng(seed)
    driver = rng.normal(size=n)
    target = 0.8 * driver + 0.6 * rng.normal(size=n)
    driver *= driver_sd
    return np.column_stack([driver, target, rng.normal(size=n)])


@pytest.mark.parametrize("beta", [2.0, -2.0, 0.0])
def test_mar_depends_on_the_driver_and_not_on_the_target_given_it(beta):
    stats = TrainingStats.fit(_mar_sample(20_000, 29), K)
    # The test driver is spread twice as wide as in training: the slope β must hold per
    # *training* SD, or the operator standardised with test statistics.
    X = _mar_sample(30_000, 30, driver_sd=2.0)
    op, params = prepared("mar", {"driver": 0, "beta": beta}, n_features=3)
    out = op(X, np.zeros(len(X), dtype=int), 0.3, np.random.default_rng(31), stats, **params)
    missing = np.isnan(out.X[:, 1]).astype(float)
    z_driver = (X[:, 0] - stats.mean[0]) / stats.sd[0]
    coef, se = _logistic_fit(np.column_stack([z_driver, X[:, 1]]), missing)
    # The mask is exactly logistic in the standardised driver with slope β ...
    assert abs(coef[1] - beta) <= 4 * se[1]
    # ... and, given the driver, carries no information about the target.
    assert abs(coef[2]) <= 4 * se[2]
    high, low = missing[z_driver > 1].mean(), missing[z_driver < -1].mean()
    if beta > 0:
        assert high > 0.7 and low < 0.05
    elif beta < 0:
        assert low > 0.7 and high < 0.05
    else:
        assert abs(high - low) <= 4 * math.sqrt(
            0.3 * 0.7 * (1 / (z_driver > 1).sum() + 1 / (z_driver < -1).sum())
        )


def test_mar_missing_driver_counts_as_the_training_mean():
    X, y = normal_data(4000, 3, seed=32)
    X[:2000, 0] = np.nan
    X[2000:, 0] = 5.0  # exactly the training mean below: z = 0 for every row
    train = np.column_stack([np.repeat([4.0, 6.0], 50), np.ones(100), np.arange(100.0)])
    op, params = prepared("mar", {"driver": 0, "beta": 8.0}, n_features=3)
    out = op(X, y, 0.4, np.random.default_rng(33), TrainingStats.fit(train, K), **params)
    nan_driver, mean_driver = np.isnan(out.X[:2000, 1:]).mean(), np.isnan(out.X[2000:, 1:]).mean()
    assert abs(nan_driver - mean_driver) <= 4 * math.sqrt(2 * 0.4 * 0.6 / 4000)
    # The intercept is fitted on the training rows (z = ±1, half each), not on these test
    # rows (all z = 0): every test cell is missing with probability σ(b), not 0.4.
    b = brentq(lambda b: (expit(8 + b) + expit(b - 8)) / 2 - 0.4, -20, 20, xtol=1e-14)
    assert expit(b) == pytest.approx(0.00134, abs=1e-5)  # far below d
    assert abs(out.realised_rate - expit(b)) <= binomial_tolerance(expit(b), 8000)


# -------------------------------------------------------------- gaussian noise


@pytest.mark.parametrize("d", [0.1, 1.0, 2.5])
def test_gaussian_noise_scale_is_d_training_sds(d):
    rng = np.random.default_rng(34)
    scales = np.array([0.5, 1.0, 3.0])
    train = np.column_stack([rng.normal(size=(10_000, 3)) * scales, np.full(10_000, 7.0)])
    # Test features spread 3× wider than in training: the noise follows the training SD.
    X = np.column_stack([rng.normal(size=(20_000, 3)) * 3 * scales, np.full(20_000, 7.0)])
    X[::10, 0] = np.nan
    stats = TrainingStats.fit(train, K)
    out = OPERATORS["gaussian_noise"](X, np.zeros(len(X), dtype=int), d, rng, stats)
    noise = out.X - X
    assert np.array_equal(np.isnan(out.X), np.isnan(X))  # NaN stays NaN, nothing new
    expected = d * stats.sd[:3]
    empirical = np.nanstd(noise[:, :3], axis=0)
    assert np.all(np.abs(empirical / expected - 1) <= 4 / math.sqrt(2 * 18_000))
    assert np.all(np.abs(np.nanmean(noise[:, :3], axis=0)) <= 4 * expected / math.sqrt(18_000))
    assert out.X[:, 3].tobytes() == X[:, 3].tobytes()  # no training spread, no noise
    moved = ~np.isnan(X[:, :3])
    assert abs(out.realised_rate - d) <= 4 * d / math.sqrt(2 * moved.sum())
    assert out.changed_share == pytest.approx(moved.sum() / X.size)


# ------------------------------------------------------------- structural bias


@pytest.mark.parametrize(
    ("base", "target_class"),
    [("mnar", 0), ("mcar", 1), ("gaussian_noise", 2), ("label_noise", 1), ("mar", 0)],
)
def test_structural_bias_touches_only_the_target_class(base, target_class):
    X, y = normal_data(6000, 4, seed=35)
    stats = TrainingStats.fit(normal_data(6000, 4, seed=36)[0], K)
    op, params = prepared("structural_bias", {"base": base, "target_class": target_class})
    out = op(X, y, 0.3, np.random.default_rng(37), stats, **params)
    other, target = y != target_class, y == target_class
    assert out.X[other].tobytes() == X[other].tobytes()
    assert out.y[other].tobytes() == y[other].tobytes()
    # The target rows get exactly what the base does to them alone, with the same draws.
    alone = get_operator(base)(X[target], y[target], 0.3, np.random.default_rng(37), stats)
    assert out.X[target].tobytes() == alone.X.tobytes()
    assert out.y[target].tobytes() == alone.y.tobytes()
    assert (out.realised_rate, out.changed_share) == (alone.realised_rate, alone.changed_share)
    hit = out.y[target] != y[target] if base == "label_noise" else out.X[target] != X[target]
    assert hit.mean() > 0.1
    if base in ("mnar", "mcar", "mar"):
        cells = target.sum() * (3 if base == "mar" else 4)
        assert abs(out.realised_rate - 0.3) <= 4 * math.sqrt(0.3 * 0.7 / cells) + (
            0.02 if base == "mnar" else 0
        )


def test_structural_bias_with_an_absent_class_is_the_identity():
    X, y = normal_data(100, 4, seed=38)
    y[:] = 0
    stats = TrainingStats.fit(X, K)
    op, params = prepared("structural_bias", {"base": "mcar", "target_class": 2})
    out = op(X, y, 0.9, np.random.default_rng(0), stats, **params)
    assert out.X.tobytes() == X.tobytes() and (out.realised_rate, out.changed_share) == (0.0, 0.0)


# ---------------------------------------------------------------- training stats


def test_training_stats_are_nan_aware_population_moments():
    train = np.array(
        [[1.0, 2.0, np.nan], [3.0, 2.0, np.nan], [np.nan, 2.0, np.nan], [8.0, 2.0, np.nan]]
    )
    stats = TrainingStats.fit(train, 4)
    assert stats.mean[:2] == pytest.approx([4.0, 2.0])
    assert stats.sd[0] == pytest.approx(np.std([1.0, 3.0, 8.0]))  # ddof = 0
    assert stats.sd[1] == 0.0  # constant feature
    assert np.isnan(stats.mean[2]) and np.isnan(stats.sd[2])  # never observed
    assert stats.train.tobytes() == train.tobytes() and stats.train is not train
    assert stats.n_classes == 4
    with pytest.raises(ValueError, match="read-only"):
        stats.train[0, 0] = 0.0


def test_constant_feature_sd_is_exactly_zero_not_rounding_error():
    train = np.column_stack([np.full(7, 0.1), np.full(7, 7.98978985e-28), [0.1] * 6 + [np.nan]])
    assert np.nanstd(train[:, 0]) > 0  # numpy's rounding error, which would give z ~ 1e16
    stats = TrainingStats.fit(train, K)
    assert stats.sd.tolist() == [0.0, 0.0, 0.0]
    # A driver constant in training would make MAR silently MCAR: it is refused instead.
    X, y = normal_data(5000, 3, seed=39)
    op, params = prepared("mar", {"driver": 0, "beta": 3.0}, n_features=3)
    with pytest.raises(
        SpecError,
        match=r"^mar: driver feature\(s\) \[0\] give a score that is "
        r"constant in the clean training data",
    ):
        op(X, y, 0.25, np.random.default_rng(40), stats, **params)
    auto = prepared("mar", {}, n_features=3)[1]
    with pytest.raises(SpecError, match=r"^mar: no feature varies in the clean training data"):
        op(X, y, 0.25, np.random.default_rng(40), stats, **auto)


def test_mar_with_infinite_driver_values_still_solves():
    X, y = normal_data(2000, 3, seed=41)
    X[:100, 0] = np.inf
    stats = TrainingStats.fit(normal_data(2000, 3, seed=42)[0], K)
    op, params = prepared("mar", {"driver": 0}, n_features=3)
    out = op(X, y, 0.3, np.random.default_rng(43), stats, **params)
    assert np.isnan(out.X[:100, 1:]).all()  # σ(+∞) = 1
    rest = np.isnan(out.X[100:, 1:]).mean()  # rows like the training rows: rate d
    assert abs(rest - 0.3) <= 4 * math.sqrt(0.3 * 0.7 * (1 / 3800 + 2 / 1900))


@pytest.mark.parametrize(
    ("X_train", "n_classes", "message"),
    [
        (np.zeros(5), 2, r"X_train must be a non-empty 2-D array .* Got shape \(5,\)\."),
        (np.zeros((0, 3)), 2, r"Got shape \(0, 3\)\."),
        (np.zeros((5, 3)), 1, r"n_classes must be an int >= 2\. Got 1\."),
        (np.zeros((5, 3)), 2.0, r"n_classes must be an int >= 2\. Got 2\.0\."),
    ],
)
def test_training_stats_rejects_bad_input(X_train, n_classes, message):
    with pytest.raises(InputError, match=message):
        TrainingStats.fit(X_train, n_classes)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        ("mcar", {}, {}),
        ("mar", {}, {"driver": "auto", "beta": 2.0}),
        ("mar", {"driver": np.int64(3), "beta": 1}, {"driver": (3,), "beta": 1.0}),
        (
            "mar",
            {"driver": [0, 2], "weights": [1, -0.5], "columns": [1], "fraction": 0.5},
            {
                "driver": (0, 2),
                "weights": (1.0, -0.5),
                "beta": 2.0,
                "columns": (1,),
                "fraction": 0.5,
            },
        ),
        ("mcar", {"columns": [3, 0]}, {"columns": (3, 0)}),
        ("mnar", {}, {"variant": "quantile"}),
        ("mnar", {"variant": "logistic"}, {"variant": "logistic", "beta": 2.0}),
        ("gaussian_noise", {}, {}),
        ("label_noise", {}, {}),
        (
            "structural_bias",
            {},
            {"base": "mnar", "target_class": 0, "base_params": {"variant": "quantile"}},
        ),
        (
            "structural_bias",
            {"base": "mar", "target_class": 2, "base_params": {"beta": 0}},
            {"base": "mar", "target_class": 2, "base_params": {"driver": "auto", "beta": 0.0}},
        ),
        (
            "structural_bias",
            {"group_feature": 1, "group_min": 0.5},
            {
                "base": "mnar",
                "base_params": {"variant": "quantile"},
                "group_feature": 1,
                "group_min": 0.5,
                "group_max": math.inf,
            },
        ),
    ],
)
def test_validate_fills_defaults(name, given, expected):
    validated = get_operator(name).validate(given, n_features=4, n_classes=K)
    assert validated == expected
    assert all(type(validated[k]) is type(expected[k]) for k in expected)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        (
            "mcar",
            {"rate": 0.1},
            "mcar: unknown parameter 'rate'; allowed: 'columns', 'fraction'.",
        ),
        (
            "gaussian_noise",
            {"sd": 1},
            "gaussian_noise: unknown parameter 'sd'; allowed: 'columns', 'fraction'.",
        ),
        (
            "label_noise",
            {"k": 3},
            "label_noise: unknown parameter 'k'; allowed: 'fraction'.",
        ),
        (
            "mar",
            {"gamma": 1},
            "mar: unknown parameter 'gamma'; allowed: 'beta', 'columns', 'driver', 'fraction', "
            "'weights'.",
        ),
        ("mar", {"beta": "x"}, "mar: beta must be a finite number. Got 'x'."),
        ("mar", {"beta": float("inf")}, "mar: beta must be a finite number. Got inf."),
        ("mar", {"beta": True}, "mar: beta must be a finite number. Got True."),
        (
            "mar",
            {"driver": 4},
            "mar: driver must be a feature name or index in [0, 3], or a non-empty list of "
            "distinct ones. Got 4.",
        ),
        (
            "mar",
            {"driver": -1},
            "mar: driver must be a feature name or index in [0, 3], or a non-empty list of "
            "distinct ones. Got -1.",
        ),
        (
            "mar",
            {"driver": 1.0},
            "mar: driver must be a feature name or index in [0, 3], or a non-empty list of "
            "distinct ones. Got 1.0.",
        ),
        (
            "mnar",
            {"variant": "tail"},
            "mnar: variant must be one of 'quantile', 'logistic'. Got 'tail'.",
        ),
        (
            "mnar",
            {"beta": 1.0},
            "mnar: beta applies only to variant 'logistic'; set variant = 'logistic' or drop beta. "
            "Got variant 'quantile'.",
        ),
        (
            "mnar",
            {"variant": "logistic", "beta": "2"},
            "mnar: beta must be a finite number. Got '2'.",
        ),
        (
            "structural_bias",
            {"base": "structural_bias"},
            "structural_bias: base must be one of 'ampute', 'categorical_shift', 'gaussian_noise', "
            "'label_noise', 'label_transition', 'mar', 'mcar', 'mnar', 'outliers', 'scaling', "
            "'swapped_columns'. Got 'structural_bias'.",
        ),
        (
            "structural_bias",
            {"target_class": 3},
            "structural_bias: target_class must be an int in [0, 2]. Got 3.",
        ),
        (
            "structural_bias",
            {"beta": 1.0},
            "structural_bias: unknown parameter 'beta'; allowed: 'base', 'base_params', 'fraction', "
            "'group_feature', 'group_max', 'group_min', 'target_class'.",
        ),
        (
            "structural_bias",
            {"base": "mar", "base_params": {"driver": 9}},
            "structural_bias: base_params: mar: driver must be a feature name or index in [0, 3], "
            "or a non-empty list of distinct ones. Got 9.",
        ),
        (
            "mar",
            {"driver": [0, 0]},
            "mar: driver must be a feature name or index in [0, 3], or a non-empty list of "
            "distinct ones. Got [0, 0].",
        ),
        (
            "mar",
            {"weights": [1.0]},
            "mar: weights must be a list with one number per driver (name the drivers in "
            "`driver`). Got weights [1.0] for driver 'auto'.",
        ),
        (
            "mar",
            {"driver": 1, "columns": [0, 1]},
            "mar: a driver cannot also be a target column. Got driver [1] and columns [0, 1].",
        ),
        ("mcar", {"fraction": 0}, "mcar: fraction must be a number in (0, 1]. Got 0."),
        (
            "mcar",
            {"columns": []},
            "mcar: columns must be a feature name or index in [0, 3], or "
            "a non-empty list of distinct ones. Got [].",
        ),
        (
            "structural_bias",
            {"group_feature": 0},
            "structural_bias: group_feature needs group_min and/or group_max (the group's range).",
        ),
        (
            "structural_bias",
            {"group_feature": 0, "group_min": 0, "target_class": 1},
            "structural_bias: give either target_class or group_feature, not both.",
        ),
        (
            "structural_bias",
            {"group_max": 1},
            "structural_bias: group_max needs group_feature (the feature whose range defines "
            "the group).",
        ),
        (
            "structural_bias",
            {"group_feature": 0, "group_min": 2, "group_max": 1},
            "structural_bias: group_min must be <= group_max. Got 2 > 1.",
        ),
        (
            "structural_bias",
            {"base_params": 5},
            "structural_bias: base_params must be a table (mapping). Got 5.",
        ),
    ],
)
def test_validate_rejects_bad_parameters(name, params, message):
    with pytest.raises(SpecError) as error:
        get_operator(name).validate(params, n_features=4, n_classes=K)
    assert str(error.value) == message


def test_validate_needs_a_mapping_and_mar_needs_two_features():
    with pytest.raises(
        SpecError, match=r"^mcar: parameters must be a table \(mapping\)\. Got list\.$"
    ):
        get_operator("mcar").validate([], n_features=4, n_classes=K)
    with pytest.raises(
        SpecError, match=r"^mar: needs at least 2 features \(a driver and a target\)\. Got 1\.$"
    ):
        get_operator("mar").validate({}, n_features=1, n_classes=K)


def test_unknown_operator_lists_the_known_ones():
    with pytest.raises(SpecError) as error:
        get_operator("mcra")
    assert str(error.value) == (
        "unknown corruption operator 'mcra'; known operators: 'ampute', 'categorical_shift', "
        "'gaussian_noise', 'label_noise', 'label_transition', 'mar', 'mcar', 'mnar', 'outliers', "
        "'scaling', 'structural_bias', 'swapped_columns'."
    )
    assert sorted(OPERATORS) == sorted(
        [
            "mcar",
            "mar",
            "mnar",
            "ampute",
            "gaussian_noise",
            "label_noise",
            "structural_bias",
            "scaling",
            "swapped_columns",
            "outliers",
            "categorical_shift",
            "label_transition",
        ]
    )
    assert all(op.name == name for name, op in OPERATORS.items())


@pytest.mark.parametrize(
    ("name", "params", "d", "message"),
    [
        ("mcar", None, 1.5, "mcar: severity must be a finite number in [0, 1]. Got 1.5."),
        (
            "label_noise",
            None,
            -0.1,
            "label_noise: severity must be a finite number in [0, 1]. Got -0.1.",
        ),
        ("mnar", None, float("nan"), "mnar: severity must be a finite number in [0, 1]. Got nan."),
        ("mar", None, "0.1", "mar: severity must be a finite number in [0, 1]. Got '0.1'."),
        ("mcar", None, True, "mcar: severity must be a finite number in [0, 1]. Got True."),
        (
            "gaussian_noise",
            None,
            math.inf,
            "gaussian_noise: severity must be a finite number in [0, inf). Got inf.",
        ),
        (
            "structural_bias",
            None,
            2.0,
            "structural_bias: severity must be a finite number in [0, 1]. Got 2.0.",
        ),
    ],
)
def test_check_severity_rejects(name, params, d, message):
    with pytest.raises(SpecError) as error:
        get_operator(name).check_severity(d, params)
    assert str(error.value) == message


def test_severity_ranges():
    assert {name: op.severity_range for name, op in OPERATORS.items()} == {
        "mcar": (0.0, 1.0),
        "mar": (0.0, 1.0),
        "mnar": (0.0, 1.0),
        "gaussian_noise": (0.0, math.inf),
        "label_noise": (0.0, 1.0),
        "structural_bias": (0.0, 1.0),
        "ampute": (0.0, 1.0),
        "scaling": (0.0, 1.0),
        "swapped_columns": (0.0, 1.0),
        "outliers": (0.0, 1.0),
        "categorical_shift": (0.0, 1.0),
        "label_transition": (0.0, 1.0),
    }
    assert get_operator("gaussian_noise").check_severity(3, None) == 3.0
    bias = get_operator("structural_bias")
    params = bias.validate({"base": "gaussian_noise"}, n_features=4, n_classes=K)
    assert bias.check_severity(2.0, params) == 2.0  # the base's range applies


# ---------------------------------------------- groups, columns, row fraction (issue 15)


def _shifted_classes(n: int, seed: int):
    """Class 1's features sit 2 SDs above class 0's: a threshold fitted on all rows is wrong
    for either class alone."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return rng.normal(size=(n, 3)) + 2.0 * y[:, None], y


@pytest.mark.parametrize("base", ["mnar", "mar"])
def test_structural_bias_rate_is_d_within_the_group(base):
    X_train, y_train = _shifted_classes(20_000, 50)
    X, y = _shifted_classes(10_000, 51)
    stats = TrainingStats.fit(X_train, 2, labels=y_train)
    op, params = prepared(
        "structural_bias", {"base": base, "target_class": 0}, n_features=3, n_classes=2
    )
    out = op(X, y, 0.3, np.random.default_rng(52), stats, **params)
    group = y == 0
    rate = np.isnan(out.X[group]).mean() if base == "mnar" else out.realised_rate
    assert abs(rate - 0.3) <= 0.02
    # Fitted on all training rows instead, the class-0 rate is far from d (the issue's defect).
    pooled = op(X, y, 0.3, np.random.default_rng(52), TrainingStats.fit(X_train, 2), **params)
    if base == "mnar":
        assert np.isnan(pooled.X[group]).mean() < 0.1


def test_structural_bias_on_a_feature_range_touches_only_that_group():
    X_train, _ = normal_data(10_000, 3, seed=53)
    X, y = normal_data(8000, 3, seed=54)
    X[::50, 2] = np.nan  # outside every range
    stats = TrainingStats.fit(X_train, K)
    op, params = prepared(
        "structural_bias",
        {"base": "mcar", "group_feature": 2, "group_min": 0.0, "group_max": 1.0},
        n_features=3,
    )
    out = op(X, y, 0.4, np.random.default_rng(55), stats, **params)
    group = (X[:, 2] >= 0.0) & (X[:, 2] <= 1.0)
    assert out.X[~group].tobytes() == X[~group].tobytes()
    assert np.isnan(out.X[group]).mean() == out.realised_rate
    assert abs(out.realised_rate - 0.4) <= binomial_tolerance(0.4, 3 * group.sum())
    empty = op.validate(
        {"base": "mcar", "group_feature": 2, "group_min": 50.0}, n_features=3, n_classes=K
    )
    with pytest.raises(SpecError, match=r"the group \(feature 2 in \[50, inf\]\) has no clean "):
        op(X, y, 0.4, np.random.default_rng(55), stats, **empty)


@pytest.mark.parametrize(
    ("name", "params"), [("mcar", {}), ("gaussian_noise", {}), ("label_noise", {}), ("mnar", {})]
)
def test_fraction_corrupts_only_a_random_share_of_rows(name, params):
    X, y = normal_data(10_000, 3, seed=56)
    stats = TrainingStats.fit(normal_data(10_000, 3, seed=57)[0], K)
    op, params = prepared(name, {**params, "fraction": 0.25}, n_features=3)
    out = op(X, y, 0.5, np.random.default_rng(58), stats, **params)
    touched = np.any(out.X != X, axis=1) | np.any(np.isnan(out.X), axis=1) | (out.y != y)
    # Rows are picked first, with the same generator: reproduce the pick.
    picked = np.random.default_rng(58).random(10_000) < 0.25
    assert not touched[~picked].any()
    assert abs(picked.mean() - 0.25) <= binomial_tolerance(0.25, 10_000)
    rng = np.random.default_rng(58)
    rng.random(10_000)  # the pick, then the operator's own draws on the picked rows
    alone = op(
        X[picked],
        y[picked],
        0.5,
        rng,
        stats,
        **{k: v for k, v in params.items() if k != "fraction"},
    )
    # The rate is measured over the picked rows, where it is d's own.
    assert name == "gaussian_noise" or abs(out.realised_rate - 0.5) <= binomial_tolerance(
        0.5, picked.sum() * (1 if name == "label_noise" else 3)
    )
    assert out.X[picked].tobytes() == alone.X.tobytes()
    assert out.y[picked].tobytes() == alone.y.tobytes()


@pytest.mark.parametrize("name", ["mcar", "mnar", "gaussian_noise"])
def test_columns_limit_the_operator_to_the_named_features(name):
    X, y = normal_data(5000, 4, seed=59)
    stats = TrainingStats.fit(normal_data(5000, 4, seed=60)[0], K)
    op, params = prepared(name, {"columns": [3, 1]})
    out = op(X, y, 0.5, np.random.default_rng(61), stats, **params)
    assert out.X[:, [0, 2]].tobytes() == X[:, [0, 2]].tobytes()
    moved = (out.X[:, [1, 3]] != X[:, [1, 3]]) | np.isnan(out.X[:, [1, 3]])
    assert moved.mean() == pytest.approx(out.changed_share)
    if name != "gaussian_noise":
        assert out.realised_rate == np.isnan(out.X[:, [3, 1]]).mean()
        assert abs(out.realised_rate - 0.5) <= 0.05


def test_mar_auto_driver_is_informative_and_weights_combine_drivers():
    rng = np.random.default_rng(62)
    latent = rng.normal(size=4000)

    # Feature 0 is constant (a blank pixel), 1 is noise, 2 and 3 share the latent factor.
    def sample(n_rows, latent):
        return np.column_stack(
            [
                np.zeros(n_rows),
                rng.normal(size=n_rows),
                latent + 0.3 * rng.normal(size=n_rows),
                latent + 0.3 * rng.normal(size=n_rows),
            ]
        )

    stats = TrainingStats.fit(sample(4000, latent), K)
    from relcol.corruption._missing import auto_driver

    assert auto_driver(stats, None).tolist() == [2] and auto_driver(stats, (3,)).tolist() == [2]
    X = sample(4000, rng.normal(size=4000))
    op, params = prepared("mar", {"driver": [2, 1], "weights": [1.0, -1.0], "beta": 3.0})
    out = op(X, np.zeros(4000, dtype=int), 0.3, np.random.default_rng(63), stats, **params)
    missing = np.isnan(out.X[:, 3])
    # The score is z2 − z1: missingness rises with feature 2 and falls with feature 1.
    z = (X - stats.mean) / np.where(stats.sd > 0, stats.sd, 1)
    assert z[missing, 2].mean() > z[~missing, 2].mean() + 0.5
    assert z[missing, 1].mean() < z[~missing, 1].mean() - 0.5
    assert not np.isnan(out.X[:, [1, 2]]).any()  # drivers are never blanked


def test_feature_names_resolve_to_indices_recursively():
    from relcol.corruption._base import resolve_names

    names = ("age", "income", "auto_x")
    params = {
        "columns": ["income", 0],
        "driver": "auto",
        "base_params": {"driver": "age"},
        "patterns": [{"incomplete": ["auto_x"]}],
        "beta": 1.0,
    }
    assert resolve_names(params, names, "here") == {
        "columns": [1, 0],
        "driver": "auto",
        "base_params": {"driver": 0},
        "patterns": [{"incomplete": [2]}],
        "beta": 1.0,
    }
    with pytest.raises(SpecError, match=r"^here: no feature named 'incme'; features: 'age', "):
        resolve_names({"columns": "incme"}, names, "here")


# ------------------------------------------------------- multivariate amputation


def _amputed(patterns, d, *, n=20_000, seed=70, beta=2.0):
    X, y = normal_data(n, 4, seed=seed)
    stats = TrainingStats.fit(normal_data(n, 4, seed=seed + 1)[0], K)
    op, params = prepared("ampute", {"patterns": patterns, "beta": beta})
    return X, stats, op(X, y, d, np.random.default_rng(seed + 2), stats, **params)


@pytest.mark.parametrize("d", [0.1, 0.4, 1.0])
def test_ampute_makes_a_share_d_of_rows_incomplete_in_their_patterns(d):
    patterns = [
        {"incomplete": [0, 1], "freq": 0.5},
        {"incomplete": [2], "freq": 0.3, "mechanism": "MNAR", "shape": "left"},
        {"incomplete": [1, 3], "freq": 0.2, "mechanism": "MCAR"},
    ]
    X, _, out = _amputed(patterns, d)
    missing = np.isnan(out.X)
    incomplete = missing.any(axis=1)
    assert out.realised_rate == incomplete.mean()
    # b is fitted on 20,000 training rows like these: test rate within sampling error of d.
    assert abs(out.realised_rate - d) <= 4 * math.sqrt(d * (1 - d) * 2 / 20_000) + 1e-12
    # Every incomplete row lost exactly one pattern's variables.
    signatures = {tuple(row) for row in missing[incomplete].astype(int)}
    assert signatures <= {(1, 1, 0, 0), (0, 0, 1, 0), (0, 1, 0, 1)}
    shares = [
        np.all(missing == m, axis=1).mean() for m in ([1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1])
    ]
    for share_, freq in zip(shares, (0.5, 0.3, 0.2), strict=True):
        assert abs(share_ - d * freq) <= 4 * math.sqrt(d * freq / 20_000) + 1e-12
    assert out.changed_share == pytest.approx(missing.sum() / X.size)  # union = all 4


@pytest.mark.parametrize(
    ("shape", "law"),
    [
        ("right", lambda s: s),
        ("left", lambda s: -s),
        ("mid", lambda s: -np.abs(s)),
        ("tail", np.abs),
    ],
)
def test_ampute_score_shapes_decide_which_rows_go_missing(shape, law):
    # One MAR pattern driven by feature 3 alone: the score is z₃.
    patterns = [{"incomplete": [0], "driver": [3], "shape": shape}]
    X, stats, out = _amputed(patterns, 0.3)
    z = (X[:, 3] - stats.mean[3]) / stats.sd[3]
    missing = np.isnan(out.X[:, 0])
    # The rows that went missing have a larger shaped score than those that did not.
    assert law(z)[missing].mean() > law(z)[~missing].mean() + 0.3
    # MAR: given the driver, the target's own value does not matter.
    assert abs(X[missing, 0].mean() - X[~missing, 0].mean()) <= 4 * math.sqrt(1 / missing.sum())


def test_ampute_mnar_pattern_hides_its_own_large_values():
    X, _, out = _amputed([{"incomplete": [1], "mechanism": "MNAR"}], 0.3)
    missing = np.isnan(out.X[:, 1])
    assert X[missing, 1].mean() > X[~missing, 1].mean() + 0.5


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        ([], r"patterns must be a non-empty list of tables"),
        ([{"freq": 1.0}], r"patterns\[0\]: needs `incomplete`"),
        ([{"incomplete": [0], "freq": 0.5}], r"pattern freq must sum to 1\. Got 0\.5\."),
        ([{"incomplete": [0], "freq": 0.5}, {"incomplete": [1]}], r"freq in every pattern or"),
        ([{"incomplete": [0], "mechanism": "MAR", "driver": [0]}], r"outside `incomplete`"),
        ([{"incomplete": [0], "mechanism": "MNAR", "driver": [1]}], r"include an incomplete"),
        ([{"incomplete": [0], "mechanism": "MCAR", "driver": [1]}], r"MCAR pattern takes no"),
        ([{"incomplete": [0, 1, 2, 3]}], r"MAR pattern needs a variable outside"),
        ([{"incomplete": [0], "shape": "wide"}], r"shape must be one of 'right', 'left', 'mid'"),
        ([{"incomplete": [0], "driver": [1, 2], "weights": [1]}], r"one number per driver \(2\)"),
        ([{"incomplete": [0], "share": 1}], r"unknown key 'share'"),
    ],
)
def test_ampute_rejects_bad_patterns(patterns, message):
    with pytest.raises(SpecError, match=message):
        get_operator("ampute").validate({"patterns": patterns}, n_features=4, n_classes=K)


def test_ampute_refuses_a_pattern_driven_by_constant_features():
    X, y = normal_data(100, 3, seed=73)
    train = np.column_stack([np.ones(50), normal_data(50, 2, seed=74)[0]])
    op, params = prepared(
        "ampute", {"patterns": [{"incomplete": [1], "driver": [0]}]}, n_features=3
    )
    with pytest.raises(SpecError, match=r"drivers \[0\] whose score is constant"):
        op(X, y, 0.2, np.random.default_rng(0), TrainingStats.fit(train, K), **params)
