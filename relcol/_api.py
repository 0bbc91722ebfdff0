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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from relcol import metrics
from relcol.errors import RelcolError
from relcol.report import terminal_summary, write_report
from relcol.store import CELL, MATERIALISED, Warehouse
from relcol.study import IngestResult, Study, load_study, run_study

ENGINES = ("polars", "duckdb")


def open_warehouse(path: str | os.PathLike[str] | None = None) -> Warehouse:
    """The warehouse at ``path``, else ``$RELCOL_WAREHOUSE``, else ``./warehouse`` (created if absent)."""
    return Warehouse.default(path)


def ingest(
    study: Study | str | os.PathLike[str] | None = None,
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    backend: str = "local",
) -> IngestResult:
    """Run a study (a ``Study``, a TOML path, or None for the built-in default) into a warehouse.

    ``jobs`` local processes, or ``backend="dask"`` (the cluster at
    ``$DASK_SCHEDULER_ADDRESS``, else a local one with ``jobs`` workers).
    """
    if not isinstance(study, Study):
        study = load_study(study)
    return run_study(
        study, _warehouse(warehouse), replace=replace, progress=progress, jobs=jobs, backend=backend
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
        frame = wh.sql("SELECT * FROM calibration WHERE study = ?", [study], bins=bins)
    else:
        raise RelcolError(f"engine must be one of {', '.join(ENGINES)}. Got {engine!r}.")
    return frame.sort(CELL, nulls_last=True)


@dataclass(frozen=True)
class ReportResult:
    """What ``report`` wrote."""

    study: str
    out: Path
    html: Path
    calibration: pl.DataFrame
    summary: str


def report_tables(wh: Warehouse, study: str, *, bins: int = 15) -> dict[str, pl.DataFrame]:
    """Every table the report shows and exports, by name (``calibration`` first).

    Each metric family adds its table here; the report shows a section for each
    table it finds, and ``relcol report`` materialises those named in
    ``relcol.store.MATERIALISED``.
    """
    return {
        "calibration": calibration(wh, study=study, bins=bins).with_columns(
            bins=pl.lit(bins, pl.Int32)
        ),
        "corruptions": wh.sql("SELECT * FROM corruptions WHERE study = ?", [study]),
    }


def report(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    out: str | os.PathLike[str] | None = None,
    bins: int = 15,
) -> ReportResult:
    """Compute the metric tables of one study, materialise them, and write the HTML report."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    tables = report_tables(wh, study, bins=bins)
    for view, name in MATERIALISED.items():
        if name in tables:
            wh.write_table(view, study, tables[name])
    run = wh.sql(
        "SELECT * FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
    ).row(0, named=True)
    meta = {
        "study": study,
        "run_id": run["run_id"],
        "spec": run["spec"],
        "versions": json.loads(run["versions"]),
        "bins": bins,
        "created": run["finished_at"].strftime("%Y-%m-%d %H:%M UTC"),
        "rows": run["rows"],
    }
    out_dir = Path(out) if out is not None else Path("reports") / study
    html = write_report(out_dir, tables=tables, meta=meta)
    table = tables["calibration"]
    return ReportResult(
        study=study, out=out_dir, html=html, calibration=table, summary=terminal_summary(table)
    )


def _warehouse(warehouse: Warehouse | str | os.PathLike[str] | None) -> Warehouse:
    return warehouse if isinstance(warehouse, Warehouse) else Warehouse.default(warehouse)
