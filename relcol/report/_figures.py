"""The report's figures: degradation curves, reliability diagrams, confidence distributions,
risk–coverage curves, consistency and scorecard panels.

Every figure draws the columns of a frame that ``relcol.metrics`` or ``relcol.analysis``
computed, nothing else. One model keeps one colour, marker and dash pattern in every figure
(:func:`model_styles`, from the colour-blind-safe Okabe–Ito palette). ``<metric>_lo`` and
``<metric>_hi`` columns, when a frame has them, are drawn as bands or error bars.

Figures are drawn on the Agg canvas without pyplot, so drawing never touches a notebook's
backend, and exported by :func:`figure_svg` as deterministic inline SVG. Grids of small
panels are laid out by hand (margins in inches) rather than by matplotlib's constrained
layout, which costs a second or more per large grid.
"""

from __future__ import annotations

import io
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from html import escape
from typing import TYPE_CHECKING, Any

import polars as pl

from relcol.metrics import labels
from relcol.text import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Okabe & Ito (2008), "Color universal design": distinguishable under the common
# colour-vision deficiencies. Yellow is last because it is faint on white.
OKABE_ITO = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#000000",  # black
    "#F0E442",  # yellow
)
# A marker and, past eight models, a dash pattern as well, so lines stay apart
# in greyscale print too.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_DASHES = ("-", "--", ":", "-.")
#: Neutral colours: reference lines, count bars, wrong predictions.
GREY, LIGHT, INK = "#8C8C8C", "#DADADA", "#222222"

#: Narrowest figure, in inches (576 CSS pixels): room for a legend and readable panels.
MIN_WIDTH = 6.0
#: How much panels may grow to reach ``MIN_WIDTH``.
MAX_GROWTH = 1.4
#: Widest figure, in inches (1,250 CSS pixels): wider grids wrap onto more rows.
MAX_WIDTH = 13.0

_LABEL = labels(("ece", "mce"))
#: (column, axis label) for the rows of a degradation figure.
PANELS = (
    ("accuracy", "accuracy"),
    ("mean_confidence", "mean confidence"),
    ("ece", _LABEL["ece"]),
    ("gap", "gap Δ = conf. − acc."),
)

_RC = {
    # Fixed salt: the ids of clip paths and markers are hashes, equal on every run.
    "svg.hashsalt": "relcol",
    # Text stays text (searchable, small); the page's sans-serif renders it.
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#E5E5E5",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
}

Styles = Mapping[str, Mapping[str, Any]]


def model_styles(models: Sequence[str]) -> dict[str, dict[str, object]]:
    """Line style per model, in the given order: colour, marker, dash pattern.

    Pass every model of the report (not one dataset's) so a model keeps its colour
    in every figure.
    """
    styles = {}
    for i, model in enumerate(models):
        styles[model] = {
            "color": OKABE_ITO[i % len(OKABE_ITO)],
            "marker": _MARKERS[i % len(_MARKERS)],
            "linestyle": _DASHES[(i // len(OKABE_ITO)) % len(_DASHES)],
        }
    return styles


def _complete_styles(styles: Styles | None, models: Sequence[str]) -> Styles:
    if styles is not None and all(m in styles for m in models):
        return styles
    known = list(styles or {})
    return model_styles([*known, *(m for m in models if m not in known)])


def _figure(
    nrows: int,
    ncols: int,
    *,
    panel: tuple[float, float],
    left: float = 0.75,
    right: float = 0.15,
    top: float = 0.55,
    bottom: float = 0.75,
    wspace: float = 0.22,
    hspace: float = 0.3,
    sharex: bool | str = True,
    sharey: bool | str = "row",
    min_width: float = MIN_WIDTH,
):
    """A figure of ``nrows`` × ``ncols`` panels of ``panel`` inches, margins in inches.

    Spacing between panels (``wspace``, ``hspace``) is in inches too. A figure that would
    be narrower than ``min_width`` is widened, so a study with one corruption does not get
    a thumbnail whose legend cannot fit: its panels grow first (up to ``MAX_GROWTH``
    times, keeping their shape), then its side margins.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fixed = left + right + (ncols - 1) * wspace
    grow = min(MAX_GROWTH, (min_width - fixed) / (ncols * panel[0]))
    if grow > 1:  # few columns: larger panels (same shape) first, then wider margins
        panel = (panel[0] * grow, panel[1] * grow)
    width = fixed + ncols * panel[0]
    if width < min_width:
        left, right = left + (min_width - width) / 2, right + (min_width - width) / 2
        width = min_width
    height = top + bottom + nrows * panel[1] + (nrows - 1) * hspace
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(
        nrows,
        ncols,
        sharex=sharex,
        sharey=sharey,
        squeeze=False,
        gridspec_kw={
            "left": left / width,
            "right": 1 - right / width,
            "top": 1 - top / height,
            "bottom": bottom / height,
            "wspace": wspace / panel[0],
            "hspace": hspace / panel[1],
        },
    )
    fig._relcol_margins = {"top": top, "bottom": bottom, "left": left}  # inches
    return fig, axes


@contextmanager
def _autoscaled_at_end(axes) -> Iterator[None]:
    """Inside the block, adding a line or a band moves no view limits; at its end each of
    ``axes`` (an array) is autoscaled once, to everything drawn.

    matplotlib autoscales at once when a band (a collection) is added after anything else,
    and an axes' limits reach every axes that shares them: a grid's view limits were computed
    again for each band, over the whole row and column. An axes' autoscaled limits are those
    of the data drawn on it and on the axes that share its limits, whatever the order they
    were added in, so the limits at the end are the same (the built-in study's three
    degradation figures: the same SVG, built and exported in 7.8–8.2 s instead of 8.3–8.7 s
    on the development machine).
    """
    flat = list(axes.flat)
    for ax in flat:
        ax.set_autoscale_on(False)
    yield
    for ax in flat:
        ax.set_autoscale_on(True)
    for ax in flat:
        ax.autoscale_view()


def _legend(fig: Figure, handles: list, *, ncols: int, y: float = 0.0):
    """A legend under the panels that fits the figure's width.

    Columns are dropped until the legend is no wider than the figure, then spread
    evenly over the rows; each row beyond the first makes the figure taller at the
    bottom, so the panels keep their size and nothing is clipped. Returns the legend.
    """
    import math

    if not handles:
        return None
    renderer = fig.canvas.get_renderer()
    room = (fig.get_figwidth() - 0.1) * fig.dpi
    ncols = max(1, min(len(handles), ncols))
    while True:
        legend = _place_legend(fig, handles, ncols, y)
        if ncols == 1 or legend.get_window_extent(renderer).width <= room:
            break
        legend.remove()
        ncols -= 1
    rows = math.ceil(len(handles) / ncols)
    even = math.ceil(len(handles) / rows)
    if even != ncols:
        legend.remove()
        legend = _place_legend(fig, handles, even, y)
    if rows > 1:
        line = legend.get_window_extent(renderer).height / rows / fig.dpi
        _grow_bottom(fig, (rows - 1) * line)
    return legend


def _place_legend(fig: Figure, handles: list, ncols: int, y: float):
    return fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, y),
        ncols=ncols,
        frameon=False,
        handlelength=2.2,
        columnspacing=1.4,
    )


def _grow_bottom(fig: Figure, extra: float) -> None:
    """Add ``extra`` inches under the panels, keeping their size and the top margin."""
    margins = fig._relcol_margins
    width, height = fig.get_size_inches()
    height += extra
    margins["bottom"] += extra
    fig.set_size_inches(width, height)
    placed = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    for grid in {ax.get_subplotspec().get_gridspec() for ax in placed}:
        grid.update(top=1 - margins["top"] / height, bottom=margins["bottom"] / height)
    for ax in placed:  # update() moves only the axes of pyplot's figures
        ax.set_position(ax.get_subplotspec().get_position(fig))


def _axis_labels(fig: Figure, axes, *, x: str | None = None, y: str | None = None) -> None:
    """Labels shared by a grid: x under the tick labels, y centred on the panels."""
    height = fig.get_figheight()
    if x is not None:
        fig.supxlabel(x, y=(fig._relcol_margins["bottom"] - 0.62) / height, va="bottom")
    if y is not None:
        middle = (axes[0, 0].get_position().y1 + axes[-1, 0].get_position().y0) / 2
        left = fig._relcol_margins["left"] - 0.78  # just outside the row labels
        fig.supylabel(y, x=left / fig.get_figwidth(), y=middle)


def _model_handles(styles: Styles, models: Sequence[str], **line) -> list:
    """Legend entries in the report-wide model order, for the models drawn here."""
    return [_legend_handle(style, m, **line) for m, style in styles.items() if m in models]


def _legend_handle(style: Mapping[str, Any], model: str, **line):
    from matplotlib.lines import Line2D

    return Line2D([], [], lw=1.6, ms=4, label=_plain(model), **{**style, **line})


def _plain(text: str) -> str:
    """Show a name as typed: control characters as symbols (legends are measured before
    export), and a ``$`` would otherwise start matplotlib mathtext."""
    return printable(text, symbols=False).replace("$", r"\$")


def _values(frame: pl.DataFrame, column: str):
    return frame.get_column(column).cast(pl.Float64).to_numpy()


def _has_band(frame: pl.DataFrame, metric: str) -> bool:
    return f"{metric}_lo" in frame.columns and f"{metric}_hi" in frame.columns


def _ordered(frame: pl.DataFrame, column: str) -> list:
    return frame.get_column(column).unique(maintain_order=True).to_list()


# Degradation curves ------------------------------------------------------------------------------


def degradation_figure(
    calibration: pl.DataFrame,
    *,
    title: str | None = None,
    styles: Styles | None = None,
    realised: Collection[str] = (),
) -> Figure:
    """Accuracy, mean confidence, ECE and the gap Δ against severity for one dataset.

    Parameters
    ----------
    calibration
        The calibration rows of one dataset (and one study). Corruptions become
        columns in order of first appearance, the metrics of :data:`PANELS` rows. Rows
        with a non-null ``label`` are drawn as thin lines in their model's colour;
        ``<metric>_lo`` and ``<metric>_hi`` columns, when present, as bands.
    title
        Figure title; defaults to the dataset name.
    styles
        Line style per model from :func:`model_styles`; defaults to the models of
        ``calibration`` in order of first appearance.
    realised
        Corruptions whose column is drawn against the mean realised rate (column
        ``realised_rate``, see :func:`relcol.analysis.on_realised_axis`) instead of d:
        those whose realised rate diverges from d.

    Returns
    -------
    matplotlib.figure.Figure
        A figure on the Agg canvas (no pyplot state involved).
    """
    from matplotlib import rc_context

    models = _ordered(calibration, "model")
    corruptions = _ordered(calibration, "corruption")
    styles = _complete_styles(styles, models)
    if title is None:
        title = ", ".join(_ordered(calibration, "dataset"))
    panels = [(m, label) for m, label in PANELS if m in calibration.columns]

    with rc_context(_RC):
        ncols = len(corruptions)
        fig, axes = _figure(
            len(panels), ncols, panel=(1.75, 1.3), left=0.85, top=0.6, bottom=0.85,
            sharex="col", sharey="row",
        )  # fmt: skip
        with _autoscaled_at_end(axes):
            for j, corruption in enumerate(corruptions):
                rows = calibration.filter(pl.col("corruption") == corruption)
                x = "realised_rate" if corruption in realised else "severity"
                for i, (metric, label) in enumerate(panels):
                    ax = axes[i, j]
                    if metric == "gap":
                        ax.axhline(0.0, color=GREY, lw=0.8, zorder=1)
                    _degradation_panel(ax, rows, metric, models, styles, x=x)
                    if i == 0:
                        ax.set_title(_plain(corruption))
                    if i == len(panels) - 1:
                        ax.set_xlabel("realised rate" if x == "realised_rate" else "severity d")
                    if j == 0:
                        ax.set_ylabel(label)
        _share_probability_scale(axes, calibration, panels)
        _legend(fig, _model_handles(styles, models), ncols=min(6, 2 * ncols + 1))
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _degradation_panel(
    ax: Axes, rows: pl.DataFrame, metric: str, models, styles, *, x: str = "severity"
) -> None:
    has_band = _has_band(rows, metric)
    has_label = "label" in rows.columns
    for model in models:
        lines = rows.filter(pl.col("model") == model)
        if lines.is_empty():
            continue
        style = styles[model]
        parts = lines.partition_by("label", maintain_order=True) if has_label else [lines]
        for part in parts:
            part = part.sort(x)
            xs, y = _values(part, x), _values(part, metric)
            per_label = has_label and part.get_column("label").null_count() == 0
            if per_label:
                ax.plot(
                    xs, y, color=style["color"], linestyle=style["linestyle"], lw=0.8, alpha=0.4
                )
                continue
            ax.plot(xs, y, lw=1.5, ms=3.5, **style)
            if has_band:
                lo, hi = _values(part, f"{metric}_lo"), _values(part, f"{metric}_hi")
                ax.fill_between(xs, lo, hi, color=style["color"], alpha=0.18, lw=0)


def _share_probability_scale(axes, calibration: pl.DataFrame, panels) -> None:
    """Give accuracy and mean confidence one y-range so the gap reads as a distance."""
    metrics = [m for m, _ in panels]
    shared = [i for i, m in enumerate(metrics) if m in ("accuracy", "mean_confidence")]
    if shared:
        values = pl.concat(
            [calibration.get_column(metrics[i]).cast(pl.Float64) for i in shared]
        ).drop_nans()
        low = values.min()
        low = 0.0 if low is None else max(0.0, min(float(low), 0.9) - 0.05)
        for i in shared:
            axes[i, 0].set_ylim(low, 1.02)
    if "ece" in metrics:
        axes[metrics.index("ece"), 0].set_ylim(bottom=0.0)


# Reliability diagrams and confidence distributions --------------------------------------------


def stage_columns(rows: pl.DataFrame) -> list[tuple[str, str, float]]:
    """The columns of a clean-vs-worst grid: (stage, corruption, severity).

    The first column is the clean severity (the identity for every corruption, so one
    column serves them all; it is read from the first corruption), then each corruption's
    worst severity in order of first appearance.
    """
    columns = []
    clean = rows.filter(pl.col("stage") == "clean")
    if not clean.is_empty():
        first = clean.row(0, named=True)
        columns.append(("clean", first["corruption"], first["severity"]))
    worst = rows.filter(pl.col("stage") == "worst").select("corruption", "severity")
    for corruption, severity in worst.unique(maintain_order=True).iter_rows():
        columns.append(("worst", corruption, severity))
    return columns


def _column_title(stage: str, corruption: str, severity: float) -> str:
    if stage == "clean":
        return f"clean (d = {severity:g})"
    return f"{_plain(corruption)}\nd = {severity:g}"


def _grid_rows(rows: pl.DataFrame) -> tuple[list[str], list[tuple[str, str, float]]]:
    return _ordered(rows, "model"), stage_columns(rows)


def _panel_rows(rows: pl.DataFrame, model: str, column: tuple[str, str, float]) -> pl.DataFrame:
    stage, corruption, severity = column
    return rows.filter(
        (pl.col("model") == model)
        & (pl.col("stage") == stage)
        & (pl.col("corruption") == corruption)
        & (pl.col("severity") == severity)
    )


def _row_label(ax: Axes, model: str, style: Mapping[str, Any]) -> None:
    ax.set_ylabel(_plain(model), color=style["color"], fontweight="bold")


def _model_grid(rows: pl.DataFrame, styles: Styles | None, *, height: float, top: float):
    """A figure of a row of panels per model and a column per stage (clean, then each
    corruption's worst severity), drawn under the caller's rc context: the figure, its axes
    and, per panel, (ax, its rows, model, column, style)."""
    models, columns = _grid_rows(rows)
    styles = _complete_styles(styles, models)
    fig, axes = _figure(
        len(models), len(columns), panel=(1.45, height), left=0.9, top=top, bottom=0.95,
        wspace=0.12, hspace=0.18, sharey=True,
    )  # fmt: skip
    panels = [
        (axes[i, j], _panel_rows(rows, model, column), model, column, styles[model])
        for i, model in enumerate(models)
        for j, column in enumerate(columns)
    ]
    return fig, axes, panels


def _label_grid(axes, panels) -> None:
    """Stage titles over the first row of a ``_model_grid``, model names left of its first
    column."""
    for ax, _, model, column, style in panels:
        if ax is axes[0, ax.get_subplotspec().colspan.start]:
            ax.set_title(_column_title(*column))
        if ax is axes[ax.get_subplotspec().rowspan.start, 0]:
            _row_label(ax, model, style)


#: A bin with fewer samples than this is drawn faint and hollow, without its interval and
#: not joined to its neighbours: at n < 10 a 95 % Wilson interval around 0.5 spans more
#: than half the axis, and a line through such bins draws the eye to noise.
SOLID_BIN_SAMPLES = 10
#: View limits of a reliability panel: a little past [0, 1] so a marker at confidence
#: 1.0 or accuracy 0 or 1 (the worst failures) is drawn whole, inside the frame.
_UNIT_VIEW = (-0.05, 1.05)


def _bin_samples(part: pl.DataFrame):
    """Each bin's independent samples: ``effective_n`` where known, else its rows."""
    import numpy as np

    n = _values(part, "n")
    if "effective_n" not in part.columns:
        return n
    effective = _values(part, "effective_n")
    return np.where(np.isnan(effective), n, effective)


def reliability_panel(
    ax: Axes,
    part: pl.DataFrame,
    style: Mapping[str, Any],
    *,
    edges: int | None = None,
    min_samples: int = SOLID_BIN_SAMPLES,
    label: str | None = None,
) -> None:
    """Draw one cell's reliability bins on ``ax``: the drawing of every reliability diagram.

    ``part``: rows of the ``reliability`` table of one cell and one binning (``bin``,
    ``n``, ``share``, ``mean_confidence``, ``accuracy``, optionally ``accuracy_lo``,
    ``accuracy_hi`` and ``effective_n``). Each bin is a marker at (mean confidence,
    accuracy) whose area grows with the bin's share of rows. Bins with at least
    ``min_samples`` samples and an interval are solid, carry their interval and are
    joined by a line; the others are faint hollow markers on their own. With ``edges``
    (M), the share of rows per equal-width bin is drawn as grey bars. Markers are never
    clipped by the frame. Nothing else (diagonal, limits, texts) is drawn here.
    """
    import numpy as np

    part = part.sort("bin")
    if part.is_empty():
        return
    x, y = _values(part, "mean_confidence"), _values(part, "accuracy")
    share = _values(part, "share")
    if edges is not None:
        bars = np.zeros(edges)
        bars[part.get_column("bin").to_numpy()] = share
        ax.stairs(bars, np.linspace(0.0, 1.0, edges + 1), fill=True, color=LIGHT, zorder=0)
    solid = _bin_samples(part) >= min_samples
    if _has_band(part, "accuracy"):
        lo, hi = _values(part, "accuracy_lo"), _values(part, "accuracy_hi")
        solid &= ~(np.isnan(lo) | np.isnan(hi))
        ax.vlines(x[solid], lo[solid], hi[solid], color=style["color"], lw=0.9, alpha=0.55,
                  zorder=2, clip_on=False)  # fmt: skip
    # NaN breaks the line: sparse bins are never joined to their neighbours.
    ax.plot(x, np.where(solid, y, np.nan), color=style["color"], linestyle=style["linestyle"],
            lw=1.0, zorder=3, label=label)  # fmt: skip
    # pt²: 3 pt across for an empty bin, 9 pt for all rows, in eighths of the range so
    # that markers of one size share one SVG definition.
    area = 8.0 + 70.0 * np.round(8 * np.nan_to_num(share)) / 8
    looks = (
        (solid, {"color": style["color"], "edgecolors": "white", "linewidths": 0.4}),
        (~solid, {"facecolors": "none", "edgecolors": style["color"], "alpha": 0.5,
                  "linewidths": 0.8}),
    )  # fmt: skip
    for kind, look in looks:
        for size in np.unique(area[kind]):
            same = kind & (area == size)
            ax.scatter(x[same], y[same], s=size, marker=style["marker"], clip_on=False,
                       zorder=4, **look)  # fmt: skip


def _unit_square(ax: Axes, *, view: bool = True) -> None:
    """The diagonal of perfect calibration and view limits that show [0, 1]² whole.

    ``view=False`` draws the diagonal alone, for an axes that shares its limits and ticks
    with one that has them. Set again on each of a grid's panels, they were set on all the
    others each time: the built-in study's three reliability figures took 2.5 s to build
    that way, 1.3–1.5 s with the view set once (the same SVG).
    """
    ax.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=(0, (3, 2)), zorder=1)
    if view:
        ax.set_xlim(*_UNIT_VIEW)
        ax.set_ylim(*_UNIT_VIEW)
        ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
        ax.set_yticks([0, 0.5, 1], ["0", ".5", "1"])
    ax.set_aspect("equal")


def error_text(ece: float | None, mce: float | None) -> str:
    """``ECE 0.034 · MCE 0.120``: the two calibration errors as the figures print them."""
    parts = [
        f"{name} {value:.3f}"
        for name, value in ((_LABEL["ece"], ece), (_LABEL["mce"], mce))
        if value is not None
    ]
    return " · ".join(parts)


def _cell_errors(bins: pl.DataFrame) -> dict[tuple, tuple[float, float]]:
    """ECE and MCE by (model, corruption, severity): the bins' ``cell_ece``, ``cell_mce``."""
    return {
        (r["model"], r["corruption"], r["severity"]): (r["cell_ece"], r["cell_mce"])
        for r in bins.iter_rows(named=True)
    }


def reliability_figure(
    bins: pl.DataFrame,
    *,
    edges: int,
    title: str,
    styles: Styles | None = None,
    min_samples: int = SOLID_BIN_SAMPLES,
) -> Figure:
    """Reliability diagrams at the clean and worst severity, a row per model.

    Parameters
    ----------
    bins
        One dataset's single-label rows of the ``reliability`` table (one binning): cell
        keys, ``stage``, ``bin``, ``bin_lower``, ``bin_upper``, ``share``,
        ``mean_confidence``, ``accuracy``, ``accuracy_lo``, ``accuracy_hi``, ``n``,
        ``cell_ece``, ``cell_mce``.
    edges
        The number of equal-width bins M (the grey bars' edges are m/M).
    title, styles
        As in :func:`degradation_figure`.
    min_samples
        Bins with fewer samples are drawn faint, unjoined and without an interval
        (:func:`reliability_panel`).

    Each panel: accuracy against mean confidence per bin with its interval, marker area
    by the bin's share of rows, the diagonal of perfect calibration, the share of the
    cell's rows in each bin as grey bars on the same scale, the cell's row count, ECE
    and MCE.
    """
    from matplotlib import rc_context

    errors = _cell_errors(bins)
    with rc_context(_RC | {"axes.grid": False}):
        fig, axes, panels = _model_grid(bins, styles, height=1.45, top=0.75)
        for ax, part, model, column, style in panels:
            _unit_square(ax, view=ax is axes[0, 0])  # the grid's panels share x and y
            reliability_panel(ax, part, style, edges=edges, min_samples=min_samples)
            if not part.is_empty():
                total = int(part.get_column("n").sum())
                ece, mce = errors.get((model, column[1], column[2]), (None, None))
                ax.text(0.02, 0.98, f"n = {total:,}\n{error_text(ece, mce)}",
                        transform=ax.transAxes, va="top", fontsize=6.5, color=INK,
                        linespacing=1.15)  # fmt: skip
        _label_grid(axes, panels)
        _legend(fig, _key_handles(min_samples), ncols=4)
        _axis_labels(fig, axes, x="confidence (mean in bin)", y="accuracy in bin")
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _key_handles(min_samples: int = SOLID_BIN_SAMPLES) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        Line2D(
            [],
            [],
            color=INK,
            marker="o",
            ms=4,
            lw=1.0,
            label="accuracy per bin (area: share), interval",
        ),
        Line2D(
            [],
            [],
            color=INK,
            marker="o",
            ms=4,
            lw=0,
            markerfacecolor="none",
            alpha=0.5,
            label=f"bin of < {min_samples} samples",
        ),
        Line2D([], [], color=GREY, lw=0.8, ls=(0, (3, 2)), label="perfect calibration"),
        Patch(color=LIGHT, label="share of rows in bin"),
    ]


def confidence_figure(
    histograms: pl.DataFrame,
    *,
    edges: int,
    title: str,
    styles: Styles | None = None,
    auroc: Mapping[tuple[str, str, float], float | None] | None = None,
) -> Figure:
    """Confidence histograms of right and wrong predictions, a row per model.

    Parameters
    ----------
    histograms
        One dataset's single-label rows of the ``confidence_histogram`` table: cell keys,
        ``stage``, ``bin``, ``correct``, ``share``.
    edges
        The number of equal-width bins M.
    title, styles
        As in :func:`degradation_figure`.
    auroc
        AUROC by (model, corruption, severity), printed in the panel when given.

    :func:`correctness_figure` shows the same frame in one row of panels.
    """
    import numpy as np
    from matplotlib import rc_context

    grid = np.linspace(0.0, 1.0, edges + 1)
    with rc_context(_RC | {"axes.grid": False}):
        fig, axes, panels = _model_grid(histograms, styles, height=1.0, top=0.9)
        for ax, part, model, column, style in panels:
            for correct in (True, False):
                share = _outcome_shares(part, correct, edges)
                if correct:
                    ax.stairs(share, grid, fill=True, color=style["color"], alpha=0.45, lw=0)
                else:
                    ax.stairs(share, grid, color=INK, lw=1.0)
            value = (auroc or {}).get((model, column[1], column[2]))
            if value is not None:
                ax.text(0.04, 0.95, f"AUROC {value:.2f}", transform=ax.transAxes, va="top",
                        fontsize=7, color=INK)  # fmt: skip
        _label_grid(axes, panels)
        axes[0, 0].set_xlim(0, 1)
        axes[0, 0].set_ylim(bottom=0)
        for ax in axes.flat:
            ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
        _legend(fig, _outcome_handles(), ncols=2)
        _axis_labels(fig, axes, x="confidence")
        # The y meaning as a subtitle: a rotated label would be taller than one row of panels.
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
        fig.text(0.5, 1 - 0.42 / fig.get_figheight(),
                 "bar height: share of the outcome's predictions in the confidence bin",
                 ha="center", va="top", fontsize=8, color=INK)  # fmt: skip
    return fig


def _outcome_shares(part: pl.DataFrame, correct: bool, edges: int):
    """The share per equal-width bin of one outcome's predictions (0 where none)."""
    import numpy as np

    rows = part.filter(pl.col("correct") == correct)
    share = np.zeros(edges)
    share[rows.get_column("bin").to_numpy()] = np.nan_to_num(_values(rows, "share"))
    return share


def _outcome_handles() -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        Patch(color=GREY, alpha=0.6, label="right predictions (filled, model colour)"),
        Line2D([], [], color=INK, lw=1.0, label="wrong predictions (line)"),
    ]


def correctness_panel(
    ax: Axes,
    histograms: pl.DataFrame,
    series: Sequence[str],
    styles: Styles,
    *,
    edges: int,
    key: str = "model",
) -> None:
    """Split violins of confidence, one per series: right predictions left, wrong right.

    ``histograms``: ``confidence_histogram`` rows of one cell per series (``key`` names
    the series column), ``bin``, ``correct``, ``share``. Each half is the outcome's
    histogram over the M equal-width bins, scaled to its own peak, so the two shapes
    compare even when errors are few; the lines across mark each outcome's median bin.
    The less the halves overlap in height, the better confidence separates right from
    wrong.
    """
    import numpy as np

    grid = np.linspace(0.0, 1.0, edges + 1)
    ys = np.repeat(grid, 2)[1:-1]
    for i, name in enumerate(series):
        part = histograms.filter(pl.col(key) == name)
        colour = styles[name]["color"]
        for correct, side in ((True, -1.0), (False, 1.0)):
            share = _outcome_shares(part, correct, edges)
            if share.max() <= 0:
                continue
            half = side * 0.42 * np.repeat(share / share.max(), 2)
            face = {"color": colour, "alpha": 0.6} if correct else {"color": GREY, "alpha": 0.35}
            xs = i + half
            # The polygon without its runs along the axis (empty bins): fewer SVG points.
            inner = np.r_[False, (half[:-2] == 0) & (half[1:-1] == 0) & (half[2:] == 0), False]
            ax.fill(np.r_[i, xs[~inner], i], np.r_[ys[0], ys[~inner], ys[-1]], lw=0, **face)
            ax.plot(i + half, ys, color=colour if correct else INK, lw=0.7)
            median = grid[np.searchsorted(np.cumsum(share), 0.5 * share.sum()) + 1] - 0.5 / edges
            ax.plot([i, i + side * 0.42], [median, median], color=INK, lw=1.0)
        ax.axvline(i, color=INK, lw=0.6, zorder=3)
    ax.set_xlim(-0.6, len(series) - 0.4)
    ax.set_ylim(0, 1)
    ax.set_xticks(range(len(series)), [_plain(s) for s in series],
                  rotation=30 if len(series) > 2 else 0, ha="right" if len(series) > 2 else "center")  # fmt: skip


def correctness_figure(
    histograms: pl.DataFrame,
    *,
    edges: int,
    title: str,
    styles: Styles | None = None,
    auroc: Mapping[tuple[str, str, float], float | None] | None = None,
) -> Figure:
    """Confidence of right vs wrong predictions, clean and at each worst severity.

    Parameters are those of :func:`confidence_figure`; one panel per column (clean, then
    each corruption's worst severity), a split violin per model
    (:func:`correctness_panel`), the AUROC under each violin when given.
    """
    import math

    from matplotlib import rc_context

    models, columns = _grid_rows(histograms)
    styles = _complete_styles(styles, models)
    rotate = len(models) > 2
    long_names = max(len(m) for m in models) if rotate else 4
    width = max(1.45, 0.6 * len(models))
    per_row = max(1, min(len(columns), int((MAX_WIDTH - 0.9 + 0.15) // (width + 0.15))))
    nrows = math.ceil(len(columns) / per_row)
    with rc_context(_RC | {"axes.grid": False}):
        fig, axes = _figure(
            nrows, per_row, panel=(width, 1.8), left=0.75, top=0.85 if auroc else 0.6,
            bottom=0.6 + 0.04 * long_names, wspace=0.15, hspace=0.75 + 0.04 * long_names,
            sharex=False, sharey=True,
        )  # fmt: skip
        for j, column in enumerate(columns):
            ax = axes[j // per_row, j % per_row]
            cell = pl.concat([_panel_rows(histograms, m, column) for m in models])
            correctness_panel(ax, cell, models, styles, edges=edges)
            for i, model in enumerate(models):
                value = (auroc or {}).get((model, column[1], column[2]))
                if value is not None:
                    ax.text(i, 1.0, f"AUROC {value:.2f}", ha="center", va="bottom",
                            fontsize=6, color=INK)  # fmt: skip
            ax.set_title(_column_title(*column), pad=12 if auroc else 4)
        for ax in axes.flat[len(columns) :]:
            ax.set_visible(False)
        for row in axes:
            row[0].set_ylabel("confidence")
        _legend(fig, _violin_handles(), ncols=3)
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _violin_handles() -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Patch(color=GREY, alpha=0.8, label="right predictions (left, model colour)"),
        Patch(facecolor=LIGHT, edgecolor=INK, lw=0.7, label="wrong predictions (right)"),
        Line2D([], [], color=INK, lw=1.0, label="median bin"),
    ]
    return handles


# Risk–coverage ---------------------------------------------------------------------------------


def risk_coverage_panel(
    ax: Axes,
    curve: pl.DataFrame,
    style: Mapping[str, Any],
    *,
    oracle: bool = True,
    label: str | None = None,
) -> None:
    """Draw one cell's risk–coverage curve on ``ax``, and its oracle curve (dotted).

    ``curve``: rows of the ``risk_coverage`` table of one cell (``coverage``, ``risk`` and,
    with ``oracle``, ``oracle_risk``), ending at coverage 1. The oracle is the best curve
    the cell's errors allow (the table's ``oracle_risk``, from the risk at full coverage):
    the gap between the two is what the model's ranking of right and wrong predictions loses.
    """
    curve = curve.sort("coverage")
    if curve.is_empty():
        return
    x = _values(curve, "coverage")
    ax.plot(x, _values(curve, "risk"), lw=1.4, markevery=max(1, len(x) // 5), ms=3,
            label=label, **style)  # fmt: skip
    if oracle:
        ax.plot(x, _values(curve, "oracle_risk"), color=style["color"], lw=0.9, ls=":")


def risk_coverage_figure(
    curves: pl.DataFrame, *, title: str, styles: Styles | None = None, oracle: bool = True
) -> Figure:
    """Risk–coverage curves at the clean and worst severity, a line per model.

    Parameters
    ----------
    curves
        One dataset's single-label rows of the ``risk_coverage`` table with a ``stage``
        column: cell keys, ``stage``, ``coverage``, ``risk``.
    title, styles
        As in :func:`degradation_figure`.
    oracle
        Draw each model's oracle curve (dotted, :func:`risk_coverage_panel`).
    """
    from matplotlib import rc_context

    models, columns = _grid_rows(curves)
    styles = _complete_styles(styles, models)
    with rc_context(_RC):
        fig, axes = _figure(
            1, len(columns), panel=(1.6, 1.5), left=0.85, top=0.6, bottom=0.95,
            wspace=0.15, sharey=True,
        )  # fmt: skip
        for j, column in enumerate(columns):
            ax = axes[0, j]
            for model in models:
                part = _panel_rows(curves, model, column)
                risk_coverage_panel(ax, part, styles[model], oracle=oracle)
            ax.set_title(_column_title(*column))
            ax.set_xlabel("coverage")
            ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
        axes[0, 0].set_xlim(0, 1)
        axes[0, 0].set_ylim(bottom=0)
        axes[0, 0].set_ylabel("selective risk\n(error rate of accepted)")
        handles = _model_handles(styles, models)
        if oracle:
            handles.append(_oracle_handle())
        _legend(fig, handles, ncols=7)
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _oracle_handle():
    from matplotlib.lines import Line2D

    return Line2D([], [], color=INK, lw=0.9, ls=":", label="oracle (errors rejected first)")


# Consistency and the scorecard -----------------------------------------------------------------

_AXIS_TITLES = {"seed": "across training seeds", "repeat": "across corruption repeats"}


def consistency_figure(
    consistency: pl.DataFrame, *, title: str, styles: Styles | None = None
) -> Figure:
    """Mean accuracy beside the consistently-correct share against severity.

    Parameters
    ----------
    consistency
        One dataset's single-label rows of the ``consistency`` table: cell keys, ``axis``,
        ``accuracy``, ``consistently_correct``. A row of panels per axis (seed, repeat), a
        column per corruption; solid lines are mean accuracy, dashed the share of samples
        every replicate got right.
    title, styles
        As in :func:`degradation_figure`.
    """
    from matplotlib import rc_context

    models = _ordered(consistency, "model")
    corruptions = _ordered(consistency, "corruption")
    axes_present = [a for a in _AXIS_TITLES if a in set(consistency.get_column("axis"))]
    styles = _complete_styles(styles, models)
    with rc_context(_RC):
        fig, axes = _figure(
            len(axes_present), len(corruptions), panel=(1.75, 1.35), left=0.85, top=0.6,
            bottom=0.95, sharex="col", sharey=True,
        )  # fmt: skip
        for i, axis in enumerate(axes_present):
            for j, corruption in enumerate(corruptions):
                ax = axes[i, j]
                rows = consistency.filter(
                    (pl.col("axis") == axis) & (pl.col("corruption") == corruption)
                )
                for model in models:
                    part = rows.filter(pl.col("model") == model).sort("severity")
                    if part.is_empty():
                        continue
                    x = _values(part, "severity")
                    style = styles[model]
                    ax.plot(x, _values(part, "accuracy"), lw=1.4, ms=3, **style)
                    ax.plot(x, _values(part, "consistently_correct"), lw=1.1, ms=3,
                            **{**style, "linestyle": "--", "markerfacecolor": "white"})  # fmt: skip
                if i == 0:
                    ax.set_title(_plain(corruption))
                if i == len(axes_present) - 1:
                    ax.set_xlabel("severity d")
                if j == 0:
                    ax.set_ylabel(_AXIS_TITLES[axis])
        axes[0, 0].set_ylim(top=1.02)
        handles = _model_handles(styles, models) + _line_kind_handles()
        _legend(fig, handles, ncols=min(len(handles), 8))
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _line_kind_handles() -> list:
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color=INK, lw=1.4, label="mean accuracy"),
        Line2D([], [], color=INK, lw=1.1, ls="--", label="consistently correct"),
    ]


#: (column, legend label, marker) of the scorecard panel.
SCORES = (
    ("stability", "stability S", "o"),
    ("resilience", "resilience R", "s"),
    ("reliability", "reliability L", "^"),
    ("robustness", "robustness (weighted)", "D"),
)


def scorecard_figure(card: pl.DataFrame, *, styles: Styles | None = None) -> Figure:
    """The robustness scorecard as a dot plot: a panel per dataset, a row per model.

    Parameters
    ----------
    card
        The ``scorecard`` table (one study): ``dataset``, ``model`` and the columns of
        :data:`SCORES`, each in [0, 1]. Marker shapes tell the scores apart, the model's
        colour the model; the composite robustness is the large filled diamond.
    styles
        As in :func:`degradation_figure`.
    """
    from matplotlib import rc_context
    from matplotlib.lines import Line2D

    datasets = _ordered(card, "dataset")
    models = _ordered(card, "model")
    styles = _complete_styles(styles, models)
    with rc_context(_RC):
        fig, axes = _figure(
            1, len(datasets), panel=(2.6, 0.32 * len(models) + 0.3),
            left=1.6, top=0.55, bottom=0.95, wspace=0.25, sharex=True, sharey=True,
        )  # fmt: skip
        for j, dataset in enumerate(datasets):
            ax = axes[0, j]
            rows = card.filter(pl.col("dataset") == dataset)
            for i, model in enumerate(models):
                row = rows.filter(pl.col("model") == model)
                if row.is_empty():
                    continue
                colour = styles[model]["color"]
                values = [row.get_column(c).cast(pl.Float64)[0] for c, _, _ in SCORES]
                shown = [v for v in values if v is not None]
                if shown:
                    ax.hlines(i, min(shown), max(shown), color=colour, lw=0.8, alpha=0.6)
                for (column, _, marker), value in zip(SCORES, values, strict=True):
                    if value is None:
                        continue
                    big = column == "robustness"
                    ax.plot([value], [i], marker=marker, ms=7 if big else 5, color=colour,
                            markerfacecolor=colour if big else "white", lw=0)  # fmt: skip
            ax.set_title(_plain(dataset))
            ax.set_xlabel("score (1 = best)")
        axes[0, 0].set_yticks(range(len(models)), [_plain(m) for m in models])
        axes[0, 0].set_ylim(len(models) - 0.5, -0.5)
        axes[0, 0].set_xlim(0, 1.02)
        handles = [
            Line2D([], [], color=INK, marker=marker, lw=0, ms=6 if column == "robustness" else 5,
                   markerfacecolor=INK if column == "robustness" else "white", label=label)
            for column, label, marker in SCORES
        ]  # fmt: skip
        _legend(fig, handles, ncols=4)
    return fig


# Export ----------------------------------------------------------------------------------------


def figure_svg(fig: Figure, *, id_prefix: str, label: str | None = None) -> str:
    """Export ``fig`` as an SVG fragment for inlining in HTML.

    The SVG is made light without changing what it shows: coordinates to 0.1 pt (about a
    tenth of a screen pixel), one font declaration instead of one per text, no ids that
    nothing refers to, no indentation; axes drawing more than ``DENSE_POINTS`` points have
    those drawn as one image at ``RASTER_DPI`` while text and axes stay vector; an axis'
    grid lines, tick marks and tick labels are drawn a kind at a time, not a matplotlib
    ``Tick`` each (``relcol.report._ticks``: the same picture, in about 0.8× the time).

    The output is byte-identical across runs: fixed hash salt, no date, and the
    XML prolog, DOCTYPE and metadata block (which carry the matplotlib version and
    ``http://`` namespace URIs) removed; HTML5 puts inline ``<svg>`` in the SVG
    namespace by itself. Every ``id`` and reference to it gets ``id_prefix`` so
    several figures can share one page without id clashes, so it must be a
    plain token (letters, digits, ``-``, ``_``).
    """
    from matplotlib import rc_context

    from relcol.report._ticks import light_ticks

    buffer = io.StringIO()
    with rc_context(_RC), light_ticks(fig):
        for text in _texts(fig):  # names reach titles and legends: no control characters
            text.set_text(printable(text.get_text(), symbols=False))
        _rasterize_dense(fig)
        fig.savefig(buffer, format="svg", metadata={"Date": None}, dpi=RASTER_DPI)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.DOTALL)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = _lighter(svg)
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{id_prefix}-\1"', svg)
    svg = re.sub(r'(xlink:href|href)="#([^"]+)"', rf'\1="#{id_prefix}-\2"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{id_prefix}-\1)", svg)
    attrs = 'role="img"' if label is None else f'role="img" aria-label="{escape(label)}"'
    return svg.replace("<svg ", f"<svg {attrs} ", 1).strip()


def _texts(artist) -> Iterator:
    """Every text of ``artist`` but its axes' tick labels, which their formatters set when
    they are drawn (``light_ticks`` draws them, made printable there): listing them would
    make every tick."""
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    if isinstance(artist, Text):
        yield artist
    children = [artist.label, artist.offsetText] if isinstance(artist, Axis) else None
    for child in children if children is not None else artist.get_children():
        yield from _texts(child)


#: Points above which an axes' lines and markers become one embedded image.
DENSE_POINTS = 4000
#: Resolution of those images: sharp on a 2× display at the figure's natural size.
RASTER_DPI = 150
_FONT = "font-family: 'DejaVu Sans', 'Bitstream Vera Sans', Arial, Helvetica, sans-serif"
_NUMBER = re.compile(r"-?\d+\.\d+")


def _rasterize_dense(fig: Figure) -> None:
    """Rasterize the lines and collections of axes that draw very many points."""
    for ax in fig.axes:
        artists = [*ax.lines, *ax.collections]
        points = sum(
            len(a.get_xydata()) if hasattr(a, "get_xydata") else
            sum(len(p.vertices) for p in a.get_paths())
            for a in artists
        )  # fmt: skip
        if points > DENSE_POINTS:
            for artist in artists:
                artist.set_rasterized(True)


def _short(match: re.Match) -> str:
    value = float(match.group(0))
    text = f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _tag(match: re.Match) -> str:
    tag = match.group(0)
    if tag.startswith("<image"):
        return tag  # base64 data, left as written
    return _NUMBER.sub(_short, re.sub(r"\s+", " ", tag))


def _lighter(svg: str) -> str:
    """The same drawing in fewer bytes (see :func:`figure_svg`)."""
    used = set(re.findall(r"#([\w-]+)", svg))
    svg = re.sub(r'<g id="([^"]+)"', lambda m: m.group(0) if m.group(1) in used else "<g", svg)
    svg = re.sub(r"font-family: [^;\"]*;? ?", "", svg)
    svg = re.sub(r' transform="rotate\(-?0 [^)]*\)"', "", svg)
    svg = re.sub(r"<[^>]+>", _tag, svg)
    svg = re.sub(r">\s+<", "><", svg)
    return _drop_bare_groups(svg).replace("<svg ", f'<svg style="{_FONT}" ', 1)


def _drop_bare_groups(svg: str) -> str:
    """Remove ``<g>`` elements without attributes (they change nothing), keeping content."""
    out, keep, position = [], [], 0
    for match in re.finditer(r"<g>|<g [^>]*>|</g>", svg):
        out.append(svg[position : match.start()])
        position = match.end()
        tag = match.group(0)
        if tag == "</g>":
            if keep.pop():
                out.append(tag)
        else:
            keep.append(tag != "<g>")
            if keep[-1]:
                out.append(tag)
    out.append(svg[position:])
    return "".join(out)
