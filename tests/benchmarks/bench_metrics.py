"""Benchmark: the whole metric suite (docs/metrics.md) in both engines, against two baselines.

    python tests/benchmarks/bench_metrics.py --rows 10000000 --cells 500

Synthetic long table: ``--cells`` cells (10 models × corruptions × severities), each with
rows spread over 5 seeds × 4 repeats × samples, ``--classes`` class probabilities (float32
softmax of random logits), confidence = the top probability, correct ~ Bernoulli(confidence).
Written once to Parquet (zstd) in a temporary folder; every timing reads that file.

Timed (wall and CPU seconds, each the minimum over ``--repeats`` runs, results fully
materialised; on a machine shared with other work, compare the CPU columns; ``kernel``: the
share of that CPU time spent in the kernel, mostly zeroing the pages of fresh memory):

- polars: ``pl.collect_all(relcol.metrics.metric_tables(scan).values())``: calibration
  (with ECE₀, R = 100), calibration_bins in both binnings, discrimination, selective_curve,
  selective;
- duckdb: the same five relations from the SQL macros (``SELECT * FROM calibration()``, …);
- (a) one DuckDB GROUP BY scan of the same columns (cell keys, confidence, correct,
  sample_id, seed, repeat, y_pred, y_true, proba): the floor for anything that reads them;
- (b) a per-cell Python loop calling numpy / scikit-learn for the same metrics (ECE₀ by its
  per-row definition, R = 100), run once (``--skip-loop`` to skip it).

Then the Polars suite with ``proba=None`` against one scan without ``y_true`` and ``proba``,
and beside it two sorts of the same rows, the work the rank metrics and the equal-mass bins
need before any metric, as the scan is the work of any metric:

- (c) the suite's own: the rows read, checked and numbered by cell as the suite does it, and
  sorted once per cell by confidence and the tie-breaking columns (``cell_sorted``);
- (d) DuckDB's: each cell's rows numbered in that order reversed (``row_number() OVER
  (PARTITION BY <cell> ORDER BY confidence, sample_id, seed, repeat)``), one sum of the
  numbers per cell.

Last the ratios (suite ÷ scan, wall and CPU) with and without the vectors, and the suite
without them ÷ (c) (``--skip-sql`` leaves out the DuckDB suite).

Not a test: pytest does not collect it (tests/benchmarks/, no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from relcol.metrics import metric_tables
from relcol.metrics._bins import ORDER
from relcol.metrics._null import EVENT
from relcol.metrics._statistics import sorted_rows
from relcol.metrics._tables import _prediction_rows
from relcol.store import CELL
from relcol.store._sql import definitions

VIEWS = ("calibration", "calibration_bins", "discrimination", "selective_curve", "selective")


def synthetic(rows: int, cells: int, classes: int, seed: int = 0) -> pl.DataFrame:
    """The long table: ``cells`` cells of ``rows // cells`` rows each."""
    rng = np.random.default_rng(seed)
    per_cell = rows // cells
    n = per_cell * cells
    cell = np.repeat(np.arange(cells), per_cell)
    within = np.tile(np.arange(per_cell), cells)
    logits = rng.normal(0, 1, (n, classes)).astype(np.float32)
    logits *= rng.uniform(0.3, 3.0, (n, 1)).astype(np.float32)  # sharp and flat rows
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    y_pred = proba.argmax(axis=1)
    confidence = proba.max(axis=1).astype(np.float64)
    correct = rng.random(n) < confidence * rng.uniform(0.8, 1.0)
    other = (y_pred + 1 + rng.integers(0, classes - 1, n)) % classes
    y_true = np.where(correct, y_pred, other)
    corruptions = np.array(["mcar", "mar", "mnar", "gaussian_noise", "label_noise"])
    severities = max(cells // (10 * len(corruptions)), 1)
    return pl.DataFrame(
        {
            "study": "bench",
            "dataset": "synthetic",
            "model": pl.Series(np.char.add("model_", (cell % 10).astype(str))),
            "corruption": corruptions[(cell // 10) % len(corruptions)],
            "severity": ((cell // 50) % severities) / 10.0 + (cell // (50 * severities)),
            "seed": (within % 5).astype(np.int32),
            "repeat": ((within // 5) % 4).astype(np.int32),
            "sample_id": within // 20,
            "label": pl.Series([None] * n, dtype=pl.Int32),
            "y_true": y_true.astype(np.int32),
            "y_clean": y_true.astype(np.int32),
            "y_pred": y_pred.astype(np.int32),
            "confidence": confidence,
            "correct": y_pred == y_true,
            "proba": pl.Series(proba).cast(pl.List(pl.Float32)),
            "run_id": "bench",
        }
    )


def best_of(repeats: int, run) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of this process, all threads): each the minimum of repeats,
    and the kernel's share of the CPU time of the run that took the least of it.

    On a shared machine the wall time grows with the other load and the CPU time much
    less, so the ratios are given for both. The kernel's time is mostly the page faults of
    memory the run takes fresh (each page zeroed on first touch)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu, kernel = time.perf_counter(), time.process_time(), _kernel_seconds()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append((time.process_time() - cpu, _kernel_seconds() - kernel))
    cpu, kernel = min(cpus)
    return min(walls), cpu, kernel / cpu if cpu > 0 else 0.0


def _kernel_seconds() -> float:
    """System CPU time of this process so far (all threads)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def polars_suite(path: Path, proba: str | None = "proba") -> None:
    tables = metric_tables(pl.scan_parquet(path), CELL, proba=proba)
    pl.collect_all(tables.values())


def polars_sorted(path: Path) -> None:
    """(c) The rows the suite reads without the vectors, numbered by cell and sorted per cell."""
    columns = ("confidence", "correct", None, "y_true", ORDER, EVENT)
    _, _, rows = _prediction_rows("bench", pl.scan_parquet(path), CELL, *columns)
    sorted_rows(rows, len(ORDER)).collect()


def duckdb_ranked(con: duckdb.DuckDBPyConnection) -> None:
    """(d) Each cell's rows numbered in the order of their confidence and the tie-breaking
    columns, one sum of the numbers per cell."""
    keys = ", ".join(CELL)
    order = ", ".join(["confidence", *(f'"{name}"' for name in ORDER)])
    con.sql(
        f"SELECT {keys}, sum(r) FROM (SELECT {keys}, row_number() OVER "
        f"(PARTITION BY {keys} ORDER BY {order}) AS r FROM predictions) GROUP BY {keys}"
    ).to_arrow_table()


def duckdb_connection(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET VARIABLE relcol_bins = 15")
    for statement in definitions():
        if "CREATE OR REPLACE MACRO" in statement:
            con.execute(statement)
    con.execute(f"CREATE VIEW predictions AS SELECT * FROM read_parquet('{path}')")
    return con


def duckdb_suite(con: duckdb.DuckDBPyConnection) -> None:
    queries = [
        "SELECT * FROM calibration()",
        "SELECT * FROM calibration_bins(binning := 'width')",
        "SELECT * FROM calibration_bins(binning := 'mass')",
        "SELECT * FROM discrimination()",
        "SELECT * FROM selective_curve()",
        "SELECT * FROM selective()",
    ]
    for query in queries:
        con.sql(query).to_arrow_table()


def group_by_scan(con: duckdb.DuckDBPyConnection, proba: bool = True) -> None:
    """One GROUP BY over the columns the suite reads (without the vector: those it still reads)."""
    keys = ", ".join(CELL)
    vector = ", sum(y_true), sum(list_sum(proba))" if proba else ""
    con.sql(
        f"SELECT {keys}, count(*), sum(confidence), sum(CAST(correct AS INTEGER)), "
        f'sum(sample_id), sum(seed), sum("repeat"), sum(y_pred){vector} '
        f"FROM predictions GROUP BY {keys}"
    ).to_arrow_table()


def per_cell_loop(path: Path, bins: int = 15, draws: int = 100) -> None:
    """The naive way: every metric of every cell with numpy and scikit-learn."""
    from sklearn.metrics import (
        average_precision_score,
        brier_score_loss,
        log_loss,
        roc_auc_score,
        roc_curve,
    )

    warnings.simplefilter("ignore")  # float32 vectors do not sum to 1 exactly
    rng = np.random.default_rng(0)
    edges = np.arange(bins + 1) / bins
    frame = pl.read_parquet(path)
    for _, cell in frame.partition_by(list(CELL), as_dict=True).items():
        c = cell["confidence"].to_numpy()
        z = cell["correct"].to_numpy()
        zf = z.astype(np.float64)
        p = cell["proba"].list.to_array(cell["proba"].list.len().max()).to_numpy()
        p = p.astype(np.float64)
        y = cell["y_true"].to_numpy()
        n = len(c)

        def ece(values, outcome, b):
            counts = np.bincount(b, minlength=bins)
            sums = np.bincount(b, weights=outcome - values, minlength=bins)
            return np.abs(sums).sum() / len(values), counts, sums

        b = np.maximum(np.searchsorted(edges, c, side="left") - 1, 0)
        error, counts, sums = ece(c, zf, b)
        used = counts > 0
        _ = np.abs(sums[used] / counts[used]).max()  # mce
        _ = np.sqrt((sums[used] ** 2 / counts[used]).sum() / n)  # rmsce
        order = np.lexsort((cell["repeat"], cell["seed"], cell["sample_id"], c))
        mass = np.empty(n, dtype=np.int64)
        mass[order] = np.arange(n) * bins // n
        ece(c, zf, mass)  # ace
        onehot = np.eye(p.shape[1])[y]
        for k in range(p.shape[1]):  # classwise
            ece(p[:, k], onehot[:, k], np.maximum(np.searchsorted(edges, p[:, k]) - 1, 0))
        totals = np.bincount(b, weights=c, minlength=bins)
        null = [  # ECE₀ by its definition: z ~ Bernoulli(c) per row
            np.abs(np.bincount(b, weights=rng.random(n) < c, minlength=bins) - totals).sum() / n
            for _ in range(draws)
        ]
        _ = np.mean(null), np.mean(np.array(null) >= error)
        brier_score_loss(z, c)
        brier_score_loss(y, p, labels=np.arange(p.shape[1]), scale_by_half=False)
        log_loss(z, np.clip(c, 1e-15, 1 - 1e-15), labels=[False, True])
        log_loss(y, np.maximum(p, 1e-15), labels=np.arange(p.shape[1]))
        if 0 < z.sum() < n:
            roc_auc_score(z, c)
            average_precision_score(z, c)
            average_precision_score(~z, -c)
            fpr, tpr, _ = roc_curve(z, c)
            _ = fpr[np.argmax(tpr >= 0.95)]
            _ = (c[z].mean() - c[~z].mean()) / np.sqrt((c[z].var(ddof=1) + c[~z].var(ddof=1)) / 2)
            _ = np.corrcoef(c, zf)[0, 1]
        _, inverse = np.unique(-c, return_inverse=True)  # levels, highest first
        accepted = np.cumsum(np.bincount(inverse))
        wrong = np.cumsum(np.bincount(inverse, weights=1 - zf))
        risk = wrong / accepted
        _ = (np.bincount(inverse) * risk).sum() / n  # aurc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-loop", action="store_true", help="skip baseline (b)")
    parser.add_argument("--skip-sql", action="store_true", help="skip the DuckDB suite")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="relcol-bench-") as folder:
        path = Path(folder) / "predictions.parquet"
        start = time.perf_counter()
        synthetic(args.rows, args.cells, args.classes).write_parquet(path, compression="zstd")
        print(
            f"{args.rows:,} rows, {args.cells} cells, {args.classes} classes: "
            f"written in {time.perf_counter() - start:.1f} s ({path.stat().st_size / 1e6:.0f} MB)"
        )
        con = duckdb_connection(path)
        load = f"{os.getloadavg()[0]:.2f}"
        scan = best_of(args.repeats, lambda: group_by_scan(con))
        times = {
            "(a) duckdb group-by scan": scan,
            "polars suite": best_of(args.repeats, lambda: polars_suite(path)),
        }
        if not args.skip_sql:
            times["duckdb suite"] = best_of(args.repeats, lambda: duckdb_suite(con))
        if not args.skip_loop:
            times["(b) per-cell numpy/sklearn loop"] = best_of(1, lambda: per_cell_loop(path))
        bare = best_of(args.repeats, lambda: group_by_scan(con, proba=False))
        without = {
            "(a) scan, no vector": bare,
            "polars suite, proba=None": best_of(args.repeats, lambda: polars_suite(path, None)),
            "(c) rows sorted per cell, polars": best_of(args.repeats, lambda: polars_sorted(path)),
            "(d) rows ranked per cell, duckdb": best_of(args.repeats, lambda: duckdb_ranked(con)),
        }
        loop = times.get("(b) per-cell numpy/sklearn loop")
        print(
            f"load average before: {load}; after: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)"
        )
        print(
            f"{'':34s}{'wall s':>8s}{'÷ (a)':>8s}{'(b) ÷':>8s}{'CPU s':>9s}{'÷ (a)':>8s}{'(b) ÷':>8s}"
            f"{'kernel':>8s}"
        )
        for group, floor, baseline in ((times, scan, loop), (without, bare, None)):
            for name, (wall, cpu, kernel) in group.items():
                row = f"{name:34s}{wall:8.2f}{wall / floor[0]:7.1f}×"
                row += f"{baseline[0] / wall:7.1f}×" if baseline else " " * 8
                row += f"{cpu:9.2f}{cpu / floor[1]:7.1f}×"
                row += f"{baseline[1] / cpu:7.1f}×" if baseline else " " * 8
                row += f"{kernel:7.0%}"
                print(row)
        suite, suite_bare = times["polars suite"], without["polars suite, proba=None"]
        print(
            f"ratio suite ÷ one scan (wall / CPU): with vectors {suite[0] / scan[0]:.1f}× / "
            f"{suite[1] / scan[1]:.1f}×, without {suite_bare[0] / bare[0]:.1f}× / "
            f"{suite_bare[1] / bare[1]:.1f}×"
        )
        ordered = without["(c) rows sorted per cell, polars"]
        print(
            f"suite without vectors ÷ (c) its rows sorted per cell (wall / CPU): "
            f"{suite_bare[0] / ordered[0]:.1f}× / {suite_bare[1] / ordered[1]:.1f}×"
        )


if __name__ == "__main__":
    main()
