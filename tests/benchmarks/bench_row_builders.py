"""Benchmark: every row-level Polars builder against numpy / scikit-learn on the same rows.

    python tests/benchmarks/bench_row_builders.py [--rows 2000000] [--classes 10] [--repeats 3]

A user of ``relcol.metrics`` writes ``frame.select(aurc())`` or
``frame.group_by("model").agg(auroc(), aurc())``. This times each builder of ``REGISTRY``
(``metric.build(bins=15)``) in ``frame.select`` on one group of synthetic rows (continuous
confidences, so as many confidence levels as rows: the rank metrics' worst case; a
probability vector of ``--classes`` entries per row), against the usual numpy or
scikit-learn computation of the same number on numpy arrays already in memory
(``roc_auc_score``, ``average_precision_score``, ``np.bincount`` over the bins, ...).

Prints per metric the two times (the minimum of ``--repeats``), their ratio and the absolute
difference of the two values (which shows both compute the same number). Not a test: pytest
does not collect it (tests/benchmarks/, no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from relcol.metrics import REGISTRY

BINS = 15
EPS = 1e-15


def synthetic(rows: int, classes: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(rows, classes)) * 2.0
    proba = np.exp(logits)
    proba /= proba.sum(axis=1, keepdims=True)
    y = rng.integers(0, classes, rows)
    predicted = proba.argmax(axis=1)
    return pl.DataFrame(
        {
            "confidence": proba.max(axis=1),
            "correct": predicted == y,
            "y_true": y,
            "proba": pl.Series(proba).cast(pl.Array(pl.Float64, classes)).cast(pl.List(pl.Float64)),
            "sample_id": np.arange(rows),
            "seed": np.zeros(rows, dtype=np.int64),
            "repeat": np.zeros(rows, dtype=np.int64),
        }
    )


def baselines(frame: pl.DataFrame) -> dict[str, Callable[[], float]]:
    """numpy / scikit-learn for each metric, on arrays taken out of ``frame`` beforehand."""
    from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

    c = frame["confidence"].to_numpy()
    z = frame["correct"].to_numpy()
    zf = z.astype(np.float64)
    y = frame["y_true"].to_numpy()
    proba = np.vstack(frame["proba"].to_numpy())
    n = len(c)
    edges = np.arange(BINS + 1) / BINS

    def binned(values: np.ndarray = c) -> np.ndarray:
        return np.clip(np.searchsorted(edges, values, side="left") - 1, 0, BINS - 1)

    def bin_sums() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = binned()
        count = np.bincount(b, minlength=BINS)
        return (
            count,
            np.bincount(b, weights=c, minlength=BINS),
            np.bincount(b, weights=zf, minlength=BINS),
        )

    def gaps() -> tuple[np.ndarray, np.ndarray]:
        count, sc, sz = bin_sums()
        used = count > 0
        return count[used], (sz[used] - sc[used]) / count[used]

    def share(per_bin: Callable[[np.ndarray], np.ndarray]) -> Callable[[], float]:
        """Σ over the non-empty bins of nₘ·per_bin(gapₘ), over n."""

        def value() -> float:
            count, gap = gaps()
            return float((count * per_bin(gap)).sum() / n)

        return value

    def mce_n() -> float:
        count, gap = gaps()
        return float(count[np.abs(gap) >= np.abs(gap).max() - 1e-12].max())

    def ece_debiased() -> float:
        count, sc, sz = bin_sums()
        used = count >= 2
        acc, conf = sz[used] / count[used], sc[used] / count[used]
        term = (acc - conf) ** 2 - acc * (1 - acc) / (count[used] - 1)
        return float(np.sqrt(max((count[used] * term).sum() / n, 0.0)))

    def resolution() -> float:
        count, _, sz = bin_sums()
        used = count > 0
        return float((count[used] * (sz[used] / count[used] - zf.mean()) ** 2).sum() / n)

    def within() -> float:
        b = binned()
        count = np.maximum(np.bincount(b, minlength=BINS), 1)
        dc = c - (np.bincount(b, weights=c, minlength=BINS) / count)[b]
        dz = zf - (np.bincount(b, weights=zf, minlength=BINS) / count)[b]
        return float(np.mean(dc * dc - 2 * dc * dz))

    def ace() -> float:
        order = np.lexsort((frame["repeat"], frame["seed"], frame["sample_id"], c))
        mass = np.empty(n, dtype=np.int64)
        mass[order] = np.arange(n) * BINS // n
        return float(np.abs(np.bincount(mass, weights=zf - c, minlength=BINS)).sum() / n)

    def classwise() -> float:
        onehot = y[:, None] == np.arange(proba.shape[1])[None, :]
        errors = []
        for k in range(proba.shape[1]):
            b = binned(proba[:, k])
            errors.append(
                np.abs(np.bincount(b, weights=onehot[:, k] - proba[:, k], minlength=BINS)).sum() / n
            )
        return float(np.mean(errors))

    def fpr_at_95tpr() -> float:
        fpr, tpr, _ = roc_curve(z, c, drop_intermediate=False)
        return float(fpr[tpr >= 0.95].min())

    def moments() -> tuple[float, float, float, float]:
        right, wrong = c[z], c[~z]
        return right.mean(), wrong.mean(), right.var(ddof=1), wrong.var(ddof=1)

    def cohens_d() -> float:
        m1, m0, v1, v0 = moments()
        return float((m1 - m0) / np.sqrt((v1 + v0) / 2))

    def curve() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        _, inverse = np.unique(-c, return_inverse=True)  # levels, highest first
        size = np.bincount(inverse)
        return size, np.cumsum(size), np.cumsum(np.bincount(inverse, weights=1 - zf))

    def aurc() -> float:
        size, accepted, wrong = curve()
        return float((size * (wrong / accepted)).sum() / n)

    def aurc_optimal() -> float:
        n1 = int(z.sum())
        i = np.arange(n1 + 1, n + 1)
        return float(((i - n1) / i).sum() / n)

    def risk_at_coverage() -> float:
        _, accepted, wrong = curve()
        first = np.argmax(accepted >= 0.8 * n)
        return float(wrong[first] / accepted[first])

    def coverage_at_risk() -> float:
        _, accepted, wrong = curve()
        low = wrong <= 0.05 * accepted
        return float(accepted[low].max() / n) if low.any() else 0.0

    def true_proba() -> np.ndarray:
        return proba[np.arange(n), y]

    clipped = np.clip(c, EPS, 1 - EPS)
    return {
        "accuracy": lambda: float(zf.mean()),
        "mean_confidence": lambda: float(c.mean()),
        "gap": lambda: float(c.mean() - zf.mean()),
        "abs_gap": lambda: float(abs(c.mean() - zf.mean())),
        "ece": share(np.abs),
        "ece_over": share(lambda gap: np.maximum(-gap, 0.0)),
        "ece_under": share(lambda gap: np.maximum(gap, 0.0)),
        "mce": lambda: float(np.abs(gaps()[1]).max()),
        "mce_n": mce_n,
        "ace": ace,
        "rmsce": lambda: float(np.sqrt(share(np.square)())),
        "classwise_ece": classwise,
        "ece_debiased": ece_debiased,
        "brier": lambda: float(
            np.mean(((proba - (y[:, None] == np.arange(proba.shape[1]))) ** 2).sum(axis=1))
        ),
        "brier_top": lambda: float(np.mean((c - zf) ** 2)),
        "brier_reliability": share(np.square),
        "brier_resolution": resolution,
        "brier_uncertainty": lambda: float(zf.mean() * (1 - zf.mean())),
        "brier_within": within,
        "nll": lambda: float(-np.mean(np.log(np.maximum(true_proba(), EPS)))),
        "nll_top": lambda: float(-np.mean(zf * np.log(clipped) + (1 - zf) * np.log(1 - clipped))),
        "auroc": lambda: float(roc_auc_score(z, c)),
        "aupr_success": lambda: float(average_precision_score(z, c)),
        "aupr_error": lambda: float(average_precision_score(~z, -c)),
        "fpr_at_95tpr": fpr_at_95tpr,
        "cohens_d": cohens_d,
        "point_biserial": lambda: float(np.corrcoef(c, zf)[0, 1]),
        "aurc": aurc,
        "aurc_optimal": aurc_optimal,
        "e_aurc": lambda: aurc() - aurc_optimal(),
        "risk_at_coverage": risk_at_coverage,
        "coverage_at_risk": coverage_at_risk,
    }


def best_of(repeats: int, run: Callable[[], object]) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=2e6)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    frame = synthetic(int(args.rows), args.classes)
    numpy_of = baselines(frame)
    print(f"{frame.height:,} rows in one group, {args.classes} classes, minimum of {args.repeats}")
    print(f"{'metric':20s} {'Polars s':>9s} {'numpy s':>9s} {'ratio':>7s} {'|difference|':>13s}")
    for name, metric in REGISTRY.items():
        if metric.expr is None or name not in numpy_of:
            continue
        expression = metric.build(bins=BINS)
        polars_s, ours = best_of(args.repeats, lambda e=expression: frame.select(e).item())
        numpy_s, theirs = best_of(args.repeats, numpy_of[name])
        difference = abs(float(ours) - float(theirs))
        print(
            f"{name:20s} {polars_s:9.3f} {numpy_s:9.3f} {polars_s / numpy_s:7.1f} {difference:13.1e}"
        )


if __name__ == "__main__":
    main()
