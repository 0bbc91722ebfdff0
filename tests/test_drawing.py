"""The page's figures drawn on worker processes: the same page byte for byte, a figure's error
as its own, and no worker left behind by an error or Ctrl-C."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

import relcol
from relcol.errors import InputError
from relcol.report import _drawing
from relcol.report._drawing import (
    MAX_WORKERS,
    PARALLEL_ROWS,
    drawing,
    drawing_workers,
    drawn_svg,
    page_workers,
)
from tests.test_parallel import linux_only, pool_workers


def _figures_drawn_here(monkeypatch) -> list[str]:
    """The id of each figure this process draws (a worker draws with its own module)."""
    here, draw = [], _drawing._draw

    def counted(figure):
        here.append(figure.id_prefix)
        return draw(figure)

    monkeypatch.setattr(_drawing, "_draw", counted)
    return here


def test_a_page_drawn_on_a_worker_is_the_page_drawn_here(tiny_warehouse, tmp_path, monkeypatch):
    serial = relcol.report(tiny_warehouse, study="tiny", out=tmp_path / "a", bootstrap=0)
    here = _figures_drawn_here(monkeypatch)
    with drawing_workers(1):
        beside = relcol.report(tiny_warehouse, study="tiny", out=tmp_path / "b", bootstrap=0)
    figures = serial.html.read_text().count("<svg ")
    assert figures >= 6
    # the worker is kept two figures ahead: it draws two at least, this process the rest
    assert len(here) <= figures - 2
    assert beside.html.read_bytes() == serial.html.read_bytes()


def _failing_figure(rows: int):
    raise InputError(f"calibration: {rows} rows, none with a confidence")


def test_a_figure_that_fails_on_a_worker_fails_the_page_with_its_own_error(monkeypatch):
    from relcol.report._figures import degradation_figure
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    here = _figures_drawn_here(monkeypatch)
    with (
        pytest.raises(InputError, match="3 rows, none with a confidence"),
        drawing_workers(1),
        drawing(0) as figures,
    ):
        # the first two go to the worker; the one that fails is drawn there
        html = drawn_svg(_failing_figure, 3, id_prefix="f")
        html += "".join(
            drawn_svg(degradation_figure, CALIBRATION, id_prefix=f"d{i}") for i in range(3)
        )
        assert html.count("<!--relcol-figure-") == 4  # recorded, not drawn yet
        figures.fill(html)
    assert "f" not in here and "d0" not in here  # both were handed to the worker first


def _marked_degradation(marker: str, calibration):
    from pathlib import Path

    from relcol.report._figures import degradation_figure

    Path(marker).touch()
    return degradation_figure(calibration)


def test_a_figure_is_drawn_on_a_worker_as_soon_as_it_is_recorded(monkeypatch, tmp_path):
    # the workers draw while this process still writes the page's sections
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    here = _figures_drawn_here(monkeypatch)
    marker = tmp_path / "drawn"
    with drawing_workers(1), drawing(0) as figures:
        html = drawn_svg(_marked_degradation, str(marker), CALIBRATION, id_prefix="d")
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()  # before the page is filled
        page = figures.fill(html)
    assert here == []
    marker.unlink()
    assert page == drawn_svg(_marked_degradation, str(marker), CALIBRATION, id_prefix="d")


def test_a_drawing_worker_imports_what_figures_need_and_no_table_or_statistics_library(
    monkeypatch,
):
    # the worker's imports take its core while the report computes its tables: the figures
    # need matplotlib, Polars and the drawing modules, not great-tables, the statistical
    # layer or SciPy (about 2 s more of one core on the development machine)
    from relcol.report._figures import degradation_figure
    from relcol.report._layout import figure
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    heavy = (
        "great_tables",
        "scipy",
        "sklearn",
        "relcol.analysis._bootstrap",
        "relcol.report._html",
    )
    watched = ("matplotlib", "polars", *heavy)
    here = _figures_drawn_here(monkeypatch)
    with drawing_workers(1), drawing(0) as figures:
        html = "".join(
            figure(drawn_svg(degradation_figure, CALIBRATION, id_prefix=f"d{i}"), "caption")
            for i in range(4)
        )
        figures.fill(html)
        pool, _ = _drawing._WORKERS.get()
        loaded = pool.submit(eval, f"[m for m in {watched!r} if m in __import__('sys').modules]")
        assert loaded.result() == ["matplotlib", "polars"]
    assert len(here) <= 2  # the worker drew two at least (it may get the last one too)


def _gated_degradation(gate: str, calibration):
    """The degradation figure, built once ``gate`` exists (at most 30 s later)."""
    from pathlib import Path

    from relcol.report._figures import degradation_figure

    deadline = time.monotonic() + 30
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return degradation_figure(calibration)


def test_the_last_figure_is_drawn_here_while_the_worker_is_busy(monkeypatch, tmp_path):
    """A figure still waiting when the page is filled, the worker busy with another, is drawn
    by this process, not queued behind the worker's. Here the worker's second figure is held
    until this process has drawn one: queued on the worker, the third would wait 30 s and be
    drawn there."""
    from relcol.report._figures import degradation_figure
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    gate = tmp_path / "gate"
    here, draw = [], _drawing._draw

    def counted(figure):
        here.append(figure.id_prefix)
        svg = draw(figure)
        gate.touch()
        return svg

    monkeypatch.setattr(_drawing, "_draw", counted)
    with drawing_workers(1), drawing(0) as figures:
        html = drawn_svg(degradation_figure, CALIBRATION, id_prefix="a")
        html += drawn_svg(_gated_degradation, str(gate), CALIBRATION, id_prefix="b")
        html += drawn_svg(degradation_figure, CALIBRATION, id_prefix="c")  # the worker has two
        next(iter(figures._running)).result(timeout=60)  # a is drawn, b held
        page = figures.fill(html)
    assert here == ["c"]
    assert page == "".join(
        [
            drawn_svg(degradation_figure, CALIBRATION, id_prefix="a"),
            drawn_svg(_gated_degradation, str(gate), CALIBRATION, id_prefix="b"),
            drawn_svg(degradation_figure, CALIBRATION, id_prefix="c"),
        ]
    )


@linux_only
@pytest.mark.parametrize("stop", [KeyboardInterrupt, InputError])
def test_workers_end_with_their_block_even_when_it_fails(stop):
    with pytest.raises(stop), drawing_workers(1):
        deadline = time.monotonic() + 30
        while not pool_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pool_workers()) == 1
        raise stop("stopped")
    assert pool_workers() == []


@linux_only
def test_the_figures_of_a_worker_that_died_are_drawn_here(monkeypatch):
    import os
    import signal

    from relcol.report._figures import degradation_figure
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    here = _figures_drawn_here(monkeypatch)
    with drawing_workers(1), drawing(0) as figures:
        html = "".join(
            drawn_svg(degradation_figure, CALIBRATION, id_prefix=f"d{i}") for i in range(4)
        )
        deadline = time.monotonic() + 30
        while not pool_workers() and time.monotonic() < deadline:
            time.sleep(0.05)
        [worker] = pool_workers()
        os.kill(worker, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        page = figures.fill(html)
    assert sorted(here) == ["d0", "d1", "d2", "d3"]
    assert page == "".join(
        drawn_svg(degradation_figure, CALIBRATION, id_prefix=f"d{i}") for i in range(4)
    )
    assert pool_workers() == []


def test_small_studies_and_single_cores_draw_here(monkeypatch):
    monkeypatch.setattr(_drawing, "available_cores", lambda: 8)
    assert page_workers(PARALLEL_ROWS - 1) == 0
    assert page_workers(PARALLEL_ROWS) == MAX_WORKERS == 3
    monkeypatch.setattr(_drawing, "available_cores", lambda: 2)
    assert page_workers(10**8) == 1
    monkeypatch.setattr(_drawing, "available_cores", lambda: 1)
    assert page_workers(10**8) == 0


def test_outside_a_drawing_block_a_figure_is_drawn_at_once():
    from relcol.report._figures import degradation_figure, figure_svg
    from tests.test_analysis import DIVERGING_CALIBRATION as CALIBRATION

    svg = drawn_svg(degradation_figure, CALIBRATION, id_prefix="d", label="curves")
    assert svg.startswith("<svg ")
    assert svg == figure_svg(degradation_figure(CALIBRATION), id_prefix="d", label="curves")


class _Node:
    """An object that can be put in a reference cycle and watched through a weak reference."""


def test_a_figure_is_drawn_without_collections_and_its_garbage_is_freed_after():
    # the cycle collector is off while a figure is drawn; one collection of the youngest
    # generation after it frees the figure's cycles, which are all still young then
    starts: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            starts.append(info["generation"])

    try:
        with _drawing._collected_after():
            assert not gc.isenabled()
            gc.callbacks.append(count)  # the interpreter's own list; watched from here on
            cycle = _Node()
            cycle.itself = cycle
            freed = weakref.ref(cycle)
            del cycle
            young = [[[]] for _ in range(20_000)]  # ample to start collections if they were on
            del young
            assert starts == []
        assert gc.isenabled()
        assert freed() is None
        assert starts == [0]
    finally:
        if count in gc.callbacks:
            gc.callbacks.remove(count)


def test_drawing_leaves_a_collector_that_was_off_as_it_was():
    gc.disable()  # first: a collection between here and the block would free the cycle
    try:
        cycle = _Node()
        cycle.itself = cycle
        freed = weakref.ref(cycle)
        del cycle
        with _drawing._collected_after():
            pass
        assert not gc.isenabled()
        assert freed() is not None  # nothing collected behind the caller's back
    finally:
        gc.enable()
        gc.collect()
    assert freed() is None
