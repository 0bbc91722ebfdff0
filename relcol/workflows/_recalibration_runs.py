"""Recalibration: fit maps on a calibration split of a study, judge them on the rest, and
commit the result as a new study (``Warehouse.commit``)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from relcol.analysis import (
    calibration_split,
    named_labels,
    recalibrate_rows,
    recalibration_table,
)
from relcol.checks import check_bins
from relcol.errors import InputError, ParameterError
from relcol.store import CELL, KEY, IngestResult, Warehouse, check_name
from relcol.study import versions
from relcol.workflows._shared import run_spec, study_of, with_label_names


@dataclass(frozen=True)
class RecalibrationResult(IngestResult):
    """What ``recalibrate`` wrote (an ``IngestResult``): a new study of evaluation-split rows,
    before and after; ``source`` is the study recalibrated, ``table`` the before/after
    table and ``fits`` the fitted maps."""

    source: str
    methods: tuple[str, ...]
    table: pl.DataFrame
    fits: list[dict]

    @property
    def summary(self) -> str:
        """The before/after table as text (``recalibration_summary``)."""
        return recalibration_summary(self.table)


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
    started = datetime.now(UTC)
    bins = check_bins(bins)
    wh, study = study_of(warehouse, study)
    methods = [methods] if isinstance(methods, str) else list(dict.fromkeys(methods))
    name = name or f"{study}-recal-{'-'.join(methods)}"
    check_name(name, "recalibrated study name")
    if name == study:
        raise ParameterError(f"name must differ from the study recalibrated ({study!r}).")
    wh.refuse_existing(name, replace)
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
    table = with_label_names(
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
    kept = _carried_annotations(annotations, done.rows, done.models)
    committed = wh.commit(
        name,
        kind="recalibration",
        spec=spec,
        versions=versions(),
        cells=done.rows.select([k for k in CELL if k != "study"]).unique().height,
        parts=[done.rows],
        sides={
            "classes": wh.sql("SELECT * FROM classes WHERE study = ?", [study]),
            "annotations": kept,
        },
        prefix="r",
        keyed_by_name=True,
        started_at=started,
        replace=replace,
    )
    return RecalibrationResult(
        **vars(committed),
        source=study,
        methods=tuple(methods),
        table=table.with_columns(study=pl.lit(name)),
        fits=done.fits,
    )


def recalibration(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    bins: int = 15,
) -> pl.DataFrame:
    """The before/after table of a study written by ``recalibrate`` (empty for other studies)."""
    wh, study = study_of(warehouse, study)
    spec = run_spec(wh, study)
    if spec.get("kind") != "recalibration":
        return pl.DataFrame()
    models = {after: (v["model"], v["method"]) for after, v in spec["models"].items()}
    table = recalibration_table(wh.predictions(study), models, bins=bins)
    return with_label_names(wh, study, table, after="label")


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


def recalibration_summary(table: pl.DataFrame) -> str:
    """ECE and the top-label Brier and NLL (``brier_top``, ``nll_top``: the multiclass ``brier``
    and ``nll`` need every class's probability) before → after, one line per cell and method (a
    label by its name; a cell's methods in the table's order), each named as its column in the
    ``calibration`` view."""
    table = named_labels(table)
    wide = table.pivot(
        on="metric",
        index=["dataset", "model", "corruption", "severity", "label", "method", "n"],
        values=["before", "after"],
        aggregate_function="first",
    )
    varying = [
        k
        for k in ("dataset", "corruption", "severity", "label")
        if wide.get_column(k).n_unique() > 1
    ]
    head = ["model", *varying, "method", "n"]
    lines = []
    for row in wide.sort(head[:-2], nulls_last=True, maintain_order=True).iter_rows(named=True):
        cells = [str(row[k]) for k in head]
        for metric, label in (("ece", "ECE"), ("brier_top", "brier_top"), ("nll_top", "nll_top")):
            cells.append(f"{label} {row[f'before_{metric}']:.3f} -> {row[f'after_{metric}']:.3f}")
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )
