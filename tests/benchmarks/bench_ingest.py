"""`relcol ingest` in one process against N local processes, and relcol's own overhead.

    python tests/benchmarks/bench_ingest.py [--study FILE] [--jobs N] [--repeat R]
    python tests/benchmarks/bench_ingest.py --overhead [--study FILE]

By default, runs the command line (`relcol ingest -q`, a fresh process each time, its exit
included) on a study (default: the built-in one) with ``--jobs 1`` and with ``--jobs N``
(default: the cores this process may use), ``R`` times each in alternating order, and
prints each run's wall time, its CPU time (user + system, the workers included), the load
average before it, the N-process/one-process ratios, and whether both wrote byte-identical
part files.

``--overhead`` instead times one ingest in this process with timers around the model fits
and predictions, and prints the split. Target (issue: robustness and scale): overhead
under 25 % of ingest wall time.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import relcol
from relcol.models import _zoo
from relcol.study import _runner
from relcol.study._parallel import available_cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, default=None)
    parser.add_argument("--jobs", type=int, default=available_cores())
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--overhead", action="store_true")
    args = parser.parse_args()
    if args.overhead:
        overhead(args.study)
    else:
        compare(args.study, args.jobs, args.repeat)


def compare(study: Path | None, jobs: int, repeat: int) -> None:
    runs: dict[int, list[tuple[float, float]]] = {1: [], jobs: []}
    parts: dict[int, dict[str, str]] = {}
    print(f"{'jobs':>4} {'wall s':>7} {'CPU s':>7} {'load 1 min':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeat):
            for n in (1, jobs) if r % 2 == 0 else (jobs, 1):
                warehouse = Path(tmp) / f"wh-{n}-{r}"
                load = os.getloadavg()[0]
                wall, cpu = _timed_ingest(study, warehouse, n)
                runs[n].append((wall, cpu))
                print(f"{n:>4} {wall:7.1f} {cpu:7.1f} {load:10.2f}", flush=True)
                parts.setdefault(n, _part_hashes(warehouse))
    (w1, c1), (wn, cn) = (min(runs[n]) for n in (1, jobs))
    print(
        f"best of {repeat}: --jobs {jobs} / --jobs 1 = {wn / w1:.2f}× wall "
        f"({wn:.1f} s / {w1:.1f} s), {cn / c1:.2f}× CPU ({cn:.1f} s / {c1:.1f} s)"
    )
    same = parts[1] == parts[jobs] and len(parts[1]) > 0
    print(f"part files ({len(parts[1])}) byte-identical across --jobs: {'yes' if same else 'NO'}")


def _timed_ingest(study: Path | None, warehouse: Path, jobs: int) -> tuple[float, float]:
    """Wall and CPU seconds (this process's children: the command and its workers)."""
    command = [sys.executable, "-m", "relcol.cli", "ingest", "-q", "--warehouse", str(warehouse)]
    command += ["--jobs", str(jobs)] + (["--study", str(study)] if study else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _part_hashes(warehouse: Path) -> dict[str, str]:
    """SHA-256 of every part file, by its name (the run id in the folder left out)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (warehouse / "predictions").rglob("part-*.parquet")
    }


def overhead(study: Path | None) -> None:
    spent = {"fit": 0.0, "predict": 0.0}
    fit, predict = _zoo.fit_frozen, _zoo.FrozenModel.predict_proba

    def timed_fit(*a, **k):
        t = time.perf_counter()
        try:
            return fit(*a, **k)
        finally:
            spent["fit"] += time.perf_counter() - t

    def timed_predict(self, X):
        t = time.perf_counter()
        try:
            return predict(self, X)
        finally:
            spent["predict"] += time.perf_counter() - t

    _runner.fit_frozen = timed_fit
    _zoo.FrozenModel.predict_proba = timed_predict
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = relcol.ingest(study, Path(tmp) / "wh", jobs=1)  # the timers see this process
        wall = time.perf_counter() - start
    model = spent["fit"] + spent["predict"]
    print(f"study {result.study}: {result.rows:,} rows, {result.cells} cells, {result.parts} parts")
    print(
        f"wall {wall:.1f} s = fit {spent['fit']:.1f} s + predict {spent['predict']:.1f} s "
        f"+ overhead {wall - model:.1f} s"
    )
    print(f"overhead share: {(wall - model) / wall:.1%} (target < 25 %)")


if __name__ == "__main__":
    main()
