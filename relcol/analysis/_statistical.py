"""The statistical layer of a report: every table of docs/statistics.md from the rows and the
point-estimate tables, in one call.

``statistical_tables`` runs the paired bootstrap once and derives from its replicates the
intervals beside each metric, the paired differences, the trends and the thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import polars as pl

from relcol.analysis._bootstrap import (
    ALPHA,
    LEVELS,
    REPLICATES,
    TABLES,
    bin_intervals,
    bootstrap,
    model_references,
    paired_differences,
    with_intervals,
)
from relcol.analysis._thresholds import (
    DEFAULT_LIGHTS,
    MARGIN,
    TAU,
    TrafficLight,
    cell_evidence,
    thresholds,
)
from relcol.analysis._training import SCOPES, with_training_variation
from relcol.analysis._trends import TREND_METRICS, trends
from relcol.errors import ParameterError
from relcol.metrics import REGISTRY
from relcol.store import CELL

#: Metrics whose per-seed spread (``_sd``, ``_min``, ``_max``) sits beside them in the
#: report's tables (``Metric.spread``); every metric's per-seed values are in ``seeds``.
SPREAD = {
    view: tuple(name for name in names if REGISTRY[name].spread) for view, names in TABLES.items()
}


def statistical_tables(
    rows: pl.DataFrame | pl.LazyFrame,
    tables: Mapping[str, pl.DataFrame],
    *,
    replicates: int = REPLICATES,
    alpha: float = ALPHA,
    tau: float = TAU,
    margin: float = MARGIN,
    seed: int = 0,
    bins: int = 15,
    levels: int = LEVELS,
    lights: TrafficLight = DEFAULT_LIGHTS,
    coverage: float | None = None,
    risk: float | None = None,
    samples: pl.DataFrame | None = None,
    intervals: str = "samples",
    compare: str | Sequence[str] | None = None,
    baseline: str | None = None,
    each_run: Callable | None = None,
) -> dict[str, pl.DataFrame]:
    """Intervals, spread, differences, trends and thresholds for a study's tables.

    Parameters
    ----------
    rows
        The study's prediction rows (``Warehouse.predictions(study)``).
    tables
        The point-estimate tables: ``calibration`` (required, with ``n``),
        ``discrimination`` and ``selective`` (each one row per cell).
    replicates, alpha, tau, margin, seed, bins, levels, lights
        B, 1 − the interval level (and the level of every test), the overconfidence
        margin τ, the break point's margin on Δ(d) − Δ(0), the generator offset, the bins of
        the point estimates, the rank metrics' level cap, the traffic-light thresholds.
    coverage, risk
        Targets of the selective summaries (default: the ``selective`` table's).
    samples
        One row per cell with its distinct test samples ``samples`` (the lights' minimum
        counts); None: not applied.
    intervals
        What the metric tables' intervals cover: ``"samples"`` (default: the paired bootstrap
        over test samples, the trained models held fixed) or ``"training"`` (widened by the
        spread between training seeds, ``relcol.analysis.with_training_variation``).
        Differences, trends and verdicts are about the trained models either way.
    compare, baseline
        The reference models of the model-vs-model differences (``paired_differences``):
        by default ``baseline`` (else the first model alphabetically); ``compare`` names
        others (a comma-separated string or a sequence) or is ``"all"`` for every pair.
    each_run
        Where the bootstrap's runs of cells are computed (``bootstrap``; default: here).

    Returns
    -------
    dict of str to polars.DataFrame
        ``calibration``, ``discrimination``, ``selective`` with ``<metric>_lo`` and
        ``<metric>_hi`` beside every bootstrapped metric (and the per-seed spread of the
        headline metrics), ``calibration_bins`` (when given) with each bin's
        ``accuracy_lo``/``accuracy_hi``, plus ``seeds`` (per cell × seed values), ``differences``
        (paired: vs clean and vs the reference models), ``trends``, ``evidence`` (per cell, the
        estimates and one-sided bounds the verdicts are decided from) and ``thresholds``.
    """
    if intervals not in SCOPES:
        raise ParameterError(
            f"intervals must be one of {', '.join(map(repr, SCOPES))}. Got {intervals!r}."
        )
    calibration = tables["calibration"]
    # a reference that is not a model fails before the bootstrap's work
    model_references(sorted(calibration["model"].drop_nulls().unique()), compare, baseline)
    selective = tables.get("selective")
    if selective is not None and not selective.is_empty():
        coverage = coverage if coverage is not None else selective["target_coverage"][0]
        risk = risk if risk is not None else selective["target_risk"][0]
    result = bootstrap(
        rows,
        replicates=replicates,
        bins=bins,
        seed=seed,
        levels=levels,
        coverage=0.8 if coverage is None else float(coverage),
        risk=0.05 if risk is None else float(risk),
        cells=calibration.select(*list(CELL), "n"),
        each_run=each_run,
    )
    out: dict[str, pl.DataFrame] = {}
    for name, metrics in TABLES.items():
        table = tables.get(name)
        if table is None:
            continue
        out[name] = with_intervals(table, result, alpha, metrics=metrics, spread=SPREAD[name])
        if intervals == "training":
            out[name] = with_training_variation(out[name], result.seeds, CELL, alpha)
        else:
            out[name] = out[name].with_columns(interval_scope=pl.lit(SCOPES["samples"]))
    points = calibration
    for name in ("discrimination", "selective"):
        if name in tables:
            extra = [c for c in tables[name].columns if c not in points.columns]
            points = points.join(
                tables[name].select(*list(CELL), *extra),
                on=list(CELL),
                how="left",
                nulls_equal=True,
                maintain_order="left",
            )
    bins_table = tables.get("calibration_bins")
    if bins_table is not None:
        out["calibration_bins"] = bins_table.join(
            bin_intervals(result, alpha),
            on=[*CELL, "binning", "bin"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    out["seeds"] = result.seeds
    out["differences"] = paired_differences(
        result, points, alpha, compare=compare, baseline=baseline
    )
    out["trends"] = trends(result, points, metrics=TREND_METRICS, alpha=alpha)
    out["evidence"] = evidence = cell_evidence(
        result, points, bins_table, samples, alpha=alpha, lights=lights
    )
    out["thresholds"] = thresholds(
        evidence, tau=tau, margin=margin, alpha=alpha, lights=lights
    ).with_columns(bootstrap=pl.lit(replicates, pl.Int32))
    return out
