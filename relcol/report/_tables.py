"""great-tables renderings of the calibration table and the realised corruption rates.

Formatting only: every number shown is a column of the frame passed in.
"""

from __future__ import annotations

import re

import polars as pl
import polars.selectors as cs
from great_tables import GT

from relcol.analysis._frames import sort_by_appearance

# Columns the table knows how to label; any other column is shown under its own
# name (so metrics added later appear without a change here).
_LABELS = {
    "severity": "d",
    "label": "label",
    "n": "n",
    "accuracy": "accuracy",
    "mean_confidence": "mean conf.",
    "gap": "gap Δ",
    "abs_gap": "|Δ|",
    "ece": "ECE",
    "mce": "MCE",
}
# Shown in the row-group heading (dataset / corruption) and the stub (model).
_PLACED = ("study", "dataset", "corruption", "model")
_GROUP = "__group"

# Light ends keep the numbers readable; red means overconfident (gap > 0, high ECE).
_ECE_PALETTE = ["#FFFFFF", "#FDD0A2", "#F16913"]
_GAP_PALETTE = ["#4393C3", "#F7F7F7", "#D6604D"]


def bin_convention(bins: int) -> str:
    """The equal-width binning convention of METRICS.md §2, stated for ``bins`` bins."""
    return f"{bins} equal-width bins, (m/M, (m+1)/M]"


def calibration_table(calibration: pl.DataFrame, *, study: str, bins: int) -> GT:
    """The calibration table as a great-tables table.

    Rows are grouped by dataset / corruption (and study, when there are several),
    with the model in the stub and rows ordered by model, label and severity.
    Floats show 3 decimals, severity 2, integers none; ``ece`` and ``gap`` carry
    colour scales. ``<metric>_lo``/``<metric>_hi`` pairs are merged into their
    metric as ``value [lo, hi]``. Extra non-float columns that hold a single value
    (such as ``bins`` or ``engine``) move to a source note instead of repeating on
    every row.
    """
    several_studies = calibration.get_column("study").n_unique() > 1
    group_parts = ["study"] if several_studies else []
    group_parts += ["dataset", "corruption"]
    frame = sort_by_appearance(
        calibration,
        [*group_parts, "model"],
        *(["label"] if "label" in calibration.columns else []),
        "severity",
    ).with_columns(pl.concat_str(group_parts, separator=" / ").alias(_GROUP))

    hide = [c for c in _PLACED if c != "model"]
    if "label" in frame.columns and frame.get_column("label").null_count() == frame.height:
        hide.append("label")
    constants = _constant_extras(frame)
    hide += constants
    merged = _interval_columns(frame)

    gt = (
        GT(frame, rowname_col="model", groupname_col=_GROUP, id="relcol-calibration")
        .tab_header(
            title=f"Calibration by cell: {study}",
            subtitle=(
                f"Top-label ECE and MCE on {bin_convention(bins)}; "
                "gap Δ = mean confidence − accuracy (> 0: overconfident)"
            ),
        )
        .tab_stubhead("model")
        .cols_hide(hide)
        .cols_label(**{c: _LABELS[c] for c in frame.columns if c in _LABELS})
        .fmt_number(cs.float() - cs.by_name("severity"), decimals=3)
        .fmt_number("severity", decimals=2)
        .fmt_integer(cs.integer(), use_seps=False)
        .sub_missing(missing_text="–")
    )
    for metric, lo, hi in merged:
        gt = gt.cols_merge([metric, lo, hi], pattern="{0}<< [{1}, {2}]>>")
    gt = _colour(gt, frame)
    note = (
        "Colour: ECE from 0 (white) to its largest value; gap diverging at 0 (red: overconfident)."
    )
    if constants:
        fixed = "; ".join(f"{c} = {frame.get_column(c)[0]}" for c in constants)
        note = f"{note} Same in every row: {fixed}."
    return gt.tab_source_note(note)


def _constant_extras(frame: pl.DataFrame) -> list[str]:
    """Extra non-float columns with one value across the table (e.g. ``bins``, ``engine``)."""
    known = {*_PLACED, *_LABELS, _GROUP}
    return [
        c
        for c in frame.columns
        if c not in known and not frame.schema[c].is_float() and frame.get_column(c).n_unique() == 1
    ]


def _interval_columns(frame: pl.DataFrame) -> list[tuple[str, str, str]]:
    return [
        (c, f"{c}_lo", f"{c}_hi")
        for c in frame.columns
        if f"{c}_lo" in frame.columns and f"{c}_hi" in frame.columns
    ]


def _colour(gt: GT, frame: pl.DataFrame) -> GT:
    # Explicit domains: a scale from 0 for ECE, symmetric about 0 for the gap, and
    # never empty (a constant column would give great-tables a zero-width domain).
    ece_max = frame.get_column("ece").max()
    ece_max = float(ece_max) if ece_max is not None and ece_max > 0 else 1.0
    gap_max = frame.get_column("gap").abs().max()
    gap_max = float(gap_max) if gap_max is not None and gap_max > 0 else 1.0
    return gt.data_color(
        columns="ece", palette=_ECE_PALETTE, domain=[0.0, ece_max], na_color="#FFFFFF"
    ).data_color(
        columns="gap",
        palette=_GAP_PALETTE,
        domain=[-gap_max, gap_max],
        na_color="#FFFFFF",
    )


def realised_rates_table(rates: pl.DataFrame) -> GT:
    """Mean realised rate per corruption (rows) and severity (columns).

    ``rates`` is the output of :func:`relcol.analysis.realised_rates`.
    """
    index = [k for k in ("study", "dataset", "corruption") if k in rates.columns]
    severities = rates.get_column("severity").unique().sort().to_list()
    wide = rates.pivot(on="severity", on_columns=severities, index=index, values="realised_rate")
    value_columns = wide.columns[len(index) :]
    several_studies = "study" in index and wide.get_column("study").n_unique() > 1
    group_parts = [k for k in index if k != "corruption" and (k != "study" or several_studies)]
    wide = wide.with_columns(pl.concat_str(group_parts, separator=" / ").alias(_GROUP))
    draws = rates.get_column("draws")
    lo, hi = draws.min(), draws.max()
    per_cell = f"{lo}" if lo == hi else f"{lo}–{hi}"
    return (
        GT(wide, rowname_col="corruption", groupname_col=_GROUP, id="relcol-rates")
        .tab_header(
            title="Realised corruption rates",
            subtitle="What each operator actually did at severity d (missing share, flip share …)",
        )
        .tab_stubhead("corruption")
        .cols_hide([k for k in index if k != "corruption"])
        .cols_label(**{c: f"d = {s:.2f}" for c, s in zip(value_columns, severities, strict=True)})
        .tab_spanner("severity", columns=value_columns)
        .fmt_number(value_columns, decimals=3)
        .sub_missing(missing_text="–")
        .tab_source_note(f"Mean over {per_cell} draws per cell.")
    )


def table_html(gt: GT) -> str:
    """A table as an HTML fragment with no external reference.

    great-tables adds a Google Fonts ``@import`` when a table uses a web font;
    relcol's tables use none, and any such import is removed all the same so the
    report opens offline.
    """
    html = gt.as_raw_html()
    return re.sub(r"@import url\([^)]*\);?", "", html)
