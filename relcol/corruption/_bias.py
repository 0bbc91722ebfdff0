"""Structural bias: a base corruption applied to one group of rows only (a class, or a
range of one feature), so that reliability fails unevenly across groups while every
other row stays exactly as it was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from relcol.errors import SpecError

from ._base import (
    Corrupted,
    Operator,
    TrainingStats,
    check_choice,
    check_columns,
    check_int,
    check_number,
    patch_rows,
)


@dataclass(frozen=True, eq=False, repr=False)
class StructuralBias(Operator):
    """A base operator applied only to the rows of one group.

    The group is a class (``target_class``, the default: rows whose *clean* label is
    that class) or a feature range (``group_feature`` with ``group_min`` ≤ x ≤
    ``group_max``, on the clean values; a NaN value is outside every range). Severity
    d is passed unchanged to the base operator and means what it means there (a
    missing rate for ``mnar``, the default; a noise scale for ``gaussian_noise``), so
    the allowed range is the base's: ``severity_range`` shows the default base's
    [0, 1], and ``check_severity(d, params)`` applies the chosen base's.

    The base sees only the group's test rows, and training statistics narrowed to the
    group's *training* rows (``TrainingStats.rows``): quantiles and intercepts are
    fitted within the group, so d is the missing rate *within the group* (an ``mnar``
    threshold fitted on all classes would blank far more or far less than d of a
    class whose values sit high or low), while means and SDs stay those of all
    training rows, so a noise scale keeps its meaning. A class group needs the
    training labels (``TrainingStats.fit(..., labels=y_train)``); without them the
    base is fitted on all training rows. A group with no training rows is refused.
    Every other row of X and y is returned byte-identical to the input (as float64).
    ``realised_rate`` and ``changed_share`` are the base's, measured over the group's
    rows only (0.0 when the group has no test rows).

    Parameters
    ----------
    base : str, default "mnar"
        Any operator except ``structural_bias`` itself.
    target_class : int, default 0
        The class whose rows are corrupted, in [0, K − 1].
    group_feature : feature name or index
        Instead of a class: the feature defining the group (not with ``target_class``).
    group_min, group_max : float, default −inf / +inf
        The group's inclusive range of ``group_feature`` (at least one of them).
    base_params : table, default {}
        Parameters of the base operator (e.g. ``{beta = 1.0}`` for ``mar``),
        validated by the base.
    """

    bases: Mapping[str, Operator]

    name: ClassVar[str] = "structural_bias"
    severity_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    defaults: ClassVar[Mapping[str, Any]] = {
        "base": "mnar",
        "target_class": 0,
        "group_feature": None,
        "group_min": -math.inf,
        "group_max": math.inf,
        "base_params": {},
    }

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        base = self._base(given)
        base_params = given.get("base_params", {})
        if not isinstance(base_params, Mapping):
            raise SpecError(
                f"{self.name}: base_params must be a table (mapping). Got {base_params!r}."
            )
        try:
            base_params = self.bases[base].validate(
                base_params, n_features=n_features, n_classes=n_classes
            )
        except SpecError as error:
            raise SpecError(f"{self.name}: base_params: {error}") from error
        out = {"base": base, "base_params": base_params}
        return out | self._group(given, n_features=n_features, n_classes=n_classes)

    def _group(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        ranged = {"group_min", "group_max"} & set(given)
        if "group_feature" not in given:
            if ranged:
                raise SpecError(
                    f"{self.name}: {sorted(ranged)[0]} needs group_feature (the feature whose "
                    "range defines the group)."
                )
            target_class = given.get("target_class", self.defaults["target_class"])
            return {
                "target_class": check_int(self.name, "target_class", target_class, 0, n_classes - 1)
            }
        if "target_class" in given:
            raise SpecError(f"{self.name}: give either target_class or group_feature, not both.")
        [feature] = check_columns(self.name, "group_feature", given["group_feature"], n_features)
        if not ranged:
            raise SpecError(
                f"{self.name}: group_feature needs group_min and/or group_max (the group's range)."
            )
        bounds = {
            key: check_number(self.name, key, given[key]) if key in given else self.defaults[key]
            for key in ("group_min", "group_max")
        }
        if bounds["group_min"] > bounds["group_max"]:
            raise SpecError(
                f"{self.name}: group_min must be <= group_max. Got {bounds['group_min']:g} > "
                f"{bounds['group_max']:g}."
            )
        return {"group_feature": feature, **bounds}

    def severity_bounds(self, params: Mapping[str, Any] | None = None) -> tuple[float, float]:
        """The base's range; ``SpecError`` for an unknown base, so a spec can check d early."""
        return self.bases[self._base(params or {})].severity_range

    def _base(self, params: Mapping[str, Any]) -> str:
        return check_choice(
            self.name, "base", params.get("base", self.defaults["base"]), tuple(sorted(self.bases))
        )

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        base: str,
        target_class: int,
        group_feature: int | None,
        group_min: float,
        group_max: float,
        base_params: Mapping[str, Any],
    ) -> Corrupted:
        if group_feature is None:
            rows = y == target_class
            train_rows = None if stats.labels is None else stats.labels == target_class
            group = f"class {target_class}"
        else:
            rows = (X[:, group_feature] >= group_min) & (X[:, group_feature] <= group_max)
            train = stats.train[:, group_feature]
            train_rows = (train >= group_min) & (train <= group_max)
            group = f"feature {group_feature} in [{group_min:g}, {group_max:g}]"
        if train_rows is not None:
            if not train_rows.any():
                raise SpecError(
                    f"{self.name}: the group ({group}) has no clean training rows to fit the "
                    "base operator on; choose a group present in the training data."
                )
            stats = stats.rows(train_rows)
        rows = np.flatnonzero(rows)
        return patch_rows(
            X, y, rows, self.bases[base](X[rows], y[rows], d, rng, stats, **base_params)
        )
