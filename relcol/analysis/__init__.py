"""The statistical layer: frames in, frames out, nothing drawn or printed.

``relcol.report`` renders what these functions return; it never computes a
metric itself (DESIGN.md §2).
"""

from __future__ import annotations

from relcol.analysis._bins import figure_tables, risk_coverage, with_stage
from relcol.analysis._bootstrap import (
    INTERVAL_METRICS,
    MIN_BIN_SAMPLES,
    NO_INTERVAL,
    Replicates,
    bin_metrics,
    bootstrap,
    intervals,
    paired_differences,
    percentile_interval,
    poisson_weight,
    poisson_weights,
    rank_metrics,
    seed_spread,
    with_intervals,
)
from relcol.analysis._corruptions import on_realised_axis, realised_rates, realised_trends
from relcol.analysis._coverage import LAWS, CoverageResult, Law, coverage_study, simulate_studies
from relcol.analysis._degradation import degradation_summary, worst_gaps
from relcol.analysis._frames import CELL_KEYS, group_keys, require_columns, sort_by_appearance
from relcol.analysis._headline import LIGHTS, verdicts
from relcol.analysis._multilabel import multilabel_bins, multilabel_calibration, multilabel_pairs
from relcol.analysis._nulls import (
    DEGRADING,
    NULLS,
    World,
    WorldResult,
    gap_coverage,
    simulate_curves,
    world_study,
)
from relcol.analysis._recalibration import (
    METHODS,
    RecalibrationMap,
    calibration_split,
    fit_map,
    recalibrate_rows,
    recalibration_table,
)
from relcol.analysis._scorecard import corruption_error, scorecard
from relcol.analysis._scores import binary_scores
from relcol.analysis._statistical import statistical_tables
from relcol.analysis._thresholds import (
    TrafficLight,
    cell_evidence,
    cell_lights,
    check_tau,
    thresholds,
)
from relcol.analysis._training import SCOPES, with_training_variation
from relcol.analysis._trends import spearman, spearman_rows, trends

__all__ = [
    "CELL_KEYS",
    "DEGRADING",
    "INTERVAL_METRICS",
    "LAWS",
    "LIGHTS",
    "METHODS",
    "MIN_BIN_SAMPLES",
    "NO_INTERVAL",
    "NULLS",
    "SCOPES",
    "CoverageResult",
    "Law",
    "RecalibrationMap",
    "Replicates",
    "TrafficLight",
    "World",
    "WorldResult",
    "bin_metrics",
    "binary_scores",
    "bootstrap",
    "calibration_split",
    "cell_evidence",
    "cell_lights",
    "check_tau",
    "corruption_error",
    "coverage_study",
    "degradation_summary",
    "figure_tables",
    "fit_map",
    "gap_coverage",
    "group_keys",
    "intervals",
    "multilabel_bins",
    "multilabel_calibration",
    "multilabel_pairs",
    "on_realised_axis",
    "paired_differences",
    "percentile_interval",
    "poisson_weight",
    "poisson_weights",
    "rank_metrics",
    "realised_rates",
    "realised_trends",
    "recalibrate_rows",
    "recalibration_table",
    "require_columns",
    "risk_coverage",
    "scorecard",
    "seed_spread",
    "simulate_curves",
    "simulate_studies",
    "sort_by_appearance",
    "spearman",
    "spearman_rows",
    "statistical_tables",
    "thresholds",
    "trends",
    "verdicts",
    "with_intervals",
    "with_stage",
    "with_training_variation",
    "world_study",
    "worst_gaps",
]
