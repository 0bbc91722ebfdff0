"""Calibration of any (confidence, outcome) pairs with a soft or hard outcome, one row per group.

The multi-label modes and the recalibration before/after table both score pairs whose
outcome is not the long table's ``correct`` (it may be the label's presence, or an
annotator agreement in [0, 1]), so they share this one function. Everything is derived from
per-bin sums through the builders of ``relcol.metrics.calibration`` (``ece_from_bins`` …,
named by ``REGISTRY``), the outcome in place of z; ``brier_top`` and ``nll_top`` follow
docs/metrics.md with the outcome in place of z. The SQL twin is the ``multilabel`` view.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from relcol.metrics import CLIP_EPS as EPS
from relcol.metrics import REGISTRY, bin_index, exact_sum

#: The columns ``binary_scores`` adds after the group keys, in order.
SCORES = (
    "n",
    "accuracy",
    "mean_confidence",
    "gap",
    "abs_gap",
    "ece",
    "mce",
    "brier_top",
    "nll_top",
)
#: The columns computed by the calibration table's own bin-level builders; ``brier_top`` and
#: ``nll_top`` take a soft outcome, so they sum their per-row terms instead.
_FROM_BINS = SCORES[:-2]


def binary_scores(
    frame: pl.DataFrame | pl.LazyFrame,
    by: Iterable[str],
    *,
    bins: int = 15,
    confidence: str = "confidence",
    outcome: str = "outcome",
) -> pl.LazyFrame:
    """n, accuracy (the mean outcome), mean confidence, gap, ECE, MCE, brier_top, nll_top.

    Parameters
    ----------
    frame
        Rows with the ``by`` columns, a ``confidence`` in [0, 1] and an ``outcome`` in
        [0, 1] (a bool, 0/1, or a soft target such as an agreement share).
    by
        Grouping columns (a null key is one group).
    bins
        Equal-width bins M for ECE and MCE (``relcol.metrics.bin_index``).

    Returns
    -------
    pl.LazyFrame
        ``by`` then ``SCORES``; one row per group, unsorted.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({"g": "a", "confidence": [0.8, 0.8], "outcome": [1.0, 0.5]})
    >>> binary_scores(rows, ["g"], bins=10).collect().select("accuracy", "gap").rows()
    [(0.75, 0.050000000000000044)]
    """
    keys = list(by)
    c = pl.col(confidence).cast(pl.Float64)
    o = pl.col(outcome).cast(pl.Float64)
    clipped = c.clip(EPS, 1 - EPS)
    n = pl.col("n")
    return (
        frame.lazy()
        .group_by([*keys, bin_index(confidence, bins=bins)])
        .agg(
            n=pl.len().cast(pl.Int64),
            sum_confidence=exact_sum(c),
            sum_correct=exact_sum(o),  # the outcome's sum, in the builders' name for Σz
            sum_se=exact_sum((c - o) * (c - o)),
            sum_ll=exact_sum(-(o * clipped.log() + (1 - o) * (1 - clipped).log())),
        )
        .group_by(keys)
        .agg(
            *(REGISTRY[name].from_bins().alias(name) for name in _FROM_BINS),
            brier_top=exact_sum(pl.col("sum_se")) / n.sum(),
            nll_top=exact_sum(pl.col("sum_ll")) / n.sum(),
        )
        .select(*keys, *SCORES)
    )
