"""The realised coverage of every interval relcol prints, on the three laws at three n.

    python tests/benchmarks/coverage_table.py [--studies 500] [--replicates 1000] [--n 100 300 1000]
    python tests/benchmarks/coverage_table.py --differences [--n 100 300]

For each law of ``relcol.analysis.LAWS`` and each n, ``--studies`` independent simulated
studies of n test samples go through the report's code (``coverage_study``); prints, as
markdown, the share of studies whose 95 % interval holds the population value, for every
metric with replicates (those relcol prints without an interval measured with the
percentile interval they would get), then the per-bin accuracy intervals by the bin's
distinct samples. A coverage outside [0.93, 0.97] is marked ✗. Takes about 10 minutes on
2 cores with the defaults. Not a test (tests/test_coverage.py asserts the decisive cells).

With ``--differences``: the coverage of the model-vs-model difference intervals
(``difference_coverage_study``) in the designs paired, disjoint and null at each n, and the
null's rejection rate at α = 0.05 (tests/test_difference_coverage.py asserts n = 300).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import polars as pl

from relcol.analysis import LAWS, coverage_study, difference_coverage_study
from relcol.analysis._bootstrap import INTERVAL_METRICS, MIN_BIN_SAMPLES, proportion_interval
from relcol.analysis._coverage import METRICS
from relcol.analysis._difference_coverage import DESIGNS

LOW, HIGH = 0.93, 0.97
#: Buckets of a bin's distinct samples for the per-bin table.
BUCKETS = ((1, 5), (5, 10), (10, 20), (20, 50), (50, 10**9))


def mark(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "–"
    return f"{p:.3f}" + ("" if LOW <= p <= HIGH else " ✗")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--n", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--differences", action="store_true")
    args = parser.parse_args()
    if args.differences:
        differences(args)
        return
    settings = [(law, n) for law in LAWS for n in args.n]
    results, start = {}, time.perf_counter()
    for i, (law, n) in enumerate(settings):
        results[law, n] = coverage_study(
            args.studies, n, law=law, replicates=args.replicates, seed=1000 * i + n
        )
    elapsed = time.perf_counter() - start
    header = " | ".join(f"{law} {n}" for law, n in settings)
    print(f"| metric | interval | {header} |")
    print("|---|---|" + "---|" * len(settings))
    for metric in METRICS:
        printed = "yes" if metric in INTERVAL_METRICS else "no"
        cells = " | ".join(mark(results[s].coverage[metric]) for s in settings)
        print(f"| {metric} | {printed} | {cells} |")
    for binning in ("width", "mass"):
        for method in ("rule", "percentile"):
            name = "Wilson" if method == "rule" else "percentile"
            cells = " | ".join(
                mark(results[s].bin_coverage(binning, MIN_BIN_SAMPLES)[method]) for s in settings
            )
            print(f"| bin accuracy ({binning}, {name}, ≥ {MIN_BIN_SAMPLES} samples) | | {cells} |")
    print()
    print(
        f"{args.studies} studies per setting, B = {args.replicates}, α = 0.05; Monte Carlo SE "
        f"of a coverage near 0.95: {math.sqrt(0.95 * 0.05 / args.studies):.4f}; "
        f"{elapsed:.0f} s."
    )
    print()
    print(
        "Per-bin accuracy intervals by the bin's distinct samples (all settings pooled; Wilson "
        f"on every bin, though relcol prints none below {MIN_BIN_SAMPLES} samples):"
    )
    print()
    print("| binning | samples | bins | Wilson | percentile |")
    print("|---|---|---|---|---|")
    bins = pl.concat([r.bin_table for r in results.values()])
    for binning in ("width", "mass"):
        for low, high in BUCKETS:
            chosen = bins.filter(
                (pl.col("binning") == binning) & pl.col("n").is_between(low, high, closed="left")
            )
            if chosen.is_empty():
                continue
            # Wilson on every bin, below MIN_BIN_SAMPLES too (where relcol prints none)
            lo, hi = proportion_interval(chosen["accuracy"].to_numpy(), chosen["n"].to_numpy())
            truth = chosen["truth"].to_numpy()
            wilson = float(np.mean((lo <= truth) & (truth <= hi)))
            percentile = chosen.select(
                (
                    (pl.col("percentile_lo") <= pl.col("truth"))
                    & (pl.col("truth") <= pl.col("percentile_hi"))
                ).mean()
            ).item()
            label = f"{low}–{high - 1}" if high < 10**9 else f"≥ {low}"
            print(
                f"| {binning} | {label} | {chosen.height} | {mark(wilson)} | {mark(percentile)} |"
            )


def differences(args: argparse.Namespace) -> None:
    """The model-vs-model differences' coverage table (and the null's rejection rate)."""
    settings = [(design, n) for design in DESIGNS for n in args.n]
    start = time.perf_counter()
    results = {
        (design, n): difference_coverage_study(
            args.studies, n, design=design, replicates=args.replicates, seed=100 * i + n
        )
        for i, (design, n) in enumerate(settings)
    }
    elapsed = time.perf_counter() - start
    nulls = [s for s in settings if s[0] == "null"]
    header = " | ".join(f"{design} {n}" for design, n in settings)
    rejections = " | ".join(f"null {n} p ≤ α" for _, n in nulls)
    print(f"| metric | interval | {header} | {rejections} |")
    print("|---|---|" + "---|" * (len(settings) + len(nulls)))
    for metric in METRICS:
        printed = "yes" if metric in INTERVAL_METRICS else "no"
        cells = " | ".join(mark(results[s].coverage[metric]) for s in settings)
        rates = " | ".join(f"{results[s].rejection[metric]:.3f}" for s in nulls)
        print(f"| {metric} | {printed} | {cells} | {rates} |")
    print()
    print(
        f"{args.studies} studies per setting, B = {args.replicates}, α = 0.05; Monte Carlo SE "
        f"of a coverage near 0.95: {math.sqrt(0.95 * 0.05 / args.studies):.4f}; "
        f"{elapsed:.0f} s."
    )


if __name__ == "__main__":
    main()
