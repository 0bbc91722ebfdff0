"""Missingness operators: cells become NaN completely at random (MCAR), at random
given another feature (MAR), or depending on their own value (MNAR).

All three share one bookkeeping rule. The eligible cells are every cell the
operator draws a decision for: the cells of its ``columns`` (default: all
features; for ``mar`` the target features, every feature but the drivers).
``realised_rate`` is the share of eligible cells selected to be missing and
``changed_share`` the share that went from a value to NaN; they differ only on
cells that were NaN already.

Every threshold and intercept is fitted on the clean *training* rows, never on
the test rows being corrupted, so d is the missing rate the mechanism has on data
distributed like the training set, and the realised rate on the test set is its
sampling counterpart.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from relcol.errors import SpecError

from ._base import (
    ETA_LIMIT,
    ColumnOperator,
    Corrupted,
    Operator,
    TrainingStats,
    check_choice,
    check_columns,
    check_number,
    column_param,
    selected_columns,
    share,
    solve_intercept,
    standardise,
    usable_sd,
)


def _blank(X: np.ndarray, y: np.ndarray, columns: np.ndarray, hit: np.ndarray) -> Corrupted:
    """Set ``X[:, columns]`` to NaN where ``hit``; rates over those cells."""
    block = X[:, columns]
    changed = hit & ~np.isnan(block)
    block[hit] = np.nan
    X[:, columns] = block
    return Corrupted(X=X, y=y, realised_rate=share(hit), changed_share=share(changed))


def eta_of(beta: float, z: np.ndarray) -> np.ndarray:
    """β·z clipped to ±``ETA_LIMIT`` (only infinite test values reach the clip)."""
    with np.errstate(over="ignore", invalid="ignore"):  # β·z beyond the float range is clipped
        return np.clip(beta * np.clip(z, -ETA_LIMIT, ETA_LIMIT), -ETA_LIMIT, ETA_LIMIT)


def logistic_probability(eta: np.ndarray, eta_train: np.ndarray, d: float) -> np.ndarray:
    """σ(η + b_j) column by column (both arrays 2-D), b_j solved on the *training* column
    ``eta_train[:, j]`` so that its mean probability there is d.

    d = 1 is returned as certainty rather than solved, since b would be +∞.
    """
    if d >= 1.0:
        return np.ones_like(eta)
    intercepts = np.array([solve_intercept(eta_train[:, j], d) for j in range(eta.shape[1])])
    return expit(eta + intercepts)


class MCAR(ColumnOperator):
    """Missing completely at random.

    Severity d is the missing rate: every cell of the selected ``columns`` (default
    all) independently becomes NaN with probability d. Range [0, 1]; d = 1 blanks
    every selected cell.

    Eligible cells: the selected columns' cells. ``realised_rate`` is the share
    selected (≈ d, binomial); ``changed_share`` excludes cells that were NaN
    already.

    Parameters
    ----------
    columns : feature name or index, or a list of them, default all features
    """

    name = "mcar"
    severity_range = (0.0, 1.0)

    def _apply_columns(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        selected: np.ndarray,
    ) -> Corrupted:
        hit = rng.random((X.shape[0], selected.size)) < d
        return _blank(X, y, selected, hit)


class MAR(Operator):
    """Missing at random: missingness in the target features is driven by other features.

    Severity d is the missing rate of the target cells. The drivers k₁ … k_m (one or
    several, with weights w) give each row the score sᵢ = Σ w_k·zᵢₖ, zᵢₖ the driver
    standardised with the training mean and SD (z = 0 where the driver is NaN); the
    score is standardised again with its own training mean and SD, so β is per SD of
    the score. Then P(xᵢⱼ missing) = σ(β·sᵢ + b) for every target j, with b solved
    (Brent's method, to ~1e-13) on the clean *training* rows so the mean probability
    there equals d; the cells are drawn independently. Given the drivers,
    missingness is independent of the target values. Drivers are never made
    missing. d = 1 blanks every target cell; β = 0 is MCAR on the targets. Range
    [0, 1].

    A score without training spread (a constant driver, such as a pixel that is 0
    in every training image) would make MAR silently MCAR, so it is refused with a
    ``SpecError``; ``driver = "auto"`` (the default) picks an informative driver.

    Eligible cells: the target features' cells, n × (number of targets).

    Parameters
    ----------
    driver : "auto", a feature name or index, or a list of them, default "auto"
        "auto" picks, among the features with training spread that are not
        targets, the one whose training values correlate most with the targets
        (largest mean |Pearson r|; lowest index on ties), so missingness carries
        information about the values it hides.
    weights : list of numbers, default all 1
        One weight per driver (needs an explicit ``driver`` list of the same length).
    beta : float, default 2.0
        Dependence strength per training SD of the score: positive makes rows with
        a high score more often missing, negative the reverse, 0 none.
    columns : feature name or index, or a list of them, default every non-driver feature
        The target features; must not include a driver.
    """

    name = "mar"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"driver": "auto", "weights": None, "beta": 2.0, "columns": None}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        if n_features < 2:
            raise SpecError(
                f"{self.name}: needs at least 2 features (a driver and a target). Got {n_features}."
            )
        out: dict[str, Any] = {
            "driver": given.get("driver", "auto"),
            "beta": check_number(self.name, "beta", given.get("beta", self.defaults["beta"])),
            **column_param(given, self.name, n_features),
        }
        if out["driver"] != "auto":
            out["driver"] = check_columns(self.name, "driver", out["driver"], n_features)
        if "weights" in given:
            weights = given["weights"]
            if (
                out["driver"] == "auto"
                or not isinstance(weights, list)
                or (len(weights) != len(out["driver"]))
            ):
                raise SpecError(
                    f"{self.name}: weights must be a list with one number per driver (name the "
                    f"drivers in `driver`). Got weights {weights!r} for driver {out['driver']!r}."
                )
            out["weights"] = tuple(check_number(self.name, "weights", w) for w in weights)
        targets = out.get("columns")
        if out["driver"] != "auto" and targets is not None and set(targets) & set(out["driver"]):
            raise SpecError(
                f"{self.name}: a driver cannot also be a target column. Got driver "
                f"{list(out['driver'])} and columns {list(targets)}."
            )
        if out["driver"] != "auto" and targets is None and len(out["driver"]) == n_features:
            raise SpecError(f"{self.name}: every feature is a driver; no target feature is left.")
        return out

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        driver: str | tuple[int, ...],
        weights: tuple[float, ...] | None,
        beta: float,
        columns: tuple[int, ...] | None,
    ) -> Corrupted:
        drivers = auto_driver(stats, columns) if driver == "auto" else np.asarray(driver)
        targets = (
            np.setdiff1d(np.arange(X.shape[1]), drivers) if columns is None else np.asarray(columns)
        )
        w = np.ones(drivers.size) if weights is None else np.asarray(weights)
        scores = driver_scores(X, stats, drivers, w)
        if scores is None:
            raise SpecError(
                f"{self.name}: driver feature(s) {drivers.tolist()} give a score that is constant "
                "in the clean training data, so missingness could not depend on it (it would be "
                "MCAR); choose drivers with training spread, or driver = 'auto'."
            )
        eta, eta_train = (eta_of(beta, score)[:, None] for score in scores)
        probability = logistic_probability(eta, eta_train, d)
        hit = rng.random((X.shape[0], targets.size)) < probability
        return _blank(X, y, targets, hit)


def driver_scores(
    X: np.ndarray, stats: TrainingStats, drivers: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The weighted driver score Σ w_k·z_k of the test rows ``X`` and of the training rows,
    both standardised with the training score's mean and SD; None when that SD is 0."""

    def score(values: np.ndarray) -> np.ndarray:
        return standardise(values[:, drivers], stats.mean[drivers], stats.sd[drivers]) @ weights

    train = score(stats.train)
    centre, spread = float(np.mean(train)), float(np.std(train))
    if not spread > 0:
        return None
    return (score(X) - centre) / spread, (train - centre) / spread


def auto_driver(stats: TrainingStats, targets: tuple[int, ...] | None) -> np.ndarray:
    """The informative driver ``mar`` uses by default, as a 1-element index array.

    Candidates are the features with training spread that are not ``targets``; the
    targets are ``targets`` or, when None, every other feature with spread. The
    winner has the largest mean |Pearson r| with its targets on the training rows
    (NaN filled with the training mean); the lowest index wins ties.
    """
    spread = usable_sd(stats.sd) > 0
    features = np.arange(spread.size)
    targeted = spread if targets is None else np.isin(features, targets)
    candidates = np.flatnonzero(spread & (True if targets is None else ~targeted))
    if candidates.size == 0:
        where = "outside the target columns " if targets is not None else ""
        raise SpecError(
            f"mar: no feature {where}varies in the clean training data, so nothing "
            "informative can drive missingness; use mcar instead."
        )
    z = standardise(stats.train, stats.mean, stats.sd)  # NaN → 0, the training mean
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(np.nan_to_num(np.corrcoef(z, rowvar=False).reshape(spread.size, -1)))
    strength = [
        r[k, targeted & (features != k)].mean() if (targeted & (features != k)).any() else 0.0
        for k in candidates
    ]
    return candidates[[int(np.argmax(strength))]]


class MNAR(Operator):
    """Missing not at random: values vanish because of their own size (self-masking).

    Severity d is the missing rate, a share d of each selected feature's cells.

    ``variant="quantile"`` (default): the largest values vanish. With q_j the
    (1 − d)-quantile of feature j in the clean *training* data
    (``numpy.nanquantile``, default ``"linear"`` method), x_ij becomes NaN when
    x_ij > q_j, and a value tied *at* q_j becomes NaN with probability
    p_j = (d − P(x > q_j)) / P(x = q_j), both shares over the training values
    (clipped to [0, 1]; p_j = 1 when no training value equals q_j). So on the
    training distribution exactly a share d vanishes even on discrete features
    (a pixel that is 0 in 80 % of images loses a random share of its zeros, not
    all of them), and the realised rate on the test set tracks d up to the
    train/test difference. The generator is used only when some test value is
    tied at a q_j with 0 < p_j < 1: on continuous features the rule draws nothing,
    so repeated draws are identical (a study stores them once). d = 1 blanks every
    observed value (threshold −∞, even test values below the training minimum). A
    feature with no observed training value is never blanked for 0 < d < 1.

    ``variant="logistic"``: P(x_ij missing) = σ(β·z_ij + b_j), z_ij the value
    standardised with training mean and SD (0 where NaN or without spread), b_j
    solved per feature on the training values so their mean probability is d.
    d = 1 blanks every cell.

    Eligible cells: the selected columns' cells; NaN cells are never selected by
    the quantile rule but may be by the logistic one (changing nothing). Range
    [0, 1].

    Parameters
    ----------
    variant : {"quantile", "logistic"}, default "quantile"
    beta : float, default 2.0
        Only for ``variant="logistic"``: dependence strength per training SD.
    columns : feature name or index, or a list of them, default all features
    """

    name = "mnar"
    severity_range = (0.0, 1.0)
    defaults: ClassVar = {"variant": "quantile", "beta": 2.0, "columns": None}
    variants = ("quantile", "logistic")

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        variant = check_choice(
            self.name, "variant", given.get("variant", self.defaults["variant"]), self.variants
        )
        columns = column_param(given, self.name, n_features)
        if variant == "quantile":
            if "beta" in given:
                raise SpecError(
                    f"{self.name}: beta applies only to variant 'logistic'; set variant = "
                    "'logistic' or drop beta. Got variant 'quantile'."
                )
            return {"variant": variant, **columns}
        beta = check_number(self.name, "beta", given.get("beta", self.defaults["beta"]))
        return {"variant": variant, "beta": beta, **columns}

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
        columns: tuple[int, ...] | None,
    ) -> Corrupted:
        selected = selected_columns(columns, X.shape[1])
        if stats.categorical is not None:  # category codes have no "largest values"
            selected = selected[~stats.categorical[selected]]
        values = X[:, selected]
        if variant == "quantile":
            hit = quantile_hits(values, stats.train[:, selected], d, rng)
        else:
            mean, sd = stats.mean[selected], stats.sd[selected]
            eta = eta_of(beta, standardise(values, mean, sd))
            eta_train = eta_of(beta, standardise(stats.train[:, selected], mean, sd))
            hit = rng.random(values.shape) < logistic_probability(eta, eta_train, d)
        return _blank(X, y, selected, hit)


def quantile_hits(
    values: np.ndarray, train: np.ndarray, d: float, rng: np.random.Generator
) -> np.ndarray:
    """Which cells of ``values`` the quantile rule of ``mnar`` blanks at d (see there)."""
    if d >= 1.0:
        return ~np.isnan(values)
    threshold = training_quantile(train, 1.0 - d)
    with np.errstate(invalid="ignore"):
        hit = values > threshold
    tied = values == threshold
    if not tied.any():
        return hit
    observed = ~np.isnan(train)
    count = observed.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        above = (train > threshold).sum(axis=0) / count
        at = (train == threshold).sum(axis=0) / count
        p = np.where(at > 0, np.clip((d - above) / at, 0.0, 1.0), 1.0)
    if not (tied & (p < 1.0)).any():
        return hit | tied
    return hit | (tied & (rng.random(values.shape) < p))


def training_quantile(train: np.ndarray, q: float) -> np.ndarray:
    """Per-column q-quantile (linear) of ``train``; NaN for a column never observed, −∞ at q = 0."""
    n_features = train.shape[1]
    if q <= 0.0:
        return np.full(n_features, -np.inf)
    thresholds = np.full(n_features, np.nan)
    observed = ~np.all(np.isnan(train), axis=0)
    thresholds[observed] = np.nanquantile(train[:, observed], q, axis=0)
    return thresholds
