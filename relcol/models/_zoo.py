"""The model zoo and the one way a model is fitted: once, on clean training data.

``seed`` is the training variation of the study: it draws a bootstrap resample
of the training set and is the estimator's ``random_state``. Everything a
model learns, including how it treats missing values at test time, is learned
on that clean resample: models without native NaN support get a mean imputer
fitted on clean training data (and scaling, where the model needs it);
``hist_gradient_boosting`` and ``lightgbm`` use their native NaN handling
(scikit-learn's sends NaN to the larger child of each split it never saw NaN
at; LightGBM treats NaN as zero at features that had none in training).

Categorical features arrive as category codes (see ``relcol.data``). Models
without native support one-hot encode them with an encoder fitted on the clean
training resample: a category it never saw there (or NaN, if training had
none) becomes the all-zero row. ``hist_gradient_boosting`` and ``lightgbm``
are told which columns are categorical and split on the codes natively; both
route a category unseen in training the way they route a missing value.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

import numpy as np

from relcol.checks import check_int
from relcol.errors import InputError, SpecError, first_line

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator


def _estimator(module: str, name: str) -> Callable[[], type[BaseEstimator]]:
    """The class ``module.name``, imported when a model is built: scikit-learn takes about a
    second to import (LightGBM also loads a native library), which a report or a query
    never needs."""
    return lambda: getattr(import_module(module), name)


def _check_sklearn(estimator: BaseEstimator) -> None:
    """scikit-learn's own check of an estimator's parameters (types and ranges), no fit."""
    estimator._validate_params()


def _check_lightgbm(estimator: BaseEstimator) -> None:
    """LightGBM checks its parameters only when it trains: train one round on eight rows,
    with the native library's messages (it prints before raising) silenced."""
    rounds = estimator.get_params()["n_estimators"]
    check_int("n_estimators", rounds)
    from sklearn.base import clone

    X, y = np.arange(16.0).reshape(8, 2), np.tile([0, 1], 4)
    with _native_output_silenced(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clone(estimator).set_params(n_estimators=1).fit(X, y)


@contextlib.contextmanager
def _native_output_silenced() -> Iterator[None]:
    """Send file descriptors 1 and 2 to /dev/null: what a native library writes there."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


@dataclass(frozen=True)
class Recipe:
    """How a zoo model is built: its estimator, defaults, and what it learns about NaN."""

    estimator: Callable[[], type[BaseEstimator]]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    takes_seed: bool = True
    impute: bool = True  # False: the estimator handles NaN natively
    scale: bool = False
    #: How the estimator is told which columns are categorical when it splits on codes
    #: natively: the constructor parameter ("init", scikit-learn's HGB) or the ``fit``
    #: argument ("fit", LightGBM). None: the codes are one-hot encoded before it.
    native_categorical: str | None = None
    check: Callable[[BaseEstimator], None] = _check_sklearn  # the library's parameter check
    #: Predict at most this many bytes of features at a time (None: every row at once).
    #: scikit-learn's HGB walks each of its trees over every row it is given, so a 10-class
    #: model of 100 iterations reads the whole array 1000 times: blocks that stay in the
    #: processor's cache predict the same numbers faster on wide data (2.4-2.9x at 200
    #: features, docs/performance.md).
    predict_bytes: int | None = None

    def build(
        self, params: Mapping[str, Any], categorical: np.ndarray | None = None
    ) -> BaseEstimator:
        """The estimator (with its preprocessing) for features whose ``categorical`` mask is given."""
        from sklearn.compose import ColumnTransformer
        from sklearn.impute import SimpleImputer
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        categorical = _mask(categorical)
        native = dict(params)
        if self.native_categorical == "init" and categorical.any():
            native["categorical_features"] = categorical
        estimator = self.bare(native)
        if not self.impute:
            return estimator
        numeric = [SimpleImputer(strategy="mean")] + ([StandardScaler()] if self.scale else [])
        if not categorical.any():
            return make_pipeline(*numeric, estimator)
        encode = ColumnTransformer(
            [
                ("numeric", make_pipeline(*numeric), np.flatnonzero(~categorical)),
                (
                    "categorical",
                    OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                    np.flatnonzero(categorical),
                ),
            ]
        )
        return make_pipeline(encode, estimator)

    def fit_params(self, categorical: np.ndarray | None = None) -> dict[str, Any]:
        """Arguments for ``fit`` beyond X and y: LightGBM's categorical columns."""
        categorical = _mask(categorical)
        if self.native_categorical == "fit" and categorical.any():
            return {"categorical_feature": np.flatnonzero(categorical).tolist()}
        return {}

    def bare(self, params: Mapping[str, Any]) -> BaseEstimator:
        """The estimator alone (no imputer or scaler) with the defaults and ``params``."""
        return self.estimator()(**{**self.defaults, **params})

    def parameter_names(self) -> set[str]:
        return set(self.estimator()().get_params())


def _mask(categorical: np.ndarray | None) -> np.ndarray:
    return np.zeros(0, dtype=bool) if categorical is None else np.asarray(categorical, dtype=bool)


ZOO: dict[str, Recipe] = {
    "logistic_regression": Recipe(
        _estimator("sklearn.linear_model", "LogisticRegression"), {"max_iter": 2000}, scale=True
    ),
    "random_forest": Recipe(
        _estimator("sklearn.ensemble", "RandomForestClassifier"), {"n_estimators": 200, "n_jobs": 1}
    ),
    "hist_gradient_boosting": Recipe(
        _estimator("sklearn.ensemble", "HistGradientBoostingClassifier"),
        {"max_iter": 100},
        impute=False,
        native_categorical="init",
        predict_bytes=2**22,
    ),
    "lightgbm": Recipe(
        _estimator("lightgbm", "LGBMClassifier"),
        {"n_estimators": 100, "verbose": -1, "n_jobs": 1},
        impute=False,
        native_categorical="fit",
        check=_check_lightgbm,
    ),
    "mlp": Recipe(
        _estimator("sklearn.neural_network", "MLPClassifier"),
        {"hidden_layer_sizes": (64,), "max_iter": 500},
        scale=True,
    ),
    "naive_bayes": Recipe(_estimator("sklearn.naive_bayes", "GaussianNB"), takes_seed=False),
    "knn": Recipe(
        _estimator("sklearn.neighbors", "KNeighborsClassifier"),
        {"n_neighbors": 15},
        takes_seed=False,
        scale=True,
    ),
}


@dataclass(frozen=True)
class ModelSpec:
    """A model as a study names it: a zoo ``name``, an optional ``id`` and estimator ``params``."""

    name: str
    id: str
    params: Mapping[str, Any] = field(default_factory=dict)


def validate_model(spec: ModelSpec, where: str) -> None:
    """Check that the model exists and its params are parameters of its estimator."""
    if spec.name not in ZOO:
        raise SpecError(
            f"{where}: unknown model {spec.name!r}; known models: {', '.join(sorted(ZOO))}"
        )
    unknown = set(spec.params) - ZOO[spec.name].parameter_names()
    if "random_state" in spec.params:
        raise SpecError(f"{where}: random_state is set by the study's seeds; remove it from params")
    if unknown:
        raise SpecError(
            f"{where}: {sorted(unknown)} not parameter(s) of {spec.name}; "
            f"see its scikit-learn/LightGBM documentation"
        )
    recipe = ZOO[spec.name]
    try:
        recipe.check(recipe.bare(spec.params))
    except Exception as exc:  # the libraries raise ValueError, TypeError, LightGBMError …
        raise SpecError(
            f"{where}: {spec.name} refuses its parameters {dict(spec.params)}: "
            f"{_NATIVE_SOURCE.sub('', first_line(exc))}"
        ) from None


#: Where in LightGBM's C++ sources a check failed: noise in a message for the user.
_NATIVE_SOURCE = re.compile(r"\s+at \S+, line \d+\s*\.?\s*$")


@dataclass(frozen=True)
class FrozenModel:
    """A fitted model that only predicts. ``classes`` are the dataset's class codes 0..K-1."""

    spec: ModelSpec
    seed: int
    n_classes: int
    estimator: BaseEstimator

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities (n × K, float64) for all K classes of the dataset.

        A class absent from the bootstrap resample gets probability 0. A tree model's scores
        of a row depend on that row alone, and predicting in blocks of many rows
        (``Recipe.predict_bytes``) gives the same bits as predicting all at once (a test holds
        it). A batch of one row or a few may differ in the last bit of a probability (numpy's
        exp takes another path on a short array), and a model whose prediction is a BLAS
        product (logistic regression, the MLP) by about 1e−15 between batches: the ingest
        predicts a row once, and gives a row a corruption left unchanged its clean prediction.
        """
        limit = ZOO[self.spec.name].predict_bytes
        step = max(1, len(X) if limit is None else limit // max(X[:1].nbytes, 1))
        with _refused_parameters(self.spec, self.seed):
            raw = np.concatenate(
                [
                    np.asarray(self.estimator.predict_proba(X[start : start + step]), np.float64)
                    for start in range(0, len(X), step) or [0]
                ]
            )
        out = np.zeros((raw.shape[0], self.n_classes))
        out[:, np.asarray(self.estimator.classes_, dtype=np.int64)] = raw
        return out


def fit_frozen(
    spec: ModelSpec,
    X_train: np.ndarray,
    y_train: np.ndarray,
    *,
    seed: int,
    n_classes: int,
    categorical: np.ndarray | None = None,
) -> FrozenModel:
    """Fit ``spec`` once on a bootstrap resample (drawn with ``seed``) of clean training data.

    ``categorical`` masks the features that hold category codes (default: none).
    """
    recipe = ZOO[spec.name]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED]))
    idx = rng.integers(0, len(y_train), size=len(y_train))
    params = {**spec.params, **({"random_state": seed} if recipe.takes_seed else {})}
    if recipe.native_categorical == "init":
        _check_cardinality(spec, X_train[idx], _mask(categorical), params.get("max_bins", 255))
    estimator = recipe.build(params, categorical)
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        # A capped iteration count is part of the model's definition, not an error. This
        # filter must come second: simplefilter puts the newest first, and ConvergenceWarning
        # is a UserWarning, so "always" before it would let every one through.
        warnings.simplefilter("ignore", ConvergenceWarning)
        with _refused_parameters(spec, seed):
            estimator.fit(X_train[idx], y_train[idx], **recipe.fit_params(categorical))
    for warning in caught:
        if str(warning.message) == _INTERRUPTED:
            # scikit-learn's MLP catches Ctrl-C, warns and keeps the half-trained weights;
            # an ingest must stop instead of storing that model's predictions
            raise KeyboardInterrupt
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return FrozenModel(spec=spec, seed=seed, n_classes=n_classes, estimator=estimator)


def _check_cardinality(
    spec: ModelSpec, X: np.ndarray, categorical: np.ndarray, max_bins: int
) -> None:
    """scikit-learn's HGB splits on at most ``max_bins`` categories of a feature."""
    for j in np.flatnonzero(categorical):
        count = np.unique(X[~np.isnan(X[:, j]), j]).size
        if count > max_bins:
            raise InputError(
                f"model {spec.id!r}: categorical feature {j} has {count} categories in training; "
                f"{spec.name} splits on at most max_bins = {max_bins}. Use lightgbm or another "
                "model, or merge rare categories in the data."
            )


@contextlib.contextmanager
def _refused_parameters(spec: ModelSpec, seed: int) -> Iterator[None]:
    """Parameters valid on their own can still fail on the data (``n_neighbors`` above the
    training size, a penalty its solver lacks): one SpecError line, as at spec load."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise SpecError(
            f"model {spec.id!r} (seed {seed}) cannot be fitted or used with its parameters "
            f"{dict(spec.params)}: {first_line(exc)}"
        ) from None


#: The warning scikit-learn's stochastic solvers give when Ctrl-C stops their training early.
_INTERRUPTED = "Training interrupted by user."
