"""Structural bias: a base corruption applied to one class only, so that reliability
fails unevenly across groups while every other row stays exactly as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from relcol.errors import SpecError

from ._base import Corrupted, Operator, TrainingStats, check_choice, check_int


@dataclass(frozen=True, eq=False, repr=False)
class StructuralBias(Operator):
    """A base operator applied only to the rows of one clean class.

    Severity d is passed unchanged to the base operator and means what it means
    there (a missing rate for ``mnar``, the default; a noise scale for
    ``gaussian_noise``), so the allowed range is the base's: ``severity_range``
    shows the default base's [0, 1], and ``check_severity(d, params)`` applies the
    chosen base's. The rows are those whose *clean* label equals ``target_class``;
    the base sees only those rows (``mar`` and ``mnar(variant="logistic")`` solve
    their intercept over them) but the same training statistics, computed on all
    classes. Every other row of X and y is returned byte-identical to the input
    (as float64). ``realised_rate`` and ``changed_share`` are the base's, measured
    over the targeted rows only (0.0 when the class has no rows).

    Parameters
    ----------
    base : str, default "mnar"
        Any operator except ``structural_bias`` itself.
    target_class : int, default 0
        The class whose rows are corrupted, in [0, K − 1].
    base_params : table, default {}
        Parameters of the base operator (e.g. ``{beta = 1.0}`` for ``mar``),
        validated by the base.
    """

    bases: Mapping[str, Operator]

    name: ClassVar[str] = "structural_bias"
    severity_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    defaults: ClassVar[Mapping[str, Any]] = {"base": "mnar", "target_class": 0, "base_params": {}}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        base = self._base(given)
        target_class = check_int(
            self.name,
            "target_class",
            given.get("target_class", self.defaults["target_class"]),
            0,
            n_classes - 1,
        )
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
        return {"base": base, "target_class": target_class, "base_params": base_params}

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
        base_params: Mapping[str, Any],
    ) -> Corrupted:
        rows = np.flatnonzero(y == target_class)
        part = self.bases[base](X[rows], y[rows], d, rng, stats, **base_params)
        X[rows] = part.X
        y[rows] = part.y
        return Corrupted(
            X=X, y=y, realised_rate=part.realised_rate, changed_share=part.changed_share
        )
