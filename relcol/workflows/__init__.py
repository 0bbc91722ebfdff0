"""What relcol does for a user, one module per use; ``relcol`` re-exports these names.

- ``_studies``: open a warehouse, run a study (``ingest``, also ``portable``) or a
  simulation into it, read its calibration, consistency and scorecard tables;
- ``_portable``: a study run in a child process with the portable numeric environment;
- ``_external_predictions``: ingest predictions made elsewhere, and what only such a study
  records (per class, confidence sources, soft agreement);
- ``_multilabel_scores``: multi-label calibration per label, micro and macro;
- ``_recalibration_runs``: fit recalibration maps and commit the before/after study;
- ``_example_runs``: the built-in email example beside the published table;
- ``_report_tables``: every table the report shows, computed before anything is drawn;
- ``_report_pages``: the report itself (tables, materialised views, HTML, terminal lines);
- ``_beside``: a step run in a thread beside another (the consistency table beside the
  statistical layer), stopped when the other fails;
- ``_shared``: what they share (a warehouse from a path, the engine choice, a run's spec).

Every write goes through ``Warehouse.commit``; nothing here draws (``relcol.report`` does).
Each name is imported from its module on first use, so a command loads only the libraries its
workflow needs (``relcol ingest --predictions`` no report or table libraries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relcol._lazy import lazy_getattr

#: name -> the module that defines it.
_LAZY = {
    "ECE_NULL_DRAWS": "relcol.workflows._report_tables",
    "ChildStopped": "relcol.workflows._portable",
    "ExampleResult": "relcol.workflows._example_runs",
    "PredictionsResult": "relcol.workflows._external_predictions",
    "RecalibrationResult": "relcol.workflows._recalibration_runs",
    "ReportResult": "relcol.workflows._report_pages",
    "by_class": "relcol.workflows._external_predictions",
    "calibration": "relcol.workflows._studies",
    "confidence_sources": "relcol.workflows._external_predictions",
    "consistency": "relcol.workflows._studies",
    "email_comparison": "relcol.workflows._example_runs",
    "example": "relcol.workflows._example_runs",
    "external_tables": "relcol.workflows._report_tables",
    "ingest": "relcol.workflows._studies",
    "ingest_predictions": "relcol.workflows._external_predictions",
    "multilabel": "relcol.workflows._multilabel_scores",
    "multilabel_bins": "relcol.workflows._multilabel_scores",
    "open_warehouse": "relcol.workflows._shared",
    "recalibrate": "relcol.workflows._recalibration_runs",
    "recalibration": "relcol.workflows._recalibration_runs",
    "recalibration_summary": "relcol.workflows._recalibration_runs",
    "report": "relcol.workflows._report_pages",
    "report_tables": "relcol.workflows._report_tables",
    "scorecard": "relcol.workflows._studies",
    "scorecard_options": "relcol.workflows._studies",
    "simulate_consistency": "relcol.workflows._studies",
    "soft_agreement": "relcol.workflows._external_predictions",
    "sources_summary": "relcol.workflows._report_pages",
}
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
if TYPE_CHECKING:
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
    from relcol.workflows._shared import open_warehouse
    from relcol.workflows._studies import (
        calibration,
        consistency,
        ingest,
        scorecard,
        scorecard_options,
        simulate_consistency,
    )


__getattr__ = lazy_getattr(globals(), _LAZY)
