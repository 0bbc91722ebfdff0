"""How far the bin-level ECE₀ of relcol is from docs/metrics.md's per-row definition.

    python tests/benchmarks/ece_null_error.py [--draws 4000]

For cells of n rows with confidences from a few laws, ECE₀ two ways, both with ``--draws``
Monte Carlo draws: by the definition (zᵢ ~ Bernoulli(cᵢ) for every row, numpy) and by
relcol's bin-level simulation (``relcol.metrics.calibration``; see relcol/metrics/_null.py).
Prints both, their relative difference and the Monte Carlo standard error of that
difference. Not a test (tests/test_metrics_laws.py holds the difference below 4 %).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import polars as pl

from relcol.metrics import calibration

LAWS = {
    "peaked Beta(20,1)": lambda rng, n: rng.beta(20, 1, n),
    "Beta(5,2)": lambda rng, n: rng.beta(5, 2, n),
    "spread Beta(2,2)": lambda rng, n: rng.beta(2, 2, n),
    "kNN-like k/25": lambda rng, n: rng.integers(8, 26, n) / 25,
    "mixture": lambda rng, n: np.where(
        rng.random(n) < 0.8, 1 - rng.beta(1, 60, n), rng.uniform(1 / 3, 1, n)
    ),
}


def per_row(confidence: np.ndarray, bins: int, draws: int, rng) -> tuple[float, float]:
    edges = np.arange(bins + 1) / bins
    b = np.maximum(np.searchsorted(edges, confidence, side="left") - 1, 0)
    totals = np.bincount(b, weights=confidence, minlength=bins)
    eces = np.array(
        [
            np.abs(
                np.bincount(b, weights=rng.random(len(confidence)) < confidence, minlength=bins)
                - totals
            ).sum()
            for _ in range(draws)
        ]
    ) / len(confidence)
    return float(eces.mean()), float(eces.std(ddof=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--bins", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(20240611)
    print(
        f"{'confidences':20s}{'n':>6s}{'per-row':>10s}{'bin-level':>11s}{'diff':>9s}{'± 2 SE':>9s}"
    )
    worst = 0.0
    for law, draw in LAWS.items():
        for n in (30, 100, 300, 1000, 5000):
            c = draw(rng, n)
            exact, sd = per_row(c, args.bins, args.draws, rng)
            frame = pl.DataFrame({"confidence": c, "correct": np.ones(n, dtype=bool)})
            approx = (
                calibration(
                    frame, (), bins=args.bins, draws=args.draws, proba=None, order=(), events=()
                )
                .collect()["ece_null"]
                .item()
            )
            # both means have SE ≈ sd/√R; their difference √2 times that
            se = math.sqrt(2) * sd / math.sqrt(args.draws) / exact
            diff = approx / exact - 1
            worst = max(worst, abs(diff))
            print(f"{law:20s}{n:6d}{exact:10.5f}{approx:11.5f}{diff:+9.2%}{2 * se:9.2%}")
    print(
        f"largest |difference|: {worst:.2%} (R = {args.draws}; with R = 100 the Monte Carlo "
        "error of ECE₀ itself is about ±3 %)"
    )


if __name__ == "__main__":
    main()
