"""Benchmark: row-wise steps on the replicates, as shipped against their plain forms.

    python tests/benchmarks/bench_row_blocks.py [--cells 20000] [--pairs 40000] [--metrics 24]

The shape of a study of 400 models × 5 corruptions × 10 severities with B = 1000: each
metric's (cells × B) replicates. Times three steps as shipped and in their plain form,
alternating: the percentile intervals of every metric's replicates (``percentile_interval``,
on one thread) and the differences' tests of pairs of cells (a model and its reference:
``_difference_tests``, on the bootstrap's threads), each a block of ``ROW_BLOCK_ENTRIES`` at
a time against every row at once; and the trends of the 2 000 curves of 10 severities
(``trends``), each replicate's ranks by the compiled ``mid_ranks`` against scipy's
``rankdata``. Prints each run's wall time, the best of each, their ratio and whether the
results are the same bits. Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from relcol.analysis import _bootstrap, _trends


def timed(step, module, setting: str, value: int) -> tuple[float, list[np.ndarray]]:
    setattr(module, setting, value)
    start = time.perf_counter()
    out = step()
    return time.perf_counter() - start, out


def compare(label: str, step, module, setting: str, plain: int, repeats: int) -> None:
    """``step`` with ``module.setting`` at ``plain`` and as shipped, in turn."""
    shipped = getattr(module, setting)
    before, after, same = [], [], True
    for _ in range(repeats):
        seconds, expected = timed(step, module, setting, plain)
        before.append(seconds)
        seconds, got = timed(step, module, setting, shipped)
        after.append(seconds)
        pairs = zip(expected, got, strict=True)
        same &= all(np.array_equal(a, b, equal_nan=True) for a, b in pairs)
        print(f"{label}: plain {before[-1]:.2f} s, as shipped {after[-1]:.2f} s")
    setattr(module, setting, shipped)
    print(
        f"{label}: best {min(before):.2f} s against {min(after):.2f} s, "
        f"ratio {min(after) / min(before):.2f}; same bits: {same}"
    )


def replicates_of(available: dict[str, np.ndarray], severities: int) -> _bootstrap.Replicates:
    """Replicates of curves of ``severities`` cells each (5 corruptions per model), the
    arrays of ``available`` as the trend metrics' replicates and their row means as points."""
    cells = len(next(iter(available.values())))
    curve, step = np.divmod(np.arange(cells), severities)
    frame = pl.DataFrame(
        {
            "study": "s",
            "dataset": "d",
            "model": [f"m{c // 5}" for c in curve],
            "corruption": [f"c{c % 5}" for c in curve],
            "severity": step / severities,
            "label": pl.Series([None] * cells, dtype=pl.Int32),
        }
    )
    values = dict(zip(_trends.TREND_METRICS, available.values(), strict=False))
    points = {name: np.nanmean(array, axis=1) for name, array in values.items()}
    width = next(iter(values.values())).shape[1]
    return _bootstrap.Replicates(frame, values, points, _bootstrap._empty_seeds(), width, 0, 0)


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
    result = replicates_of(available, severities=10)

    def intervals() -> list[np.ndarray]:
        return [b for v in available.values() for b in _bootstrap.percentile_interval(v)]

    def tests() -> list[np.ndarray]:
        out = _bootstrap._difference_tests(
            available, list(available), index, reference, study, 0.05
        )
        return [a for name in available for a in out[name]]

    def trends() -> list[np.ndarray]:
        table = _trends.trends(result)
        return [table[c].to_numpy() for c in ("spearman_rho", "rho_lo", "rho_hi", "p_value")]

    every = max(args.cells, args.pairs) * args.replicates  # one block of every row
    compare("intervals", intervals, _bootstrap, "ROW_BLOCK_ENTRIES", every, args.repeats)
    compare("differences' tests", tests, _bootstrap, "ROW_BLOCK_ENTRIES", every, args.repeats)
    compare("trends", trends, _trends, "SHORT_ROWS", 0, args.repeats)


if __name__ == "__main__":
    main()
