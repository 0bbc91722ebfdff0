"""Missingness operators: cells become NaN completely at random (MCAR), at random
given another feature (MAR), or depending on their own value (MNAR).

All three share one bookkeeping rule. The eligible cells are every cell the
operator draws a decision for (all cells for ``mcar`` and ``mnar``; the cells of
the target features for ``mar``). ``realised_rate`` is the share of eligible
cells selected to be missing and ``changed_share`` the share that went from a
value to NaN; they differ only on cells that were NaN already.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from relcol.errors import SpecError

from ._base import (
    ETA_LIMIT,
    Corrupted,
    Operator,
    TrainingStats,
    check_choice,
    check_int,
    check_number,
    share,
    solve_intercept,
    standardise,
)


def _blank(X: np.ndarray, y: np.ndarray, columns: np.ndarray, hit: np.ndarray) -> Corrupted:
    """Set ``X[:, columns]`` to NaN where ``hit``; rates over those cells."""
    block = X[:, columns]
    changed = hit & ~np.isnan(block)
    block[hit] = np.nan
    X[:, columns] = block
    return Corrupted(X=X, y=y, realised_rate=share(hit), changed_share=share(changed))


def _logistic_probability(z: np.ndarray, beta: float, d: float) -> np.ndarray:
    """σ(β·z + b) with b solved so its mean over rows is d, column by column (z is 2-D).

    d = 1 is returned as certainty rather than solved, since b would be +∞.
    """
    if d >= 1.0:
        return np.ones_like(z)
    with np.errstate(over="ignore"):  # β·z beyond the float range is clipped anyway
        eta = np.clip(beta * np.clip(z, -ETA_LIMIT, ETA_LIMIT), -ETA_LIMIT, ETA_LIMIT)
    intercepts = np.array([solve_intercept(eta[:, j], d) for j in range(eta.shape[1])])
    return expit(eta + intercepts)


class MCAR(Operator):
    """Missing completely at random.

    Severity d is the missing rate: every feature cell independently becomes NaN
    with probability d. Range [0, 1]; d = 1 blanks every cell.

    Eligible cells: all cells. ``realised_rate`` is the share selected (≈ d,
    binomial); ``changed_share`` excludes cells that were NaN already. Takes no
    parameters.
    """

    name = "mcar"
    severity_range = (0.0, 1.0)

    def _apply(
        self, X: np.ndarray, y: np.ndarray, d: float, rng: np.random.Generator, stats: TrainingStats
    ) -> Corrupted:
        hit = rng.random(X.shape) < d
        return _blank(X, y, np.arange(X.shape[1]), hit)


class MAR(Operator):
    """Missing at random: missingness in every other feature is driven by one feature.

    Severity d is the missing rate. For each target feature j (every feature but
    the driver k), P(x_ij missing) = σ(β·z_ik + b), z_ik the driver standardised
    with the training mean and SD (z = 0 where the driver is NaN or has no training
    spread), and b solved by Brent's method so that the mean probability over the
    rows being corrupted equals d (to ~1e-13). All targets share the driver and the
    rows, so b is the same for every j; the cells are drawn independently. Given
    the driver, missingness is independent of the target values. The driver itself
    is never made missing. d = 1 blanks every target cell; β = 0 is MCAR on the
    targets. β·z is clipped to ±1e6, which only matters for infinite test values.
    Range [0, 1].

    Eligible cells: the target features' cells, n × (n_features − 1).

    Parameters
    ----------
    driver : int, default 0
        Index of the driving feature, in [0, n_features − 1]. Needs ≥ 2 features.
    beta : float, default 2.0
        Dependence strength per training SD of the driver: positive makes rows with
        a high driver more often missing, negative the reverse, 0 none.
    """

    name = "mar"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"driver": 0, "beta": 2.0}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        if n_features < 2:
            raise SpecError(
                f"{self.name}: needs at least 2 features (a driver and a target). Got {n_features}."
            )
        return {
            "driver": check_int(
                self.name, "driver", given.get("driver", self.defaults["driver"]), 0, n_features - 1
            ),
            "beta": check_number(self.name, "beta", given.get("beta", self.defaults["beta"])),
        }

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        driver: int,
        beta: float,
    ) -> Corrupted:
        targets = np.delete(np.arange(X.shape[1]), driver)
        z = standardise(X[:, driver], stats.mean[driver], stats.sd[driver])
        probability = _logistic_probability(z[:, None], beta, d)
        hit = rng.random((X.shape[0], targets.size)) < probability
        return _blank(X, y, targets, hit)


class MNAR(Operator):
    """Missing not at random: values vanish because of their own size (self-masking).

    Severity d is the target missing rate.

    ``variant="quantile"`` (default): x_ij becomes NaN exactly when
    x_ij ≥ Q_{1−d}(x_j), the (1 − d)-quantile of feature j in the clean *training*
    data (``numpy.nanquantile``, default ``"linear"`` method), so the largest values
    vanish and nothing is random (the generator is not used). d = 0 is the identity
    (it would otherwise blank values equal to the training maximum) and d = 1 blanks
    every observed value (threshold −∞, even test values below the training
    minimum). A feature with no observed training value is never blanked for
    0 < d < 1. On continuous features the realised rate is ≈ d up to the
    train/test difference; on discrete features ties at the quantile make it exceed
    d (at d = 0.1 on a binary feature with 20 % ones, every one vanishes), which is
    why the realised rate is recorded.

    ``variant="logistic"``: P(x_ij missing) = σ(β·z_ij + b_j), z_ij the value
    standardised with training mean and SD (0 where NaN or without spread), b_j
    solved per feature so the mean probability over the rows equals d, as in
    ``mar``. d = 1 blanks every cell.

    Eligible cells: all cells; NaN cells are never selected by the quantile rule
    but may be by the logistic one (changing nothing). Range [0, 1].

    Parameters
    ----------
    variant : {"quantile", "logistic"}, default "quantile"
    beta : float, default 2.0
        Only for ``variant="logistic"``: dependence strength per training SD.
    """

    name = "mnar"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"variant": "quantile", "beta": 2.0}
    variants = ("quantile", "logistic")

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        variant = check_choice(
            self.name, "variant", given.get("variant", self.defaults["variant"]), self.variants
        )
        if variant == "quantile":
            if "beta" in given:
                raise SpecError(
                    f"{self.name}: beta applies only to variant 'logistic'; set variant = "
                    "'logistic' or drop beta. Got variant 'quantile'."
                )
            return {"variant": variant}
        beta = check_number(self.name, "beta", given.get("beta", self.defaults["beta"]))
        return {"variant": variant, "beta": beta}

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        variant: str,
        beta: float,
    ) -> Corrupted:
        columns = np.arange(X.shape[1])
        if variant == "quantile":
            hit = X >= training_quantile(stats, 1.0 - d)
        else:
            z = standardise(X, stats.mean, stats.sd)
            hit = rng.random(X.shape) < _logistic_probability(z, beta, d)
        return _blank(X, y, columns, hit)


def training_quantile(stats: TrainingStats, q: float) -> np.ndarray:
    """Per-feature training q-quantile (linear); NaN for a feature never observed, −∞ at q = 0."""
    n_features = stats.train.shape[1]
    if q <= 0.0:
        return np.full(n_features, -np.inf)
    thresholds = np.full(n_features, np.nan)
    observed = ~np.isnan(stats.mean)
    thresholds[observed] = np.nanquantile(stats.train[:, observed], q, axis=0)
    return thresholds
