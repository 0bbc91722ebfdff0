"""Where trust breaks (METRICS.md §6): d*, the break point, the traffic light and the action;
and the statistical layer in the report, the warehouse and the command line."""

from __future__ import annotations

import polars as pl
import pytest

import relcol
from relcol.analysis import TrafficLight, cell_lights, thresholds
from relcol.errors import ParameterError
from tests.test_cli import relcol as run_relcol

KEYS = {"study": "s", "dataset": "d", "model": "m", "corruption": "mcar", "label": None}


def curve(**columns) -> pl.DataFrame:
    """A calibration table of one curve over the given severities."""
    n = len(columns["severity"])
    base = {
        "accuracy": [0.9] * n,
        "mean_confidence": [0.9] * n,
        "gap": [0.0] * n,
        "gap_lo": [-0.01] * n,
        "gap_hi": [0.01] * n,
        "ece": [0.03] * n,
        "mce": [0.1] * n,
    }
    frame = pl.DataFrame({**{k: [v] * n for k, v in KEYS.items()}, **base, **columns})
    return frame.with_columns(pl.col("label").cast(pl.Int32))


def discrimination(cal: pl.DataFrame, auroc: list[float | None]) -> pl.DataFrame:
    keys = ["study", "dataset", "model", "corruption", "severity", "label"]
    return cal.select(keys).with_columns(auroc=pl.Series(auroc, dtype=pl.Float64))


def ece_changes(cal: pl.DataFrame, bounds: list[tuple[float, float]]) -> pl.DataFrame:
    keys = ["study", "dataset", "model", "corruption", "severity", "label"]
    rows = cal.select(keys).filter(pl.col("severity") != 0)
    return rows.with_columns(
        contrast=pl.lit("clean"),
        metric=pl.lit("ece"),
        difference=pl.Series([(a + b) / 2 for a, b in bounds]),
        difference_lo=pl.Series([a for a, _ in bounds]),
        difference_hi=pl.Series([b for _, b in bounds]),
    )


# The traffic light ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ece", "auroc", "mce", "light", "deciding", "action"),
    [
        (0.05, 0.80, 0.15, "green", "ece", "deploy"),  # every green bound is inclusive
        (0.0500001, 0.9, 0.1, "amber", "ece", "temperature scaling"),
        (0.15, 0.9, 0.1, "amber", "ece", "temperature scaling"),
        (0.16, 0.9, 0.1, "red", "ece", "isotonic regression, then re-evaluate"),
        (0.03, 0.79, 0.1, "amber", "auroc", "retrain"),  # AUROC < 0.80: retrain first
        (0.03, 0.74, 0.1, "red", "auroc", "retrain"),
        (0.03, 0.9, 0.2, "amber", "mce", "deploy"),  # deploy by ECE, amber by MCE
        (0.03, 0.9, 0.21, "red", "mce", "deploy"),
        (0.2, 0.7, 0.3, "red", "ece", "retrain"),  # several red: the first of ece, auroc, mce
        (0.03, None, 0.1, "green", "ece", "deploy"),  # no AUROC (no wrong row): not judged
    ],
)
def test_traffic_light_and_action(ece, auroc, mce, light, deciding, action):
    cells = pl.DataFrame(
        {"ece": [ece], "auroc": [auroc], "mce": [mce]}, schema_overrides={"auroc": pl.Float64}
    )
    row = cell_lights(cells).row(0, named=True)
    assert (row["traffic_light"], row["deciding_metric"], row["action"]) == (
        light,
        deciding,
        action,
    )


def test_thresholds_are_configurable():
    cells = pl.DataFrame({"ece": [0.08], "auroc": [0.9], "mce": [0.1]})
    strict = TrafficLight(green_ece=0.1, deploy_ece=0.1)
    assert cell_lights(cells, strict).row(0, named=True)["traffic_light"] == "green"
    assert cell_lights(cells, strict).row(0, named=True)["action"] == "deploy"


# d* and the break point ----------------------------------------------------------------------


def test_d_star_is_the_first_severity_significantly_overconfident_by_more_than_tau():
    cal = curve(
        severity=[0.0, 0.1, 0.2, 0.3],
        gap=[0.01, 0.07, 0.12, 0.2],
        gap_lo=[-0.02, 0.04, 0.06, 0.1],  # > τ = 0.05 first at 0.2 (0.04 is significant but < τ)
        gap_hi=[0.04, 0.1, 0.18, 0.3],
        accuracy=[0.9, 0.8, 0.7, 0.6],
        mean_confidence=[0.91, 0.87, 0.82, 0.8],
    )
    out = thresholds(cal, discrimination(cal, [0.9] * 4)).row(0, named=True)
    assert out["d_star"] == 0.2 and out["d_star_gap_lo"] == 0.06 and out["d_star_gap_hi"] == 0.18
    assert (out["d_star_accuracy"], out["d_star_confidence"], out["d_star_gap"]) == (
        0.7,
        0.82,
        0.12,
    )
    assert (
        thresholds(cal, discrimination(cal, [0.9] * 4), tau=0.03).row(0, named=True)["d_star"]
        == 0.1
    )
    assert (
        thresholds(cal, discrimination(cal, [0.9] * 4), tau=0.2).row(0, named=True)["d_star"]
        is None
    )
    clean = cal.with_columns(gap_lo=pl.lit(0.3))  # overconfident already on clean data
    assert thresholds(clean, discrimination(cal, [0.9] * 4)).row(0, named=True)["d_star"] == 0.0
    with pytest.raises(ParameterError, match=r"tau must be a number in \[0, 1\)\. Got -0\.1"):
        thresholds(cal, discrimination(cal, [0.9] * 4), tau=-0.1)


def test_break_point_is_the_first_severity_whose_ece_change_excludes_zero():
    cal = curve(severity=[0.0, 0.1, 0.2, 0.3], accuracy=[0.9, 0.85, 0.8, 0.7])
    # 0.1: [−0.01, 0.02] contains 0; 0.2: [0.01, 0.05] excludes it; 0.3 as well
    changes = ece_changes(cal, [(-0.01, 0.02), (0.01, 0.05), (0.05, 0.1)])
    out = thresholds(cal, discrimination(cal, [0.9] * 4), changes).row(0, named=True)
    assert out["break_point"] == 0.2 and out["break_accuracy"] == 0.8
    assert (out["break_change_lo"], out["break_change_hi"]) == (0.01, 0.05)
    lower = ece_changes(cal, [(-0.01, 0.02), (-0.05, -0.01), (0.0, 0.1)])  # ECE falls: a break too
    assert (
        thresholds(cal, discrimination(cal, [0.9] * 4), lower).row(0, named=True)["break_point"]
        == 0.2
    )
    never = ece_changes(cal, [(-0.01, 0.02)] * 3)
    row = thresholds(cal, discrimination(cal, [0.9] * 4), never).row(0, named=True)
    assert row["break_point"] is None and row["break_accuracy"] is None


def test_the_curves_light_is_its_worst_where_it_first_appears():
    cal = curve(severity=[0.0, 0.1, 0.2, 0.3], ece=[0.03, 0.1, 0.2, 0.3])
    out = thresholds(cal, discrimination(cal, [0.9] * 4)).row(0, named=True)
    assert (out["traffic_light"], out["light_severity"], out["deciding_metric"]) == (
        "red",
        0.2,
        "ece",
    )
    assert out["action"] == "isotonic regression, then re-evaluate"
    assert out["clean_traffic_light"] == "green" and out["worst_severity"] == 0.3
    no_auroc = thresholds(cal.head(1), discrimination(cal.head(1), [None])).row(0, named=True)
    assert no_auroc["traffic_light"] == "green"


# The statistical layer in the report, the warehouse and the command line -------------------


@pytest.fixture(scope="module")
def reported(tiny_warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    result = relcol.report(tiny_warehouse, study="tiny", out=out, bootstrap=200, tau=0.05, seed=3)
    return tiny_warehouse, result


def test_report_tables_carry_intervals_trends_and_thresholds(reported):
    wh, result = reported
    tables = relcol._api.report_tables(wh, "tiny", bootstrap=200, seed=3)
    calibration = tables["calibration"]
    for name in ("accuracy", "gap", "ece", "ace", "brier", "nll_top", "ece_excess"):
        assert {f"{name}_lo", f"{name}_hi"} <= set(calibration.columns), name
    assert {"gap_sd", "gap_min", "gap_max"} <= set(calibration.columns)
    assert {"auroc_lo", "fpr_at_95tpr_hi", "cohens_d_lo"} <= set(tables["discrimination"].columns)
    assert {"aurc_lo", "e_aurc_hi"} <= set(tables["selective"].columns)
    assert {"accuracy_lo", "accuracy_hi"} <= set(tables["calibration_bins"].columns)
    assert tables["reliability"]["interval"].unique().to_list() == ["bootstrap"]
    inside = (calibration["gap_lo"] <= calibration["gap"]) & (
        calibration["gap"] <= calibration["gap_hi"]
    )
    assert inside.all()
    curves = calibration.select("dataset", "model", "corruption").unique().height
    assert tables["thresholds"].height == curves
    # 3 severities × 2 seeds = 6 points (fewer where a seed's AUROC is undefined): exact
    trends = tables["trends"]
    assert set(trends["p_method"]) <= {"exact", "none"} and trends["points"].max() == 6
    assert (trends.filter(pl.col("metric") == "gap")["points"] == 6).all()
    assert tables["seeds"]["seed"].unique().sort().to_list() == [0, 1]
    assert "d*" in result.summary and "light" in result.summary


def test_materialised_views_after_a_report(reported):
    wh, _ = reported
    assert wh.sql("SELECT count(*) AS n FROM report_thresholds")["n"][0] > 0
    trends = wh.sql("SELECT * FROM report_trends WHERE metric = 'gap'")
    assert {"spearman_rho", "p_value", "rho_lo", "rho_hi", "points"} <= set(trends.columns)
    cal = wh.sql("SELECT ece, ece_lo, ece_hi, bootstrap FROM report_calibration")
    assert (cal["ece_lo"] <= cal["ece_hi"]).all() and (cal["bootstrap"] == 200).all()
    diffs = wh.sql(
        "SELECT DISTINCT contrast FROM report_differences WHERE metric = 'accuracy' ORDER BY 1"
    )
    assert diffs["contrast"].to_list() == ["clean", "model"]


def test_an_empty_warehouse_has_the_statistical_views(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "empty")
    for view in ("report_trends", "report_thresholds", "report_differences"):
        described = wh.sql(f"DESCRIBE {view}")
        assert {"study", "dataset", "model", "corruption"} <= set(described["column_name"])
        assert wh.sql(f"SELECT count(*) AS n FROM {view}")["n"][0] == 0


def test_bootstrap_zero_reports_point_estimates_only(tiny_warehouse):
    tables = relcol._api.report_tables(tiny_warehouse, "tiny", bootstrap=0)
    assert "ece_lo" not in tables["calibration"].columns and "thresholds" not in tables


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--alpha", "1.5"], "--alpha"),
        (["--bootstrap", "-1"], "--bootstrap"),
        (["--tau", "-0.1"], "--tau"),
        (["--seed", "-2"], "--seed"),
    ],
)
def test_bad_report_options_are_one_line_errors(tiny_warehouse, tmp_path, option, message):
    done = run_relcol("report", "--warehouse", str(tiny_warehouse.root), *option, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1


def test_report_api_validates_options(tiny_warehouse):
    with pytest.raises(ParameterError, match="alpha must be a number in"):
        relcol._api.report_tables(tiny_warehouse, "tiny", alpha=0)
    with pytest.raises(ParameterError, match="bootstrap must be an int"):
        relcol._api.report_tables(tiny_warehouse, "tiny", bootstrap=True)
