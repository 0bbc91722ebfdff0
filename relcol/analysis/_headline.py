"""The report's headline: per model, how its curves are rated and where trust breaks first.

Input is the statistical layer's ``thresholds`` table (one row per curve: ``traffic_light``,
``d_star``, see docs/statistics.md); the function only counts and picks, it decides nothing.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._frames import require_columns
from relcol.analysis._thresholds import LIGHTS

#: The traffic-light colours worst first, as the headline counts them (``LIGHTS`` in reverse).
WORST_FIRST = LIGHTS[::-1]


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
    counts = [pl.len().alias("curves")] + [(light == c).sum().alias(c) for c in WORST_FIRST]
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
    counted = [c for c in ("curves", *WORST_FIRST, "clean_over") if c in out.columns]
    return out.with_columns(pl.col(c).cast(pl.Int64) for c in counted)


#: The columns of ``thresholds`` that :func:`break_grid` reads.
GRID_COLUMNS = (
    "model",
    "corruption",
    "clean_overconfident",
    "break_point",
    "d_star",
    "traffic_light",
    "worst_severity",
)
#: The states of a curve in the headline grid, in the order a reader is warned of them.
STATES = ("clean", "breaks", "holds", "score")


def break_grid(thresholds: pl.DataFrame) -> pl.DataFrame:
    """Per curve, the headline's answer: at what severity the model's trust breaks.

    Parameters
    ----------
    thresholds
        One row per single-label curve: ``model``, ``corruption``, ``clean_overconfident``,
        ``break_point``, ``d_star``, ``traffic_light`` and ``worst_severity``;
        ``study``, ``dataset`` when present.

    Returns
    -------
    polars.DataFrame
        The keys, ``state`` (``clean``: already significantly overconfident on clean data;
        ``breaks``: not, but the gap rises significantly from ``break_point`` on;
        ``holds``: neither within the severities studied, up to ``worst_severity``),
        ``break_point``, ``d_star``, ``light`` and ``worst_severity``, in the table's order.
        A curve overconfident when clean keeps its ``break_point`` (it may get worse still).

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"model": ["a", "a", "b"], "corruption": ["mcar", "mnar", "mcar"],
    ...     "clean_overconfident": [False, False, True], "break_point": [0.2, None, None],
    ...     "d_star": [0.3, None, None], "traffic_light": ["red", "green", "amber"],
    ...     "worst_severity": 0.5})
    >>> break_grid(t).select("model", "state", "break_point").rows()
    [('a', 'breaks', 0.2), ('a', 'holds', None), ('b', 'clean', None)]
    """
    require_columns(thresholds, GRID_COLUMNS, "thresholds")
    keys = [k for k in ("study", "dataset", "model", "corruption") if k in thresholds.columns]
    score = (
        pl.col("deciding_metric") == "score" if "deciding_metric" in thresholds.columns else False
    )
    state = (
        pl.when(score)
        .then(pl.lit("score"))
        .when(pl.col("clean_overconfident").fill_null(False))
        .then(pl.lit("clean"))
        .when(pl.col("break_point").is_not_null())
        .then(pl.lit("breaks"))
        .otherwise(pl.lit("holds"))
    )
    return thresholds.select(
        *keys,
        state.alias("state"),
        "break_point",
        "d_star",
        pl.col("traffic_light").cast(pl.String).str.to_lowercase().alias("light"),
        "worst_severity",
    )
