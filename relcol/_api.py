"""The Python API: what the CLI does, for notebooks and scripts.

>>> import relcol
>>> wh = relcol.open_warehouse("warehouse")             # doctest: +SKIP
>>> wh.predictions("default").filter(...).collect()      # doctest: +SKIP
>>> relcol.calibration(wh, study="default")              # doctest: +SKIP
>>> wh.sql("SELECT model, avg(ece) FROM calibration GROUP BY ALL")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from relcol import _interrupts as interrupts
from relcol import metrics

# Predictions made elsewhere, multi-label, recalibration: re-exported as relcol.<name>.
from relcol._external import (  # noqa: F401
    ExampleResult,
    PredictionsResult,
    RecalibrationResult,
    by_class,
    confidence_sources,
    example,
    external_tables,
    ingest_predictions,
    multilabel,
    multilabel_bins,
    multilabel_statistics,
    recalibrate,
    recalibration,
    soft_agreement,
    sources_summary,
)
from relcol.analysis import (
    SCOPES,
    check_tau,
    corruption_error,
    figure_tables,
    monitoring_tables,
    name_label_codes,
    risk_coverage,
    statistical_tables,
    withhold_scores,
)
from relcol.analysis import scorecard as _scorecard
from relcol.checks import check_bins, check_choice, check_int, check_interval, check_seed
from relcol.errors import OutputError, ParameterError, WarehouseError
from relcol.metrics import by_chunks
from relcol.report import SECTIONS, terminal_summary, write_report
from relcol.store import CELL, MATERIALISED, Warehouse, os_error, publish_folder, staged_folder
from relcol.study import MAX_ROWS, SCORECARD, IngestResult, Study, load_study, run_study

ENGINES = ("polars", "duckdb")


def open_warehouse(path: str | os.PathLike[str] | None = None) -> Warehouse:
    """The warehouse at ``path``, else ``$RELCOL_WAREHOUSE``, else ``./warehouse``.

    Opening creates nothing: reading a warehouse that does not exist is an error, and the
    first ingest creates it."""
    return Warehouse.default(path)


def ingest(
    study: Study | str | os.PathLike[str] | None = None,
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    backend: str = "local",
    max_rows: int | None = MAX_ROWS,
    allow_outside_paths: bool = False,
) -> IngestResult:
    """Run a study (a ``Study``, a TOML path, or None for the built-in default) into a warehouse.

    ``jobs`` local processes, or ``backend="dask"`` (the cluster at
    ``$DASK_SCHEDULER_ADDRESS``, else a local one with ``jobs`` workers). A study that
    would write more than ``max_rows`` rows is refused before any fit (None: no bound).
    A spec's dataset files must lie in its folder unless ``allow_outside_paths``.
    """
    if max_rows is not None:
        check_int("max_rows", max_rows, note=" or None")
    if not isinstance(study, Study):
        study = load_study(study, allow_outside_paths=allow_outside_paths)
    return run_study(
        study,
        _warehouse(warehouse),
        replace=replace,
        progress=progress,
        jobs=jobs,
        backend=backend,
        max_rows=max_rows,
    )


def calibration(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """The calibration table (one row per cell) of one study, from either engine."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    if engine == "polars":
        frame = metrics.calibration(wh.predictions(study), CELL, bins=bins).collect()
    elif engine == "duckdb":
        frame = wh.sql("SELECT * FROM calibration", bins=bins, study=study, timeout=None)
    else:
        check_choice("engine", engine, ENGINES)
    return frame.sort(CELL, nulls_last=True)


def consistency(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    engine: str = "polars",
) -> pl.DataFrame:
    """The consistency table of one study (one row per cell × axis with τ >= 2), from either engine."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    if engine == "polars":
        frame = _consistency(wh.predictions(study))
    elif engine == "duckdb":
        frame = wh.sql("SELECT * FROM consistency", study=study, timeout=None)
    else:
        check_choice("engine", engine, ENGINES)
    return frame.sort([*CELL, "axis"], nulls_last=True)


def scorecard(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    baseline: str = "logistic_regression",
    weights: dict[str, float] | None = None,
    bins: int = 15,
    noise: str | None = None,
    stability_at: float | None = None,
    resilience_at: float | None = None,
) -> pl.DataFrame:
    """The robustness scorecard (docs/consistency.md) of one study: one row per dataset × model.

    ``weights`` maps ``stability``, ``resilience`` and ``reliability`` to their weights in
    the composite (default 0.4/0.3/0.3); corruption errors are against ``baseline``.
    Stability is measured under corruption ``noise`` at severity ``stability_at``,
    resilience at ``resilience_at``; each left as None comes from the study spec's
    ``[scorecard]`` table, else the defaults ``gaussian_noise``, 0.05 and 0.1.
    """
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    return _scorecard(
        calibration(wh, study=study, bins=bins),
        wh.predictions(study),
        baseline=baseline,
        weights=weights,
        **scorecard_options(
            wh, study, noise=noise, stability_at=stability_at, resilience_at=resilience_at
        ),
    )


def scorecard_options(wh: Warehouse, study: str, **given: object) -> dict[str, object]:
    """Stability/resilience settings: those ``given`` (not None), else the study spec's
    ``[scorecard]`` table (validated at ingest), else ``relcol.study.SCORECARD``."""
    stored = _stored_spec(wh, study).get("scorecard", {})
    return {**SCORECARD, **stored, **{k: v for k, v in given.items() if v is not None}}


def study_baseline(wh: Warehouse, study: str) -> str | None:
    """The reference model of the study's model-vs-model differences: the spec's
    ``baseline``, else the first model it lists; None for rows not made from a spec."""
    spec = _stored_spec(wh, study)
    models = spec.get("models")
    if "baseline" in spec:
        return str(spec["baseline"])
    if isinstance(models, list) and models and isinstance(models[0], dict):
        return str(models[0].get("id", models[0].get("name")))
    return None


def _stored_spec(wh: Warehouse, study: str) -> dict:
    """The study spec of the study's last run, parsed ({} for a run not made from one)."""
    spec = wh.sql(
        "SELECT spec FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
    )
    if not spec.height:
        return {}
    try:
        return tomllib.loads(spec.item())
    except (tomllib.TOMLDecodeError, AttributeError, TypeError):  # not from a study spec
        return {}


def simulate_consistency(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    replace: bool = False,
    **simulation: object,
) -> IngestResult:
    """Simulate a consistency study into a warehouse, committed like a study.

    ``simulation`` holds the fields of ``relcol.study._simulate.ConsistencySimulation``:
    ``name``, ``samples``, ``replicates``, ``classes``, ``error_rates``, ``perturbation``,
    ``seed``, ``families``, ``conditions``.
    """
    from relcol.study import ConsistencySimulation, run_simulation

    return run_simulation(
        ConsistencySimulation(**simulation), _warehouse(warehouse), replace=replace
    )


def _consistency(predictions: pl.LazyFrame, cells: pl.DataFrame | None = None) -> pl.DataFrame:
    """The consistency table in Polars, one chunk of whole cells at a time (``cells``: the
    cells with their rows ``n``, if known)."""
    cells = _cells(predictions) if cells is None else cells
    [frame] = by_chunks(predictions, cells, CELL, lambda rows: [metrics.consistency(rows, CELL)])
    return frame.sort([*CELL, "axis"], nulls_last=True)


def _consistency_tables(
    wh: Warehouse,
    study: str,
    calibration: pl.DataFrame,
    cells: pl.DataFrame,
    card: dict[str, object],
) -> dict[str, pl.DataFrame]:
    """``consistency`` (when some cell has replicates), ``scorecard`` (with the settings
    ``card``) and ``corruption_error``."""
    table = _consistency(wh.predictions(study), cells)
    tables = {"consistency": table} if not table.is_empty() else {}
    tables["scorecard"] = _scorecard(calibration, wh.predictions(study), **card)
    tables["corruption_error"] = corruption_error(calibration)
    return tables


@dataclass(frozen=True)
class ReportResult:
    """What ``report`` wrote."""

    study: str
    out: Path
    html: Path
    calibration: pl.DataFrame
    summary: str


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
) -> dict[str, pl.DataFrame]:
    """Every table the report shows and exports, by name (``calibration`` first).

    Each metric family adds its table here; the report shows a section for each
    table it finds, and ``relcol report`` materialises those named in
    ``relcol.store.MATERIALISED``. The figure-ready tables (``reliability``,
    ``confidence_histogram``) come last, from the final ``calibration_bins``.

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
    """
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
    metric_tables, cells = _metric_tables(wh, study, bins=bins)
    tables = {
        **metric_tables,
        "corruptions": wh.sql("SELECT * FROM corruptions WHERE study = ?", [study]),
        **external_tables(wh, study, bins=bins),
    }
    if bootstrap:
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
            baseline=study_baseline(wh, study),
        )
        tables |= layer
        tables["thresholds"] = withhold_scores(tables["thresholds"], _score_sources(tables))
        if "multilabel" in tables:  # per label, micro and macro, paired over samples
            tables |= multilabel_statistics(
                wh, study, tables, replicates=bootstrap, alpha=alpha, bins=bins, seed=seed
            )
        tables["calibration"] = tables["calibration"].with_columns(
            bootstrap=pl.lit(bootstrap, pl.Int32)
        )
    tables |= _consistency_tables(wh, study, tables["calibration"], cells, card)
    tables |= monitoring_tables(wh, study, bins=bins, replicates=bootstrap, alpha=alpha, seed=seed)
    return tables | figure_tables(tables, cells)


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


def _metric_tables(
    wh: Warehouse, study: str, *, bins: int
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """``calibration`` (with its ``bins``), ``calibration_bins``, ``discrimination``,
    ``selective`` and ``risk_coverage`` (the curve on a coverage grid) of one study, computed
    together: one scan of the rows and one sort per cell for all of them, one chunk of whole
    cells at a time (``by_chunks``); and each cell's rows ``n`` and distinct test samples
    (``samples``), which the reliability intervals and the later chunked steps need."""
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    predictions = wh.predictions(study)
    cells = _cells(predictions)

    def plans(rows: pl.LazyFrame) -> list[pl.LazyFrame]:
        lazy = metrics.metric_tables(rows, CELL, bins=bins, draws=ECE_NULL_DRAWS)
        return [*(lazy[name] for name in names), risk_coverage(lazy["selective_curve"])]

    frames = by_chunks(predictions, cells, CELL, plans)
    tables = dict(zip((*names, "risk_coverage"), frames, strict=True))
    tables["calibration"] = tables["calibration"].with_columns(bins=pl.lit(bins, pl.Int32))
    return tables, cells


def _cells(predictions: pl.LazyFrame) -> pl.DataFrame:
    """Every cell's keys, rows ``n`` and distinct test samples ``samples``, in key order."""
    return (
        predictions.group_by(CELL)
        .agg(n=pl.len(), samples=pl.col("sample_id").n_unique())
        .sort(CELL, nulls_last=True)
        .collect()
    )


def report(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    out: str | os.PathLike[str] | None = None,
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
    progress: Callable[[str, int, int], None] | None = None,
) -> ReportResult:
    """Compute the metric tables of one study, materialise them, and write the HTML report.

    ``bootstrap`` (B replicates, 0 for none), ``alpha``, ``tau``, ``margin``, ``seed`` and
    ``intervals`` set the statistical layer (``report_tables``); ``noise``, ``stability_at``
    and ``resilience_at`` the scorecard (``scorecard``); ``compare`` the reference models of
    the model-vs-model differences (``report_tables``).

    ``progress``, when given, is called as ``progress(step, done, total)`` after each step
    (``"tables"``, ``"warehouse"``, each section of the page, ``"files"``), with ``total``
    the same in every call, so a caller can draw a progress bar on its first call.
    """
    steps = ["tables", "warehouse", *SECTIONS, "files"]
    done = iter(range(1, len(steps) + 1))

    def advance(step: str) -> None:
        if progress is not None:
            progress(step, next(done), len(steps))

    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    out_dir = Path(out) if out is not None else Path("reports") / study
    wh.writable()
    wh.create()  # rewrites a damaged schema file (it is derived from the code)
    try:
        staged = staged_folder(out_dir)
    except OSError as exc:
        raise OutputError(_cannot_write_report(out_dir, exc)) from None
    try:
        settings = {"bins": bins, "bootstrap": bootstrap, "alpha": alpha, "tau": tau}
        settings |= {"margin": margin, "seed": seed, "intervals": intervals}
        settings |= {"noise": noise, "stability_at": stability_at, "resilience_at": resilience_at}
        settings |= {"compare": compare}
        tables, meta = _report_content(wh, study, settings)
        advance("tables")
        # everything is written to staging first and published only once all of it is
        # written: a failure (a full disk, a table with no rows, Ctrl-C) changes nothing
        with wh.materialise(study) as materialised:
            for view, name in MATERIALISED.items():
                if name in tables:
                    materialised.write(view, tables[name])
            advance("warehouse")
            write_report(staged, tables=tables, meta=meta, progress=advance)
            interrupts.check()
        publish_folder(staged, out_dir)
    except Exception as exc:
        cause = os_error(exc)  # a full disk, a folder made read-only meanwhile …
        if cause is None:
            raise
        raise OutputError(_cannot_write_report(out_dir, cause)) from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    html = out_dir / "index.html"
    table = tables["calibration"]
    ml = tables.get("multilabel")  # labels by name, not code
    thresholds = tables.get("thresholds")
    summary = terminal_summary(
        name_label_codes(table, ml),
        None if thresholds is None else name_label_codes(thresholds, ml),
    )
    summary = "\n".join(s for s in (summary, sources_summary(tables)) if s)
    return ReportResult(study=study, out=out_dir, html=html, calibration=table, summary=summary)


def _report_content(wh: Warehouse, study: str, settings: dict):
    """The report's tables and run metadata (``settings``: the options of
    ``report_tables``). A study replaced meanwhile (its files swapped away under the reads)
    is one clear error, not whatever the failed read said."""
    before = wh.sources(study, derived=False)
    try:
        tables = report_tables(wh, study, **settings)
        run = wh.sql(
            "SELECT * FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
        ).row(0, named=True)
    except Exception as exc:
        if study in wh.studies() and wh.sources(study, derived=False) == before:
            if isinstance(exc, OSError | pl.exceptions.ComputeError) and "parquet" in str(exc):
                raise WarehouseError(
                    f"cannot read study {study!r}: {str(exc).splitlines()[0]} (a damaged file: "
                    "`relcol check` names it)"
                ) from None
            raise
        raise WarehouseError(
            f"study {study!r} was replaced or removed while the report read it; run it again"
        ) from None
    meta = {
        "study": study,
        "run_id": run["run_id"],
        "spec": run["spec"],
        "versions": json.loads(run["versions"]),
        "bins": settings["bins"],
        "created": run["finished_at"].strftime("%Y-%m-%d %H:%M UTC"),
        "rows": run["rows"],
        "draws": ECE_NULL_DRAWS,
    }
    if settings["bootstrap"]:
        alpha = settings["alpha"]
        meta |= {"level": 1 - alpha}
        meta |= {k: settings[k] for k in ("bootstrap", "alpha", "tau", "margin", "seed")}
        meta |= {"intervals": settings["intervals"]}
    return tables, meta


def _cannot_write_report(out_dir: Path, exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return (
        f"cannot write the report to {out_dir}: {exc.strerror or exc}{where}; nothing was changed"
    )


def _warehouse(warehouse: Warehouse | str | os.PathLike[str] | None) -> Warehouse:
    return warehouse if isinstance(warehouse, Warehouse) else Warehouse.default(warehouse)
