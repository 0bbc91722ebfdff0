"""The report's multi-label section: every view a single-label study gets, per label and
averaged.

Shown when the report's tables include ``multilabel``. For each label, named, and for the
micro average (every (sample, label) pair pooled): where trust breaks, the calibration
table with intervals (both modes, micro and macro too), reliability diagrams, confidence
distributions of right and wrong decisions, risk–coverage curves, the discrimination and
selective-prediction tables, and the label × confidence-bin heatmap. The figures are the
single-label figures, a row (or line) per label instead of per model. Formatting only:
every number is a column of the tables passed in (``multilabel``, ``multilabel_bins``, the
``multilabel_micro_*`` and ``multilabel_macro_*`` tables and the label rows of the
single-label ones); without the bootstrap the macro rank rows are
``relcol.analysis._multilabel.macro_rows`` of the label rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from html import escape

import polars as pl
from great_tables import GT

from relcol.analysis import (
    CELL_KEYS,
    NO_MACRO_INTERVAL,
    name_label_codes,
    with_stage,
)
from relcol.analysis import MULTILABEL_INTERVALS as INTERVALS
from relcol.metrics import labels
from relcol.report import _sections
from relcol.report._drawing import drawn_svg
from relcol.report._figures import (
    _RC,
    _plain,
    confidence_figure,
    model_styles,
    reliability_figure,
    risk_coverage_figure,
)
from relcol.report._layout import by_dataset, figure
from relcol.report._metric_sections import (
    _discrimination,
    _prepared,
    _selective,
)
from relcol.report._sections import drawn_models, figure_models, figure_rule
from relcol.report._tables import TOP_SCORE_LABELS, merge_intervals, table_html
from relcol.report._trust_section import _table as trust_table
from relcol.report._trust_section import _with_trend

MODE_NAMES = {
    "prediction_confidence": "prediction confidence (c vs correct)",
    "positive_class": "positive class (p = P(present) vs present)",
}
TARGET_NAMES = {"binary": "0/1 target", "agreement": "annotator agreement as the target"}
_PER_MODE = ("accuracy", "mean_confidence", "gap", "ece", "mce")
_SHARED = ("brier_top", "nll_top")
_LABELS = labels(("n", *_PER_MODE, *_SHARED)) | {
    "accuracy": "observed",  # the mean outcome, which may be an agreement share
    **TOP_SCORE_LABELS,
}
#: The micro row's name in tables and figures.
MICRO = "micro (all labels)"
#: At most this many heatmap figures (one per cell); the table holds every cell.
MAX_HEATMAPS = 6
#: At most this many labels (rows) in a heatmap, chosen by ``figure_models``'s rule among the
#: model's labels; the table holds every label.
HEATMAP_LABELS = 40
_CELL = CELL_KEYS


def multilabel_section(
    tables: Mapping[str, pl.DataFrame],
    *,
    bins: int,
    meta: Mapping[str, object] | None = None,
    **_: object,
) -> str | None:
    """The section's HTML, or None when there is no multi-label table."""
    table = tables.get("multilabel")
    if table is None or table.is_empty():
        return None
    level = float((meta or {}).get("level") or 0.95)
    parts = [_intro(table, level)]
    trust = _trust(tables, table)
    if trust:
        parts.append("<h3>Where trust breaks, per label</h3>\n" + trust)
    for target in ("binary", "agreement"):
        rows = table.filter(pl.col("target") == target)
        if not rows.is_empty():
            parts.append(f"<h3>Calibration, {escape(TARGET_NAMES[target])}</h3>")
            parts.append(table_html(multilabel_table(rows, target=target, bins=bins)))
    parts += _figures(tables, table, bins=bins)
    parts += _rank_tables(tables, table)
    grid = tables.get("multilabel_bins")
    if grid is not None and not grid.is_empty():
        binary = grid.filter(pl.col("target") == "binary")
        parts.append(_heatmaps(binary, tables.get("calibration"), bins=bins))
    body = "\n".join(parts)
    return (
        '<section id="multilabel">\n<h2>Multi-label: per label, micro and macro</h2>\n'
        f"{body}\n</section>"
    )


def _intro(table: pl.DataFrame, level: float) -> str:
    has_intervals = any(f"{m}_lo" in table.columns for m in INTERVALS)
    if has_intervals:
        withheld = "; ".join(f"macro {m}: {why}" for m, why in NO_MACRO_INTERVAL.items())
        intervals = (
            f"Brackets: {level:.0%} paired-bootstrap intervals (0/1 target), resampling test "
            "samples with one weight for all of a sample's labels; a macro interval is that "
            "of the mean over labels of the labels' replicates. Each is printed only where "
            "simulation with known truth shows it covers (per label, micro and macro, both "
            f"modes). None for ECE and MCE (their binned estimate sits a noise floor above the "
            f"population value), for the agreement target, and for {escape(withheld)}."
        )
    else:
        intervals = "No intervals: the report was made without the bootstrap (B = 0)."
    return (
        "<p>Rows per (sample, label). Two calibration modes, always named: <b>prediction "
        "confidence</b> scores the stated confidence c in the predicted 0/1 outcome against "
        "whether it was right; <b>positive class</b> scores p = P(label present) (c when the "
        "label was predicted present, 1 − c when absent) against whether it is present. "
        "<i>micro</i> pools every (sample, label) pair; <i>macro</i> is the mean of the "
        "per-label values. Brier and NLL are the same in both modes. The figures and the "
        "discrimination tables use the prediction-confidence mode, as a single-label study "
        f"does. {intervals}</p>"
    )


def multilabel_table(rows: pl.DataFrame, *, target: str, bins: int) -> GT:
    """One target's rows as a table: a row per label, micro, macro; a column group per mode.

    A metric with ``<metric>_lo``/``<metric>_hi`` columns shows its interval beside it.
    """
    shown = rows.with_columns(
        row=pl.when(pl.col("average") == "label")
        .then(pl.coalesce(pl.col("label_name"), pl.col("label").cast(pl.String)))
        .otherwise(pl.col("average"))
    )
    group_keys = [k for k in _CELL if shown.get_column(k).n_unique() > 1 or k == "model"]
    bounded = [m for m in (*_PER_MODE, *_SHARED) if f"{m}_lo" in shown.columns]
    bounds = [f"{m}_{end}" for m in bounded for end in ("lo", "hi")]
    wide = shown.pivot(
        on="mode",
        index=[*_CELL, "average", "label", "row"],
        values=[*_PER_MODE, "n", *_SHARED, *bounds],
        aggregate_function="first",
    )
    modes = [m for m in MODE_NAMES if f"ece_{m}" in wide.columns]
    first = modes[0]
    # the pivot table a bound <metric>_lo_<mode>: renamed <metric>_<mode>_lo, the pattern
    # merge_intervals reads
    renamed = {
        f"{m}_{end}_{mode}": f"{m}_{mode}_{end}"
        for m in bounded
        for end in ("lo", "hi")
        for mode in modes
    }
    wide = (
        wide.rename(renamed)
        .with_columns(
            n=pl.col(f"n_{first}"),
            **{m: pl.col(f"{m}_{first}") for m in _SHARED},
            **{
                f"{m}_{end}": pl.col(f"{m}_{first}_{end}")
                for m in _SHARED
                if m in bounded
                for end in ("lo", "hi")
            },
            group=pl.concat_str([pl.col(k).cast(pl.String) for k in group_keys], separator=" / "),
            order=pl.col("average").replace_strict({"label": 0, "micro": 1, "macro": 2}),
        )
        .sort("group", "order", "label", nulls_last=True)
    )
    columns = [f"{m}_{mode}" for mode in modes for m in _PER_MODE]
    interval_columns = [
        f"{c}_{end}" for c in (*columns, *_SHARED) for end in ("lo", "hi")
        if f"{c}_{end}" in wide.columns
    ]  # fmt: skip
    data = wide.select("group", "row", "n", *columns, *_SHARED, *interval_columns)
    gt = (
        GT(data, rowname_col="row", groupname_col="group", id=f"relcol-multilabel-{target}")
        .tab_header(
            title=f"Multi-label calibration, {TARGET_NAMES[target]}",
            subtitle=f"ECE and MCE on {bins} equal-width bins; gap Δ = mean confidence − observed",
        )
        .tab_stubhead("label")
        .fmt_number([*columns, *_SHARED, *interval_columns], decimals=3)
        .fmt_integer("n", use_seps=False)
    )
    gt = merge_intervals(gt, data)
    for mode in modes:
        gt = gt.tab_spanner(MODE_NAMES[mode], columns=[f"{m}_{mode}" for m in _PER_MODE])
    labels = {f"{m}_{mode}": _LABELS[m] for mode in modes for m in _PER_MODE}
    labels |= {m: _LABELS[m] for m in ("n", *_SHARED)}
    return gt.cols_label(**labels).tab_source_note(
        "observed: the share right (prediction confidence) or present (positive class)."
    )


def _as_rows(frame: pl.DataFrame | None, table: pl.DataFrame, *, micro: bool) -> pl.DataFrame:
    """A per-label (or micro) table with ``model`` replaced by the label's name (prefixed by
    the model when the study has several), ``label`` null: the shape the single-label
    figures and tables draw a row or line per model from. ``table``: the ``multilabel``
    table, whose ``label_name`` names the codes."""
    if frame is None or frame.is_empty():
        return pl.DataFrame()
    several = frame.get_column("model").n_unique() > 1
    prefix = pl.col("model") + " / " if several else pl.lit("")
    if micro:
        rows = frame.filter(pl.col("label").is_null()).with_columns(model=prefix + MICRO)
    else:
        rows = name_label_codes(frame.filter(pl.col("label").is_not_null()), table)
        rows = rows.with_columns(model=prefix + pl.col("label"))
    return rows.with_columns(label=pl.lit(None, pl.String))


def _both(tables, multilabel: pl.DataFrame, table: str) -> pl.DataFrame:
    """The per-label rows of the report's ``table`` and the micro rows of
    ``multilabel_micro_<table>``, named for the figures."""
    parts = [
        _as_rows(tables.get(table), multilabel, micro=False),
        _as_rows(tables.get(f"multilabel_micro_{table}"), multilabel, micro=True),
    ]
    parts = [p for p in parts if not p.is_empty()]
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def _styles(rows: pl.DataFrame) -> dict:
    return model_styles(rows.get_column("model").unique(maintain_order=True).to_list())


def _figures(tables, multilabel: pl.DataFrame, *, bins: int) -> list[str]:
    """Reliability diagrams, confidence distributions and risk–coverage curves: a row or
    line per label and one for micro, each drawn by the single-label figure function."""
    discrimination = _both(tables, multilabel, "discrimination")
    auroc = {
        (r["model"], r["corruption"], r["severity"]): r["auroc"]
        for r in discrimination.iter_rows(named=True)
    }
    specs = (
        (
            "reliability",
            "mlrel",
            "Reliability diagrams",
            partial(reliability_figure, edges=bins),
            "reliability diagrams, a row per label and one for micro (every pair pooled). "
            "Vertical lines: Wilson intervals of each bin's accuracy on its distinct test "
            "samples (none below 5); n: the rows in the panel.",
        ),
        (
            "confidence_histogram",
            "mlconf",
            "Confidence distributions",
            partial(confidence_figure, edges=bins, auroc=auroc),
            "confidence of right (filled) and wrong (line) decisions, each as a share of its "
            "own count, a row per label and one for micro; AUROC in each panel.",
        ),
        (
            "risk_coverage",
            "mlrc",
            "Risk–coverage",
            risk_coverage_figure,
            "the error rate of the accepted decisions as the most confident are accepted "
            "first, a line per label and one for micro.",
        ),
    )
    # at most FIGURE_MODELS rows or lines: micro and the labels of the largest and smallest
    # gaps, the same labels in every figure
    cells = _as_rows(tables.get("calibration"), multilabel, micro=False)
    named = (
        [] if cells.is_empty() else cells.get_column("model").unique(maintain_order=True).to_list()
    )
    labels = _sections.FIGURE_MODELS - 1
    drawn = set(figure_models(cells, named, labels)) if named else set()
    rule = f"micro and, of the labels, {figure_rule(labels)}"
    out = []
    for table, prefix, heading, draw, caption in specs:
        rows = _both(tables, multilabel, table)
        if rows.is_empty():
            continue
        if table == "reliability":
            rows = rows.filter(pl.col("binning") == "width")
        if "stage" not in rows.columns:
            rows = with_stage(rows)
        keep = {m for m in rows.get_column("model").unique() if m in drawn or m not in named}
        what = f"every label is in <code>{table}.csv</code>"
        rows, chosen = drawn_models(rows, keep, what, rows="rows", rule=rule)
        caption += chosen
        styles = _styles(rows)

        def render(
            part, name, index, prefix=prefix, heading=heading, draw=draw, caption=caption,
            styles=styles,
        ) -> str:  # fmt: skip
            svg = drawn_svg(
                draw,
                part,
                title=name,
                styles=styles,
                id_prefix=f"{prefix}{index}",
                label=f"{heading}: {name}",
            )
            return figure(svg, f"{escape(name)}: {caption}")

        body = by_dataset(rows, render)
        out.append(f"<h3>{heading}</h3>\n{body}")
    return out


def _rank_tables(tables, multilabel: pl.DataFrame) -> list[str]:
    """The discrimination and selective tables: a row per label, micro and macro."""
    out = []
    for table, render, heading in (
        ("discrimination", _discrimination, "Discrimination"),
        ("selective", _selective, "Selective prediction"),
    ):
        rows = _both(tables, multilabel, table)
        per_label = tables.get(table)
        if rows.is_empty() or per_label is None:
            continue
        macro = tables[f"multilabel_macro_{table}"]  # with intervals, when bootstrapped
        macro = _as_rows(macro, multilabel, micro=True).with_columns(
            model=pl.col("model").str.replace(MICRO, "macro", literal=True)
        )
        rows = pl.concat([rows, macro.drop("average")], how="diagonal_relaxed")

        def draw(part: pl.DataFrame, name: str, index: int, render=render, table=table) -> str:
            gt = render(part, f"relcol-ml-{table}-{index}", name).tab_stubhead("label")
            return table_html(gt)

        out.append(f"<h3>{heading}</h3>\n" + by_dataset(_prepared(rows), draw))
    if out:
        out[0] = (
            "<p>Prediction-confidence mode: does c rank a label's right decisions above its "
            "wrong ones? Micro: every pair pooled; macro: the mean over labels. Intervals as "
            "for a single-label cell (the macro one: of the mean of the labels' replicates), "
            "their coverage verified by the same simulation as the calibration table's; "
            "none for AUPR and coverage @ risk, as for single-label cells.</p>\n" + out[0]
        )
    return out


def _trust(tables, multilabel: pl.DataFrame) -> str | None:
    """The statistical layer's per-label verdicts (``thresholds`` label rows), by name."""
    thresholds = tables.get("thresholds")
    if thresholds is None or thresholds.is_empty() or "label" not in thresholds.columns:
        return None
    frame = _as_rows(_with_trend(thresholds, tables.get("trends")), multilabel, micro=False)
    if frame.is_empty():
        return None

    def render(part: pl.DataFrame, name: str, index: int) -> str:
        gt = trust_table(part, name, index).with_id(f"relcol-ml-trust-{index}")
        return table_html(gt.tab_stubhead("label"), collapse=False)

    return by_dataset(frame, render)


def _heatmaps(grid: pl.DataFrame, calibration: pl.DataFrame | None, *, bins: int) -> str:
    cells = grid.select(_CELL).unique(maintain_order=True)
    figures = []
    for i, cell in enumerate(cells.head(MAX_HEATMAPS).iter_rows(named=True), start=1):
        part = grid.filter(pl.all_horizontal(pl.col(k) == v for k, v in cell.items()))
        part, chosen = _heatmap_labels(part, calibration, cell)
        name = " / ".join(str(cell[k]) for k in ("dataset", "model", "corruption"))
        if cells.get_column("severity").n_unique() > 1:
            name += f" / d = {cell['severity']:g}"
        svg = drawn_svg(
            heatmap_figure,
            part,
            bins=bins,
            title=name,
            id_prefix=f"mlheat{i}",
            label=f"Label by confidence-bin heatmap of accuracy minus confidence for {name}",
        )
        figures.append(
            f"<figure>\n{svg}\n<figcaption>{escape(name)}: accuracy − mean confidence per "
            "label and confidence bin (blue: underconfident, red: overconfident; blank: no "
            f"rows), one panel per mode; the number is the bin's row count.{chosen}"
            "</figcaption>\n</figure>"
        )
    more = cells.height - MAX_HEATMAPS
    note = f"<p>{more} more cells are in multilabel_bins.csv.</p>" if more > 0 else ""
    return "<h3>Label × confidence bin</h3>\n" + "\n".join(figures) + note


def _heatmap_labels(
    part: pl.DataFrame, calibration: pl.DataFrame | None, cell: Mapping[str, object]
) -> tuple[pl.DataFrame, str]:
    """One heatmap's rows cut to at most ``HEATMAP_LABELS`` labels, chosen by
    ``figure_models``'s rule from the gaps Δ of the model's labels in ``calibration`` (labels
    by name, as the sections get it), and the caption's sentence that says so (empty when
    every label is drawn)."""
    named = part.with_columns(model=pl.coalesce("label_name", pl.col("label").cast(pl.String)))
    names = named.sort("label").get_column("model").unique(maintain_order=True).to_list()
    if len(names) <= HEATMAP_LABELS:
        return part, ""
    gaps = (
        pl.DataFrame(schema={"model": pl.String, "gap": pl.Float64})
        if calibration is None
        else calibration.filter(
            pl.all_horizontal(pl.col(k) == cell[k] for k in ("study", "dataset", "model")),
            pl.col("label").is_not_null(),
        ).select(model=pl.col("label").cast(pl.String), gap="gap")
    )
    drawn = figure_models(gaps, names, HEATMAP_LABELS)
    what = "every label is in <code>multilabel_bins.csv</code>"
    cut, sentence = drawn_models(
        named, drawn, what, rows="labels", rule=figure_rule(HEATMAP_LABELS)
    )
    return cut.with_columns(model=pl.lit(cell["model"])), sentence


def heatmap_figure(grid: pl.DataFrame, *, bins: int, title: str):
    """Label × bin heatmaps of ``accuracy_minus_confidence``, one panel per mode.

    ``grid`` holds one cell's rows of the ``multilabel_bins`` table (one target).
    """
    import numpy as np
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = (
        grid.select("label", "label_name")
        .unique()
        .sort("label")
        .with_columns(pl.coalesce(pl.col("label_name"), pl.col("label").cast(pl.String)))
    )
    names = labels.get_column("label_name").to_list()
    index = {code: i for i, code in enumerate(labels.get_column("label"))}
    modes = [m for m in MODE_NAMES if m in set(grid.get_column("mode"))]
    with rc_context(_RC):
        fig = Figure(
            figsize=(4.2 * len(modes) + 1.0, 0.45 * len(names) + 1.6), layout="constrained"
        )
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, len(modes), squeeze=False)[0]
        image = None
        for ax, mode in zip(axes, modes, strict=True):
            rows = grid.filter(pl.col("mode") == mode)
            values = np.full((len(names), bins), np.nan)
            counts = np.zeros((len(names), bins), dtype=int)
            for row in rows.iter_rows(named=True):
                values[index[row["label"]], row["bin"]] = row["accuracy_minus_confidence"]
                counts[index[row["label"]], row["bin"]] = row["n"]
            image = ax.imshow(
                np.ma.masked_invalid(values),
                cmap="RdBu",
                vmin=-1,
                vmax=1,
                aspect="auto",
                extent=(0, 1, len(names) - 0.5, -0.5),
                interpolation="nearest",
            )
            for (r, b), n in np.ndenumerate(counts):
                if n:
                    ax.text((b + 0.5) / bins, r, str(n), ha="center", va="center", fontsize=6)
            ax.set_yticks(range(len(names)), [_plain(n) for n in names])
            ax.set_xlabel("confidence" if mode == "prediction_confidence" else "p = P(present)")
            ax.set_title(MODE_NAMES[mode], fontsize=9)
            ax.grid(False)
        fig.colorbar(image, ax=list(axes), label="accuracy − confidence", shrink=0.9)
        fig.suptitle(_plain(title), fontsize=10, fontweight="bold")
    return fig
