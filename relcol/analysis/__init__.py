"""The statistical layer: frames in, frames out, nothing drawn or printed.

``relcol.report`` renders what these functions return; it never computes a
metric itself (docs/development.md).
"""

from __future__ import annotations

from relcol.analysis._agreement import soft_agreement
from relcol.analysis._bins import (
    bin_errors,
    confidence_histograms,
    figure_tables,
    oracle_risk,
    reliability_bins,
    risk_coverage,
    with_stage,
)
from relcol.analysis._bootstrap import (
    INTERVAL_METRICS,
    MIN_BIN_SAMPLES,
    NO_INTERVAL,
    Replicates,
    bin_metrics,
    bootstrap,
    intervals,
    model_references,
    paired_differences,
    percentile_interval,
    poisson_weight,
    poisson_weights,
    rank_metrics,
    seed_spread,
    with_intervals,
)
from relcol.analysis._corruptions import on_realised_axis, realised_rates, realised_trends
from relcol.analysis._coverage import (
    LAWS,
    CoverageResult,
    Law,
    MultilabelCoverage,
    coverage_study,
    multilabel_coverage_study,
    simulate_multilabel,
    simulate_studies,
)
from relcol.analysis._degradation import degradation_summary, worst_gaps
from relcol.analysis._difference_coverage import (
    DIFFERENCE_LAWS,
    DifferenceCoverage,
    difference_coverage_study,
    simulate_pairs,
)
from relcol.analysis._frames import CELL_KEYS, group_keys, require_columns, sort_by_appearance
from relcol.analysis._headline import GRID_COLUMNS, WORST_FIRST, break_grid, verdicts
from relcol.analysis._monitoring import (
    ALERT_COLUMNS,
    ALERT_EXIT,
    STREAM,
    MonitorResult,
    MonitorRules,
    monitor,
    monitoring_tables,
    simulate_monitoring,
)
from relcol.analysis._multilabel import (
    INTERVALS as MULTILABEL_INTERVALS,
)
from relcol.analysis._multilabel import (
    NO_MACRO_INTERVAL,
    macro_rows,
    multilabel_bins,
    multilabel_calibration,
    multilabel_intervals,
    multilabel_micro_tables,
    multilabel_pairs,
    name_label_codes,
    name_labels_in,
    named_labels,
    rank_tables_with_intervals,
    with_multilabel_intervals,
)
from relcol.analysis._nulls import (
    DEGRADING,
    NULLS,
    World,
    WorldResult,
    gap_coverage,
    simulate_curves,
    world_study,
)
from relcol.analysis._page_tables import SUMMARY_TABLES, summary_tables
from relcol.analysis._recalibration import (
    METHODS,
    RecalibrationMap,
    calibration_split,
    fit_map,
    recalibrate_rows,
    recalibration_table,
)
from relcol.analysis._scorecard import MIN_CHANGE as SCORECARD_MIN_CHANGE
from relcol.analysis._scorecard import RELIABILITY_ECE as SCORECARD_RELIABILITY_ECE
from relcol.analysis._scorecard import corruption_error, scorecard
from relcol.analysis._scores import binary_scores
from relcol.analysis._statistical import statistical_tables
from relcol.analysis._thresholds import (
    LIGHTS,
    TrafficLight,
    cell_evidence,
    cell_lights,
    check_tau,
    thresholds,
    withhold_scores,
)
from relcol.analysis._training import SCOPES, with_training_variation
from relcol.analysis._trends import spearman, spearman_rows, trends
from relcol.store import CELL

__all__ = [
    "ALERT_COLUMNS",
    "ALERT_EXIT",
    "CELL",
    "CELL_KEYS",
    "DEGRADING",
    "DIFFERENCE_LAWS",
    "GRID_COLUMNS",
    "INTERVAL_METRICS",
    "LAWS",
    "LIGHTS",
    "METHODS",
    "MIN_BIN_SAMPLES",
    "MULTILABEL_INTERVALS",
    "NO_INTERVAL",
    "NO_MACRO_INTERVAL",
    "NULLS",
    "SCOPES",
    "SCORECARD_MIN_CHANGE",
    "SCORECARD_RELIABILITY_ECE",
    "STREAM",
    "SUMMARY_TABLES",
    "WORST_FIRST",
    "CoverageResult",
    "DifferenceCoverage",
    "Law",
    "MonitorResult",
    "MonitorRules",
    "MultilabelCoverage",
    "RecalibrationMap",
    "Replicates",
    "TrafficLight",
    "World",
    "WorldResult",
    "bin_errors",
    "bin_metrics",
    "binary_scores",
    "bootstrap",
    "break_grid",
    "calibration_split",
    "cell_evidence",
    "cell_lights",
    "check_tau",
    "confidence_histograms",
    "corruption_error",
    "coverage_study",
    "degradation_summary",
    "difference_coverage_study",
    "figure_tables",
    "fit_map",
    "gap_coverage",
    "group_keys",
    "intervals",
    "macro_rows",
    "model_references",
    "monitor",
    "monitoring_tables",
    "multilabel_bins",
    "multilabel_calibration",
    "multilabel_coverage_study",
    "multilabel_intervals",
    "multilabel_micro_tables",
    "multilabel_pairs",
    "name_label_codes",
    "name_labels_in",
    "named_labels",
    "on_realised_axis",
    "oracle_risk",
    "paired_differences",
    "percentile_interval",
    "poisson_weight",
    "poisson_weights",
    "rank_metrics",
    "rank_tables_with_intervals",
    "realised_rates",
    "realised_trends",
    "recalibrate_rows",
    "recalibration_table",
    "reliability_bins",
    "require_columns",
    "risk_coverage",
    "scorecard",
    "seed_spread",
    "simulate_curves",
    "simulate_monitoring",
    "simulate_multilabel",
    "simulate_pairs",
    "simulate_studies",
    "soft_agreement",
    "sort_by_appearance",
    "spearman",
    "spearman_rows",
    "statistical_tables",
    "summary_tables",
    "thresholds",
    "trends",
    "verdicts",
    "with_intervals",
    "with_multilabel_intervals",
    "with_stage",
    "with_training_variation",
    "withhold_scores",
    "world_study",
    "worst_gaps",
]
