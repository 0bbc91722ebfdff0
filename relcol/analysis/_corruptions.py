"""What the corruption operators actually did, averaged over their draws.

Input is the corruptions side table: one row per (study, dataset, corruption,
operator, severity, repeat) with the realised rate each draw achieved.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._frames import require_columns, sort_by_appearance
from relcol.metrics._exact import exact_mean


def realised_rates(corruptions: pl.DataFrame) -> pl.DataFrame:
    """Mean realised rate per dataset × corruption × severity.

    Parameters
    ----------
    corruptions
        The corruptions table: ``dataset``, ``corruption``, ``severity`` and
        ``realised_rate``; ``study`` and ``changed_share`` are used when present.

    Returns
    -------
    polars.DataFrame
        ``[study,] dataset, corruption, severity, draws, realised_rate[, changed_share]``,
        where ``draws`` counts the rows averaged and the rates are their means.
        Datasets and corruptions keep their order of first appearance; severities
        are ascending.
    """
    require_columns(
        corruptions, ("dataset", "corruption", "severity", "realised_rate"), "corruptions"
    )
    keys = [k for k in ("study", "dataset", "corruption") if k in corruptions.columns]
    rates = [c for c in ("realised_rate", "changed_share") if c in corruptions.columns]
    return sort_by_appearance(
        corruptions.group_by(*keys, "severity", maintain_order=True).agg(
            pl.len().alias("draws"), *(exact_mean(pl.col(c).cast(pl.Float64)) for c in rates)
        ),
        keys,
        "severity",
    )
