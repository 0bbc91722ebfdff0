"""Label noise: the evaluation labels are redrawn (uniformly, or class by class from a
transition matrix); the features are untouched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from relcol.errors import SpecError

from ._base import Corrupted, Operator, TrainingStats, check_number, share
from ._categorical import draw_rows


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


class LabelTransition(Operator):
    """Class-conditional label noise from a transition matrix (as cleanlab models it).

    A row-stochastic K × K matrix M says where a label goes when it is corrupted:
    M[i, j] is the probability that a corrupted label of true class i reads j. At
    severity d the labels follow T(d) = (1 − d)·I + d·M, so d scales the
    off-diagonal mass linearly from none (d = 0, the identity) to all of M (d = 1):
    each label is, independently with probability d, replaced by a draw from the
    row M[y]. Without ``matrix``, M has 0 on the diagonal and 1/(K − 1) elsewhere,
    so d is the flip probability itself (``label_noise`` instead redraws from all K
    classes). Features are returned unchanged. Range [0, 1].

    Eligible entries: all labels. ``realised_rate`` is the share of labels redrawn
    from M (≈ d, binomial); ``changed_share`` the share now different from the clean
    label (≈ d·Σ_i π_i·(1 − M[i, i]), π the test class shares).

    Parameters
    ----------
    matrix : list of K lists of K numbers, optional
        M, row by row: non-negative, each row summing to 1 (within 1e-9).
    """

    name = "label_transition"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"matrix": None}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        matrix = given.get("matrix")
        if matrix is None:
            return {"matrix": None}
        shape_ok = (
            isinstance(matrix, Sequence)
            and len(matrix) == n_classes
            and all(isinstance(row, Sequence) and len(row) == n_classes for row in matrix)
        )
        if not shape_ok:
            raise SpecError(
                f"{self.name}: matrix must be {n_classes} rows of {n_classes} numbers (one per "
                f"class). Got {matrix!r}."
            )
        rows = [[check_number(self.name, "matrix", v) for v in row] for row in matrix]
        M = np.array(rows)
        if (M < 0).any() or not np.allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-9):
            raise SpecError(
                f"{self.name}: matrix rows must be non-negative and sum to 1. Got row sums "
                f"{np.round(M.sum(axis=1), 6).tolist()}."
            )
        return {"matrix": rows}

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        matrix: list[list[float]] | None,
    ) -> Corrupted:
        M = default_transition(stats.n_classes) if matrix is None else np.array(matrix)
        redrawn = rng.random(y.shape[0]) < d
        drawn = draw_rows(M[y], rng.random(y.shape[0]))
        noisy = np.where(redrawn, drawn, y).astype(y.dtype, copy=False)
        return Corrupted(
            X=X, y=noisy, realised_rate=share(redrawn), changed_share=share(noisy != y)
        )


def default_transition(n_classes: int) -> np.ndarray:
    """M with 0 on the diagonal and 1/(K − 1) elsewhere: every corrupted label changes."""
    return (np.ones((n_classes, n_classes)) - np.eye(n_classes)) / (n_classes - 1)
