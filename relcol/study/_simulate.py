"""Simulated consistency studies: replicate runs with known error behaviour, no models.

After the simulations of the samplewise-consistency seed: the pattern of a
classifier's errors is treated as a random variable, so the consistency metrics can be
watched on runs whose dependence is known by construction. Each simulated condition is
one ``model`` of the long table, each class distribution one ``dataset``, the maximum error
proportion r its ``severity`` (corruption ``max_error_rate``) and each run one ``seed``
(with ``repeat`` 0), so ``relcol report`` and the ``consistency`` view show the metrics
along the ``seed`` axis like any study.

Per dataset (class-distribution family) the true labels y of n samples are drawn once from
class probabilities p (sorted, largest first) of one family:

- ``balanced``: pᵢ = 1/K;
- ``uniform``: pᵢ ∝ Uᵢ, Uᵢ ~ U(0, 1);
- ``multimodal``: m ~ U{1, …, K−1} classes weigh K/m, the others 1;
- ``exponential``: pᵢ ∝ tᵢ^s with t = (1/K, 2/K, …, 1) and s ~ U(0.1, 20) (the published
  simulation's ``linspace(0, 1, K)`` without its 0, so every class can occur).

A wrong-looking prediction is a draw from p̂ = p (random errors that keep the class
balance; a draw can hit the true class by chance). With m = round(r·n) and τ runs, the four
conditions (``model`` = ``sim:<dependence>-<error set>``) are:

- ``independent-fixed``: one error set S (|S| = m) for all runs; run i predicts a fresh draw
  on S and y elsewhere;
- ``independent-variable``: each run draws its own Sᵢ (|Sᵢ| = m) and predicts a fresh draw
  there, y elsewhere;
- ``dependent-fixed``: a base prediction ŷ_base (a draw on S, y elsewhere); run i redraws a
  share q (``perturbation``) of S and keeps ŷ_base everywhere else;
- ``dependent-variable``: a base error set S_base and prediction ŷ_base; run i swaps a share
  q of S_base for as many samples outside it (where it predicts fresh draws) and keeps
  ŷ_base on the rest of S_base.

Each run is ``np.where(mask, fresh, base)``: the original demo code concatenated the fresh
and base predictions where it meant to choose between them, so its "dependent" runs were not
dependent. ``tests/test_simulate.py`` checks that dependent runs agree far more than
independent ones.

Confidence: every row states its condition's expected accuracy, 1 − (m/n)·(1 − Σ_c p_c·p̂_c):
calibrated on average and the same for every sample, so only consistency varies.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import polars as pl

from relcol.checks import check_int
from relcol.data import MAX_CODES
from relcol.errors import ParameterError
from relcol.store import IngestResult, Warehouse, check_name
from relcol.study._numerics import versions
from relcol.study._runner import MAX_ROWS, rng_for

FAMILIES = ("balanced", "uniform", "multimodal", "exponential")
CONDITIONS = (
    "independent-fixed",
    "independent-variable",
    "dependent-fixed",
    "dependent-variable",
)
CORRUPTION = "max_error_rate"


@dataclass(frozen=True)
class ConsistencySimulation:
    """What a simulated consistency study draws; the same values give the same rows.

    Attributes
    ----------
    name
        Study name in the warehouse.
    samples
        Test samples n per dataset.
    replicates
        Runs τ per condition (the ``seed`` column, 0 … τ−1).
    classes
        Classes K.
    error_rates
        Maximum error proportions r (the ``severity`` grid), each in [0, 1].
    perturbation
        Share q of a dependent run's error set that differs from the base prediction.
    seed
        Seeds every draw.
    families, conditions
        Which class-distribution families (datasets) and conditions (models) to simulate.
    """

    name: str = "consistency-sim"
    samples: int = 1000
    replicates: int = 10
    classes: int = 10
    error_rates: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    perturbation: float = 0.1
    seed: int = 0
    families: tuple[str, ...] = FAMILIES
    conditions: tuple[str, ...] = field(default=CONDITIONS)

    def __post_init__(self) -> None:
        check_name(self.name)
        for attr, low in (("samples", 1), ("replicates", 2), ("classes", 2)):
            check_int(attr, getattr(self, attr), low)
        check_int("seed", self.seed, 0)
        rates = tuple(self.error_rates)
        if not rates or any(not 0 <= r <= 1 for r in rates) or list(rates) != sorted(set(rates)):
            raise ParameterError(
                f"error_rates must be strictly increasing values in [0, 1]. Got {rates!r}."
            )
        if not 0 <= self.perturbation <= 1:
            raise ParameterError(f"perturbation must be in [0, 1]. Got {self.perturbation!r}.")
        for attr, allowed in (("families", FAMILIES), ("conditions", CONDITIONS)):
            chosen = tuple(getattr(self, attr))
            if not chosen or any(c not in allowed for c in chosen):
                raise ParameterError(
                    f"{attr} must be a non-empty selection of {', '.join(allowed)}. Got {chosen!r}."
                )
        if self.classes > MAX_CODES:
            raise ParameterError(f"classes must be <= {MAX_CODES:,}. Got {self.classes!r}.")
        rows = (
            len(self.families) * len(self.conditions) * len(rates) * self.replicates * self.samples
        )
        if rows > MAX_ROWS:
            raise ParameterError(
                f"the simulation would write {rows:,} rows ({len(self.families)} datasets × "
                f"{len(self.conditions)} models × {len(rates)} error rates × {self.replicates} "
                f"replicates × {self.samples} samples), above the bound of {MAX_ROWS:,}; "
                "simulate fewer samples or replicates"
            )
        object.__setattr__(self, "error_rates", tuple(float(r) for r in rates))

    def _replace(self, **changes: object) -> ConsistencySimulation:
        return replace(self, **changes)

    @property
    def spec(self) -> str:
        """The simulation as canonical JSON: what ``runs.spec`` records."""
        return json.dumps({"simulation": "consistency", **asdict(self)}, sort_keys=True)


def class_probabilities(family: str, classes: int, rng: np.random.Generator) -> np.ndarray:
    """Class probabilities of one family, sorted largest first."""
    if family == "balanced":
        raw = np.ones(classes)
    elif family == "uniform":
        raw = rng.uniform(0, 1, classes)
    elif family == "multimodal":
        modes = int(rng.integers(1, classes))  # 1 … K−1
        raw = np.ones(classes)
        raw[:modes] = classes / modes
    elif family == "exponential":
        scale = rng.uniform(0.1, 20)
        raw = np.linspace(0, 1, classes + 1)[1:] ** scale
    else:
        raise ParameterError(f"family must be one of {', '.join(FAMILIES)}. Got {family!r}.")
    return np.sort(raw)[::-1] / raw.sum()


def simulate_predictions(
    y: np.ndarray,
    p: np.ndarray,
    condition: str,
    rate: float,
    replicates: int,
    perturbation: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The τ × n predictions of one condition at maximum error proportion ``rate``."""
    n = len(y)
    m = round(rate * n)
    classes = np.arange(len(p))

    def draw(size: int | tuple[int, ...]) -> np.ndarray:
        return rng.choice(classes, size=size, p=p)

    def subset(size: int, within: np.ndarray | None = None) -> np.ndarray:
        """A boolean mask of ``size`` samples drawn without replacement (from ``within``)."""
        pool = np.arange(n) if within is None else np.flatnonzero(within)
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(pool, size=size, replace=False)] = True
        return mask

    dependence, errors = condition.split("-")
    fixed = subset(m)
    if dependence == "independent":
        masks = np.stack([fixed if errors == "fixed" else subset(m) for _ in range(replicates)])
        return np.where(masks, draw((replicates, n)), y)
    base = np.where(fixed, draw(n), y)
    if errors == "fixed":
        redraw = fixed & (rng.random((replicates, n)) < perturbation)
        return np.where(redraw, draw((replicates, n)), base)
    moved = min(round(perturbation * m), n - m)
    runs = []
    for _ in range(replicates):
        dropped = subset(moved, within=fixed)
        added = subset(moved, within=~fixed)
        kept = fixed & ~dropped
        runs.append(np.where(kept, base, np.where(added, draw(n), y)))
    return np.stack(runs)


def simulate_consistency(sim: ConsistencySimulation) -> pl.DataFrame:
    """Every row of a simulated consistency study, in the long table's columns.

    Deterministic: each (dataset, condition, rate) draws from a generator keyed by
    (seed, dataset, condition, rate), the labels from one keyed by (seed, dataset).
    """
    n, tau = sim.samples, sim.replicates
    parts = []
    for family in sim.families:
        rng = rng_for("consistency-sim", sim.seed, family)
        p = class_probabilities(family, sim.classes, rng)
        y = rng.choice(sim.classes, size=n, p=p).astype(np.int32)
        chance_hit = float(np.sum(p * p))  # P(a fresh draw from p̂ = p is right)
        for condition in sim.conditions:
            for rate in sim.error_rates:
                draws = rng_for("consistency-sim", sim.seed, family, condition, rate)
                y_pred = simulate_predictions(
                    y, p, condition, rate, tau, sim.perturbation, draws
                ).astype(np.int32)
                confidence = 1 - round(rate * n) / n * (1 - chance_hit)
                parts.append(
                    pl.DataFrame(
                        {
                            "dataset": family,
                            "model": f"sim:{condition}",
                            "severity": rate,
                            "seed": np.repeat(np.arange(tau, dtype=np.int32), n),
                            "sample_id": np.tile(np.arange(n, dtype=np.int64), tau),
                            "y_true": np.tile(y, tau),
                            "y_pred": y_pred.ravel(),
                            "confidence": confidence,
                        }
                    )
                )
    return pl.concat(parts).with_columns(
        study=pl.lit(sim.name),
        corruption=pl.lit(CORRUPTION),
        repeat=pl.lit(0, pl.Int32),
        label=pl.lit(None, pl.Int32),
        y_clean=pl.col("y_true"),
        correct=pl.col("y_pred") == pl.col("y_true"),
        proba=pl.lit(None, pl.List(pl.Float32)),
    )


def run_simulation(
    sim: ConsistencySimulation, warehouse: Warehouse, *, replace: bool = False
) -> IngestResult:
    """Simulate ``sim`` and commit it to ``warehouse`` atomically, like a study.

    The run is recorded in ``runs`` with ``kind = "simulation"`` and the simulation's
    JSON as its spec; its run id is a content address of that spec and the package
    versions, so the same simulation gives byte-identical files.
    """
    started = datetime.now(UTC)
    rows = simulate_consistency(sim)
    classes = pl.DataFrame(
        {
            "dataset": np.repeat(np.array(sim.families), sim.classes),
            "code": np.tile(np.arange(sim.classes, dtype=np.int32), len(sim.families)),
            "name": [f"class {c}" for _ in sim.families for c in range(sim.classes)],
        }
    )
    return warehouse.commit(
        sim.name,
        kind="simulation",
        spec=sim.spec,
        versions=versions(),
        cells=len(sim.families) * len(sim.conditions) * len(sim.error_rates),
        parts=rows.partition_by("dataset", maintain_order=True),
        sides={"classes": classes},
        prefix="s",
        started_at=started,
        replace=replace,
    )
