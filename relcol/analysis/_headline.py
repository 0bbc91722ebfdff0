"""The report's headline: per model, how its curves are rated and where trust breaks first.

Input is the statistical layer's ``thresholds`` table (one row per curve: ``traffic_light``,
``d_star``, METRICS.md §6 and §11); the function only counts and picks, it decides nothing.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._frames import require_columns

#: The traffic-light colours, worst first.
LIGHTS = ("red", "amber", "green")


def verdicts(thresholds: pl.DataFrame) -> pl.DataFrame:
    """Per study × model: curves by traffic light, and the earliest silent failure d*.

    Parameters
    ----------
    thresholds
        One row per curve with ``model`` and ``traffic_light`` (``red``, ``amber`` or
        ``green``); ``study``, ``dataset``, ``corruption`` and ``d_star`` when present.

    Returns
    -------
    polars.DataFrame
        ``[study,] model, curves, red, amber, green`` (counts), ``clean_over`` (curves
        already overconfident when clean) when ``clean_overconfident`` is present, and when
        ``d_star`` is
        present ``d_star`` (the smallest over the model's curves; null if never reached)
        with the ``dataset`` and ``corruption`` where it happens (the first in row order on
        ties). Models in order of first appearance.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"model": ["a", "a", "b"], "corruption": ["mcar", "mnar", "mcar"],
    ...                   "dataset": "d", "traffic_light": ["red", "green", "amber"],
    ...                   "d_star": [0.3, None, None]})
    >>> verdicts(t).select("model", "red", "amber", "green", "d_star", "corruption").rows()
    [('a', 1, 0, 1, 0.3, 'mcar'), ('b', 0, 1, 0, None, None)]
    """
    require_columns(thresholds, ("model", "traffic_light"), "thresholds")
    keys = [k for k in ("study", "model") if k in thresholds.columns]
    light = pl.col("traffic_light").cast(pl.String).str.to_lowercase()
    counts = [pl.len().alias("curves")] + [(light == c).sum().alias(c) for c in LIGHTS]
    where = [c for c in ("dataset", "corruption") if c in thresholds.columns]
    if "clean_overconfident" in thresholds.columns:
        counts.append(pl.col("clean_overconfident").fill_null(False).sum().alias("clean_over"))
    if "d_star" in thresholds.columns:
        first = pl.col("d_star").arg_min()
        counts.append(pl.col("d_star").min())
        counts += [pl.col(c).get(first).alias(c) for c in where]
    out = thresholds.group_by(keys, maintain_order=True).agg(counts)
    if "d_star" in out.columns:
        reached = pl.col("d_star").is_not_null()
        out = out.with_columns(pl.when(reached).then(pl.col(c)).alias(c) for c in where)
    counted = [c for c in ("curves", *LIGHTS, "clean_over") if c in out.columns]
    return out.with_columns(pl.col(c).cast(pl.Int64) for c in counted)
