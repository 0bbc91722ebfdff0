"""The report's figures on one matplotlib axes, for notebooks.

Each function draws with the report's own drawing code and returns the
:class:`matplotlib.axes.Axes` it drew on (``ax.figure`` is the figure), in the spirit of
scikit-learn's ``CalibrationDisplay``: pass ``ax=`` to draw into a figure of your own,
call twice on one axes or give ``by=`` to compare models, datasets, corruptions or
confidences before and after recalibration. Each function's help says which frames it
takes: prediction rows (``confidence`` and ``correct``, or ``y_true`` and ``y_pred``) or
the table the report draws.
"""

from relcol.report import (
    confidence_by_correctness,
    degradation_curve,
    reliability_diagram,
    risk_coverage,
)

__all__ = [
    "confidence_by_correctness",
    "degradation_curve",
    "reliability_diagram",
    "risk_coverage",
]
