"""The statistical layer: frames in, frames out, nothing drawn or printed.

``relcol.report`` renders what these functions return; it never computes a
metric itself (DESIGN.md §2).
"""

from __future__ import annotations

from relcol.analysis._corruptions import realised_rates
from relcol.analysis._degradation import degradation_summary, worst_gaps

__all__ = ["degradation_summary", "realised_rates", "worst_gaps"]
