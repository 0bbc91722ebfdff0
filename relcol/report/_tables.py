"""great-tables renderings: the calibration table, the trend table with its nanoplots, the
at-a-glance table of the summary, the realised corruption rates, and ``table_html``, through
which every table of the page passes (it registers the table's exports and collapses long
tables).

Formatting only: every number shown is a column of the frame passed in.
"""

from __future__ import annotations

import re
from html import escape

import polars as pl
import polars.selectors as cs
from great_tables import GT, html, loc, style

from relcol.analysis import sort_by_appearance
from relcol.metrics import CALIBRATION_COLUMNS, labels
from relcol.report._exports import register, register_data
from relcol.report._layout import details

# Columns the table knows how to label (every metric by its registry label); any other
# column is shown under its own name.
_LABELS = {"severity": "d", "label": "label", **labels(CALIBRATION_COLUMNS)}
# Where a table holds only the top-label scores (multi-label, recalibration, monitoring), they
# go by their plain names.
TOP_SCORE_LABELS = {"brier_top": "Brier", "nll_top": "NLL"}
# Column groups shown under a spanner when the table has them (docs/metrics.md).
_SPANNERS = {
    "ECE floor (a calibrated model)": ("ece_null", "ece_excess", "ece_pvalue"),
    "Murphy decomposition of Brier (top)": (
        "brier_reliability",
        "brier_resolution",
        "brier_uncertainty",
        "brier_within",
    ),
}
# Shown in the row-group heading (dataset / corruption) and the stub (model).
_PLACED = ("study", "dataset", "corruption", "model")
_GROUP = "__group"

# Light ends keep the numbers readable; red means overconfident (gap > 0, high ECE).
_ECE_PALETTE = ["#FFFFFF", "#FDD0A2", "#F16913"]
_GAP_PALETTE = ["#4393C3", "#F7F7F7", "#D6604D"]


def bin_convention(bins: int) -> str:
    """The equal-width binning convention of docs/metrics.md, stated for ``bins`` bins."""
    return f"{bins} equal-width bins, (m/M, (m+1)/M]"


def calibration_table(
    calibration: pl.DataFrame, *, study: str, bins: int, table_id: str = "relcol-calibration"
) -> GT:
    """The calibration table as a great-tables table.

    Rows are grouped by corruption (and dataset and study, when there are several),
    with the model in the stub and rows ordered by model, label and severity.
    Floats show 3 decimals, severity 2, integers none; ``ece`` and ``gap`` carry
    colour scales. ``<metric>_lo``/``<metric>_hi`` pairs are merged into their
    metric as ``value [lo, hi]``. Extra non-float columns that hold a single value
    (such as ``bins`` or ``engine``) move to a source note instead of repeating on
    every row.
    """
    # The row-group heading names what varies: the corruption, and the dataset and study
    # when the table holds several.
    group_parts = [k for k in ("study", "dataset") if calibration.get_column(k).n_unique() > 1]
    group_parts += ["corruption"]
    frame = sort_by_appearance(
        calibration,
        [*group_parts, "model"],
        *(["label"] if "label" in calibration.columns else []),
        "severity",
    ).with_columns(pl.concat_str(group_parts, separator=" / ").alias(_GROUP))

    hide = [c for c in _PLACED if c != "model"]
    if "label" in frame.columns and frame.get_column("label").null_count() == frame.height:
        hide.append("label")
    # The per-seed range stays in the exports; the page shows the SD beside its metric.
    hide += [c for c in frame.columns if c.endswith(("_min", "_max")) and c[:-4] in frame.columns]
    spread = {
        c: f"{_LABELS.get(c[:-3], c[:-3])} SD"
        for c in frame.columns
        if c.endswith("_sd") and c[:-3] in frame.columns
    }
    constants = _constant_extras(frame)
    hide += constants

    gt = (
        GT(frame, rowname_col="model", groupname_col=_GROUP, id=table_id)
        .tab_header(
            title=f"Calibration by cell: {study}",
            subtitle=(
                f"Top-label ECE and MCE on {bin_convention(bins)}; "
                "gap Δ = mean confidence − accuracy (> 0: overconfident)"
            ),
        )
        .tab_stubhead("model")
        .cols_hide(hide)
        .cols_label(**{c: _LABELS[c] for c in frame.columns if c in _LABELS}, **spread)
        .fmt_number(cs.float() - cs.by_name("severity"), decimals=3)
        .fmt_number("severity", decimals=2)
        .fmt_integer(cs.integer(), use_seps=False)
    )
    gt = merge_intervals(gt, frame)
    for label, columns in _SPANNERS.items():
        if all(c in frame.columns for c in columns):
            gt = gt.tab_spanner(label, columns=list(columns), gather=False)
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


def interval_columns(frame: pl.DataFrame) -> list[tuple[str, str, str]]:
    """(metric, lo, hi) for every metric with ``<metric>_lo`` and ``<metric>_hi`` columns."""
    return [
        (c, f"{c}_lo", f"{c}_hi")
        for c in frame.columns
        if f"{c}_lo" in frame.columns and f"{c}_hi" in frame.columns
    ]


#: A non-breaking space: keeps a bound or an interval on one line, e.g. "[0.071, 0.096]".
NBSP = "\u00a0"


def merge_intervals(gt: GT, frame: pl.DataFrame) -> GT:
    """Show each metric with an interval as ``value [lo, hi]`` (``0.083 [0.071, 0.096]``) and
    any other missing value as "–". On a narrow page the interval may go below its value,
    whole.

    The ``_lo``/``_hi`` columns are hidden; a row without an interval shows the value alone
    (the bounds are left missing, so the bracket is dropped rather than shown as
    ``[–, –]``).
    """
    intervals = interval_columns(frame)
    bounds = {bound for _, lo, hi in intervals for bound in (lo, hi)}
    gt = gt.sub_missing(columns=[c for c in frame.columns if c not in bounds], missing_text="–")
    for metric, lo, hi in intervals:
        gt = gt.cols_merge([metric, lo, hi], pattern=f"{{0}}<< [{{1}},{NBSP}{{2}}]>>")
    if intervals and len(gt._tbl_data) <= INLINE_ROWS:  # longer tables are not drawn
        # the one place such a cell may break, where the page is narrow: before its bracket
        # (the semicolon: great-tables joins this style and data_color's with a space only)
        gt = gt.tab_style(
            style.css("white-space: normal;"),
            locations=loc.body(columns=[metric for metric, _, _ in intervals]),
        )
    return gt


def _colour(gt: GT, frame: pl.DataFrame) -> GT:
    # Explicit domains: a scale from 0 for ECE, symmetric about 0 for the gap, and
    # never empty (a constant column would give great-tables a zero-width domain).
    ece_max = frame.get_column("ece").max()
    ece_max = float(ece_max) if ece_max is not None and ece_max > 0 else 1.0
    gap_max = frame.get_column("gap").abs().max()
    gap_max = float(gap_max) if gap_max is not None and gap_max > 0 else 1.0
    gt = data_color(
        gt, columns="ece", palette=_ECE_PALETTE, domain=[0.0, ece_max], na_color="#FFFFFF"
    )
    return data_color(
        gt, columns="gap", palette=_GAP_PALETTE, domain=[-gap_max, gap_max], na_color="#FFFFFF"
    )


def realised_rates_table(rates: pl.DataFrame) -> GT:
    """Mean realised rate per corruption (rows) and severity (columns).

    ``rates`` is the output of :func:`relcol.analysis.realised_rates`.
    """
    index = [k for k in ("study", "dataset", "corruption") if k in rates.columns]
    severities = rates.get_column("severity").unique().sort().to_list()
    wide = rates.pivot(on="severity", on_columns=severities, index=index, values="realised_rate")
    value_columns = wide.columns[len(index) :]
    flagged = "diverges" in rates.columns and "deviation" in rates.columns
    if flagged:
        flags = rates.group_by(index).agg(
            max_deviation=pl.col("deviation").abs().max(),
            diverges=pl.when(pl.col("diverges").any()).then(pl.lit("yes")).otherwise(pl.lit("")),
        )
        wide = wide.join(flags, on=index, how="left", maintain_order="left")
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
        .fmt_number([*value_columns, *(["max_deviation"] if flagged else [])], decimals=3)
        .cols_label(**({"max_deviation": "max |realised − d|"} if flagged else {}))
        .sub_missing(missing_text="–")
        .tab_source_note(
            f"Mean over {per_cell} draws per cell. A row diverges when a mean realised rate "
            "differs from d by more than max(0.02, 0.1·d)."
        )
    )


def realised_trends_table(trends: pl.DataFrame) -> GT:
    """Spearman ρ of the diverging curves against d and against the realised rate.

    ``trends`` is the output of :func:`relcol.analysis.realised_trends`.
    """
    keys = [k for k in ("dataset", "model", "corruption", "metric") if k in trends.columns]
    shown = trends.select(*keys, "rho_nominal", "p_nominal", "rho_realised", "p_realised")
    return (
        GT(shown, id="relcol-realised-trends")
        .tab_header(
            title="Trends against the realised rate",
            subtitle="Curves whose realised rate diverges from d: Spearman ρ of the pooled curve",
        )
        .tab_spanner("against d", columns=["rho_nominal", "p_nominal"])
        .tab_spanner("against the realised rate", columns=["rho_realised", "p_realised"])
        .cols_label(rho_nominal="ρ", p_nominal="p", rho_realised="ρ", p_realised="p")
        .fmt_number(["rho_nominal", "rho_realised"], decimals=2)
        .fmt_number(["p_nominal", "p_realised"], decimals=3)
        .sub_missing(missing_text="–")
    )


#: Tables with more body rows than this start collapsed (a ``<details>`` block).
COLLAPSE_ROWS = 30
#: Tables with more body rows than this are not drawn on the page: they live as files
#: (a plain HTML page, CSV and Parquet) that the page links to.
INLINE_ROWS = 60


def data_color(gt: GT, **options) -> GT:
    """``gt.data_color(**options)``, left out for a table too long to be drawn on the page
    (:func:`table_html` links its files instead, which carry no colour): great-tables
    styles a table cell by cell, each time looking through all its rows, so colouring one
    of 20 000 rows took 100 s."""
    if len(gt._tbl_data) > INLINE_ROWS:
        return gt
    return gt.data_color(**options)


def grouped_table(
    frame: pl.DataFrame,
    *,
    group: str,
    row: str,
    columns: list[str],
    table_id: str,
    title: str,
    subtitle: str,
    stubhead: str,
) -> GT:
    """A table of ``frame``'s ``columns``, a row per ``row`` value in row groups by
    ``group``, with title, subtitle and stub head; ``n`` (when among ``columns``) as an
    integer and a missing value as –. Callers add their own labels and number formats."""
    gt = (
        GT(frame.select(group, row, *columns), rowname_col=row, groupname_col=group, id=table_id)
        .tab_header(title=title, subtitle=subtitle)
        .tab_stubhead(stubhead)
    )
    if "n" in columns:
        gt = gt.fmt_integer("n", use_seps=False)
    return gt.sub_missing(missing_text="–")


def table_html(gt: GT, *, collapse: bool | None = None, latex: GT | None = None) -> str:
    """A table as an HTML fragment with no external reference, and links to its exports.

    great-tables adds a Google Fonts ``@import`` when a table uses a web font;
    relcol's tables use none, and any such import is removed all the same so the
    report opens offline. While a report renders, the table is registered for export
    (``tables/<id>.html``, ``.tex``, ``.csv``, ``.parquet``; ``latex``: a twin to write
    as LaTeX instead) and the fragment ends with links to those files. ``collapse``:
    wrap the table in a closed ``<details>`` block; by default when it has more than
    :data:`COLLAPSE_ROWS` rows. A table of more than :data:`INLINE_ROWS` rows is not
    drawn (great-tables formats cell by cell, and hundreds of rows help no reader of a
    page): while a report renders, the page gets one line linking to its files
    (:func:`table_link`).
    """
    rows = len(gt._tbl_data)
    if rows > INLINE_ROWS:
        link = table_link(gt)
        if link is not None:
            return link
    html = re.sub(r"@import url\([^)]*\);?", "", gt.as_raw_html())
    html += register(gt, html, latex=latex)
    if collapse is None:
        collapse = rows > COLLAPSE_ROWS
    if not collapse:
        return html
    title = gt._heading.title or "Table"
    return details(f'{escape(str(title))} <span class="count">({rows:,} rows)</span>', html)


def table_link(gt: GT) -> str | None:
    """A long table as files: its rows (without helper columns) as a plain HTML page, CSV
    and Parquet, and the page's line linking to them (None outside a report's rendering)."""
    table_id = gt._options.table_id.value
    return frame_link(gt._tbl_data, table_id, str(gt._heading.title or table_id))


def frame_link(frame: pl.DataFrame, table_id: str, title: str) -> str | None:
    """:func:`table_link` of a frame (its ``__`` helper columns left out), with no
    great-tables table built at all."""
    data = frame.drop([c for c in frame.columns if c.startswith("__")])
    links = register_data(table_id, title, data, plain_table(data, title))
    if links is None:
        return None
    return (
        f'<p class="table-file"><b>{escape(title)}</b> <span class="count">'
        f"({data.height:,} rows, {data.width} columns)</span>: {links}</p>"
    )


def plain_table(frame: pl.DataFrame, title: str) -> str:
    """``frame`` as a plain HTML table, fast at millions of rows (each line built by Polars,
    not cell by cell in Python): numbers to 3 decimals (severity to 2), a missing value as
    "–"; nested columns (in the CSV and Parquet) left out."""
    columns = [c for c, t in frame.schema.items() if not t.is_nested()]
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    cells = [
        pl.concat_str(pl.lit("<td>"), _shown(c, frame.schema[c]), pl.lit("</td>")) for c in columns
    ]
    line = pl.concat_str(pl.lit("<tr>"), *cells, pl.lit("</tr>")).alias("line")
    rows = "\n".join(frame.select(line)["line"]) if frame.height else ""
    return (
        f"<style>{_PLAIN_CSS}</style>\n<h1>{escape(title)}</h1>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n"
        "</tbody>\n</table>"
    )


#: What ``html.escape`` replaces, in its order ("&" first).
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;"))


def _shown(name: str, dtype: pl.DataType) -> pl.Expr:
    """Column ``name`` as the plain page's text: Python's ``str`` of each value (Polars
    writes floats as Python does), HTML-escaped, "–" for a null or NaN."""
    column = pl.col(name)
    if dtype.is_float():
        # rounded in the column's own type, then written as the Float64 it is to Python
        rounded = column.round(2 if name == "severity" else 3).cast(pl.Float64)
        text = pl.when(rounded.is_nan()).then(None).otherwise(rounded).cast(pl.String)
    elif dtype == pl.Boolean:
        text = pl.when(column).then(pl.lit("True")).when(~column).then(pl.lit("False"))
    elif dtype.is_numeric() or dtype == pl.Null:
        text = column.cast(pl.String)
    elif dtype == pl.String:
        text = column
        for old, new in _ESCAPES:
            text = text.str.replace_all(old, new, literal=True)
    else:  # dates and times, as Python writes them
        text = column.map_elements(lambda value: escape(str(value)), return_dtype=pl.String)
    return text.fill_null("–")


_PLAIN_CSS = (
    "body{font:13px/1.4 system-ui,sans-serif;margin:1rem}table{border-collapse:collapse}"
    "th{position:sticky;top:0;background:#f4f6f8;text-align:left}"
    "th,td{padding:0.15rem 0.6rem;border-bottom:1px solid #e6e6e6;white-space:nowrap}"
    "tbody tr:hover{background:#f8fafc}"
)


# The trend table: each metric over severity as a nanoplot -----------------------------------------

#: The metrics the trend table draws as nanoplots, in order (the metrics whose trend is
#: tested are ``relcol.analysis.TREND_METRICS``).
NANOPLOT_METRICS = ("accuracy", "mean_confidence", "ece", "gap")
#: Their spanners: the registry's labels, with the mean confidence spelt out.
_NANOPLOT_SPANNERS = labels(NANOPLOT_METRICS) | {"mean_confidence": "mean confidence"}
# Numbers beside each nanoplot: (column of degradation_summary, its label, metric it sits under).
_TREND_NUMBERS = (
    ("clean_accuracy", "d = 0", "accuracy"),
    ("accuracy", "worst", "accuracy"),
    ("mean_confidence", "worst", "mean_confidence"),
    ("clean_ece", "d = 0", "ece"),
    ("ece", "worst", "ece"),
    ("gap", "worst", "gap"),
)
_NANOPLOT = {
    "show_data_area": False,
    "show_reference_line": False,
    "show_vertical_guides": False,
    "show_y_axis_guide": False,
    "interactive_data_values": False,
    "data_line_type": "straight",
    "data_line_stroke_width": 6,
    "data_point_radius": 7,
    "data_point_stroke_width": 0,
}


def trend_table(
    calibration: pl.DataFrame,
    summary: pl.DataFrame,
    *,
    table_id: str,
    title: str,
    colours: dict[str, str],
    trends: pl.DataFrame | None = None,
    plots: bool = True,
) -> GT:
    """Each curve's metrics over severity as nanoplots, with the clean and worst values.

    Parameters
    ----------
    calibration
        One dataset's calibration rows (cell keys, the metrics of :data:`NANOPLOT_METRICS`).
    summary
        ``relcol.analysis.degradation_summary`` of the same rows.
    table_id, title
        The table's HTML id and title.
    colours
        Model → colour: each model's nanoplots are drawn in its colour.
    trends
        The statistical layer's ``trends`` table (``metric``, ``spearman_rho``, ``p_value``
        per curve), when there is one: a ρ column joins each metric.
    plots
        False for a twin without the nanoplots (great-tables cannot write them as LaTeX).

    A row per curve (model, grouped by corruption and label); nanoplots of one metric
    share a y-scale, so rows compare, and place points at their severity.
    """
    curve = [
        k for k in ("study", "dataset", "model", "corruption", "label") if k in summary.columns
    ]
    ordered = sort_by_appearance(
        calibration, ["dataset", "corruption", "model"], *(["label"] if "label" in curve else []),
        "severity",
    )  # fmt: skip
    lists = ordered.group_by(curve, maintain_order=True).agg(
        pl.col("severity").cast(pl.Float64).alias("__x"),
        # Rounded far below what a nanoplot can show, so that a value's last bits (sums
        # added in another order) do not change the drawing.
        *(pl.col(m).cast(pl.Float64).round(9).alias(f"__y_{m}") for m in NANOPLOT_METRICS),
    )
    # A nanoplot needs two severities (great-tables scales x by its range).
    enough = pl.col("__x").list.n_unique() >= 2
    frame = lists.with_columns(
        pl.when(enough).then(pl.struct(x=pl.col("__x"), y=pl.col(f"__y_{m}"))).alias(f"{m}_trend")
        for m in NANOPLOT_METRICS
    ).join(
        summary.select(*curve, "worst_severity", *dict.fromkeys(c for c, _, _ in _TREND_NUMBERS)),
        on=curve,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    rho_columns = []
    if trends is not None and {"metric", "spearman_rho", "p_value"} <= set(trends.columns):
        frame, rho_columns = _join_trends(frame, trends, curve)
    several_labels = "label" in curve and frame.get_column("label").null_count() < frame.height
    # The row group: the corruption (and label), with the worst severity its curves reach.
    worst = pl.col("worst_severity").max().over("corruption")
    group = pl.format("{} (worst d = {})", pl.col("corruption"), _g(worst))
    if several_labels:
        group = pl.concat_str(group, pl.lit(" / label "), pl.col("label").cast(pl.String))
    frame = frame.with_columns(group.alias(_GROUP))

    columns = []
    for metric in NANOPLOT_METRICS:
        columns += [f"{metric}_trend"] if plots else []
        columns += [f"rho_{metric}"] if f"rho_{metric}" in rho_columns else []
        columns += [c for c, _, m in _TREND_NUMBERS if m == metric]
    # Columns of degradation_summary reused as display columns need distinct names.
    shown = frame.select("model", _GROUP, *(pl.col(c).alias(_display(c)) for c in columns))
    gt = (
        GT(shown, rowname_col="model", groupname_col=_GROUP, id=table_id)
        .tab_header(
            title=title,
            subtitle="Each metric against severity d (a point per severity, one scale per "
            "column), with its value on clean data (d = 0) and at the worst severity",
        )
        .tab_stubhead("model")
        .fmt_number([_display(c) for c, _, _ in _TREND_NUMBERS], decimals=3)
        .fmt_number(_display("gap"), decimals=3, force_sign=True)
        .sub_missing(missing_text="–")
    )
    for metric, spanner in _NANOPLOT_SPANNERS.items():
        members = [_display(c) for c in columns if _metric_of(c) == metric]
        gt = gt.tab_spanner(spanner, columns=members)
        labels = {_display(c): label for c, label, m in _TREND_NUMBERS if m == metric}
        labels |= {f"{metric}_trend": "over d", f"rho_{metric}": "ρ (p)"}
        gt = gt.cols_label(**{k: v for k, v in labels.items() if k in members})
    if plots:
        gt = _nanoplots(gt, shown, colours)
        # ρ under its nanoplot: one column per metric instead of two.
        for metric in (m for m in NANOPLOT_METRICS if f"rho_{m}" in rho_columns):
            gt = gt.cols_merge(
                [f"{metric}_trend", f"rho_{metric}"],
                pattern='{0}<br><span class="rho">ρ {1}</span>',
            ).cols_label(**{f"{metric}_trend": "over d, ρ (p)"})
    gt = _trend_colours(gt, shown)
    note = "Colour: ECE from 0 (white) to its largest value; gap diverging at 0 (red: "
    note += "overconfident)."
    if rho_columns:
        note += (
            " ρ: Spearman correlation of the metric with d over the per-seed values, p its "
            "p-value (–: fewer than three severities)."
        )
    return gt.tab_source_note(note)


def _g(expr: pl.Expr) -> pl.Expr:
    """A float as ``{:g}`` would show a severity (0.5, 1, 0.25)."""
    return expr.round(6).cast(pl.String).str.replace(r"\.0$", "")


def _display(column: str) -> str:
    """The trend table's name for a column of degradation_summary (worst-severity values)."""
    return f"worst_{column}" if column in ("accuracy", "mean_confidence", "ece", "gap") else column


def _metric_of(column: str) -> str | None:
    for metric in NANOPLOT_METRICS:
        if column in (f"{metric}_trend", f"rho_{metric}"):
            return metric
    for c, _, metric in _TREND_NUMBERS:
        if column == c:
            return metric
    return None


def _join_trends(frame: pl.DataFrame, trends: pl.DataFrame, curve: list[str]):
    keys = [k for k in curve if k in trends.columns]
    wanted = [m for m in NANOPLOT_METRICS]
    rows = trends.filter(pl.col("metric").is_in(wanted)).select(
        *keys,
        "metric",
        rho=pl.struct(pl.col("spearman_rho"), pl.col("p_value")).map_elements(
            _rho_text, return_dtype=pl.String
        ),
    )
    if rows.is_empty():
        return frame, []
    wide = rows.pivot(on="metric", index=keys, values="rho", aggregate_function="first")
    wide = wide.rename({m: f"rho_{m}" for m in wanted if m in wide.columns})
    added = [c for c in wide.columns if c.startswith("rho_")]
    frame = frame.join(wide, on=keys, how="left", nulls_equal=True, maintain_order="left")
    # A curve without a trend shows a dash (a merged cell cannot drop its text).
    return frame.with_columns(pl.col(added).fill_null("–")), added


def _rho_text(row: dict) -> str:
    """ρ and its p-value, short: ``−0.79 (p < .001)``, ``+0.31 (p = 0.21)``; ``–`` if none."""
    rho, p = row["spearman_rho"], row["p_value"]
    if rho is None or rho != rho:
        return "–"
    text = f"{rho:+.2f}".replace("-", "−")
    if p is None or p != p:
        return text
    return f"{text} (p < .001)" if p < 0.001 else f"{text} (p = {p:.2g})"


def _nanoplots(gt: GT, shown: pl.DataFrame, colours: dict[str, str]) -> GT:
    from great_tables import nanoplot_options

    models = shown.get_column("model")
    for metric in NANOPLOT_METRICS:
        column = f"{metric}_trend"
        plotted = shown.get_column(column).drop_nulls()
        values = plotted.struct.field("y").explode().drop_nulls().drop_nans()
        if values.is_empty():
            continue
        low, high = float(values.min()), float(values.max())
        scale = [low, high] if high > low else [low - 0.05, high + 0.05]
        for model in models.unique(maintain_order=True):
            colour = colours.get(model, "#0072B2")
            trend = shown.get_column(column)
            rows = [i for i, m in enumerate(models) if m == model and trend[i] is not None]
            if not rows:
                continue
            options = nanoplot_options(
                **_NANOPLOT, data_line_stroke_color=colour, data_point_fill_color=colour
            )
            gt = gt.fmt_nanoplot(
                column,
                rows=rows,
                expand_y=scale,
                plot_height="1.5em",
                options=options,
                alt=f"{metric.replace('_', ' ')} of {model} over severity: {{x}}",
            )
    return gt


def _trend_colours(gt: GT, shown: pl.DataFrame) -> GT:
    ece = [c for c in ("clean_ece", "worst_ece") if c in shown.columns]
    top = pl.concat([shown.get_column(c) for c in ece]).max() if ece else None
    top = float(top) if top is not None and top > 0 else 1.0
    gt = data_color(gt, columns=ece, palette=_ECE_PALETTE, domain=[0.0, top], na_color="#FFFFFF")
    gap = shown.get_column("worst_gap").abs().max()
    gap = float(gap) if gap is not None and gap > 0 else 1.0
    return data_color(
        gt, columns="worst_gap", palette=_GAP_PALETTE, domain=[-gap, gap], na_color="#FFFFFF"
    )


# At a glance: the summary's table ----------------------------------------------------------------


def glance_table(summary: pl.DataFrame, *, table_id: str = "relcol-glance") -> GT:
    """Clean accuracy and ECE, and the gap at each corruption's worst severity, per model.

    ``summary`` is ``relcol.analysis.degradation_summary`` of the single-label cells. A row
    per dataset × model (grouped by dataset, and study when there are several), a column per
    corruption in the order the study lists them.
    """
    several = summary.get_column("study").n_unique() > 1
    group_parts = (["study"] if several else []) + ["dataset"]
    corruptions = summary.get_column("corruption").unique(maintain_order=True).to_list()
    worst = summary.group_by("corruption", maintain_order=True).agg(
        pl.col("worst_severity").min().alias("low"), pl.col("worst_severity").max().alias("high")
    )
    clean = summary.group_by([*group_parts, "model"], maintain_order=True).agg(
        pl.col("clean_accuracy").first(), pl.col("clean_ece").first()
    )
    wide = summary.pivot(
        on="corruption",
        on_columns=corruptions,
        index=[*group_parts, "model"],
        values="gap",
        aggregate_function="first",
    )
    names = {c: f"gap_{i}" for i, c in enumerate(corruptions)}
    frame = (
        clean.join(wide.rename(names), on=[*group_parts, "model"], maintain_order="left")
        .with_columns(pl.concat_str(group_parts, separator=" / ").alias(_GROUP))
        .drop(group_parts)
    )
    labels = {}
    for row in worst.iter_rows(named=True):
        d = f"{row['high']:g}" if row["low"] == row["high"] else f"{row['low']:g}–{row['high']:g}"
        labels[names[row["corruption"]]] = html(
            f"{escape(row['corruption'])}<br><small>d = {d}</small>"
        )
    gap_columns = list(names.values())
    top = frame.select(pl.max_horizontal(pl.col(gap_columns).abs().max())).item()
    top = float(top) if top is not None and top > 0 else 1.0
    ece_top = frame.get_column("clean_ece").max()
    ece_top = float(ece_top) if ece_top is not None and ece_top > 0 else 1.0
    gt = (
        GT(frame, rowname_col="model", groupname_col=_GROUP, id=table_id)
        .tab_header(
            title="At a glance: clean calibration and the gap at the worst severity",
            subtitle="gap Δ = mean confidence − accuracy; > 0: the model claims more than it "
            "delivers",
        )
        .tab_stubhead("model")
        .cols_label(clean_accuracy=_LABELS["accuracy"], clean_ece=_LABELS["ece"], **labels)
        .tab_spanner("clean (d = 0)", columns=["clean_accuracy", "clean_ece"])
        .tab_spanner("gap Δ at the worst severity", columns=gap_columns)
        .fmt_number(["clean_accuracy", "clean_ece"], decimals=3)
        .fmt_number(gap_columns, decimals=3, force_sign=True)
        .sub_missing(missing_text="–")
        .tab_source_note(
            "Colour: the gap diverging at 0 (red: overconfident, blue: underconfident); clean "
            "ECE from 0 (white) to its largest value."
        )
    )
    gt = data_color(
        gt, columns="clean_ece", palette=_ECE_PALETTE, domain=[0.0, ece_top], na_color="#FFFFFF"
    )
    return data_color(
        gt, columns=gap_columns, palette=_GAP_PALETTE, domain=[-top, top], na_color="#FFFFFF"
    )
