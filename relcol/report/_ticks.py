"""An axis' ticks drawn as three artists, not five per tick.

matplotlib makes each tick of an axis a ``Tick`` of five artists (a grid line, two tick marks,
two labels), builds and updates them one by one, and draws each in turn. On the report's
figures, grids of small panels with five or six ticks per axis, that took 35–40 % of the time
to build and export a figure (docs/performance.md).

Inside ``light_ticks(fig)``, an axis that matplotlib would draw in the usual way (a linear
scale, major ticks only, labels and marks on the first side alone) draws no ``Tick``: an
artist placed just before it in the drawing order draws its ticks from the axis' own locator
and formatter, as matplotlib's ``Axis.draw`` would, with the artists of the axis' first tick:
every grid line in one path, every tick mark in one line of markers, and each label by the
first tick's label moved to its place. It then places the axis label (and reads the offset,
such as ``1e−3``, from the same formatter) as matplotlib does from the tick labels' extents.
The picture is the same; the SVG has one group per kind instead of one per tick. An x axis
whose formatter shows an offset, which matplotlib places under the tick labels, is left to
matplotlib, and so is every axis of a figure with a layout engine (constrained or tight
layout), which places the axes by their ticks' extents. Every axis is as it was at the end of
the block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axis import Axis, XAxis
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from matplotlib.transforms import Bbox

from relcol.text import printable

#: The tick parameters that, all False, keep matplotlib from making or drawing any tick.
_PARTS = ("gridOn", "tick1On", "tick2On", "label1On", "label2On")


@contextmanager
def light_ticks(fig: Figure) -> Iterator[None]:
    """Inside the block, each axis of ``fig`` that ``_AxisTicks`` can draw has its ticks
    drawn by it; afterwards every axis is as before."""
    drawn = []
    # a layout engine (constrained, tight) places the axes by their ticks' extents
    axes = fig.axes if fig.get_layout_engine() is None else []
    try:
        for ax in axes:
            for axis in (ax.xaxis, ax.yaxis):
                if _drawable(axis):
                    drawn.append(_AxisTicks(axis))
        yield
    finally:
        for ticks in drawn:
            ticks.restore()


def _drawable(axis: Axis) -> bool:
    """An axis drawn the usual way: of a rectilinear axes, visible, linear, major ticks only,
    on the first side, every tick made so far styled as the first (as matplotlib styles each
    new tick)."""
    if axis.axes.name != "rectilinear" or not axis.get_visible():
        return False
    if axis.get_scale() != "linear" or isinstance(axis.get_major_locator(), NullLocator):
        return False
    if not isinstance(axis.get_minor_locator(), NullLocator):
        return False
    first, *others = axis.majorTicks
    side = "bottom" if isinstance(axis, XAxis) else "left"
    if first.tick2line.get_visible() or first.label2.get_visible():
        return False
    return axis.get_label_position() == side and all(_alike(first, o) for o in others)


def _alike(first, other) -> bool:
    """Whether two ticks are drawn alike, wherever they are."""
    return all(
        a.get_visible() == b.get_visible() and a.get_color() == b.get_color()
        for a, b in zip(first.get_children(), other.get_children(), strict=True)
    ) and (
        first.label1.get_fontproperties() == other.label1.get_fontproperties()
        and first.label1.get_rotation() == other.label1.get_rotation()
        and first.label1.get_horizontalalignment() == other.label1.get_horizontalalignment()
        and first.tick1line.get_markersize() == other.tick1line.get_markersize()
        and first.gridline.get_linewidth() == other.gridline.get_linewidth()
    )


class _AxisTicks(Artist):
    """The major ticks of ``axis``, drawn just before the axis (which then draws its label
    and offset alone)."""

    def __init__(self, axis: Axis) -> None:
        super().__init__()
        self.axis = axis
        self.tick = axis.majorTicks[0]  # its artists carry every tick parameter
        self.on = {
            "gridOn": self.tick.gridline.get_visible(),
            "tick1On": self.tick.tick1line.get_visible(),
            "label1On": self.tick.label1.get_visible(),
        }
        self.data = (self.tick.gridline.get_data(), self.tick.tick1line.get_data())
        self.label = (self.tick.label1.get_text(), self.tick.label1.get_position())
        self.autolabel = axis._autolabelpos  # False once set_label_coords placed the label
        self.set_zorder(axis.get_zorder())
        axis.axes.add_artist(self)  # drawn before the axis: the axes' own artists come first
        self.offset = axis.offsetText.get_visible()
        axis.set_tick_params(which="major", **dict.fromkeys(_PARTS, False))
        axis.offsetText.set_visible(self.offset)  # hidden with the labels, drawn by the axis

    def restore(self) -> None:
        self.remove()
        self.set_visible(True)
        self._ticks_shown()
        (grid_x, grid_y), (mark_x, mark_y) = self.data
        self.tick.gridline.set_data(grid_x, grid_y)
        self.tick.tick1line.set_data(mark_x, mark_y)
        text, position = self.label
        self.tick.label1.set_text(text)
        self.tick.label1.set_position(position)
        self.axis._autolabelpos = self.autolabel

    def _ticks_shown(self) -> None:
        """The axis' ticks drawn by matplotlib again, as they were."""
        self.axis.set_tick_params(which="major", tick2On=False, label2On=False, **self.on)
        self.axis.offsetText.set_visible(self.offset)

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        axis, tick = self.axis, self.tick
        is_x = isinstance(axis, XAxis)
        locs = np.asarray(axis.get_majorticklocs(), dtype=float)
        labels = axis.major.formatter.format_ticks(locs)  # all of them, as matplotlib does
        if is_x and axis.offsetText.get_visible() and axis.major.formatter.get_offset():
            # matplotlib puts this offset under the tick labels: its own ticks draw them
            self._ticks_shown()
            self.set_visible(False)
            return
        inside = _in_view(axis, locs)
        locs, labels = (
            locs[inside],
            [label for label, keep in zip(labels, inside, strict=True) if keep],
        )
        if self.on["gridOn"] and len(locs):
            along = np.column_stack([locs, locs, np.full(len(locs), np.nan)]).ravel()
            across = np.tile([0.0, 1.0, np.nan], len(locs))
            _draw_once(tick.gridline, renderer, *((along, across) if is_x else (across, along)))
        marked = self.on["tick1On"] and len(locs) > 0
        if marked:
            level = np.zeros(len(locs))
            _draw_once(tick.tick1line, renderer, *((locs, level) if is_x else (level, locs)))
        boxes = []
        placed = self.autolabel and axis.label.get_visible() and axis.label.get_text()
        if self.on["label1On"]:
            label = tick.label1
            label.set_visible(True)
            for loc, text in zip(locs, labels, strict=True):
                label.set_text(printable(text, symbols=False))
                label.set_x(loc) if is_x else label.set_y(loc)
                label.draw(renderer)
                if placed:
                    boxes.append(label.get_window_extent(renderer))
            label.set_visible(False)
        if placed:
            self._place_label(renderer, boxes, marked=marked)
        # placed here, or not drawn: matplotlib's placement would see no tick labels (and
        # measure the spine, which makes a minor tick, for nothing)
        axis._autolabelpos = False

    def _place_label(self, renderer, boxes: list, *, marked: bool) -> None:
        """The axis label beyond the tick labels and the spine, as ``Axis.draw`` puts it."""
        axis, ax = self.axis, self.axis.axes
        is_x = isinstance(axis, XAxis)
        spine = ax.spines.get("bottom" if is_x else "left", ax)
        extent = spine.get_window_extent(renderer)
        dpi = ax.get_figure(root=True).dpi
        if marked and spine is not ax:  # the spine's extent includes the tick marks
            extent = _with_marks(extent, self.tick, is_x, dpi)
        bbox = Bbox.union([*boxes, extent])
        pad = axis.labelpad * dpi / 72
        x, y = axis.label.get_position()
        axis.label.set_position((x, bbox.y0 - pad) if is_x else (bbox.x0 - pad, y))


def _draw_once(line, renderer, x, y) -> None:
    """``line`` (a tick's, hidden) drawn through the points ``x``, ``y``."""
    line.set_data(x, y)
    line.set_visible(True)
    line.draw(renderer)
    line.set_visible(False)


def _with_marks(extent: Bbox, tick, is_x: bool, dpi: float) -> Bbox:
    """``Spine.get_window_extent`` with a drawn tick: widened by the marks' length."""
    outward = {"out": 1.0, "in": 0.0}.get(tick._tickdir, 0.5) * tick._size / 72 * dpi
    inward = {"out": 0.0, "in": 1.0}.get(tick._tickdir, 0.5) * tick._size / 72 * dpi
    box = extent.frozen()
    if is_x:
        box.y0, box.y1 = box.y0 - outward, box.y1 + inward
    else:
        box.x0, box.x1 = box.x0 - outward, box.x1 + inward
    return box


def _in_view(axis: Axis, locs: np.ndarray) -> np.ndarray:
    """Which of ``locs`` matplotlib draws: inside the view, to a relative 1e−10."""
    low, high = sorted(axis.get_view_interval())
    low, high = axis.get_transform().transform([low, high])
    slack = (high - low) * 1e-10
    at = axis.get_transform().transform(locs) if len(locs) else locs
    return (at >= low - slack) & (at <= high + slack)
