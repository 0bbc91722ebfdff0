"""The built-in example: the multi-label email dataset of a published worked example,
ingested as a prediction file would be, and relcol's numbers beside the published table."""

from __future__ import annotations

import os
from dataclasses import dataclass

import polars as pl

from relcol import metrics
from relcol.data import (
    EMAIL_LABELS,
    EMAIL_PUBLISHED_AT_LEAST,
    EMAIL_PUBLISHED_TABLE,
    email_predictions,
)
from relcol.errors import InputError, ParameterError
from relcol.store import Warehouse
from relcol.workflows._external_predictions import PredictionsResult, ingest_predictions
from relcol.workflows._multilabel_scores import multilabel
from relcol.workflows._shared import warehouse_of

EXAMPLES = ("email",)


@dataclass(frozen=True)
class ExampleResult:
    """What ``example`` ingested, and relcol's numbers beside the published table."""

    ingest: PredictionsResult
    comparison: pl.DataFrame


def example(
    name: str = "email",
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    seed: int = 0,
    replace: bool = False,
) -> ExampleResult:
    """Generate a built-in example and ingest it as a prediction file would be.

    ``email`` is the published worked example's dummy multi-label email dataset
    (``relcol.data.email_predictions``), ingested as study ``email-example``; the result
    compares relcol's numbers with the example's published table.
    """
    if name not in EXAMPLES:
        raise ParameterError(f"example must be one of {', '.join(EXAMPLES)}. Got {name!r}.")
    wh = warehouse_of(warehouse)
    result = ingest_predictions(
        email_predictions(seed),
        wh,
        name=study or "email-example",
        model="llm",
        dataset="email",
        classes=EMAIL_LABELS,
        replace=replace,
    )
    return ExampleResult(result, email_comparison(wh, study=result.study))


#: What each number of the comparison is in relcol's terms.
_DEFINITIONS = {
    "accuracy": "micro, prediction confidence: share of (email, label) decisions right",
    "ece": "micro, prediction confidence, 15 equal-width bins",
    "mce": "micro, prediction confidence: the largest |acc - conf| of those 15 bins",
    "brier": "brier_top micro: mean (c − z)², the same in both modes",
    "nll": "nll_top micro: binary cross-entropy of c against z",
    "auroc": "relcol.metrics auroc of c for right vs wrong, all pairs pooled",
    "pr_auc": "relcol.metrics aupr_success: average precision of c, positive = right",
    "cohens_d": "relcol.metrics cohens_d of c, right vs wrong (σ with ddof = 1)",
    "point_biserial": "relcol.metrics point_biserial: Pearson r of c and z",
}


def email_comparison(
    warehouse: Warehouse | str | os.PathLike[str] | None = None, *, study: str = "email-example"
) -> pl.DataFrame:
    """The published results table of the email example, every row, beside relcol's for the ingested example.

    ``relation`` is ``≥`` where the table states a lower bound only (MCE "0.25+", PR-AUC
    "0.85+"), else ``=``. Discrimination numbers come from ``relcol.metrics.REGISTRY``
    (``auroc``, ``aupr_success`` as PR-AUC, ``cohens_d``, ``point_biserial``), computed on
    every (email, label) pair pooled.
    """
    wh = warehouse_of(warehouse)
    table = multilabel(wh, study=study).filter(
        (pl.col("average") == "micro")
        & (pl.col("mode") == "prediction_confidence")
        & (pl.col("target") == "binary")
    )
    if table.height != 1:
        raise InputError(f"study {study!r} is not the email example (one multi-label source)")
    row = table.row(0, named=True)
    ours = {
        "accuracy": row["accuracy"],
        "ece": row["ece"],
        "mce": row["mce"],
        "brier": row["brier_top"],
        "nll": row["nll_top"],
    }
    pooled = wh.predictions(study).with_columns(pooled=pl.lit("all"))
    for name, metric in (
        ("auroc", "auroc"),
        ("pr_auc", "aupr_success"),
        ("cohens_d", "cohens_d"),
        ("point_biserial", "point_biserial"),
    ):
        entry = metrics.REGISTRY[metric]
        ours[name] = entry.compute(pooled, ["pooled"]).collect()[metric][0]
    return pl.DataFrame(
        {
            "metric": list(EMAIL_PUBLISHED_TABLE),
            "relation": [
                "≥" if m in EMAIL_PUBLISHED_AT_LEAST else "=" for m in EMAIL_PUBLISHED_TABLE
            ],
            "published": list(EMAIL_PUBLISHED_TABLE.values()),
            "relcol": [ours[m] for m in EMAIL_PUBLISHED_TABLE],
            "definition": [_DEFINITIONS[m] for m in EMAIL_PUBLISHED_TABLE],
        },
        schema={
            "metric": pl.String,
            "relation": pl.String,
            "published": pl.Float64,
            "relcol": pl.Float64,
            "definition": pl.String,
        },
    )
