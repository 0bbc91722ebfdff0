"""Coverage of the differences' intervals and the false-alarm rate of their p-values,
verified by simulation with known truth (docs/statistics.md).

Each simulated study has two models, ``a`` (the reference) and ``b``, each with one
prediction per test sample, their confidences and outcomes following the laws of
``relcol.analysis.LAWS``' kind (``DIFFERENCE_LAWS``: one four-class task, ``a`` overconfident
everywhere, ``b`` less so). The truth of a difference is the difference of the two laws'
population values (``Law.truth``). Three designs:

- ``paired``: both models on the same test samples, their confidences and outcomes coupled
  through the same two uniforms per sample (c = F⁻¹(u), right when v < g(c)), so their
  errors are strongly correlated, as two models' on one test set are;
- ``disjoint``: each model on its own test samples (no sample_id shared), drawn
  independently: the bootstrap draws the two models' weights independently;
- ``null``: both models follow law ``a`` on the same samples, drawn independently: every
  difference is 0, and a two-sided test at level α should call about α of them.

The studies go through the report's code (``point_estimates``, ``relcol.analysis.bootstrap``
and ``paired_differences`` with ``a`` as the baseline), each study under its own name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from relcol.analysis._bootstrap import (
    ALPHA,
    NO_INTERVAL,
    REPLICATES,
    Replicates,
    bootstrap,
    paired_differences,
    percentile_interval,
)
from relcol.analysis._coverage import METRICS, Law, law_rows, monte_carlo_error, point_estimates
from relcol.analysis._multiplicity import bootstrap_p_values
from relcol.store import CELL

#: The two laws of ``difference_coverage_study``: one four-class task; the reference ``a``
#: overconfident everywhere (g(c) = c^1.7), ``b`` flatter in confidence and less so.
DIFFERENCE_LAWS = (
    Law("a", lo=0.25, a=5.0, b=2.0, power=1.7),
    Law("b", lo=0.25, a=3.0, b=1.5, power=1.2),
)
DESIGNS = ("paired", "disjoint", "null")


@dataclass(frozen=True)
class DifferenceCoverage:
    """Realised coverage of the intervals of ``b`` − ``a`` over simulated studies.

    Attributes
    ----------
    coverage
        Metric → share of studies whose ``difference_lo``/``difference_hi`` contains the
        true difference (the metrics of ``NO_INTERVAL``, which print none, with the
        percentile interval they would otherwise get).
    rejection
        Metric → share of studies with ``p_value`` ≤ α (under ``null`` the false-alarm rate).
    truth
        Metric → the true difference.
    table
        The ``model`` rows of the differences table, one per study × metric, with ``truth``
        and ``covered``.
    """

    design: str
    studies: int
    n: int
    replicates: int
    alpha: float
    truth: dict[str, float]
    coverage: dict[str, float]
    rejection: dict[str, float]
    table: pl.DataFrame = field(repr=False)

    def standard_error(self, metric: str) -> float:
        """Monte Carlo standard error of a realised coverage."""
        return monte_carlo_error(self.coverage[metric], self.studies)


def simulate_pairs(
    studies: int,
    n: int,
    *,
    design: str = "paired",
    laws: tuple[Law, Law] = DIFFERENCE_LAWS,
    seed: int = 0,
    prefix: str = "difference",
) -> pl.DataFrame:
    """The rows of ``studies`` simulated two-model studies of ``n`` samples per model (see
    the module's designs); study i is named ``<prefix>-<i>``."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}. Got {design!r}.")
    law_a, law_b = (laws[0], laws[0]) if design == "null" else laws
    if law_a.classes != law_b.classes:
        raise ValueError("the two laws must describe one task (the same number of classes)")
    rng = np.random.default_rng(seed)
    shape = (studies, n)
    u, v = rng.random(shape), rng.random(shape)
    if design != "paired":  # b's own draws
        u_b, v_b = rng.random(shape), rng.random(shape)
    else:
        u_b, v_b = u, v
    frames = []
    for name, law, uniform, outcome in (("a", law_a, u, v), ("b", law_b, u_b, v_b)):
        c = law.lo + (1 - law.lo) * stats.beta(law.a, law.b).ppf(uniform)
        first = n if design == "disjoint" and name == "b" else 0
        frames.append(
            law_rows(prefix, c, outcome < law.outcome(c), law.classes, model=name, first=first)
        )
    return pl.concat(frames)


def difference_coverage_study(
    studies: int = 500,
    n: int = 300,
    *,
    design: str = "paired",
    laws: tuple[Law, Law] = DIFFERENCE_LAWS,
    replicates: int = REPLICATES,
    alpha: float = ALPHA,
    bins: int = 15,
    seed: int = 0,
    metrics: Iterable[str] = METRICS,
) -> DifferenceCoverage:
    """Simulate ``studies`` two-model studies and measure the coverage of the intervals of
    the model differences ``b`` − ``a`` and the rate at which their p-values reject.

    Examples
    --------
    >>> from relcol.analysis import difference_coverage_study
    >>> result = difference_coverage_study(studies=20, n=100, replicates=200)  # doctest: +SKIP
    >>> result.coverage["accuracy"]                                             # doctest: +SKIP
    0.95
    """
    rows = simulate_pairs(studies, n, design=design, laws=laws, seed=seed)
    _, points = point_estimates(rows, bins)
    result = bootstrap(rows, replicates=replicates, bins=bins, cells=points.select(*CELL, "n"))
    metrics = list(metrics)
    table = (
        paired_differences(result, points, alpha, metrics, baseline="a")
        .filter((pl.col("contrast") == "model") & (pl.col("model") == "b"))
        .sort("study", "metric")
    )
    table = _withheld(table, result, points, alpha)
    law_a, law_b = (laws[0], laws[0]) if design == "null" else laws
    truth_a, truth_b = law_a.truth(bins), law_b.truth(bins)
    truth = {metric: truth_b[metric] - truth_a[metric] for metric in metrics}
    table = table.with_columns(
        truth=pl.col("metric").replace_strict(truth, return_dtype=pl.Float64)
    ).with_columns(
        covered=(pl.col("difference_lo") <= pl.col("truth"))
        & (pl.col("truth") <= pl.col("difference_hi"))
    )
    share = table.group_by("metric").agg(
        coverage=pl.col("covered").mean(), rejection=(pl.col("p_value") <= alpha).mean()
    )
    coverage = dict(share.select("metric", "coverage").iter_rows())
    rejection = dict(share.select("metric", "rejection").iter_rows())
    return DifferenceCoverage(
        design=design,
        studies=studies,
        n=n,
        replicates=replicates,
        alpha=alpha,
        truth={m: truth[m] for m in coverage},
        coverage=coverage,
        rejection=rejection,
        table=table,
    )


def _withheld(
    table: pl.DataFrame, result: Replicates, points: pl.DataFrame, alpha: float
) -> pl.DataFrame:
    """``table`` with the interval and p-value the metrics of ``NO_INTERVAL`` would print
    (the percentile interval of b's replicates minus a's), so that their absence stays
    justified by measurement."""
    cells = result.cells.with_row_index("index").join(
        points.select(*CELL, "ece_null"), on=list(CELL), how="left", nulls_equal=True
    )
    index = {
        model: cells.filter(pl.col("model") == model).sort("study")["index"].to_numpy()
        for model in ("a", "b")
    }
    studies = cells.filter(pl.col("model") == "b").sort("study")["study"]
    values = dict(result.values)
    null = cells["ece_null"].cast(pl.Float64).to_numpy()
    values["ece_excess"] = values["ece"] - null[:, None]
    frames = []
    for metric in sorted(set(table["metric"]) & set(NO_INTERVAL)):
        replicate = values[metric][index["b"]] - values[metric][index["a"]]
        lo, hi = percentile_interval(replicate, alpha)
        frames.append(
            pl.DataFrame(
                {
                    "study": studies,
                    "metric": metric,
                    "difference_lo": lo,
                    "difference_hi": hi,
                    "p_value": bootstrap_p_values(replicate),
                }
            )
        )
    if not frames:
        return table
    would = pl.concat(frames)
    return table.update(would, on=["study", "metric"])
