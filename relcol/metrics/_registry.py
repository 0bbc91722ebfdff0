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
    calibration,
    count,
    ece,
    gap,
    mce,
    mean_confidence,
)
from relcol.store import CELL


@dataclass(frozen=True)
class Metric:
    """One metric and where each engine computes it.

    Attributes
    ----------
    name
        The metric's column name (METRICS.md §11), in every frame, view and export.
    kind
        Its family in METRICS.md §11: ``"basics"``, ``"calibration"``, …
    expr
        Row-level Polars builder (``ece``), usable inside any ``group_by().agg()``.
    table
        Polars frame function with one row per group holding the metric
        (``calibration``): the fast path, and the counterpart of ``view``.
    view
        SQL view (``sql/views/<view>.sql``) with one row per cell holding the metric.
    column
        The column of ``view`` and of ``table``'s output (default: ``name``).
    params
        Keyword parameters ``expr`` and ``table`` take for this metric (``("bins",)``).
    """

    name: str
    kind: str
    expr: Callable[..., pl.Expr]
    table: Callable[..., pl.LazyFrame]
    view: str
    column: str = ""
    params: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)

    def build(self, **params: object) -> pl.Expr:
        """The row-level expression, given the parameters it takes (others are ignored)."""
        return self.expr(**self._own(params)).alias(self.name)

    def compute(
        self, frame: pl.DataFrame | pl.LazyFrame, by: str | Iterable[str] = CELL, **params: object
    ) -> pl.LazyFrame:
        """The fast path: ``by`` columns and this metric, one row per group."""
        keys = [by] if isinstance(by, str) else list(by)
        out = self.table(frame, keys, **self._own(params))
        return out.select(*keys, pl.col(self.column).alias(self.name))

    def _own(self, params: dict[str, object]) -> dict[str, object]:
        return {key: value for key, value in params.items() if key in self.params}


def _in_calibration(name: str, kind: str, expr: Callable[..., pl.Expr], **extra) -> Metric:
    """A metric of the ``calibration`` table: Polars ``calibration()``, SQL view ``calibration``."""
    return Metric(name, kind, expr, table=calibration, view="calibration", **extra)


REGISTRY: MappingProxyType[str, Metric] = MappingProxyType(
    {
        metric.name: metric
        for metric in (
            _in_calibration("n", "basics", count),
            _in_calibration("accuracy", "basics", accuracy),
            _in_calibration("mean_confidence", "basics", mean_confidence),
            _in_calibration("gap", "basics", gap),
            _in_calibration("abs_gap", "basics", abs_gap),
            _in_calibration("ece", "calibration", ece, params=("bins",)),
            _in_calibration("mce", "calibration", mce, params=("bins",)),
        )
    }
)
