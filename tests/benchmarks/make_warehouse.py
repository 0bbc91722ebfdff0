"""Make a synthetic warehouse of any size for scale benchmarks.

    python tests/benchmarks/make_warehouse.py WAREHOUSE --rows 100_000_000 [--cells 500] [--classes 10]

Writes one study (``synthetic-<rows>``) through the ordinary staging and atomic
commit, so the result is a real warehouse: 10 models × 5 corruptions × 10
severities = 500 cells, each with 5 seeds × 4 repeats over a shared set of
sample_ids. Confidences follow a Beta law whose spread grows with severity and
correctness is drawn from a known miscalibration, so metrics are non-trivial.
Parts are written in chunks of about 2·10⁶ rows; memory stays flat.
"""

from __future__ import annotations

import argparse
import time
import zlib
from datetime import UTC, datetime

import numpy as np
import polars as pl

import relcol

MODELS = [f"model_{i}" for i in range(10)]
CORRUPTIONS = ["mcar", "mar", "mnar", "gaussian_noise", "label_noise"]
SEVERITIES = [round(0.1 * i, 1) for i in range(10)]
SEEDS, REPEATS = 5, 4


def make(warehouse: str, rows: int, classes: int = 10, chunk: int = 2_000_000) -> str:
    cells = len(MODELS) * len(CORRUPTIONS) * len(SEVERITIES)
    samples = max(1, rows // (cells * SEEDS * REPEATS))
    name = f"synthetic-{rows}"
    wh = relcol.open_warehouse(warehouse)
    started = datetime.now(UTC)
    grid = [(m, c, d) for m in MODELS for c in CORRUPTIONS for d in SEVERITIES]
    per_chunk = max(1, chunk // (samples * SEEDS * REPEATS))
    with wh.ingest(name, replace=True) as staging:
        for start in range(0, len(grid), per_chunk):
            parts = [
                _cell(name, staging.run_id, m, c, d, samples, classes)
                for m, c, d in grid[start : start + per_chunk]
            ]
            staging.write_part(pl.concat(parts))
        staging.write_run(
            kind="synthetic",
            spec=f"rows={rows}",
            versions={},
            started_at=started,
            cells=cells,
        )
    return name


def _cell(
    study: str,
    run_id: str,
    model: str,
    corruption: str,
    severity: float,
    samples: int,
    classes: int,
) -> pl.DataFrame:
    key = zlib.crc32(repr((model, corruption, severity)).encode())
    rng = np.random.default_rng(key)
    n = samples * SEEDS * REPEATS
    a = 8.0 - 6.0 * severity
    confidence = np.clip(rng.beta(a, 1.5, n), 1.0 / classes, 1.0)
    truth = confidence ** (1.0 + 2.0 * severity)  # overconfident, more so with severity
    correct = rng.random(n) < truth
    y_true = rng.integers(0, classes, n, dtype=np.int32)
    y_pred = np.where(
        correct, y_true, (y_true + 1 + rng.integers(0, classes - 1, n)) % classes
    ).astype(np.int32)
    return pl.DataFrame(
        {
            "study": study,
            "dataset": "synthetic",
            "model": model,
            "corruption": corruption,
            "severity": np.full(n, severity),
            "seed": np.repeat(np.arange(SEEDS, dtype=np.int32), samples * REPEATS),
            "repeat": np.tile(np.repeat(np.arange(REPEATS, dtype=np.int32), samples), SEEDS),
            "sample_id": np.tile(np.arange(samples, dtype=np.int64), SEEDS * REPEATS),
            "label": pl.Series(values=None, dtype=pl.Int32).extend_constant(None, n),
            "y_true": y_true,
            "y_clean": y_true,
            "y_pred": y_pred,
            "confidence": confidence,
            "correct": correct,
            "proba": pl.Series(values=None, dtype=pl.List(pl.Float32)).extend_constant(None, n),
            "run_id": run_id,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse")
    parser.add_argument("--rows", type=lambda s: int(float(s)), default=10_000_000)
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args()
    t = time.perf_counter()
    name = make(args.warehouse, args.rows, args.classes)
    print(f"study {name}: {args.rows:,} rows requested, written in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
