"""The page's figures, drawn in worker processes beside this one when the page is large.

Drawing is most of the page's time (matplotlib builds and exports every panel in Python) and
uses one core. Inside ``drawing(workers)``, ``drawn_svg`` does not draw here: it records the
figure, hands it to a worker if one has fewer than two (so the workers draw while the
sections are still being written), and returns a placeholder. When the sections are written,
``Drawing.fill`` draws the other figures, here and in the workers at once (each worker is
kept two figures ahead, this process draws the others in turn), and puts each in its
placeholder.
The page is the same, byte for byte, as when every figure is drawn where it is asked for:
``figure_svg`` depends on the figure alone.

``relcol report`` starts the workers (``drawing_workers``) before it computes the tables, so
that their imports are done when the page is drawn. A worker imports matplotlib, Polars and
the drawing modules alone (``relcol.report`` imports each of its names on first use): 1.4 s
of one core on the development machine, where the whole report package took 3.8 s. The
workers end with the report, killed if it fails or is interrupted, and the kernel kills them
if this process dies first. A worker that dies (killed, out of memory) leaves its figures to
this process.
"""

from __future__ import annotations

import gc
import os
import re
import signal
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Future, wait
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from relcol._cluster import available_cores, die_with
from relcol.report._figures import figure_svg

#: A study of fewer rows than this has its page drawn here: its figures take less time than a
#: worker's start.
PARALLEL_ROWS = 200_000
#: Worker processes at most, beside this one.
MAX_WORKERS = 3


def page_workers(rows: int) -> int:
    """The worker processes that draw the page of a study of ``rows`` predictions beside this
    one: none for a small study or a single core, else one per further core (at most
    ``MAX_WORKERS``)."""
    if rows < PARALLEL_ROWS:
        return 0
    return max(0, min(MAX_WORKERS, available_cores() - 1))


@dataclass
class _Figure:
    """One figure to draw: ``build(*args, **kwargs)`` exported by ``figure_svg``, then each of
    ``steps`` applied to the SVG in order (``then``)."""

    build: Callable[..., Any]
    args: tuple
    kwargs: dict
    id_prefix: str
    label: str | None
    steps: list[Callable[[str], str]] = field(default_factory=list)


def _draw(figure: _Figure) -> str:
    return _finished(figure, _exported(figure))


def _exported(figure: _Figure) -> str:
    """The figure built and exported (what a worker does)."""
    with _collected_after():
        return figure_svg(
            figure.build(*figure.args, **figure.kwargs),
            id_prefix=figure.id_prefix,
            label=figure.label,
        )


def _finished(figure: _Figure, svg: str) -> str:
    """``svg`` with the figure's steps applied (in this process, wherever it was drawn)."""
    for step in figure.steps:
        svg = step(svg)
    return svg


@contextmanager
def _collected_after() -> Iterator[None]:
    """No cycle collection inside the block; one of the youngest generation after it.

    A figure makes some hundred thousand small objects, in cycles (a figure, its axes and
    artists refer to each other), that are garbage once it is exported. Collected as Python
    does by default, every 700 new objects, they outlive a few collections while the figure is
    built, reach the oldest generation, and are found only by full collections, each of which
    walks every object of the process: on the built-in study's page, drawn in one process,
    900 collections took 1.2–1.3 s of its 7.2–7.5 s. With none while a figure is drawn, all
    its objects are still in the youngest generation when it is done, and one collection of
    that generation frees them: 33 collections, 0.3–0.6 s, at the same peak memory
    (docs/performance.md).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)


_PLACEHOLDER = re.compile(r"<!--relcol-figure-(\d+)-->")


class Drawing:
    """The figures of one page: recorded by ``drawn_svg``, drawn by ``fill`` (here, and on
    ``workers`` processes of ``pool`` when there is one).

    With workers, a figure is handed to one as soon as it is recorded, while this process is
    still writing the page's sections, as long as each worker has fewer than two: one to draw
    and the next queued, so it never waits for this process to hand it work. ``fill`` keeps
    them so while this process draws the others in turn, taking its next one first.
    """

    def __init__(self, pool=None, workers: int = 0) -> None:
        self.figures: list[_Figure] = []
        self.pool, self.workers = pool, workers
        self._waiting: deque[int] = deque()  # recorded, not handed to a worker
        self._running: dict[Future, int] = {}  # handed to a worker, its SVG not taken yet

    def add(self, figure: _Figure) -> str:
        self.figures.append(figure)
        self._waiting.append(len(self.figures) - 1)
        try:
            self._hand_out()
        except BrokenExecutor:  # a worker died (killed, out of memory): the rest here
            self.pool = None
        return f"<!--relcol-figure-{len(self.figures) - 1}-->"

    def then(self, placeholder: str, step: Callable[[str], str]) -> str | None:
        match = _PLACEHOLDER.fullmatch(placeholder)
        if match is None:
            return None
        self.figures[int(match[1])].steps.append(step)
        return placeholder

    def fill(self, html: str) -> str:
        """``html`` with every placeholder replaced by its figure, drawn now."""
        svgs = self._draw_all()
        return _PLACEHOLDER.sub(lambda m: svgs[int(m[1])], html)

    def _hand_out(self) -> None:
        if self.pool is None:
            return
        busy = sum(not future.done() for future in self._running)
        while self._waiting and busy < 2 * self.workers:
            index = self._waiting.popleft()
            self._running[self.pool.submit(_exported, self.figures[index])] = index
            busy += 1

    def _draw_all(self) -> list[str]:
        svgs: list[str | None] = [None] * len(self.figures)
        try:
            self._draw_beside(svgs)
        except BrokenExecutor:  # a worker died (killed, out of memory): the rest here
            self.pool = None
        return [_draw(f) if svg is None else svg for f, svg in zip(self.figures, svgs, strict=True)]

    def _draw_beside(self, svgs: list[str | None]) -> None:
        while self._running or (self._waiting and self.pool is not None):
            # this process takes the next figure before the workers are handed the others:
            # handed to a busy worker, the last figure would wait there while this process,
            # free, waited for it
            mine = self._waiting.popleft() if self._waiting else None
            self._hand_out()
            if mine is not None:
                svgs[mine] = _draw(self.figures[mine])
                done = [future for future in self._running if future.done()]
            else:
                done, _ = wait(self._running, return_when=FIRST_COMPLETED)
            for future in done:
                index = self._running.pop(future)
                svgs[index] = _finished(self.figures[index], future.result())


_ACTIVE: ContextVar[Drawing | None] = ContextVar("relcol_drawing", default=None)
_WORKERS: ContextVar[tuple | None] = ContextVar("relcol_drawing_workers", default=None)


@contextmanager
def drawing_workers(workers: int) -> Iterator[None]:
    """``workers`` processes, started now, that draw the figures of the pages written inside
    the block: started before a report's tables, their imports are done by the page. They
    end with the block, killed if it ends by an error or Ctrl-C."""
    if not workers:
        yield
        return
    from joblib.externals.loky import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=workers, initializer=_start_worker, initargs=(os.getpid(),)
    )
    pool.submit(_warm)
    token = _WORKERS.set((pool, workers))
    finished = False
    try:
        yield
        finished = True
    finally:
        _WORKERS.reset(token)
        pool.shutdown(wait=True, kill_workers=not finished)


@contextmanager
def drawing(workers: int) -> Iterator[Drawing]:
    """Figures asked for inside the block (``drawn_svg``) are recorded, to be drawn by the
    ``Drawing``'s ``fill`` here and on the workers of an enclosing ``drawing_workers``
    block, else on ``workers`` processes of its own."""
    with ExitStack() as stack:
        if _WORKERS.get() is None:
            stack.enter_context(drawing_workers(workers))
        pages = Drawing(*(_WORKERS.get() or ()))
        token = _ACTIVE.set(pages)
        try:
            yield pages
        finally:
            _ACTIVE.reset(token)


def drawn_svg(
    build: Callable[..., Any], *args, id_prefix: str, label: str | None = None, **kwargs
) -> str:
    """``figure_svg(build(*args, **kwargs), id_prefix=…, label=…)``: the figure's SVG, or inside
    ``drawing`` a placeholder for it. ``build`` and its arguments go to another process
    there: a module-level function (or a ``functools.partial`` of one) and picklable values."""
    figure = _Figure(build, args, kwargs, id_prefix, label)
    pages = _ACTIVE.get()
    return _draw(figure) if pages is None else pages.add(figure)


def then(svg: str, step: Callable[[str], str]) -> str:
    """``step(svg)``; for the placeholder of a figure not drawn yet, ``step`` is applied in
    this process once it is drawn, wherever that was."""
    pages = _ACTIVE.get()
    placeholder = None if pages is None else pages.then(svg, step)
    return step(svg) if placeholder is None else placeholder


def _start_worker(parent: int) -> None:
    die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the page's to handle


def _warm() -> None:
    from matplotlib.backends import backend_agg, backend_svg  # noqa: F401
