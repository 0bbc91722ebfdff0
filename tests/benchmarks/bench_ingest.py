"""How much of an ingest's wall time is relcol's own overhead (everything but fit and predict).

    python tests/benchmarks/bench_ingest.py [--study FILE] [--jobs N]

Runs a study (default: the built-in one) into a temporary warehouse with timers
around the model fits and predictions, and prints the split. Target (issue:
robustness and scale): overhead under 25 % of ingest wall time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import relcol
from relcol.models import _zoo
from relcol.study import _runner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, default=None)
    args = parser.parse_args()

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
        result = relcol.ingest(args.study, Path(tmp) / "wh")
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
