"""Data-entry errors on numeric features: values in the wrong unit, values written into
the neighbouring column, and gross outliers.

Each acts on numeric features only (a categorical feature's codes are not
quantities) and selects its entries independently with probability d, so d is
the expected share of eligible entries hit and ``realised_rate`` its empirical
counterpart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from relcol.checks import is_int
from relcol.errors import InputError, SpecError

from ._base import Corrupted, Operator, TrainingStats, check_number, share, usable_sd


def numeric_columns(stats: TrainingStats) -> np.ndarray:
    """Mask of the features that hold numbers (not category codes)."""
    if stats.categorical is None:
        return np.ones(stats.train.shape[1], dtype=bool)
    return ~stats.categorical


class Scaling(Operator):
    """Scaling errors: a value recorded in the wrong unit (×10, ×100, ×1000).

    Severity d is the share of each numeric feature's cells that are scaled: every
    numeric cell is, independently with probability d, multiplied by a factor drawn
    uniformly from ``factors``. NaN stays NaN; categorical features are untouched.
    Range [0, 1].

    Eligible cells: every cell of the numeric features. ``realised_rate`` is the
    share selected (≈ d, binomial); ``changed_share`` the share whose value moved
    (NaN and 0 cells do not).

    Parameters
    ----------
    factors : list of float, default [10, 100, 1000]
        The factors, each finite, positive and not 1 (0.001 models the opposite unit
        error).
    """

    name = "scaling"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"factors": [10.0, 100.0, 1000.0]}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        factors = given.get("factors", self.defaults["factors"])
        if not isinstance(factors, Sequence) or isinstance(factors, str) or not factors:
            raise SpecError(f"{self.name}: factors must be a non-empty list. Got {factors!r}.")
        checked = [check_number(self.name, "factors", f) for f in factors]
        bad = [f for f in checked if f <= 0 or f == 1]
        if bad:
            raise SpecError(
                f"{self.name}: every factor must be positive and not 1. Got {bad[0]!r}."
            )
        return {"factors": checked}

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        factors: list[float],
    ) -> Corrupted:
        eligible = np.broadcast_to(numeric_columns(stats), X.shape)
        hit = (rng.random(X.shape) < d) & eligible
        factor = np.asarray(factors)[rng.integers(0, len(factors), size=X.shape)]
        scaled = np.where(hit, X * factor, X)
        changed = hit & (scaled != X) & ~np.isnan(X)
        return Corrupted(
            X=scaled,
            y=y,
            realised_rate=share(hit[eligible]),
            changed_share=share(changed[eligible]),
        )


class Outliers(Operator):
    """Gross outliers: a value thrown k training SDs away from where it was.

    Severity d is the share of numeric cells hit: every observed cell of a numeric
    feature with training spread (s_j > 0) is, independently with probability d,
    replaced by x_ij ± k·s_j, the sign drawn with equal probability. NaN cells,
    categorical features and features without training spread are untouched.
    Range [0, 1].

    Eligible cells: the observed cells of numeric features with s_j > 0.
    ``realised_rate`` is the share selected (≈ d, binomial); ``changed_share`` the
    share whose value moved (the same, unless k·s_j is too small to move a float).

    Parameters
    ----------
    k : float, default 5.0
        The distance in training SDs; positive.
    """

    name = "outliers"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"k": 5.0}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        k = check_number(self.name, "k", given.get("k", self.defaults["k"]))
        if k <= 0:
            raise SpecError(f"{self.name}: k must be positive. Got {k!r}.")
        return {"k": k}

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        k: float,
    ) -> Corrupted:
        scale = usable_sd(stats.sd)
        eligible = ~np.isnan(X) & (scale > 0) & numeric_columns(stats)
        hit = (rng.random(X.shape) < d) & eligible
        sign = np.where(rng.random(X.shape) < 0.5, -1.0, 1.0)
        moved = np.where(hit, X + sign * (k * scale), X)
        return Corrupted(
            X=moved,
            y=y,
            realised_rate=share(hit[eligible]),
            changed_share=share((moved != X)[eligible]),
        )


class SwappedColumns(Operator):
    """Swapped columns: on some rows, the values of two columns trade places.

    Severity d is the share of rows swapped in each pair: for every pair (a, b),
    each row independently with probability d gets x_ia and x_ib exchanged.

    Pairs are given (``pairs``) or chosen from clean training statistics, so that
    the swap is the plausible, silent kind (two columns of similar location and
    scale): among numeric features with training spread, the distance between
    columns a and b is |m_a − m_b| / (s_a + s_b) + |ln(s_a / s_b)| (m, s the
    training mean and SD), and pairs are formed greedily, closest first, each
    column in at most one pair (ties: lower indices first). With an odd count one
    column stays unpaired. Range [0, 1].

    Eligible entries: (row, pair). ``realised_rate`` is the share swapped (≈ d,
    binomial); ``changed_share`` the share where the swap changed a value (the two
    values differed).

    Parameters
    ----------
    pairs : list of [int, int], optional
        Column index pairs to swap; no column in two pairs. Both columns must be
        numeric.
    """

    name = "swapped_columns"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"pairs": None}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        if n_features < 2:
            raise SpecError(f"{self.name}: needs at least 2 features. Got {n_features}.")
        pairs = given.get("pairs")
        if pairs is None:
            return {"pairs": None}
        if not isinstance(pairs, Sequence) or isinstance(pairs, str) or not pairs:
            raise SpecError(
                f"{self.name}: pairs must be a non-empty list of [a, b] column indices. "
                f"Got {pairs!r}."
            )
        seen: set[int] = set()
        checked = []
        for pair in pairs:
            if not (
                isinstance(pair, Sequence)
                and len(pair) == 2
                and all(is_int(j) and 0 <= j < n_features for j in pair)
                and pair[0] != pair[1]
            ):
                raise SpecError(
                    f"{self.name}: each pair must be two different column indices in "
                    f"[0, {n_features - 1}]. Got {pair!r}."
                )
            reused = seen.intersection(pair)
            if reused:
                raise SpecError(
                    f"{self.name}: column {min(reused)} appears in two pairs; each column may "
                    "be swapped with one other only."
                )
            seen.update(pair)
            checked.append([int(pair[0]), int(pair[1])])
        return {"pairs": checked}

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        pairs: list[list[int]] | None,
    ) -> Corrupted:
        if pairs is None:
            pairs = similar_scale_pairs(stats)
            if not pairs:
                raise InputError(
                    f"{self.name}: fewer than two numeric features with training spread; "
                    "nothing to swap."
                )
        else:
            categorical = sorted(
                {j for pair in pairs for j in pair}
                - set(np.flatnonzero(numeric_columns(stats)).tolist())
            )
            if categorical:
                raise InputError(
                    f"{self.name}: column {categorical[0]} is categorical; pairs must be "
                    "numeric columns."
                )
        index = np.asarray(pairs)
        hit = rng.random((X.shape[0], len(pairs))) < d
        first, second = X[:, index[:, 0]], X[:, index[:, 1]]
        differs = (first != second) & ~(np.isnan(first) & np.isnan(second))
        X[:, index[:, 0]] = np.where(hit, second, first)
        X[:, index[:, 1]] = np.where(hit, first, second)
        return Corrupted(X=X, y=y, realised_rate=share(hit), changed_share=share(hit & differs))


def similar_scale_pairs(stats: TrainingStats) -> list[list[int]]:
    """Greedy closest-first pairing of numeric features with spread (see ``SwappedColumns``)."""
    scale = usable_sd(stats.sd)
    columns = np.flatnonzero((scale > 0) & numeric_columns(stats))
    mean, sd = stats.mean[columns], scale[columns]
    a, b = np.triu_indices(columns.size, 1)
    distance = np.abs(mean[a] - mean[b]) / (sd[a] + sd[b]) + np.abs(np.log(sd[a] / sd[b]))
    used: set[int] = set()
    pairs = []
    for k in np.lexsort((b, a, distance)):  # closest first; ties: lower indices first
        first, second = int(columns[a[k]]), int(columns[b[k]])
        if first not in used and second not in used:
            pairs.append([first, second])
            used.update((first, second))
    return pairs
