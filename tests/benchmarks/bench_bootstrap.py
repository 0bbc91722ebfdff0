"""Benchmark: the statistical layer against its arithmetic floor, for three cell structures.

    python tests/benchmarks/bench_bootstrap.py [--replicates 1000] [--shapes dense,disjoint,large]

Shapes (synthetic rows from ``make_warehouse.cell_rows``, in memory):

- ``dense``: the built-in study's shape: 3 datasets of 171, 540 and 600 test samples,
  6 models × 7 corruptions × 6 severities per dataset (756 cells), 3 seeds × 3 repeats:
  every cell of a dataset on all of its samples (3.0 M rows);
- ``disjoint``: 800 models, each one cell on its own 500 test samples, one seed and
  repeat (400 000 rows), all in one dataset;
- ``small``: 400 models × 5 corruptions × 10 severities on one test set of 100 samples,
  one seed and repeat (20 000 cells, 2·10⁶ rows): many cells with few samples each, where
  the per-cell work on the replicates (the bins' metrics, the intervals) weighs as much as
  the product (not run by default);
- ``large``: 2 models × 2 severities on one test set of 5·10⁵ samples, one seed and repeat
  (2·10⁶ rows): a group too large to hold its weights, multiplied a block of samples at a
  time with its weights drawn there (not run by default).

Timed, each shape in a fresh process (so its peak RSS is its own):

- ``layer``: ``relcol.analysis.statistical_tables`` (the paired bootstrap with every
  metric's replicates, intervals, model and clean differences, trends, thresholds) on the
  point-estimate tables, which are computed before and not timed;
- ``floor``: a plain BLAS GEMM of the same shapes: for each group of cells that the
  bootstrap multiplies together (``sample_groups``), numpy's ``W @ D`` with W
  ((1 + B) × the group's samples) and D (samples × the group's linear statistics: six per
  non-empty equal-width bin, three per equal-mass bin, six per cell), in column batches of
  the bootstrap's size (for a group of more than ``STREAM_ENTRIES`` weights, a block of
  ``STREAM_BLOCK`` entries of samples at a time, as the bootstrap takes them). It is the
  arithmetic of a dense product of those shapes; the layer also draws the weights, sorts the
  rows and computes the rank metrics' replicates, and where D is mostly zeros (a sample with
  one row per cell: ``disjoint``, ``small``) its exact product takes D's non-zero entries
  alone, less work than the floor's;
- ``exact``: the layer's own exact arithmetic alone: every exact product (``exact_product``,
  the statistics' sums with the same bits on any BLAS) and every pass of the rank metrics'
  weighted counts (``weighted_rank_metrics``) that a second run of the layer makes, recorded
  there and replayed one after another. It is the floor of a layer whose tables keep their
  bits, where ``floor`` is that of any product; the rest of the layer (D, the per-seed
  values, the bins' metrics, intervals, tests, trends) is its ratio to it. Not measured for
  a shape with a group multiplied a block of samples at a time (``large``), whose product
  runs through other functions.

Prints per shape the layer's and the floor's wall times and their ratio, their CPU times (all
threads) and their ratio (steadier than wall time on a machine shared with other work), the
layer's peak RSS (of its first run, before anything is recorded), then the exact arithmetic's
wall and CPU times, each as a ratio to the floor and as the layer's ratio to it. Not a test:
pytest does not collect it (tests/benchmarks/, no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from make_warehouse import cell_rows

from relcol.analysis import _bootstrap, statistical_tables
from relcol.analysis._bootstrap import BATCH_ENTRIES, STREAM_BLOCK, STREAM_ENTRIES, sample_groups
from relcol.metrics import bin_index, metric_tables
from relcol.store import CELL

BINS = 15
#: The built-in study's test sets (30 % of 569, 1 797 and 2 000 samples).
DENSE_DATASETS = {"breast_cancer": 171, "digits": 540, "synthetic": 600}
DENSE_MODELS, DENSE_CORRUPTIONS, DENSE_SEVERITIES = 6, 7, (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def dense_rows() -> pl.DataFrame:
    parts = []
    for dataset, samples in DENSE_DATASETS.items():
        for m in range(DENSE_MODELS):
            for c in range(DENSE_CORRUPTIONS):
                for d in DENSE_SEVERITIES:
                    rows = cell_rows("bench", "r", f"model_{m}", f"c{c}", d, samples, 10, 3, 3)
                    parts.append(rows.with_columns(dataset=pl.lit(dataset)))
    return pl.concat(parts)


def disjoint_rows(models: int = 800, samples: int = 500) -> pl.DataFrame:
    return pl.concat(
        cell_rows("bench", "r", f"model_{m}", "mcar", 0.0, samples, 10, 1, 1, m * samples)
        for m in range(models)
    )


def large_rows(samples: int = 500_000) -> pl.DataFrame:
    return pl.concat(
        cell_rows("bench", "r", f"model_{m}", "mcar", d, samples, 10, 1, 1)
        for m in range(2)
        for d in (0.0, 0.5)
    )


def small_rows(models: int = 400, samples: int = 100) -> pl.DataFrame:
    return pl.concat(
        cell_rows("bench", "r", f"model_{m}", f"c{c}", d / 10, samples, 10, 1, 1)
        for m in range(models)
        for c in range(5)
        for d in range(10)
    )


SHAPES = {"dense": dense_rows, "disjoint": disjoint_rows, "small": small_rows, "large": large_rows}


def gemm_shapes(rows: pl.DataFrame) -> list[tuple[int, int]]:
    """(samples, linear statistics) of every group the bootstrap multiplies."""
    cells = rows.group_by(CELL).agg(n=pl.len(), width=bin_index("confidence", bins=BINS).n_unique())
    cells = cells.sort(CELL).with_row_index("cell")
    rows = rows.join(cells.select("cell", *CELL), on=CELL, nulls_equal=True).sort("cell")
    statistics = 6 * cells["width"].to_numpy() + 3 * np.minimum(cells["n"].to_numpy(), BINS) + 6
    shapes = []
    for block in rows.partition_by("dataset", maintain_order=True):
        samples, sid = np.unique(block["sample_id"].to_numpy(), return_inverse=True)
        cell = block["cell"].to_numpy()
        first = int(cell.min())
        count = int(cell.max()) - first + 1
        for cells_of, members in sample_groups(cell - first, sid, count, len(samples)):
            shapes.append((len(members), int(statistics[cells_of + first].sum())))
    return shapes


def floor_seconds(shapes: list[tuple[int, int]], replicates: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``W @ D`` over the shapes, D in batches of at most
    BATCH_ENTRIES."""
    rng = np.random.default_rng(0)
    total = cpu = 0.0
    cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for samples, columns in shapes:
        blocks = [samples]  # W whole, D in column batches
        if samples * (replicates + 1) > STREAM_ENTRIES:  # a block of samples at a time
            span = max(1, STREAM_BLOCK // max(replicates + 1, columns))
            blocks = [span] * (samples // span) + ([samples % span] if samples % span else [])
        for size in blocks:
            step = max(1, min(columns, BATCH_ENTRIES // size))
            key = (size, step)
            if key not in cache:
                w = rng.poisson(1.0, (replicates + 1, size)).astype(np.float64)
                cache[key] = (w, rng.random((size, step)))
            w, d = cache[key]
            for start in range(0, columns, step):
                width = min(step, columns - start)
                t, c = time.perf_counter(), time.process_time()
                w @ d[:, :width]
                total += time.perf_counter() - t
                cpu += time.process_time() - c
    return total, cpu


def exact_seconds(rows: pl.DataFrame, tables: dict, replicates: int) -> dict[str, float]:
    """Wall and CPU seconds of the layer's exact products (``product``, ``product_cpu``) and
    of its rank-count passes (``rank``, ``rank_cpu``) alone: each call of a run of the layer
    recorded with its arguments, then made again one at a time."""
    calls = []

    def recorded(kind, function):
        def call(*args, **kwargs):
            calls.append((kind, function, args, kwargs))
            return function(*args, **kwargs)

        return call

    kinds = {"exact_product": "product", "weighted_rank_metrics": "rank"}
    saved = {name: getattr(_bootstrap, name) for name in kinds}
    for name, function in saved.items():
        setattr(_bootstrap, name, recorded(kinds[name], function))
    try:
        statistical_tables(rows, tables, replicates=replicates, bins=BINS)
    finally:
        for name, function in saved.items():
            setattr(_bootstrap, name, function)
    seconds = dict.fromkeys(["product", "product_cpu", "rank", "rank_cpu"], 0.0)
    for kind, function, args, kwargs in calls:
        t, c = time.perf_counter(), time.process_time()
        function(*args, **kwargs)
        seconds[kind] += time.perf_counter() - t
        seconds[f"{kind}_cpu"] += time.process_time() - c
    return seconds


def one(shape: str, replicates: int) -> dict:
    rows = SHAPES[shape]().drop("proba")
    lazy = metric_tables(rows.lazy(), CELL, bins=BINS, draws=20, proba=None)
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    tables = dict(zip(names, pl.collect_all([lazy[n] for n in names]), strict=True))
    t, c = time.perf_counter(), time.process_time()
    statistical_tables(rows, tables, replicates=replicates, bins=BINS)
    layer, layer_cpu = time.perf_counter() - t, time.process_time() - c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shapes = gemm_shapes(rows)
    floor, floor_cpu = floor_seconds(shapes, replicates)
    exact = dict.fromkeys(["product", "product_cpu", "rank", "rank_cpu"], float("nan"))
    if all(samples * (replicates + 1) <= STREAM_ENTRIES for samples, _ in shapes):
        exact = exact_seconds(rows, tables, replicates)
    return {
        "shape": shape,
        "rows": rows.height,
        "groups": len(shapes),
        "multiply_adds": sum(s * c for s, c in shapes) * (replicates + 1),
        "layer": layer,
        "floor": floor,
        "layer_cpu": layer_cpu,
        "floor_cpu": floor_cpu,
        "peak_mb": peak,
        **exact,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--shapes", default="dense,disjoint")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.replicates)))
        return
    print(f"B = {args.replicates}")
    print(
        f"{'shape':<9} {'rows':>9} {'groups':>6} {'GEMM mult-adds':>15} "
        f"{'layer s':>8} {'floor s':>8} {'ratio':>6} "
        f"{'layer CPU s':>11} {'floor CPU s':>11} {'CPU ratio':>9} {'peak RSS MB':>12}"
    )
    results = []
    for shape in args.shapes.split(","):
        out = subprocess.run(
            [sys.executable, __file__, "--one", shape, "--replicates", str(args.replicates)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        results.append(r)
        print(
            f"{r['shape']:<9} {r['rows']:>9,} {r['groups']:>6} {r['multiply_adds']:>15.3e} "
            f"{r['layer']:>8.2f} {r['floor']:>8.2f} {r['layer'] / r['floor']:>6.2f} "
            f"{r['layer_cpu']:>11.2f} {r['floor_cpu']:>11.2f} "
            f"{r['layer_cpu'] / r['floor_cpu']:>9.2f} {r['peak_mb']:>12,.0f}"
        )
    print("\nthe exact arithmetic alone, replayed (s, then ÷ floor), and the layer ÷ it")
    print(
        f"{'shape':<9} {'':>5} {'products':>15} {'rank passes':>15} {'together':>15} {'layer ÷':>8}"
    )
    for r in results:
        for unit, suffix in (("wall", ""), ("CPU", "_cpu")):
            floor = r[f"floor{suffix}"]
            parts = [r[f"product{suffix}"], r[f"rank{suffix}"]]
            row = f"{r['shape'] if not suffix else '':<9} {unit:>5}"
            for value in [*parts, sum(parts)]:
                row += f" {value:>7.2f} {value / floor:>6.2f}×"
            print(row + f" {r[f'layer{suffix}'] / sum(parts):>7.2f}×")


if __name__ == "__main__":
    main()
