"""Benchmark: the report page drawn in one process against with a worker process beside it.

    python tests/benchmarks/bench_page.py --warehouse WAREHOUSE [--study S] [--repeats 3]

Computes the report's tables of the study once (``relcol.report_tables``, B = 1000), then
draws the page from them (``relcol.report.render_html``) in turn: in this process alone, and
with ``--workers`` worker processes (``relcol.report.drawing_workers``) started ``--head-start``
seconds before, as ``relcol report`` starts them before its tables. Prints each run's wall
time, the best of each and their ratio, and checks that both pages are the same bytes. Not a
test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import os
import time

import relcol
from relcol.report import _drawing, drawing_workers, render_html


def page(tables: dict, meta: dict, workers: int, head_start: float) -> tuple[float, str]:
    if not workers:
        start = time.perf_counter()
        html = render_html(tables, meta=meta)
        return time.perf_counter() - start, html
    with drawing_workers(workers):
        time.sleep(head_start)  # the report's tables, meanwhile
        start = time.perf_counter()
        html = render_html(tables, meta=meta)
        return time.perf_counter() - start, html


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--study")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--head-start", type=float, default=4.0)
    args = parser.parse_args()
    wh = relcol.open_warehouse(args.warehouse)
    study = wh.require_study(args.study)
    tables = relcol.report_tables(wh, study)
    meta = {"study": study, "bins": 15}  # no row count: the page's own choice is overridden
    _drawing.PARALLEL_ROWS = 10**15  # render_html alone starts no worker of its own
    print(f"cores: {os.cpu_count()}; load {os.getloadavg()[0]:.1f}")
    best, pages = {}, {}
    for _ in range(args.repeats):
        for workers in (0, args.workers):
            seconds, pages[workers] = page(tables, meta, workers, args.head_start)
            best[workers] = min(best.get(workers, float("inf")), seconds)
            print(f"  {workers} worker(s): {seconds:.2f} s")
    print(
        f"one process {best[0]:.2f} s, with {args.workers} worker(s) {best[args.workers]:.2f} s: "
        f"{best[0] / best[args.workers]:.2f}x; the same page: {pages[0] == pages[args.workers]}"
    )


if __name__ == "__main__":
    main()
