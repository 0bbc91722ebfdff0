"""relcol: does a classifier's confidence mean what it says, and where does that break?

The public API::

    import relcol
    relcol.ingest()                       # the built-in study into ./warehouse
    wh = relcol.open_warehouse()          # a Warehouse: .predictions(), .sql(), .studies()
    relcol.calibration(wh, study="default")
    relcol.report(wh, study="default", out="reports/default")
    relcol.ingest_predictions("llm.csv", wh, name="email-llm")   # predictions made elsewhere
    relcol.recalibrate(wh, study="email-llm", methods=["temperature", "isotonic"])

Metrics as Polars expressions are in ``relcol.metrics``; the report's figures, one matplotlib
axes at a time, in ``relcol.plot``.
"""

from __future__ import annotations

__version__ = "0.1.0"

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from relcol._lazy import lazy_getattr

# Imported on first use, so `import relcol` (and the CLI's start) stays cheap.
_LAZY = {
    "ReportResult": "relcol.workflows",
    "calibration": "relcol.workflows",
    "consistency": "relcol.workflows",
    "scorecard": "relcol.workflows",
    "simulate_consistency": "relcol.workflows",
    "ingest": "relcol.workflows",
    "open_warehouse": "relcol.workflows",
    "report": "relcol.workflows",
    "report_tables": "relcol.workflows",
    "ExampleResult": "relcol.workflows",
    "PredictionsResult": "relcol.workflows",
    "RecalibrationResult": "relcol.workflows",
    "by_class": "relcol.workflows",
    "confidence_sources": "relcol.workflows",
    "soft_agreement": "relcol.workflows",
    "example": "relcol.workflows",
    "ingest_predictions": "relcol.workflows",
    "multilabel": "relcol.workflows",
    "multilabel_bins": "relcol.workflows",
    "recalibrate": "relcol.workflows",
    "recalibration": "relcol.workflows",
    "read_predictions": "relcol.data",
    "monitor": "relcol.analysis",
    "MonitorResult": "relcol.analysis",
    "MonitorRules": "relcol.analysis",
    "RelcolError": "relcol.errors",
    "Warehouse": "relcol.store",
    "IngestResult": "relcol.study",
    "Study": "relcol.study",
    "load_study": "relcol.study",
    "parse_study": "relcol.study",
}
__all__ = [
    "ExampleResult",
    "IngestResult",
    "MonitorResult",
    "MonitorRules",
    "PredictionsResult",
    "RecalibrationResult",
    "RelcolError",
    "ReportResult",
    "Study",
    "Warehouse",
    "by_class",
    "calibration",
    "confidence_sources",
    "consistency",
    "example",
    "ingest",
    "ingest_predictions",
    "load_study",
    "monitor",
    "multilabel",
    "multilabel_bins",
    "open_warehouse",
    "parse_study",
    "read_predictions",
    "recalibrate",
    "recalibration",
    "report",
    "report_tables",
    "scorecard",
    "simulate_consistency",
    "soft_agreement",
]
if TYPE_CHECKING:
    from relcol.analysis import MonitorResult, MonitorRules, monitor
    from relcol.data import read_predictions
    from relcol.errors import RelcolError
    from relcol.store import Warehouse
    from relcol.study import IngestResult, Study, load_study, parse_study
    from relcol.workflows import (
        ExampleResult,
        PredictionsResult,
        RecalibrationResult,
        ReportResult,
        by_class,
        calibration,
        confidence_sources,
        consistency,
        example,
        ingest,
        ingest_predictions,
        multilabel,
        multilabel_bins,
        open_warehouse,
        recalibrate,
        recalibration,
        report,
        report_tables,
        scorecard,
        simulate_consistency,
        soft_agreement,
    )


_named = lazy_getattr(globals(), _LAZY)


def __getattr__(name: str) -> Any:
    if name == "plot":  # the notebook plotting module (needs matplotlib on first use)
        return import_module("relcol.plot")
    if name == "report":  # the subpackage, callable as the function (see _ReportPackage)
        return import_module("relcol.report")
    return _named(name)  # only that name: each package imports its own names on first use


class _ReportPackage(ModuleType):
    """``relcol.report`` names both the subpackage of the page's pieces (``from relcol.report
    import render_html``) and the function that writes a report; Python binds the subpackage
    as the attribute ``relcol.report`` whenever it is imported. So the attribute is always the
    subpackage, and calling it calls the function: ``relcol.report(wh, study=...)`` and
    ``import relcol.report as pages`` both work, in either order."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from relcol.workflows import report

        return report(*args, **kwargs)


class _Facade(ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "report" and isinstance(value, ModuleType):  # the import system binding it
            value.__class__ = _ReportPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade
