"""Multivariate amputation (after mice::ampute and pyampute): rows become incomplete in
patterns of several variables at once, by MCAR, MAR or MNAR scores of chosen shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from relcol.errors import SpecError

from ._base import (
    Corrupted,
    Operator,
    TrainingStats,
    check_choice,
    check_columns,
    check_number,
    share,
)
from ._missing import driver_scores, eta_of, logistic_probability

MECHANISMS = ("MAR", "MNAR", "MCAR")
#: The score shapes of mice::ampute: which scores go missing most (η = β·shape(s)).
SHAPES: Mapping[str, Callable[[np.ndarray], np.ndarray]] = {
    "right": lambda s: s,  # high scores
    "left": np.negative,  # low scores
    "mid": lambda s: -np.abs(s),  # central scores
    "tail": np.abs,  # both extremes
}
PATTERN_KEYS = ("incomplete", "freq", "mechanism", "driver", "weights", "shape")


class Ampute(Operator):
    """Multivariate amputation: each row follows one missingness pattern.

    Severity d is the share of rows made incomplete (the ``prop`` of mice::ampute and
    pyampute). Each row is assigned pattern p with probability freq_p; its score is
    sᵢ = Σ_k w_k·zᵢₖ over the pattern's drivers (z standardised with training mean
    and SD, 0 where NaN), standardised again with the score's training mean and SD;
    it becomes incomplete with probability σ(η(sᵢ) + b_p), where the *shape* sets
    η: ``right`` β·s (high scores go missing), ``left`` −β·s, ``mid`` −β·|s|
    (central scores), ``tail`` β·|s| (both extremes), and b_p is solved on the clean
    training rows so that the mean probability there is d. An incomplete row loses
    every variable of its pattern's ``incomplete`` list. Mechanisms: ``MCAR`` (no
    drivers, probability d), ``MAR`` (drivers outside the incomplete variables;
    default: every other feature, weight 1), ``MNAR`` (drivers include incomplete
    variables; default: the incomplete variables themselves). Patterns with
    different mechanisms make a MAR + MNAR mixture. d = 1 makes every row
    incomplete. Range [0, 1].

    The expected missing-cell rate over the union C of the incomplete variables is
    d·Σ_p freq_p·|incomplete_p| / |C|.

    Eligible entries: rows for ``realised_rate`` (the share made incomplete, ≈ d);
    the cells of C for ``changed_share`` (the share that went from a value to NaN).

    Parameters
    ----------
    patterns : list of tables, default one MAR pattern per feature, equal frequencies
        Each: ``incomplete`` (feature names or indices, required), ``freq`` (> 0; all
        or none given; they must sum to 1; default equal), ``mechanism`` (MAR, MNAR,
        MCAR; default MAR), ``driver`` and ``weights`` (as in ``mar``; defaults
        above), ``shape`` (right, left, mid, tail; default right).
    beta : float, default 2.0
        Dependence strength per training SD of the score.
    """

    name = "ampute"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"patterns": None, "beta": 2.0}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        beta = check_number(self.name, "beta", given.get("beta", self.defaults["beta"]))
        raw = given.get("patterns")
        if raw is None:
            if n_features < 2:
                raise SpecError(f"{self.name}: needs at least 2 features. Got {n_features}.")
            raw = [{"incomplete": [j]} for j in range(n_features)]
        if not isinstance(raw, list) or not raw or not all(isinstance(p, Mapping) for p in raw):
            raise SpecError(
                f"{self.name}: patterns must be a non-empty list of tables. Got {raw!r}."
            )
        with_freq = sum("freq" in p for p in raw)
        if with_freq not in (0, len(raw)):
            raise SpecError(f"{self.name}: give freq in every pattern or in none.")
        patterns = tuple(self._pattern(dict(p), i, n_features, len(raw)) for i, p in enumerate(raw))
        total = sum(p["freq"] for p in patterns)
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise SpecError(f"{self.name}: pattern freq must sum to 1. Got {total:g}.")
        return {"patterns": patterns, "beta": beta}

    def _pattern(
        self, given: dict[str, object], i: int, n_features: int, count: int
    ) -> dict[str, Any]:
        where = f"{self.name}: patterns[{i}]"
        unknown = sorted(set(given) - set(PATTERN_KEYS))
        if unknown:
            raise SpecError(
                f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(PATTERN_KEYS)}."
            )
        if "incomplete" not in given:
            raise SpecError(f"{where}: needs `incomplete`, the variables it makes missing.")
        incomplete = check_columns(where, "incomplete", given["incomplete"], n_features)
        freq = check_number(where, "freq", given.get("freq", 1.0 / count))
        if not freq > 0:
            raise SpecError(f"{where}: freq must be > 0. Got {freq:g}.")
        mechanism = check_choice(where, "mechanism", given.get("mechanism", "MAR"), MECHANISMS)
        shape = check_choice(where, "shape", given.get("shape", "right"), tuple(SHAPES))
        rest = tuple(j for j in range(n_features) if j not in incomplete)
        if mechanism == "MCAR":
            if "driver" in given or "weights" in given:
                raise SpecError(f"{where}: an MCAR pattern takes no driver or weights.")
            driver: tuple[int, ...] = ()
        elif "driver" in given:
            driver = check_columns(where, "driver", given["driver"], n_features)
        else:
            driver = rest if mechanism == "MAR" else incomplete
        if mechanism == "MAR" and not driver:
            raise SpecError(f"{where}: a MAR pattern needs a variable outside `incomplete`.")
        if mechanism == "MAR" and set(driver) & set(incomplete):
            raise SpecError(
                f"{where}: a MAR pattern's drivers must be outside `incomplete` (driving by "
                "an incomplete variable is MNAR)."
            )
        if mechanism == "MNAR" and not set(driver) & set(incomplete):
            raise SpecError(f"{where}: an MNAR pattern's drivers must include an incomplete one.")
        weights = given.get("weights", [1.0] * len(driver))
        if not isinstance(weights, list) or len(weights) != len(driver):
            raise SpecError(
                f"{where}: weights must be a list with one number per driver ({len(driver)}). "
                f"Got {weights!r}."
            )
        return {
            "incomplete": incomplete,
            "freq": freq,
            "mechanism": mechanism,
            "driver": driver,
            "weights": tuple(check_number(where, "weights", w) for w in weights),
            "shape": shape,
        }

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        patterns: tuple[Mapping[str, Any], ...],
        beta: float,
    ) -> Corrupted:
        n = X.shape[0]
        assigned = rng.choice(len(patterns), size=n, p=[p["freq"] for p in patterns])
        chance = rng.random(n)
        incomplete = np.zeros(n, dtype=bool)
        union = sorted({j for p in patterns for j in p["incomplete"]})
        before = np.isnan(X[:, union])
        for k, pattern in enumerate(patterns):
            probability = self._probability(X, stats, d, beta, pattern)
            rows = (assigned == k) & (chance < probability)
            X[np.ix_(rows, pattern["incomplete"])] = np.nan
            incomplete |= rows
        changed = np.isnan(X[:, union]) & ~before
        return Corrupted(X=X, y=y, realised_rate=share(incomplete), changed_share=share(changed))

    def _probability(
        self,
        X: np.ndarray,
        stats: TrainingStats,
        d: float,
        beta: float,
        pattern: Mapping[str, Any],
    ) -> np.ndarray | float:
        if pattern["mechanism"] == "MCAR" or d >= 1.0:
            return d
        driver = np.asarray(pattern["driver"])
        scores = driver_scores(X, stats, driver, np.asarray(pattern["weights"]))
        if scores is None:
            raise SpecError(
                f"{self.name}: the {pattern['mechanism']} pattern making "
                f"{list(pattern['incomplete'])} missing has drivers {driver.tolist()} whose "
                "score is constant in the clean training data; choose drivers with training "
                "spread, or mechanism 'MCAR'."
            )
        eta, eta_train = (eta_of(beta, SHAPES[pattern["shape"]](s))[:, None] for s in scores)
        return logistic_probability(eta, eta_train, d)[:, 0]
