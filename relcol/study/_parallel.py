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

from relcol._cluster import BACKENDS, available_cores, check_backend, dask_client, die_with

__all__ = ["BACKENDS", "available_cores", "check_backend", "run_tasks"]

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
        yield from _local(fn, tasks, paths, jobs)


def _local(
    fn: Callable[..., T], tasks: Sequence[tuple], paths: Sequence[Path], jobs: int
) -> Iterator[T]:
    """On ``jobs`` local (loky) processes that live as long as this ingest.

    Each worker receives every dataset's shared data once, when it starts; a task then
    names its data by number. The pool is shut down when the last result is in, and its
    workers killed if the caller stops early (an error, Ctrl-C): no worker outlives the
    ingest. (joblib's reusable workers stayed alive for their 300 s idle timeout, and the
    command line, which runs its exit handlers itself, waited for them.)
    """
    from joblib.externals.loky import ProcessPoolExecutor, as_completed

    shared: dict[int, int] = {}  # id of a task's first element -> its number
    firsts = []
    for first, *_ in tasks:
        if id(first) not in shared:
            shared[id(first)] = len(firsts)
            firsts.append(first)
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)), initializer=_receive, initargs=(firsts, os.getpid())
    )
    finished = False
    try:
        futures = [
            pool.submit(_call, fn, shared[id(first)], rest, path)
            for (first, *rest), path in zip(tasks, paths, strict=True)
        ]
        for future in as_completed(futures):
            yield future.result()
        finished = True
    finally:  # loky fails the pending tasks itself (cancelling them first broke its shutdown)
        pool.shutdown(wait=True, kill_workers=not finished)


#: In a worker of `_local`: every dataset's shared data, as received when it started.
_SHARED: list[Any] = []


def _receive(firsts: list[Any], parent: int) -> None:
    die_with(parent)
    _SHARED[:] = firsts


def _call(fn: Callable[..., T], first: int, rest: list[Any], path: Path) -> T:
    return fn(_SHARED[first], *rest, path)


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
