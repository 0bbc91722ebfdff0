"""Where the (dataset, model, seed) fits run: here, on local processes, or on a Dask cluster.

The grid of fits is embarrassingly parallel (docs/development.md): each task fits one
frozen model, predicts every corrupted draw and writes its own part file into
the ingest's staging folder; the commit then publishes all parts together. The
backend changes where the work runs, never what it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from relcol._cluster import BACKENDS, check_backend, dask_client

__all__ = ["BACKENDS", "check_backend", "run_tasks"]

T = TypeVar("T")


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
    from distributed import as_completed

    with dask_client(jobs) as client:
        shared: dict[int, Any] = {}
        futures = []
        for (first, *rest), path in zip(tasks, paths, strict=True):
            if id(first) not in shared:
                shared[id(first)] = client.scatter(first, broadcast=True)
            futures.append(client.submit(fn, shared[id(first)], *rest, path, pure=False))
        for future in as_completed(futures):
            yield future.result()
