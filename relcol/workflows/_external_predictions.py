"""Predictions made elsewhere: ingest a file of them, and the tables only such a study has.

Reading and validating a file is ``relcol.data.read_predictions``; this module commits it
through ``Warehouse.commit`` exactly as a study is committed (all checks first, one atomic
rename, refusal to re-ingest a name without ``replace``). ``by_class``,
``confidence_sources`` and ``soft_agreement`` read what only an ingested file records.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from relcol import metrics
from relcol.analysis import soft_agreement as agreement_table
from relcol.checks import check_bins
from relcol.data import merge_predictions, read_predictions, spec_text
from relcol.errors import ParameterError
from relcol.metrics import by_chunks
from relcol.store import CELL, IngestResult, Warehouse, check_name
from relcol.study import versions
from relcol.workflows._shared import (
    cells_of,
    from_engine,
    run_spec,
    study_of,
    warehouse_of,
    with_label_names,
)


@dataclass(frozen=True)
class PredictionsResult(IngestResult):
    """What ``ingest_predictions`` wrote: an ``IngestResult`` and what the file held (its
    confidence sources and their kinds, the class or label names, whether it is multi-label,
    the columns it ignored, and which curves the clean rows gave a severity 0:
    ``clean_reference["served"]``, and which had none to take, ``["without"]``, each a list of
    ``[dataset, model, corruption]``)."""

    sources: tuple[str, ...]
    classes: tuple[str, ...]
    multilabel: bool
    ignored: tuple[str, ...]
    source_kinds: dict[str, str]
    clean_reference: dict[str, list[list[str]]]


def ingest_predictions(
    source: str | os.PathLike[str] | pl.DataFrame | Sequence[str | os.PathLike[str]],
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    columns: Mapping[str, str] | None = None,
    classes: Sequence[str] | str | None = None,
    model: str | Sequence[str] | None = None,
    dataset: str | None = None,
    proba_prefix: str = "p_",
    tolerance: float = 1e-3,
    ensemble: bool = False,
    replace: bool = False,
) -> PredictionsResult:
    """Validate a prediction file (CSV, TSV, Parquet, JSON lines, or a frame), or several
    files, and ingest them as one study.

    Parameters
    ----------
    source
        The file, a Polars DataFrame, or a list (or tuple) of files. The files of a list
        each hold their own models (named by a ``model`` column, or by the name ``model``
        gives the file, else by the file's name without suffix), name the same classes,
        and are all checked before anything is written; samples of one dataset pair
        across them by ``sample_id`` (by default the row position).
    warehouse
        A Warehouse or its folder (default: ``$RELCOL_WAREHOUSE``, else ``./warehouse``).
    name
        The study name (default: the file's stem; required for a frame or a list).
    columns, classes, proba_prefix, tolerance, ensemble
        How to read the file (each file of a list alike): see
        ``relcol.data.read_predictions``.
    dataset
        The dataset name when a file has no ``dataset`` column (default: the file's stem;
        for a list, the study name, so that the files' samples pair).
    model
        The model name of a file without a ``model`` column (default: the study name;
        refused for a file with one, whose column names its models). For a list of files, a
        list of names, one per file in the same order (default: each file's name without
        suffix).
    replace
        Replace a study of the same name wholesale instead of refusing.

    Returns
    -------
    PredictionsResult
        The study, its run id, row and cell counts, the confidence sources, the class
        names and the file's ignored columns.
    """
    started = datetime.now(UTC)
    wh = warehouse_of(warehouse)
    files = _listed(source)
    models = _model_names(model, 1 if files is None else len(files))
    if files is None or len(files) == 1:  # one source: a list of one is that file
        source, files = source if files is None else files[0], None
        model = model if models is None else models[0]
    if name is None:
        if not isinstance(source, str | os.PathLike) or files is not None:
            what = "a DataFrame" if files is None else "several prediction files"
            raise ParameterError(f"name is required when ingesting {what}.")
        name = Path(source).stem
    check_name(name)
    wh.refuse_existing(name, replace)  # before reading a large file only to refuse it
    reading = dict(
        columns=columns,
        classes=classes,
        proba_prefix=proba_prefix,
        tolerance=tolerance,
        ensemble=ensemble,
    )
    if files is None:
        read = read_predictions(
            source, model=name if model is None else model, dataset=dataset, **reading
        )
        where = str(source) if isinstance(source, str | os.PathLike) else "the DataFrame"
        _check_named(read, model is not None, where)
    else:
        reads = [
            read_predictions(
                file,
                model=Path(file).stem if models is None else models[i],
                dataset=name if dataset is None else dataset,
                **reading,
            )
            for i, file in enumerate(files)
        ]
        for read, file in zip(reads, files, strict=True):
            _check_named(read, models is not None, str(file))
        read = merge_predictions(reads, [str(file) for file in files])
    committed = wh.commit(
        name,
        kind="predictions",
        spec=spec_text(read.spec),
        versions=versions(),
        cells=read.rows.select([k for k in CELL if k != "study"]).unique().height,
        parts=[read.rows],
        sides={"classes": read.classes, "annotations": read.annotations},
        prefix="p",
        keyed_by_name=True,
        started_at=started,
        replace=replace,
    )
    return PredictionsResult(
        **vars(committed),
        sources=read.sources,
        classes=tuple(read.spec["classes"]),
        multilabel=read.multilabel,
        ignored=read.ignored,
        source_kinds=dict(read.spec["source_kinds"]),
        clean_reference=read.spec["clean_reference"],
    )


def _listed(source) -> list[str | os.PathLike[str]] | None:
    """The files of a list (or tuple) of sources, None for anything else; a list holds
    files, at least one, each once."""
    if not isinstance(source, list | tuple):
        return None  # one file or a frame (read_predictions says what else is wrong)
    files = list(source)
    if not files or not all(isinstance(f, str | os.PathLike) for f in files):
        raise ParameterError(
            "source must be a file, a DataFrame or a non-empty list of files (concatenate "
            "DataFrames, with a model column, into one)."
        )
    resolved = [Path(f).resolve() for f in files]
    repeated = next(
        (f for f, r in zip(files, resolved, strict=True) if resolved.count(r) > 1), None
    )
    if repeated is not None:
        raise ParameterError(f"the prediction file {str(repeated)!r} is given twice.")
    return files


def _check_named(read, named: bool, where: str) -> None:
    """Refuse a model name given for a file whose model column names its models."""
    column = read.spec["columns"].get("model")
    if named and column is not None:
        raise ParameterError(
            f"{where} has a model column ({column!r}), which names its models; model names "
            "the model of a file without one."
        )


def _model_names(model, files: int) -> list[str] | None:
    """The model names of ``files`` files given as a list (or tuple), one per file, each
    once; None when ``model`` is one name (only for one file) or not given."""
    if not isinstance(model, list | tuple):
        if model is not None and files > 1:
            raise ParameterError(
                f"model is one name for {files} prediction files: give a list of names, one "
                "per file in the same order (or none: each file is named by its model "
                "column, else by its file name without suffix)."
            )
        return None
    if len(model) != files:
        raise ParameterError(
            f"model gives {len(model)} name{'s' if len(model) != 1 else ''} for {files} "
            f"prediction file{'s' if files != 1 else ''}: give one per file, in the same order."
        )
    repeated = next((m for m in model if model.count(m) > 1), None)
    if repeated is not None:
        raise ParameterError(
            f"model gives the name {repeated!r} to two files: each model of a study comes "
            "from one file."
        )
    return list(model)


def by_class(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
) -> pl.DataFrame:
    """Calibration per cell and predicted class, with the class's name (``class_name``).

    Every column of ``calibration`` but ``classwise_ece``: within each predicted class that
    would take every class's bins again, K² × M sums per cell where the per-cell table takes
    K × M (8 million groups and 7 GB for 8 cells of 1000 classes)."""
    wh, study = study_of(warehouse, study)
    keys = [*CELL, "y_pred"]
    rows = wh.predictions(study)

    def plans(chunk: pl.LazyFrame) -> list[pl.LazyFrame]:
        return [metrics.calibration(chunk, keys, bins=bins, classwise=False)]

    # a run of whole cells at a time, as the per-cell tables: a file of 3·10⁷ rows held
    # 4.8 GB sorted at once here
    (table,) = by_chunks(rows, cells_of(rows, samples=False), CELL, plans)
    table = table.drop("classwise_ece")
    table = table.select(*keys, *[c for c in table.columns if c not in keys])
    return with_label_names(wh, study, table, after="y_pred", code="y_pred", name="class_name")


def confidence_sources(
    warehouse: Warehouse | str | os.PathLike[str] | None = None, *, study: str | None = None
) -> pl.DataFrame:
    """What each confidence source of an ingested prediction file is, and its map into [0, 1].

    One row per source: ``source``, ``kind`` (``probability``: calibration metrics apply as
    is; ``score``: an ordering mapped into [0, 1], compare it by discrimination and
    recalibrate it before reading its calibration; ``stated``: a confidence column as the
    file gave it), ``score`` (the derived score's name, or null), ``formula`` and ``mapping``.
    Empty for a study that is not an ingested prediction file.
    """
    wh, study = study_of(warehouse, study)
    spec = run_spec(wh, study)
    derived = {**spec.get("llm", {}).get("scores", {}), **spec.get("ensemble", {})}
    out = []
    for source, kind in spec.get("source_kinds", {}).items():
        score = source.rsplit(":", 1)[-1] if ":" in source else None
        entry = derived.get(score) if kind != "stated" else None
        if kind == "probability" and entry is None:
            entry = {"formula": "the probability vector's value for y_pred", "mapping": "none"}
        out.append(
            {
                "source": source,
                "kind": kind,
                "score": score if entry is not None and score in derived else None,
                "formula": entry["formula"] if entry else "a confidence as the file gave it",
                "mapping": entry["mapping"] if entry else "none",
            }
        )
    schema = dict.fromkeys(("source", "kind", "score", "formula", "mapping"), pl.String)
    return pl.DataFrame(out, schema=schema)


def soft_agreement(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """Confidence against the annotators' agreement on single-label rows, per cell: the
    correlation of c with a and calibration with a as the target
    (``relcol.analysis._agreement``; the SQL twin is the ``soft_agreement`` view). Empty when
    the file had no agreement column."""
    wh, study = study_of(warehouse, study)
    bins = check_bins(bins)

    def polars() -> pl.DataFrame:
        annotations = pl.scan_parquet(wh.sources()["annotations"], hive_partitioning=False)
        rows = annotations.filter(pl.col("study") == study)
        return agreement_table(wh.predictions(study), rows, bins=bins)

    return from_engine(wh, study, engine, view="soft_agreement", bins=bins, polars=polars)
