"""Label noise: the evaluation labels are redrawn; the features are untouched."""

from __future__ import annotations

import numpy as np

from ._base import Corrupted, Operator, TrainingStats, share


class LabelNoise(Operator):
    """Symmetric label noise on the evaluation labels.

    Severity d is the replacement probability η: each label is, independently with
    probability d, replaced by a class drawn uniformly from all K classes
    (``stats.n_classes``), so it actually changes with probability d·(K − 1)/K. A
    frozen model with clean accuracy a then has expected observed accuracy
    a·(1 − d) + d/K. Features are returned unchanged. Range [0, 1].

    Eligible entries: all labels. ``realised_rate`` is the share of labels replaced
    (≈ d); ``changed_share`` the share now different from the clean label
    (≈ d·(K − 1)/K). Takes no parameters.
    """

    name = "label_noise"
    severity_range = (0.0, 1.0)

    def _apply(
        self, X: np.ndarray, y: np.ndarray, d: float, rng: np.random.Generator, stats: TrainingStats
    ) -> Corrupted:
        replaced = rng.random(y.shape[0]) < d
        drawn = rng.integers(0, stats.n_classes, size=y.shape[0])
        noisy = np.where(replaced, drawn, y).astype(y.dtype, copy=False)
        return Corrupted(
            X=X, y=noisy, realised_rate=share(replaced), changed_share=share(noisy != y)
        )
