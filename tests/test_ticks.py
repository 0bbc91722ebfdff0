"""The report's ticks drawn by relcol.report._ticks: the same picture as matplotlib's own
ticks, pixel for pixel (matplotlib's rendering of the same figure is the reference), for the
axes the report draws and for those it leaves to matplotlib; the figure as it was afterwards;
one tick made per axis instead of one per tick."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import numpy as np
import pytest
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from relcol.report import _figures as F
from relcol.report._ticks import _AxisTicks, light_ticks


def _grid(fig: Figure) -> None:
    """Panels sharing x per column and y per row, labels outside, as the report's grids."""
    axes = fig.subplots(2, 3, sharex="col", sharey="row", squeeze=False)
    x = np.linspace(0, 1, 6)
    for (i, j), ax in np.ndenumerate(axes):
        ax.plot(x, (i + 1) * x**2 + j, marker="o")
        ax.fill_between(x, x, 2 * x, alpha=0.2)
    for ax in axes[-1]:
        ax.set_xlabel("severity d")
    for ax in axes[:, 0]:
        ax.set_ylabel("a long y label")
    fig.suptitle("grid")


def _offsets(fig: Figure) -> None:
    """An offset on y (drawn by relcol, at the top) and on x (left to matplotlib)."""
    left, right = fig.subplots(1, 2, squeeze=False)[0]
    left.plot([0, 1, 2], 1 + 1e-6 * np.array([0, 3, 1]))
    left.set_ylabel("accuracy")
    right.plot(1e4 + 1e-3 * np.arange(4), [0.1, 0.3, 0.2, 0.4])
    right.set_xlabel("x with an offset")


def _fixed(fig: Figure) -> None:
    """Names as ticks, rotated; an inverted y axis; ticks pointing in; no grid."""
    ax = fig.subplots()
    ax.plot(range(5), [3, 1, 4, 1, 5])
    ax.set_xticks(range(5), ["week-01", "week-02", "week-03", "week-04", "week-05"],
                  rotation=45, ha="right", fontsize=7)  # fmt: skip
    ax.set_ylim(6, 0)
    ax.tick_params(direction="in")
    ax.grid(False)
    ax.set_ylabel("rank")


def _left_alone(fig: Figure) -> None:
    """Axes drawn by matplotlib: a log scale, ticks on the right, a tick styled apart, a
    label placed by hand, minor ticks."""
    a, b, c, d = fig.subplots(1, 4, squeeze=False)[0]
    a.semilogy([1, 10, 100])
    b.plot([0, 1])
    b.yaxis.tick_right()
    c.plot([0, 1])
    c.get_xticklabels()[1].set_color("red")
    d.plot([0, 1])
    d.set_ylabel("placed by hand")
    d.yaxis.set_label_coords(-0.4, 0.3)
    d.minorticks_on()


def _other_units(fig: Figure) -> None:
    """Dates (with their offset under the axis), categories, and a twin axes on the right."""
    import datetime

    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    dates, names, twin = fig.subplots(1, 3, squeeze=False)[0]
    days = [datetime.date(2026, 11, d) for d in (2, 9, 16, 23)]
    dates.plot(days, [0.1, 0.3, 0.2, 0.4])
    dates.xaxis.set_major_formatter(ConciseDateFormatter(AutoDateLocator()))
    names.bar(["spam", "ham", "promo"], [3, 1, 2])
    twin.plot([0, 1, 2], [1, 3, 2])
    twin.set_ylabel("left")
    right = twin.twinx()
    right.plot([0, 1, 2], [30, 10, 20], color="C1")
    right.set_ylabel("right")


BUILDS = {
    "grid": _grid,
    "offsets": _offsets,
    "fixed": _fixed,
    "left alone": _left_alone,
    "other units": _other_units,
}


def _figure(build) -> Figure:
    with rc_context(F._RC):
        fig = Figure(figsize=(7, 4))
        FigureCanvasAgg(fig)
        build(fig)
    return fig


def _pixels(fig: Figure, light: bool) -> np.ndarray:
    buffer = io.BytesIO()
    with rc_context(F._RC):
        if light:
            with light_ticks(fig):
                fig.savefig(buffer, format="png", dpi=90)
        else:
            fig.savefig(buffer, format="png", dpi=90)
    buffer.seek(0)
    return mpimg.imread(buffer)


@pytest.mark.parametrize("name", BUILDS)
def test_the_ticks_look_as_matplotlibs_own(name):
    reference = _pixels(_figure(BUILDS[name]), light=False)
    drawn = _pixels(_figure(BUILDS[name]), light=True)
    assert drawn.shape == reference.shape
    assert np.array_equal(drawn, reference)


def test_the_usual_axes_are_drawn_here_and_the_others_by_matplotlib():
    def light(build) -> list[tuple[int, str]]:
        fig = _figure(build)
        with light_ticks(fig):
            return [
                (i, artist.axis.axis_name)
                for i, ax in enumerate(fig.axes)
                for artist in ax.get_children()
                if isinstance(artist, _AxisTicks)
            ]

    assert len(light(_grid)) == 12  # x and y of six panels
    assert light(_fixed) == [(0, "x"), (0, "y")]
    # the x offset is found when drawn (the artist then hands the axis back to matplotlib)
    assert light(_offsets) == [(0, "x"), (0, "y"), (1, "x"), (1, "y")]
    # linear x of the log panel and of the right-ticked one, y of the panel with a red x
    # label; the others (log, right, styled apart, minor ticks) are matplotlib's
    assert light(_left_alone) == [(0, "x"), (1, "x"), (2, "y")]
    # dates, categories and a twin's left axes are drawn here, the twin's right axis not …
    assert light(_other_units) == [(0, "x"), (0, "y"), (1, "x"), (1, "y"), (2, "x"), (2, "y")]
    # … and the dates' offset (the month, under the axis) hands their x axis back when drawn
    fig = _figure(_other_units)
    with light_ticks(fig):
        fig.savefig(io.BytesIO(), format="png")
        handed_back = [
            (i, artist.axis.axis_name)
            for i, ax in enumerate(fig.axes)
            for artist in ax.get_children()
            if isinstance(artist, _AxisTicks) and not artist.get_visible()
        ]
    assert handed_back == [(0, "x")]


def test_the_figure_is_as_it_was_after_the_block():
    fig = _figure(_grid)
    _pixels(fig, light=True)
    assert not any(isinstance(a, _AxisTicks) for ax in fig.axes for a in ax.get_children())
    assert np.array_equal(_pixels(fig, light=False), _pixels(_figure(_grid), light=False))


def test_an_exported_figure_makes_one_tick_per_axis_and_labels_are_printable():
    fig = _figure(_grid)
    svg = F.figure_svg(fig, id_prefix="t")
    assert {len(axis.majorTicks) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)} == {1}
    assert svg.count(">0.5<") == 3  # one x label per column, under the bottom row
    # matplotlib makes a Tick per location, with its grid line, marks and labels
    reference = _figure(_grid)
    reference.savefig(io.BytesIO(), format="svg")
    x = reference.axes[0].xaxis
    assert len(x.majorTicks) == len(x.get_majorticklocs()) == 5
    names = _figure(_fixed)
    names.axes[0].set_xticks([0, 1], ["bell\x07", "ok"])
    svg = F.figure_svg(names, id_prefix="n")
    assert "bell\ufffd" in svg and "\x07" not in svg
