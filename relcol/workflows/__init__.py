"""What relcol does for a user, one module per use; ``relcol`` re-exports these names.

- ``_studies``: open a warehouse, run a study (``ingest``, also ``portable``) or a
  simulation into it, read its calibration, consistency and scorecard tables;
- ``_portable``: a study run in a child process with the portable numeric environment;
- ``_external_predictions``: ingest predictions made elsewhere, and what only such a study
  records (per class, confidence sources, soft agreement);
- ``_multilabel_scores``: multi-label calibration per label, micro and macro;
- ``_recalibration_runs``: fit recalibration maps and commit the before/after study;
- ``_example_runs``: the built-in email example beside the seed document's table;
- ``_report_tables``: every table the report shows, computed before anything is drawn;
- ``_report_pages``: the report itself (tables, materialised views, HTML, terminal lines);
- ``_beside``: a step run in a thread beside another (the consistency table beside the
  statistical layer), stopped when the other fails;
- ``_shared``: what they share (a warehouse from a path, the engine choice, a run's spec).

Every write goes through ``Warehouse.commit``; nothing here draws (``relcol.report`` does).
"""

from __future__ import annotations

from relcol.workflows._example_runs import ExampleResult, email_comparison, example
from relcol.workflows._external_predictions import (
    PredictionsResult,
    by_class,
    confidence_sources,
    ingest_predictions,
    soft_agreement,
)
from relcol.workflows._multilabel_scores import multilabel, multilabel_bins
from relcol.workflows._portable import ChildStopped
from relcol.workflows._recalibration_runs import (
    RecalibrationResult,
    recalibrate,
    recalibration,
    recalibration_summary,
)
from relcol.workflows._report_pages import ReportResult, report, sources_summary
from relcol.workflows._report_tables import ECE_NULL_DRAWS, external_tables, report_tables
from relcol.workflows._studies import (
    calibration,
    consistency,
    ingest,
    open_warehouse,
    scorecard,
    scorecard_options,
    simulate_consistency,
)

__all__ = [
    "ECE_NULL_DRAWS",
    "ChildStopped",
    "ExampleResult",
    "PredictionsResult",
    "RecalibrationResult",
    "ReportResult",
    "by_class",
    "calibration",
    "confidence_sources",
    "consistency",
    "email_comparison",
    "example",
    "external_tables",
    "ingest",
    "ingest_predictions",
    "multilabel",
    "multilabel_bins",
    "open_warehouse",
    "recalibrate",
    "recalibration",
    "recalibration_summary",
    "report",
    "report_tables",
    "scorecard",
    "scorecard_options",
    "simulate_consistency",
    "soft_agreement",
    "sources_summary",
]
