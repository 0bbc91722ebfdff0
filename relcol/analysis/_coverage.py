"""Coverage of the bootstrap intervals, verified by simulation with known truth (METRICS.md §6).

Each simulated study has n test samples, one prediction each. The stated confidence
follows a known law, c = ½ + ½·Beta(a, b) (a top-label confidence of a binary task), and
the prediction is right with probability g(c) = σ(s·logit(c) + t), a known miscalibration
(by default s = 0.6, t = 0.3: underconfident below c ≈ 0.68, overconfident above, as a
model whose temperature is too low). So the population values are known exactly (by
quadrature):

- accuracy = E[g(c)], mean confidence = E[c], the gap Δ = E[c] − E[g(c)];
- the binned ECE = Σₘ |E[(g(c) − c)·1{c ∈ bin m}]| on the report's equal-width bins: the
  limit of the estimator as n grows, which is what an interval for ECE can cover.

The studies go through the same code as a report (``relcol.metrics.calibration`` for the
point estimates and ECE₀, ``relcol.analysis.bootstrap`` for the intervals), each study
under its own name, so each has its own bootstrap weights. The realised coverage of a
metric is the share of studies whose interval contains the population value; its Monte
Carlo standard error is √(p(1 − p)/studies).

Measured (1000 studies, B = 1000, 95 % intervals; the README has the full table): with the
default law at n = 300, accuracy 0.955, Δ 0.949, ECE 0.651, ECE − ECE₀ 0.977; with a
calibrated law (g(c) = c, true ECE 0) at n = 300, accuracy 0.946, Δ 0.941, ECE 0.000,
ECE − ECE₀ 0.928 (mean ECE 0.042, mean ECE − ECE₀ 0.001: ECE₀ removes the floor).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import integrate, special, stats

from relcol.analysis._bootstrap import ALPHA, bootstrap, percentile_interval
from relcol.metrics import calibration
from relcol.store import CELL


@dataclass(frozen=True)
class Law:
    """The simulation's truth: c = ½ + ½·Beta(a, b), P(right | c) = σ(slope·logit(c) + shift)."""

    a: float = 3.0
    b: float = 1.5
    slope: float = 0.6
    shift: float = 0.3

    def outcome(self, c: np.ndarray) -> np.ndarray:
        """g(c), the probability that a prediction stated with confidence c is right."""
        return special.expit(self.slope * special.logit(c) + self.shift)

    def truth(self, bins: int = 15) -> dict[str, float]:
        """Population accuracy, mean confidence, gap and binned ECE (quadrature)."""
        density = stats.beta(self.a, self.b)

        def integral(function, low: float = 0.5, high: float = 1.0) -> float:
            # over c in (low, high], with c = ½ + ½u, u ~ Beta(a, b)
            u_low, u_high = 2 * low - 1, 2 * high - 1
            value, _ = integrate.quad(
                lambda u: function(0.5 + 0.5 * u) * density.pdf(u), u_low, u_high, limit=200
            )
            return value

        accuracy = integral(self.outcome)
        confidence = integral(lambda c: c)
        ece = 0.0
        for m in range(bins):
            low, high = max(m / bins, 0.5), min((m + 1) / bins, 1.0)
            if high > low:
                ece += abs(integral(lambda c: self.outcome(c) - c, low, high))
        return {
            "accuracy": accuracy,
            "mean_confidence": confidence,
            "gap": confidence - accuracy,
            "ece": ece,
        }


def simulate_studies(
    studies: int, n: int, *, law: Law = Law(), seed: int = 0, prefix: str = "coverage"
) -> pl.DataFrame:
    """The long-table rows of ``studies`` simulated studies of ``n`` samples each.

    Study i is named ``<prefix>-<i>`` (one dataset, model, corruption ``none``, severity 0,
    seed 0, repeat 0; sample_id 0 … n − 1).
    """
    rng = np.random.default_rng(seed)
    c = 0.5 + 0.5 * rng.beta(law.a, law.b, size=(studies, n))
    right = rng.random((studies, n)) < law.outcome(c)
    names = np.array([f"{prefix}-{i}" for i in range(studies)])
    total = studies * n
    return pl.DataFrame(
        {
            "study": np.repeat(names, n),
            "dataset": "simulated",
            "model": "law",
            "corruption": "none",
            "severity": np.zeros(total),
            "seed": np.zeros(total, dtype=np.int32),
            "repeat": np.zeros(total, dtype=np.int32),
            "sample_id": np.tile(np.arange(n, dtype=np.int64), studies),
            "label": pl.Series([None] * total, dtype=pl.Int32),
            "confidence": c.ravel(),
            "correct": right.ravel(),
        }
    )


@dataclass(frozen=True)
class CoverageResult:
    """Realised coverage of the intervals over simulated studies with known truth.

    Attributes
    ----------
    coverage
        Metric → share of studies whose interval contains the population value:
        ``accuracy``, ``gap``, ``ece`` and ``ece_excess`` (the interval of ECE − ECE₀
        against the population ECE).
    truth
        The population values (``ece_excess``'s target is the population ECE).
    mean_estimate
        Metric → mean point estimate over the studies (its bias is this minus the truth).
    table
        One row per study: each metric's estimate, ``_lo``, ``_hi`` and ``_covered``.
    """

    studies: int
    n: int
    replicates: int
    alpha: float
    bins: int
    truth: dict[str, float]
    coverage: dict[str, float]
    mean_estimate: dict[str, float]
    table: pl.DataFrame = field(repr=False)

    def standard_error(self, metric: str) -> float:
        """Monte Carlo standard error of a realised coverage."""
        p = self.coverage[metric]
        return float(np.sqrt(p * (1 - p) / self.studies))


def coverage_study(
    studies: int = 1000,
    n: int = 300,
    *,
    replicates: int = 1000,
    alpha: float = ALPHA,
    bins: int = 15,
    law: Law = Law(),
    seed: int = 0,
) -> CoverageResult:
    """Simulate ``studies`` studies of ``n`` samples and measure the intervals' coverage.

    Examples
    --------
    >>> from relcol.analysis import coverage_study
    >>> result = coverage_study(studies=20, n=100, replicates=200)  # doctest: +SKIP
    >>> sorted(result.coverage)                                      # doctest: +SKIP
    ['accuracy', 'ece', 'ece_excess', 'gap']
    """
    rows = simulate_studies(studies, n, law=law, seed=seed)
    # one row per sample and cell (one seed, one repeat): every row is its own event
    points = calibration(rows, CELL, bins=bins, proba=None, events=()).collect()
    result = bootstrap(
        rows, replicates=replicates, bins=bins, proba=False, cells=points.select(*CELL, "n")
    )
    order = result.cells.join(
        points, on=list(CELL), how="left", nulls_equal=True, maintain_order="left"
    )
    truth = law.truth(bins)
    truth["ece_excess"] = truth["ece"]
    columns: dict[str, np.ndarray] = {"study": order["study"].to_numpy()}
    coverage, mean_estimate = {}, {}
    for metric in ("accuracy", "gap", "ece"):
        lo, hi = percentile_interval(result.values[metric], alpha)
        estimate = order[metric].to_numpy()
        columns |= {metric: estimate, f"{metric}_lo": lo, f"{metric}_hi": hi}
    null = order["ece_null"].to_numpy()
    columns |= {
        "ece_excess": order["ece_excess"].to_numpy(),
        "ece_excess_lo": columns["ece_lo"] - null,
        "ece_excess_hi": columns["ece_hi"] - null,
    }
    for metric in ("accuracy", "gap", "ece", "ece_excess"):
        inside = (columns[f"{metric}_lo"] <= truth[metric]) & (
            truth[metric] <= columns[f"{metric}_hi"]
        )
        columns[f"{metric}_covered"] = inside
        coverage[metric] = float(inside.mean())
        mean_estimate[metric] = float(np.mean(columns[metric]))
    return CoverageResult(
        studies=studies,
        n=n,
        replicates=replicates,
        alpha=alpha,
        bins=bins,
        truth=truth,
        coverage=coverage,
        mean_estimate=mean_estimate,
        table=pl.DataFrame(columns),
    )
