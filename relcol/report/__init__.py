"""Presentation only: the HTML report, its tables and figures, the terminal summary.

Everything shown is a column of a frame that ``relcol.metrics`` or
``relcol.analysis`` computed; nothing here computes a metric. matplotlib is
imported only when a figure is drawn.
"""

from __future__ import annotations

from relcol.report._drawing import drawing_workers, page_workers
from relcol.report._figures import (
    OKABE_ITO,
    confidence_figure,
    consistency_figure,
    degradation_figure,
    figure_svg,
    model_styles,
    reliability_figure,
    risk_coverage_figure,
    scorecard_figure,
)
from relcol.report._html import SECTIONS, ReportMeta, render_html, write_report
from relcol.report._plot import (
    confidence_by_correctness,
    degradation_curve,
    reliability_diagram,
    risk_coverage,
)
from relcol.report._tables import (
    calibration_table,
    realised_rates_table,
    realised_trends_table,
)
from relcol.report._terminal import terminal_summary

__all__ = [
    "OKABE_ITO",
    "SECTIONS",
    "ReportMeta",
    "calibration_table",
    "confidence_by_correctness",
    "confidence_figure",
    "consistency_figure",
    "degradation_curve",
    "degradation_figure",
    "drawing_workers",
    "figure_svg",
    "model_styles",
    "page_workers",
    "realised_rates_table",
    "realised_trends_table",
    "reliability_diagram",
    "reliability_figure",
    "render_html",
    "risk_coverage",
    "risk_coverage_figure",
    "scorecard_figure",
    "terminal_summary",
    "write_report",
]
