"""Benchmark: a frozen model's predictions in blocks of rows against one call on every row.

    python tests/benchmarks/bench_predict.py [--repeats 3] [--copies 15]

For every model of the zoo that predicts in blocks (``Recipe.predict_bytes``), on every
dataset of the built-in study and on a wide one (``synthetic`` with 200 features, 10
classes), one after the other in this process as an ingest's worker takes them: fits the
model once on clean training data (seed 0), stacks ``--copies`` copies of the test set with
30 % of the cells missing (what an ingest predicts per corruption: every severity and repeat
at once), and times ``FrozenModel.predict_proba`` (in blocks) against the estimator's own
``predict_proba`` on all the rows in one call, alternating, the minimum of ``--repeats``
each, on one thread as the ingest runs them. Prints each time, their ratio and whether both
gave the same bits. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from threadpoolctl import threadpool_limits

from relcol.data import DatasetSpec, load_dataset
from relcol.models import ZOO, ModelSpec, fit_frozen
from relcol.study import load_study

#: Beside the built-in study's datasets: wide data, where the blocks matter.
WIDE = DatasetSpec(
    "synthetic",
    {"n_samples": 3000, "n_features": 200, "n_informative": 30, "n_classes": 10, "random_state": 0},
)


def timed(predict, rows: np.ndarray) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = predict(rows)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--copies", type=int, default=15)
    args = parser.parse_args()
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.machine()}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'model':24s} {'dataset':14s} {'rows':>6s} {'features':>8s} {'one call s':>10s} "
          f"{'blocks s':>9s} {'ratio':>6s}  same bits")  # fmt: skip
    study = load_study()  # the built-in study
    datasets = {spec.name: spec for spec in study.datasets} | {"wide": WIDE}
    with threadpool_limits(limits=1):
        for name, recipe in ZOO.items():
            if recipe.predict_bytes is None:
                continue
            for dataset, spec in datasets.items():
                data = load_dataset(spec, test_size=study.test_size, split_seed=study.split_seed)
                model = fit_frozen(
                    ModelSpec(name, name), data.X_train, data.y_train, seed=0,
                    n_classes=data.n_classes,
                )  # fmt: skip
                rows = np.tile(data.X_test, (args.copies, 1))
                rows[np.random.default_rng(0).random(rows.shape) < 0.3] = np.nan
                whole = blocks = np.inf
                for _ in range(args.repeats):  # alternating, so both see the same machine
                    t, one = timed(model.estimator.predict_proba, rows)
                    whole = min(whole, t)
                    t, blocked = timed(model.predict_proba, rows)
                    blocks = min(blocks, t)
                same = np.array_equal(blocked[:, model.estimator.classes_], one)
                print(
                    f"{name:24s} {dataset:14s} {len(rows):6d} {rows.shape[1]:8d} {whole:10.3f} "
                    f"{blocks:9.3f} {blocks / whole:6.2f}  {same}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
