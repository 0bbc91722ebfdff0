"""Studies: open a warehouse, run a study or a simulation into it, and read its metric tables.

>>> import relcol
>>> wh = relcol.open_warehouse("warehouse")             # doctest: +SKIP
>>> wh.predictions("default").filter(...).collect()      # doctest: +SKIP
>>> relcol.calibration(wh, study="default")              # doctest: +SKIP
>>> wh.sql("SELECT model, avg(ece) FROM calibration GROUP BY ALL")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import threading
import tomllib
from collections.abc import Callable
from functools import partial

import polars as pl

from relcol import metrics
from relcol.analysis import model_references
from relcol.analysis import scorecard as scorecard_table
from relcol.checks import check_int
from relcol.metrics import by_chunks
from relcol.store import CELL, IngestResult, Warehouse
from relcol.study import MAX_ROWS, SCORECARD, Study, load_study, run_study
from relcol.workflows._beside import Stopped
from relcol.workflows._portable import in_portable_process
from relcol.workflows._shared import cells_of, from_engine, study_of, warehouse_of


def ingest(
    study: Study | str | os.PathLike[str] | None = None,
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int | None = 1,
    backend: str = "local",
    max_rows: int | None = MAX_ROWS,
    allow_outside_paths: bool = False,
    portable: bool = False,
) -> IngestResult:
    """Run a study (a ``Study``, a TOML path, or None for the built-in default) into a warehouse.

    ``jobs`` local processes (None: one per core this process may use, as the command
    line does by default), or ``backend="dask"`` (the cluster at
    ``$DASK_SCHEDULER_ADDRESS``, else a local one with ``jobs`` workers). A study that
    would write more than ``max_rows`` rows is refused before any fit (None: no bound).
    A spec's dataset files must lie in its folder unless ``allow_outside_paths``.

    With ``portable`` the fits run in a child process started with
    ``relcol.study.portable_environment()`` (x86-64 Linux only), so the predictions are
    byte-identical on any such machine with the same packages; ``progress`` and errors
    come back from the child as if it ran here (docs/python.md).
    """
    if max_rows is not None:
        check_int("max_rows", max_rows, note=" or None")
    if not isinstance(study, Study):
        study = load_study(study, allow_outside_paths=allow_outside_paths)
    options = {"replace": replace, "jobs": jobs, "backend": backend, "max_rows": max_rows}
    if portable:
        return in_portable_process(study, warehouse_of(warehouse), progress=progress, **options)
    return run_study(study, warehouse_of(warehouse), progress=progress, **options)


def calibration(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """The calibration table (one row per cell) of one study, from either engine."""
    wh, study = study_of(warehouse, study)
    frame = from_engine(
        wh,
        study,
        engine,
        view="calibration",
        bins=bins,
        polars=lambda: metrics.calibration(wh.predictions(study), CELL, bins=bins).collect(),
    )
    return frame.sort(CELL, nulls_last=True)


def consistency(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    engine: str = "polars",
) -> pl.DataFrame:
    """The consistency table of one study (one row per cell × axis with τ >= 2), from either engine."""
    wh, study = study_of(warehouse, study)
    frame = from_engine(
        wh,
        study,
        engine,
        view="consistency",
        polars=lambda: consistency_table(wh.predictions(study)),
    )
    return frame.sort([*CELL, "axis"], nulls_last=True)


def scorecard(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    baseline: str | None = None,
    weights: dict[str, float] | None = None,
    bins: int = 15,
    noise: str | None = None,
    stability_at: float | None = None,
    resilience_at: float | None = None,
) -> pl.DataFrame:
    """The robustness scorecard (docs/consistency.md) of one study: one row per dataset × model.

    ``weights`` maps ``stability``, ``resilience`` and ``reliability`` to their weights in
    the composite (default 0.4/0.3/0.3); corruption errors are against ``baseline``
    (default: the study's reference model, ``study_reference``).
    Stability is measured under corruption ``noise`` at severity ``stability_at``,
    resilience at ``resilience_at``; each left as None comes from the study spec's
    ``[scorecard]`` table, else the defaults ``gaussian_noise``, 0.05 and 0.1.
    """
    wh, study = study_of(warehouse, study)
    return scorecard_table(
        calibration(wh, study=study, bins=bins),
        wh.predictions(study),
        baseline=baseline if baseline is not None else study_reference(wh, study),
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


def study_reference(wh: Warehouse, study: str) -> str | None:
    """The one model the study's models are compared with, by the model-vs-model
    differences' default rule (``relcol.analysis.model_references``): ``study_baseline``, else
    the first model by name; None for a study without models. The scorecard's corruption
    errors are against it too."""
    models = wh.sql("SELECT DISTINCT model FROM predictions WHERE study = ?", [study])
    names = sorted(models["model"].drop_nulls())
    if not names:
        return None
    references, _ = model_references(names, None, study_baseline(wh, study))
    return references[0]


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
        ConsistencySimulation(**simulation), warehouse_of(warehouse), replace=replace
    )


#: Rows per chunk of the consistency table: its plan holds several frames per row (each
#: sample's replicates side by side), about 0.4 kB a row; in chunks of 3·10⁶ rows it peaked
#: 1.25 GB above the warehouse's scan on 10⁷ rows, in chunks of 3·10⁵ 0.05 GB, no slower.
CONSISTENCY_CHUNK_ROWS = 300_000


def consistency_table(
    predictions: pl.LazyFrame,
    cells: pl.DataFrame | None = None,
    *,
    chunks=None,
    stop: threading.Event | None = None,
) -> pl.DataFrame:
    """The consistency table in Polars, one chunk of whole cells at a time (``cells``: the
    cells with their rows ``n``, if known; ``chunks(cells, plans)``: where the chunks are
    computed, default ``by_chunks`` here; ``stop``: once set, ``Stopped`` is raised before
    the next chunk here, as ``relcol.workflows._beside.beside`` asks)."""
    cells = cells_of(predictions) if cells is None else cells
    if chunks is None:
        plans = _consistency_plans if stop is None else partial(_until_stopped, stop)
        [frame] = by_chunks(predictions, cells, CELL, plans, budget=CONSISTENCY_CHUNK_ROWS)
    else:
        [frame] = chunks(cells, _consistency_plans)
    return frame.sort([*CELL, "axis"], nulls_last=True)


def _consistency_plans(rows: pl.LazyFrame) -> list[pl.LazyFrame]:
    return [metrics.consistency(rows, CELL)]


def _until_stopped(stop: threading.Event, rows: pl.LazyFrame) -> list[pl.LazyFrame]:
    if stop.is_set():
        raise Stopped
    return _consistency_plans(rows)
