"""The grid: a study spec and the runner that turns it into rows of the long table.

Each name is imported from its module on first use, so a workflow that only records the
package versions (``relcol ingest --predictions``) does not import the corruption operators,
the models and their libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relcol._lazy import lazy_getattr

#: name -> the module that defines it.
_LAZY = {
    "IngestResult": "relcol.store",  # what run_study and run_simulation return
    "PORTABLE": "relcol.study._numerics",
    "numerics": "relcol.study._numerics",
    "portable_environment": "relcol.study._numerics",
    "versions": "relcol.study._numerics",
    "MAX_ROWS": "relcol.study._runner",
    "n_fits": "relcol.study._runner",
    "n_rows": "relcol.study._runner",
    "rng_for": "relcol.study._runner",
    "run_study": "relcol.study._runner",
    "ConsistencySimulation": "relcol.study._simulate",
    "run_simulation": "relcol.study._simulate",
    "SCORECARD": "relcol.study._spec",
    "CorruptionSpec": "relcol.study._spec",
    "Study": "relcol.study._spec",
    "default_study_text": "relcol.study._spec",
    "load_study": "relcol.study._spec",
    "parse_study": "relcol.study._spec",
}
__all__ = [
    "MAX_ROWS",
    "PORTABLE",
    "SCORECARD",
    "ConsistencySimulation",
    "CorruptionSpec",
    "IngestResult",
    "Study",
    "default_study_text",
    "load_study",
    "n_fits",
    "n_rows",
    "numerics",
    "parse_study",
    "portable_environment",
    "rng_for",
    "run_simulation",
    "run_study",
    "versions",
]

if TYPE_CHECKING:
    from relcol.store import IngestResult
    from relcol.study._numerics import PORTABLE, numerics, portable_environment, versions
    from relcol.study._runner import MAX_ROWS, n_fits, n_rows, rng_for, run_study
    from relcol.study._simulate import ConsistencySimulation, run_simulation
    from relcol.study._spec import (
        SCORECARD,
        CorruptionSpec,
        Study,
        default_study_text,
        load_study,
        parse_study,
    )

__getattr__ = lazy_getattr(globals(), _LAZY)
