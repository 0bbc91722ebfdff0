"""Coverage of the model-vs-model differences' intervals and the false-alarm rate of their
p-values, verified by simulation with known truth (docs/statistics.md).

Two models per simulated study (``relcol.analysis.simulate_pairs``): on the same samples
with coupled errors (``paired``), on disjoint samples (``disjoint``), or of one law on the
same samples (``null``, every true difference 0). The slow tests (CI runs them) run 500
studies of each design through the report's code with B = 1000 and hold every printed
difference interval to the band of tests/test_coverage.py, the null's rejection rate to
the same band, show why the binned calibration errors print no difference interval, and
keep the measured limit of paired intervals for models that disagree on few samples.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from relcol.analysis import DIFFERENCE_LAWS, difference_coverage_study, simulate_pairs
from relcol.analysis._bootstrap import INTERVAL_METRICS, NO_INTERVAL
from relcol.analysis._coverage import METRICS
from tests.test_coverage import HIGH, LOW, within

STUDIES = 500


def per_model(rows: pl.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    return tuple(
        rows.filter(pl.col("model") == model).sort("study", "sample_id")[column].to_numpy()
        for model in ("a", "b")
    )


def test_the_designs_share_couple_or_separate_the_samples():
    paired = simulate_pairs(4, 200, design="paired", seed=1)
    ids_a, ids_b = per_model(paired, "sample_id")
    assert np.array_equal(ids_a, ids_b)
    c_a, c_b = per_model(paired, "confidence")
    # one uniform per sample: the two confidences are the same quantile of their laws
    law_a, law_b = DIFFERENCE_LAWS
    u_a = stats.beta(law_a.a, law_a.b).cdf((c_a - law_a.lo) / (1 - law_a.lo))
    u_b = stats.beta(law_b.a, law_b.b).cdf((c_b - law_b.lo) / (1 - law_b.lo))
    np.testing.assert_allclose(u_a, u_b, atol=1e-9)
    right_a, right_b = per_model(paired, "correct")
    assert (right_a & right_b).mean() > right_a.mean() * right_b.mean() + 0.05
    disjoint = simulate_pairs(4, 200, design="disjoint", seed=1)
    ids_a, ids_b = per_model(disjoint, "sample_id")
    assert not set(ids_a) & set(ids_b)
    null = simulate_pairs(4, 200, design="null", seed=1)
    c_a, c_b = per_model(null, "confidence")
    assert not np.array_equal(c_a, c_b)
    assert abs(c_a.mean() - c_b.mean()) < 0.02  # one law, two draws
    with pytest.raises(ValueError, match="design must be one of"):
        simulate_pairs(2, 10, design="crossed")


def test_a_small_difference_study_measures_every_metric_against_the_laws():
    result = difference_coverage_study(studies=10, n=100, replicates=100)
    assert set(result.coverage) == set(METRICS)
    law_a, law_b = DIFFERENCE_LAWS
    truth_a, truth_b = law_a.truth(), law_b.truth()
    for metric in ("accuracy", "ece", "auroc"):
        assert result.truth[metric] == pytest.approx(truth_b[metric] - truth_a[metric])
    assert result.table.height == 10 * len(METRICS)
    # the withheld metrics are measured with the interval they would get
    assert result.table.filter(pl.col("metric") == "ece")["difference_lo"].null_count() == 0
    null = difference_coverage_study(studies=10, n=100, replicates=100, design="null")
    assert set(null.truth.values()) == {0.0}


#: The settings asserted: two models on disjoint samples and two identical laws at n = 300;
#: two strongly coupled models on one test set at n = 1000. At n ≤ 300 the coupled pair
#: disagrees on about 4 % of the samples (a dozen at n = 300), and the percentile interval
#: of a difference that rests on so few samples undercovers (docs/statistics.md has the
#: table: 0.80–0.93); the last test keeps that limit measured.
SETTINGS = {"paired": 1000, "disjoint": 300, "null": 300}


@pytest.fixture(scope="module")
def designs():
    return {
        design: difference_coverage_study(STUDIES, n, design=design, seed=3)
        for design, n in SETTINGS.items()
    }


@pytest.mark.slow
def test_every_printed_difference_interval_covers(designs):
    failures = {
        (design, metric): round(result.coverage[metric], 3)
        for design, result in designs.items()
        for metric in INTERVAL_METRICS
        if not within(result.coverage[metric], STUDIES)
    }
    assert not failures


@pytest.mark.slow
def test_without_a_difference_the_tests_call_about_alpha(designs):
    null = designs["null"]
    assert null.alpha == 0.05
    too_often = {
        metric: null.rejection[metric]
        for metric in INTERVAL_METRICS
        if not within(1 - null.rejection[metric], STUDIES)
    }
    assert not too_often


@pytest.mark.slow
def test_the_binned_errors_difference_would_not_cover(designs):
    # two models' binned errors carry different biases that do not cancel in a difference
    paired = designs["paired"]
    for metric in ("ece", "ace", "rmsce", "ece_under"):
        assert metric in NO_INTERVAL
        assert not LOW <= paired.coverage[metric] <= HIGH, (metric, paired.coverage[metric])


@pytest.mark.slow
def test_two_models_that_disagree_on_few_samples_get_too_narrow_intervals():
    # the documented limit: at n = 100 the coupled models disagree on about 4 samples
    result = difference_coverage_study(STUDIES, 100, design="paired", seed=5)
    ranks = ("auroc", "aurc", "e_aurc", "cohens_d", "point_biserial")
    assert all(result.coverage[metric] < LOW for metric in ranks), result.coverage
