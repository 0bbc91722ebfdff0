"""Print how often `relcol monitor`'s alerts fire on simulated streams with known truth, and
what the checks of one stream cost.

On a stable stream every alert is false, so a rate is a false-alarm rate (to be compared with
α = 0.05 plus two Monte-Carlo standard errors); where calibration or confidence changes, the
rate of the check whose truth changed is its power. Usage::

    python tests/benchmarks/monitoring_rates.py [--runs 200] [--seed 0] [--cost-only]

Prints a markdown table of run rates (± standard error) and per-period rates, then the
seconds the 21 checks of one stream of 8 weeks × 1000 predictions take with 499 and 999
permutations (the fastest of three).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import replace

from relcol.analysis import MonitorRules, simulate_monitoring
from relcol.analysis._monitoring import Stream, alerts, simulate_stream

STABLE = Stream("stable, calibrated")
#: (stream, share of --runs) in the order of the table.
STREAMS = (
    (STABLE, 1.0),
    (Stream("stable, overconfident by 0.05", gap=0.05), 1.0),
    (Stream("confidence sharpens ×1.6 from week 5, calibration intact", sharpen=1.6), 1.0),
    (Stream("overconfidence +0.08 from week 5", rise=0.08), 0.5),
    (Stream("overconfidence +0.05 from week 5", rise=0.05), 0.5),
)


def cell(row: dict) -> str:
    rate, se = row["run_rate"], row["run_rate_se"]
    return f"{rate:.3f} ± {se:.3f}" if se > 0 else f"{rate:.3f}"


def cost(permutations: int) -> float:
    import numpy as np

    rows = simulate_stream(STABLE, np.random.default_rng(1))
    rules = MonitorRules(permutations=permutations)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        alerts(rows, rules)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost-only", action="store_true")
    args = parser.parse_args()
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    if not args.cost_only:
        rules = MonitorRules(permutations=499)
        print()
        print("| stream (truth) | runs | `ece_rise` | `mce_rise` | `drift` | any alert |")
        print("|---|---|---|---|---|---|")
        weeks = []
        for stream, share in STREAMS:
            runs = max(1, round(args.runs * share))
            rates = simulate_monitoring(stream, runs, rules, seed=args.seed)
            by = {row["check"]: row for row in rates.iter_rows(named=True)}
            cells = [cell(by[c]) for c in ("ece_rise", "mce_rise", "drift", "any")]
            print(f"| {stream.name} | {runs} | " + " | ".join(cells) + " |", flush=True)
            weeks.append((stream.name, {c: by[c]["period_rate"] for c in by}))
        print()
        print("per monitored week (after the change, or every week of a stable stream):")
        for name, rates in weeks:
            print(f"  {name}: " + ", ".join(f"{c} {r:.3f}" for c, r in rates.items()))
        runs = max(1, args.runs // 2)
        rates = simulate_monitoring(STABLE, runs, replace(rules, correction="none"), seed=args.seed)
        print()
        print(f"{STABLE.name}, --correction none, {runs} runs:")
        for row in rates.iter_rows(named=True):
            print(f"  {row['check']}: runs {cell(row)}, weeks {row['period_rate']:.3f}")
    print()
    for permutations in (499, 999):
        print(f"one stream's 21 checks, {permutations} permutations: {cost(permutations):.2f} s")


if __name__ == "__main__":
    main()
