"""relcol: does a classifier's confidence mean what it says, and where does that break?

The public API::

    import relcol
    relcol.ingest()                       # the built-in study into ./warehouse
    wh = relcol.open_warehouse()          # a Warehouse: .predictions(), .sql(), .studies()
    relcol.calibration(wh, study="default")
    relcol.report(wh, study="default", out="reports/default")

Metrics as Polars expressions are in ``relcol.metrics``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Imported on first use, so `import relcol` (and the CLI's start) stays cheap.
_LAZY = {
    "ReportResult": "relcol._api",
    "calibration": "relcol._api",
    "ingest": "relcol._api",
    "open_warehouse": "relcol._api",
    "report": "relcol._api",
    "RelcolError": "relcol.errors",
    "Warehouse": "relcol.store",
    "IngestResult": "relcol.study",
    "Study": "relcol.study",
    "load_study": "relcol.study",
    "parse_study": "relcol.study",
}
__all__ = [
    "IngestResult",
    "RelcolError",
    "ReportResult",
    "Study",
    "Warehouse",
    "calibration",
    "ingest",
    "load_study",
    "open_warehouse",
    "parse_study",
    "report",
]
assert set(__all__) == set(_LAZY)

if TYPE_CHECKING:
    from relcol._api import ReportResult, calibration, ingest, open_warehouse, report
    from relcol.errors import RelcolError
    from relcol.store import Warehouse
    from relcol.study import IngestResult, Study, load_study, parse_study


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'relcol' has no attribute {name!r}")
