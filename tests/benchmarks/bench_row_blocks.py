"""Benchmark: row-wise steps on the replicates a block of rows at a time against all at once.

    python tests/benchmarks/bench_row_blocks.py [--cells 20000] [--pairs 40000] [--metrics 24]

The shape of a study of 400 models × 5 corruptions × 10 severities with B = 1000: each
metric's (cells × B) replicates. Times two steps with ``ROW_BLOCK_ENTRIES`` as shipped and
with one block of every row, alternating: the percentile intervals of every metric's
replicates (``percentile_interval``, on one thread), and the differences' tests of pairs of
cells (a model and its reference: ``_difference_tests``, on the bootstrap's threads). Prints
each run's wall time, the best of each, their ratio and whether the results are the same
bits. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from relcol.analysis import _bootstrap


def timed(step, block: int) -> tuple[float, list[np.ndarray]]:
    _bootstrap.ROW_BLOCK_ENTRIES = block
    start = time.perf_counter()
    out = step()
    return time.perf_counter() - start, out


def compare(label: str, step, rows: int, replicates: int, repeats: int) -> None:
    shipped = _bootstrap.ROW_BLOCK_ENTRIES
    whole, blocks, same = [], [], True
    for _ in range(repeats):
        seconds, expected = timed(step, rows * replicates)
        whole.append(seconds)
        seconds, got = timed(step, shipped)
        blocks.append(seconds)
        same &= all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(expected, got, strict=True)
        )
        print(f"{label}: all rows at once {whole[-1]:.2f} s, blocks {blocks[-1]:.2f} s")
    _bootstrap.ROW_BLOCK_ENTRIES = shipped
    print(
        f"{label}: best {min(whole):.2f} s against {min(blocks):.2f} s, "
        f"ratio {min(blocks) / min(whole):.2f}; same bits: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=40_000)
    parser.add_argument("--metrics", type=int, default=24)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    shape = (args.cells, args.replicates)
    available = {f"metric{i}": rng.normal(size=shape) for i in range(args.metrics)}
    available["metric0"][::7, ::3] = np.nan  # rows with undefined replicates too
    index = rng.integers(0, args.cells, args.pairs)
    reference = rng.integers(0, args.cells, args.pairs)
    study = np.zeros(args.pairs, dtype=np.int64)

    def intervals() -> list[np.ndarray]:
        return [b for v in available.values() for b in _bootstrap.percentile_interval(v)]

    def tests() -> list[np.ndarray]:
        out = _bootstrap._difference_tests(
            available, list(available), index, reference, study, 0.05
        )
        return [a for name in available for a in out[name]]

    compare("intervals", intervals, args.cells, args.replicates, args.repeats)
    compare("differences' tests", tests, args.pairs, args.replicates, args.repeats)


if __name__ == "__main__":
    main()
