"""The statistical layer of a report: every table of docs/statistics.md from the rows and the
point-estimate tables, in one call.

``statistical_tables`` runs the paired bootstrap once and derives from its replicates the
intervals beside each metric, the paired differences, the trends and the thresholds; a study
of many cells a batch of models at a time (``model_batches``), with the same tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import numpy as np
import polars as pl

from relcol.analysis._bootstrap import (
    ALPHA,
    LEVELS,
    REPLICATES,
    TABLES,
    Replicates,
    bin_intervals,
    bootstrap,
    model_references,
    paired_differences,
    with_intervals,
)
from relcol.analysis._multiplicity import benjamini_hochberg
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
from relcol.checks import check_int
from relcol.errors import ParameterError
from relcol.metrics import REGISTRY
from relcol.store import CELL

#: Metrics whose per-seed spread (``_sd``, ``_min``, ``_max``) sits beside them in the
#: report's tables (``Metric.spread``); every metric's per-seed values are in ``seeds``.
SPREAD = {
    view: tuple(name for name in names if REGISTRY[name].spread) for view, names in TABLES.items()
}


class _Options(NamedTuple):
    """``statistical_tables``' options that every batch shares."""

    replicates: int
    alpha: float
    tau: float
    margin: float
    seed: int
    bins: int
    levels: int
    lights: TrafficLight
    coverage: float | None
    risk: float | None
    intervals: str
    each_run: Callable | None
    curve_points: int
    on_replicates: Callable[[Replicates], object] | None


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
    curve_points: int = 0,
    on_replicates: Callable[[Replicates], object] | None = None,
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
    curve_points
        K > 0: also ``risk_coverage``, each cell's risk–coverage curve at coverages
        1/K … 1 (``relcol.analysis.risk_coverage`` of its ``selective_curve``), read off the
        rows the bootstrap sorts anyway (``bootstrap``'s ``curve_points``); 0: not made.
    on_replicates
        Called with the bootstrap's ``Replicates`` when every cell is drawn in one pass, for
        a caller that reuses them: the report's multi-label intervals
        (``multilabel_intervals``' ``drawn``) take the per-label cells' from them rather than
        drawing them again. Not called for a study of more than ``BATCH_CELLS`` cells, run a
        batch of models at a time: keeping every batch's replicates would undo the bound on
        memory that the batches are for.

    Returns
    -------
    dict of str to polars.DataFrame
        ``calibration``, ``discrimination``, ``selective`` with ``<metric>_lo`` and
        ``<metric>_hi`` beside every bootstrapped metric (and the per-seed spread of the
        headline metrics), ``calibration_bins`` (when given) with each bin's
        ``accuracy_lo``/``accuracy_hi``, plus ``seeds`` (per cell × seed values), ``differences``
        (paired: vs clean and vs the reference models), ``trends``, ``evidence`` (per cell, the
        estimates and one-sided bounds the verdicts are decided from) and ``thresholds``;
        and ``risk_coverage`` with ``curve_points``.
    """
    if intervals not in SCOPES:
        raise ParameterError(
            f"intervals must be one of {', '.join(map(repr, SCOPES))}. Got {intervals!r}."
        )
    calibration = tables["calibration"]
    # a reference that is not a model fails before the bootstrap's work
    references, rule = model_references(
        sorted(calibration["model"].drop_nulls().unique()), compare, baseline
    )
    o = _Options(
        replicates,
        alpha,
        tau,
        margin,
        seed,
        bins,
        levels,
        lights,
        coverage,
        risk,
        intervals,
        each_run,
        check_int("curve_points", curve_points, 0),
        on_replicates,
    )
    batches = model_batches(calibration, references)
    if len(batches) == 1:
        return _one_pass(rows, tables, o, samples=samples, compare=compare, baseline=baseline)
    # each batch holds the references' cells; named, so that no batch picks its own
    named = {"compare": list(references)} if compare is not None else {"baseline": references[0]}
    one = partial(_one_pass, o=o._replace(on_replicates=None), **named)
    return _batched(one, batches, rows, tables, samples, rule, o)


def _one_pass(
    rows: pl.DataFrame | pl.LazyFrame,
    tables: Mapping[str, pl.DataFrame],
    o: _Options,
    *,
    samples: pl.DataFrame | None = None,
    compare: str | Sequence[str] | None = None,
    baseline: str | None = None,
) -> dict[str, pl.DataFrame]:
    """``statistical_tables`` of every cell at once, with the options ``o``."""
    calibration = tables["calibration"]
    selective = tables.get("selective")
    coverage, risk = o.coverage, o.risk
    if selective is not None and not selective.is_empty():
        coverage = coverage if coverage is not None else selective["target_coverage"][0]
        risk = risk if risk is not None else selective["target_risk"][0]
    result = bootstrap(
        rows,
        replicates=o.replicates,
        bins=o.bins,
        seed=o.seed,
        levels=o.levels,
        coverage=0.8 if coverage is None else float(coverage),
        risk=0.05 if risk is None else float(risk),
        cells=calibration.select(*list(CELL), "n"),
        each_run=o.each_run,
        bin_replicates=("width",),  # the MCE's judged bins; the equal-mass ones go unread
        curve_points=o.curve_points,
    )
    if o.on_replicates is not None:
        o.on_replicates(result)
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
    # the tables read off the replicates side by side with the intervals below: each is
    # mostly sorts of replicates (numpy's release the GIL) and Polars, one core's work
    with ThreadPoolExecutor(2) as pool:
        differences = pool.submit(
            paired_differences, result, points, o.alpha, compare=compare, baseline=baseline
        )
        trend = pool.submit(trends, result, points, metrics=TREND_METRICS, alpha=o.alpha)
        evidence = pool.submit(
            cell_evidence, result, points, bins_table, samples, alpha=o.alpha, lights=o.lights
        )
        try:
            out = _intervals(result, tables, bins_table, o)
            out["differences"] = differences.result()
            out["trends"] = trend.result()
            out["evidence"] = evidence.result()
        except BaseException:  # a failure or Ctrl-C: the steps not begun are not begun
            pool.shutdown(cancel_futures=True)
            raise
    out["thresholds"] = thresholds(
        out["evidence"], tau=o.tau, margin=o.margin, alpha=o.alpha, lights=o.lights
    ).with_columns(bootstrap=pl.lit(o.replicates, pl.Int32))
    return out


def _intervals(
    result: Replicates,
    tables: Mapping[str, pl.DataFrame],
    bins_table: pl.DataFrame | None,
    o: _Options,
) -> dict[str, pl.DataFrame]:
    """The metric tables with their intervals, the bins' intervals, the per-seed values and
    the risk–coverage curve."""
    out: dict[str, pl.DataFrame] = {}
    for name, metrics in TABLES.items():
        table = tables.get(name)
        if table is None:
            continue
        out[name] = with_intervals(table, result, o.alpha, metrics=metrics, spread=SPREAD[name])
        if o.intervals == "training":
            out[name] = with_training_variation(out[name], result.seeds, CELL, o.alpha)
        else:
            out[name] = out[name].with_columns(interval_scope=pl.lit(SCOPES["samples"]))
    if bins_table is not None:
        out["calibration_bins"] = bins_table.join(
            bin_intervals(result, o.alpha),
            on=[*CELL, "binning", "bin"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    out["seeds"] = result.seeds
    if result.risk_coverage is not None:
        out["risk_coverage"] = result.risk_coverage
    return out


#: A study of more cells than this runs its statistical layer a batch of models at a time,
#: each batch with the reference models' cells (``model_batches``): every cell's replicates
#: are held until its tables are made, about 0.36 MB per cell at B = 1000 and M = 15, so
#: 20 000 cells took 7.2 GB at once. A batch of this many cells holds about 1.5 GB.
BATCH_CELLS = 4096


def model_batches(
    calibration: pl.DataFrame, references: Sequence[str] | None
) -> list[tuple[list[str], list[str]]]:
    """The batches of models the statistical layer runs in: (the models whose rows a batch
    gives, the models it reads: those and the references), the references given by the
    first. One batch (every model) for a study of at most ``BATCH_CELLS`` cells, for every
    pair of models (``references`` None: each cell is compared with every other model's) or
    when a cell has no model.

    Every table but the differences' q-values is made of one cell, one curve or a cell and
    its references, so a batch gives its models' rows as the whole study would; the
    q-values are adjusted over all batches at the end (``_batched``)."""
    models = calibration.get_column("model")
    every = models.unique(maintain_order=True).to_list()
    if calibration.height <= BATCH_CELLS or references is None or models.null_count():
        return [(every, every)]
    cells = calibration.group_by("model", maintain_order=True).len()
    size = dict(zip(cells["model"], cells["len"], strict=True))
    fixed = [m for m in every if m in references]
    budget = max(1, BATCH_CELLS - sum(size[m] for m in fixed))
    batches, own, held = [], list(fixed), 0
    for model in (m for m in every if m not in references):
        if own and held + size[model] > budget:
            batches.append(own)
            own, held = [], 0
        own.append(model)
        held += size[model]
    batches.append(own)
    return [(own, list(dict.fromkeys([*fixed, *own]))) for own in batches]


#: Each per-cell output table of ``statistical_tables`` and the columns its rows are told
#: apart by, beyond the cell keys.
_PER_CELL = {
    "calibration": (),
    "discrimination": (),
    "selective": (),
    "calibration_bins": ("binning", "bin"),
}


def _batched(one, batches, rows, tables, samples, rule, o: _Options) -> dict:
    """``statistical_tables`` a batch of models at a time (``one``: it, with every option
    but the tables), the batches' rows of their own models put together in the order one
    pass gives them."""
    keys = list(CELL)
    parts: dict[str, list[pl.DataFrame]] = {}
    for own, held in batches:
        part = one(
            rows,
            {name: _of_models(table, held) for name, table in tables.items()},
            samples=_of_models(samples, held),
        )
        for name, table in part.items():
            if name != "thresholds":  # made from the whole evidence below
                parts.setdefault(name, []).append(_of_models(table, own))
        del part
    out = {name: pl.concat(frames) for name, frames in parts.items()}
    # the order of one pass: the input tables' rows, and the cells sorted by their keys
    for name, extra in _PER_CELL.items():
        if name in out:
            order = tables[name].select(*keys, *extra).with_row_index("_order")
            out[name] = _in_order(out[name], order, [*keys, *extra])
    cells = tables["calibration"].select(keys).sort(keys, nulls_last=True)
    out["seeds"] = out["seeds"].sort([*keys, "seed"], nulls_last=True)
    if "risk_coverage" in out:  # each cell's grid as it came, the cells sorted by their keys
        out["risk_coverage"] = _in_order(out["risk_coverage"], cells.with_row_index("_order"), keys)
    curve = [k for k in keys if k != "severity"]
    curves = cells.select(curve).unique(maintain_order=True).with_row_index("_order")
    out["trends"] = _in_order(out["trends"], curves, curve)
    out["evidence"] = _in_order(out["evidence"], cells.with_row_index("_order"), keys)
    out["differences"] = _adjusted(out["differences"], cells.with_row_index("_cell"), rule)
    out["thresholds"] = thresholds(
        out["evidence"], tau=o.tau, margin=o.margin, alpha=o.alpha, lights=o.lights
    ).with_columns(bootstrap=pl.lit(o.replicates, pl.Int32))
    return out


def _of_models(frame: pl.DataFrame | None, models: list[str]) -> pl.DataFrame | None:
    """The rows of ``models`` (a frame without a ``model`` column, whole)."""
    if frame is None or "model" not in frame.columns:
        return frame
    return frame.filter(pl.col("model").is_in(models))


def _in_order(frame: pl.DataFrame, order: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """``frame`` sorted by the ``_order`` of its rows' ``on`` in ``order`` (stable)."""
    return (
        frame.join(order, on=on, how="left", nulls_equal=True, maintain_order="left")
        .sort("_order", maintain_order=True)
        .drop("_order")
    )


def _adjusted(differences: pl.DataFrame, cells: pl.DataFrame, rule: str) -> pl.DataFrame:
    """The batches' differences in the order of one pass (cell, contrast, reference cell,
    metric), the model contrast's ``reference_rule`` the study's, and each ``q_value`` the
    Benjamini–Hochberg adjustment within its study × contrast × metric over every batch, a
    pair of two references (given both ways) counted once, as ``paired_differences`` does."""
    keys = list(CELL)
    reference = cells.rename(
        {"model": "reference_model", "severity": "reference_severity", "_cell": "_reference"}
    )
    frame = (
        differences.join(cells, on=keys, how="left", nulls_equal=True, maintain_order="left")
        .join(
            reference,
            on=[k if k not in ("model", "severity") else f"reference_{k}" for k in keys],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .sort("_cell", "contrast", "_reference", "metric", maintain_order=True)
        .with_columns(
            reference_rule=pl.when(pl.col("contrast") == "model")
            .then(pl.lit(rule))
            .otherwise("reference_rule"),
            _first=pl.min_horizontal("_cell", "_reference"),
            _second=pl.max_horizontal("_cell", "_reference"),
        )
    )
    family = ["study", "contrast", "metric"]
    tests = frame.select(*family, "_first", "_second", "p_value").unique(
        [*family, "_first", "_second"], maintain_order=True
    )
    q = []
    for part in tests.partition_by(family, maintain_order=True):
        p = part.get_column("p_value").cast(pl.Float64).fill_null(np.nan).to_numpy()
        q.append(part.with_columns(q_value=pl.Series(benjamini_hochberg(p)).fill_nan(None)))
    adjusted = (
        pl.concat(q).drop("p_value")
        if q
        else tests.drop("p_value").with_columns(q_value=pl.lit(None, pl.Float64))
    )
    return (
        frame.drop("q_value")
        .join(
            adjusted,
            on=[*family, "_first", "_second"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .select(differences.columns)
    )
