"""Benchmark: a prediction file of many classes against the same rows with few.

    python tests/benchmarks/bench_classes.py [--samples 10000] [--classes 1000] [--baseline 10]
        [--float32]

A vision model's predictions as ``relcol ingest --predictions`` takes them: ``--samples`` test
samples × ``--models`` models × ``--severities`` severities of one corruption (severity 0 the
clean images), each row the softmax of random logits with the true class's logit raised by the
model's sharpness and lowered with the severity, Float64 vectors (``--float32``: Float32, as
most models write them) in a Parquet file of one row group per model and severity. The same
layout is written twice, with ``--classes`` and with ``--baseline`` classes; each file is
ingested into a fresh warehouse and reported (B = ``--bootstrap``) by the ``relcol`` command.

Printed per command: wall time, peak RSS of the command and of it with the workers it starts
(sampled from /proc, Linux); then the ratios of the many classes to the few. The rows are the
same, so a ratio near 1 means the cost does not grow with the classes beyond the vectors' own
size. Not a test: pytest does not collect it (tests/benchmarks/, no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from bench_report import load, peak


def write_file(
    path: Path, samples: int, classes: int, models: int, severities: int, dtype: type
) -> int:
    """The prediction file; returns its row count."""
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, classes, samples)
    offsets = pa.array(np.arange(0, samples * classes + 1, classes, dtype=np.int64))
    writer = None
    for model in range(models):
        sharpness = 4.0 - 1.5 * model
        for severity in range(severities):
            logits = rng.normal(0.0, 1.0, (samples, classes))
            logits[np.arange(samples), y_true] += sharpness - 0.8 * severity
            p = np.exp(1.5 * (logits - logits.max(axis=1, keepdims=True)))
            p /= p.sum(axis=1, keepdims=True)
            table = pa.table(
                {
                    "sample_id": np.arange(samples),
                    "model": [f"model{model}"] * samples,
                    "corruption": ["blur"] * samples,
                    "severity": np.full(samples, float(severity)),
                    "y_true": y_true,
                    "proba": pa.LargeListArray.from_arrays(
                        offsets, pa.array(p.astype(dtype).ravel())
                    ),
                }
            )
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    writer.close()
    return samples * models * severities


def measure(classes: int, args: argparse.Namespace) -> dict[str, tuple[float, float, float]]:
    """(wall s, own GB, with workers GB) of the ingest and the report of one file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.parquet"
        dtype = np.float32 if args.float32 else np.float64
        rows = write_file(path, args.samples, classes, args.models, args.severities, dtype)
        print(f"{classes} classes: {rows:,} rows, {path.stat().st_size / 1e6:.0f} MB ({load()})")
        wh, out = str(Path(tmp) / "wh"), str(Path(tmp) / "report")
        ingest = ("ingest", "--predictions", str(path), "--name", "classes", "--warehouse", wh)
        report = ("report", "--warehouse", wh, "--out", out, "-q")
        found = {
            "ingest": peak(*ingest),
            "report": peak(*report, "--bootstrap", str(args.bootstrap)),
        }
        for name, (seconds, own, tree) in found.items():
            print(f"  {name:7s} {seconds:7.1f} s  {own:5.2f} GB  {tree:5.2f} GB with workers")
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--baseline", type=int, default=10, help="classes of the baseline file")
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--severities", type=int, default=4)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--float32", action="store_true", help="Float32 vectors in the file")
    args = parser.parse_args()
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}")
    few = measure(args.baseline, args)
    many = measure(args.classes, args)
    print(f"{args.classes} classes against {args.baseline}:")
    for name in few:
        (s1, own1, tree1), (s2, own2, tree2) = few[name], many[name]
        print(
            f"  {name:7s} time {s2 / s1:5.2f}x  peak RSS {own2 / own1:5.2f}x ({tree2 / tree1:.2f}x)"
        )


if __name__ == "__main__":
    main()
