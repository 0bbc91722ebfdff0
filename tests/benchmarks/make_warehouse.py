"""Make a synthetic warehouse of any size for scale benchmarks.

    python tests/benchmarks/make_warehouse.py WAREHOUSE --rows 100_000_000 [--classes 10]
    python tests/benchmarks/make_warehouse.py WAREHOUSE --rows 400_000 --models 800 \
        --corruptions 1 --severities 1 --seeds 1 --repeats 1 --disjoint

Writes one study (``synthetic-<rows>``) through the ordinary staging and atomic
commit, so the result is a real warehouse: by default 10 models × 5 corruptions × 10
severities = 500 cells, each with 5 seeds × 4 repeats over a shared set of
sample_ids; ``--disjoint`` gives each model its own test samples (sample_ids that no
other model has), the shape of many models each evaluated on its own test set. Confidences follow a Beta law whose spread grows with severity and
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


def make(
    warehouse: str,
    rows: int,
    classes: int = 10,
    chunk: int = 2_000_000,
    *,
    models: int = len(MODELS),
    corruptions: int = len(CORRUPTIONS),
    severities: int = len(SEVERITIES),
    seeds: int = SEEDS,
    repeats: int = REPEATS,
    disjoint: bool = False,
) -> str:
    grid = cell_grid(models, corruptions, severities)
    samples = max(1, rows // (len(grid) * seeds * repeats))
    name = f"synthetic-{rows}"
    wh = relcol.open_warehouse(warehouse)
    started = datetime.now(UTC)
    per_chunk = max(1, chunk // (samples * seeds * repeats))
    with wh.ingest(name, replace=True) as staging:
        for start in range(0, len(grid), per_chunk):
            parts = [
                cell_rows(
                    name,
                    staging.run_id,
                    m,
                    c,
                    d,
                    samples,
                    classes,
                    seeds,
                    repeats,
                    first_sample=_first_sample(m, samples, disjoint),
                )
                for m, c, d in grid[start : start + per_chunk]
            ]
            staging.write_part(pl.concat(parts))
        staging.write_run(
            kind="synthetic",
            spec=f"rows={rows}",
            versions={},
            started_at=started,
            cells=len(grid),
        )
    return name


def cell_grid(models: int, corruptions: int, severities: int) -> list[tuple[str, str, float]]:
    """(model, corruption, severity) of every cell: ``models`` models (``model_<i>``), the
    first ``corruptions`` corruptions (past ``CORRUPTIONS``, ``corruption_<i>``) and
    ``severities`` severities (the first of ``SEVERITIES``, or, for more than it holds, that
    many evenly spaced over its range)."""
    names = MODELS if models == len(MODELS) else [f"model_{i}" for i in range(models)]
    kinds = CORRUPTIONS + [f"corruption_{i}" for i in range(len(CORRUPTIONS), corruptions)]
    grid = (
        SEVERITIES[:severities]
        if severities <= len(SEVERITIES)
        else [round(SEVERITIES[-1] * i / (severities - 1), 6) for i in range(severities)]
    )
    return [(m, c, d) for m in names for c in kinds[:corruptions] for d in grid]


def _first_sample(model: str, samples: int, disjoint: bool) -> int:
    return int(model.rsplit("_", 1)[1]) * samples if disjoint else 0


def cell_rows(
    study: str,
    run_id: str,
    model: str,
    corruption: str,
    severity: float,
    samples: int,
    classes: int,
    seeds: int = SEEDS,
    repeats: int = REPEATS,
    first_sample: int = 0,
) -> pl.DataFrame:
    """One cell's rows: ``seeds`` × ``repeats`` × ``samples`` rows on sample_ids
    ``first_sample`` … ``first_sample + samples − 1``."""
    key = zlib.crc32(repr((model, corruption, severity)).encode())
    rng = np.random.default_rng(key)
    n = samples * seeds * repeats
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
            "seed": np.repeat(np.arange(seeds, dtype=np.int32), samples * repeats),
            "repeat": np.tile(np.repeat(np.arange(repeats, dtype=np.int32), samples), seeds),
            "sample_id": np.tile(
                np.arange(first_sample, first_sample + samples, dtype=np.int64), seeds * repeats
            ),
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
    parser.add_argument("--models", type=int, default=len(MODELS))
    parser.add_argument("--corruptions", type=int, default=len(CORRUPTIONS))
    parser.add_argument("--severities", type=int, default=len(SEVERITIES))
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument(
        "--disjoint", action="store_true", help="each model on its own test samples"
    )
    args = parser.parse_args()
    t = time.perf_counter()
    name = make(
        args.warehouse,
        args.rows,
        args.classes,
        models=args.models,
        corruptions=args.corruptions,
        severities=args.severities,
        seeds=args.seeds,
        repeats=args.repeats,
        disjoint=args.disjoint,
    )
    print(f"study {name}: {args.rows:,} rows requested, written in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
