"""Corruption operators 𝒯_d: how the test data gets worse, one severity d at a time.

Each operator is a pure function of the test features and labels, with the clean
training statistics it needs passed in (docs/study.md)::

    stats = TrainingStats.fit(X_train, n_classes=K, labels=y_train)
    op = get_operator("mar")
    params = op.validate({"beta": 1.0}, n_features=X_test.shape[1], n_classes=K)  # once
    d = op.check_severity(0.3, params)                                            # once
    out = op(X_test, y_test, d, np.random.default_rng(seed), stats, **params)    # per draw
    out.X, out.y, out.realised_rate, out.changed_share

Every operator is the identity at d = 0, draws only from the generator it is
given (same state, same output), never modifies its inputs, fits its thresholds
and intercepts on the clean training rows, and reports what the draw actually did:

===================== ===================== =========================================
operator              d means               realised_rate / changed_share over
===================== ===================== =========================================
``mcar``              missing rate          selected cells: selected / value → NaN
``mar``               missing rate          target cells: selected / value → NaN
``mnar``              missing rate          selected cells: selected / value → NaN
``ampute``            incomplete-row share  rows made incomplete / pattern cells → NaN
``gaussian_noise``    noise scale (SDs)     realised scale √mean((ε/s)²) / cells changed
``label_noise``       replacement prob.     labels: replaced / now different
``structural_bias``   the base's d          the base's, over the group's rows
``scaling``           share of cells        numeric cells: selected / value moved
``swapped_columns``   share of rows         (row, pair): swapped / a value moved
``outliers``          share of cells        observed numeric cells with spread: same
``categorical_shift`` share of cells        observed categorical cells: same
``label_transition``  redraw prob.          labels: redrawn from M[y] / now different
===================== ===================== =========================================

Every operator takes ``fraction`` (corrupt a random share of rows); the feature
operators take ``columns``. Feature names in a study spec become indices through
``resolve_names`` before ``validate``.
"""

from __future__ import annotations

from ._base import Corrupted, Operator, TrainingStats, resolve_names
from ._registry import OPERATORS, get_operator

__all__ = [
    "OPERATORS",
    "Corrupted",
    "Operator",
    "TrainingStats",
    "get_operator",
    "resolve_names",
]
