"""What every workflow shares: a warehouse opened or given by its path, a table from either
engine, a study's run spec and class names beside their codes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import polars as pl

from relcol.checks import check_choice
from relcol.store import CELL, Warehouse

ENGINES = ("polars", "duckdb")


def open_warehouse(path: str | os.PathLike[str] | None = None) -> Warehouse:
    """The warehouse at ``path``, else ``$RELCOL_WAREHOUSE``, else ``./warehouse``.

    Opening creates nothing: reading a warehouse that does not exist is an error, and the
    first ingest creates it. (Here, beside the store alone: opening a warehouse to query it
    loads none of the statistics.)"""
    return Warehouse.default(path)


def warehouse_of(warehouse: Warehouse | str | os.PathLike[str] | None) -> Warehouse:
    """``warehouse`` itself, or the warehouse at that folder (``open_warehouse``)."""
    return warehouse if isinstance(warehouse, Warehouse) else open_warehouse(warehouse)


def study_of(
    warehouse: Warehouse | str | os.PathLike[str] | None, study: str | None
) -> tuple[Warehouse, str]:
    """The warehouse (``warehouse_of``) and the study named, or its only study
    (``Warehouse.require_study``): how every function of one study begins."""
    wh = warehouse_of(warehouse)
    return wh, wh.require_study(study)


def from_engine(
    wh: Warehouse,
    study: str,
    engine: str,
    *,
    view: str,
    polars: Callable[[], pl.DataFrame],
    bins: int | None = None,
) -> pl.DataFrame:
    """One table of ``study``: the SQL ``view`` (DuckDB, its files scoped to the study, with
    ``bins`` where the view has them) or ``polars()``, as ``engine`` says."""
    check_choice("engine", engine, ENGINES)
    if engine == "polars":
        return polars()
    binned = {} if bins is None else {"bins": bins}
    return wh.sql(f"SELECT * FROM {view}", study=study, timeout=None, **binned)


def run_spec(wh: Warehouse, study: str) -> dict:
    """The latest run's spec of a prediction-file or recalibration study (parsed JSON, with
    its ``kind``); for other studies only ``{"kind": ...}``."""
    runs = wh.sql(
        "SELECT kind, spec FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
    )
    if runs.is_empty() or runs["kind"][0] not in ("predictions", "recalibration"):
        return {"kind": runs["kind"][0] if not runs.is_empty() else None}
    return {**json.loads(runs["spec"][0]), "kind": runs["kind"][0]}


def with_label_names(
    wh: Warehouse,
    study: str,
    table: pl.DataFrame,
    *,
    after: str,
    code: str = "label",
    name: str = "label_name",
) -> pl.DataFrame:
    """``table`` with the name of each class or label code in column ``code`` (from the
    study's ``classes``) as column ``name``, inserted after column ``after``."""
    names = wh.sql(
        f"SELECT dataset, code AS {code}, name AS {name} FROM classes WHERE study = ?", [study]
    )
    out = table.join(names, on=["dataset", code], how="left", maintain_order="left")
    columns = list(table.columns)
    columns.insert(columns.index(after) + 1, name)
    return out.select(columns)


def cells_of(predictions: pl.LazyFrame, *, samples: bool = True) -> pl.DataFrame:
    """Every cell's keys, rows ``n`` and (with ``samples``) distinct test samples
    ``samples``, in key order."""
    counts = {"n": pl.len()} | ({"samples": pl.col("sample_id").n_unique()} if samples else {})
    return predictions.group_by(CELL).agg(**counts).sort(CELL, nulls_last=True).collect()
