"""Coverage of the bootstrap intervals, verified by simulation with known truth (METRICS.md §6).

1000 simulated studies of 300 samples, B = 1000 (the report's default), each study under its
own name and so with its own bootstrap weights. Realised 95 % coverage of accuracy and of the
gap Δ must lie in [0.93, 0.97] (the Monte Carlo standard error of a coverage is ≈ 0.007
here). ECE's and ECE − ECE₀'s are measured and documented (README, "The statistical layer"):
binned ECE is biased upwards at this n, so its percentile interval undercovers; ECE − ECE₀
removes the bias of a calibrated model.
"""

from __future__ import annotations

import numpy as np
import pytest

from relcol.analysis import coverage_study, simulate_studies
from relcol.analysis._coverage import Law


@pytest.fixture(scope="module")
def miscalibrated():
    return coverage_study(studies=1000, n=300, replicates=1000, seed=0)


@pytest.mark.slow
def test_accuracy_and_gap_intervals_cover_95_percent(miscalibrated):
    result = miscalibrated
    assert result.studies >= 500
    for metric in ("accuracy", "gap"):
        assert 0.93 <= result.coverage[metric] <= 0.97, (metric, result.coverage)
    # measured, documented in the README: ECE undercovers; ECE − ECE₀ covers the truth here
    print({k: round(v, 3) for k, v in result.coverage.items()})
    assert result.coverage["ece"] < 0.9
    assert result.coverage["ece_excess"] > result.coverage["ece"]


@pytest.mark.slow
def test_ece_minus_ece_null_removes_the_bias_of_a_calibrated_model():
    result = coverage_study(studies=500, n=300, replicates=1000, law=Law(slope=1.0, shift=0.0))
    assert abs(result.truth["ece"]) < 1e-12 and abs(result.truth["gap"]) < 1e-12
    assert result.mean_estimate["ece"] > 0.03  # the ECE floor at n = 300
    assert abs(result.mean_estimate["ece_excess"]) < 0.005  # ECE − ECE₀: unbiased
    assert result.coverage["ece"] == 0.0 and result.coverage["ece_excess"] > 0.9
    for metric in ("accuracy", "gap"):
        assert 0.93 <= result.coverage[metric] <= 0.97, (metric, result.coverage)


def test_the_truth_is_the_law_in_large_samples():
    law = Law()
    truth = law.truth(bins=15)
    assert truth["gap"] == pytest.approx(truth["mean_confidence"] - truth["accuracy"])
    assert truth["ece"] >= abs(truth["gap"]) - 1e-12  # |Σ| ≤ Σ||
    rows = simulate_studies(1, 400_000, law=law, seed=1)
    assert rows["correct"].mean() == pytest.approx(truth["accuracy"], abs=0.003)
    assert rows["confidence"].mean() == pytest.approx(truth["mean_confidence"], abs=0.002)


def test_a_small_coverage_study_runs():
    result = coverage_study(studies=20, n=80, replicates=100)
    assert set(result.coverage) == {"accuracy", "gap", "ece", "ece_excess"}
    assert result.table.height == 20 and np.isfinite(result.standard_error("accuracy"))
