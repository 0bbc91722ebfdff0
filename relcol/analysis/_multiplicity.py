"""p-values from paired bootstrap replicates and the Benjamini–Hochberg adjustment.

A report makes many comparisons at once (every cell against its clean cell, every pair of
models at every severity): thousands of intervals, of which about α of those with no real
difference exclude 0 by chance. The differences table therefore carries, beside each
interval, a bootstrap p-value and its Benjamini–Hochberg q-value within a stated family, so a
reader can keep the false discovery rate among the differences called significant at α.
"""

from __future__ import annotations

import numpy as np


def bootstrap_p_values(differences: np.ndarray) -> np.ndarray:
    """Two-sided p-value of "no difference" per row of (rows × B) replicate differences.

    p = min(1, 2·min(#{δ*_b ≤ 0} + 1, #{δ*_b ≥ 0} + 1)/(B' + 1)) over the B' defined
    replicates: the percentile interval at level 1 − α excludes 0 about when p < α, and the
    +1 keeps p above 0 (a finite number of replicates cannot show a probability of 0). NaN
    where fewer than half of the replicates are defined, as the intervals.

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.analysis._multiplicity import bootstrap_p_values
    >>> bootstrap_p_values(np.array([[1.0, 2, 3, -1], [1.0, 1, 1, 1]])).round(3).tolist()
    [0.8, 0.4]
    """
    differences = np.asarray(differences, dtype=np.float64)
    defined = np.isfinite(differences)
    count = defined.sum(1)
    below = (defined & (differences <= 0)).sum(1)
    above = (defined & (differences >= 0)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2 * (np.minimum(below, above) + 1) / (count + 1))
    return np.where(count * 2 >= differences.shape[1], p, np.nan)


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values) of one family; NaN stays NaN and does
    not count in the family's size.

    q₍ᵢ₎ = min over j ≥ i of m·p₍ⱼ₎/j, capped at 1, for the m defined p-values sorted
    ascending. Rejecting q ≤ α keeps the expected share of false discoveries at most α for
    independent or positively dependent tests (the paired differences of one study share
    their test samples, a positive dependence).

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.analysis._multiplicity import benjamini_hochberg
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, np.nan, 0.2])).round(4).tolist()
    [0.04, 0.0533, 0.0533, nan, 0.2]
    """
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    defined = np.flatnonzero(np.isfinite(p))
    if not len(defined):
        return q
    order = defined[np.argsort(p[defined], kind="stable")]
    m = len(order)
    scaled = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return q
