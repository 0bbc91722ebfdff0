"""Every metric, once: its column, its label, its Polars builders, its SQL view and the numpy
kernel that computes its bootstrap replicates.

Tests iterate over ``REGISTRY`` to hold each metric to its reference implementation, the
engines to each other and the report's labels to the registry's; the report and the bootstrap
iterate over it to know what to compute, where and under which heading. Every list of
metrics elsewhere (``WIDTH_METRICS``, ``CALIBRATION_COLUMNS``, ``NEED_PROBA``, the
bootstrap's ``REPLICATED``, ``TABLES``, ``INTERVAL_METRICS``, ``NO_INTERVAL``, the
statistical layer's ``SPREAD``, the report's headings) is derived from it.

**Adding a metric** to the calibration table is one entry in ``REGISTRY`` below plus its
builders (``ece_over`` was added so):

1. the row-level Polars builder (``ece_over()`` in ``_calibration.py``) and, for a metric of
   the equal-width bins, its ``*_from_bins`` builder (the fast path computes the table from
   it, and the per-seed values and ``relcol.analysis.binary_scores`` from the same builders);
2. its column in the SQL macro of its view (``sql/macros/calibration.sql``, through a shared
   macro such as ``ece_from_bins`` where one fits) and in the view's column list
   (``sql/views/calibration.sql``);
3. its numpy kernel in ``_kernels.py`` (a function of ``BinSums`` for a binned metric), so
   the bootstrap gives it replicates; or none, and it has no interval;
4. the entry: name, family, builders, kernel, label and, when it has replicates, either
   ``interval=""`` (its interval is printed: first verify its coverage with
   ``relcol.analysis.coverage_study``) or the reason it is not;
5. when it has replicates, its population value in ``Law.truth``
   (``relcol/analysis/_coverage.py``), which the coverage study measures intervals against;
6. a test against an independent numpy reference (``tests/reference.py``) and its
   definition in ``docs/metrics.md`` and columns in ``docs/warehouse.md``.

Its place in the entry order is its column's place in the table and the report's.
``tests/test_registry_contract.py`` then checks the rest: the column in the view and the
table, the report's heading, the kernel against the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

import polars as pl

from relcol.metrics import _kernels as k
from relcol.metrics._calibration import (
    abs_gap,
    abs_gap_from_bins,
    accuracy,
    accuracy_from_bins,
    ace,
    count,
    count_from_bins,
    ece,
    ece_debiased,
    ece_debiased_from_bins,
    ece_from_bins,
    ece_over,
    ece_over_from_bins,
    ece_under,
    ece_under_from_bins,
    gap,
    gap_from_bins,
    mce,
    mce_from_bins,
    mce_n,
    mce_n_from_bins,
    mean_confidence,
    mean_confidence_from_bins,
    rmsce,
    rmsce_from_bins,
)
from relcol.metrics._consistency import CONSISTENCY_MEANS, consistency
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
    brier_reliability_from_bins,
    brier_resolution,
    brier_resolution_from_bins,
    brier_top,
    brier_top_from_bins,
    brier_uncertainty,
    brier_uncertainty_from_bins,
    brier_within,
    brier_within_from_bins,
    nll_top,
    nll_top_from_bins,
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

#: What a metric's numpy kernel reads (``Metric.needs``): the equal-width or equal-mass
#: per-bin sums, the per-row proba scores, the confidence moments of right and wrong rows,
#: or the counts per confidence level. The bootstrap computes its replicates family by
#: family, in this order.
REPLICATE_INPUTS = ("bins", "mass", "proba", "moments", "ranks")


@dataclass(frozen=True)
class Metric:
    """One metric and where each engine computes it.

    Attributes
    ----------
    name
        The metric's column name (docs/warehouse.md), in every frame, view and export.
    kind
        Its family in docs/warehouse.md: ``"basics"``, ``"calibration"``, ``"proper scores"``,
        ``"discrimination"``, ``"selective"``, ``"consistency"``.
    expr
        Row-level Polars builder (``ece``), usable inside any ``group_by().agg()``; None for
        the ECE₀ family, which simulates from per-bin statistics and exists only as a table.
    table
        Polars frame function with one row per group holding the metric
        (``calibration``): the fast path, and the counterpart of ``view``.
    view
        SQL view (``sql/views/<view>.sql``) with one row per cell holding the metric.
    label
        The metric's heading in the report's tables, the terminal and LaTeX (``"ECE"``); a
        metric with a target names it as a format field (``{coverage:.0%}``, see ``labels``).
    column
        The column of ``view`` and of ``table``'s output (default: ``name``).
    params
        Keyword parameters ``expr`` and ``table`` take for this metric (``("bins",)``).
    needs_proba
        Whether the metric needs the class-probability vector (null for a cell without one).
    from_bins
        Polars builder over the equal-width ``calibration_bins`` sums of one group
        (``ece_from_bins``): how ``calibration`` computes the metric; None otherwise.
    needs
        What ``kernel`` reads, one of ``REPLICATE_INPUTS``; ``""`` without a kernel.
    kernel
        The numpy function the bootstrap computes the metric's replicates with
        (``relcol.metrics._kernels``): for ``"bins"``/``"mass"`` a function of ``BinSums``
        returning the metric; for ``"proba"`` ``row_mean``; for ``"moments"`` and
        ``"ranks"`` the function computing the whole family at once (``moment_metrics``,
        ``rank_metrics``), whose item ``name`` is the metric. None: no replicates.
    interval
        None: the metric has no bootstrap interval; ``""``: its percentile interval is
        printed (its coverage verified by ``relcol.analysis.coverage_study``); any other
        text: it has replicates, but its interval is not printed, and this says why.
    spread
        Whether the report's table shows the metric's per-seed spread (``_sd``, ``_min``,
        ``_max``) beside it (every replicated metric's per-seed values are in ``seeds``).
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
    label: str = ""
    column: str = ""
    params: tuple[str, ...] = ()
    needs_proba: bool = False
    from_bins: Callable[[], pl.Expr] | None = None
    needs: str = ""
    kernel: Callable | None = None
    interval: str | None = None
    spread: bool = False
    grain: str = "cell"
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)
        if not self.label:
            object.__setattr__(self, "label", self.name)

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


def _binned(
    name: str,
    kind: str,
    expr: Callable[..., pl.Expr],
    from_bins: Callable[[], pl.Expr],
    kernel: Callable[[k.BinSums], object],
    label: str,
    interval: str = "",
    params: tuple[str, ...] = (),
    *,
    spread: bool = False,
) -> Metric:
    """A metric of the ``calibration`` table computed from the equal-width per-bin sums, with
    replicates from its bin kernel."""
    return _in_calibration(
        name,
        kind,
        expr,
        label=label,
        from_bins=from_bins,
        needs="bins",
        kernel=kernel,
        interval=interval,
        params=params,
        spread=spread,
    )


def _vector_mean(name: str, expr: Callable[..., pl.Expr], label: str) -> Metric:
    """A proper score of the probability vector: the mean of a per-row term, replicated from
    the term's per-cell sum (``row_mean``)."""
    return _in_calibration(
        name,
        SCORES,
        expr,
        label=label,
        needs_proba=True,
        needs="proba",
        kernel=k.row_mean,
        interval="",
    )


def _in_discrimination(name: str, expr: Callable[..., pl.Expr], label: str, **extra) -> Metric:
    """A metric of the ``discrimination`` table and view."""
    return Metric(
        name,
        "discrimination",
        expr,
        table=discrimination,
        view="discrimination",
        label=label,
        **extra,
    )


def _ranked(name: str, kind: str, expr: Callable[..., pl.Expr], label: str, **extra) -> Metric:
    """A rank metric (``discrimination`` or ``selective``): replicates from ``rank_metrics``."""
    table = discrimination if kind == "discrimination" else selective
    return Metric(
        name,
        kind,
        expr,
        table=table,
        view=kind,
        label=label,
        needs="ranks",
        kernel=k.rank_metrics,
        **extra,
    )


def _in_consistency(name: str, label: str) -> Metric:
    """A metric of the ``consistency`` table and view: one row per cell × axis, no row-level builder."""
    return Metric(
        name,
        "consistency",
        None,
        table=consistency,
        view="consistency",
        label=label,
        grain="cell × axis",
        keys=("axis",),
    )


#: The consistency metrics (docs/warehouse.md): the ``consistency`` table's means after its
#: ``accuracy``, which is the basics metric averaged over replicates and not listed again.
CONSISTENCY = CONSISTENCY_MEANS[1:]
_CONSISTENCY_LABELS = {
    "consistently_correct": "consistently correct",
    "always_wrong": "always wrong",
    "flipping": "flipping",
    "distinct_classes": "distinct classes",
    "prediction_entropy": "prediction entropy",
    "ec_l": "EC_l",
    "ec_l_pooled": "EC_l pooled",
    "ec_g": "EC_g",
    "ec_acc": "EC_acc",
    "ec_corr": "EC_corr",
    "pa": "PA",
    "churn": "churn",
    "pa_kappa": "PA κ",
    "pa_v": "PA_v",
    "kappa_error": "κ_e",
}

BINS = ("bins",)
NULL = ("bins", "draws")
SCORES = "proper scores"
#: Why a binned estimator's interval is not printed: its bias is of the order of its
#: interval, so its bootstrap interval misses the population value far more often than α.
_FLOOR = "the same floor as ECE"

REGISTRY: MappingProxyType[str, Metric] = MappingProxyType(
    {
        metric.name: metric
        for metric in (
            _in_calibration("n", "basics", count, label="n", from_bins=count_from_bins),
            _binned(
                "accuracy",
                "basics",
                accuracy,
                accuracy_from_bins,
                k.accuracy_kernel,
                "accuracy",
                spread=True,
            ),
            _binned(
                "mean_confidence",
                "basics",
                mean_confidence,
                mean_confidence_from_bins,
                k.mean_confidence_kernel,
                "mean conf.",
                spread=True,
            ),
            _binned("gap", "basics", gap, gap_from_bins, k.gap_kernel, "gap Δ", spread=True),
            _binned("abs_gap", "basics", abs_gap, abs_gap_from_bins, k.abs_gap_kernel, "|Δ|"),
            _binned(
                "ece",
                "calibration",
                ece,
                ece_from_bins,
                k.ece_kernel,
                "ECE",
                "binned ECE sums |accₘ − confₘ|, whose noise is positive in every bin: a floor "
                "of order √(M/n) above the population value that the resample adds again",
                BINS,
                spread=True,
            ),
            _binned(
                "ece_over",
                "calibration",
                ece_over,
                ece_over_from_bins,
                k.ece_over_kernel,
                "ECE (over)",
                "the overconfident part of the binned ECE: each bin's noise adds to it or to "
                "ece_under, never cancels, so it has the ECE's floor above the population value",
                BINS,
            ),
            _binned(
                "ece_under",
                "calibration",
                ece_under,
                ece_under_from_bins,
                k.ece_under_kernel,
                "ECE (under)",
                "the underconfident part of the binned ECE: " + _FLOOR,
                BINS,
            ),
            _binned(
                "mce",
                "calibration",
                mce,
                mce_from_bins,
                k.mce_kernel,
                "MCE",
                "a maximum over bins, set by the emptiest bins' noise",
                BINS,
            ),
            _in_calibration(
                "mce_n",
                "calibration",
                mce_n,
                label="MCE bin n",
                params=BINS,
                from_bins=mce_n_from_bins,
            ),
            _in_calibration(
                "ace",
                "calibration",
                ace,
                label="ACE",
                params=BINS,
                needs="mass",
                kernel=k.ece_kernel,
                interval="ECE on equal-mass bins: " + _FLOOR,
            ),
            _binned(
                "rmsce",
                "calibration",
                rmsce,
                rmsce_from_bins,
                k.rmsce_kernel,
                "RMSCE",
                "the root-mean-square of the binned gaps: " + _FLOOR,
                BINS,
            ),
            _in_calibration(
                "classwise_ece",
                "calibration",
                classwise_ece,
                label="classwise ECE",
                params=BINS,
                needs_proba=True,
            ),
            _in_calibration("ece_null", "calibration", None, label="ECE₀", params=NULL),
            _in_calibration(
                "ece_excess",
                "calibration",
                None,
                label="ECE − ECE₀",
                params=NULL,
                # replicates: ECE's, minus ECE₀ held at its point estimate
                interval="ECE₀ is the floor of a calibrated model; subtracting it over-corrects "
                "a miscalibrated one, so the interval covers neither the population ECE nor a "
                "fixed share of it",
            ),
            _in_calibration("ece_pvalue", "calibration", None, label="p", params=NULL),
            _binned(
                "ece_debiased",
                "calibration",
                ece_debiased,
                ece_debiased_from_bins,
                k.ece_debiased_kernel,
                "debiased CE",
                "Kumar et al.'s square is unbiased, but its root is not, and near a calibration "
                "error of 0 (a parameter at its boundary) neither the percentile, the basic "
                "(bootstrap truth = the plug-in square) nor a delta-method normal interval of "
                "the square covers on every law",
                BINS,
            ),
            _vector_mean("brier", brier, "Brier"),
            _binned(
                "brier_top",
                SCORES,
                brier_top,
                brier_top_from_bins,
                k.brier_top_kernel,
                "Brier (top)",
            ),
            _binned(
                "brier_reliability",
                SCORES,
                brier_reliability,
                brier_reliability_from_bins,
                k.brier_reliability_kernel,
                "reliability",
                "the plug-in square of the binned gaps (RMSCE²): biased upwards by the bins' "
                "sampling variance",
                BINS,
            ),
            _binned(
                "brier_resolution",
                SCORES,
                brier_resolution,
                brier_resolution_from_bins,
                k.brier_resolution_kernel,
                "resolution",
                "the spread of the per-bin accuracies includes their sampling variance: biased "
                "upwards",
                BINS,
            ),
            _binned(
                "brier_uncertainty",
                SCORES,
                brier_uncertainty,
                brier_uncertainty_from_bins,
                k.brier_uncertainty_kernel,
                "uncertainty",
            ),
            _binned(
                "brier_within",
                SCORES,
                brier_within,
                brier_within_from_bins,
                k.brier_within_kernel,
                "within-bin",
                params=BINS,
            ),
            _vector_mean("nll", nll, "NLL"),
            _binned("nll_top", SCORES, nll_top, nll_top_from_bins, k.nll_top_kernel, "NLL (top)"),
            _ranked("auroc", "discrimination", auroc, "AUROC", interval="", spread=True),
            _ranked(
                "aupr_success",
                "discrimination",
                aupr_success,
                "AUPR success",
                interval="average precision is a sum of precisions at the positives' ranks, "
                "biased downwards at a few hundred rows; its percentile interval undercovers "
                "(0.914–0.946 at n ≤ 300), and shifting it by the bootstrap bias does not mend it",
            ),
            _ranked(
                "aupr_error",
                "discrimination",
                aupr_error,
                "AUPR error",
                interval="as aupr_success, with the wrong rows as positives (0.916–0.946 at "
                "n ≤ 300)",
            ),
            _ranked("fpr_at_95tpr", "discrimination", fpr_at_95tpr, "FPR @ 95 % TPR", interval=""),
            _in_discrimination(
                "cohens_d",
                cohens_d,
                "Cohen's d",
                needs="moments",
                kernel=k.moment_metrics,
                interval="",
            ),
            _in_discrimination(
                "point_biserial",
                point_biserial,
                "point-biserial r",
                needs="moments",
                kernel=k.moment_metrics,
                interval="",
            ),
            _ranked("aurc", "selective", aurc, "AURC", interval=""),
            _ranked("aurc_optimal", "selective", aurc_optimal, "AURC*", interval=""),
            _ranked("e_aurc", "selective", e_aurc, "E-AURC", interval=""),
            _ranked(
                "risk_at_coverage",
                "selective",
                risk_at_coverage,
                "risk @ {coverage:.0%} cov.",
                params=("coverage",),
                interval="",
            ),
            _ranked(
                "coverage_at_risk",
                "selective",
                coverage_at_risk,
                "coverage @ {risk:.0%} risk",
                params=("risk",),
                interval="the largest coverage whose observed risk meets the target is a "
                "maximum over the noisy risk–coverage curve: biased upwards, and positive where "
                "the population has no such coverage",
            ),
            *(_in_consistency(name, _CONSISTENCY_LABELS[name]) for name in CONSISTENCY),
        )
    }
)


def replicated(needs: str) -> tuple[str, ...]:
    """The metrics whose kernel reads ``needs`` (one of ``REPLICATE_INPUTS``), in registry
    order."""
    return tuple(m.name for m in REGISTRY.values() if m.kernel is not None and m.needs == needs)


def labels(names: Iterable[str] | None = None, **targets: float) -> dict[str, str]:
    """Column → heading for the metrics of ``names`` that the registry has (default: all).

    A label naming its target (``"risk @ {coverage:.0%} cov."``) is filled in from
    ``targets``: ``coverage`` and ``risk``, by default the tables' 0.8 and 0.05.
    """
    wanted = REGISTRY if names is None else [name for name in names if name in REGISTRY]
    values = {"coverage": 0.8, "risk": 0.05} | targets
    return {name: REGISTRY[name].label.format(**values) for name in wanted}


def view_metrics(view: str) -> tuple[str, ...]:
    """The metrics of the SQL view (and Polars table) ``view``, in registry order."""
    return tuple(m.name for m in REGISTRY.values() if m.view == view)


#: Columns of ``calibration`` (and of the SQL view) after the group keys, in order.
CALIBRATION_COLUMNS = view_metrics("calibration")
#: Metrics of ``calibration`` that need the probability vector (null without one).
NEED_PROBA = tuple(m for m in CALIBRATION_COLUMNS if REGISTRY[m].needs_proba)
#: Metrics of ``calibration`` that come from the equal-width per-bin sums alone, in order.
WIDTH_METRICS = replicated("bins")


def width_metrics() -> list[pl.Expr]:
    """The builders of ``WIDTH_METRICS`` over equal-width ``calibration_bins`` sums (one
    group's bins), each named as its metric."""
    return [REGISTRY[name].from_bins().alias(name) for name in WIDTH_METRICS]


def bin_metrics(
    n,
    sum_confidence,
    sum_correct,
    sum_confidence_sq=None,
    sum_confidence_correct=None,
    sum_nll_top=None,
    *,
    names: Iterable[str] = WIDTH_METRICS,
) -> dict:
    """The binned metrics of ``names`` from (weighted) per-bin sums, bins on axis 0, each
    through its registry kernel (``Metric.kernel``).

    The numpy twin of the ``*_from_bins`` builders for arrays of many groups at once (the
    replicates of every cell). A bin with ``n`` = 0 is not a bin of that group (as a bin
    absent from ``calibration_bins``). ``ace`` is ECE's kernel: pass equal-mass sums.

    Parameters
    ----------
    n, sum_confidence, sum_correct, sum_confidence_sq, sum_confidence_correct, sum_nll_top
        Arrays of the ``calibration_bins`` sums, bins along axis 0 (the last three only for
        the proper scores).
    names
        The metrics to return, each with a kernel of the per-bin sums.

    Returns
    -------
    dict of str to numpy.ndarray
        Each metric with axis 0 reduced; NaN for a group without rows.

    Examples
    --------
    >>> import numpy as np
    >>> from relcol.metrics import bin_metrics
    >>> n, s, z = np.array([2.0, 1.0]), np.array([0.8, 0.9]), np.array([1.0, 1.0])
    >>> {name: round(float(v), 12) for name, v in bin_metrics(n, s, z, names=("ece", "ece_under")).items()}
    {'ece': 0.1, 'ece_under': 0.1}
    """
    kernels = {}
    for name in names:
        metric = REGISTRY.get(name)
        if metric is None or metric.needs not in ("bins", "mass") or metric.kernel is None:
            raise ValueError(f"unknown bin metric {name!r}")
        kernels[name] = metric.kernel
    return k.reduce_bins(
        kernels,
        n,
        sum_confidence,
        sum_correct,
        sum_confidence_sq,
        sum_confidence_correct,
        sum_nll_top,
    )
