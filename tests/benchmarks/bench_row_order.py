"""A prediction file's rows in two orders: each model's rows together, or interleaved.

    python tests/benchmarks/bench_row_order.py [--models 40] [--samples 150_000] [--repeats 1]

Writes one file of M models' predictions of the same S samples of a 10-class problem (one
row per model and sample: ``sample_id``, ``model``, ``y_true``, ``y_pred``, ``confidence``)
twice: with each model's rows one after the other (``grouped``), and sample after sample,
every sample's M rows together (``interleaved``, as a file written while looping over the
test set would be). Each is ingested (``relcol ingest --predictions``) into a warehouse of its
own and reported (``relcol report``, B = 1000), the two orders in alternation, ``--repeats``
times. Prints each command's wall time and peak RSS (with the processes it starts), the
interleaved ÷ grouped ratios, and how far the two reports' tables are apart: their keys and
counts, and the largest difference of any other number relative to its column.

The two orders hold the same predictions, so every difference is the rows' order: the read
of a chunk of cells cannot skip a Parquet row group where every group holds every model, and
a sum of floating-point numbers may round otherwise when added in another order.
Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from bench_report import load, peak

ORDERS = ("grouped", "interleaved")


def prediction_file(folder: Path, models: int, samples: int, classes: int = 10) -> dict:
    """The file in both orders (paths by order): confidences from a Beta law, correct with
    probability 0.9·c, so that every model is overconfident."""
    rng = np.random.default_rng(0)
    n = models * samples
    sample = np.repeat(np.arange(samples), models)  # interleaved: sample after sample
    model = np.tile(np.arange(models), samples)
    y = rng.integers(0, classes, samples)[sample]
    confidence = rng.beta(5, 2, n) * 0.9 + 0.1
    correct = rng.uniform(size=n) < 0.9 * confidence
    wrong = (y + 1 + rng.integers(0, classes - 1, n)) % classes
    names = pl.Series([f"m{k:03d}" for k in range(models)])
    rows = pl.DataFrame(
        {
            "sample_id": sample,
            "model": names.gather(model),
            "y_true": y,
            "y_pred": np.where(correct, y, wrong),
            "confidence": confidence,
        }
    )
    paths = {order: folder / f"{order}.parquet" for order in ORDERS}
    rows.write_parquet(paths["interleaved"])
    rows.sort("model", maintain_order=True).write_parquet(paths["grouped"])
    return paths


def farthest(first: Path, second: Path) -> tuple[int, int, float]:
    """(tables, tables whose keys, counts, shape or missing values differ, the largest
    difference of any other number relative to the largest magnitude in its column) between
    two reports' Parquet tables. Relative to the column, since a difference of two close
    numbers (a model against another) would turn an ulp of its terms into a large share of
    itself."""
    tables, unlike, largest = 0, 0, 0.0
    for path in sorted(first.glob("*.parquet")):
        a, b = pl.read_parquet(path), pl.read_parquet(second / path.name)
        tables += 1
        floats = [c for c, t in a.schema.items() if t.is_float()]
        exact = [c for c in a.columns if c not in floats]
        if a.shape != b.shape or not a.select(exact).equals(b.select(exact)):
            unlike += 1
            continue
        for column in floats:
            x, y = a[column].to_numpy(), b[column].to_numpy()
            if not np.array_equal(np.isfinite(x), np.isfinite(y)):
                unlike += 1
                break
            finite = np.isfinite(x)
            if finite.any():
                scale = max(float(np.max(np.abs(x[finite]))), np.finfo(float).tiny)
                difference = float(np.max(np.abs(x[finite] - y[finite])))
                largest = max(largest, difference / scale)
    return tables, unlike, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--samples", type=int, default=150_000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="relcol-order-") as tmp:
        folder = Path(tmp)
        paths = prediction_file(folder, args.models, args.samples)
        print(
            f"{args.models} models × {args.samples:,} samples = {args.models * args.samples:,} rows"
        )
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.repeats):
            for order in ORDERS:
                warehouse, out = folder / f"wh-{order}", folder / f"report-{order}"
                before = load()
                ingest = peak(
                    "ingest",
                    "--warehouse",
                    str(warehouse),
                    "--predictions",
                    str(paths[order]),
                    "--name",
                    "ext",
                    "--dataset",
                    "synth",
                    "--replace",
                )
                report = peak("report", "--warehouse", str(warehouse), "--out", str(out))
                for step, (wall, _, tree) in (("ingest", ingest), ("report", report)):
                    times.setdefault((step, order), []).append((wall, tree))
                    print(f"{step:7s}{order:12s}{wall:8.1f} s {tree:6.2f} GB  ({before})")
        for step in ("ingest", "report"):
            grouped = min(times[step, "grouped"])
            interleaved = min(times[step, "interleaved"])
            print(
                f"{step}: interleaved ÷ grouped {interleaved[0] / grouped[0]:.2f}× wall, "
                f"{interleaved[1] / grouped[1]:.2f}× peak memory (best runs)"
            )
        tables, unlike, largest = farthest(folder / "report-grouped", folder / "report-interleaved")
        print(
            f"report tables: {tables}, {unlike} with other keys, counts, shape or missing "
            f"values; the largest difference of any other number, relative to its column's "
            f"largest magnitude: {largest:.1e}"
        )


if __name__ == "__main__":
    main()
