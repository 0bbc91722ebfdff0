"""What every corruption operator shares: the clean-training statistics it reads, the
result it returns, the base class that makes d = 0 the identity, and the small
numerical and validation helpers the operators are built from.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy.special import log_expit, logit, logsumexp

from relcol import checks
from relcol.errors import InputError, SpecError

# --------------------------------------------------------------------------- data


@dataclass(frozen=True, eq=False)
class TrainingStats:
    """Per-feature statistics of the clean training features, fixed before any corruption.

    Every operator standardises, scales and thresholds with these, never with the
    (corrupted) test data, so a corruption cannot move its own reference point.

    Attributes
    ----------
    mean : ndarray of shape (n_features,)
        NaN-aware mean of each training feature.
    sd : ndarray of shape (n_features,)
        NaN-aware standard deviation (ddof = 0). A feature that is constant in
        training (all observed values equal) has ``sd`` exactly 0; a feature with no observed training value has
        ``mean`` and ``sd`` NaN. The operators treat both alike, as "no usable
        spread": its standardised value z is 0 (so ``mar`` with such a driver and
        ``mnar(variant="logistic")`` on such a feature reduce to MCAR at rate d), and
        ``gaussian_noise`` adds nothing to it (noise of d training SDs is 0).
    train : ndarray of shape (n_train, n_features)
        A read-only float64 copy of the clean training features, for quantiles.
    n_classes : int
        K, the number of classes labels are drawn from.
    categorical : ndarray of bool, shape (n_features,)
        True where the feature holds category codes (see ``relcol.data``). Such a
        feature has no numeric meaning, so its ``mean`` and ``sd`` are NaN, "never
        observed": the numeric operators leave it alone, while ``mcar`` and ``mar``
        blank it like any other and ``categorical_shift`` acts only on it.
    labels : ndarray of shape (n_train,) or None
        The clean training labels, when given: ``structural_bias`` needs them to find
        the training rows of its target class.

    Thresholds and intercepts are fitted on the rows of ``train``; ``rows`` narrows
    them to a group while keeping ``mean`` and ``sd`` (the scale d is measured in).
    """

    mean: np.ndarray
    sd: np.ndarray
    train: np.ndarray
    n_classes: int
    labels: np.ndarray | None = None
    categorical: np.ndarray | None = None

    @classmethod
    def fit(
        cls,
        X_train: np.ndarray,
        n_classes: int,
        labels: np.ndarray | None = None,
        *,
        categorical: np.ndarray | None = None,
    ) -> TrainingStats:
        """Compute the statistics of clean training features ``X_train`` (n_train × n_features)
        and, optionally, keep the clean training ``labels``.

        ``categorical`` masks the features that hold category codes (default: none).
        """
        train = np.array(X_train, dtype=np.float64, copy=True)
        if train.ndim != 2 or train.shape[0] == 0:
            raise InputError(
                "TrainingStats.fit: X_train must be a non-empty 2-D array (rows × features). "
                f"Got shape {train.shape}."
            )
        checks.check_int("TrainingStats.fit: n_classes", n_classes, 2, error=InputError)
        n_features = train.shape[1]
        mask = np.zeros(n_features, dtype=bool)
        if categorical is not None:
            given = np.asarray(categorical, dtype=bool)
            if given.shape != mask.shape:
                raise InputError(
                    "TrainingStats.fit: categorical must be a boolean mask with one entry per "
                    f"feature ({n_features}). Got shape {given.shape}."
                )
            mask[:] = given
        observed = ~np.all(np.isnan(train), axis=0) & ~mask
        mean = np.full(n_features, np.nan)
        sd = np.full(n_features, np.nan)
        # Only features with an observed value, so numpy never warns about empty slices.
        mean[observed] = np.nanmean(train[:, observed], axis=0)
        sd[observed] = np.nanstd(train[:, observed], axis=0)
        # A constant feature gets an SD of exactly 0, not the rounding error of its mean
        # (which would standardise test values to astronomically large z).
        constant = observed.copy()
        constant[observed] = np.nanmax(train[:, observed], axis=0) == np.nanmin(
            train[:, observed], axis=0
        )
        sd[constant] = 0.0
        if labels is not None:
            labels = np.array(labels, copy=True)
            if labels.shape != (train.shape[0],):
                raise InputError(
                    "TrainingStats.fit: labels must have one entry per training row "
                    f"({train.shape[0]}). Got shape {labels.shape}."
                )
            labels.flags.writeable = False
        for array in (mean, sd, train, mask):
            array.flags.writeable = False
        return cls(
            mean=mean,
            sd=sd,
            train=train,
            n_classes=int(n_classes),
            labels=labels,
            categorical=mask,
        )

    def rows(self, selected: np.ndarray) -> TrainingStats:
        """The same statistics with ``train`` (and ``labels``) narrowed to the rows
        ``selected`` (a boolean mask): quantiles and intercepts are then fitted on that
        group, while ``mean`` and ``sd`` stay those of all training rows."""
        train = self.train[selected]
        train.flags.writeable = False
        labels = None if self.labels is None else self.labels[selected]
        return replace(self, train=train, labels=labels)


@dataclass(frozen=True, eq=False)
class Corrupted:
    """One draw of a corruption: the corrupted test data and what the operator did.

    Attributes
    ----------
    X : ndarray of shape (n, n_features), float64
        A new array; the input is never modified.
    y : ndarray of shape (n,)
        The evaluation labels after corruption (a copy; only ``label_noise`` changes
        values), with the input's integer dtype.
    realised_rate : float
        The share of the operator's eligible entries that its random (or threshold)
        mechanism selected: the empirical counterpart of d. For the missingness
        operators, the share of eligible cells selected to become NaN; for
        ``label_noise``, the share of labels replaced by a uniform draw; for
        ``gaussian_noise``, the realised noise scale in training SDs (root mean
        square of ε/s over the cells it could move), which estimates d. Each
        operator's docstring names its eligible entries. 0.0 when there are none.
    changed_share : float
        The share of the same eligible entries whose value differs from the input.
        It can be below ``realised_rate``: a cell that was already NaN, a label
        redrawn as itself.
    """

    X: np.ndarray
    y: np.ndarray
    realised_rate: float
    changed_share: float


def share(selected: np.ndarray) -> float:
    """Mean of a boolean array as a float; 0.0 for an empty one."""
    return float(selected.mean()) if selected.size else 0.0


def patch_rows(X: np.ndarray, y: np.ndarray, rows: np.ndarray, part: Corrupted) -> Corrupted:
    """``X`` and ``y`` with ``rows`` replaced by the corrupted ``part``; the part's rates."""
    X[rows] = part.X
    y[rows] = part.y
    return Corrupted(X=X, y=y, realised_rate=part.realised_rate, changed_share=part.changed_share)


# ----------------------------------------------------------------------- numerics


def usable_sd(sd: np.ndarray) -> np.ndarray:
    """Training SDs with "no usable spread" (0 or NaN, see ``TrainingStats``) set to 0."""
    return np.where(np.isfinite(sd) & (sd > 0), sd, 0.0)


def standardise(values: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """z = (x − mean) / sd with training statistics; 0 for NaN x or a feature without spread."""
    scale = usable_sd(sd)
    ok = (scale > 0) & ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        z = (values - np.where(scale > 0, mean, 0.0)) / np.where(scale > 0, scale, 1.0)
    return np.where(ok, z, 0.0)


#: η = β·z is clipped to ±ETA_LIMIT before solving. That changes no probability unless
#: the solved intercept is itself near ∓1e6 (a driver spread over a million training
#: SDs); it keeps the bracket finite when a test value is infinite.
ETA_LIMIT = 1e6


def solve_intercept(eta: np.ndarray, d: float) -> float:
    """The b with mean(σ(η + b)) = d, for 0 < d < 1 and η already within ±``ETA_LIMIT``.

    The mean is increasing in b and lies between σ(b − max|η|) and σ(b + max|η|),
    so the bracket logit(d) ± (2·max|η| + 1) contains the root (the factor 2 keeps
    the ends on the right side after rounding, however large max|η| is). Brent's
    method then solves to about 1e-14 in b, so the mean probability equals d to a
    relative 1e-13 or better. The equation is solved on the log scale,
    log mean σ(η + b) = log d, so that it stays exact for tiny d where σ underflows.
    """
    centre = float(logit(d))
    spread = float(np.max(np.abs(eta))) if eta.size else 0.0
    if spread == 0.0:
        return centre
    log_target = math.log(d) + math.log(eta.size)

    def f(b: float) -> float:
        return float(logsumexp(log_expit(eta + b))) - log_target

    lo, hi = centre - 2.0 * spread - 1.0, centre + 2.0 * spread + 1.0
    f_lo, f_hi = f(lo), f(hi)
    if f_lo * f_hi > 0:  # d within rounding of 0 or 1: both ends already meet d to float precision
        return lo if abs(f_lo) <= abs(f_hi) else hi
    from scipy.optimize import brentq  # imported where a rate is fitted: a third of a second

    return brentq(f, lo, hi, xtol=1e-14, maxiter=500)


# --------------------------------------------------------------------- validation


def _interval(lo: float, hi: float) -> str:
    return f"[{lo:g}, {hi:g}]" if math.isfinite(hi) else f"[{lo:g}, inf)"


def check_int(op: str, param: str, value: object, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi], else a SpecError naming ``op`` and ``param``."""
    return checks.check_int(f"{op}: {param}", value, lo, hi, error=SpecError)


def check_number(op: str, param: str, value: object) -> float:
    """``value`` as a finite float, else a SpecError naming ``op`` and ``param``."""
    if not checks.is_number(value) or not math.isfinite(value):
        raise SpecError(f"{op}: {param} must be a finite number. Got {value!r}.")
    return float(value)


def check_fraction(op: str, value: object) -> float:
    """``value`` as a row fraction in (0, 1], else a SpecError naming ``op``."""
    return checks.check_interval(f"{op}: fraction", value, "(0, 1]", error=SpecError)


def check_columns(op: str, param: str, value: object, n_features: int) -> tuple[int, ...]:
    """``value`` (one feature index or a list of them) as distinct indices in
    [0, n_features − 1], else a SpecError. Feature *names* are turned into indices
    before this, by ``resolve_names``."""
    values = value if isinstance(value, list | tuple) else [value]
    if (
        not values
        or not all(checks.is_int(v) and 0 <= v < n_features for v in values)
        or len(set(values)) != len(values)
    ):
        raise SpecError(
            f"{op}: {param} must be a feature name or index in [0, {n_features - 1}], or a "
            f"non-empty list of distinct ones. Got {value!r}."
        )
    return tuple(int(v) for v in values)


def column_param(given: Mapping[str, object], op: str, n_features: int) -> dict[str, Any]:
    """The validated ``columns`` entry of an operator's parameters ({} when not given)."""
    if "columns" not in given:
        return {}
    return {"columns": check_columns(op, "columns", given["columns"], n_features)}


def selected_columns(columns: tuple[int, ...] | None, n_features: int) -> np.ndarray:
    """The indices ``columns`` names; every feature when it is None (the default)."""
    return np.arange(n_features) if columns is None else np.asarray(columns)


#: Parameters (at any depth of an operator's table) that name features.
FEATURE_KEYS = frozenset({"columns", "driver", "incomplete", "group_feature"})


def resolve_names(params: object, feature_names: tuple[str, ...], where: str) -> object:
    """``params`` with every feature *name* under a ``FEATURE_KEYS`` key replaced by its
    index in ``feature_names`` (recursively, through tables and lists of tables); the
    word ``"auto"`` is kept. An unknown name raises a SpecError naming ``where``."""
    index = {name: i for i, name in enumerate(feature_names)}

    def one(value: object) -> object:
        if not isinstance(value, str) or value == "auto":
            return value
        if value not in index:
            shown = ", ".join(map(repr, feature_names[:8])) + (
                ", ..." if len(feature_names) > 8 else ""
            )
            raise SpecError(f"{where}: no feature named {value!r}; features: {shown}.")
        return index[value]

    def walk(value: object, key: object = None) -> object:
        if isinstance(value, Mapping):
            return {k: walk(v, k) for k, v in value.items()}
        if key in FEATURE_KEYS:
            return [one(v) for v in value] if isinstance(value, list) else one(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(params)


def check_choice(op: str, param: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``, else a SpecError listing them."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(map(repr, choices))
        raise SpecError(f"{op}: {param} must be one of {allowed}. Got {value!r}.")
    return value


# ----------------------------------------------------------------------- operator


class Operator(ABC):
    """A corruption 𝒯_d: a pure function of test data, given clean-training statistics.

    Subclasses set ``name``, ``severity_range`` and ``defaults`` and implement
    ``_apply`` (trusting validated parameters) and, if they take parameters,
    ``_validate``. This class makes d = 0 (and an empty test set) the exact
    identity, copies the inputs so they are never modified, and fills defaults.

    Attributes
    ----------
    name : str
        The operator's name in study specs and in the long table.
    severity_range : tuple of float
        Inclusive bounds for d; the upper bound may be ``math.inf`` (d itself must
        still be finite).
    defaults : Mapping
        Every parameter the operator accepts, with its default.
    """

    name: ClassVar[str]
    severity_range: ClassVar[tuple[float, float]]
    defaults: ClassVar[Mapping[str, Any]] = {}

    def __repr__(self) -> str:
        return f"<corruption operator {self.name!r}>"

    def validate(
        self, params: Mapping[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        """Check parameters once, before any draw; return them with defaults filled.

        Parameters
        ----------
        params : Mapping
            The parameters as the user wrote them (a TOML table). Every operator also
            takes ``fraction`` (see ``__call__``).
        n_features, n_classes : int
            The shape of the dataset the operator will be applied to.

        Raises
        ------
        SpecError
            For an unknown parameter, a value of the wrong type or out of range.
        """
        if not isinstance(params, Mapping):
            raise SpecError(
                f"{self.name}: parameters must be a table (mapping). Got {type(params).__name__}."
            )
        unknown = sorted(set(params) - set(self.defaults) - {"fraction"}, key=str)
        if unknown:
            allowed = ", ".join(map(repr, sorted({*self.defaults, "fraction"})))
            raise SpecError(f"{self.name}: unknown parameter {unknown[0]!r}; allowed: {allowed}.")
        given = dict(params)
        fraction = given.pop("fraction", None)
        out = self._validate(given, n_features=n_features, n_classes=n_classes)
        if fraction is not None:
            out["fraction"] = check_fraction(self.name, fraction)
        return out

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        return {**self.defaults, **given}

    def severity_bounds(self, params: Mapping[str, Any] | None = None) -> tuple[float, float]:
        """Inclusive bounds for d under validated ``params`` (the same for most operators)."""
        return self.severity_range

    def check_severity(self, d: object, params: Mapping[str, Any] | None = None) -> float:
        """``d`` as a float if it is a finite number within ``severity_bounds(params)``.

        Raises
        ------
        SpecError
            Naming the operator, the allowed interval and the value received.
        """
        lo, hi = self.severity_bounds(params)
        if not checks.is_number(d) or not math.isfinite(d) or not lo <= d <= hi:
            raise SpecError(
                f"{self.name}: severity must be a finite number in {_interval(lo, hi)}. Got {d!r}."
            )
        return float(d)

    def __call__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        **params: Any,
    ) -> Corrupted:
        """Apply the operator at severity ``d`` to test features ``X`` and labels ``y``.

        Parameters
        ----------
        X : array of shape (n, n_features)
            Test features; read, never modified.
        y : array of shape (n,)
            Clean test labels (integers in [0, K)); read, never modified.
        d : float
            The severity, already checked with ``check_severity``.
        rng : numpy.random.Generator
            The only source of randomness; the output is a function of its state.
        stats : TrainingStats
            Statistics of the clean training features.
        **params
            Parameters as returned by ``validate``; missing ones take their defaults.
            ``fraction`` = f < 1 first picks each row independently with probability f
            (Jenga's row fraction) and corrupts only those rows; the others come back
            byte-identical, and the rates are measured over the picked rows.

        Returns
        -------
        Corrupted
        """
        X = np.array(X, dtype=np.float64, copy=True)
        y = np.array(y, copy=True)
        if d == 0 or X.shape[0] == 0:
            return Corrupted(X=X, y=y, realised_rate=0.0, changed_share=0.0)
        params = {**self.defaults, **params}
        fraction = params.pop("fraction", 1.0)
        if fraction < 1.0:
            rows = np.flatnonzero(rng.random(X.shape[0]) < fraction)
            return patch_rows(X, y, rows, self(X[rows], y[rows], d, rng, stats, **params))
        return self._apply(X, y, float(d), rng, stats, **params)

    @abstractmethod
    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        **params: Any,
    ) -> Corrupted:
        """Corrupt the private copies ``X`` and ``y`` (free to modify) at ``d`` > 0."""


class ColumnOperator(Operator):
    """An operator whose only parameter (besides ``fraction``) is ``columns``: the
    features it works on, by index (names are resolved before validation); every
    feature by default."""

    defaults: ClassVar[Mapping[str, Any]] = {"columns": None}

    def _validate(
        self, given: dict[str, object], *, n_features: int, n_classes: int
    ) -> dict[str, Any]:
        return column_param(given, self.name, n_features)

    def _apply(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        *,
        columns: tuple[int, ...] | None,
    ) -> Corrupted:
        return self._apply_columns(X, y, d, rng, stats, selected_columns(columns, X.shape[1]))

    @abstractmethod
    def _apply_columns(
        self,
        X: np.ndarray,
        y: np.ndarray,
        d: float,
        rng: np.random.Generator,
        stats: TrainingStats,
        selected: np.ndarray,
    ) -> Corrupted:
        """Corrupt the cells of the feature indices ``selected`` (resolved from
        ``columns``) in the private copies ``X`` and ``y`` at ``d`` > 0."""
