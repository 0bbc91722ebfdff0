"""How each model's calibration changes from the clean model to the worst severity.

Input is a calibration table (one row per cell, docs/warehouse.md names); every
function here returns a new frame and never draws or prints.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._frames import CELL_KEYS, group_keys, require_columns

_SUMMARY_INPUTS = (*CELL_KEYS, "accuracy", "mean_confidence", "gap", "ece")


def degradation_summary(calibration: pl.DataFrame) -> pl.DataFrame:
    """Clean versus worst-severity calibration, one row per curve.

    A curve is (study, dataset, model, corruption[, label]) across severities.

    Parameters
    ----------
    calibration
        A calibration table: the cell keys plus ``accuracy``, ``mean_confidence``,
        ``gap`` and ``ece``. Extra columns are ignored.

    Returns
    -------
    polars.DataFrame
        The curve keys, then ``clean_accuracy``, ``clean_ece``, ``clean_gap`` (at
        severity 0; null when the curve has no severity 0), ``worst_severity`` (the
        largest severity), ``accuracy``, ``mean_confidence``, ``gap``, ``ece`` at the
        worst severity, ``accuracy_drop`` (clean − worst), ``ece_rise`` (worst −
        clean) and ``max_gap_severity`` (the smallest severity at which ``gap`` is
        largest). Sorted by the keys.

    Examples
    --------
    >>> import polars as pl
    >>> cal = pl.DataFrame({
    ...     "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
    ...     "severity": [0.0, 0.5], "accuracy": [0.75, 0.5],
    ...     "mean_confidence": [0.75, 0.875], "gap": [0.0, 0.375], "ece": [0.125, 0.375],
    ... })
    >>> degradation_summary(cal).select("accuracy_drop", "ece_rise", "max_gap_severity").row(0)
    (0.25, 0.25, 0.5)
    """
    require_columns(calibration, _SUMMARY_INPUTS, "calibration")
    keys = group_keys(calibration)
    clean = pl.col("severity") == 0.0
    return (
        calibration.group_by(keys)
        .agg(
            clean_accuracy=pl.col("accuracy").filter(clean).first(),
            clean_ece=pl.col("ece").filter(clean).first(),
            clean_gap=pl.col("gap").filter(clean).first(),
            worst_severity=pl.col("severity").max(),
            **{
                m: pl.col(m).sort_by("severity").last()
                for m in ("accuracy", "mean_confidence", "gap", "ece")
            },
            max_gap_severity=pl.col("severity").filter(pl.col("gap") == pl.col("gap").max()).min(),
        )
        .with_columns(
            accuracy_drop=pl.col("clean_accuracy") - pl.col("accuracy"),
            ece_rise=pl.col("ece") - pl.col("clean_ece"),
        )
        .select(
            *keys,
            "clean_accuracy",
            "clean_ece",
            "clean_gap",
            "worst_severity",
            "accuracy",
            "mean_confidence",
            "gap",
            "ece",
            "accuracy_drop",
            "ece_rise",
            "max_gap_severity",
        )
        .sort(keys, nulls_last=True)
    )


def worst_gaps(calibration: pl.DataFrame) -> pl.DataFrame:
    """The cell with the largest gap (most overconfident) for each study × model.

    Ties go to the first cell in (dataset, corruption, severity, label) order, so the
    answer does not depend on row order.

    Parameters
    ----------
    calibration
        A calibration table with the cell keys, ``accuracy``, ``mean_confidence`` and
        ``gap``.

    Returns
    -------
    polars.DataFrame
        One row per (study, model): ``study``, ``model``, ``dataset``, ``corruption``,
        ``severity``, ``label`` (if the input has it), ``accuracy``,
        ``mean_confidence``, ``gap``; the most overconfident model first.
    """
    require_columns(calibration, (*CELL_KEYS, "accuracy", "mean_confidence", "gap"), "calibration")
    where = [k for k in group_keys(calibration) if k not in ("study", "model")]
    columns = ["study", "model", *where[:2], "severity", *where[2:]]
    columns += ["accuracy", "mean_confidence", "gap"]
    return (
        calibration.select(columns)
        .sort(
            ["gap", *where[:2], "severity", *where[2:]],
            descending=[True] + [False] * (len(where) + 1),
            nulls_last=True,
        )
        .group_by("study", "model", maintain_order=True)
        .first()
        .select(columns)
        .sort(["gap", "study", "model"], descending=[True, False, False], nulls_last=True)
    )
