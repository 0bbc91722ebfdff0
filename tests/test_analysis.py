"""relcol.analysis: degradation summaries, worst cells and realised rates on hand-built frames."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from relcol.analysis import degradation_summary, realised_rates, worst_gaps
from relcol.errors import ColumnNotFoundError, InputError


def _cal(rows: list[tuple]) -> pl.DataFrame:
    """Rows of (dataset, model, corruption, severity, accuracy, mean_confidence, ece)."""
    frame = pl.DataFrame(
        rows,
        schema=["dataset", "model", "corruption", "severity", "accuracy", "mean_confidence", "ece"],
        orient="row",
    )
    return frame.with_columns(
        study=pl.lit("s"),
        label=pl.lit(None, dtype=pl.Int32),
        gap=pl.col("mean_confidence") - pl.col("accuracy"),
    )


# Values are multiples of 1/8 so every difference below is exact in binary.
CAL = _cal(
    [
        # A curve whose gap peaks before the worst severity.
        ("digits", "knn", "mcar", 0.0, 0.875, 0.875, 0.125),
        ("digits", "knn", "mcar", 0.25, 0.5, 0.875, 0.375),
        ("digits", "knn", "mcar", 0.5, 0.5, 0.75, 0.25),
        # Gap ties at 0.25 and 0.5: the smaller severity is reported.
        ("digits", "knn", "label_noise", 0.0, 0.75, 0.875, 0.125),
        ("digits", "knn", "label_noise", 0.25, 0.5, 0.75, 0.25),
        ("digits", "knn", "label_noise", 0.5, 0.25, 0.5, 0.375),
        # No severity 0: clean values are null.
        ("iris", "lr", "mcar", 0.5, 0.625, 0.5, 0.25),
        ("iris", "lr", "mcar", 1.0, 0.5, 0.5, 0.125),
    ]
)


def test_degradation_summary_values():
    got = degradation_summary(CAL)
    # fmt: off
    expected = pl.DataFrame(
        [
            # study, dataset, model, corruption, label, clean acc/ece/gap, worst d,
            # acc, conf, gap, ece at worst d, accuracy_drop, ece_rise, max_gap_severity
            ("s", "digits", "knn", "label_noise", None, 0.75, 0.125, 0.125, 0.5,
             0.25, 0.5, 0.25, 0.375, 0.5, 0.25, 0.25),
            ("s", "digits", "knn", "mcar", None, 0.875, 0.125, 0.0, 0.5,
             0.5, 0.75, 0.25, 0.25, 0.375, 0.125, 0.25),
            ("s", "iris", "lr", "mcar", None, None, None, None, 1.0,
             0.5, 0.5, 0.0, 0.125, None, None, 1.0),
        ],
        schema={
            "study": pl.String, "dataset": pl.String, "model": pl.String,
            "corruption": pl.String, "label": pl.Int32,
            "clean_accuracy": pl.Float64, "clean_ece": pl.Float64, "clean_gap": pl.Float64,
            "worst_severity": pl.Float64, "accuracy": pl.Float64,
            "mean_confidence": pl.Float64, "gap": pl.Float64, "ece": pl.Float64,
            "accuracy_drop": pl.Float64, "ece_rise": pl.Float64,
            "max_gap_severity": pl.Float64,
        },
        orient="row",
    )
    # fmt: on
    assert_frame_equal(got, expected)


def test_degradation_summary_ignores_row_order_and_extra_columns():
    shuffled = CAL.sample(fraction=1.0, shuffle=True, seed=3).with_columns(brier=pl.lit(0.1))
    assert_frame_equal(degradation_summary(shuffled), degradation_summary(CAL))


def test_degradation_summary_keeps_labels_apart():
    multi = pl.concat(
        [
            CAL.filter(pl.col("dataset") == "digits").with_columns(label=pl.lit(0, pl.Int32)),
            CAL.filter(pl.col("dataset") == "digits").with_columns(
                label=pl.lit(1, pl.Int32), accuracy=pl.col("accuracy") / 2
            ),
        ]
    )
    got = degradation_summary(multi).filter(corruption="mcar")
    assert got.get_column("label").to_list() == [0, 1]
    assert got.get_column("clean_accuracy").to_list() == [0.875, 0.4375]
    assert got.get_column("accuracy_drop").to_list() == [0.375, 0.1875]


def test_degradation_summary_without_label_column():
    got = degradation_summary(CAL.drop("label"))
    assert "label" not in got.columns
    assert got.height == 3


def test_degradation_summary_names_missing_columns():
    with pytest.raises(
        ColumnNotFoundError, match=r"calibration: column 'ece' not found; available"
    ):
        degradation_summary(CAL.drop("ece"))
    with pytest.raises(InputError, match="must be a polars DataFrame"):
        degradation_summary(CAL.to_dicts())


def test_worst_gaps_picks_the_largest_gap_per_model():
    got = worst_gaps(CAL)
    # knn peaks at gap 0.375 (mcar, d = 0.25); lr at 0.0 (iris, d = 1.0; 0.5 has -0.125).
    assert got.select("model", "dataset", "corruption", "severity", "gap").rows() == [
        ("knn", "digits", "mcar", 0.25, 0.375),
        ("lr", "iris", "mcar", 1.0, 0.0),
    ]
    assert got.row(0, named=True)["accuracy"] == 0.5
    assert got.row(0, named=True)["mean_confidence"] == 0.875


def test_worst_gaps_breaks_ties_by_cell_not_row_order():
    tie = _cal(
        [
            ("b", "m", "x", 0.5, 0.5, 0.75, 0.25),
            ("a", "m", "y", 0.5, 0.5, 0.75, 0.25),
            ("a", "m", "x", 0.25, 0.5, 0.75, 0.25),
        ]
    )
    for order in (tie, tie.reverse()):
        row = worst_gaps(order).row(0, named=True)
        assert (row["dataset"], row["corruption"], row["severity"]) == ("a", "x", 0.25)


def test_realised_rates_mean_per_cell():
    corruptions = pl.DataFrame(
        {
            "study": "s",
            "dataset": "digits",
            "corruption": ["mnar"] * 4 + ["mcar"] * 4,
            "operator": ["mnar"] * 4 + ["mcar"] * 4,
            "severity": [0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0],
            "repeat": [0, 1, 0, 1] * 2,
            "realised_rate": [0.25, 0.5, 0.0, 0.0, 0.5, 0.75, 0.0, 0.0],
            "changed_share": [0.125, 0.25, 0.0, 0.0, 0.25, 0.5, 0.0, 0.0],
        }
    )
    got = realised_rates(corruptions)
    # mnar first (first appearance), then severities ascending.
    # deviation = realised − d; diverges when |deviation| > max(0.02, 0.1·d) = 0.05 at 0.5.
    assert got.rows() == [
        ("s", "digits", "mnar", 0.0, 2, 0.0, 0.0, 0.0, False),
        ("s", "digits", "mnar", 0.5, 2, 0.375, 0.1875, -0.125, True),
        ("s", "digits", "mcar", 0.0, 2, 0.0, 0.0, 0.0, False),
        ("s", "digits", "mcar", 0.5, 2, 0.625, 0.375, 0.125, True),
    ]
    assert got.columns == [
        "study",
        "dataset",
        "corruption",
        "severity",
        "draws",
        "realised_rate",
        "changed_share",
        "deviation",
        "diverges",
    ]
    # The tolerance's two regimes: 0.02 absolute below d = 0.2, 10 % of d above.
    edge = (
        corruptions.head(1)
        .with_columns(severity=pl.lit(0.1), realised_rate=pl.lit(0.1201))
        .vstack(corruptions.head(1).with_columns(severity=pl.lit(0.6), realised_rate=pl.lit(0.659)))
    )
    assert realised_rates(edge).get_column("diverges").to_list() == [True, False]


#: One dataset, two curves: mnar's realised rate falls at d = 0.3, so its ranks differ from
#: d's (it diverges); mcar tracks d within 0.02.
DIVERGING = pl.DataFrame(
    {
        "study": "s",
        "dataset": "d",
        "corruption": ["mnar"] * 4 + ["mcar"] * 4,
        "severity": [0.0, 0.1, 0.2, 0.3] * 2,
        "realised_rate": [0.0, 0.3, 0.5, 0.4, 0.0, 0.11, 0.19, 0.3],
    }
)
DIVERGING_CALIBRATION = pl.DataFrame(
    {
        "study": "s",
        "dataset": "d",
        "model": "m",
        "corruption": ["mnar"] * 4 + ["mcar"] * 4,
        "severity": [0.0, 0.1, 0.2, 0.3] * 2,
        "accuracy": [0.9, 0.8, 0.6, 0.7, 0.9, 0.85, 0.8, 0.75],
        "gap": [0.0, 0.1, 0.2, 0.15, 0.0, 0.05, 0.1, 0.15],
    }
)


def test_curves_against_the_realised_rate():
    from relcol.analysis import on_realised_axis, realised_trends

    corruptions, calibration = DIVERGING, DIVERGING_CALIBRATION
    axis = on_realised_axis(calibration, corruptions)
    assert axis.get_column("realised_rate").to_list() == corruptions["realised_rate"].to_list()
    assert axis.get_column("diverges").to_list() == [True] * 4 + [False] * 4
    trends = realised_trends(calibration, corruptions, ("accuracy",))
    got = {r["corruption"]: r for r in trends.to_dicts()}
    # mnar: accuracy ranks 4,3,1,2 against d ranks 1..4 (ρ = −0.8) but against the
    # realised ranks 1,2,4,3 it is a perfect decline (ρ = −1, exact p = 2/24).
    assert got["mnar"]["rho_nominal"] == pytest.approx(-0.8)
    assert got["mnar"]["rho_realised"] == pytest.approx(-1.0)
    assert got["mnar"]["p_realised"] == pytest.approx(2 / 24)
    assert got["mnar"]["max_deviation"] == pytest.approx(0.3) and got["mnar"]["diverges"]
    assert got["mcar"]["rho_realised"] == got["mcar"]["rho_nominal"] == pytest.approx(-1.0)
    assert not got["mcar"]["diverges"]


def test_reliability_rows_carry_their_cells_bin_ece_and_mce_by_hand():
    """Two cells, two bins each: ECE = Σ (nₘ/n)·|accₘ − confₘ|, MCE = max |accₘ − confₘ|,
    per cell and binning, on every row of the cell."""
    from relcol.analysis import reliability_bins

    bins = pl.DataFrame({
        "study": "s", "dataset": "d", "model": ["a", "a", "b", "b"], "corruption": "mcar",
        "severity": 0.0, "label": None, "binning": "width", "bin": [0, 1, 0, 1],
        "bin_lower": [0.0, 0.5, 0.0, 0.5], "bin_upper": [0.5, 1.0, 0.5, 1.0],
        "n": [10, 30, 20, 20], "mean_confidence": [0.4, 0.9, 0.3, 0.8],
        "accuracy": [0.5, 0.8, 0.3, 0.5],
    }, schema_overrides={"label": pl.Int32})  # fmt: skip
    out = reliability_bins(bins)
    a = out.filter(pl.col("model") == "a")
    b = out.filter(pl.col("model") == "b")
    assert a.get_column("cell_ece").to_list() == pytest.approx([0.25 * 0.1 + 0.75 * 0.1] * 2)
    assert a.get_column("cell_mce").to_list() == pytest.approx([0.1, 0.1])
    assert b.get_column("cell_ece").to_list() == pytest.approx([0.5 * 0.0 + 0.5 * 0.3] * 2)
    assert b.get_column("cell_mce").to_list() == pytest.approx([0.3, 0.3])


def test_risk_coverage_carries_the_oracle_curve_of_its_cells_error_rate():
    """oracle(κ) = max(κ − (1 − e), 0) / κ with e the risk at full coverage, per cell."""
    import numpy as np

    from relcol.analysis import risk_coverage

    curve = pl.DataFrame({
        "study": "s", "dataset": "d", "model": ["a"] * 3 + ["b"] * 2, "corruption": "mcar",
        "severity": 0.0, "label": None, "score": "confidence",
        "threshold": [0.9, 0.6, 0.3, 0.8, 0.2], "coverage": [0.25, 0.75, 1.0, 0.5, 1.0],
        "risk": [0.0, 1 / 3, 0.5, 0.0, 0.1],
    }, schema_overrides={"label": pl.Int32})  # fmt: skip
    out = risk_coverage(curve, points=4).collect()
    kappa = np.array([0.25, 0.5, 0.75, 1.0])
    for model, error in (("a", 0.5), ("b", 0.1)):
        got = out.filter(pl.col("model") == model).get_column("oracle_risk").to_numpy()
        np.testing.assert_allclose(got, np.maximum(kappa - (1 - error), 0) / kappa, atol=1e-15)


def test_risk_coverage_reads_each_cells_curve_at_the_first_point_covering_the_grid():
    """Cells whose coverages interleave: κ = j/K reads the cell's first curve point with
    coverage ≥ κ (a numpy search per cell), whatever the other cells hold."""
    import numpy as np

    from relcol.analysis import risk_coverage

    rng = np.random.default_rng(3)
    parts, expected = [], {}
    for c in range(30):
        n = int(rng.integers(1, 60))
        accepted = np.cumsum(rng.integers(1, 4, size=int(rng.integers(1, n + 1))))
        coverage = accepted / accepted[-1]
        risk, threshold = rng.random(len(coverage)), np.sort(rng.random(len(coverage)))[::-1]
        cell = {"study": "s", "dataset": "d", "model": f"m{c:02d}", "corruption": "mcar"}
        cell |= {"severity": 0.0, "label": None, "score": "confidence"}
        curve = {"threshold": threshold, "coverage": coverage, "risk": risk}
        parts.append(pl.DataFrame(cell | curve, schema_overrides={"label": pl.Int32}))
        kappa = np.arange(1, 11) / 10
        at = np.searchsorted(coverage, kappa, side="left")
        expected[f"m{c:02d}"] = (risk[at], threshold[at])
    shuffled = pl.concat([parts[i] for i in rng.permutation(len(parts))])  # cells in any order
    out = risk_coverage(shuffled, points=10).collect()
    for model, (risk, threshold) in expected.items():
        got = out.filter(pl.col("model") == model)
        np.testing.assert_array_equal(got["risk"].to_numpy(), risk)
        np.testing.assert_array_equal(got["threshold"].to_numpy(), threshold)


def test_risk_coverage_of_curves_that_stop_short_and_of_labels_reads_each_cell_alone():
    """Two cells that differ only in their label (null, then 3, then 5), one of them cut short
    of coverage 1: each reads its own points (a numpy search), and grid values past a cut curve
    have no risk or threshold; the oracle then has no error rate to start from either."""
    import numpy as np

    from relcol.analysis import risk_coverage

    cell = {"study": "s", "dataset": "d", "model": "m", "corruption": "mcar", "severity": 0.0}
    curves = {  # label: (coverage, risk); shares that equal grid values exactly
        None: ([0.1, 0.3, 0.7, 1.0], [0.0, 0.25, 0.5, 0.6]),
        3: ([0.2, 0.3, 0.6], [0.1, 0.2, 0.3]),  # stops at 0.6
        5: ([1.0], [0.4]),
    }
    parts = [
        pl.DataFrame(
            cell | {"label": label, "score": "confidence", "coverage": coverage,
                    "risk": risk, "threshold": np.linspace(0.9, 0.1, len(coverage))},
            schema_overrides={"label": pl.Int32},
        )
        for label, (coverage, risk) in curves.items()
    ]  # fmt: skip
    out = risk_coverage(pl.concat(parts), points=10).collect()
    assert out.get_column("label").to_list() == [None] * 10 + [3] * 10 + [5] * 10
    kappa = np.arange(1, 11) / 10
    for label, (coverage, risk) in curves.items():
        got = out.filter(pl.col("label").eq_missing(label))
        at = np.searchsorted(np.array(coverage), kappa, side="left")
        beyond = at >= len(coverage)
        want = np.where(beyond, np.nan, np.array([*risk, np.nan])[np.minimum(at, len(risk))])
        np.testing.assert_array_equal(got["coverage"].to_numpy(), kappa)
        np.testing.assert_array_equal(got["risk"].to_numpy(), want)
        assert got["threshold"].is_null().to_list() == beyond.tolist()
        full = np.nan if beyond.any() else risk[-1]
        oracle = np.maximum(kappa - (1 - full), 0) / kappa
        np.testing.assert_allclose(
            got["oracle_risk"].fill_null(np.nan).to_numpy(), oracle, atol=1e-15
        )


def test_summary_tables_with_missing_computes_only_what_is_missing():
    from relcol.analysis import summary_tables

    cal = pl.DataFrame({
        "study": "s", "dataset": "d", "model": "m", "corruption": "mcar",
        "severity": [0.0, 0.5], "accuracy": [0.75, 0.5],
        "mean_confidence": [0.75, 0.875], "gap": [0.0, 0.375], "ece": [0.125, 0.375],
    })  # fmt: skip
    given = pl.DataFrame({"marker": [1]})
    out = summary_tables({"calibration": cal, "degradation": given}, missing=True)
    assert sorted(out) == ["worst_gaps"]
    full = summary_tables({"calibration": cal, "degradation": given})
    assert full["degradation"].select("accuracy_drop").item() == 0.25
