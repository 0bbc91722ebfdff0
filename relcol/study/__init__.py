"""The grid: a study spec and the runner that turns it into rows of the long table."""

from __future__ import annotations

from relcol.store import IngestResult  # what run_study and run_simulation return
from relcol.study._numerics import PORTABLE, numerics, portable_environment
from relcol.study._runner import (
    MAX_ROWS,
    n_fits,
    n_rows,
    rng_for,
    run_study,
    versions,
)
from relcol.study._simulate import ConsistencySimulation, run_simulation
from relcol.study._spec import (
    SCORECARD,
    CorruptionSpec,
    Study,
    default_study_text,
    load_study,
    parse_study,
)

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
