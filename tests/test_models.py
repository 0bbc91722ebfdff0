from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from relcol.data import DatasetSpec, load_dataset
from relcol.errors import InputError, SpecError
from relcol.models import ZOO, ModelSpec, fit_frozen, validate_model


@pytest.fixture(scope="module")
def wine():
    return load_dataset(DatasetSpec("wine"), test_size=0.3, split_seed=0)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_model_is_frozen_and_handles_nan_without_refitting(name, wine):
    spec = ModelSpec(name, name)
    model = fit_frozen(spec, wine.X_train, wine.y_train, seed=0, n_classes=3)
    p = model.predict_proba(wine.X_test)
    assert p.shape == (len(wine.y_test), 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert (p.argmax(axis=1) == wine.y_test).mean() > 0.6
    # the same seed gives the same model; predicting does not change it
    again = fit_frozen(spec, wine.X_train, wine.y_train, seed=0, n_classes=3)
    np.testing.assert_array_equal(again.predict_proba(wine.X_test), p)
    np.testing.assert_array_equal(model.predict_proba(wine.X_test), p)
    holes = wine.X_test.copy()
    holes[::2, 0] = np.nan
    q = model.predict_proba(holes)
    assert np.isfinite(q).all()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-9)


def test_imputer_is_learned_on_the_clean_bootstrap_resample(wine):
    model = fit_frozen(
        ModelSpec("logistic_regression", "lr"), wine.X_train, wine.y_train, seed=4, n_classes=3
    )
    rng = np.random.default_rng(np.random.SeedSequence([4, 0x5EED]))
    idx = rng.integers(0, len(wine.y_train), size=len(wine.y_train))
    imputer = model.estimator[0]
    np.testing.assert_allclose(imputer.statistics_, wine.X_train[idx].mean(axis=0))
    holes = wine.X_test.copy()
    holes[:, 3] = np.nan
    filled = wine.X_test.copy()
    filled[:, 3] = imputer.statistics_[3]
    np.testing.assert_allclose(model.predict_proba(holes), model.predict_proba(filled))


def test_seeds_are_different_training_variations(wine):
    spec = ModelSpec("random_forest", "rf")
    a = fit_frozen(spec, wine.X_train, wine.y_train, seed=0, n_classes=3).predict_proba(wine.X_test)
    b = fit_frozen(spec, wine.X_train, wine.y_train, seed=1, n_classes=3).predict_proba(wine.X_test)
    assert not np.array_equal(a, b)


def test_a_class_missing_from_training_gets_probability_zero():
    X = np.arange(20.0).reshape(10, 2)
    y = np.array([0, 1] * 5)
    model = fit_frozen(ModelSpec("naive_bayes", "nb"), X, y, seed=0, n_classes=3)
    p = model.predict_proba(X)
    assert p.shape == (10, 3)
    assert (p[:, 2] == 0).all()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ModelSpec("xgboost", "x"), r"unknown model 'xgboost'; known models: .*lightgbm"),
        (
            ModelSpec("random_forest", "rf", {"n_trees": 5}),
            r"\['n_trees'\] not parameter\(s\) of random_forest",
        ),
        (ModelSpec("mlp", "m", {"random_state": 1}), "random_state is set by the study's seeds"),
    ],
)
def test_model_validation_names_the_problem(spec, message):
    with pytest.raises(SpecError, match=message):
        validate_model(spec, "models[0]")


def test_ctrl_c_during_an_mlp_fit_stops_the_fit_instead_of_keeping_half_trained_weights(
    wine, monkeypatch
):
    # scikit-learn's MLP catches KeyboardInterrupt, warns "Training interrupted by user." and
    # returns the weights it had: the ingest would store a half-trained model's predictions
    import warnings

    from sklearn.neural_network import MLPClassifier

    def interrupted(self, X, y):
        warnings.warn("Training interrupted by user.", stacklevel=2)
        return self

    monkeypatch.setattr(MLPClassifier, "fit", interrupted)
    spec = ModelSpec("mlp", "mlp", {"max_iter": 5})
    for _ in range(2):  # a second time too: the warning is not swallowed as a repeat
        with pytest.raises(KeyboardInterrupt):
            fit_frozen(spec, wine.X_train, wine.y_train, seed=0, n_classes=3)

    def noisy(self, X, y):
        warnings.warn("something else", UserWarning, stacklevel=2)
        return self

    monkeypatch.setattr(MLPClassifier, "fit", noisy)
    with pytest.warns(UserWarning, match="something else"):  # other warnings still show
        fit_frozen(spec, wine.X_train, wine.y_train, seed=0, n_classes=3)


# ----------------------------------------------------------- categorical features


def parity_data(n: int, seed: int):
    """y is 1 exactly for categories 0 and 2 of four: no monotone use of the codes fits it."""
    rng = np.random.default_rng(seed)
    category = rng.integers(0, 4, n).astype(float)
    X = np.column_stack([rng.normal(size=n), category])
    return X, (category % 2 == 0).astype(np.int64)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_model_learns_a_categorical_feature_as_categories(name):
    X, y = parity_data(3000, 0)
    X_test, y_test = parity_data(400, 1)
    with threadpool_limits(limits=1):
        model = fit_frozen(
            ModelSpec(name, name), X, y, seed=0, n_classes=2, categorical=np.array([False, True])
        )
    assert (model.predict_proba(X_test).argmax(axis=1) == y_test).mean() == 1.0
    # A category never seen in training and a missing one still get probabilities.
    odd = X_test[:4].copy()
    odd[:2, 1], odd[2:, 1] = 9.0, np.nan
    q = model.predict_proba(odd)
    assert np.isfinite(q).all()
    np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-9)


def test_one_hot_encoder_learns_categories_from_the_training_resample_only():
    X, y = parity_data(500, 2)
    X[:, 1] = np.where(X[:, 1] == 3, 0, X[:, 1])  # training has categories 0, 1, 2 only
    model = fit_frozen(
        ModelSpec("logistic_regression", "lr"),
        X,
        y,
        seed=3,
        n_classes=2,
        categorical=np.array([False, True]),
    )
    encoder = model.estimator[0].named_transformers_["categorical"]
    rng = np.random.default_rng(np.random.SeedSequence([3, 0x5EED]))
    idx = rng.integers(0, len(y), size=len(y))
    np.testing.assert_array_equal(encoder.categories_[0], np.unique(X[idx, 1]))
    # the unseen category 3 is encoded as no category at all: the all-zero row
    row = np.array([[0.5, 3.0]])
    np.testing.assert_array_equal(model.estimator[0].transform(row)[0, 1:], [0.0, 0.0, 0.0])


@pytest.mark.parametrize("name", ["hist_gradient_boosting", "lightgbm"])
def test_native_models_route_an_unseen_category_like_a_missing_value(name):
    X, y = parity_data(3000, 4)
    X[:, 1] = np.where(X[:, 1] == 3, 0, X[:, 1])
    with threadpool_limits(limits=1):  # OpenMP's idle spinning slows HGB down on small machines
        model = fit_frozen(
            ModelSpec(name, name), X, y, seed=0, n_classes=2, categorical=np.array([False, True])
        )
    unseen, missing = X[:50].copy(), X[:50].copy()
    unseen[:, 1], missing[:, 1] = 3.0, np.nan
    np.testing.assert_allclose(model.predict_proba(unseen), model.predict_proba(missing))


def test_hist_gradient_boosting_refuses_more_categories_than_bins():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(size=2000), np.arange(2000) % 300])
    y = rng.integers(0, 2, 2000)
    with pytest.raises(InputError, match="categorical feature 1 has 300 categories in training"):
        fit_frozen(
            ModelSpec("hist_gradient_boosting", "hgb"),
            X,
            y,
            seed=0,
            n_classes=2,
            categorical=np.array([False, True]),
        )


def test_a_capped_mlp_fit_prints_no_convergence_warning_issue_15(wine, monkeypatch):
    # ConvergenceWarning is a UserWarning: a later "always" filter for UserWarning let it
    # through, and the built-in study's ingest printed one per MLP fit on `synthetic`.
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    def capped(self, X, y):
        warnings.warn("Maximum iterations (500) reached", ConvergenceWarning, stacklevel=2)
        return self

    monkeypatch.setattr(MLPClassifier, "fit", capped)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_frozen(ModelSpec("mlp", "mlp", {}), wine.X_train, wine.y_train, seed=0, n_classes=3)
    assert [str(w.message) for w in caught] == []


def call_sizes(monkeypatch, model) -> list[int]:
    """The number of rows of each call ``model`` makes to its estimator's predict_proba."""
    estimator, sizes = type(model.estimator), []
    whole = estimator.predict_proba

    def counted(self, X):
        sizes.append(len(X))
        return whole(self, X)

    monkeypatch.setattr(estimator, "predict_proba", counted)
    return sizes


def test_hist_gradient_boosting_predicts_in_blocks_the_bits_of_one_call(monkeypatch):
    # 64 features of 8 bytes: 8192 rows fill the 4 MiB block; 20000 rows take three calls
    data = load_dataset(DatasetSpec("digits"), test_size=0.3, split_seed=0)
    rows = np.resize(data.X_test, (20000, data.X_test.shape[1]))
    rows[np.random.default_rng(0).random(rows.shape) < 0.3] = np.nan
    spec = ModelSpec("hist_gradient_boosting", "hgb", {"max_iter": 10})
    model = fit_frozen(spec, data.X_train, data.y_train, seed=0, n_classes=10)
    whole = model.estimator.predict_proba(rows)
    sizes = call_sizes(monkeypatch, model)
    np.testing.assert_array_equal(model.predict_proba(rows), whole)
    assert sizes == [8192, 8192, 3616]
    # a model without a block size predicts every row in one call
    spec = ModelSpec("random_forest", "rf", {"n_estimators": 5})
    forest = fit_frozen(spec, data.X_train, data.y_train, seed=0, n_classes=10)
    sizes = call_sizes(monkeypatch, forest)
    forest.predict_proba(rows)
    assert sizes == [20000]
