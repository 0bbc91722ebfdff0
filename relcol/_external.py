"""The Python API for predictions made elsewhere: ingest them, score multi-label rows, recalibrate.

``relcol._api`` re-exports these; the CLI commands ``relcol ingest --predictions``,
``relcol recalibrate`` and ``relcol example`` call them. Reading and validating a file is
``relcol.data.read_predictions``; the maps and their before/after table are in
``relcol.analysis``; this module only wires them to the warehouse, committing through
``Warehouse.ingest`` exactly as a study does (all checks first, one atomic rename, refusal
to re-ingest a name without ``replace``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from relcol import metrics
from relcol.analysis import (
    calibration_split,
    multilabel_calibration,
    multilabel_intervals,
    multilabel_micro_tables,
    multilabel_pairs,
    rank_tables_with_intervals,
    recalibrate_rows,
    recalibration_table,
    with_multilabel_intervals,
)
from relcol.analysis import (
    multilabel_bins as _multilabel_bins,
)
from relcol.analysis import soft_agreement as agreement_table
from relcol.checks import check_bins
from relcol.data import (
    EMAIL_LABELS,
    EMAIL_SEED_AT_LEAST,
    EMAIL_SEED_TABLE,
    email_predictions,
    read_predictions,
    spec_text,
)
from relcol.errors import InputError, ParameterError, WarehouseError
from relcol.store import CELL, KEY, Warehouse, check_name
from relcol.study import versions

ENGINES = ("polars", "duckdb")
EXAMPLES = ("email",)


@dataclass(frozen=True)
class PredictionsResult:
    """What ``ingest_predictions`` wrote."""

    study: str
    run_id: str
    rows: int
    cells: int
    parts: int
    seconds: float
    warehouse: str
    sources: tuple[str, ...]
    classes: tuple[str, ...]
    multilabel: bool
    ignored: tuple[str, ...]
    source_kinds: dict[str, str]


def ingest_predictions(
    source: str | os.PathLike[str] | pl.DataFrame,
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    columns: Mapping[str, str] | None = None,
    classes: Sequence[str] | str | None = None,
    model: str | None = None,
    dataset: str | None = None,
    proba_prefix: str = "p_",
    tolerance: float = 1e-3,
    ensemble: bool = False,
    replace: bool = False,
) -> PredictionsResult:
    """Validate a prediction file (CSV, TSV, Parquet, JSON lines, or a frame) and ingest it.

    Parameters
    ----------
    source
        The file, or a Polars DataFrame.
    warehouse
        A Warehouse or its folder (default: ``$RELCOL_WAREHOUSE``, else ``./warehouse``).
    name
        The study name (default: the file's stem; required for a frame).
    columns, classes, dataset, proba_prefix, tolerance, ensemble
        How to read the file: see ``relcol.data.read_predictions``.
    model
        The model name when the file has no ``model`` column (default: the study name).
    replace
        Replace a study of the same name wholesale instead of refusing.

    Returns
    -------
    PredictionsResult
        The study, its run id, row and cell counts, the confidence sources, the class
        names and the file's ignored columns.
    """
    started, clock = datetime.now(UTC), time.perf_counter()
    wh = _warehouse(warehouse)
    if name is None:
        if isinstance(source, pl.DataFrame):
            raise ParameterError("name is required when ingesting a DataFrame.")
        name = Path(source).stem
    check_name(name)
    _refuse_existing(wh, name, replace)
    read = read_predictions(
        source,
        columns=columns,
        classes=classes,
        model=name if model is None else model,
        dataset=dataset,
        proba_prefix=proba_prefix,
        tolerance=tolerance,
        ensemble=ensemble,
    )
    spec = spec_text(read.spec)
    packages = versions()
    cells = read.rows.select([k for k in CELL if k != "study"]).unique().height
    with wh.ingest(name, replace=replace, run_id=_content_id("p", name, spec, packages)) as staging:
        stamp = {"study": pl.lit(name), "run_id": pl.lit(staging.run_id)}
        staging.write_part(read.rows.with_columns(**stamp))
        staging.write_side("classes", read.classes.with_columns(study=pl.lit(name)))
        if read.annotations is not None:
            staging.write_side("annotations", read.annotations.with_columns(study=pl.lit(name)))
        staging.write_run(
            kind="predictions",
            spec=spec,
            versions=packages,
            started_at=started,
            cells=cells,
        )
    return PredictionsResult(
        study=name,
        run_id=staging.run_id,
        rows=staging.rows,
        cells=cells,
        parts=staging.parts,
        seconds=time.perf_counter() - clock,
        warehouse=str(wh.root),
        sources=read.sources,
        classes=tuple(read.spec["classes"]),
        multilabel=read.multilabel,
        ignored=read.ignored,
        source_kinds=dict(read.spec["source_kinds"]),
    )


# -- multi-label ------------------------------------------------------------------------------


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
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    if engine == "duckdb":
        return wh.sql("SELECT * FROM multilabel WHERE study = ?", [study], bins=bins, timeout=None)
    _check_engine(engine)
    table = multilabel_calibration(_pairs(wh, study), bins=bins).collect()
    return _with_label_names(wh, study, table, after="average")


def multilabel_bins(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
    engine: str = "polars",
) -> pl.DataFrame:
    """The label × confidence-bin grid (accuracy − confidence) of one study's multi-label rows."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    if engine == "duckdb":
        table = wh.sql(
            "SELECT * FROM multilabel_bins WHERE study = ?", [study], bins=bins, timeout=None
        )
    else:
        _check_engine(engine)
        table = _multilabel_bins(_pairs(wh, study), bins=bins).collect()
    return _with_label_names(wh, study, table, after="target")


def multilabel_statistics(
    wh: Warehouse,
    study: str,
    tables: Mapping[str, pl.DataFrame],
    *,
    replicates: int,
    alpha: float,
    bins: int,
    seed: int,
) -> dict[str, pl.DataFrame]:
    """The report's multi-label tables with bootstrap intervals per label, micro and macro
    (``relcol.analysis.multilabel_intervals``: the 0/1 target, paired over samples):
    ``multilabel``, and the micro and macro discrimination and selective tables
    (``relcol.analysis.rank_tables_with_intervals``)."""
    bounds = multilabel_intervals(
        _pairs(wh, study), replicates=replicates, alpha=alpha, bins=bins, seed=seed
    )
    out = {"multilabel": with_multilabel_intervals(tables["multilabel"], bounds)}
    return out | rank_tables_with_intervals(tables, bounds)


def _pairs(wh: Warehouse, study: str) -> pl.LazyFrame:
    annotations = pl.scan_parquet(
        wh.sources()["annotations"], hive_partitioning=False, missing_columns="insert"
    )
    return multilabel_pairs(wh.predictions(study), annotations.filter(pl.col("study") == study))


def _with_label_names(
    wh: Warehouse, study: str, table: pl.DataFrame, *, after: str
) -> pl.DataFrame:
    names = wh.sql(
        "SELECT dataset, code AS label, name AS label_name FROM classes WHERE study = ?", [study]
    )
    out = table.join(names, on=["dataset", "label"], how="left", maintain_order="left")
    columns = list(table.columns)
    columns.insert(columns.index(after) + 1, "label_name")
    return out.select(columns)


# -- recalibration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RecalibrationResult:
    """What ``recalibrate`` wrote: a new study of evaluation-split rows, before and after."""

    study: str
    source: str
    run_id: str
    rows: int
    methods: tuple[str, ...]
    table: pl.DataFrame
    fits: list[dict]
    seconds: float
    warehouse: str


def recalibrate(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    methods: Sequence[str] | str = ("temperature",),
    fraction: float = 0.5,
    stored_split: bool = False,
    seed: int = 0,
    name: str | None = None,
    bins: int = 15,
    histogram_bins: int = 15,
    replace: bool = False,
) -> RecalibrationResult:
    """Fit recalibration maps on a calibration split of a study and judge them on the rest.

    The new study (default name ``<study>-recal-<methods>``) holds the evaluation-split rows
    of ``study`` twice over: as they were (each model under its own name) and recalibrated
    (``<model>+<method>``), so every metric and the report compare them side by side, on
    the same samples. See ``relcol.analysis._recalibration`` for the maps and the split.

    Parameters
    ----------
    study
        The study to recalibrate (default: the only study).
    methods
        Some of ``temperature``, ``platt``, ``isotonic``, ``histogram``.
    fraction, seed
        The share of each dataset's sample ids in the calibration split, and the split's seed.
    stored_split
        Use the ``split`` column the prediction file had instead (``fraction`` is ignored).
    name
        The new study's name.
    bins
        Equal-width bins of the ECE in the before/after table.
    histogram_bins
        Equal-mass bins of the histogram-binning map.
    replace
        Replace a study of the same name wholesale instead of refusing.
    """
    started, clock = datetime.now(UTC), time.perf_counter()
    bins = check_bins(bins)
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    methods = [methods] if isinstance(methods, str) else list(dict.fromkeys(methods))
    name = name or f"{study}-recal-{'-'.join(methods)}"
    check_name(name, "recalibrated study name")
    if name == study:
        raise ParameterError(f"name must differ from the study recalibrated ({study!r}).")
    _refuse_existing(wh, name, replace)
    rows = wh.predictions(study).collect()
    annotations = wh.sql("SELECT * FROM annotations WHERE study = ?", [study])
    if stored_split:
        split = (
            annotations.filter(pl.col("split").is_not_null())
            .select("dataset", "sample_id", "split")
            .unique()
        )
        if split.is_empty():
            raise InputError(
                f"study {study!r} has no stored split (its prediction file had no split column); "
                "split by --fraction instead"
            )
        missing = {"calibration", "evaluation"} - set(split.get_column("split"))
        if missing:
            raise InputError(
                f"study {study!r}: its stored split has no {' and no '.join(sorted(missing))} "
                "samples; expected both"
            )
        how = {"kind": "stored", "column": "split"}
    else:
        split = calibration_split(rows.select("dataset", "sample_id"), fraction=fraction, seed=seed)
        how = {"kind": "fraction", "fraction": fraction, "seed": seed}
    done = recalibrate_rows(rows, split, methods, bins=histogram_bins)
    table = _with_label_names(
        wh, study, recalibration_table(done.rows, done.models, bins=bins), after="label"
    )
    source_run = wh.sql("SELECT run_id FROM runs WHERE study = ?", [study])["run_id"][0]
    spec = json.dumps(
        {
            "kind": "recalibration",
            "source_study": study,
            "source_run_id": source_run,
            "methods": methods,
            "split": how,
            "fitted_on": "calibration-split rows at severity 0, per (dataset, model, seed, label)",
            "judged_on": "evaluation-split rows, every severity",
            "histogram_bins": histogram_bins,
            "models": {after: {"model": m, "method": x} for after, (m, x) in done.models.items()},
            "fits": done.fits,
        },
        indent=2,
        sort_keys=True,
        default=str,
    )
    packages = versions()
    classes = wh.sql("SELECT * FROM classes WHERE study = ?", [study])
    kept = _carried_annotations(annotations, done.rows, done.models)
    with wh.ingest(name, replace=replace, run_id=_content_id("r", name, spec, packages)) as staging:
        staging.write_part(
            done.rows.with_columns(study=pl.lit(name), run_id=pl.lit(staging.run_id))
        )
        staging.write_side("classes", classes.with_columns(study=pl.lit(name)))
        if kept is not None:
            staging.write_side("annotations", kept.with_columns(study=pl.lit(name)))
        staging.write_run(
            kind="recalibration",
            spec=spec,
            versions=packages,
            started_at=started,
            cells=done.rows.select([k for k in CELL if k != "study"]).unique().height,
        )
    return RecalibrationResult(
        study=name,
        source=study,
        run_id=staging.run_id,
        rows=staging.rows,
        methods=tuple(methods),
        table=table.with_columns(study=pl.lit(name)),
        fits=done.fits,
        seconds=time.perf_counter() - clock,
        warehouse=str(wh.root),
    )


def recalibration(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
) -> pl.DataFrame:
    """The before/after table of a study written by ``recalibrate`` (empty for other studies)."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    spec = _spec(wh, study)
    if spec.get("kind") != "recalibration":
        return pl.DataFrame()
    models = {after: (v["model"], v["method"]) for after, v in spec["models"].items()}
    table = recalibration_table(wh.predictions(study), models, bins=bins)
    return _with_label_names(wh, study, table, after="label")


def _carried_annotations(
    annotations: pl.DataFrame, rows: pl.DataFrame, models: dict[str, tuple[str, str]]
) -> pl.DataFrame | None:
    """The source's annotations of the evaluation rows, for the originals and their copies."""
    if annotations.is_empty():
        return None
    key = [k for k in KEY if k != "study"]
    kept = annotations.drop("study").join(
        rows.select(key).unique(), on=key, how="semi", nulls_equal=True
    )
    copies = [
        kept.filter(pl.col("model") == model).with_columns(model=pl.lit(after))
        for after, (model, _) in models.items()
    ]
    return pl.concat([kept, *copies])


# -- the seed's example -----------------------------------------------------------------------


@dataclass(frozen=True)
class ExampleResult:
    """What ``example`` ingested, and relcol's numbers beside the seed document's."""

    ingest: PredictionsResult
    comparison: pl.DataFrame


def example(
    name: str = "email",
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    seed: int = 0,
    replace: bool = False,
) -> ExampleResult:
    """Generate a built-in example and ingest it as a prediction file would be.

    ``email`` is the seed document's dummy multi-label email dataset
    (``relcol.data.email_predictions``), ingested as study ``email-example``; the result
    compares relcol's numbers with the seed's table.
    """
    if name not in EXAMPLES:
        raise ParameterError(f"example must be one of {', '.join(EXAMPLES)}. Got {name!r}.")
    wh = _warehouse(warehouse)
    result = ingest_predictions(
        email_predictions(seed),
        wh,
        name=study or "email-example",
        model="llm",
        dataset="email",
        classes=EMAIL_LABELS,
        replace=replace,
    )
    return ExampleResult(result, email_comparison(wh, study=result.study))


#: What each number of the comparison is in relcol's terms.
_DEFINITIONS = {
    "accuracy": "micro, prediction confidence: share of (email, label) decisions right",
    "ece": "micro, prediction confidence, 15 equal-width bins",
    "mce": "micro, prediction confidence: the largest |acc - conf| of those 15 bins",
    "brier": "brier_top micro: mean (c − z)², the same in both modes",
    "nll": "nll_top micro: binary cross-entropy of c against z",
    "auroc": "relcol.metrics auroc of c for right vs wrong, all pairs pooled",
    "pr_auc": "relcol.metrics aupr_success: average precision of c, positive = right",
    "cohens_d": "relcol.metrics cohens_d of c, right vs wrong (σ with ddof = 1)",
    "point_biserial": "relcol.metrics point_biserial: Pearson r of c and z",
}


def email_comparison(
    warehouse: Warehouse | str | os.PathLike[str] | None = None, *, study: str = "email-example"
) -> pl.DataFrame:
    """The seed document's §7.2 table, every row, beside relcol's for the ingested example.

    ``relation`` is ``≥`` where the seed states a lower bound only (MCE "0.25+", PR-AUC
    "0.85+"), else ``=``. Discrimination numbers come from ``relcol.metrics.REGISTRY``
    (``auroc``, ``aupr_success`` as PR-AUC, ``cohens_d``, ``point_biserial``), computed on
    every (email, label) pair pooled.
    """
    wh = _warehouse(warehouse)
    table = multilabel(wh, study=study).filter(
        (pl.col("average") == "micro")
        & (pl.col("mode") == "prediction_confidence")
        & (pl.col("target") == "binary")
    )
    if table.height != 1:
        raise InputError(f"study {study!r} is not the email example (one multi-label source)")
    row = table.row(0, named=True)
    ours = {
        "accuracy": row["accuracy"],
        "ece": row["ece"],
        "mce": row["mce"],
        "brier": row["brier_top"],
        "nll": row["nll_top"],
    }
    pooled = wh.predictions(study).with_columns(pooled=pl.lit("all"))
    for name, metric in (
        ("auroc", "auroc"),
        ("pr_auc", "aupr_success"),
        ("cohens_d", "cohens_d"),
        ("point_biserial", "point_biserial"),
    ):
        entry = metrics.REGISTRY[metric]
        ours[name] = entry.compute(pooled, ["pooled"]).collect()[metric][0]
    return pl.DataFrame(
        {
            "metric": list(EMAIL_SEED_TABLE),
            "relation": ["≥" if m in EMAIL_SEED_AT_LEAST else "=" for m in EMAIL_SEED_TABLE],
            "seed_document": list(EMAIL_SEED_TABLE.values()),
            "relcol": [ours[m] for m in EMAIL_SEED_TABLE],
            "definition": [_DEFINITIONS[m] for m in EMAIL_SEED_TABLE],
        },
        schema={
            "metric": pl.String,
            "relation": pl.String,
            "seed_document": pl.Float64,
            "relcol": pl.Float64,
            "definition": pl.String,
        },
    )


# -- report -----------------------------------------------------------------------------------


def external_tables(wh: Warehouse, study: str, *, bins: int = 15) -> dict[str, pl.DataFrame]:
    """The report tables of this module that apply to ``study``.

    ``by_class`` (calibration per predicted class, with class names) for an ingested
    single-label prediction file; ``multilabel``, ``multilabel_bins`` and the micro
    average's tables (``relcol.analysis.multilabel_micro_tables``) when the study has
    multi-label rows; ``recalibration`` for a study written by ``recalibrate``.
    """
    spec = _spec(wh, study)
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
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    spec = _spec(wh, study)
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
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    bins = check_bins(bins)
    if engine == "duckdb":
        return wh.sql(
            "SELECT * FROM soft_agreement WHERE study = ?", [study], bins=bins, timeout=None
        )
    _check_engine(engine)
    annotations = pl.scan_parquet(wh.sources()["annotations"], hive_partitioning=False)
    return agreement_table(
        wh.predictions(study), annotations.filter(pl.col("study") == study), bins=bins
    )


def sources_summary(tables: Mapping[str, pl.DataFrame]) -> str:
    """Terminal lines for the report: which sources are scores, and the soft agreement."""
    lines = []
    sources = tables.get("sources")
    if sources is not None and not sources.is_empty():
        scores = sources.filter(pl.col("kind") == "score")["source"].to_list()
        if scores:
            lines.append(
                f"scores, not probabilities (read their AUROC and AURC; recalibrate before "
                f"their ECE): {', '.join(scores)}"
            )
    agreement = tables.get("agreement")
    if agreement is not None and not agreement.is_empty():
        clean = agreement.filter(pl.col("severity") == pl.col("severity").min().over("model"))
        for row in clean.sort("model").iter_rows(named=True):
            r = "–" if row["spearman_rho"] is None else f"{row['spearman_rho']:+.2f}"
            lines.append(
                f"soft agreement {row['model']}: mean agreement {row['mean_agreement']:.3f}, "
                f"Spearman rho(confidence, agreement) {r}, ECE against agreement "
                f"{row['ece']:.3f} (n = {row['n']:,})"
            )
    return "\n".join(lines)


def by_class(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
) -> pl.DataFrame:
    """Calibration per cell and predicted class, with the class's name (``class_name``)."""
    wh = _warehouse(warehouse)
    study = wh.require_study(study)
    keys = [*CELL, "y_pred"]
    table = metrics.calibration(wh.predictions(study), keys, bins=bins).collect()
    names = wh.sql(
        "SELECT dataset, code AS y_pred, name AS class_name FROM classes WHERE study = ?", [study]
    )
    out = table.join(names, on=["dataset", "y_pred"], how="left", maintain_order="left")
    return out.select(*keys, "class_name", *[c for c in table.columns if c not in keys])


# -- helpers ----------------------------------------------------------------------------------


def _spec(wh: Warehouse, study: str) -> dict:
    runs = wh.sql(
        "SELECT kind, spec FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
    )
    if runs.is_empty() or runs["kind"][0] not in ("predictions", "recalibration"):
        return {"kind": runs["kind"][0] if not runs.is_empty() else None}
    return {**json.loads(runs["spec"][0]), "kind": runs["kind"][0]}


def _content_id(prefix: str, study: str, spec: str, packages: Mapping[str, str]) -> str:
    """A run id from what decides the rows, so the same input gives byte-identical files."""
    blob = json.dumps({"study": study, "spec": spec, "versions": packages}, sort_keys=True)
    return prefix + hashlib.sha256(blob.encode()).hexdigest()[:24]


def _refuse_existing(wh: Warehouse, name: str, replace: bool) -> None:
    # Warehouse.ingest refuses too; asking first spares reading a large file to be refused.
    wh.writable()
    if not replace and name in wh.studies():
        raise WarehouseError(
            f"study {name!r} is already in warehouse {wh.root}; ingest it under another name "
            "(--name), or pass --replace to replace it wholesale"
        )


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {', '.join(ENGINES)}. Got {engine!r}.")


def _warehouse(warehouse: Warehouse | str | os.PathLike[str] | None) -> Warehouse:
    return warehouse if isinstance(warehouse, Warehouse) else Warehouse.default(warehouse)
