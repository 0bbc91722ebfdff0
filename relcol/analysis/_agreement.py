"""Soft agreement on single-label rows: how confidence relates to the annotators' consensus.

A prediction file may give, per sample, ``agreement`` = a ∈ [0, 1], the share of annotators
agreeing with the prediction (a soft version of ``correct``). Per cell this table holds:

- ``n``: rows with an agreement; ``mean_agreement`` and ``mean_confidence``;
- calibration against the soft target (``relcol.analysis._scores.binary_scores`` with
  a in place of z): ``gap`` = mean c − mean a, ``ece``, ``mce`` (equal-width bins),
  ``brier_top`` = mean (c − a)², ``nll_top`` = the cross-entropy of c against a;
- ``pearson_r`` and ``spearman_rho``: the correlation of c with a (null when either is
  constant): does the system hesitate where the annotators do?
- ``accuracy``: the hard share of correct rows, beside the soft one.

The SQL twin is the ``soft_agreement`` view; a test holds the two engines to 1e-9.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._scores import binary_scores
from relcol.store import CELL, KEY

#: The columns after the cell key, in order.
COLUMNS = (
    "n",
    "mean_agreement",
    "mean_confidence",
    "gap",
    "ece",
    "mce",
    "brier_top",
    "nll_top",
    "pearson_r",
    "spearman_rho",
    "accuracy",
)


def soft_agreement(
    predictions: pl.DataFrame | pl.LazyFrame,
    annotations: pl.DataFrame | pl.LazyFrame,
    *,
    bins: int = 15,
) -> pl.DataFrame:
    """One row per cell of single-label rows that have an agreement (empty when none has)."""
    rows = (
        predictions.lazy()
        .filter(pl.col("label").is_null())
        .join(annotations.lazy().select(*KEY, "agreement"), on=list(KEY), nulls_equal=True)
        .filter(pl.col("agreement").is_not_null())
        .with_columns(outcome=pl.col("agreement"))
    )
    keys = list(CELL)
    scores = binary_scores(rows, keys, bins=bins).rename({"accuracy": "mean_agreement"})
    c, a = pl.col("confidence"), pl.col("agreement")
    extra = rows.group_by(keys).agg(
        pearson_r=pl.corr(c, a, method="pearson"),
        spearman_rho=pl.corr(c, a, method="spearman"),
        accuracy=pl.col("correct").cast(pl.Float64).mean(),
    )
    nan_to_null = [pl.col(k).fill_nan(None) for k in ("pearson_r", "spearman_rho")]
    return (
        scores.join(extra, on=keys, nulls_equal=True)
        .with_columns(nan_to_null)
        .select(*keys, *COLUMNS)
        .sort(keys, nulls_last=True)
        .collect()
    )
