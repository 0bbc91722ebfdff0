"""The report's multi-label section: per-label calibration in both modes, and its heatmap.

Shown when the report's tables include ``multilabel`` (and ``multilabel_bins`` for the
heatmap): a table per target with a row per label plus the micro and macro averages and a
column group per mode, then a label × confidence-bin heatmap of accuracy − confidence for
each mode. Formatting only: every number is a column of the tables passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

import polars as pl
from great_tables import GT

from relcol.report._figures import _RC, _plain, figure_svg
from relcol.report._tables import table_html

MODE_NAMES = {
    "prediction_confidence": "prediction confidence (c vs correct)",
    "positive_class": "positive class (p = P(present) vs present)",
}
TARGET_NAMES = {"binary": "0/1 target", "agreement": "annotator agreement as the target"}
_PER_MODE = ("accuracy", "mean_confidence", "gap", "ece", "mce")
_SHARED = ("brier_top", "nll_top")
_LABELS = {
    "n": "n",
    "accuracy": "observed",
    "mean_confidence": "mean conf.",
    "gap": "gap Δ",
    "ece": "ECE",
    "mce": "MCE",
    "brier_top": "Brier",
    "nll_top": "NLL",
}
#: At most this many heatmap figures (one per cell); the table holds every cell.
MAX_HEATMAPS = 6
_CELL = ("study", "dataset", "model", "corruption", "severity")


def multilabel_section(tables: Mapping[str, pl.DataFrame], *, bins: int) -> str | None:
    """The section's HTML, or None when there is no multi-label table."""
    table = tables.get("multilabel")
    if table is None or table.is_empty():
        return None
    parts = [
        "<p>Rows per (sample, label). Two calibration modes, always named: <b>prediction "
        "confidence</b> scores the stated confidence c in the predicted 0/1 outcome against "
        "whether it was right; <b>positive class</b> scores p = P(label present) (c when the "
        "label was predicted present, 1 − c when absent) against whether it is present. "
        "<i>micro</i> pools every (sample, label) pair; <i>macro</i> is the mean of the "
        "per-label values. Brier and NLL are the same in both modes. Paired bootstrap "
        "intervals are pending the statistical layer.</p>"
    ]
    for target in ("binary", "agreement"):
        rows = table.filter(pl.col("target") == target)
        if not rows.is_empty():
            parts.append(f"<h3>{escape(TARGET_NAMES[target].capitalize())}</h3>")
            parts.append(table_html(multilabel_table(rows, target=target, bins=bins)))
    grid = tables.get("multilabel_bins")
    if grid is not None and not grid.is_empty():
        parts.append(_heatmaps(grid.filter(pl.col("target") == "binary"), bins=bins))
    body = "\n".join(parts)
    return f'<section id="multilabel">\n<h2>Per-label calibration</h2>\n{body}\n</section>'


def multilabel_table(rows: pl.DataFrame, *, target: str, bins: int) -> GT:
    """One target's rows as a table: a row per label, micro, macro; a column group per mode."""
    shown = rows.with_columns(
        row=pl.when(pl.col("average") == "label")
        .then(pl.coalesce(pl.col("label_name"), pl.col("label").cast(pl.String)))
        .otherwise(pl.col("average"))
    )
    group_keys = [k for k in _CELL if shown.get_column(k).n_unique() > 1 or k == "model"]
    wide = shown.pivot(
        on="mode",
        index=[*_CELL, "average", "label", "row"],
        values=[*_PER_MODE, "n", *_SHARED],
        aggregate_function="first",
    )
    modes = [m for m in MODE_NAMES if f"ece_{m}" in wide.columns]
    first = modes[0]
    wide = wide.with_columns(
        n=pl.col(f"n_{first}"),
        **{m: pl.col(f"{m}_{first}") for m in _SHARED},
        group=pl.concat_str([pl.col(k).cast(pl.String) for k in group_keys], separator=" / "),
        order=pl.col("average").replace_strict({"label": 0, "micro": 1, "macro": 2}),
    ).sort("group", "order", "label", nulls_last=True)
    columns = [f"{m}_{mode}" for mode in modes for m in _PER_MODE]
    gt = (
        GT(
            wide.select("group", "row", "n", *columns, *_SHARED),
            rowname_col="row",
            groupname_col="group",
            id=f"relcol-multilabel-{target}",
        )
        .tab_header(
            title=f"Multi-label calibration, {TARGET_NAMES[target]}",
            subtitle=f"ECE and MCE on {bins} equal-width bins; gap Δ = mean confidence − observed",
        )
        .tab_stubhead("label")
        .fmt_number([*columns, *_SHARED], decimals=3)
        .fmt_integer("n", use_seps=False)
        .sub_missing(missing_text="–")
    )
    for mode in modes:
        gt = gt.tab_spanner(MODE_NAMES[mode], columns=[f"{m}_{mode}" for m in _PER_MODE])
    labels = {f"{m}_{mode}": _LABELS[m] for mode in modes for m in _PER_MODE}
    labels |= {m: _LABELS[m] for m in ("n", *_SHARED)}
    return gt.cols_label(**labels).tab_source_note(
        "observed: the share right (prediction confidence) or present (positive class)."
    )


def _heatmaps(grid: pl.DataFrame, *, bins: int) -> str:
    cells = grid.select(_CELL).unique(maintain_order=True)
    figures = []
    for i, cell in enumerate(cells.head(MAX_HEATMAPS).iter_rows(named=True), start=1):
        part = grid.filter(pl.all_horizontal(pl.col(k) == v for k, v in cell.items()))
        name = " / ".join(str(cell[k]) for k in ("dataset", "model", "corruption"))
        if cells.get_column("severity").n_unique() > 1:
            name += f" / d = {cell['severity']:g}"
        svg = figure_svg(
            heatmap_figure(part, bins=bins, title=name),
            id_prefix=f"mlheat{i}",
            label=f"Label by confidence-bin heatmap of accuracy minus confidence for {name}",
        )
        figures.append(
            f"<figure>\n{svg}\n<figcaption>{escape(name)}: accuracy − mean confidence per "
            "label and confidence bin (blue: underconfident, red: overconfident; blank: no "
            "rows), one panel per mode; the number is the bin's row count.</figcaption>\n"
            "</figure>"
        )
    more = cells.height - MAX_HEATMAPS
    note = f"<p>{more} more cells are in multilabel_bins.csv.</p>" if more > 0 else ""
    return "<h3>Label × confidence bin</h3>\n" + "\n".join(figures) + note


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
