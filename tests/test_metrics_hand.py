"""Hand-worked examples, scikit-learn agreement, scores from the probability vector, and the
parameters of the SQL macros, for docs/metrics.md.

Every hand-worked number is derived in the comment beside it (exact rationals where the
arithmetic allows); each example runs through every engine (the ``engine`` fixture of
``test_metrics.py``).
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import duckdb
import numpy as np
import polars as pl
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, log_loss, roc_auc_score

from relcol.errors import InputError, ParameterError
from relcol.metrics import (
    calibration,
    calibration_bins,
    discrimination,
    metric_tables,
    selective,
    selective_curve,
)
from relcol.store import CELL, connect_frame
from relcol.store._sql import sql_text
from tests import reference
from tests import test_metrics as shared
from tests.test_metrics import KEYS, assert_cell, assert_close, long_table, one_cell

# fixtures shared with test_metrics.py: every engine, and ~24k rows over 72 cells
engine, rows = shared.engine, shared.rows

# The four-row example of the docstrings: c = .9 ✓, .6 ✓, .6 ✗, .3 ✗ (✓ right, ✗ wrong).
FOUR = ([0.9, 0.6, 0.6, 0.3], [True, True, False, False])


def test_four_rows_by_hand(engine):
    cell = one_cell(engine(long_table(*FOUR), 15))
    assert_cell(
        cell,
        {
            # pairs (right, wrong): .9>.6, .9>.3, .6=.6 (½), .6>.3 → 3.5/4
            "auroc": 0.875,
            # thresholds .9 (TP 1 of 1 accepted), .6 (TP 2 of 3): ½·1 + ½·⅔
            "aupr_success": 5 / 6,
            # positive = wrong, accept c <= t: .3 (1 of 1), .6 (2 of 3): ½·1 + ½·⅔
            "aupr_error": 5 / 6,
            # TPR ≥ .95 needs both right rows: t = .6, which accepts one of two wrong rows
            "fpr_at_95tpr": 0.5,
            # μ₁ = .75, μ₀ = .45, σ₁² = σ₀² = .045: .3/√.045
            "cohens_d": 0.3 / math.sqrt(0.045),
            # cov(c, z) = .075, σ_c = √.045, σ_z = .5
            "point_biserial": 0.075 / (math.sqrt(0.045) * 0.5),
            # curve: t = .9 (1 row, risk 0), .6 (2 rows, risk ⅓), .3 (1 row, risk ½)
            "aurc": (0 + 2 / 3 + 1 / 2) / 4,
            # perfect ranking: rows 3 and 4 at risks ⅓ and ½
            "aurc_optimal": (1 / 3 + 1 / 2) / 4,
            "e_aurc": (2 / 3 + 1 / 2 - 1 / 3 - 1 / 2) / 4,
            # coverage ≥ .8 first at t = .3 (coverage 1); risk ≤ .05 only at t = .9
            "risk_at_coverage": 0.5,
            "coverage_at_risk": 0.25,
        },
    )


def bunched_near_one(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Confidences within a few Float32 steps of 1 (2⁻²⁴ each), as an overconfident model
    gives: every right row at 1.0, wrong rows spread over four steps (var ≈ 1e−15)."""
    right = np.ones(60)
    wrong = 1.0 - rng.integers(0, 4, 40) * 2.0**-24
    return np.concatenate([right, wrong]), np.repeat([True, False], [60, 40])


def exact_effect_sizes(c: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """Cohen's d (pooled, ddof 1) and the point-biserial r in exact rational arithmetic."""

    def mean_var(values, ddof):
        values = [Fraction(float(v)) for v in values]
        mean = sum(values) / len(values)
        return mean, sum((v - mean) ** 2 for v in values) / (len(values) - ddof)

    (m1, v1), (m0, v0) = mean_var(c[z], 1), mean_var(c[~z], 1)
    _, var_all = mean_var(c, 0)
    n1, n0 = int(z.sum()), int((~z).sum())
    d = float(m1 - m0) / math.sqrt(float((v1 + v0) / 2))
    r = float(m1 - m0) * math.sqrt(n1 * n0) / ((n1 + n0) * math.sqrt(float(var_all)))
    return d, r


def test_effect_sizes_of_confidences_bunched_near_one(engine):
    # var/c̄² ≈ 1e−15: summing c and c² and subtracting loses every digit of the variance
    # (the suite's Polars moments were 3 % off on such a cell of the built-in study, and the
    # bootstrap's replicates null); the moments are taken about the group's minimum instead
    c, z = bunched_near_one(np.random.default_rng(5))
    d, r = exact_effect_sizes(c, z)
    cell = one_cell(engine(long_table(c, z), 15))
    assert cell["cohens_d"] == pytest.approx(d, rel=1e-9)
    assert cell["point_biserial"] == pytest.approx(r, rel=1e-9)


def test_four_rows_curve_by_hand(tmp_path):
    frame = long_table(*FOUR)
    expected = [(0.9, 1, 1, 0.25, 0.0), (0.6, 2, 3, 0.75, 1 / 3), (0.3, 1, 4, 1.0, 0.5)]
    columns = ["threshold", "n", "accepted", "coverage", "risk"]
    assert selective_curve(frame).collect().select(columns).rows() == expected
    con = connect_frame(tmp_path, frame)
    assert con.sql(f"SELECT {', '.join(columns)} FROM selective_curve").fetchall() == expected


def test_aurc_lets_tied_rows_enter_together(engine):
    # c = .9 ✓ .9 ✗ .9 ✓ | .5 ✓ .5 ✗ | .2 ✗: the three .9 rows enter at once (risk ⅓ for each
    # of them, whatever their order), then .5 (risk ⅖ for two rows), then .2 (risk ½).
    confidence = [0.9, 0.9, 0.9, 0.5, 0.5, 0.2]
    correct = [True, False, True, True, False, False]
    aurc = Fraction(3 * Fraction(1, 3) + 2 * Fraction(2, 5) + Fraction(1, 2), 6)
    optimal = Fraction(Fraction(1, 4) + Fraction(2, 5) + Fraction(3, 6), 6)  # rows 4–6
    for order in (slice(None), slice(None, None, -1)):  # and in reverse row order
        cell = one_cell(engine(long_table(confidence[order], correct[order]), 15))
        assert_cell(cell, {"aurc": float(aurc), "aurc_optimal": float(optimal)})
        assert cell["e_aurc"] == pytest.approx(float(aurc - optimal), abs=1e-12)


def test_risk_at_coverage_and_coverage_at_risk_are_steps(tmp_path):
    # curve points (coverage, risk): (.25, 0), (.75, ⅓), (1, ½). No interpolation: a target
    # between points takes the next point up in coverage, or the last one within the risk.
    frame = long_table(*FOUR)
    con = connect_frame(tmp_path, frame)
    cases = [(0.25, 0.0, 0.0, 0.25), (0.26, 1 / 3, 0.33, 0.25), (0.75, 1 / 3, 1 / 3, 0.75)]
    cases += [(0.76, 0.5, 0.5, 1.0), (1.0, 0.5, 0.49, 0.75)]
    for coverage, risk_at, risk, coverage_at in cases:
        polars = selective(frame, coverage=coverage, risk=risk).collect().row(0, named=True)
        sql = con.sql(
            "SELECT * FROM selective(coverage := ?, risk := ?)", params=[coverage, risk]
        ).pl()
        for cell in (polars, sql.row(0, named=True)):
            assert cell["risk_at_coverage"] == pytest.approx(risk_at, abs=1e-12)
            assert cell["coverage_at_risk"] == pytest.approx(coverage_at, abs=1e-12)
            assert (cell["target_coverage"], cell["target_risk"]) == (coverage, risk)


@pytest.mark.parametrize(("right", "n"), [(3, 5), (5, 6), (5, 7), (7, 9)])
def test_coverage_at_risk_is_the_correctly_rounded_share(engine, right, n):
    # the first `right` rows by confidence are right, the rest wrong: at risk 0 the curve
    # accepts exactly those, so coverage_at_risk = right / n; each pair is one where the
    # product with 1/n is 1 ulp above the quotient (3 · (1/5) = 0.6000000000000001)
    assert right * (1 / n) != right / n
    confidence = np.linspace(0.95, 0.35, n)
    cell = one_cell(engine(long_table(confidence, np.arange(n) < right), 15))
    assert cell["coverage_at_risk"] == right / n


def test_murphy_decomposition_by_hand(engine):
    # M = 4 (the nine rows of test_metrics.py::test_hand_worked_example), in exact rationals:
    # per bin (c values, z values); ā = 6/9.
    confidence = [0.0, 0.25, 0.5, 0.375, 0.75, 0.625, 1.0, 0.875, 0.8125]
    correct = [False, True, True, True, False, True, True, True, False]
    c = [Fraction(v) for v in confidence]
    z = [Fraction(int(v)) for v in correct]
    bins = [[0, 1], [2, 3], [4, 5], [6, 7, 8]]
    n, mean_z = Fraction(9), sum(z) / 9
    reliability = resolution = within = Fraction(0)
    for members in bins:
        conf = sum(c[i] for i in members) / len(members)
        acc = sum(z[i] for i in members) / len(members)
        reliability += len(members) / n * (conf - acc) ** 2
        resolution += len(members) / n * (acc - mean_z) ** 2
        within += sum((c[i] - conf) ** 2 - 2 * (c[i] - conf) * (z[i] - acc) for i in members) / n
    brier_top = sum((ci - zi) ** 2 for ci, zi in zip(c, z, strict=True)) / n
    assert brier_top == Fraction(2.58203125) / 9  # Σ (c − z)² = 2.58203125
    assert brier_top == reliability - resolution + mean_z * (1 - mean_z) + within
    cell = one_cell(engine(long_table(confidence, correct), 4))
    assert_cell(
        cell,
        {
            "brier_top": float(brier_top),
            "brier_reliability": float(reliability),
            "brier_resolution": float(resolution),
            "brier_uncertainty": float(mean_z * (1 - mean_z)),
            "brier_within": float(within),
            "rmsce": math.sqrt(reliability),
        },
    )


def test_vector_metrics_by_hand(engine):
    # K = 2, M = 2; rows p = (.75, .25) and (.25, .75), both labelled class 0.
    #   class 0: p₀ = .75 (bin 1), .25 (bin 0), target 1 → |1 − .25| + |1 − .75| over 2 = .5
    #   class 1: p₁ = .25 (bin 0), .75 (bin 1), target 0 → (.25 + .75)/2 = .5 → classwise .5
    #   brier: (.25² + .25²) + (.75² + .75²) = .125 + 1.125 → .625
    #   nll: −(ln .75 + ln .25)/2
    frame = long_table(
        [0.75, 0.75], [True, False], proba=[[0.75, 0.25], [0.25, 0.75]], y_true=[0, 0]
    )
    cell = one_cell(engine(frame, 2))
    assert_cell(
        cell,
        {
            "classwise_ece": 0.5,
            "brier": 0.625,
            "nll": -(math.log(0.75) + math.log(0.25)) / 2,
        },
    )


def test_a_cell_with_a_row_without_a_vector_has_no_vector_metrics(engine):
    # cell a: the two rows of the hand-worked example above; cell b: the same rows, the
    # second without its vector: b's brier, nll and classwise ECE are null, a's unchanged
    frame = pl.concat(
        [
            long_table([0.75, 0.75], [True, False], proba=[[0.75, 0.25], [0.25, 0.75]], model="a"),
            long_table([0.75, 0.75], [True, False], proba=[[0.75, 0.25], None], model="b"),
        ]
    )
    a, b = engine(frame, 2).sort("model").iter_rows(named=True)
    assert_cell(a, {"classwise_ece": 0.5, "brier": 0.625})
    assert a["nll"] == pytest.approx(-(math.log(0.75) + math.log(0.25)) / 2, abs=1e-15)
    assert (b["brier"], b["nll"], b["classwise_ece"]) == (None, None, None)
    assert b["ece"] == a["ece"]  # the confidences are the same


def test_a_probability_of_zero_costs_minus_log_1e15(engine):
    frame = long_table([1.0], [False], proba=[[1.0, 0.0]], y_true=[1])
    cell = one_cell(engine(frame, 15))
    assert cell["nll"] == pytest.approx(-math.log(1e-15), abs=1e-12)
    assert cell["brier"] == pytest.approx(2.0, abs=1e-12)  # the worst possible


def test_ace_and_debiased_by_hand(engine):
    # ACE, M = 2, ties at .6 split by sample_id: ranks .2 (id 0) | .6 (id 1), .6 (id 2), .9 (id 3)
    #   → bins ⌊r·2/4⌋: {.2 ✓, .6 ✗} and {.6 ✓, .9 ✓}: (|1 − .8| + |2 − 1.5|) / 4 = .175
    # Kumar's estimate, M = 1: acc ¾, conf .575: (.175² − .75·.25/3) < 0 → 0
    frame = long_table([0.2, 0.6, 0.6, 0.9], [True, False, True, True])
    cell = one_cell(engine(frame, 2))
    assert cell["ace"] == pytest.approx(0.175, abs=1e-12)
    assert one_cell(engine(frame, 1))["ece_debiased"] == 0.0
    # M = 1 on 8 rows at c = .5, all right: (.5² − 0) → √.25
    assert one_cell(engine(long_table([0.5] * 8, [True] * 8), 1))["ece_debiased"] == 0.5


def test_equal_mass_ties_split_by_sample_seed_repeat(tmp_path):
    # four rows at c = .5: bins of 2 take the two smallest (sample_id, seed, repeat)
    frame = long_table(
        [0.5] * 4, [True, False, True, False], sample_id=[3, 1, 2, 1], seed=[0, 0, 0, 1]
    )
    # order: (1, 0) ✗, (1, 1) ✗ | (2, 0) ✓, (3, 0) ✓ → accuracies 0 and 1
    expected = [(0, 2, 0.0), (1, 2, 1.0)]
    polars = calibration_bins(frame, bins=2, binning="mass").collect()
    con = connect_frame(tmp_path, frame, bins=2)
    sql = con.sql("SELECT * FROM calibration_bins WHERE binning = 'mass'").pl()
    for table in (polars, sql):
        assert table.select("bin", "n", "accuracy").rows() == expected
        assert table.select("bin_lower", "bin_upper").rows() == [(0.5, 0.5), (0.5, 0.5)]


# scikit-learn, where it defines the same quantity ---------------------------------------------


def test_agreement_with_scikit_learn(rows, engine):
    table = engine(rows, 15)
    checked = 0
    for key, group in rows.partition_by(KEYS, as_dict=True).items():
        cell = table.filter(
            pl.all_horizontal(
                pl.col(k).eq_missing(pl.lit(v, rows.schema[k]))
                for k, v in zip(KEYS, key, strict=True)
            )
        ).row(0, named=True)
        c = group["confidence"].to_numpy()
        z = group["correct"].to_numpy()
        if 0 < z.sum() < len(z):
            assert cell["auroc"] == pytest.approx(roc_auc_score(z, c), abs=1e-12)
            assert cell["aupr_success"] == pytest.approx(average_precision_score(z, c), abs=1e-12)
            assert cell["aupr_error"] == pytest.approx(average_precision_score(~z, -c), abs=1e-12)
        assert cell["brier_top"] == pytest.approx(brier_score_loss(z, c), abs=1e-12)
        clipped = np.clip(c, 1e-15, 1 - 1e-15)
        assert cell["nll_top"] == pytest.approx(log_loss(z, clipped, labels=[0, 1]), abs=1e-9)
        if group["proba"].null_count() == 0:
            p = np.array(group["proba"].to_list(), dtype=np.float64)
            y = group["y_true"].to_numpy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # float32 vectors sum to 1 ± 1e−7
                brier = brier_score_loss(y, p, labels=[0, 1, 2], scale_by_half=False)
                assert cell["brier"] == pytest.approx(brier, abs=1e-12)
                # scikit-learn clips at the float64 epsilon, relcol at 1e−15 (docs/metrics.md)
                expected = log_loss(y, np.maximum(p, 1e-15), labels=[0, 1, 2])
                assert cell["nll"] == pytest.approx(expected, rel=1e-6)
        checked += 1
    assert checked == 72


# Scores from the probability vector ----------------------------------------------------------


@pytest.mark.parametrize("score", ["margin", "entropy"])
def test_vector_scores_agree_across_engines_and_are_null_without_vectors(rows, tmp_path, score):
    con = connect_frame(tmp_path, rows)
    polars = discrimination(rows, score=score).collect()
    sql = con.sql("SELECT * FROM discrimination(score := ?)", params=[score]).pl()
    assert_close(polars, sql)
    assert (polars["score"] == score).all()
    single = polars.filter(pl.col("study") == "single")
    multi = polars.filter(pl.col("study") == "multi")  # no vectors: null, not an error
    assert single["auroc"].null_count() == 0 and multi["auroc"].null_count() == multi.height
    assert (multi["n"] > 0).all()
    curve = selective_curve(rows, score=score).collect()
    assert_close(curve, con.sql("SELECT * FROM selective_curve(score := ?)", params=[score]).pl())
    assert set(curve["study"]) == {"single"}  # no curve without a score
    summary = selective(rows, score=score).collect()
    assert_close(summary, con.sql("SELECT * FROM selective(score := ?)", params=[score]).pl())


def test_entropy_ranks_low_entropy_first():
    # rows with vectors (.9, .1) ✓ and (.5, .5) ✗: −entropy ranks the right row higher
    frame = long_table([0.9, 0.5], [True, False], proba=[[0.9, 0.1], [0.5, 0.5]])
    for score in ("entropy", "margin", "confidence"):
        assert discrimination(frame, score=score).collect()["auroc"].item() == 1.0


# One pass for every table; the macros' parameters ------------------------------------------------


def test_metric_tables_equal_the_separate_functions(rows):
    tables = metric_tables(rows, bins=10, draws=30, coverage=0.7, risk=0.1)
    together = dict(zip(tables, pl.collect_all(tables.values()), strict=True))
    apart = {
        "calibration": calibration(rows, bins=10, draws=30),
        "discrimination": discrimination(rows),
        "selective_curve": selective_curve(rows),
        "selective": selective(rows, coverage=0.7, risk=0.1),
    }
    for name, frame in apart.items():
        assert_close(together[name], frame.collect())
    bins = pl.concat(
        [calibration_bins(rows, bins=10, binning=b).collect() for b in ("mass", "width")]
    ).sort([*KEYS, "binning", "bin"], nulls_last=True)
    assert_close(together["calibration_bins"], bins)


def test_selective_curve_matches_the_reference_and_sql(rows, tmp_path):
    polars = selective_curve(rows).collect()
    assert_close(polars, reference.selective_curve(rows, KEYS))
    assert_close(polars, connect_frame(tmp_path, rows).sql("SELECT * FROM selective_curve").pl())
    last = polars.group_by(KEYS).agg(pl.col("coverage").max(), pl.col("risk").last())
    assert (last["coverage"] == 1.0).all()  # the lowest threshold accepts every row


@pytest.mark.parametrize(
    "order",
    ["l.cell, l.score_value ASC", "l.cell DESC, l.score_value DESC"],
    ids=["levels", "cells"],
)
def test_selective_curve_stops_rather_than_count_levels_out_of_order(rows, tmp_path, order):
    # the running sums follow the ORDER BY beneath them; fed the levels in another order, the
    # check in the same window stops the query instead of giving wrong counts
    con = connect_frame(tmp_path, rows)
    text = sql_text("macros/selective_curve_counts.sql")
    assert text.count("ORDER BY l.cell, l.score_value DESC") == 1
    con.execute(text.replace("ORDER BY l.cell, l.score_value DESC", f"ORDER BY {order}"))
    with pytest.raises(duckdb.Error, match="out of order"):
        con.sql("SELECT * FROM selective_curve").fetchall()


def test_macros_take_their_parameters(rows, tmp_path):
    con = connect_frame(tmp_path, rows)
    query = "SELECT * FROM selective(coverage := 0.5, risk := 0.2)"
    assert_close(con.sql(query).pl(), selective(rows, coverage=0.5, risk=0.2).collect())
    query = "SELECT * FROM calibration(bins := 5, draws := 7)"
    assert_close(con.sql(query).pl(), calibration(rows, bins=5, draws=7).collect())


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "SELECT * FROM calibration_bins(binning := 'quantile')",
            "binning must be one of 'width', 'mass'. Got 'quantile'.",
        ),
        (
            "SELECT * FROM discrimination(score := 'logit')",
            "score must be one of 'confidence', 'margin', 'entropy'. Got 'logit'.",
        ),
        ("SELECT * FROM selective(coverage := 0)", "coverage must be a number in (0, 1]. Got 0."),
        ("SELECT * FROM selective(risk := 1.5)", "risk must be a number in [0, 1]. Got 1.5."),
    ],
)
def test_sql_refuses_bad_parameters(tmp_path, query, message):
    con = connect_frame(tmp_path, long_table([0.5], [True]))
    with pytest.raises(duckdb.Error, match=re.escape(message)):
        con.sql(query).fetchall()


def test_polars_refuses_bad_parameters():
    frame = long_table([0.5], [True])
    cases = [
        (lambda: calibration_bins(frame, binning="quantile"), "binning must be one of"),
        (lambda: discrimination(frame, score="logit"), "score must be one of"),
        (lambda: selective(frame, coverage=0), r"coverage must be a number in \(0, 1\]"),
        (lambda: selective(frame, risk=-0.1), r"risk must be a number in \[0, 1\]"),
        (lambda: calibration(frame, draws=0), "draws must be an int >= 1. Got 0."),
        (lambda: metric_tables(frame, score="margin", proba=None), "needs the probability"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError, match=message):
            call()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_nan_or_infinite_confidence_or_entry_is_named(bad):
    """One InputError naming the caller's column, from every table function and the suite,
    grouped or not, where Polars' own error came from deep inside an aggregation."""
    vectors = [[0.75, 0.25], [0.5, 0.5], [0.1, 0.9]]
    frame = long_table([0.75, 0.5, 0.9], [True, False, True], proba=vectors, y_true=[0, 0, 1])
    bad_confidence = frame.with_columns(confidence=pl.Series([0.75, bad, 0.9]))
    bad_entry = frame.with_columns(proba=pl.Series([[0.75, 0.25], [0.5, bad], [0.1, 0.9]]))
    cases = [
        (lambda f, by: calibration(f, by), bad_confidence, "confidence"),
        (lambda f, by: calibration(f, by), bad_entry, "proba"),
        (lambda f, by: calibration_bins(f, by, binning="mass"), bad_confidence, "confidence"),
        (lambda f, by: discrimination(f, by), bad_confidence, "confidence"),
        (lambda f, by: discrimination(f, by, score="entropy"), bad_entry, "proba"),
        (lambda f, by: selective(f, by), bad_confidence, "confidence"),
        (lambda f, by: pl.collect_all(metric_tables(f, by).values()), bad_entry, "proba"),
    ]
    message = r"column '(confidence|proba)': 1 row with a NaN or infinite value"
    for call, rows, column in cases:
        for by in (CELL, ()):
            with pytest.raises(InputError, match=message) as caught:
                out = call(rows, by)
                for table in out if isinstance(out, list) else [out]:
                    if isinstance(table, pl.LazyFrame):
                        table.collect()
            assert f"'{column}'" in str(caught.value)
    # a row without a vector (null) is no NaN: the check passes it
    calibration(frame.with_columns(proba=pl.Series([None, *vectors[1:]])), CELL).collect()


def test_whole_frame_as_one_group_for_every_table():
    frame = long_table(*FOUR)
    for table in metric_tables(frame, ()).values():
        out = table.collect()
        assert out.height >= 1 and not set(CELL) & set(out.columns)
    assert discrimination(frame, ()).collect()["auroc"].item() == 0.875
