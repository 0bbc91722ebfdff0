"""Coverage of the printed intervals, verified by simulation with known truth (docs/statistics.md).

Each simulated study has n test samples of a K-class task, one prediction each. Its
top-label confidence follows a known law, c = lo + (1 − lo)·Beta(a, b) with lo = 1/K, and
the prediction is right with probability g(c), a known miscalibration; the rest of the
probability vector is spread evenly over the other K − 1 classes (for Brier and NLL).
``LAWS`` holds the three laws every interval must cover on:

- ``overconfident``: lo = ¼, Beta(5, 2), g(c) = c^1.7 (overconfident everywhere);
- ``crossing``: lo = ⅕, Beta(2.5, 1), g(c) = 0.05 + 0.88c (underconfident below
  c ≈ 0.42, overconfident above; Δ = ECE = 0.043, of the order of ECE's floor);
- ``calibrated``: lo = ½, Beta(2, 1), g(c) = c (every calibration error 0).

**The truth** of a metric is the population value of the same functional, by quadrature on
a fine grid of confidence levels c_i of equal probability mass w_i = 1/N (the midpoints of
N quantiles of the law, N = 200 000), each with right mass w_i·g(c_i) and wrong mass
w_i·(1 − g(c_i)): the binned metrics from the population sums of the same equal-width
bins; ACE from equal-mass bins at the population's quantiles; the rank metrics from the
level masses through the suite's own ``rank_metrics`` (which accepts weighted counts), but
AURC* = (1 − a) + a·ln a for accuracy a (its population limit); Cohen's d and the
point-biserial r from the moments of c among right and wrong predictions; a bin's accuracy
from the law between the bin's edges (for an equal-mass bin, between its smallest and
largest confidence in that study). The debiased calibration error's target is the
population root-mean-square binned error (Kumar et al. estimate its square without bias).

The studies go through the report's own code (``relcol.metrics.metric_tables`` for the
point estimates, ``relcol.analysis.bootstrap`` and ``metric_interval`` for the intervals),
each study under its own name, so each has its own bootstrap weights. The realised
coverage of a metric is the share of studies whose interval contains the truth; its Monte
Carlo standard error is √(p(1 − p)/studies). Metrics that print no interval
(``NO_INTERVAL``) are measured with the percentile interval they would otherwise get, so
the documentation of why they print none stays checked.

**Multi-label** (``multilabel_coverage_study``): each sample has one row per label, label k
following its own law (by default the three of ``LAWS``, so the labels differ), drawn
independently; the predicted outcome is 1 with probability ``positive_rate`` whatever c,
and the true one is the prediction when right, its opposite when wrong. The truth of a
label in the prediction-confidence mode is its law's; in the positive-class mode the law of
p = c (weight q, P(present) = g(c)) mixed with p = 1 − c (weight 1 − q, P(present) =
1 − g(c)); micro's the mixture of the labels' populations with equal weights (every sample
has every label), macro's the mean of the labels' values. The rows go through
``multilabel_pairs``, ``multilabel_calibration`` and ``multilabel_intervals``, as in the
report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from relcol.analysis._bootstrap import (
    ALPHA,
    INTERVAL_METRICS,
    MIN_BIN_SAMPLES,
    REPLICATES,
    TABLES,
    bin_intervals,
    bootstrap,
    metric_interval,
    percentile_interval,
    rank_metrics,
)
from relcol.analysis._multilabel import (
    MODES,
    interval_metrics,
    multilabel_calibration,
    multilabel_intervals,
    multilabel_pairs,
)
from relcol.metrics import CLIP_EPS as EPS
from relcol.metrics import metric_tables
from relcol.store import CELL

#: Levels of the quadrature grid.
GRID = 200_000
#: Every metric with replicates, in the tables' order.
METRICS = tuple(name for names in TABLES.values() for name in names)


@dataclass(frozen=True)
class Law:
    """The simulation's truth: c = lo + (1 − lo)·Beta(a, b), P(right | c) = g(c) with
    g(c) = intercept + slope·c^power; a task of K = round(1/lo) classes."""

    name: str
    lo: float
    a: float
    b: float
    power: float = 1.0
    intercept: float = 0.0
    slope: float = 1.0

    @property
    def classes(self) -> int:
        return round(1 / self.lo)

    def outcome(self, c: np.ndarray) -> np.ndarray:
        """g(c), the probability that a prediction stated with confidence c is right."""
        return self.intercept + self.slope * np.power(c, self.power)

    def confidence(self, rng: np.random.Generator, size) -> np.ndarray:
        return self.lo + (1 - self.lo) * rng.beta(self.a, self.b, size=size)

    def grid(self, levels: int = GRID) -> np.ndarray:
        """N confidence levels of equal probability 1/N, ascending (quantile midpoints)."""
        u = stats.beta(self.a, self.b).ppf((np.arange(levels) + 0.5) / levels)
        return self.lo + (1 - self.lo) * u

    def scores(self, c: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per confidence: the Brier and NLL terms of a right and of a wrong prediction (the
        other K − 1 classes share 1 − c evenly; a wrong prediction's class is one of them)."""
        k = self.classes
        other = (1 - c) / (k - 1)
        right_brier = (1 - c) ** 2 + (k - 1) * other**2
        wrong_brier = c**2 + (1 - other) ** 2 + (k - 2) * other**2
        return {
            "brier": (right_brier, wrong_brier),
            "nll": (-np.log(np.maximum(c, EPS)), -np.log(np.maximum(other, EPS))),
        }

    def truth(
        self, bins: int = 15, *, coverage: float = 0.8, risk: float = 0.05, levels: int = GRID
    ) -> dict[str, float]:
        """The population value of every metric of ``METRICS`` (quadrature on the grid)."""
        c = self.grid(levels)
        w = np.full(levels, 1.0 / levels)
        g = self.outcome(c)
        right, wrong = w * g, w * (1 - g)
        accuracy = right.sum()
        out = population_scores(c, w, g)
        width = np.maximum(np.ceil(c * bins) - 1, 0).astype(np.int64)
        mass = np.arange(levels) * bins // levels
        sums = {
            key: [np.bincount(index, weights=v, minlength=bins) for v in (w, w * c, right)]
            for key, index in (("width", width), ("mass", mass))
        }
        p, conf, acc = sums["width"]
        present = p > 0
        signed = (conf - acc)[present]  # > 0: an overconfident bin
        error = np.abs(signed)
        out["ece"] = error.sum()
        out["ece_over"] = np.maximum(signed, 0.0).sum()
        out["ece_under"] = np.maximum(-signed, 0.0).sum()
        out["mce"] = (error / p[present]).max()
        reliability = (error**2 / p[present]).sum()
        out["rmsce"] = out["ece_debiased"] = np.sqrt(reliability)
        out["ece_excess"] = out["ece"]  # ECE₀ estimates the estimator's floor, not the truth
        out["ace"] = np.abs(sums["mass"][2] - sums["mass"][1]).sum()
        out["brier_reliability"] = reliability
        resolution = (acc[present] / p[present] - accuracy) ** 2 * p[present]
        out["brier_resolution"] = resolution.sum()
        out["brier_uncertainty"] = accuracy * (1 - accuracy)
        out["brier_within"] = (
            out["brier_top"] - reliability + out["brier_resolution"] - out["brier_uncertainty"]
        )
        for name, (if_right, if_wrong) in self.scores(c).items():
            out[name] = (right * if_right + wrong * if_wrong).sum()
        out |= population_ranks(c, g, coverage=coverage, risk=risk)
        return {name: float(value) for name, value in out.items()}

    def bin_accuracy(self, lower: np.ndarray, upper: np.ndarray, levels: int = GRID) -> np.ndarray:
        """E[g(c) | lower < c ≤ upper] for each pair of edges (quadrature on the grid; a
        pair with no level between gets g at its midpoint)."""
        c = self.grid(levels)
        right = np.concatenate([[0.0], np.cumsum(self.outcome(c))])
        start = np.searchsorted(c, lower, side="right")
        stop = np.searchsorted(c, upper, side="right")
        count = stop - start
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = (right[stop] - right[start]) / count
        return np.where(count > 0, inside, self.outcome((np.asarray(lower) + upper) / 2))


def population_scores(c: np.ndarray, w: np.ndarray, g: np.ndarray) -> dict[str, float]:
    """accuracy, mean_confidence, gap, abs_gap, brier_top and nll_top of a population whose
    confidence takes level c_i with probability w_i (Σ w = 1) and is right with probability
    g_i there."""
    right, wrong = w * g, w * (1 - g)
    accuracy, confidence = right.sum(), (w * c).sum()
    clipped = np.clip(c, EPS, 1 - EPS)
    return {
        "accuracy": accuracy,
        "mean_confidence": confidence,
        "gap": confidence - accuracy,
        "abs_gap": abs(confidence - accuracy),
        "brier_top": (w * c * c - 2 * right * c + right).sum(),
        "nll_top": -(right * np.log(clipped) + wrong * np.log1p(-clipped)).sum(),
    }


def population_ranks(
    c: np.ndarray, g: np.ndarray, *, coverage: float = 0.8, risk: float = 0.05
) -> dict[str, float]:
    """The rank and moment metrics (AUROC … E-AURC, Cohen's d, point-biserial r) of a
    population of levels c_i of equal probability, ascending, each right with probability
    g_i there."""
    w = np.full(len(c), 1.0 / len(c))
    right, wrong = w * g, w * (1 - g)
    accuracy, confidence = right.sum(), (w * c).sum()
    # counts g and 1 − g per level (scaled by N): ``rank_metrics`` takes counts, and a
    # level then always holds one row's worth of mass
    out = {name: float(value) for name, value in rank_metrics(g, 1 - g, coverage, risk).items()}
    out["aurc_optimal"] = (1 - accuracy) + accuracy * np.log(accuracy)
    out["e_aurc"] = out["aurc"] - out["aurc_optimal"]
    mean1, mean0 = (right * c).sum() / accuracy, (wrong * c).sum() / (1 - accuracy)
    var1 = (right * c * c).sum() / accuracy - mean1**2
    var0 = (wrong * c * c).sum() / (1 - accuracy) - mean0**2
    out["cohens_d"] = (mean1 - mean0) / np.sqrt((var1 + var0) / 2)
    var_c = (w * c * c).sum() - confidence**2
    covariance = (right * c).sum() - confidence * accuracy
    out["point_biserial"] = covariance / np.sqrt(var_c * accuracy * (1 - accuracy))
    return out


#: The laws every interval must cover on (docs/statistics.md).
LAWS: Mapping[str, Law] = {
    law.name: law
    for law in (
        Law("overconfident", lo=0.25, a=5.0, b=2.0, power=1.7),
        Law("crossing", lo=0.2, a=2.5, b=1.0, intercept=0.05, slope=0.88),
        Law("calibrated", lo=0.5, a=2.0, b=1.0),
    )
}


def simulate_studies(
    studies: int, n: int, *, law: Law = LAWS["crossing"], seed: int = 0, prefix: str = "coverage"
) -> pl.DataFrame:
    """The long-table rows of ``studies`` simulated studies of ``n`` samples each.

    Study i is named ``<prefix>-<i>`` (one dataset, model, corruption ``none``, severity 0,
    seed 0, repeat 0; sample_id 0 … n − 1). The predicted class is 0 with probability c;
    ``y_true`` is 0 when the prediction is right, else 1; ``proba`` gives the other
    K − 1 classes (1 − c)/(K − 1) each.
    """
    rng = np.random.default_rng(seed)
    c = law.confidence(rng, (studies, n))
    right = rng.random((studies, n)) < law.outcome(c)
    return law_rows(prefix, c, right, law.classes)


def law_rows(
    prefix: str,
    c: np.ndarray,
    right: np.ndarray,
    classes: int,
    *,
    model: str = "law",
    first: int = 0,
) -> pl.DataFrame:
    """Long-table rows of simulated studies from their confidences ``c`` and outcomes
    ``right`` (studies × n arrays), as ``simulate_studies`` describes; ``model`` names the
    model and the sample_ids run from ``first``."""
    studies, n = c.shape
    total = studies * n
    proba = np.repeat(((1 - c) / (classes - 1)).reshape(-1, 1), classes, axis=1)
    proba[:, 0] = c.ravel()
    return pl.DataFrame(
        {
            **_study_columns(prefix, studies, n),
            "sample_id": np.tile(np.arange(first, first + n, dtype=np.int64), studies),
            "label": pl.Series([None] * total, dtype=pl.Int32),
            "confidence": c.ravel(),
            "correct": right.ravel(),
            "y_true": np.where(right.ravel(), 0, 1).astype(np.int32),
            "proba": pl.Series(proba).cast(pl.List(pl.Float64)),
        }
    ).with_columns(model=pl.lit(model))


def _study_columns(prefix: str, studies: int, rows: int) -> dict[str, object]:
    """The key columns of ``studies`` simulated studies of ``rows`` rows each, named
    ``<prefix>-<i>``: one dataset, model, corruption ``none``, severity 0, seed 0, repeat 0."""
    total = studies * rows
    return {
        "study": np.repeat(np.array([f"{prefix}-{i}" for i in range(studies)]), rows),
        "dataset": "simulated",
        "model": "law",
        "corruption": "none",
        "severity": np.zeros(total),
        "seed": np.zeros(total, dtype=np.int32),
        "repeat": np.zeros(total, dtype=np.int32),
    }


def monte_carlo_error(share: float, studies: int) -> float:
    """The Monte Carlo standard error √(p(1 − p)/studies) of a share p of ``studies``."""
    return float(np.sqrt(share * (1 - share) / studies))


@dataclass(frozen=True)
class CoverageResult:
    """Realised coverage of the intervals over simulated studies with known truth.

    Attributes
    ----------
    law
        The law's name.
    coverage
        Metric → share of studies whose interval contains the population value: every
        metric of ``METRICS`` (those of ``NO_INTERVAL`` with their percentile interval).
    truth
        The population values.
    mean_estimate
        Metric → mean point estimate over the studies (its bias is this minus the truth).
    table
        One row per study: each metric's estimate, ``_lo``, ``_hi`` and ``_covered``.
    bin_table
        One row per study × binning × bin with rows: ``n``, ``accuracy``, its interval
        (``accuracy_lo``/``accuracy_hi``, the report's rule), the percentile interval of
        the bootstrap (``percentile_lo``/``percentile_hi``) and the ``truth``.
    """

    law: str
    studies: int
    n: int
    replicates: int
    alpha: float
    bins: int
    truth: dict[str, float]
    coverage: dict[str, float]
    mean_estimate: dict[str, float]
    table: pl.DataFrame = field(repr=False)
    bin_table: pl.DataFrame = field(repr=False)

    def standard_error(self, metric: str) -> float:
        """Monte Carlo standard error of a realised coverage."""
        return monte_carlo_error(self.coverage[metric], self.studies)

    def bin_coverage(self, binning: str = "width", low: int = MIN_BIN_SAMPLES) -> dict[str, float]:
        """Coverage of the per-bin accuracy intervals over the bins with ≥ ``low`` rows:
        ``rule`` (the report's interval), ``percentile`` (the bootstrap's), ``bins``."""
        chosen = self.bin_table.filter((pl.col("binning") == binning) & (pl.col("n") >= low))
        truth = pl.col("truth")
        return {
            "rule": chosen.select(
                ((pl.col("accuracy_lo") <= truth) & (truth <= pl.col("accuracy_hi"))).mean()
            ).item(),
            "percentile": chosen.select(
                ((pl.col("percentile_lo") <= truth) & (truth <= pl.col("percentile_hi"))).mean()
            ).item(),
            "bins": float(chosen.height),
        }


def coverage_study(
    studies: int = 500,
    n: int = 300,
    *,
    law: Law | str = "crossing",
    replicates: int = REPLICATES,
    alpha: float = ALPHA,
    bins: int = 15,
    seed: int = 0,
    metrics: Iterable[str] = METRICS,
) -> CoverageResult:
    """Simulate ``studies`` studies of ``n`` samples and measure the intervals' coverage.

    Examples
    --------
    >>> from relcol.analysis import coverage_study
    >>> result = coverage_study(studies=20, n=100, replicates=200)  # doctest: +SKIP
    >>> result.coverage["accuracy"]                                   # doctest: +SKIP
    0.95
    """
    law = LAWS[law] if isinstance(law, str) else law
    rows = simulate_studies(studies, n, law=law, seed=seed)
    frames, points = point_estimates(rows, bins)
    result = bootstrap(rows, replicates=replicates, bins=bins, cells=points.select(*CELL, "n"))
    order = result.cells.join(
        points, on=list(CELL), how="left", nulls_equal=True, maintain_order="left"
    )
    truth = law.truth(bins)
    columns: dict[str, np.ndarray] = {"study": order["study"].to_numpy()}
    coverage, mean_estimate = {}, {}
    for metric in metrics:
        if metric in INTERVAL_METRICS:
            lo, hi = metric_interval(result, metric, alpha)
        elif metric == "ece_excess":  # ECE's interval shifted by ECE₀ (held at its estimate)
            lo, hi = percentile_interval(result.values["ece"], alpha)
            null = order["ece_null"].to_numpy()
            lo, hi = lo - null, hi - null
        else:
            lo, hi = percentile_interval(result.values[metric], alpha)
        estimate = order[metric].cast(pl.Float64).to_numpy()
        inside = (lo <= truth[metric]) & (truth[metric] <= hi)
        columns |= {
            metric: estimate,
            f"{metric}_lo": lo,
            f"{metric}_hi": hi,
            f"{metric}_covered": inside,
        }
        coverage[metric] = float(inside.mean())
        mean_estimate[metric] = float(np.nanmean(estimate))
    return CoverageResult(
        law=law.name,
        studies=studies,
        n=n,
        replicates=replicates,
        alpha=alpha,
        bins=bins,
        truth=truth,
        coverage=coverage,
        mean_estimate=mean_estimate,
        table=pl.DataFrame(columns),
        bin_table=_bin_table(result, frames["calibration_bins"], law, alpha),
    )


def point_estimates(rows: pl.DataFrame, bins: int) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """The report's metric tables of simulated ``rows`` and one row per cell with every
    metric (calibration, discrimination and selective joined)."""
    # one row per sample and cell (one seed, one repeat): every row is its own event
    tables = metric_tables(rows, CELL, bins=bins, draws=100, events=())
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    frames = dict(zip(names, pl.collect_all([tables[name] for name in names]), strict=True))
    points = frames["calibration"]
    for name in ("discrimination", "selective"):
        extra = [c for c in frames[name].columns if c not in points.columns]
        points = points.join(
            frames[name].select(*CELL, *extra), on=list(CELL), how="left", nulls_equal=True
        )
    return frames, points


def _bin_table(result, bins_table: pl.DataFrame, law: Law, alpha: float) -> pl.DataFrame:
    """Per study × binning × non-empty bin: the report's interval, the percentile one and
    the truth between the bin's edges (equal-width: the fixed edges; equal-mass: the bin's
    smallest and largest confidence)."""
    keys = [*CELL, "binning", "bin"]
    rule = bin_intervals(result, alpha).drop("samples")
    frames = []
    for binning, values in result.bins.items():
        n_cells, count, replicates = values.shape
        lo, hi = percentile_interval(values.reshape(n_cells * count, replicates), alpha)
        frames.append(
            result.cells.join(pl.DataFrame({"bin": np.arange(count)}), how="cross").with_columns(
                binning=pl.lit(binning), percentile_lo=lo, percentile_hi=hi
            )
        )
    table = (
        bins_table.select(*keys, "bin_lower", "bin_upper", "n", "accuracy")
        .join(rule, on=keys, how="left", nulls_equal=True)
        .join(pl.concat(frames), on=keys, how="left", nulls_equal=True)
    )
    lower = table["bin_lower"].to_numpy().copy()
    mass = (table["binning"] == "mass").to_numpy()
    # an equal-mass bin holds its smallest confidence: the edge just below it
    lower[mass] = np.nextafter(lower[mass], -np.inf)
    truth = law.bin_accuracy(lower, table["bin_upper"].to_numpy())
    return table.with_columns(truth=truth).drop("bin_lower", "bin_upper")


#: The laws of the simulated labels of ``multilabel_coverage_study`` (one label each).
MULTILABEL_LAWS = ("overconfident", "crossing", "calibrated")


def multilabel_truth(
    laws: Iterable[Law | str] = MULTILABEL_LAWS, *, positive_rate: float = 0.4, levels: int = GRID
) -> dict[tuple[str, str, str], float]:
    """(mode, average, metric) → population value, ``average`` a label's law name, ``micro``
    or ``macro``, for every metric of ``MULTILABEL_INTERVALS`` and, in the
    prediction-confidence mode, of ``RANK_INTERVALS``."""
    laws = [LAWS[law] if isinstance(law, str) else law for law in laws]
    w = np.full(levels, 1.0 / levels)
    q = positive_rate
    out: dict[tuple[str, str, str], float] = {}
    for mode in MODES:
        populations = []
        for law in laws:
            c = law.grid(levels)
            g = law.outcome(c)
            if mode == "positive_class":
                c, g = np.r_[c, 1 - c], np.r_[g, 1 - g]
                population = (c, np.r_[w * q, w * (1 - q)], g)
            else:
                population = (c, w, g)
            populations.append(population)
            out |= {
                (mode, law.name, m): float(v) for m, v in population_scores(*population).items()
            }
        pooled = [np.concatenate(parts) for parts in zip(*populations, strict=True)]
        pooled[1] = pooled[1] / len(laws)
        out |= {(mode, "micro", m): float(v) for m, v in population_scores(*pooled).items()}
        if mode == "prediction_confidence":  # the rank metrics: equal-mass levels, sorted
            for law, (c, _, g) in zip(laws, populations, strict=True):
                out |= {(mode, law.name, m): float(v) for m, v in population_ranks(c, g).items()}
            order = np.argsort(pooled[0], kind="stable")
            ranks = population_ranks(pooled[0][order], pooled[2][order])
            out |= {(mode, "micro", m): float(v) for m, v in ranks.items()}
        for metric in interval_metrics(mode):
            labels = [out[(mode, law.name, metric)] for law in laws]
            out[(mode, "macro", metric)] = float(np.mean(labels))
    return {key: value for key, value in out.items() if key[2] in interval_metrics(key[0])}


def simulate_multilabel(
    studies: int,
    n: int,
    *,
    laws: Iterable[Law | str] = MULTILABEL_LAWS,
    positive_rate: float = 0.4,
    seed: int = 0,
    prefix: str = "multilabel",
) -> pl.DataFrame:
    """The long-table rows of ``studies`` simulated multi-label studies of ``n`` samples,
    label k (code k) following the k-th law; study i is named ``<prefix>-<i>``."""
    laws = [LAWS[law] if isinstance(law, str) else law for law in laws]
    rng = np.random.default_rng(seed)
    shape = (studies, n, len(laws))
    c = np.stack([law.confidence(rng, shape[:2]) for law in laws], axis=2)
    g = np.stack([law.outcome(c[..., k]) for k, law in enumerate(laws)], axis=2)
    right = rng.random(shape) < g
    y_pred = (rng.random(shape) < positive_rate).astype(np.int32)
    return pl.DataFrame(
        {
            **_study_columns(prefix, studies, n * len(laws)),
            "sample_id": np.tile(np.repeat(np.arange(n, dtype=np.int64), len(laws)), studies),
            "label": np.tile(np.arange(len(laws), dtype=np.int32), studies * n),
            "y_true": np.where(right, y_pred, 1 - y_pred).ravel(),
            "y_pred": y_pred.ravel(),
            "confidence": c.ravel(),
            "correct": right.ravel(),
        }
    )


@dataclass(frozen=True)
class MultilabelCoverage:
    """Realised coverage of the multi-label intervals over simulated studies.

    ``coverage`` and ``truth`` map (mode, average, metric) to the share of studies whose
    interval contains the population value and to that value (``mean_estimate``: the mean
    point estimate, for the calibration metrics); ``average`` is a label's law
    name, ``micro`` or ``macro``. Macro metrics of ``NO_MACRO_INTERVAL`` are measured with
    the percentile interval of the mean over labels they would otherwise print.
    """

    studies: int
    n: int
    replicates: int
    truth: dict[tuple[str, str, str], float]
    coverage: dict[tuple[str, str, str], float]
    mean_estimate: dict[tuple[str, str, str], float]

    def standard_error(self, key: tuple[str, str, str]) -> float:
        """Monte Carlo standard error of a realised coverage."""
        return monte_carlo_error(self.coverage[key], self.studies)


def multilabel_coverage_study(
    studies: int = 500,
    n: int = 200,
    *,
    laws: Iterable[Law | str] = MULTILABEL_LAWS,
    positive_rate: float = 0.4,
    replicates: int = REPLICATES,
    alpha: float = ALPHA,
    bins: int = 15,
    seed: int = 0,
) -> MultilabelCoverage:
    """Simulate ``studies`` multi-label studies and measure the per-label, micro and macro
    intervals' coverage (every metric of ``MULTILABEL_INTERVALS``, both modes, and of
    ``RANK_INTERVALS`` in the prediction-confidence mode)."""
    laws = [LAWS[law] if isinstance(law, str) else law for law in laws]
    rows = simulate_multilabel(studies, n, laws=laws, positive_rate=positive_rate, seed=seed)
    pairs = multilabel_pairs(rows).collect()
    points = multilabel_calibration(pairs, bins=bins).filter(pl.col("target") == "binary")
    # every interval, also those of NO_MACRO_INTERVAL: measured with what they would print
    bounds = multilabel_intervals(
        pairs, replicates=replicates, alpha=alpha, bins=bins, seed=seed, withheld=()
    )
    keys = [*CELL, "mode", "target", "average"]
    table = points.collect().join(bounds, on=keys, how="left", nulls_equal=True)
    names = {k: law.name for k, law in enumerate(laws)}
    table = table.with_columns(
        average=pl.when(pl.col("average") == "label")
        .then(pl.col("label").replace_strict(names, return_dtype=pl.String))
        .otherwise(pl.col("average"))
    )
    truth = multilabel_truth(laws, positive_rate=positive_rate)
    coverage, mean_estimate = {}, {}
    for (mode, average), part in table.partition_by(
        "mode", "average", as_dict=True, maintain_order=True
    ).items():
        for metric in interval_metrics(mode):
            value = truth[(mode, average, metric)]
            inside = (part[f"{metric}_lo"] <= value) & (value <= part[f"{metric}_hi"])
            coverage[(mode, average, metric)] = float(inside.fill_null(False).mean())
            if metric in part.columns:  # the rank metrics' point estimates are elsewhere
                mean_estimate[(mode, average, metric)] = float(part[metric].mean())
    return MultilabelCoverage(studies, n, replicates, truth, coverage, mean_estimate)
