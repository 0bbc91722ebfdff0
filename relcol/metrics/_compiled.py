"""The rank kernel's loop, compiled with numba: one pass over the levels instead of dozens.

In numpy the rank metrics of a (levels × groups) array take some thirty passes over it (two
running sums, their differences, four weighted sums, the threshold searches), each a full
array in memory; the bootstrap calls them on thousands of levels × replicates per cell, and
they were the largest share of ``relcol report``. Here every group walks its levels once,
keeping its running counts in registers, in Float64 whatever the input's dtype (the counts
are exact small integers in either). Imported on first use, so importing ``relcol.metrics``
does not import numba; compiled once per input dtype and cached beside this file.
"""

from __future__ import annotations

import numba
import numpy as np

from relcol._interrupts import held_while_compiling

#: The rows of ``rank_pass``'s output, in order.
RANK_PASS = (
    "auroc",
    "aupr_success",
    "aupr_error",
    "fpr_at_95tpr",
    "aurc",
    "risk_at_coverage",
    "coverage_at_risk",
)


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def rank_pass(right, wrong, coverage, risk):
    """``RANK_PASS`` of every column of ``right``/``wrong`` (levels × groups, levels in
    ascending order of confidence): a (7 × groups) Float64 array, NaN where undefined, and
    each column's right and total counts n₁ and n.

    Per level, with the counts strictly below it (``right_under``, ``wrong_under``):
    AUROC adds right · (wrong under + wrong / 2) (mid-ranks for ties); AUPR of errors adds
    wrong · (wrong at or below / rows at or below); the rows accepted at the level (confidence
    ≥ it) are n − right under − wrong under, of which n₀ − wrong under are wrong, giving the
    precision of success, the level's risk (added with weight right + wrong for AURC), FPR at
    95 % TPR (the errors at the last level where 20 · right under ≤ n₁), coverage at risk (the
    most rows accepted with errors ≤ risk · accepted) and risk at coverage (the risk at the
    last level accepting ≥ coverage · n). These levels form prefixes, as the counts only grow.
    """
    levels, groups = right.shape
    n1 = np.zeros(groups)
    n0 = np.zeros(groups)
    for level in range(levels):
        for g in range(groups):
            n1[g] += right[level, g]
            n0[g] += wrong[level, g]
    right_under = np.zeros(groups)
    wrong_under = np.zeros(groups)
    rank_sum = np.zeros(groups)
    error_precision = np.zeros(groups)
    success_precision = np.zeros(groups)
    risk_sum = np.zeros(groups)
    false_positives = np.zeros(groups)
    within = np.zeros(groups)
    at_coverage = np.full(groups, np.nan)
    for level in range(levels):
        for g in range(groups):
            r = np.float64(right[level, g])
            w = np.float64(wrong[level, g])
            below_r = right_under[g]
            below_w = wrong_under[g]
            n = n1[g] + n0[g]
            rank_sum[g] += r * below_w + 0.5 * r * w
            at_or_below = below_r + r + below_w + w
            error_precision[g] += w * ((below_w + w) / max(at_or_below, 1.0))
            accepted = n - below_r - below_w
            errors = n0[g] - below_w
            if 20.0 * below_r <= n1[g]:
                false_positives[g] = errors
            if errors <= risk * accepted and accepted > within[g]:
                within[g] = accepted
            safe = max(accepted, 1.0)  # 0 accepted: 0 right, 0 wrong above
            success_precision[g] += r * ((n1[g] - below_r) / safe)
            level_risk = errors / safe
            risk_sum[g] += (r + w) * level_risk
            if accepted >= coverage * n:
                at_coverage[g] = level_risk
            right_under[g] = below_r + r
            wrong_under[g] = below_w + w
    out = np.full((7, groups), np.nan)
    for g in range(groups):
        n = n1[g] + n0[g]
        if n1[g] > 0 and n0[g] > 0:
            out[0, g] = rank_sum[g] / (n1[g] * n0[g])
            out[3, g] = false_positives[g] / n0[g]
        if n1[g] > 0:
            out[1, g] = success_precision[g] / n1[g]
        if n0[g] > 0:
            out[2, g] = error_precision[g] / n0[g]
        if n > 0:
            out[4, g] = risk_sum[g] / n
            out[5, g] = at_coverage[g]
            out[6, g] = within[g] / n
    return out, n1, n1 + n0
