"""Presentation only: the HTML report, its tables and figures, the terminal summary.

Everything shown is a column of a frame that ``relcol.metrics`` or
``relcol.analysis`` computed; nothing here computes a metric. matplotlib is
imported only when a figure is drawn.

Each name is imported from its module on first use, so a process that only draws figures
(the page's drawing workers: ``_drawing``, ``_figures``, ``_layout``) does not import the
page's tables, great-tables, the statistical layer and SciPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relcol._lazy import lazy_getattr

#: name -> the module that defines it.
_LAZY = {
    "OKABE_ITO": "relcol.report._figures",
    "SECTIONS": "relcol.report._html",
    "ReportMeta": "relcol.report._html",
    "calibration_table": "relcol.report._tables",
    "confidence_by_correctness": "relcol.report._plot",
    "confidence_figure": "relcol.report._figures",
    "consistency_figure": "relcol.report._figures",
    "degradation_curve": "relcol.report._plot",
    "degradation_figure": "relcol.report._figures",
    "drawing_workers": "relcol.report._drawing",
    "figure_svg": "relcol.report._figures",
    "model_styles": "relcol.report._figures",
    "page_workers": "relcol.report._drawing",
    "realised_rates_table": "relcol.report._tables",
    "realised_trends_table": "relcol.report._tables",
    "reliability_diagram": "relcol.report._plot",
    "reliability_figure": "relcol.report._figures",
    "render_html": "relcol.report._html",
    "risk_coverage": "relcol.report._plot",
    "risk_coverage_figure": "relcol.report._figures",
    "scorecard_figure": "relcol.report._figures",
    "terminal_summary": "relcol.report._terminal",
    "write_report": "relcol.report._html",
}

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

if TYPE_CHECKING:
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


__getattr__ = lazy_getattr(globals(), _LAZY)
