"""Intervals that include training variation: the bootstrap's interval widened by the spread
of the per-seed values (docs/statistics.md, "offer intervals that include training variation").

The paired bootstrap resamples test samples and holds the trained models fixed: it covers the
value of the metric for the S models in the warehouse. A reader asking about the training
recipe (another seed, another model) needs the variation between seeds too. With θ̂ the pooled
estimate of S seeds on one test set, θ̂ − θ = (seed effects averaged over S) + (test-sample
noise); the bootstrap measures the second, and the per-seed values' sample variance s² (ddof
1) estimates the first's variance times S, plus a little of the second (the part of each
seed's sample noise the seeds do not share), so s²/S is a slightly conservative estimate of the
seed part. Each side of the interval is widened in quadrature:

    lo' = θ̂ − √((θ̂ − lo)² + (t·s/√S)²),   hi' = θ̂ + √((hi − θ̂)² + (t·s/√S)²),

t the (1 − α/2) quantile of Student's t with S − 1 degrees of freedom (s² from S seeds has
S − 1 degrees of freedom: 4.30 at 3 seeds, 2.78 at 5). A cell with fewer than 2 seeds keeps
its test-sample interval, and ``interval_scope`` says which one each row has.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl
from scipy import special

#: What an interval covers, per ``intervals`` option of the report.
SCOPES = {
    "samples": "test samples",
    "training": "test samples and training seeds",
}


def with_training_variation(
    table: pl.DataFrame,
    seeds: pl.DataFrame,
    keys: Iterable[str],
    alpha: float = 0.05,
) -> pl.DataFrame:
    """``table`` with each ``<metric>_lo``/``_hi`` widened by the spread of the metric's
    per-seed values in ``seeds`` (one row per cell × seed), and ``interval_scope``.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({"cell": [1], "gap": [0.1], "gap_lo": [0.08], "gap_hi": [0.12]})
    >>> seeds = pl.DataFrame({"cell": [1, 1, 1], "seed": [0, 1, 2], "gap": [0.08, 0.1, 0.12]})
    >>> out = with_training_variation(cells, seeds, ["cell"])
    >>> round(out["gap_hi"][0] - 0.1, 4)   # √(0.02² + (4.303·0.02/√3)²)
    0.0536
    """
    keys = list(keys)
    names = [
        c
        for c in table.columns
        if f"{c}_lo" in table.columns and f"{c}_hi" in table.columns and c in seeds.columns
    ]
    if not names:
        return table.with_columns(interval_scope=pl.lit(SCOPES["samples"]))
    spread = seeds.group_by(keys).agg(
        *(pl.col(n).fill_nan(None).std(ddof=1).alias(f"_sd_{n}") for n in names),
        *(pl.col(n).fill_nan(None).count().alias(f"_seeds_{n}") for n in names),
    )
    out = table.join(spread, on=keys, how="left", nulls_equal=True, maintain_order="left")
    columns = {}
    for name in names:
        count = out[f"_seeds_{name}"].fill_null(0).to_numpy().astype(np.float64)
        sd = out[f"_sd_{name}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            t = special.stdtrit(np.maximum(count - 1, 1), 1 - alpha / 2)  # stats.t.ppf
            extra = np.where(count >= 2, t * sd / np.sqrt(count), 0.0)
        extra = np.nan_to_num(extra, nan=0.0)
        value = out[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
        lo = out[f"{name}_lo"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        hi = out[f"{name}_hi"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        columns[f"{name}_lo"] = value - np.sqrt((value - lo) ** 2 + extra**2)
        columns[f"{name}_hi"] = value + np.sqrt((hi - value) ** 2 + extra**2)
    several = out.select(
        pl.max_horizontal(*(pl.col(f"_seeds_{n}").fill_null(0) for n in names)) >= 2
    ).to_series()
    scope = pl.when(several).then(pl.lit(SCOPES["training"])).otherwise(pl.lit(SCOPES["samples"]))
    return (
        out.with_columns(pl.Series(n, v).fill_nan(None) for n, v in columns.items())
        .with_columns(interval_scope=scope)
        .drop(c for c in out.columns if c.startswith(("_sd_", "_seeds_")))
    )
