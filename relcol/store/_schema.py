"""The long table's columns and types (docs/development.md), written once.

Every writer casts to ``PREDICTIONS`` before writing and every reader scans with
it, so the two engines see identical types.
"""

from __future__ import annotations

import polars as pl

PREDICTIONS: dict[str, pl.DataType] = {
    "study": pl.String(),
    "dataset": pl.String(),
    "model": pl.String(),
    "corruption": pl.String(),
    "severity": pl.Float64(),
    "seed": pl.Int32(),
    "repeat": pl.Int32(),
    "sample_id": pl.Int64(),
    "label": pl.Int32(),
    "y_true": pl.Int32(),
    "y_clean": pl.Int32(),
    "y_pred": pl.Int32(),
    "confidence": pl.Float64(),
    "correct": pl.Boolean(),
    "proba": pl.List(pl.Float32()),
    "run_id": pl.String(),
}

#: The unique key of a prediction row.
KEY = (
    "study",
    "dataset",
    "model",
    "corruption",
    "severity",
    "seed",
    "repeat",
    "sample_id",
    "label",
)

#: The key of a cell (docs/metrics.md): the grain of every metric table.
CELL = ("study", "dataset", "model", "corruption", "severity", "label")

#: Class names per (study, dataset): code -> name, so reports show `spam`, not `3`.
CLASSES: dict[str, pl.DataType] = {
    "study": pl.String(),
    "dataset": pl.String(),
    "code": pl.Int32(),
    "name": pl.String(),
}

#: What each corruption actually did, per draw (docs/study.md).
CORRUPTIONS: dict[str, pl.DataType] = {
    "study": pl.String(),
    "dataset": pl.String(),
    "corruption": pl.String(),
    "operator": pl.String(),
    "severity": pl.Float64(),
    "repeat": pl.Int32(),
    "realised_rate": pl.Float64(),
    "changed_share": pl.Float64(),
    "params": pl.String(),
}

#: Optional per-prediction extras of an ingested prediction file, keyed like the long table
#: (rows only where the file had them): ``agreement``, the share of annotators agreeing with
#: the prediction (a soft target replacing ``correct``, docs/multilabel.md), ``split``
#: (``calibration`` or ``evaluation``) for recalibration, and ``period`` (the collection
#: period, e.g. a week, that monitoring compares). A side table rather than columns
#: of the long table, so the long table's contract and every existing warehouse stay as
#: they are; metrics that use them join on the key.
ANNOTATIONS: dict[str, pl.DataType] = {
    **{name: PREDICTIONS[name] for name in KEY},
    "agreement": pl.Float64(),
    "split": pl.String(),
    "period": pl.String(),
}
#: The columns of ``ANNOTATIONS`` that are not the key. An annotations file written before
#: one of them existed lacks it: readers insert it as null (``union_by_name`` in DuckDB,
#: ``missing_columns="insert"`` in Polars).
ANNOTATION_EXTRAS = tuple(name for name in ANNOTATIONS if name not in KEY)

#: One row per ingest.
RUNS: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "study": pl.String(),
    "kind": pl.String(),
    "spec": pl.String(),
    "spec_hash": pl.String(),
    "versions": pl.String(),
    "started_at": pl.Datetime("us", "UTC"),
    "finished_at": pl.Datetime("us", "UTC"),
    "rows": pl.Int64(),
    "cells": pl.Int64(),
    "status": pl.String(),
}


def empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Select ``schema``'s columns in order, cast to its types (strict: no silent change)."""
    return frame.select(pl.col(name).cast(dtype, strict=True) for name, dtype in schema.items())
