"""Benchmark: the report's tables (``report_tables``) here against a local Dask cluster.

    python tests/benchmarks/bench_dask_report.py WAREHOUSE [--bootstrap B] [--workers 2]

Runs ``report_tables`` once with ``backend="local"`` and once with ``backend="dask"`` on a
``LocalCluster`` of ``--workers`` single-threaded worker processes (started before the clock,
its start-up printed apart), checks that every table is equal, and prints for each the wall
time, this process's peak RSS, the workers' peak RSS and the 1-minute load average before and
after (the machine may be shared). Each backend runs in a fresh process, so the peak RSS of
one does not hide the other's. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(warehouse: str, backend: str, bootstrap: int, workers: int, out: str) -> None:
    """One backend, in this process: the tables go to ``out`` (Parquet, one per table)."""
    import relcol
    from relcol.workflows import report_tables

    wh = relcol.open_warehouse(warehouse)
    study = wh.require_study(None)
    cluster = None
    if backend == "dask":
        from distributed import Client, LocalCluster

        start = time.perf_counter()
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        os.environ["DASK_SCHEDULER_ADDRESS"] = cluster.scheduler_address
        print(f"  cluster start-up {time.perf_counter() - start:.1f} s")
    load = os.getloadavg()[0]
    start = time.perf_counter()
    tables = report_tables(wh, study, bootstrap=bootstrap, backend=backend)
    wall = time.perf_counter() - start
    line = f"  {backend}: {wall:.1f} s wall, peak RSS {peak_mb():.0f} MB here"
    if cluster is not None:
        with Client(cluster) as client:
            peaks = client.run(peak_mb)
        line += ", workers " + " + ".join(f"{v:.0f}" for v in peaks.values()) + " MB"
        cluster.close()
    print(f"{line} (load {load:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
    for name, table in tables.items():
        table.write_parquet(Path(out) / f"{name}.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse")
    parser.add_argument("--bootstrap", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", help=argparse.SUPPRESS)  # one backend, in a child
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.backend:
        run(args.warehouse, args.backend, args.bootstrap, args.workers, args.out)
        return
    import polars as pl
    from polars.testing import assert_frame_equal

    print(f"report_tables, B = {args.bootstrap}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("local", "dask"):
            Path(tmp, backend).mkdir()
            argv = [sys.executable, __file__, args.warehouse, "--bootstrap", str(args.bootstrap)]
            argv += ["--workers", str(args.workers), "--backend", backend]
            subprocess.run([*argv, "--out", str(Path(tmp, backend))], check=True)
        names = sorted(p.name for p in Path(tmp, "local").iterdir())
        assert names == sorted(p.name for p in Path(tmp, "dask").iterdir())
        for name in names:
            local, dask = (pl.read_parquet(Path(tmp, b, name)) for b in ("local", "dask"))
            assert_frame_equal(dask, local, check_exact=True)
        print(f"  every table equal ({len(names)} tables)")


if __name__ == "__main__":
    main()
