"""Every table the report shows, computed before anything is drawn (``report_tables``).

The metric tables come from one scan of the rows per chunk of whole cells; the statistical
layer adds intervals, trends and thresholds; the tables of prediction-file, multi-label and
recalibration studies, consistency, the scorecard and monitoring follow; then the summaries
the page and the terminal print (``summary_tables``: the degradation summary, the worst
cells, the verdicts, the realised corruption rates and trends). ``relcol.report`` only
draws these tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack

import polars as pl

from relcol import metrics
from relcol.analysis import (
    SCOPES,
    Replicates,
    check_tau,
    corruption_error,
    figure_tables,
    in_study_order,
    model_references,
    monitoring_tables,
    multilabel_micro_tables,
    risk_coverage,
    statistical_tables,
    study_order,
    summary_tables,
    withhold_scores,
)
from relcol.analysis import scorecard as scorecard_table
from relcol.checks import check_bins, check_int, check_interval, check_seed
from relcol.errors import ParameterError
from relcol.metrics import by_chunks
from relcol.store import CELL, CURVE_COUNTS, STORED_BINS, STORED_DRAWS, Warehouse
from relcol.workflows._beside import beside
from relcol.workflows._external_predictions import by_class, confidence_sources, soft_agreement
from relcol.workflows._multilabel_scores import multilabel, multilabel_bins, multilabel_statistics
from relcol.workflows._recalibration_runs import recalibration
from relcol.workflows._report_backend import (
    Chunks,
    Runner,
    check_report_backend,
    chunk_runner,
)
from relcol.workflows._shared import cells_of, run_spec
from relcol.workflows._studies import (
    consistency_table,
    scorecard_options,
    study_baseline,
    study_reference,
)


def report_tables(
    wh: Warehouse,
    study: str,
    *,
    bins: int = 15,
    bootstrap: int = 1000,
    alpha: float = 0.05,
    tau: float = 0.05,
    margin: float = 0.02,
    seed: int = 0,
    intervals: str = "samples",
    noise: str | None = None,
    stability_at: float | None = None,
    resilience_at: float | None = None,
    compare: str | Sequence[str] | None = None,
    backend: str = "local",
    jobs: int | None = None,
) -> dict[str, pl.DataFrame]:
    """Every table the report shows and exports, by name (``calibration`` first).

    Each metric family adds its table here; the report shows a section for each
    table it finds, and ``relcol report`` materialises those named in
    ``relcol.store.MATERIALISED``. The figure-ready tables (``reliability``,
    ``confidence_histogram``) come from the final ``calibration_bins``; last come the
    summaries the page and the terminal print (``relcol.analysis.summary_tables``:
    ``degradation``, ``worst_gaps``, ``verdicts``, ``realised_rates``, ``realised_trends``).

    With ``bootstrap`` = B > 0 the statistical layer (docs/statistics.md) adds percentile
    intervals at level 1 − ``alpha`` beside every metric (paired Poisson bootstrap over test
    samples, generator offset ``seed``), the per-seed values (``seeds``), the paired
    ``differences``, the ``trends`` and the ``thresholds`` (clean overconfidence and d* with
    margin ``tau``, the break point with ``margin`` on the change of the gap).
    ``noise``, ``stability_at`` and ``resilience_at`` set the scorecard (see ``scorecard``).
    ``intervals`` says what the metric tables' intervals cover: ``"samples"`` (test samples,
    the trained models held fixed) or ``"training"`` (also the spread between training seeds).
    ``compare`` chooses the reference models of the model-vs-model differences (default: the
    study's baseline, ``study_baseline``; model names, or ``"all"`` for every pair).
    ``backend`` ``"dask"`` computes the per-cell tables on a Dask cluster, in partitions of
    whole cells (``relcol.workflows._report_backend``; ``jobs`` workers of a local cluster,
    default one per core): the same tables, value for value.
    """
    check_report_backend(backend, jobs)
    bootstrap, alpha, tau, seed = _check_statistics(bootstrap, alpha, tau, seed)
    bins = check_bins(bins)
    margin = _check_margin(margin)
    if intervals not in SCOPES:
        raise ParameterError(
            f"intervals must be one of {', '.join(map(repr, SCOPES))}. Got {intervals!r}."
        )
    card = scorecard_options(
        wh, study, noise=noise, stability_at=stability_at, resilience_at=resilience_at
    )
    baseline = study_baseline(wh, study)
    if compare is not None:  # a reference that is not a model fails before any work
        models = wh.sql("SELECT DISTINCT model FROM predictions WHERE study = ?", [study])
        model_references(sorted(models["model"].drop_nulls()), compare, baseline)
    with chunk_runner(wh, study, backend, jobs) as chunks, ExitStack() as stack:
        # with a bootstrap, the risk–coverage grid is read off the rows it sorts anyway
        metric_tables, cells = _metric_tables(
            wh, study, bins=bins, chunks=chunks, curve=not bootstrap
        )
        # the rows the study's commit stored (the view's SQL, equal to the Polars table to
        # about 1e−15) are read; without them, consistency is mostly serial Polars work,
        # computed beside the statistical layer on the core the bootstrap leaves idle (on
        # Dask the cluster spreads it: computed here)
        stored = wh.stored("consistency", study)
        pending = None
        if stored is None:
            pending = stack.enter_context(
                beside(
                    consistency_table,
                    wh.predictions(study),
                    cells,
                    chunks=chunks,
                    inline=chunks is not None,
                )
            )
        tables = {
            **metric_tables,
            "corruptions": wh.sql("SELECT * FROM corruptions WHERE study = ?", [study]),
            **external_tables(wh, study, bins=bins),
        }
        if bootstrap:
            # a multi-label study's per-label replicates, kept for its multi-label intervals
            # (handed over when the layer draws every cell at once, not batch by batch)
            drawn: list[Replicates] = []
            layer = statistical_tables(
                wh.predictions(study),
                tables,
                replicates=bootstrap,
                alpha=alpha,
                tau=tau,
                margin=margin,
                seed=seed,
                bins=bins,
                samples=cells,
                intervals=intervals,
                compare=compare,
                baseline=baseline,
                each_run=chunks.each_run if isinstance(chunks, Runner) else None,
                curve_points=CURVE_POINTS,
                on_replicates=drawn.append if "multilabel" in tables else None,
            )
            tables |= layer
            # listed with the metric tables (the page's list of files), as without the layer
            tables = {name: tables[name] for name in [*metric_tables, "risk_coverage"]} | tables
            tables["thresholds"] = withhold_scores(tables["thresholds"], _score_sources(tables))
            if "multilabel" in tables:  # per label, micro and macro, paired over samples
                tables |= multilabel_statistics(
                    wh,
                    study,
                    tables,
                    replicates=bootstrap,
                    alpha=alpha,
                    bins=bins,
                    seed=seed,
                    drawn=drawn,
                )
            del drawn
            tables["calibration"] = tables["calibration"].with_columns(
                bootstrap=pl.lit(bootstrap, pl.Int32)
            )
        consistency = stored if pending is None else pending.result()
    tables |= _consistency_tables(wh, study, tables["calibration"], consistency, card)
    tables |= monitoring_tables(wh, study, bins=bins, replicates=bootstrap, alpha=alpha, seed=seed)
    # computed in key order; read in the order the study lists its datasets, models and
    # corruptions (mcar before mar before mnar), which the figures, the summaries' first
    # appearances and the page then keep (a summary with an order of its own, such as the
    # largest gaps first, keeps it)
    order = study_order(wh.predictions(study))
    tables = {name: in_study_order(table, order) for name, table in tables.items()}
    tables |= figure_tables(tables, cells)
    return tables | summary_tables(tables)


def _score_sources(tables: dict[str, pl.DataFrame]) -> list[str]:
    """The confidence sources that are scores, not probabilities (they get no verdict)."""
    sources = tables.get("sources")
    if sources is None or sources.is_empty():
        return []
    return sources.filter(pl.col("kind") == "score").get_column("source").to_list()


def _check_statistics(bootstrap: object, alpha: object, tau: object, seed: object):
    """The statistical layer's options, checked at the boundary."""
    bootstrap = check_int("bootstrap", bootstrap, 0, note=" (0: no intervals)")
    alpha = check_interval("alpha", alpha, "(0, 1)")
    return bootstrap, alpha, check_tau(tau), check_seed(seed)


def _check_margin(margin: object) -> float:
    return check_interval("margin", margin, "[0, 1)")


#: Monte Carlo draws R behind ``ece_null`` in the report's calibration table.
ECE_NULL_DRAWS = 100
#: Coverages 1/K … 1 of the report's ``risk_coverage`` table: K.
CURVE_POINTS = 50


def _metric_tables(
    wh: Warehouse, study: str, *, bins: int, chunks: Chunks | None = None, curve: bool = True
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """``calibration`` (with its ``bins``), ``calibration_bins``, ``discrimination``,
    ``selective`` and, with ``curve``, ``risk_coverage`` (the curve on a coverage grid) of one
    study, and each cell's rows ``n`` and distinct test samples (``samples``), which the
    reliability intervals and the later chunked steps need. Without ``curve`` the statistical
    layer reads the grid off the rows its bootstrap sorts (``statistical_tables``'
    ``curve_points``); with ``curve``, the grid is read off the curve's counts where the
    study's commit stored them (``Warehouse.stored``: the same counts, so the same table). With
    the four tables below and the curve stored, nothing here reads the rows.

    The first four are the rows the study's commit stored (``Warehouse.stored``: the views'
    SQL, equal to the Polars tables to about 1e−9 relative) when the report asks for the bins
    and ECE₀ draws they were stored at; otherwise they and the curve are computed together:
    one scan of the rows and one sort per cell for all of them, one chunk of whole cells at a
    time (``by_chunks``; ``chunks``: elsewhere, per chunk of whole cells). With the four
    stored, the curve is computed alone, from the rows sorted by cell and confidence only
    (the other tables' sort also breaks ties by sample, seed and repeat, for the equal-mass
    bins): the same counts, so the same table."""
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    predictions = wh.predictions(study)
    cells = cells_of(predictions)
    stored = None
    if (bins, ECE_NULL_DRAWS) == (STORED_BINS, STORED_DRAWS):
        stored = {name: wh.stored(name, study) for name in names}
        if any(table is None for table in stored.values()):
            stored = None

    computed = names if stored is None else ()  # plans may go to Dask: no tables captured
    counts = wh.stored(CURVE_COUNTS, study) if curve else None
    from_rows = curve and counts is None  # the curve computed from the rows

    def plans(rows: pl.LazyFrame) -> list[pl.LazyFrame]:
        if not computed:  # the curve alone: its rows sorted by confidence, no tie-break
            return [risk_coverage(metrics.selective_curve(rows, CELL), points=CURVE_POINTS)]
        lazy = metrics.metric_tables(rows, CELL, bins=bins, draws=ECE_NULL_DRAWS)
        grid = [risk_coverage(lazy["selective_curve"], points=CURVE_POINTS)] if from_rows else []
        return [*(lazy[name] for name in computed), *grid]

    frames = []
    if computed or from_rows:
        frames = (
            by_chunks(predictions, cells, CELL, plans) if chunks is None else chunks(cells, plans)
        )
    tables = stored or dict(zip(names, frames[: len(names)], strict=True))
    if from_rows:
        tables["risk_coverage"] = frames[-1]
    elif curve:
        curve_table = metrics.selective_curve_from_counts(counts, CELL)
        tables["risk_coverage"] = risk_coverage(curve_table, points=CURVE_POINTS).collect()
    tables["calibration"] = tables["calibration"].with_columns(bins=pl.lit(bins, pl.Int32))
    return tables, cells


def _consistency_tables(
    wh: Warehouse,
    study: str,
    calibration: pl.DataFrame,
    table: pl.DataFrame,
    card: dict[str, object],
) -> dict[str, pl.DataFrame]:
    """``consistency`` (the table ``table``, shown when some cell has replicates),
    ``scorecard`` (with the settings ``card``) and ``corruption_error``, both against the
    study's reference model."""
    tables = {"consistency": table} if not table.is_empty() else {}
    reference = study_reference(wh, study)
    tables["scorecard"] = scorecard_table(
        calibration, wh.predictions(study), baseline=reference, **card
    )
    tables["corruption_error"] = corruption_error(calibration, baseline=reference)
    return tables


def external_tables(wh: Warehouse, study: str, *, bins: int = 15) -> dict[str, pl.DataFrame]:
    """The report tables of this module that apply to ``study``.

    ``by_class`` (calibration per predicted class, with class names) for an ingested
    single-label prediction file; ``multilabel``, ``multilabel_bins`` and the micro
    average's tables (``relcol.analysis.multilabel_micro_tables``) when the study has
    multi-label rows; ``recalibration`` for a study written by ``recalibrate``.
    """
    spec = run_spec(wh, study)
    kind = spec.get("kind")
    rows = wh.predictions(study)
    has_labels = rows.filter(pl.col("label").is_not_null()).head(1).collect().height > 0
    tables: dict[str, pl.DataFrame] = {}
    if kind == "predictions" and not has_labels:
        tables["by_class"] = by_class(wh, study=study, bins=bins)
    if has_labels:
        tables["multilabel"] = multilabel(wh, study=study, bins=bins)
        tables["multilabel_bins"] = multilabel_bins(wh, study=study, bins=bins)
        tables |= multilabel_micro_tables(rows, bins=bins)
    if kind == "recalibration":
        tables["recalibration"] = recalibration(wh, study=study, bins=bins)
    if kind == "predictions" and any(v != "stated" for v in spec.get("source_kinds", {}).values()):
        tables["sources"] = confidence_sources(wh, study=study)
    if kind == "predictions" and not has_labels:
        agreement = soft_agreement(wh, study=study, bins=bins)
        if not agreement.is_empty():
            tables["agreement"] = agreement
    return tables
