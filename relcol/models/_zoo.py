"""The model zoo and the one way a model is fitted: once, on clean training data.

``seed`` is the training variation of the study: it draws a bootstrap resample
of the training set and is the estimator's ``random_state``. Everything a
model learns, including how it treats missing values at test time, is learned
on that clean resample: models without native NaN support get a mean imputer
fitted on clean training data (and scaling, where the model needs it);
``hist_gradient_boosting`` and ``lightgbm`` use their native NaN handling
(scikit-learn's sends NaN to the larger child of each split it never saw NaN
at; LightGBM treats NaN as zero at features that had none in training).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from relcol.errors import SpecError, first_line


def _lightgbm() -> type[BaseEstimator]:
    from lightgbm import LGBMClassifier  # imported on use: it loads a native library

    return LGBMClassifier


def _check_sklearn(estimator: BaseEstimator) -> None:
    """scikit-learn's own check of an estimator's parameters (types and ranges), no fit."""
    estimator._validate_params()


def _check_lightgbm(estimator: BaseEstimator) -> None:
    """LightGBM checks its parameters only when it trains: train one round on eight rows,
    with the native library's messages (it prints before raising) silenced."""
    rounds = estimator.get_params()["n_estimators"]
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"n_estimators must be an int >= 1. Got {rounds!r}.")
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
    check: Callable[[BaseEstimator], None] = _check_sklearn  # the library's parameter check

    def build(self, params: Mapping[str, Any]) -> BaseEstimator:
        estimator = self.bare(params)
        if not self.impute:
            return estimator
        steps = [SimpleImputer(strategy="mean")] + ([StandardScaler()] if self.scale else [])
        return make_pipeline(*steps, estimator)

    def bare(self, params: Mapping[str, Any]) -> BaseEstimator:
        """The estimator alone (no imputer or scaler) with the defaults and ``params``."""
        return self.estimator()(**{**self.defaults, **params})

    def parameter_names(self) -> set[str]:
        return set(self.estimator()().get_params())


def _const(cls: type[BaseEstimator]) -> Callable[[], type[BaseEstimator]]:
    return lambda: cls


ZOO: dict[str, Recipe] = {
    "logistic_regression": Recipe(_const(LogisticRegression), {"max_iter": 2000}, scale=True),
    "random_forest": Recipe(_const(RandomForestClassifier), {"n_estimators": 200, "n_jobs": 1}),
    "hist_gradient_boosting": Recipe(
        _const(HistGradientBoostingClassifier), {"max_iter": 100}, impute=False
    ),
    "lightgbm": Recipe(
        _lightgbm,
        {"n_estimators": 100, "verbose": -1, "n_jobs": 1},
        impute=False,
        check=_check_lightgbm,
    ),
    "mlp": Recipe(
        _const(MLPClassifier), {"hidden_layer_sizes": (64,), "max_iter": 500}, scale=True
    ),
    "naive_bayes": Recipe(_const(GaussianNB), takes_seed=False),
    "knn": Recipe(_const(KNeighborsClassifier), {"n_neighbors": 15}, takes_seed=False, scale=True),
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

        A class absent from the bootstrap resample gets probability 0.
        """
        with _refused_parameters(self.spec, self.seed):
            raw = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        out = np.zeros((raw.shape[0], self.n_classes))
        out[:, np.asarray(self.estimator.classes_, dtype=np.int64)] = raw
        return out


def fit_frozen(
    spec: ModelSpec, X_train: np.ndarray, y_train: np.ndarray, *, seed: int, n_classes: int
) -> FrozenModel:
    """Fit ``spec`` once on a bootstrap resample (drawn with ``seed``) of clean training data."""
    recipe = ZOO[spec.name]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EED]))
    idx = rng.integers(0, len(y_train), size=len(y_train))
    params = {**spec.params, **({"random_state": seed} if recipe.takes_seed else {})}
    estimator = recipe.build(params)
    with warnings.catch_warnings(record=True) as caught:
        # A capped iteration count is part of the model's definition, not an error.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("always", UserWarning)
        with _refused_parameters(spec, seed):
            estimator.fit(X_train[idx], y_train[idx])
    for warning in caught:
        if str(warning.message) == _INTERRUPTED:
            # scikit-learn's MLP catches Ctrl-C, warns and keeps the half-trained weights;
            # an ingest must stop instead of storing that model's predictions
            raise KeyboardInterrupt
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return FrozenModel(spec=spec, seed=seed, n_classes=n_classes, estimator=estimator)


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
