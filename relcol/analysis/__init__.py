"""The statistical layer: frames in, frames out, nothing drawn or printed.

``relcol.report`` renders what these functions return; it never computes a
metric itself (DESIGN.md §2).
"""

from __future__ import annotations

from relcol.analysis._bootstrap import (
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
from relcol.analysis._multilabel import (
    multilabel_bins,
    multilabel_calibration,
    multilabel_intervals,
    multilabel_micro_tables,
    multilabel_pairs,
    rank_tables_with_intervals,
    with_multilabel_intervals,
)
from relcol.analysis._nulls import (
    DEGRADING,
    NULLS,
    World,
    WorldResult,
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
from relcol.analysis._scores import binary_scores
from relcol.analysis._statistical import statistical_tables
from relcol.analysis._thresholds import TrafficLight, cell_evidence, cell_lights, thresholds
from relcol.analysis._trends import spearman, spearman_rows, trends

__all__ = [
    "DEGRADING",
    "LAWS",
    "METHODS",
    "NULLS",
    "CoverageResult",
    "Law",
    "MultilabelCoverage",
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
    "coverage_study",
    "degradation_summary",
    "fit_map",
    "intervals",
    "multilabel_bins",
    "multilabel_calibration",
    "multilabel_coverage_study",
    "multilabel_intervals",
    "multilabel_micro_tables",
    "multilabel_pairs",
    "on_realised_axis",
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
    "seed_spread",
    "simulate_curves",
    "simulate_multilabel",
    "simulate_studies",
    "spearman",
    "spearman_rows",
    "statistical_tables",
    "thresholds",
    "trends",
    "with_intervals",
    "with_multilabel_intervals",
    "world_study",
    "worst_gaps",
]
