"""Where trust breaks (docs/statistics.md): clean overconfidence, the break point, d*, the traffic
light and the action; and the statistical layer in the report, the warehouse and the command
line. Their error rates under simulated nulls are in tests/test_nulls.py."""

from __future__ import annotations

import polars as pl
import pytest

import relcol
from relcol.analysis import TrafficLight, cell_lights, thresholds
from relcol.errors import ParameterError
from relcol.store import Warehouse
from tests.test_cli import relcol as run_relcol

KEYS = {"study": "s", "dataset": "d", "model": "m", "corruption": "mcar", "label": None}


def evidence(**columns) -> pl.DataFrame:
    """The evidence of one curve over the given severities (``cell_evidence``'s columns)."""
    n = len(columns["severity"])
    base = {
        "samples": [500] * n,
        "accuracy": [0.9] * n,
        "mean_confidence": [0.9] * n,
        "gap": [0.0] * n,
        "gap_lower": [-0.02] * n,
        "change": [None] + [0.0] * (n - 1),
        "change_lower": [None] + [-0.02] * (n - 1),
        "ece": [0.03] * n,
        "ece_upper": [0.04] * n,
        "calibration_lower": [0.0] * n,
        "auroc": [0.9] * n,
        "auroc_lower": [0.85] * n,
        "auroc_upper": [0.95] * n,
        "mce_judged": [0.1] * n,
        "mce_lower": [0.0] * n,
    }
    frame = pl.DataFrame(
        {**{k: [v] * n for k, v in KEYS.items()}, **base, **columns},
        schema_overrides={"change": pl.Float64, "change_lower": pl.Float64},
    )
    return frame.with_columns(pl.col("label").cast(pl.Int32))


# The traffic light ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "light", "deciding", "action"),
    [
        ({}, "green", None, "deploy"),
        ({"ece_upper": 0.05}, "green", None, "deploy"),  # the green bound is inclusive
        ({"ece_upper": 0.06}, "amber", "ece", "more test data"),  # not shown to be within 0.05
        ({"ece_upper": 0.12, "calibration_lower": 0.07}, "amber", "ece", "temperature scaling"),
        (
            {"ece_upper": 0.3, "calibration_lower": 0.16},
            "red",
            "ece",
            "isotonic regression, then re-evaluate",
        ),
        ({"auroc_lower": 0.78}, "amber", "auroc", "more test data"),
        ({"auroc": 0.78, "auroc_lower": 0.7, "auroc_upper": 0.85}, "amber", "auroc", "retrain"),
        ({"auroc": 0.7, "auroc_lower": 0.6, "auroc_upper": 0.74}, "red", "auroc", "retrain"),
        ({"mce_judged": 0.18}, "amber", "mce", "temperature scaling"),
        (
            {"mce_judged": 0.3, "mce_lower": 0.21},
            "red",
            "mce",
            "isotonic regression, then re-evaluate",
        ),
        # several red: discrimination first (recalibrating cannot fix it), so retrain
        (
            {"calibration_lower": 0.2, "ece_upper": 0.3, "auroc": 0.7, "auroc_upper": 0.74},
            "red",
            "auroc",
            "retrain",
        ),
        # no AUROC (no wrong row): not judged
        ({"auroc": None, "auroc_lower": None, "auroc_upper": None}, "green", None, "deploy"),
        ({"samples": 29}, None, None, None),  # too few samples: no light
    ],
)
def test_traffic_light_and_action(cell, light, deciding, action):
    row = cell_lights(evidence(severity=[0.0], **{k: [v] for k, v in cell.items()}))
    row = row.row(0, named=True)
    assert (row["traffic_light"], row["deciding_metric"], row["action"]) == (
        light,
        deciding,
        action,
    )


def test_light_and_action_never_contradict():
    """Every combination of evidence: deploy exactly when green, never with red."""
    grid = {
        "ece_upper": [0.04, 0.1, 0.3],
        "calibration_lower": [0.0, 0.1, 0.2],
        "auroc_upper": [0.7, 0.9],
        "auroc_lower": [0.6, 0.85],
        "mce_judged": [0.1, 0.3],
        "mce_lower": [0.0, 0.25],
    }
    rows = pl.DataFrame({"x": [0]})
    for name, values in grid.items():
        rows = rows.join(pl.DataFrame({name: values}), how="cross")
    cells = evidence(severity=[0.0] * rows.height).drop(grid).hstack(rows.drop("x"))
    lit = cell_lights(cells)
    assert ((lit["traffic_light"] == "green") == (lit["action"] == "deploy")).all()
    red = lit.filter(pl.col("traffic_light") == "red")
    assert red.height and set(red["action"]) <= {"retrain", "isotonic regression, then re-evaluate"}


def test_thresholds_are_configurable():
    cell = evidence(severity=[0.0], ece_upper=[0.08])
    assert cell_lights(cell).row(0, named=True)["traffic_light"] == "amber"
    strict = TrafficLight(green_ece=0.1)
    assert cell_lights(cell, strict).row(0, named=True)["traffic_light"] == "green"
    assert cell_lights(cell, strict).row(0, named=True)["action"] == "deploy"
    few = TrafficLight(min_samples=600)
    assert cell_lights(cell, few).row(0, named=True)["traffic_light"] is None


# Clean overconfidence, the break point and d* ---------------------------------------------------


def test_clean_overconfidence_is_a_one_sided_test_against_tau():
    cell = evidence(severity=[0.0, 0.1], gap=[0.08, 0.08], gap_lower=[0.06, 0.06])
    row = thresholds(cell).row(0, named=True)
    assert row["clean_overconfident"] is True and row["clean_gap_lo"] == 0.06
    assert thresholds(cell, tau=0.06).row(0, named=True)["clean_overconfident"] is False
    # overconfident when clean and no worse after: no d*, no break point
    assert row["d_star"] is None and row["break_point"] is None
    with pytest.raises(ParameterError, match=r"tau must be a number in \[0, 1\)\. Got -0\.1"):
        thresholds(cell, tau=-0.1)
    with pytest.raises(ParameterError, match=r"margin must be a number in \[0, 1\)"):
        thresholds(cell, margin=-1)


def test_break_point_is_the_end_of_the_run_of_rejections_from_the_most_severe_level():
    cell = evidence(
        severity=[0.0, 0.1, 0.2, 0.3, 0.4],
        accuracy=[0.9, 0.88, 0.8, 0.7, 0.6],
        change=[None, 0.05, 0.01, 0.06, 0.1],
        # 0.1 significant, 0.2 not: the sequence from 0.4 down stops at 0.2, so 0.3
        change_lower=[None, 0.03, 0.0, 0.03, 0.07],
    )
    row = thresholds(cell).row(0, named=True)
    assert row["break_point"] == 0.3 and row["break_accuracy"] == 0.7
    assert (row["break_change"], row["break_change_lo"]) == (0.06, 0.03)
    assert thresholds(cell, margin=0.05).row(0, named=True)["break_point"] == 0.4
    assert thresholds(cell, margin=0.08).row(0, named=True)["break_point"] is None


def test_an_improvement_is_never_a_break_point():
    cell = evidence(
        severity=[0.0, 0.1, 0.2],
        change=[None, -0.1, -0.2],
        change_lower=[None, -0.15, -0.25],  # the gap falls significantly
    )
    row = thresholds(cell).row(0, named=True)
    assert row["break_point"] is None and row["d_star"] is None


def test_d_star_needs_a_significant_rise_and_a_gap_above_tau():
    cell = evidence(
        severity=[0.0, 0.1, 0.2, 0.3],
        gap=[0.01, 0.04, 0.09, 0.2],
        gap_lower=[-0.02, 0.03, 0.06, 0.15],  # above τ = 0.05 from 0.2
        change=[None, 0.03, 0.08, 0.19],
        change_lower=[None, 0.025, 0.05, 0.14],  # above the margin 0.02 from 0.1
        mean_confidence=[0.91, 0.9, 0.88, 0.85],
        accuracy=[0.9, 0.86, 0.79, 0.65],
    )
    row = thresholds(cell).row(0, named=True)
    assert row["break_point"] == 0.1 and row["d_star"] == 0.2
    assert (row["d_star_accuracy"], row["d_star_confidence"], row["d_star_gap"]) == (
        0.79,
        0.88,
        0.09,
    )
    assert row["d_star_gap_lo"] == 0.06
    assert thresholds(cell, tau=0.1).row(0, named=True)["d_star"] == 0.3
    assert thresholds(cell, tau=0.2).row(0, named=True)["d_star"] is None


def test_the_curves_light_is_its_worst_where_it_first_appears():
    cell = evidence(
        severity=[0.0, 0.1, 0.2, 0.3],
        ece_upper=[0.04, 0.1, 0.3, 0.4],
        calibration_lower=[0.0, 0.06, 0.16, 0.25],
    )
    row = thresholds(cell).row(0, named=True)
    assert (row["traffic_light"], row["light_severity"], row["deciding_metric"]) == (
        "red",
        0.2,
        "ece",
    )
    assert row["action"] == "isotonic regression, then re-evaluate"
    assert row["clean_traffic_light"] == "green" and row["worst_severity"] == 0.3
    few = thresholds(cell.with_columns(samples=pl.lit(10))).row(0, named=True)
    assert few["traffic_light"] is None and few["action"] is None


def test_cell_evidence_bounds_are_quantiles_of_the_replicates():
    """The bounds behind the verdicts, recomputed from the replicates with numpy."""
    import numpy as np

    from relcol.analysis import bootstrap, cell_evidence
    from tests.test_bootstrap import frame_of

    rows = frame_of(np.random.default_rng(4), models=("a",), severities=(0.0, 0.2, 0.4), samples=60)
    result = bootstrap(rows, replicates=200)
    points = relcol.metrics.calibration(rows, relcol.store.CELL, proba=None).collect()
    out = cell_evidence(result, points, alpha=0.1).sort("severity")
    gap = result.values["gap"]
    order = result.cells.with_row_index("i").sort("severity")["i"].to_numpy()
    # numpy's quantiles, bit for bit
    assert out["gap_lower"].to_list() == np.quantile(gap[order], 0.1, axis=1).tolist()
    change = gap[order[1:]] - gap[order[0]]
    assert out["change_lower"].to_list()[1:] == np.quantile(change, 0.1, axis=1).tolist()
    assert out["change"][0] is None
    level = 0.1 / 3  # Bonferroni over the curve's three severities
    ece = result.values["ece"][order]
    assert out["ece_upper"].to_list() == np.quantile(ece, 1 - level, axis=1).tolist()
    absolute = np.maximum(np.quantile(gap[order], level, 1), -np.quantile(gap[order], 1 - level, 1))
    excess = ece - points.sort("severity")["ece_null"].to_numpy()[:, None]
    expected = np.fmax(np.maximum(absolute, 0), np.quantile(excess, level, axis=1))
    assert out["calibration_lower"].to_list() == pytest.approx(expected)


@pytest.mark.parametrize("block_rows", [None, 3])
def test_evidence_quantiles_have_the_bits_of_numpys(block_rows, monkeypatch):
    """Each row's quantile at its own level over its finite replicates is np.nanquantile's,
    bit for bit; a row with fewer than half of them finite has none. Several levels come from
    one sort of the rows, and rows taken a few at a time (on threads) give the same bits."""
    import numpy as np

    import relcol.analysis._bootstrap as layer_module
    from relcol.analysis._thresholds import _quantiles

    if block_rows is not None:  # rows taken 3 at a time, where the default takes 261
        monkeypatch.setattr(layer_module, "ROW_BLOCK_ENTRIES", block_rows * 1001)
    rng = np.random.default_rng(12)
    # enough rows that some interpolate from ½ on, where a + (b − a)·f, numpy's formula below
    # ½, would differ from numpy's quantile in the last bit
    values = rng.normal(size=(2000, 1001))
    values[:10] = np.round(values[:10] * 4) / 4  # many ties
    values[10] = 0.25  # one value throughout
    values[11, :400] = np.nan  # 60 % finite: over those
    values[12, :600] = np.inf  # 40 % finite: none
    values[13, [3, 7]] = [np.nan, -np.inf]
    level = rng.uniform(0.001, 0.999, len(values))
    level[14:16] = [0.0, 1.0]
    low, high, fixed = _quantiles(values, level, 1 - level, 0.1)
    finite = np.where(np.isfinite(values), values, np.nan)
    for got, at in ((low, level), (high, 1 - level), (fixed, np.full(len(values), 0.1))):
        expected = np.array([np.nanquantile(row, q) for row, q in zip(finite, at, strict=True)])
        expected[12] = np.nan
        assert got.tobytes() == expected.tobytes()
    assert [q.tolist() for q in _quantiles(np.empty((0, 5)), 0.5)] == [[]]


def test_judged_mce_is_the_well_filled_bins_largest_gap_and_bound(monkeypatch):
    """mce_judged, mce_samples and mce_lower recomputed cell by cell from their definitions."""
    import dataclasses

    import numpy as np
    from polars.testing import assert_frame_equal

    from relcol.analysis import _thresholds, bootstrap, cell_evidence
    from relcol.analysis._thresholds import DEFAULT_LIGHTS
    from tests.test_bootstrap import frame_of

    rows = frame_of(np.random.default_rng(9), models=("a", "b"), severities=(0.0, 0.3, 0.6))
    rows = rows.vstack(frame_of(np.random.default_rng(10), study="t", samples=120))
    cell = list(relcol.store.CELL)
    result = bootstrap(rows, replicates=300)
    points = relcol.metrics.calibration(rows, cell, proba=None).collect()
    bins = relcol.metrics.calibration_bins(rows, cell).collect()
    samples = rows.group_by(cell).agg(samples=pl.col("sample_id").n_unique())
    lights = dataclasses.replace(DEFAULT_LIGHTS, mce_min_samples=4)
    out = cell_evidence(result, points, bins, samples, alpha=0.1, lights=lights)
    monkeypatch.setattr(_thresholds, "_MCE_ROWS", 3)  # the bins' bounds in blocks of 3 rows
    blocks = cell_evidence(result, points, bins, samples, alpha=0.1, lights=lights)
    assert_frame_equal(blocks, out, check_exact=True)
    accuracy = result.bins["width"]
    index = {key: i for i, key in enumerate(result.cells.iter_rows())}
    judged_some = 0
    for row in out.iter_rows(named=True):
        key = tuple(row[k] for k in cell)
        n = points.filter(pl.all_horizontal(pl.col(k).eq_missing(row[k]) for k in cell))["n"][0]
        mine = bins.filter(pl.all_horizontal(pl.col(k).eq_missing(row[k]) for k in cell))
        worth = mine["n"].to_numpy() * row["samples"] / n
        kept = worth >= 4
        if not kept.any():
            assert row["mce_judged"] is None or np.isnan(row["mce_judged"])
            continue
        judged_some += 1
        gap = np.abs(mine["accuracy"].to_numpy() - mine["mean_confidence"].to_numpy())[kept]
        best = max(range(kept.sum()), key=lambda i: (gap[i], worth[kept][i]))  # ties: fuller
        assert row["mce_judged"] == gap[best] and row["mce_samples"] == worth[kept][best]
        level = row["light_level"] / kept.sum()
        bounds = []
        for b, c in zip(
            mine["bin"].to_numpy()[kept], mine["mean_confidence"].to_numpy()[kept], strict=True
        ):
            r = accuracy[index[key], b].astype(np.float64) - c
            r = r[np.isfinite(r)]
            if 2 * len(r) >= accuracy.shape[2]:
                bounds.append(max(np.quantile(r, level), -np.quantile(r, 1 - level)))
        if bounds:
            assert row["mce_lower"] == pytest.approx(max(bounds), abs=1e-15)
        else:
            assert row["mce_lower"] is None or np.isnan(row["mce_lower"])
    assert judged_some == out.height == 10


# The statistical layer in the report, the warehouse and the command line -------------------


@pytest.fixture(scope="module")
def reported(tiny_warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    result = relcol.report(tiny_warehouse, study="tiny", out=out, bootstrap=200, tau=0.05, seed=3)
    return tiny_warehouse, result


def test_report_tables_carry_intervals_trends_and_thresholds(reported):
    wh, result = reported
    tables = relcol.report_tables(wh, "tiny", bootstrap=200, seed=3)
    calibration = tables["calibration"]
    for name in ("accuracy", "gap", "abs_gap", "brier", "nll_top"):
        assert {f"{name}_lo", f"{name}_hi"} <= set(calibration.columns), name
    for name in ("ece", "ace", "mce", "ece_excess"):  # descriptive: NO_INTERVAL
        assert f"{name}_lo" not in calibration.columns, name
    assert {"gap_sd", "gap_min", "gap_max"} <= set(calibration.columns)
    assert {"auroc_lo", "fpr_at_95tpr_hi", "cohens_d_lo"} <= set(tables["discrimination"].columns)
    assert {"aurc_lo", "e_aurc_hi"} <= set(tables["selective"].columns)
    assert {"accuracy_lo", "accuracy_hi"} <= set(tables["calibration_bins"].columns)
    assert tables["reliability"]["interval"].unique().to_list() == ["wilson"]
    inside = (calibration["gap_lo"] <= calibration["gap"]) & (
        calibration["gap"] <= calibration["gap_hi"]
    )
    assert inside.all()
    curves = calibration.select("dataset", "model", "corruption").unique().height
    assert tables["thresholds"].height == curves
    # the pooled curve: one point per severity (3 in the tiny study)
    trends = tables["trends"]
    assert (trends.filter(pl.col("metric") == "gap")["points"] == 3).all()
    assert trends.filter(pl.col("p_value").is_not_null())["p_value"].min() > 0
    assert tables["seeds"]["seed"].unique().sort().to_list() == [0, 1]
    assert "d*" in result.summary and "light" in result.summary and "break" in result.summary
    assert tables["evidence"].height == calibration.height


def test_materialised_views_after_a_report(reported):
    wh, _ = reported
    assert wh.sql("SELECT count(*) AS n FROM report_thresholds")["n"][0] > 0
    trends = wh.sql("SELECT * FROM report_trends WHERE metric = 'gap'")
    assert {"spearman_rho", "p_value", "rho_lo", "rho_hi", "points"} <= set(trends.columns)
    cal = wh.sql("SELECT gap, gap_lo, gap_hi, bootstrap FROM report_calibration")
    assert (cal["gap_lo"] <= cal["gap_hi"]).all() and (cal["bootstrap"] == 200).all()
    diffs = wh.sql(
        "SELECT DISTINCT contrast FROM report_differences WHERE metric = 'accuracy' ORDER BY 1"
    )
    assert diffs["contrast"].to_list() == ["clean", "model"]


def test_an_empty_warehouse_has_the_statistical_views(tmp_path):
    wh = Warehouse(tmp_path / "empty", create=True)
    for view in ("report_trends", "report_thresholds", "report_differences"):
        described = wh.sql(f"DESCRIBE {view}")
        assert {"study", "dataset", "model", "corruption"} <= set(described["column_name"])
        assert wh.sql(f"SELECT count(*) AS n FROM {view}")["n"][0] == 0


def test_training_intervals_are_wider_and_say_what_they_cover(tiny_warehouse):
    plain = relcol.report_tables(tiny_warehouse, "tiny", bootstrap=100)["calibration"]
    wide = relcol.report_tables(tiny_warehouse, "tiny", bootstrap=100, intervals="training")[
        "calibration"
    ]
    assert set(plain["interval_scope"]) == {"test samples"}
    assert set(wide["interval_scope"]) == {"test samples and training seeds"}
    assert (wide["gap_lo"] <= plain["gap_lo"]).all() and (wide["gap_hi"] >= plain["gap_hi"]).all()
    assert (wide["gap_hi"] - wide["gap_lo"] > plain["gap_hi"] - plain["gap_lo"]).any()
    with pytest.raises(ParameterError, match="intervals must be one of 'samples', 'training'"):
        relcol.report_tables(tiny_warehouse, "tiny", bootstrap=10, intervals="seeds")


def test_bootstrap_zero_reports_point_estimates_only(tiny_warehouse):
    tables = relcol.report_tables(tiny_warehouse, "tiny", bootstrap=0)
    assert "ece_lo" not in tables["calibration"].columns and "thresholds" not in tables


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--alpha", "1.5"], "--alpha"),
        (["--bootstrap", "-1"], "--bootstrap"),
        (["--tau", "-0.1"], "--tau"),
        (["--margin", "1"], "--margin"),
        (["--intervals", "seeds"], "--intervals"),
        (["--seed", "-2"], "--seed"),
    ],
)
def test_bad_report_options_are_one_line_errors(tiny_warehouse, tmp_path, option, message):
    done = run_relcol("report", "--warehouse", str(tiny_warehouse.root), *option, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1


def test_report_api_validates_options(tiny_warehouse):
    with pytest.raises(ParameterError, match="alpha must be a number in"):
        relcol.report_tables(tiny_warehouse, "tiny", alpha=0)
    with pytest.raises(ParameterError, match="bootstrap must be an int"):
        relcol.report_tables(tiny_warehouse, "tiny", bootstrap=True)
    with pytest.raises(ParameterError, match=r"margin must be a number in \[0, 1\)"):
        relcol.report_tables(tiny_warehouse, "tiny", margin=-0.1)
