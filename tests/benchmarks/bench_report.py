"""Benchmark: the statistical layer (docs/statistics.md) and the whole report at three scales.

    python tests/benchmarks/bench_report.py [--default WAREHOUSE] [--wh7 /tmp/wh7] [--wh8 /tmp/wh8]

1. ``relcol report`` (B = 1000) on the built-in study: wall time of the command. Without
   ``--default`` the study is first ingested into a temporary warehouse
   (``relcol ingest --jobs 2``, about a minute).
2. On a 10⁷-row synthetic warehouse (``tests/benchmarks/make_warehouse.py WH --rows 1e7``):
   - relcol's bootstrap (``relcol.analysis.bootstrap``, B = 1000: every metric's
     replicates, per-seed values) and the whole statistical layer
     (``statistical_tables``: intervals, differences, trends, thresholds);
   - a baseline that bootstraps each cell by numpy resampling: per replicate, Poisson(1)
     weights per test sample from numpy's generator, expanded to the cell's rows, and the
     metrics recomputed on the weighted rows (binned calibration metrics with
     ``np.bincount``, ACE on fixed bins, Brier and NLL, AUROC and both AUPRs with
     scikit-learn's ``sample_weight``, AURC by sorting). It runs on ``--baseline-cells``
     cells × ``--baseline-replicates`` replicates and is extrapolated linearly to every
     cell × 1000 replicates (its cost is the same for every replicate of a cell);
   - ``relcol report`` on the same warehouse, against one DuckDB GROUP BY scan of the
     columns the report reads (cell keys, confidence, correct, sample_id, seed, repeat,
     y_true, proba).
3. Peak RSS (of the command and of it with the workers it starts, sampled from /proc) and wall
   time of ``relcol report`` on a 10⁸-row warehouse.

Every timing is the minimum over ``--repeats`` runs; the 1-minute load average before
each is printed, since the machine may be shared. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

import relcol
from relcol.analysis import bootstrap, statistical_tables
from relcol.metrics import metric_tables
from relcol.store import CELL

REPLICATES = 1000
#: The ``relcol`` command of this Python's environment, whether or not it is activated, else
#: the one on PATH.
RELCOL = (
    shutil.which("relcol", path=sysconfig.get_path("scripts")) or shutil.which("relcol") or "relcol"
)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f})"


def best(repeats: int, run) -> tuple[float, str]:
    times, loads = [], []
    for _ in range(repeats):
        loads.append(load())
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    i = int(np.argmin(times))
    return times[i], loads[i]


def command(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([RELCOL, *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr)
    return time.perf_counter() - start


def peak(*args: str) -> tuple[float, float, float]:
    """(wall seconds, peak RSS of the command, peak RSS of it and every process it started,
    in GB) of ``relcol *args``: the process tree's resident memory sampled every 0.2 s
    (/proc, Linux), since the report draws its figures on worker processes."""
    start = time.perf_counter()
    proc = subprocess.Popen([RELCOL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    own = tree = 0
    while proc.poll() is None:
        rss = [_rss(pid) for pid in (proc.pid, *_descendants(proc.pid))]
        own, tree = max(own, rss[0]), max(tree, sum(rss))
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(proc.stderr.read().decode())
    return seconds, own / 1024**3, tree / 1024**3


def _descendants(pid: int) -> list[int]:
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # ended meanwhile
        return found
    for task in tasks:
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def _rss(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) * 1024 if match else 0


# 1. The built-in study --------------------------------------------------------------------------


def default_study(warehouse: str | None, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if warehouse is None:
            warehouse = str(Path(tmp) / "wh")
            print(f"ingesting the built-in study into {warehouse} … ({load()})")
            seconds = command("ingest", "--warehouse", warehouse, "--jobs", "2")
            print(f"  ingest: {seconds:.1f} s")
        out = str(Path(tmp) / "report")
        args = ("report", "--warehouse", warehouse, "--out", out, "-q", "--bootstrap", "1000")
        seconds, when = best(repeats, lambda: command(*args))
        print(f"| `relcol report` on the built-in study (B = 1000) | {seconds:.1f} s ({when}) |")
        wh = relcol.open_warehouse(warehouse)
        rows = wh.predictions("default")
        tables = dict(
            zip(
                ("calibration", "discrimination", "selective"),
                pl.collect_all(
                    [
                        metric_tables(rows, CELL)[n]
                        for n in ("calibration", "discrimination", "selective")
                    ]
                ),
                strict=True,
            )
        )
        seconds, when = best(
            repeats, lambda: statistical_tables(rows, tables, replicates=REPLICATES)
        )
        print(f"| its statistical layer alone | {seconds:.1f} s ({when}) |")


# 2. 10⁷ rows --------------------------------------------------------------------------------------


def baseline_cell(rows: pl.DataFrame, replicates: int, bins: int, rng: np.random.Generator) -> None:
    """The naive way: resample the cell's samples, recompute every metric, per replicate."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    c = rows["confidence"].to_numpy()
    z = rows["correct"].to_numpy()
    zf = z.astype(np.float64)
    _, sid = np.unique(rows["sample_id"].to_numpy(), return_inverse=True)
    n_samples = sid.max() + 1
    width = np.clip(np.ceil(c * bins).astype(np.int64) - 1, 0, bins - 1)
    order = np.lexsort((rows["repeat"], rows["seed"], rows["sample_id"], c))
    mass = np.empty(len(c), dtype=np.int64)
    mass[order] = np.arange(len(c)) * bins // len(c)
    clipped = np.clip(c, 1e-15, 1 - 1e-15)
    loss = -(zf * np.log(clipped) + (1 - zf) * np.log(1 - clipped))
    for _ in range(replicates):
        w = rng.poisson(1.0, n_samples)[sid].astype(np.float64)
        total = w.sum()
        if total == 0:
            continue
        for b in (width, mass):
            counts = np.bincount(b, weights=w, minlength=bins)
            error = np.bincount(b, weights=w * (zf - c), minlength=bins)
            used = counts > 0
            _ = np.abs(error).sum() / total  # ECE / ACE
            _ = np.abs(error[used] / counts[used]).max()  # MCE
            _ = np.sqrt((error[used] ** 2 / counts[used]).sum() / total)  # RMSCE
        _ = (w * zf).sum() / total, (w * c).sum() / total  # accuracy, mean confidence
        _ = (w * (c - zf) ** 2).sum() / total, (w * loss).sum() / total  # Brier, NLL (top)
        kept = w > 0
        if 0 < (w * zf).sum() < total:
            _ = roc_auc_score(z[kept], c[kept], sample_weight=w[kept])
            _ = average_precision_score(z[kept], c[kept], sample_weight=w[kept])
            _ = average_precision_score(~z[kept], -c[kept], sample_weight=w[kept])
        ranked = np.argsort(-c[kept], kind="stable")
        accepted = np.cumsum(w[kept][ranked])
        errors = np.cumsum((w * (1 - zf))[kept][ranked])
        _ = (w[kept][ranked] * errors / accepted).sum() / total  # AURC (no tie grouping)


def ten_million(warehouse: str, repeats: int, cells: int, replicates: int) -> None:
    wh = relcol.open_warehouse(warehouse)
    study = next(s for s in wh.studies() if s.endswith("10000000"))
    rows = wh.predictions(study)
    seconds, when = best(repeats, lambda: bootstrap(rows, replicates=REPLICATES))
    print(
        f"| relcol bootstrap, 10⁷ rows, B = 1000 (every metric's replicates) | {seconds:.1f} s ({when}) |"
    )
    mine = seconds
    tables = dict(
        zip(
            ("calibration", "discrimination", "selective"),
            pl.collect_all(
                [
                    metric_tables(rows, CELL)[n]
                    for n in ("calibration", "discrimination", "selective")
                ]
            ),
            strict=True,
        )
    )
    seconds, when = best(repeats, lambda: statistical_tables(rows, tables, replicates=REPLICATES))
    print(f"| the whole statistical layer, 10⁷ rows | {seconds:.1f} s ({when}) |")

    keys = tables["calibration"].select(CELL).head(cells)
    subset = rows.join(keys.lazy(), on=list(CELL), nulls_equal=True).collect()
    parts = subset.partition_by(list(CELL))
    rng = np.random.default_rng(0)
    warnings.simplefilter("ignore")
    when = load()
    start = time.perf_counter()
    for part in parts:
        baseline_cell(part, replicates, 15, rng)
    measured = time.perf_counter() - start
    total_cells = tables["calibration"].height
    extrapolated = measured * (total_cells / len(parts)) * (REPLICATES / replicates)
    print(
        f"| numpy per-cell resampling baseline: {len(parts)} cells × {replicates} replicates "
        f"measured {measured:.1f} s, extrapolated to {total_cells} cells × {REPLICATES} | "
        f"{extrapolated:,.0f} s ({when}) |"
    )
    print(f"| speed-up of the bootstrap over the baseline | {extrapolated / mine:,.0f}× |")

    with tempfile.TemporaryDirectory() as tmp:
        args = ("report", "--warehouse", warehouse, "--study", study, "--out", tmp, "-q")
        report, when = best(repeats, lambda: command(*args))
    print(f"| `relcol report`, 10⁷ rows, B = 1000 | {report:.1f} s ({when}) |")
    files = sorted(
        glob.glob(str(Path(warehouse) / "predictions" / f"study={study}" / "*" / "part-*.parquet"))
    )
    con = duckdb.connect()
    keys_sql = ", ".join(CELL)
    query = (
        f"SELECT {keys_sql}, count(*), sum(confidence), sum(CAST(correct AS INTEGER)), "
        'sum(sample_id), sum(seed), sum("repeat"), sum(y_true), sum(list_sum(proba)) '
        f"FROM read_parquet($files) GROUP BY {keys_sql}"
    )
    scan, when = best(max(repeats, 3), lambda: con.sql(query, params={"files": files}).fetchall())
    print(f"| one DuckDB GROUP BY scan of the report's columns, 10⁷ rows | {scan:.2f} s ({when}) |")
    print(f"| report / scan | {report / scan:.0f}× |")


# 3. 10⁸ rows --------------------------------------------------------------------------------------


def hundred_million(warehouse: str) -> None:
    wh = relcol.open_warehouse(warehouse)
    study = next(s for s in wh.studies() if s.endswith("100000000"))
    with tempfile.TemporaryDirectory() as tmp:
        when = load()
        args = ("report", "--warehouse", warehouse, "--study", study, "--out", tmp, "-q")
        seconds, own, tree = peak(*args)
    print(
        f"| `relcol report`, 10⁸ rows, B = 1000: wall, peak RSS (with its workers) | "
        f"{seconds:.0f} s, {own:.2f} GB ({tree:.2f} GB) ({when}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--default", help="a warehouse holding the built-in study (else ingest it)")
    parser.add_argument("--wh7", default="/tmp/wh7", help="warehouse with a 10⁷-row study")
    parser.add_argument("--wh8", default="/tmp/wh8", help="warehouse with a 10⁸-row study")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--baseline-cells", type=int, default=5)
    parser.add_argument("--baseline-replicates", type=int, default=40)
    parser.add_argument("--skip", nargs="*", default=(), choices=("default", "wh7", "wh8"))
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; {load()}")
    print("| what | figure |\n|---|---|")
    if "default" not in args.skip:
        default_study(args.default, args.repeats)
    if "wh7" not in args.skip:
        ten_million(args.wh7, args.repeats, args.baseline_cells, args.baseline_replicates)
    if "wh8" not in args.skip:
        hundred_million(args.wh8)


if __name__ == "__main__":
    main()
