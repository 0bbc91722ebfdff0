"""Benchmark: the report page's figures with relcol's ticks against matplotlib's own.

    python tests/benchmarks/bench_ticks.py --warehouse WAREHOUSE [--study S] [--repeats 3]

Computes the report's tables of the study once (``relcol.report_tables``, B = 1000) and
records the figures of its page (``relcol.report.render_html``, drawn in this process). Then,
in alternating rounds, builds and exports every figure (``figure_svg``) with its axes' ticks
drawn by ``relcol.report._ticks`` and with every axis left to matplotlib, as before
``light_ticks`` existed. Prints the CPU time of each round by kind of figure, the best of each
variant and their ratio, the SVG bytes of each, and whether every figure's raster (Agg, 100
dpi) is the same pixels both ways. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import time
from collections import Counter

import matplotlib.image as mpimg
import numpy as np
from matplotlib import rc_context

import relcol
from relcol.report import _drawing, _figures, _ticks, render_html


def figures(tables: dict, meta: dict) -> list:
    """The page's figures, as ``relcol.report`` records them (build and arguments)."""
    recorded = []
    exported = _drawing._exported
    _drawing.PARALLEL_ROWS = 10**15  # every figure drawn here, none by a worker

    def record(figure):
        recorded.append(figure)
        return exported(figure)

    _drawing._exported = record
    try:
        render_html(tables, meta=meta)
    finally:
        _drawing._exported = exported
    return recorded


def export_all(recorded: list, light: bool) -> tuple[Counter, int]:
    """CPU seconds per kind of figure and the SVG bytes, with or without relcol's ticks."""
    drawable = _ticks._drawable
    if not light:
        _ticks._drawable = lambda axis: False
    seconds, size = Counter(), 0
    try:
        for figure in recorded:
            gc.disable()
            start = time.process_time()
            fig = figure.build(*figure.args, **figure.kwargs)
            size += len(_figures.figure_svg(fig, id_prefix=figure.id_prefix))
            seconds[figure.build.__name__] += time.process_time() - start
            del fig
            gc.enable()
            gc.collect(0)
    finally:
        _ticks._drawable = drawable
    return seconds, size


def pixels(figure, light: bool) -> np.ndarray:
    fig = figure.build(*figure.args, **figure.kwargs)
    buffer = io.BytesIO()
    with rc_context(_figures._RC):
        if light:
            with _ticks.light_ticks(fig):
                fig.savefig(buffer, format="png", dpi=100)
        else:
            fig.savefig(buffer, format="png", dpi=100)
    buffer.seek(0)
    return mpimg.imread(buffer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--study")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    wh = relcol.open_warehouse(args.warehouse)
    study = wh.require_study(args.study)
    tables = relcol.report_tables(wh, study)
    recorded = figures(tables, {"study": study, "bins": 15})
    print(f"{len(recorded)} figures; cores: {os.cpu_count()}; load {os.getloadavg()[0]:.1f}")
    best, sizes = {}, {}
    for _ in range(args.repeats):
        for light in (False, True):
            seconds, sizes[light] = export_all(recorded, light)
            total = sum(seconds.values())
            best[light] = min(best.get(light, float("inf")), total)
            kinds = ", ".join(f"{kind} {s:.2f}" for kind, s in seconds.items())
            print(f"  {'relcol' if light else 'matplotlib'} ticks: {total:.2f} s CPU ({kinds})")
    same = all(np.array_equal(pixels(f, False), pixels(f, True)) for f in recorded)
    print(
        f"matplotlib's ticks {best[False]:.2f} s, relcol's {best[True]:.2f} s: "
        f"{best[True] / best[False]:.2f}x the CPU; SVG {sizes[False]:,} against "
        f"{sizes[True]:,} bytes; the same pixels: {same}"
    )


if __name__ == "__main__":
    main()
