"""False alarms of the trends and verdicts, measured by simulation with known truth
(docs/statistics.md).

Each simulated **curve** is a study of its own: one test set of ``samples`` samples, a model
trained with ``seeds`` seeds, evaluated clean and at the severities of ``SEVERITIES`` with
``repeats`` corruption draws each, stored as long-table rows and sent through the same code
as a report (``relcol.metrics.metric_tables`` for the point estimates and ECE₀,
``relcol.analysis.statistical_tables`` for the bootstrap, trends and thresholds).

The generator keeps what makes real curves dependent:

- sample s has a latent margin aₛ ~ N(1.2, 0.8²); seed k's model sees aₛ + σ_seed·εₛₖ;
- the clean prediction adds a fixed perturbation σ·ηₛₖ (the same at every repeat: the
  clean rows of the repeats are copies, as in a real study), a corruption at d > 0 a fresh
  one per repeat, and scales the margin by 1 − ``drop``·d;
- the stated confidence is c = σ(|x|) ∈ [½, 1), and the prediction is right when
  Uₛₖ < g(c) = c − ``gap`` − ``rise``·d − δₖ, with Uₛₖ one uniform per sample shared by
  every seed (and every severity) when ``shared`` (seeds then agree on most predictions),
  else one per seed, and δₖ ~ N(0, ``seed_gap``²) a seed's own miscalibration (training
  variation: the recipe's gap is ``gap`` + ``rise``·d, each trained model's is off by δₖ).

So the truth is known: the gap Δ equals ``gap`` (+ ``rise``·d) at every severity, and so does the binned
ECE (every bin has accuracy = confidence − ``gap``), whatever the confidences. The nulls
(``NULLS``) are the four of docs/statistics.md: stationary and calibrated; calibrated with
confidence falling with d (the binned-ECE floor moves); seeds agreeing on about 90 % of
predictions; Δ exactly at τ.

A **false alarm** is a verdict the truth does not support: a trend with p < α in a metric
whose population value does not change with d (under the falling-confidence null accuracy,
mean confidence, Brier and AUROC really change, so only the gap and ECE − ECE₀ count); any
break point or d* (no curve degrades: Δ(d) − Δ(0) = 0); "overconfident when clean" (the
clean Δ is ``gap`` ≤ τ); a red light for calibration (the true calibration error ``gap`` is
below the amber threshold). The rate's Monte-Carlo standard error is √(p(1 − p)/curves);
the target is a rate ≤ α + 2 standard errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import special

from relcol.analysis._statistical import statistical_tables
from relcol.analysis._thresholds import DEFAULT_LIGHTS, TAU, thresholds
from relcol.metrics import metric_tables
from relcol.store import CELL

#: Severities of a simulated curve (the built-in study's grid).
SEVERITIES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


@dataclass(frozen=True)
class World:
    """A simulated world (see the module docstring); a null when ``rise`` is 0."""

    name: str
    gap: float = 0.0
    rise: float = 0.0
    drop: float = 0.0
    seed_gap: float = 0.0
    shared: bool = False
    seed_noise: float = 0.6
    noise: float = 0.5
    samples: int = 300
    seeds: int = 3
    repeats: int = 2

    @property
    def stationary(self) -> bool:
        """Whether every metric's population value is the same at every severity."""
        return self.drop == 0.0 and self.rise == 0.0


#: The nulls of docs/statistics.md.
NULLS = (
    World("stationary, calibrated"),
    World("calibrated, confidence falling with d", drop=1.2),
    World("seeds agreeing ~90 %", shared=True, seed_noise=0.15),
    World("gap exactly at tau", gap=TAU, shared=True, seed_noise=0.15),
)
#: Worlds where trust does break, for the verdicts' power: overconfidence growing with d
#: (Δ(d) = 0.4·d: 0.2 at the most severe level), with calibrated or overconfident clean models.
DEGRADING = (
    World("overconfidence growing with d", rise=0.4, shared=True, seed_noise=0.15),
    World("overconfident when clean, growing", gap=0.1, rise=0.4, shared=True, seed_noise=0.15),
)


def simulate_curves(
    world: World, curves: int, *, seed: int = 0, prefix: str = "curve"
) -> pl.DataFrame:
    """The long-table rows of ``curves`` independent simulated curves of ``world``.

    Curve i is study ``<prefix>-<i>`` (dataset ``simulated``, model ``model``, corruption
    ``noise``), with every severity of ``SEVERITIES``."""
    rng = np.random.default_rng(seed)
    n, k, r = world.samples, world.seeds, world.repeats
    blocks = []  # (curve, severity, repeat, confidences, right), in the rows' order
    for curve in range(curves):
        margin = rng.normal(1.2, 0.8, n)
        model = margin[:, None] + world.seed_noise * rng.normal(size=(n, k))
        clean = model + world.noise * rng.normal(size=(n, k))
        seed_offset = world.seed_gap * rng.normal(size=k)
        shared = rng.random(n)
        uniforms = np.repeat(shared[:, None], k, 1) if world.shared else rng.random((n, k))
        for d in SEVERITIES:
            for repeat in range(r):
                x = clean if d == 0.0 else model + world.noise * rng.normal(size=(n, k))
                c = special.expit(np.abs(x * (1 - world.drop * d)))
                right = uniforms < c - world.gap - world.rise * d - seed_offset
                blocks.append((curve, d, repeat, c, right))
    # one frame for all blocks: each block is n samples × k seeds, sample-major
    size, count = n * k, len(blocks)
    curve, severity, repeat = (np.array([b[i] for b in blocks]) for i in range(3))
    study = pl.Series([f"{prefix}-{i}" for i in range(curves)]).gather(np.repeat(curve, size))
    return pl.DataFrame(
        {
            "study": study,
            "dataset": "simulated",
            "model": "model",
            "corruption": "noise",
            "severity": np.repeat(severity.astype(np.float64), size),
            "seed": np.tile(np.arange(k, dtype=np.int32), n * count),
            "repeat": np.repeat(repeat.astype(np.int32), size),
            "sample_id": np.tile(np.repeat(np.arange(n, dtype=np.int64), k), count),
            "label": pl.Series([None] * (size * count), dtype=pl.Int32),
            "y_pred": np.zeros(size * count, dtype=np.int32),
            "confidence": np.concatenate([b[3].ravel() for b in blocks]),
            "correct": np.concatenate([b[4].ravel() for b in blocks]),
        }
    )


@dataclass(frozen=True)
class WorldResult:
    """How often each verdict is raised in one simulated world.

    Attributes
    ----------
    world
        The simulated world.
    rates
        Verdict → share of curves raising it: ``trend:<metric>`` (p < α; under a null only
        for the metrics whose truth is constant), ``break_point``, ``d_star`` (at the
        default margin), ``break_point@0`` and ``d_star@0`` (margin 0: the sequence's own
        error rate), ``clean_overconfident``, ``red_calibration`` (some severity meets a red
        light's calibration criterion: the calibration error or a well-filled bin
        significantly beyond the amber threshold, whatever else decided the light). Under a null each is a false-alarm rate; in a degrading world the
        break point and d* rates are the power.
    agreement
        Mean share of samples on which two seeds of a cell agree on right and wrong.
    thresholds, trends
        The per-curve tables the rates come from.
    """

    world: World
    curves: int
    alpha: float
    replicates: int
    rates: dict[str, float]
    agreement: float
    thresholds: pl.DataFrame
    trends: pl.DataFrame

    def standard_error(self, verdict: str) -> float:
        """Monte-Carlo standard error of a rate."""
        p = self.rates[verdict]
        return float(np.sqrt(p * (1 - p) / self.curves))

    def bound(self) -> float:
        """The false-alarm target: α plus two Monte-Carlo standard errors at a rate of α."""
        return self.alpha + 2 * float(np.sqrt(self.alpha * (1 - self.alpha) / self.curves))


#: Trend metrics whose population value does not move with d when only confidence falls.
FLAT_WHEN_FALLING = ("gap", "ece_excess")


def world_study(
    world: World,
    curves: int = 200,
    *,
    replicates: int = 1000,
    alpha: float = 0.05,
    bins: int = 15,
    draws: int = 100,
    seed: int = 0,
) -> WorldResult:
    """Simulate ``curves`` curves of ``world`` and measure how often each verdict is raised.

    Examples
    --------
    >>> from relcol.analysis import NULLS, world_study
    >>> result = world_study(NULLS[0], curves=4, replicates=100)  # doctest: +SKIP
    >>> result.rates["break_point"] <= 1                           # doctest: +SKIP
    True
    """
    rows = simulate_curves(world, curves, seed=seed)
    lazy = metric_tables(rows, CELL, bins=bins, draws=draws, proba=None)
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    tables = dict(zip(names, pl.collect_all([lazy[name] for name in names]), strict=True))
    samples = rows.group_by(CELL).agg(samples=pl.col("sample_id").n_unique())
    layer = statistical_tables(
        rows, tables, replicates=replicates, alpha=alpha, bins=bins, samples=samples
    )
    verdicts, trends = layer["thresholds"], layer["trends"]
    at_zero = thresholds(layer["evidence"], margin=0.0, alpha=alpha)
    flat = FLAT_WHEN_FALLING if world.drop and not world.rise else None
    rates = {}
    for metric in trends["metric"].unique(maintain_order=True):
        if world.rise or world.stationary or metric in (flat or ()):
            p = trends.filter(pl.col("metric") == metric)["p_value"]
            rates[f"trend:{metric}"] = float((p.fill_null(1.0) < alpha).mean())
    for name, table in (("", verdicts), ("@0", at_zero)):
        rates[f"break_point{name}"] = float(table["break_point"].is_not_null().mean())
        rates[f"d_star{name}"] = float(table["d_star"].is_not_null().mean())
    rates["clean_overconfident"] = float(verdicts["clean_overconfident"].fill_null(False).mean())
    lights = DEFAULT_LIGHTS
    red = (pl.col("calibration_lower") > lights.amber_ece).fill_null(False) | (
        pl.col("mce_lower") > lights.amber_mce
    ).fill_null(False)
    curve = [k for k in CELL if k != "severity"]
    flagged = layer["evidence"].group_by(curve).agg(red.any())
    rates["red_calibration"] = float(flagged[flagged.columns[-1]].mean())
    return WorldResult(
        world=world,
        curves=curves,
        alpha=alpha,
        replicates=replicates,
        rates=rates,
        agreement=_seed_agreement(rows),
        thresholds=verdicts,
        trends=trends,
    )


def _seed_agreement(rows: pl.DataFrame) -> float:
    """Mean share of (sample, repeat) where seeds 0 and 1 are both right or both wrong."""
    pair = rows.filter(pl.col("seed") < 2).pivot(
        on="seed", index=[*CELL, "repeat", "sample_id"], values="correct"
    )
    return float(pair.select((pl.col("0") == pl.col("1")).mean()).item())


def gap_coverage(
    world: World,
    curves: int = 200,
    *,
    replicates: int = 1000,
    alpha: float = 0.05,
    intervals: str = "samples",
    seed: int = 0,
) -> float:
    """Share of cells whose interval of the gap holds the recipe's gap ``gap`` + ``rise``·d
    (the expectation over training seeds), with the report's intervals of scope
    ``intervals``: how the ``training`` intervals cover where seeds vary."""
    rows = simulate_curves(world, curves, seed=seed)
    lazy = metric_tables(rows, CELL, draws=10, proba=None)
    tables = {"calibration": lazy["calibration"].collect()}
    layer = statistical_tables(
        rows, tables, replicates=replicates, alpha=alpha, intervals=intervals
    )
    cells = layer["calibration"]
    truth = world.gap + world.rise * pl.col("severity")
    inside = (pl.col("gap_lo") <= truth) & (truth <= pl.col("gap_hi"))
    return float(cells.select(inside.mean()).item())
