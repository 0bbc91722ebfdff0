"""The numpy twins of the metric builders, for arrays of many groups at once.

The bootstrap (``relcol.analysis.bootstrap``) computes every metric of every cell in each
of B replicates from weighted sufficient statistics: a Polars group-by over one row per
cell × replicate × bin would be ten times slower. Each function here is the numpy form of a
builder of this package, formula for formula, and ``REGISTRY`` names it as the metric's
``kernel``:

- **bin kernels** (``ece_kernel`` …) take the per-bin sums of ``calibration_bins``
  (``BinSums``) and reduce the bins, axis 0: the twins of the ``*_from_bins`` builders;
- ``moment_metrics`` gives Cohen's d and the point-biserial r from the confidence moments of
  right and wrong rows, through the Polars formulas themselves;
- ``rank_metrics`` gives the rank metrics (AUROC, AUPR, the selective-prediction
  summaries) from weighted counts per confidence level, in one loop over the levels
  compiled with numba (``relcol.metrics._compiled``): numpy needs some thirty passes;
- ``row_mean`` gives a per-row score's mean (Brier, NLL) from its sum.

With unit weights they reproduce the suite's tables (``tests/test_registry_contract.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import cached_property

import numpy as np
import polars as pl

from relcol.metrics._discrimination import _cohens_d, _point_biserial
from relcol.metrics._selective import _ASYMPTOTIC, _EULER_GAMMA, _SHIFT

#: A variance from sums is zero (a group whose confidences are all equal) when it is at most
#: this fraction of the mean square it was computed from: Σd² − (Σd)²/n from sums that are
#: each within 2⁻⁵² of their terms' magnitude leaves a residue below about 4·2⁻⁵²·Σd² when
#: every d is equal, and a variance that small cannot be told from 0 by these sums.
VARIANCE_RESIDUE = 2.0**-46
#: Bytes of one per-bin array's block of groups that ``reduce_bins`` gives the kernels at once:
#: on a 2-core AMD EPYC (1 MB of L2 cache per core), 512 KB took the bin kernels of a report of
#: 20 000 cells 7.5–7.6 s of CPU, against 8.7–9.0 s with 256 KB and 8.1–8.6 s with 1 MB.
BLOCK_BYTES = 1 << 19


class BinSums:
    """The (weighted) per-bin sums of ``calibration_bins``, bins on axis 0, any further axes
    independent groups (cells, replicates), and the quantities every bin kernel shares.

    A bin with ``n`` = 0 is not a bin of that group (as a bin absent from
    ``calibration_bins``); ``size`` is ``n`` with those bins set to 1, so no kernel divides
    0 by 0 in them (their terms are masked by ``present``). ``sum_confidence_sq``,
    ``sum_confidence_correct`` and ``sum_nll_top`` are needed by the proper scores only.
    """

    def __init__(
        self,
        n: np.ndarray,
        sum_confidence: np.ndarray,
        sum_correct: np.ndarray,
        sum_confidence_sq: np.ndarray | None = None,
        sum_confidence_correct: np.ndarray | None = None,
        sum_nll_top: np.ndarray | None = None,
    ) -> None:
        self.n, self.sum_confidence, self.sum_correct = n, sum_confidence, sum_correct
        self.sum_confidence_sq = sum_confidence_sq
        self.sum_confidence_correct = sum_confidence_correct
        self.sum_nll_top = sum_nll_top
        self.present = n > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            self.total = n.sum(0)
            self.accuracy = sum_correct.sum(0) / self.total
            self.mean_confidence = sum_confidence.sum(0) / self.total
        self.error = sum_correct - sum_confidence  # Σz − Σc per bin
        self.size = np.where(self.present, n, 1.0)

    # Per-bin quantities more than one kernel reads, each computed once per block of groups.

    @cached_property
    def bin_gap(self) -> np.ndarray:
        """Each bin's accuracy − mean confidence, (Σz − Σc) / nₘ."""
        return self.error / self.size

    @cached_property
    def bin_accuracy(self) -> np.ndarray:
        """Each bin's accuracy, Σz / nₘ."""
        return self.sum_correct / self.size

    @cached_property
    def reliability(self) -> np.ndarray:
        """Σₘ (Σz − Σc)²/nₘ / n: ``brier_reliability``, whose root is ``rmsce``."""
        return np.where(self.present, self.error * self.error / self.size, 0.0).sum(0) / self.total


# Bin kernels: the *_from_bins builders ----------------------------------------------------


def accuracy_kernel(b: BinSums) -> np.ndarray:
    """``accuracy``: Σz / n."""
    return b.accuracy


def mean_confidence_kernel(b: BinSums) -> np.ndarray:
    """``mean_confidence``: Σc / n."""
    return b.mean_confidence


def gap_kernel(b: BinSums) -> np.ndarray:
    """``gap``: mean confidence − accuracy."""
    return b.mean_confidence - b.accuracy


def abs_gap_kernel(b: BinSums) -> np.ndarray:
    """``abs_gap``: |mean confidence − accuracy|."""
    return np.abs(b.mean_confidence - b.accuracy)


def ece_kernel(b: BinSums) -> np.ndarray:
    """``ece``: Σₘ |Σz − Σc| / n."""
    return np.abs(b.error).sum(0) / b.total


def ece_over_kernel(b: BinSums) -> np.ndarray:
    """``ece_over``: Σₘ max(Σc − Σz, 0) / n."""
    return np.maximum(-b.error, 0.0).sum(0) / b.total


def ece_under_kernel(b: BinSums) -> np.ndarray:
    """``ece_under``: Σₘ max(Σz − Σc, 0) / n."""
    return np.maximum(b.error, 0.0).sum(0) / b.total


def mce_kernel(b: BinSums) -> np.ndarray:
    """``mce``: maxₘ |Σz − Σc| / nₘ over the present bins (|x / y| = |x| / y to the bit)."""
    return np.where(b.present, np.abs(b.bin_gap), -np.inf).max(0)


def brier_reliability_kernel(b: BinSums) -> np.ndarray:
    """``brier_reliability``: Σₘ (Σz − Σc)²/nₘ / n."""
    return b.reliability


def rmsce_kernel(b: BinSums) -> np.ndarray:
    """``rmsce``: the square root of ``brier_reliability``."""
    return np.sqrt(b.reliability)


def ece_debiased_kernel(b: BinSums) -> np.ndarray:
    """``ece_debiased``: Kumar et al.'s estimate (bins of one row contribute 0)."""
    bin_gap, bin_accuracy = b.bin_gap, b.bin_accuracy
    term = bin_gap * bin_gap - bin_accuracy * (1 - bin_accuracy) / (b.size - 1)
    weighted = np.where(b.present & (b.n >= 2), b.n * term, 0.0)
    return np.sqrt(np.clip(weighted.sum(0) / b.total, 0.0, None))


def brier_top_kernel(b: BinSums) -> np.ndarray:
    """``brier_top``: Σₘ (Σc² − 2Σcz + Σz) / n."""
    per_bin = b.sum_confidence_sq - 2 * b.sum_confidence_correct + b.sum_correct
    return per_bin.sum(0) / b.total


def brier_resolution_kernel(b: BinSums) -> np.ndarray:
    """``brier_resolution``: Σₘ nₘ(Σz/nₘ − ā)² / n."""
    spread = b.bin_accuracy - b.accuracy
    return np.where(b.present, b.n * spread * spread, 0.0).sum(0) / b.total


def brier_uncertainty_kernel(b: BinSums) -> np.ndarray:
    """``brier_uncertainty``: ā(1 − ā)."""
    return b.accuracy * (1 - b.accuracy)


def brier_within_kernel(b: BinSums) -> np.ndarray:
    """``brier_within``: Σₘ [Σc² − (Σc)²/nₘ − 2(Σcz − Σc·Σz/nₘ)] / n."""
    s = b.sum_confidence
    variance = b.sum_confidence_sq - s * s / b.size
    covariance = b.sum_confidence_correct - s * b.sum_correct / b.size
    return np.where(b.present, variance - 2 * covariance, 0.0).sum(0) / b.total


def nll_top_kernel(b: BinSums) -> np.ndarray:
    """``nll_top``: Σₘ Σ(top-label log loss) / n."""
    return b.sum_nll_top.sum(0) / b.total


def reduce_bins(
    kernels: dict[str, Callable[[BinSums], np.ndarray]], n: np.ndarray, *sums: np.ndarray | None
) -> dict[str, np.ndarray]:
    """Each bin kernel of ``kernels`` on the per-bin sums ``n, *sums`` (``BinSums``'
    arguments), a block of groups at a time; NaN for a group without rows.

    Every kernel works group by group, bins reduced in their order, so a block gives each
    group the same bits as the whole arrays at once. A kernel's temporaries are the shape of
    its input: blocks of ``BLOCK_BYTES`` keep them in the core's cache, where the whole
    arrays of a bootstrap batch (15 bins × 67 cells × 1001 replicates) made every temporary
    8 MB of memory written and read back (66 ms for both binnings' kernels against 29 ms).
    """
    shape = n.shape[1:]
    flat = [None if a is None else a.reshape(a.shape[0], -1) for a in (n, *sums)]
    groups = flat[0].shape[1]
    step = max(2, BLOCK_BYTES // (8 * max(1, flat[0].shape[0])))
    edges = [*range(0, groups, step), groups] if groups else [0, 0]
    if len(edges) > 2 and edges[-1] - edges[-2] == 1:
        # numpy sums the bins of a lone group in another order (pairwise) than those of
        # two or more side by side (one after the other): the last block takes it along
        del edges[-2]
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for start, stop in itertools.pairwise(edges):
            block = BinSums(*(None if a is None else a[:, start:stop] for a in flat))
            rows = block.total > 0
            for name, kernel in kernels.items():
                values = np.where(rows, kernel(block), np.nan)
                out.setdefault(name, np.empty(groups, dtype=values.dtype))[start:stop] = values
    return {name: values.reshape(shape) for name, values in out.items()}


# Per-row means ----------------------------------------------------------------------------------


def row_mean(total: np.ndarray, n: np.ndarray, complete: np.ndarray) -> np.ndarray:
    """A per-row score's mean ``total / n`` (``brier``, ``nll``); NaN for a group without
    rows or with a row that lacks the score (``complete`` false)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(complete & (n > 0), total / n, np.nan)


# Moments: Cohen's d and the point-biserial r ------------------------------------------------


def moment_metrics(n1, n0, s1, q1, s0, q0) -> dict[str, np.ndarray]:
    """``cohens_d`` and ``point_biserial`` from weighted counts and sums of the confidence
    centred on the cell's mean (right rows: n1, s1, q1; wrong: n0, s0, q0), through the
    suite's formulas (``relcol.metrics.cohens_d_from_moments`` …)."""
    shape = n1.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        mean1, mean0 = s1 / n1, s0 / n0
        var1 = np.where(n1 >= 2, _clean_variance(q1 - s1 * mean1, q1) / (n1 - 1), np.nan)
        var0 = np.where(n0 >= 2, _clean_variance(q0 - s0 * mean0, q0) / (n0 - 1), np.nan)
        n = n1 + n0
        total = s1 + s0
        var_all = _clean_variance(q1 + q0 - total * total / n, q1 + q0) / n
    frame = pl.DataFrame(
        {
            name: value.ravel()
            for name, value in (
                ("mean1", mean1),
                ("mean0", mean0),
                ("var1", var1),
                ("var0", var0),
                ("var_all", var_all),
                ("n1", n1),
                ("n0", n0),
            )
        }
    ).fill_nan(None)
    col = pl.col
    result = frame.select(
        cohens_d=_cohens_d(
            col("mean1"), col("mean0"), col("var1"), col("var0"), col("n1"), col("n0")
        ),
        point_biserial=_point_biserial(
            col("mean1"), col("mean0"), col("var_all"), col("n1"), col("n0")
        ),
    )
    return {
        name: result[name].cast(pl.Float64).fill_null(np.nan).to_numpy().reshape(shape)
        for name in result.columns
    }


def _clean_variance(spread: np.ndarray, squares: np.ndarray) -> np.ndarray:
    """Σd² − (Σd)²/n from sums, with the rounding residue of an all-equal group (at most
    ``VARIANCE_RESIDUE`` of the sum of squares Σd²) set to exactly 0, as the suite's
    variance is there."""
    return np.where(np.abs(spread) <= VARIANCE_RESIDUE * squares, 0.0, spread)


# Rank metrics: counts per confidence level ----------------------------------------------------


def rank_metrics(
    right: np.ndarray, wrong: np.ndarray, coverage: float = 0.8, risk: float = 0.05
) -> dict[str, np.ndarray]:
    """The rank metrics (docs/metrics.md) from weighted counts per confidence level.

    Parameters
    ----------
    right, wrong
        Arrays of the (weighted) counts of right and wrong rows per level, levels in
        ascending order of confidence along axis 0, any further axes independent groups
        (replicates, cells); a level may be empty (both 0). The arithmetic is done in
        Float64 whatever their dtype (the replicates hand over Float32 counts, exact), in
        one compiled pass over the levels (``relcol.metrics._compiled``).
    coverage, risk
        Targets of ``risk_at_coverage`` and ``coverage_at_risk``.

    Returns
    -------
    dict of str to numpy.ndarray
        ``auroc``, ``aupr_success``, ``aupr_error``, ``fpr_at_95tpr``, ``aurc``,
        ``aurc_optimal``, ``e_aurc``, ``risk_at_coverage``, ``coverage_at_risk``, with
        axis 0 reduced, as Float64; NaN where undefined (the suite's nulls). With integer
        counts in Float64 these are the suite's values: rows with equal confidence enter
        together, AUROC by mid-ranks, AUPR as average precision, the risk–coverage curve
        as steps.

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.metrics import rank_metrics
    >>> out = rank_metrics(np.array([0.0, 1, 1]), np.array([1.0, 1, 0]))  # .3 ✗, .6 ✓✗, .9 ✓
    >>> float(out["auroc"]), float(out["fpr_at_95tpr"])
    (0.875, 0.5)
    """
    from relcol.metrics._compiled import rank_pass  # numba: on first use only

    right, wrong = np.asarray(right), np.asarray(wrong)
    if not np.issubdtype(right.dtype, np.floating):
        right, wrong = right.astype(np.float64), wrong.astype(np.float64)
    groups = right.shape[1:]

    def columns(counts: np.ndarray) -> np.ndarray:  # contiguous: the compiled loop vectorises
        return np.ascontiguousarray(counts.reshape(len(counts), -1))

    passed = rank_pass(columns(right), columns(wrong), float(coverage), float(risk))
    return _rank_named(*passed, groups)


def weighted_rank_metrics(
    level: np.ndarray,
    correct: np.ndarray,
    sample: np.ndarray,
    weights: np.ndarray,
    bounds: np.ndarray | None = None,
    coverage: float = 0.8,
    risk: float = 0.05,
) -> dict[str, np.ndarray]:
    """``rank_metrics`` of groups of rows under each column of ``weights``: the counts of a
    level are the weights of its right and its wrong rows summed, as ``rank_metrics`` would
    get them from the product of the rows' one-hot levels with the weights, in one compiled
    loop that never holds every level's counts (``relcol.metrics._compiled.rank_rows``).

    Parameters
    ----------
    level
        Each row's confidence level (non-decreasing within a group: the rows sorted by
        confidence).
    correct
        Each row's outcome (non-zero: right).
    sample
        Each row's row of ``weights``.
    weights
        (samples × columns) non-negative integer weights (any integer or float dtype; the
        bootstrap's are uint8); the sums are taken in Float64, exact below 2⁵³.
    bounds
        Each group's first row, then the number of rows (default: the rows are one group).
    coverage, risk
        As in ``rank_metrics``.

    Returns
    -------
    dict of str to numpy.ndarray
        ``rank_metrics``' names, each (groups × columns).
    """
    from relcol.metrics._compiled import rank_rows  # numba: on first use only

    if bounds is None:
        bounds = np.array([0, len(level)])
    bounds = np.asarray(bounds, dtype=np.int64)
    passed = rank_rows(level, correct, sample, weights, bounds, float(coverage), float(risk))
    return _rank_named(*passed, (len(bounds) - 1, weights.shape[1]))


def _rank_named(flat: np.ndarray, n1: np.ndarray, n: np.ndarray, groups: tuple) -> dict:
    """The rank kernel's output by name, shaped ``groups``, with ``aurc_optimal`` and
    ``e_aurc`` from its counts."""
    from relcol.metrics._compiled import RANK_PASS

    out = {name: flat[i].reshape(groups) for i, name in enumerate(RANK_PASS)}
    out["aurc_optimal"] = aurc_optimal_kernel(n.reshape(groups), n1.reshape(groups))
    out["e_aurc"] = out["aurc"] - out["aurc_optimal"]
    return out


def aurc_optimal_kernel(n: np.ndarray, n1: np.ndarray) -> np.ndarray:
    """``aurc_optimal`` = (n₀ − n₁(Hₙ − Hₙ₁))/n from the row counts, Hₖ as ``harmonic``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            n > 0, ((n - n1) - n1 * (harmonic_kernel(n) - harmonic_kernel(n1))) / n, np.nan
        )


#: Whole counts up to this take Hₖ from the process's table of H₀ … (8 MB at most).
HARMONIC_TABLE_MAX = 2**20
_harmonic_table = np.zeros(1)  # H₀ … H_k so far, grown by ``_harmonic_up_to``


def harmonic_kernel(n: np.ndarray) -> np.ndarray:
    """The suite's ``harmonic`` (``relcol.metrics.harmonic``) in numpy, step for step:
    H_{n+10} from ψ's asymptotic series, minus 1/(n+1) … 1/(n+10).

    Whole counts ≥ 0 (as weighted counts with whole weights are) read Hₖ from a table of
    H₀ … H_max made by the same steps, so each is the same bits at one look-up instead of
    some thirty passes over the array: the process's table (``_harmonic_up_to``) for counts
    up to ``HARMONIC_TABLE_MAX``, one of this call's for larger counts no larger than there
    are of them."""
    n = np.asarray(n, dtype=np.float64)
    top = float(n.max(initial=0.0))
    if n.size and np.all((n >= 0) & (n == np.floor(n))):
        if top <= HARMONIC_TABLE_MAX:
            return _harmonic_up_to(int(top))[n.astype(np.int64)]
        if top <= n.size:
            return _harmonic_steps(np.arange(int(top) + 1, dtype=np.float64))[n.astype(np.int64)]
    return _harmonic_steps(n)


def _harmonic_up_to(top: int) -> np.ndarray:
    """The process's table of H₀ … H_k, k ≥ ``top``: made again, at least twice as long (up
    to ``HARMONIC_TABLE_MAX``), when a count is past its end. Threads may make it at once:
    each makes a whole table, and keeps the one it made."""
    global _harmonic_table
    table = _harmonic_table
    if len(table) <= top:
        size = min(max(top, 2 * len(table)), HARMONIC_TABLE_MAX) + 1
        table = _harmonic_table = _harmonic_steps(np.arange(size, dtype=np.float64))
    return table


def _harmonic_steps(n: np.ndarray) -> np.ndarray:
    big = n + _SHIFT
    inverse_square = 1 / (big * big)
    tail = np.zeros_like(big)
    for coefficient in reversed(_ASYMPTOTIC):
        tail = (tail + coefficient) * inverse_square
    value = np.log(big) + _EULER_GAMMA + 0.5 / big - tail
    for i in range(_SHIFT, 0, -1):
        value = value - 1 / (n + i)
    return np.where(n == 0, 0.0, value)
