"""Where work runs beside this process: the cores it may use, worker processes that end with
it (``die_with``), and the one place a Dask client is opened, for every command with
``--backend dask``.

The cluster at ``$DASK_SCHEDULER_ADDRESS`` when it is set (its workers must have relcol
installed and see the warehouse at the same path); else a ``LocalCluster`` of single-threaded
worker processes on this machine, closed again with the client.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from relcol.checks import check_int
from relcol.errors import ParameterError

BACKENDS = ("local", "dask")


def check_backend(backend: str, jobs: int | None) -> int:
    """The number of processes or workers to run on: ``jobs``, or with None the cores this
    process may use (``available_cores``); ``backend`` one of ``BACKENDS``, and
    dask.distributed installed when it is needed (else the one line that says how to
    install it)."""
    if backend not in BACKENDS:
        raise ParameterError(f"backend must be one of {', '.join(BACKENDS)}. Got {backend!r}.")
    jobs = available_cores() if jobs is None else check_int("jobs", jobs, note=" or None")
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ParameterError(
                "backend 'dask' needs dask.distributed: pip install 'relcol[dask]'"
            ) from None
    return jobs


def die_with(parent: int) -> None:
    """Have the kernel kill this worker when the process that started it ends, however it
    ends (a SIGTERM or SIGKILL to an ingest or a report leaves no worker running on). Linux
    only (``prctl(PR_SET_PDEATHSIG)``); elsewhere a worker ends when it next finds its task
    queue closed."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the request took effect
        os._exit(1)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or ``taskset``
    narrows), not every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform (macOS, Windows)
        return os.cpu_count() or 1


@contextmanager
def dask_client(jobs: int | None) -> Iterator[Any]:
    """A ``distributed.Client``; a local cluster has ``jobs`` workers (None: one per
    available core)."""
    from distributed import Client, LocalCluster

    address = os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        client, cluster = Client(address), None
    else:
        cluster = LocalCluster(
            n_workers=jobs or available_cores(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
