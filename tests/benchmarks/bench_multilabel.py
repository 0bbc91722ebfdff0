"""Benchmark: the report of a multi-label study, and its intervals with the layer's replicates.

    python tests/benchmarks/bench_multilabel.py [--labels 300] [--samples 10000] [--models 2]
        [--bootstrap 1000]

A multi-label prediction file as ``relcol ingest --predictions`` takes it: ``--samples``
samples × ``--labels`` labels × ``--models`` models, one row per (model, sample, label) with
``y_true`` drawn from a logistic model of a per-label base rate and a per-row logit, and the
model's ``probability`` a sharpened (or flattened) logistic of the same logit. Each model and
label is a cell of its own, on every sample: one row per sample and cell.

Timed, in one run:

- ``ingest``: ``relcol ingest --predictions`` into a fresh warehouse;
- ``report``: ``relcol report --bootstrap B`` (wall time, peak RSS of the command and of it
  with the worker that draws figures);
- the multi-label intervals (``relcol.analysis.multilabel_intervals``, both modes, per label,
  micro and macro) on their own, drawn whole (``alone``) and handed the statistical layer's
  replicates of the same study (``reusing``, as the report does: the per-label cells of the
  prediction-confidence mode taken from them, the micro cells drawn), with their ratio; the
  two must give the same table, which is checked. The layer's own bootstrap is timed too
  (``layer``), with the options the report gives it.

Not a test: pytest does not collect it (tests/benchmarks/, no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from bench_report import command, load, peak

import relcol
from relcol.analysis import bootstrap, multilabel_intervals, multilabel_pairs


def write_file(path: Path, labels: int, samples: int, models: int) -> int:
    """The prediction file; returns its row count."""
    rng = np.random.default_rng(0)
    sample = np.repeat(np.arange(samples), labels)
    label = np.tile(np.arange(labels), samples)
    base = rng.normal(-1.5, 1.0, labels)[label]
    parts = []
    for model in range(models):
        logit = base + rng.normal(0.0, 1.5, samples * labels)
        y_true = rng.random(samples * labels) < 1 / (1 + np.exp(-logit))
        sharpness = 1.0 + model  # the first calibrated, the others overconfident
        parts.append(
            pl.DataFrame(
                {
                    "model": f"model_{model}",
                    "sample_id": sample,
                    "label": np.char.add("label_", label.astype(str)),
                    "y_true": y_true.astype(np.int8),
                    "probability": 1 / (1 + np.exp(-sharpness * logit)),
                }
            )
        )
    frame = pl.concat(parts)
    frame.write_parquet(path)
    return frame.height


def timed(run) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = run()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=100)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = write_file(folder / "labels.parquet", args.labels, args.samples, args.models)
        cells = args.labels * args.models
        print(f"{rows:,} rows: {args.models} models × {args.labels} labels ({cells} cells) × "
              f"{args.samples} samples, B = {args.bootstrap}")  # fmt: skip
        warehouse = str(folder / "wh")
        seconds = command(
            "ingest", "--warehouse", warehouse, "--predictions",
            str(folder / "labels.parquet"), "--name", "labels",
        )  # fmt: skip
        print(f"ingest            {seconds:8.1f} s")
        wall, own, tree = peak(
            "report", "--warehouse", warehouse, "--out", str(folder / "report"),
            "--bootstrap", str(args.bootstrap),
        )  # fmt: skip
        print(
            f"report            {wall:8.1f} s, peak RSS {own:.2f} GB ({tree:.2f} GB with workers)"
        )

        wh = relcol.open_warehouse(warehouse)
        predictions = wh.predictions("labels")
        pairs = multilabel_pairs(predictions).collect()
        options = {"replicates": args.bootstrap, "bins": 15, "seed": 0}
        wall, cpu, layer = timed(
            lambda: bootstrap(predictions, bin_replicates=("width",), curve_points=100, **options)
        )
        print(f"layer             {wall:8.1f} s wall {cpu:8.1f} s CPU")
        alone = timed(lambda: multilabel_intervals(pairs, **options))
        reusing = timed(lambda: multilabel_intervals(pairs, drawn=[layer], **options))
        for name, (wall, cpu, _) in (("alone", alone), ("reusing", reusing)):
            print(f"intervals {name:8s}{wall:8.1f} s wall {cpu:8.1f} s CPU")
        print(
            f"reusing ÷ alone   {reusing[0] / alone[0]:8.2f} wall {reusing[1] / alone[1]:8.2f} CPU"
        )
        if not alone[2].equals(reusing[2]):
            raise SystemExit("the intervals differ with the layer's replicates")
        print("the same intervals either way")


if __name__ == "__main__":
    main()
