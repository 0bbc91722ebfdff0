"""Benchmark: the differences' tests a block of pairs at a time against all pairs at once.

    python tests/benchmarks/bench_differences.py [--cells 20000] [--pairs 40000] [--metrics 24]

The shape of a study of 400 models × 5 corruptions × 10 severities with B = 1000: each
metric's (cells × B) replicates, and pairs of cells (a model and its reference) whose
replicate differences get a percentile interval and a p-value (``_difference_tests``, on the
bootstrap's threads). Runs it with ``TEST_BLOCK_ENTRIES`` as shipped and with one block of
every pair, alternating, and prints each run's wall time, the best of each, their ratio and
whether the results are the same bits. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relcol.analysis import _bootstrap


def run(available, index, reference, block: int) -> tuple[float, dict]:
    _bootstrap.TEST_BLOCK_ENTRIES = block
    study = np.zeros(len(index), dtype=np.int64)
    start = time.perf_counter()
    out = _bootstrap._difference_tests(available, list(available), index, reference, study, 0.05)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=40_000)
    parser.add_argument("--metrics", type=int, default=24)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    shape = (args.cells, args.replicates)
    available = {f"metric{i}": rng.normal(size=shape) for i in range(args.metrics)}
    available["metric0"][::7, ::3] = np.nan  # rows with undefined replicates too
    index = rng.integers(0, args.cells, args.pairs)
    reference = rng.integers(0, args.cells, args.pairs)
    shipped = _bootstrap.TEST_BLOCK_ENTRIES
    whole, blocks, same = [], [], True
    for _ in range(args.repeats):
        seconds, expected = run(available, index, reference, args.pairs * args.replicates)
        whole.append(seconds)
        seconds, got = run(available, index, reference, shipped)
        blocks.append(seconds)
        same &= all(
            np.array_equal(a, b, equal_nan=True)
            for name in available
            for a, b in zip(expected[name], got[name], strict=True)
        )
        print(f"all pairs at once {whole[-1]:.2f} s, blocks of {shipped} {blocks[-1]:.2f} s")
    print(
        f"best: {min(whole):.2f} s against {min(blocks):.2f} s, "
        f"ratio {min(blocks) / min(whole):.2f}; same bits: {same}"
    )


if __name__ == "__main__":
    main()
