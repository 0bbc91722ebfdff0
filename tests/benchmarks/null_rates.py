"""Print how often each verdict of the statistical layer is raised in simulated worlds.

Under the nulls (no degradation of trust) every rate is a false-alarm rate, to be compared
with α + 2 Monte-Carlo standard errors; in the degrading worlds the break point, d* and trend
rates are the power. Usage::

    python tests/benchmarks/null_rates.py [--curves 200] [--replicates 1000] [--seed 11]

Prints a markdown table (one row per verdict, one column per world) and the seeds' agreement.
"""

from __future__ import annotations

import argparse
import platform
import time

from relcol.analysis import DEGRADING, NULLS, world_study


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curves", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    results = []
    for world in (*NULLS, *DEGRADING):
        start = time.perf_counter()
        results.append(
            world_study(world, curves=args.curves, replicates=args.replicates, seed=args.seed)
        )
        print(f"{world.name}: {time.perf_counter() - start:.0f} s", flush=True)
    verdicts = list(dict.fromkeys(v for r in results for v in r.rates))
    print()
    print(
        f"{args.curves} curves per world, B = {args.replicates}, α = 0.05; "
        f"false-alarm target α + 2 SE = {results[0].bound():.3f}; "
        f"{platform.machine()}, {time.strftime('%Y-%m-%d')}"
    )
    print()
    print("| verdict | " + " | ".join(r.world.name for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for verdict in verdicts:
        cells = [f"{r.rates[verdict]:.3f}" if verdict in r.rates else "–" for r in results]
        print(f"| {verdict} | " + " | ".join(cells) + " |")
    print("| seeds agreeing | " + " | ".join(f"{r.agreement:.2f}" for r in results) + " |")


if __name__ == "__main__":
    main()
