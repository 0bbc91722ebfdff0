"""Degradation figures: accuracy, mean confidence and ECE against severity.

One matplotlib figure per dataset: a column per corruption, a row per metric, a
line per model in one colour throughout the report. Figures are drawn on the Agg
canvas without pyplot, so drawing never touches a notebook's backend, and are
exported as deterministic inline SVG.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
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

# (column, axis label) for the three rows of a degradation figure.
PANELS = (
    ("accuracy", "accuracy"),
    ("mean_confidence", "mean confidence"),
    ("ece", "ECE"),
)

_RC = {
    # Fixed salt: the ids of clip paths and markers are hashes, equal on every run.
    "svg.hashsalt": "relcol",
    # Text stays text (searchable, small); the page's sans-serif renders it.
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
}


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


def degradation_figure(
    calibration: pl.DataFrame,
    *,
    title: str | None = None,
    styles: dict[str, dict[str, object]] | None = None,
) -> Figure:
    """Draw accuracy, mean confidence and ECE against severity for one dataset.

    Parameters
    ----------
    calibration
        The calibration rows of one dataset (and one study). Corruptions become
        columns in order of first appearance. Rows with a non-null ``label`` are
        drawn as thin lines in their model's colour; ``<metric>_lo`` and
        ``<metric>_hi`` columns, when present, are drawn as bands.
    title
        Figure title; defaults to the dataset name.
    styles
        Line style per model from :func:`model_styles`; defaults to the models of
        ``calibration`` in order of first appearance.

    Returns
    -------
    matplotlib.figure.Figure
        A figure on the Agg canvas (no pyplot state involved).
    """
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = calibration.get_column("model").unique(maintain_order=True).to_list()
    corruptions = calibration.get_column("corruption").unique(maintain_order=True).to_list()
    if styles is None or any(m not in styles for m in models):
        known = list(styles or {})
        styles = model_styles([*known, *(m for m in models if m not in known)])
    if title is None:
        title = ", ".join(calibration.get_column("dataset").unique(maintain_order=True))

    with rc_context(_RC):
        ncols = len(corruptions)
        fig = Figure(figsize=(max(4.5, 1.2 + 2.5 * ncols), 7.0), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(PANELS), ncols, sharex="col", sharey="row", squeeze=False)
        for j, corruption in enumerate(corruptions):
            rows = calibration.filter(pl.col("corruption") == corruption)
            for i, (metric, label) in enumerate(PANELS):
                ax = axes[i, j]
                _draw_panel(ax, rows, metric, models, styles)
                if i == 0:
                    ax.set_title(_plain(corruption), fontsize=10)
                if i == len(PANELS) - 1:
                    ax.set_xlabel("severity d")
                if j == 0:
                    ax.set_ylabel(label)
        _share_probability_scale(axes, calibration)
        # Legend in the report-wide model order, listing the models drawn here.
        handles = [_legend_handle(style, m) for m, style in styles.items() if m in models]
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=min(len(handles), 6, 2 * ncols),
            frameon=False,
        )
        fig.suptitle(_plain(title), fontsize=11, fontweight="bold")
    return fig


def _draw_panel(ax, rows: pl.DataFrame, metric: str, models, styles) -> None:
    has_band = f"{metric}_lo" in rows.columns and f"{metric}_hi" in rows.columns
    has_label = "label" in rows.columns
    for model in models:
        lines = rows.filter(pl.col("model") == model)
        if lines.is_empty():
            continue
        style = styles[model]
        parts = lines.partition_by("label", maintain_order=True) if has_label else [lines]
        for part in parts:
            part = part.sort("severity")
            x = part.get_column("severity").to_numpy()
            y = part.get_column(metric).cast(pl.Float64).to_numpy()
            per_label = has_label and part.get_column("label").null_count() == 0
            if per_label:
                ax.plot(x, y, color=style["color"], linestyle=style["linestyle"], lw=0.8, alpha=0.4)
            else:
                ax.plot(x, y, lw=1.6, ms=4, **style)
            if has_band and not per_label:
                lo = part.get_column(f"{metric}_lo").cast(pl.Float64).to_numpy()
                hi = part.get_column(f"{metric}_hi").cast(pl.Float64).to_numpy()
                ax.fill_between(x, lo, hi, color=style["color"], alpha=0.15, lw=0)


def _share_probability_scale(axes, calibration: pl.DataFrame) -> None:
    """Give accuracy and mean confidence one y-range so the gap reads as a distance."""
    values = pl.concat(
        [calibration.get_column("accuracy"), calibration.get_column("mean_confidence")]
    ).cast(pl.Float64)
    low = values.min()
    low = 0.0 if low is None else max(0.0, min(float(low), 0.9) - 0.05)
    for row in (0, 1):
        axes[row, 0].set_ylim(low, 1.02)
    axes[2, 0].set_ylim(bottom=0.0)


def _legend_handle(style: dict[str, object], model: str):
    from matplotlib.lines import Line2D

    return Line2D([], [], lw=1.6, ms=4, label=_plain(model), **style)


def _plain(text: str) -> str:
    """Show a name as typed: a ``$`` would otherwise start matplotlib mathtext."""
    return text.replace("$", r"\$")


def figure_svg(fig: Figure, *, id_prefix: str, label: str | None = None) -> str:
    """Export ``fig`` as an SVG fragment for inlining in HTML.

    The output is byte-identical across runs: fixed hash salt, no date, and the
    XML prolog, DOCTYPE and metadata block (which carry the matplotlib version and
    ``http://`` namespace URIs) removed; HTML5 puts inline ``<svg>`` in the SVG
    namespace by itself. Every ``id`` and reference to it gets ``id_prefix`` so
    several figures can share one page without id clashes, so it must be a
    plain token (letters, digits, ``-``, ``_``).
    """
    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context(_RC):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.DOTALL)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{id_prefix}-\1"', svg)
    svg = re.sub(r'(xlink:href|href)="#([^"]+)"', rf'\1="#{id_prefix}-\2"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{id_prefix}-\1)", svg)
    attrs = 'role="img"' if label is None else f'role="img" aria-label="{escape(label)}"'
    return svg.replace("<svg ", f"<svg {attrs} ", 1).strip()
