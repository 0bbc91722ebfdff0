"""Categorical shift: a category recorded as another one."""

from __future__ import annotations

import numpy as np

from relcol.errors import InputError

from ._base import Corrupted, Operator, TrainingStats, share


class CategoricalShift(Operator):
    """A categorical value replaced by another category, drawn as training data would.

    Severity d is the share of categorical cells replaced: every observed cell of a
    categorical feature is, independently with probability d, replaced by a
    different category c ≠ x_ij drawn with probability p_c / (1 − p_{x_ij}), p the
    category frequencies of that feature in the clean training data (a test-only
    category is replaced by a draw from all of p). Only features with at least two
    training categories are touched; NaN stays NaN; numeric features are untouched.
    Range [0, 1].

    Eligible cells: the observed cells of categorical features with ≥ 2 training
    categories. ``realised_rate`` is the share replaced (≈ d, binomial);
    ``changed_share`` equals it (a replacement always differs). Needs a dataset
    with such a feature, else ``InputError``. Takes no parameters.
    """

    name = "categorical_shift"
    severity_range = (0.0, 1.0)

    def _apply(
        self, X: np.ndarray, y: np.ndarray, d: float, rng: np.random.Generator, stats: TrainingStats
    ) -> Corrupted:
        frequencies = {
            j: training_frequencies(stats.train[:, j])
            for j in np.flatnonzero(stats.categorical if stats.categorical is not None else [])
        }
        frequencies = {j: f for j, f in frequencies.items() if f[0].size >= 2}
        if not frequencies:
            raise InputError(
                f"{self.name}: the dataset has no categorical feature with at least two "
                "categories in training."
            )
        selected = rng.random(X.shape) < d
        uniform = rng.random(X.shape)
        eligible = np.zeros(X.shape, dtype=bool)
        for j, (codes, p) in frequencies.items():
            eligible[:, j] = ~np.isnan(X[:, j])
            rows = np.flatnonzero(selected[:, j] & eligible[:, j])
            X[rows, j] = draw_other(X[rows, j], codes, p, uniform[rows, j])
        hit = selected & eligible
        return Corrupted(
            X=X, y=y, realised_rate=share(hit[eligible]), changed_share=share(hit[eligible])
        )


def training_frequencies(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct observed codes of a training column and their relative frequencies."""
    codes, counts = np.unique(column[~np.isnan(column)], return_counts=True)
    return codes, counts / counts.sum() if counts.size else counts.astype(float)


def draw_other(
    current: np.ndarray, codes: np.ndarray, p: np.ndarray, uniform: np.ndarray
) -> np.ndarray:
    """For each current value, a code ≠ it with probability ∝ p."""
    return codes[draw_rows(np.where(current[:, None] == codes[None, :], 0.0, p[None, :]), uniform)]


def draw_rows(weights: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Row i's draw of a column index with probability ∝ ``weights[i]`` (each row summing
    to > 0), by inverse CDF of ``uniform[i]`` in [0, 1): a zero weight is never drawn."""
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]  # the last entry is now exactly 1 > uniform: the count is an index
    return (uniform[:, None] >= cdf).sum(axis=1)
