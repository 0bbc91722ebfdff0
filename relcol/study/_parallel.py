"""Where the (dataset, model, seed) fits run: here, on local processes, or on a Dask cluster.

The grid of fits is embarrassingly parallel (docs/development.md): each task fits one
frozen model, predicts every corrupted draw and writes its own part file into
the ingest's staging folder; the commit then publishes all parts together. The
backend changes where the work runs, never what it writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from relcol.checks import check_int
from relcol.errors import ParameterError

BACKENDS = ("local", "dask")
#: Below this many rows a study's fits run in this process unless ``jobs`` says otherwise:
#: starting worker processes (each imports scikit-learn and LightGBM, about 2 s) costs more
#: than a small study's fits.
PARALLEL_ROWS = 200_000

T = TypeVar("T")


def check_backend(backend: str, jobs: int | None) -> None:
    if backend not in BACKENDS:
        raise ParameterError(f"backend must be one of {', '.join(BACKENDS)}. Got {backend!r}.")
    if jobs is not None:
        check_int("jobs", jobs)
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ParameterError(
                "backend 'dask' needs dask.distributed: pip install 'relcol[dask]'"
            ) from None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's share)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_jobs(rows: int, tasks: int) -> int:
    """The processes a study's ``tasks`` fits run on when ``jobs`` is not given: one per
    usable core (at most one per task) for a study of ``PARALLEL_ROWS`` rows or more, else 1.

    >>> default_jobs(1_000, tasks=8)
    1
    >>> default_jobs(10**7, tasks=1)
    1
    """
    if rows < PARALLEL_ROWS:
        return 1
    return max(1, min(usable_cores(), tasks))


def run_tasks(
    fn: Callable[..., T],
    tasks: Sequence[tuple[Any, ...]],
    paths: Sequence[Path],
    *,
    jobs: int = 1,
    backend: str = "local",
) -> Iterator[T]:
    """Run ``fn(*task, path)`` for every task; yield each result as it completes.

    A task's first element (the data shared by a dataset's tasks) is sent to the
    workers once per dataset, not once per task.
    """
    if backend == "dask":
        yield from _dask(fn, tasks, paths, jobs)
    elif jobs == 1:
        for task, path in zip(tasks, paths, strict=True):
            yield fn(*task, path)
    else:
        from joblib import Parallel, delayed

        # loky processes; large numpy arrays in the shared data are memory-mapped, not copied
        run = Parallel(n_jobs=jobs, return_as="generator_unordered")
        yield from run(delayed(fn)(*task, path) for task, path in zip(tasks, paths, strict=True))


def _dask(
    fn: Callable[..., T], tasks: Sequence[tuple], paths: Sequence[Path], jobs: int
) -> Iterator[T]:
    """On the cluster at $DASK_SCHEDULER_ADDRESS, else a local one with ``jobs`` workers."""
    from distributed import Client, LocalCluster, as_completed

    address = os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        client, cluster = Client(address), None
    else:
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    try:
        shared: dict[int, Any] = {}
        futures = []
        for (first, *rest), path in zip(tasks, paths, strict=True):
            if id(first) not in shared:
                shared[id(first)] = client.scatter(first, broadcast=True)
            futures.append(client.submit(fn, shared[id(first)], *rest, path, pure=False))
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
