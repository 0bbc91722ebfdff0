"""Every metric, once: its column name, its Polars builders and the SQL that computes it.

Tests iterate over ``REGISTRY`` to hold each metric to its reference implementation and
the two engines to each other; the report iterates over it to know what to compute and
where. Adding a metric is one entry in ``REGISTRY`` below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

import polars as pl

from relcol.metrics._calibration import (
    abs_gap,
    accuracy,
    ace,
    count,
    ece,
    ece_debiased,
    gap,
    mce,
    mce_n,
    mean_confidence,
    rmsce,
)
from relcol.metrics._consistency import consistency
from relcol.metrics._discrimination import (
    aupr_error,
    aupr_success,
    auroc,
    cohens_d,
    discrimination,
    fpr_at_95tpr,
    point_biserial,
)
from relcol.metrics._proba import brier, classwise_ece, nll
from relcol.metrics._scores import (
    brier_reliability,
    brier_resolution,
    brier_top,
    brier_uncertainty,
    brier_within,
    nll_top,
)
from relcol.metrics._selective import (
    aurc,
    aurc_optimal,
    coverage_at_risk,
    e_aurc,
    risk_at_coverage,
    selective,
)
from relcol.metrics._tables import calibration
from relcol.store import CELL


@dataclass(frozen=True)
class Metric:
    """One metric and where each engine computes it.

    Attributes
    ----------
    name
        The metric's column name (docs/warehouse.md), in every frame, view and export.
    kind
        Its family in docs/warehouse.md: ``"basics"``, ``"calibration"``, ``"proper scores"``,
        ``"discrimination"``, ``"selective"``.
    expr
        Row-level Polars builder (``ece``), usable inside any ``group_by().agg()``; None for
        the ECE₀ family, which simulates from per-bin statistics and exists only as a table.
    table
        Polars frame function with one row per group holding the metric
        (``calibration``): the fast path, and the counterpart of ``view``.
    view
        SQL view (``sql/views/<view>.sql``) with one row per cell holding the metric.
    column
        The column of ``view`` and of ``table``'s output (default: ``name``).
    params
        Keyword parameters ``expr`` and ``table`` take for this metric (``("bins",)``).
    needs_proba
        Whether the metric needs the class-probability vector (null for a cell without one).
    grain
        What one row of ``table`` and ``view`` is: ``"cell"``, or ``"cell × axis"`` for the
        consistency metrics (docs/consistency.md), whose tables add the ``keys`` columns to ``by``.
    keys
        Columns ``table`` and ``view`` add to the grouping columns (``("axis",)``).
    """

    name: str
    kind: str
    expr: Callable[..., pl.Expr] | None
    table: Callable[..., pl.LazyFrame]
    view: str
    column: str = ""
    params: tuple[str, ...] = ()
    needs_proba: bool = False
    grain: str = "cell"
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)

    def build(self, **params: object) -> pl.Expr:
        """The row-level expression, given the parameters it takes (others are ignored)."""
        if self.expr is None:
            raise TypeError(f"{self.name} has no row-level builder; use compute()")
        return self.expr(**self._own(params)).alias(self.name)

    def compute(
        self, frame: pl.DataFrame | pl.LazyFrame, by: str | Iterable[str] = CELL, **params: object
    ) -> pl.LazyFrame:
        """The fast path: ``by`` columns (then ``keys``) and this metric, one row per group."""
        keys = [by] if isinstance(by, str) else list(by)
        out = self.table(frame, keys, **self._own(params))
        return out.select(*keys, *self.keys, pl.col(self.column).alias(self.name))

    def _own(self, params: dict[str, object]) -> dict[str, object]:
        return {key: value for key, value in params.items() if key in self.params}


def _in_calibration(name: str, kind: str, expr: Callable[..., pl.Expr] | None, **extra) -> Metric:
    """A metric of the ``calibration`` table: Polars ``calibration()``, SQL view ``calibration``."""
    return Metric(name, kind, expr, table=calibration, view="calibration", **extra)


def _in_discrimination(name: str, expr: Callable[..., pl.Expr]) -> Metric:
    """A metric of the ``discrimination`` table and view."""
    return Metric(name, "discrimination", expr, table=discrimination, view="discrimination")


def _in_selective(name: str, expr: Callable[..., pl.Expr], **extra) -> Metric:
    """A metric of the ``selective`` table and view."""
    return Metric(name, "selective", expr, table=selective, view="selective", **extra)


def _in_consistency(name: str) -> Metric:
    """A metric of the ``consistency`` table and view: one row per cell × axis, no row-level builder."""
    return Metric(
        name,
        "consistency",
        None,
        table=consistency,
        view="consistency",
        grain="cell × axis",
        keys=("axis",),
    )


#: The consistency metrics (docs/warehouse.md); the consistency table's ``accuracy`` is the basics
#: metric averaged over replicates, so it is not listed again.
CONSISTENCY = (
    "consistently_correct",
    "always_wrong",
    "flipping",
    "distinct_classes",
    "prediction_entropy",
    "ec_l",
    "ec_l_pooled",
    "ec_g",
    "ec_acc",
    "ec_corr",
    "pa",
    "churn",
    "pa_kappa",
    "pa_v",
    "kappa_error",
)

BINS = ("bins",)
NULL = ("bins", "draws")
SCORES = "proper scores"

REGISTRY: MappingProxyType[str, Metric] = MappingProxyType(
    {
        metric.name: metric
        for metric in (
            _in_calibration("n", "basics", count),
            _in_calibration("accuracy", "basics", accuracy),
            _in_calibration("mean_confidence", "basics", mean_confidence),
            _in_calibration("gap", "basics", gap),
            _in_calibration("abs_gap", "basics", abs_gap),
            _in_calibration("ece", "calibration", ece, params=BINS),
            _in_calibration("mce", "calibration", mce, params=BINS),
            _in_calibration("mce_n", "calibration", mce_n, params=BINS),
            _in_calibration("ace", "calibration", ace, params=BINS),
            _in_calibration("rmsce", "calibration", rmsce, params=BINS),
            _in_calibration(
                "classwise_ece", "calibration", classwise_ece, params=BINS, needs_proba=True
            ),
            _in_calibration("ece_null", "calibration", None, params=NULL),
            _in_calibration("ece_excess", "calibration", None, params=NULL),
            _in_calibration("ece_pvalue", "calibration", None, params=NULL),
            _in_calibration("ece_debiased", "calibration", ece_debiased, params=BINS),
            _in_calibration("brier", SCORES, brier, needs_proba=True),
            _in_calibration("brier_top", SCORES, brier_top),
            _in_calibration("brier_reliability", SCORES, brier_reliability, params=BINS),
            _in_calibration("brier_resolution", SCORES, brier_resolution, params=BINS),
            _in_calibration("brier_uncertainty", SCORES, brier_uncertainty),
            _in_calibration("brier_within", SCORES, brier_within, params=BINS),
            _in_calibration("nll", SCORES, nll, needs_proba=True),
            _in_calibration("nll_top", SCORES, nll_top),
            _in_discrimination("auroc", auroc),
            _in_discrimination("aupr_success", aupr_success),
            _in_discrimination("aupr_error", aupr_error),
            _in_discrimination("fpr_at_95tpr", fpr_at_95tpr),
            _in_discrimination("cohens_d", cohens_d),
            _in_discrimination("point_biserial", point_biserial),
            _in_selective("aurc", aurc),
            _in_selective("aurc_optimal", aurc_optimal),
            _in_selective("e_aurc", e_aurc),
            _in_selective("risk_at_coverage", risk_at_coverage, params=("coverage",)),
            _in_selective("coverage_at_risk", coverage_at_risk, params=("risk",)),
            *(_in_consistency(name) for name in CONSISTENCY),
        )
    }
)
