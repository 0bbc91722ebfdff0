"""Multi-label studies: calibration per label, micro and macro, and the label × bin grid."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import polars as pl

from relcol.analysis import (
    Replicates,
    multilabel_calibration,
    multilabel_intervals,
    multilabel_pairs,
    rank_tables_with_intervals,
    with_multilabel_intervals,
)
from relcol.analysis import multilabel_bins as label_bin_grid
from relcol.store import Warehouse
from relcol.workflows._shared import from_engine, study_of, with_label_names


def multilabel(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """Multi-label calibration of one study: per label, micro, macro; both modes and targets.

    One row per (cell, mode, target, average): ``mode`` is ``prediction_confidence`` or
    ``positive_class``, ``target`` ``binary`` or ``agreement``, ``average`` ``label``,
    ``micro`` or ``macro`` (docs/multilabel.md; ``relcol.analysis.multilabel_calibration``).
    Empty for a study without multi-label rows.
    """
    wh, study = study_of(warehouse, study)

    def named() -> pl.DataFrame:
        table = multilabel_calibration(label_pairs(wh, study), bins=bins).collect()
        return with_label_names(wh, study, table, after="average")

    return from_engine(wh, study, engine, view="multilabel", bins=bins, polars=named)


def multilabel_bins(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """The label × confidence-bin grid (accuracy − confidence) of one study's multi-label rows."""
    wh, study = study_of(warehouse, study)
    table = from_engine(
        wh,
        study,
        engine,
        view="multilabel_bins",
        bins=bins,
        polars=lambda: label_bin_grid(label_pairs(wh, study), bins=bins).collect(),
    )
    return with_label_names(wh, study, table, after="target")


def multilabel_statistics(
    wh: Warehouse,
    study: str,
    tables: Mapping[str, pl.DataFrame],
    *,
    replicates: int,
    alpha: float,
    bins: int,
    seed: int,
    drawn: Sequence[Replicates] = (),
) -> dict[str, pl.DataFrame]:
    """The report's multi-label tables with bootstrap intervals per label, micro and macro
    (``relcol.analysis.multilabel_intervals``: the 0/1 target, paired over samples, the
    per-label cells' replicates taken from ``drawn`` where it has them): ``multilabel``, and
    the micro and macro discrimination and selective tables
    (``relcol.analysis.rank_tables_with_intervals``)."""
    bounds = multilabel_intervals(
        label_pairs(wh, study),
        replicates=replicates,
        alpha=alpha,
        bins=bins,
        seed=seed,
        drawn=drawn,
    )
    out = {"multilabel": with_multilabel_intervals(tables["multilabel"], bounds)}
    return out | rank_tables_with_intervals(tables, bounds)


def label_pairs(wh: Warehouse, study: str) -> pl.LazyFrame:
    annotations = pl.scan_parquet(
        wh.sources()["annotations"], hive_partitioning=False, missing_columns="insert"
    )
    return multilabel_pairs(wh.predictions(study), annotations.filter(pl.col("study") == study))
