"""Metrics as Polars expression builders (docs/metrics.md); their SQL twins live in ``sql/``.

Builders are pure: they return ``pl.Expr`` or ``pl.LazyFrame`` and never read, write or
collect. Row-level builders (``ece()``, ``auroc()``, ``aurc()``) work inside any
``group_by().agg()``; the fast paths (``calibration()``, ``discrimination()``,
``selective()``, ``selective_curve()``, all at once with ``metric_tables()``) aggregate rows
once into sufficient statistics (per-bin sums, ``calibration_bins()``; counts per distinct
confidence level) and derive every number from those. ``REGISTRY`` lists every metric with
the Polars and SQL code that computes it. ``uniform()`` is the counter-based generator the
two engines share.

>>> import polars as pl
>>> from relcol.metrics import accuracy, ece, gap
>>> rows = pl.DataFrame({"model": ["a", "a", "b"], "confidence": [0.75, 0.75, 0.5], "correct": [True, False, True]})
>>> rows.group_by("model").agg(accuracy(), gap(), ece(bins=4)).sort("model").rows()
[('a', 0.5, 0.25, 0.25), ('b', 1.0, -0.5, 0.5)]
"""

from __future__ import annotations

from relcol.errors import ParameterError
from relcol.metrics._bins import ORDER, bin_index, grid_value, mass_bin_index
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
from relcol.metrics._consistency import (
    always_wrong,
    churn_from_counts,
    consistency,
    consistency_counts,
    consistency_pairs,
    consistency_samples,
    consistently_correct,
    distinct_classes_from_counts,
    ec_acc_from_counts,
    ec_acc_from_pairs,
    ec_corr_from_pairs,
    ec_g_from_counts,
    ec_g_from_pairs,
    ec_l_from_pairs,
    ec_l_pooled_from_counts,
    flipping,
    kappa_error_from_pairs,
    pa_from_counts,
    pa_from_pairs,
    pa_kappa_from_pairs,
    pa_v_from_pairs,
    prediction_entropy_from_counts,
)
from relcol.metrics._discrimination import _cohens_d as cohens_d_from_moments
from relcol.metrics._discrimination import _point_biserial as point_biserial_from_moments
from relcol.metrics._discrimination import (
    aupr_error,
    aupr_success,
    auroc,
    cohens_d,
    discrimination,
    fpr_at_95tpr,
    point_biserial,
)
from relcol.metrics._exact import exact_mean, exact_product, exact_sum, exact_var
from relcol.metrics._frames import (
    CHUNK_ROWS,
    by_chunks,
    chunk_filter,
    chunk_spans,
    concat_runs,
    run_rows,
)
from relcol.metrics._kernels import (
    BinSums,
    aurc_optimal_kernel,
    harmonic_kernel,
    moment_metrics,
    rank_metrics,
    row_mean,
    weighted_rank_metrics,
)
from relcol.metrics._proba import _brier_terms as brier_terms
from relcol.metrics._proba import _nll_terms as nll_terms
from relcol.metrics._proba import brier, classwise_ece, nll, proba_entropy, proba_margin
from relcol.metrics._random import ABSORB as HASH_ABSORB
from relcol.metrics._random import MASK as HASH_MASK
from relcol.metrics._random import MIX as HASH_MIX
from relcol.metrics._random import SEED as HASH_SEED
from relcol.metrics._random import TWO_32, hash32, normal, stream_key, uniform
from relcol.metrics._registry import (
    CALIBRATION_COLUMNS,
    NEED_PROBA,
    REGISTRY,
    REPLICATE_INPUTS,
    WIDTH_METRICS,
    Metric,
    bin_metrics,
    labels,
    replicated,
    view_metrics,
    width_metrics,
)
from relcol.metrics._scores import EPS as CLIP_EPS
from relcol.metrics._scores import _nll_top_terms as nll_top_terms
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
from relcol.metrics._selective import _ASYMPTOTIC as HARMONIC_ASYMPTOTIC
from relcol.metrics._selective import _EULER_GAMMA as EULER_GAMMA
from relcol.metrics._selective import _SHIFT as HARMONIC_SHIFT
from relcol.metrics._selective import (
    aurc,
    aurc_optimal,
    coverage_at_risk,
    e_aurc,
    harmonic,
    risk_at_coverage,
    selective,
    selective_curve,
)
from relcol.metrics._statistics import BINNINGS, bin_sums, bin_terms, calibration_bins
from relcol.metrics._tables import calibration, metric_tables

__all__ = [
    "BINNINGS",
    "CALIBRATION_COLUMNS",
    "CHUNK_ROWS",
    "CLIP_EPS",
    "EULER_GAMMA",
    "HARMONIC_ASYMPTOTIC",
    "HARMONIC_SHIFT",
    "HASH_ABSORB",
    "HASH_MASK",
    "HASH_MIX",
    "HASH_SEED",
    "NEED_PROBA",
    "ORDER",
    "REGISTRY",
    "REPLICATE_INPUTS",
    "TWO_32",
    "WIDTH_METRICS",
    "BinSums",
    "Metric",
    "ParameterError",
    "abs_gap",
    "abs_gap_from_bins",
    "accuracy",
    "accuracy_from_bins",
    "ace",
    "always_wrong",
    "aupr_error",
    "aupr_success",
    "aurc",
    "aurc_optimal",
    "aurc_optimal_kernel",
    "auroc",
    "bin_index",
    "bin_metrics",
    "bin_sums",
    "bin_terms",
    "brier",
    "brier_reliability",
    "brier_reliability_from_bins",
    "brier_resolution",
    "brier_resolution_from_bins",
    "brier_terms",
    "brier_top",
    "brier_top_from_bins",
    "brier_uncertainty",
    "brier_uncertainty_from_bins",
    "brier_within",
    "brier_within_from_bins",
    "by_chunks",
    "calibration",
    "calibration_bins",
    "chunk_filter",
    "chunk_spans",
    "churn_from_counts",
    "classwise_ece",
    "cohens_d",
    "cohens_d_from_moments",
    "concat_runs",
    "consistency",
    "consistency_counts",
    "consistency_pairs",
    "consistency_samples",
    "consistently_correct",
    "count",
    "count_from_bins",
    "coverage_at_risk",
    "discrimination",
    "distinct_classes_from_counts",
    "e_aurc",
    "ec_acc_from_counts",
    "ec_acc_from_pairs",
    "ec_corr_from_pairs",
    "ec_g_from_counts",
    "ec_g_from_pairs",
    "ec_l_from_pairs",
    "ec_l_pooled_from_counts",
    "ece",
    "ece_debiased",
    "ece_debiased_from_bins",
    "ece_from_bins",
    "ece_over",
    "ece_over_from_bins",
    "ece_under",
    "ece_under_from_bins",
    "exact_mean",
    "exact_product",
    "exact_sum",
    "exact_var",
    "flipping",
    "fpr_at_95tpr",
    "gap",
    "gap_from_bins",
    "grid_value",
    "harmonic",
    "harmonic_kernel",
    "hash32",
    "kappa_error_from_pairs",
    "labels",
    "mass_bin_index",
    "mce",
    "mce_from_bins",
    "mce_n",
    "mce_n_from_bins",
    "mean_confidence",
    "mean_confidence_from_bins",
    "metric_tables",
    "moment_metrics",
    "nll",
    "nll_terms",
    "nll_top",
    "nll_top_from_bins",
    "nll_top_terms",
    "normal",
    "pa_from_counts",
    "pa_from_pairs",
    "pa_kappa_from_pairs",
    "pa_v_from_pairs",
    "point_biserial",
    "point_biserial_from_moments",
    "prediction_entropy_from_counts",
    "proba_entropy",
    "proba_margin",
    "rank_metrics",
    "replicated",
    "risk_at_coverage",
    "rmsce",
    "rmsce_from_bins",
    "row_mean",
    "run_rows",
    "selective",
    "selective_curve",
    "stream_key",
    "uniform",
    "view_metrics",
    "weighted_rank_metrics",
    "width_metrics",
]
