"""Where the report's per-cell tables are computed: here, or on a Dask cluster.

Every per-cell table of the report (calibration with its bins, discrimination, selective,
risk-coverage, consistency) depends on the rows of one cell only, and a cell holds all its
seeds and repeats (``relcol.store.CELL``). So the cells, sorted by their keys, are cut into
partitions of whole cells; each partition is one Dask task that reads its rows from the
warehouse's Parquet files itself (the task carries the file paths and the partition's cell
keys, never rows) and computes the tables for its cells; the client concatenates the results
in cell order. A cell's rows are never split, so every value is the single-machine value,
bit for bit.

The statistical layer's bootstrap is per cell too (each cell's replicates from its own rows
and the sample-keyed Poisson weights, ``relcol.analysis.bootstrap``): its runs of whole cells
are partitioned the same way and each worker returns its cells' replicates and per-seed
values. What is built from them (intervals, differences, trends, thresholds) and the small
tables derived from the per-cell tables run on the client, as with ``backend="local"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import polars as pl

from relcol._cluster import check_backend, dask_client
from relcol.errors import ParameterError
from relcol.metrics import CHUNK_ROWS, chunk_spans, concat_runs, run_rows
from relcol.store import CELL, Warehouse

#: ``plans(rows)``: the lazy per-cell tables of some rows (see ``relcol.metrics.by_chunks``).
Plans = Callable[[pl.LazyFrame], Sequence[pl.LazyFrame]]

#: ``chunks(cells, plans)``: ``plans`` collected over the rows of ``cells``, in cell order.
Chunks = Callable[[pl.DataFrame, Plans], list[pl.DataFrame]]

#: ``work(rows, run)``: a result for the cells ``run`` (with their ``n``) from ``rows``.
Work = Callable[[pl.LazyFrame, pl.DataFrame], object]

#: Partitions per worker: enough that a worker with large cells does not hold up the rest.
PARTITIONS_PER_WORKER = 2


def check_report_backend(backend: object, jobs: object) -> None:
    """The report's ``backend`` and ``jobs``, checked before any work."""
    if jobs is not None and backend != "dask":
        raise ParameterError(
            "jobs sets the workers of backend 'dask' (the local report runs in this process); "
            f"got jobs={jobs!r} with backend {backend!r}"
        )
    check_backend(backend, 1 if jobs is None else jobs)


@contextmanager
def chunk_runner(
    wh: Warehouse, study: str, backend: str, jobs: int | None
) -> Iterator[Chunks | None]:
    """The function that computes per-cell tables of ``study`` on ``backend``; a Dask
    cluster (``relcol._cluster.dask_client``, ``jobs`` workers) is open while it is in use.
    None for the local backend: each table then runs ``by_chunks`` here, with its own chunk
    size."""
    if backend != "dask":
        yield None
        return
    paths = wh.sources(study)["predictions"]  # absolute: the warehouse root is resolved
    with dask_client(jobs) as client:
        workers = max(1, len(client.scheduler_info()["workers"]))

        def each_run(cells: pl.DataFrame, work: Work) -> list:
            runs = partitions(cells, workers * PARTITIONS_PER_WORKER)
            n = len(runs)
            futures = client.map(_partition, [paths] * n, runs, [work] * n, pure=False)
            return client.gather(futures)

        yield Runner(each_run)


class Runner:
    """Per-run work over partitions of whole cells (``each_run(cells, work)``: the results of
    ``work(rows, run)`` for each run, in cell order; ``rows``: the study's rows, unfiltered)."""

    def __init__(self, each_run: Callable[[pl.DataFrame, Work], list]) -> None:
        self.each_run = each_run

    def __call__(self, cells: pl.DataFrame, plans: Plans) -> list[pl.DataFrame]:
        """``plans`` collected over the rows of ``cells``, in cell order (a ``Chunks``)."""
        return concat_runs(self.each_run(cells, _Collect(plans)))


class _Collect:
    """``plans`` collected on the rows of one run (a picklable ``Work``)."""

    def __init__(self, plans: Plans) -> None:
        self.plans = plans

    def __call__(self, rows: pl.LazyFrame, run: pl.DataFrame) -> list[pl.DataFrame]:
        return pl.collect_all(self.plans(run_rows(rows, run, CELL)))


def partitions(cells: pl.DataFrame, count: int) -> list[pl.DataFrame]:
    """``cells`` in runs of whole cells, about ``count`` runs of even rows (none above
    ``CHUNK_ROWS`` rows unless one cell is larger); one empty run when there are no cells."""
    sizes = cells["n"].to_list()
    budget = min(CHUNK_ROWS, max(1, -(-sum(sizes) // count)))
    return [cells.slice(start, length) for start, length in chunk_spans(sizes, budget)]


def _partition(paths: list[str], run: pl.DataFrame, work: Work):
    """On a worker: ``work`` on the rows of the Parquet files ``paths`` for the cells ``run``."""
    return work(pl.scan_parquet(paths, hive_partitioning=False), run)
