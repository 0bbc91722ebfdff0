"""Feature noise: every value moves by a Gaussian draw scaled to its feature's training SD."""

from __future__ import annotations

import numpy as np

from ._base import (
    ColumnOperator,
    Corrupted,
    TrainingStats,
    share,
    usable_sd,
)


class GaussianNoise(ColumnOperator):
    """Additive Gaussian noise measured in training standard deviations.

    Severity d is the noise scale in training SDs: x_ij + ε_ij with
    ε_ij ~ N(0, (d·s_j)²), s_j the feature's training SD (ddof = 0). NaN stays NaN;
    a feature without training spread (s_j = 0 or undefined) is left unchanged.
    Range [0, ∞); d must be finite.

    Eligible entries: the selected columns' cells. ``realised_rate`` is the realised
    noise scale in training SDs, √mean((ε_ij / s_j)²) over the observed cells of
    features with s_j > 0 (an estimate of d with relative standard error
    1/√(2·cells); 0.0 when there is no such cell). ``changed_share`` is the share
    of the eligible cells whose value differs from the input (NaN cells, features
    without spread and, rarely, noise too small to move a float do not).

    Parameters
    ----------
    columns : feature name or index, or a list of them, default all features
    """

    name = "gaussian_noise"
    severity_range = (0.0, float("inf"))

    def _apply_columns(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        selected: np.ndarray,
    ) -> Corrupted:
        values = X[:, selected]
        scale = usable_sd(stats.sd[selected])
        standard = rng.standard_normal(values.shape)
        noisy = values + standard * (d * scale)
        observed = ~np.isnan(values)
        moved = observed & (scale > 0)
        realised = d * float(np.sqrt(np.mean(standard[moved] ** 2))) if moved.any() else 0.0
        changed = observed & (noisy != values)
        X[:, selected] = noisy
        return Corrupted(X=X, y=y, realised_rate=realised, changed_share=share(changed))
