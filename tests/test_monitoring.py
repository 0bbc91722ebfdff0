"""Monitoring over periods: the period axis at ingest, per-period metrics, the alerts' tests
(against exact references), their false-alarm rates and power with known truth, the view,
the command and the report section."""

from __future__ import annotations

import itertools
import json
from datetime import date

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from relcol.cli import main
from scipy import stats

import relcol
from relcol.analysis._monitoring import (
    ALERT_EXIT,
    Rules,
    Stream,
    _units,
    alerts,
    drift_test,
    holm,
    monitor,
    period_metrics,
    period_order,
    permutation_test,
    simulate_monitoring,
    simulate_stream,
)
from relcol.errors import InputError, ParameterError
from relcol.store import ANNOTATIONS
from tests.test_store import checksums

# -- the period axis at ingest ----------------------------------------------------------------


def weekly_frame() -> pl.DataFrame:
    """Two weeks of four emails; week 2 is wrong more often at the same confidences."""
    return pl.DataFrame(
        {
            "truth": ["spam", "ham", "spam", "spam", "ham", "spam", "ham", "ham"],
            "pred": ["spam", "ham", "spam", "ham", "spam", "spam", "spam", "ham"],
            "conf": [0.9, 0.6, 0.8, 0.7, 0.9, 0.6, 0.8, 0.7],
            "week": ["2026-W01"] * 4 + ["2026-W02"] * 4,
        }
    )


def ingest(tmp_path, frame: pl.DataFrame, *args: str, name: str = "weekly"):
    path = tmp_path / f"{name}.csv"
    frame.write_csv(path)
    return CliRunner().invoke(
        main,
        [
            "ingest",
            "--predictions",
            str(path),
            "--warehouse",
            str(tmp_path / "wh"),
            "--name",
            name,
            "--column",
            "y_true=truth",
            "--column",
            "y_pred=pred",
            "--column",
            "confidence=conf",
            *args,
        ],
    )


def test_period_column_is_stored_beside_each_prediction(tmp_path):
    done = ingest(tmp_path, weekly_frame(), "--period", "week")
    assert done.exit_code == 0, done.output
    wh = relcol.open_warehouse(tmp_path / "wh")
    stored = wh.sql("SELECT sample_id, period FROM annotations ORDER BY sample_id")
    assert stored["period"].to_list() == ["2026-W01"] * 4 + ["2026-W02"] * 4
    assert stored["sample_id"].to_list() == list(range(8))
    # the long table itself is unchanged: no agreement or split was invented
    extras = wh.sql("SELECT count(agreement) AS a, count(split) AS s FROM annotations")
    assert extras.row(0) == (0, 0)


def test_a_date_period_is_stored_in_iso_form_and_an_integer_as_digits():
    dates = weekly_frame().with_columns(
        week=pl.Series([date(2026, 1, 5)] * 4 + [date(2026, 1, 12)] * 4, dtype=pl.Date)
    )
    read = relcol.read_predictions(
        dates,
        columns={"y_true": "truth", "y_pred": "pred", "confidence": "conf", "period": "week"},
    )
    assert read.annotations["period"].unique(maintain_order=True).to_list() == [
        "2026-01-05",
        "2026-01-12",
    ]
    numbers = weekly_frame().with_columns(week=pl.Series([9] * 4 + [10] * 4))
    read = relcol.read_predictions(
        numbers,
        columns={"y_true": "truth", "y_pred": "pred", "confidence": "conf", "period": "week"},
    )
    assert read.annotations["period"].unique(maintain_order=True).to_list() == ["9", "10"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            [1.5] * 8,
            "1 row holds numbers that are not whole|8 rows hold numbers that are not whole",
        ),
        (["w1", "w1", " ", "w1", "w2", "w2", "w2", "w2"], "1 row is empty or blank"),
        (["w1", None, "w1", "w1", "w2", "w2", "w2", "w2"], "1 row has no value"),
    ],
)
def test_a_bad_period_is_one_line_and_writes_nothing(tmp_path, values, message):
    assert ingest(tmp_path, weekly_frame(), name="first").exit_code == 0
    before = checksums(tmp_path / "wh")
    done = ingest(tmp_path, weekly_frame().with_columns(week=pl.Series(values)), "--period", "week")
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "column 'week' (period)" in lines[0], done.stderr
    assert any(part in lines[0] for part in message.split("|")), lines[0]
    assert checksums(tmp_path / "wh") == before


def test_period_applies_only_to_a_prediction_file(tmp_path):
    done = CliRunner().invoke(main, ["ingest", "--period", "week", "--warehouse", str(tmp_path)])
    assert done.exit_code == 2
    assert "--period applies only with --predictions FILE" in done.stderr


def test_an_annotations_file_written_before_periods_still_reads(tmp_path):
    """A warehouse whose annotations (and schema file) have no period column: the views,
    the multi-label pairs and monitoring read it as having no period."""
    frame = weekly_frame().with_columns(agreement=pl.lit(0.75))
    assert ingest(tmp_path, frame).exit_code == 0
    wh = relcol.open_warehouse(tmp_path / "wh")
    old = {k: v for k, v in ANNOTATIONS.items() if k != "period"}
    files = [p for p in (tmp_path / "wh").rglob("*annotations*.parquet")]
    assert len(files) == 2  # the schema file and the study's file
    for path in files:
        pl.read_parquet(path).select(list(old)).write_parquet(path)
    stored = wh.sql("SELECT agreement, period FROM annotations")
    assert stored["agreement"].to_list() == [0.75] * 8
    assert stored["period"].null_count() == 8
    assert wh.sql("SELECT count(*) AS n FROM monitoring")["n"][0] == 0
    with pytest.raises(InputError, match="has no periods: ingest its predictions with --period"):
        monitor(wh, study="weekly")


def test_a_multi_label_file_is_monitored_per_label(tmp_path):
    rng = np.random.default_rng(2)
    n = 60  # samples per period, each with two labels
    p = rng.uniform(0.05, 0.95, (2 * n, 2))
    frame = pl.DataFrame(
        {
            "sample_id": np.repeat(np.arange(2 * n), 2),
            "label": ["spam", "urgent"] * (2 * n),
            "y_true": (rng.random(4 * n) < p.ravel()).astype(int),
            "probability": p.ravel(),
            "week": np.repeat(["w1", "w2"], 2 * n),
        }
    )
    path = tmp_path / "ml.parquet"
    frame.write_parquet(path)
    relcol.ingest_predictions(
        path, tmp_path / "wh", name="ml", columns={"period": "week"}, classes=["spam", "urgent"]
    )
    result = monitor(tmp_path / "wh", rules=Rules(permutations=99), replicates=0)
    assert result.metrics.select("label", "period").rows() == [
        (0, "w1"),
        (0, "w2"),
        (1, "w1"),
        (1, "w2"),
    ]
    assert result.metrics["n"].to_list() == [n] * 4
    assert result.alerts.group_by("label").len().sort("label")["len"].to_list() == [3, 3]
    # label 0's week-1 accuracy is the share of its rows whose 0/1 prediction is right
    rows = frame.filter((pl.col("label") == "spam") & (pl.col("week") == "w1"))
    right = ((rows["probability"] >= 0.5).cast(pl.Int64) == rows["y_true"]).mean()
    assert result.metrics["accuracy"][0] == pytest.approx(right)


# -- per-period metrics and the view ----------------------------------------------------------


def test_period_order_puts_numbers_first_in_numeric_order():
    assert period_order(["10", "9", "b", "a", "2.5", "nan"]) == ["2.5", "9", "10", "a", "b", "nan"]


def test_the_view_orders_periods_as_python_does(tmp_path):
    periods = ["10", "9", "b", "1e3", "2.5", "a", "1.0", "1"]
    frame = pl.concat([weekly_frame().head(1)] * len(periods)).with_columns(week=pl.Series(periods))
    assert ingest(tmp_path, frame, "--period", "week").exit_code == 0
    wh = relcol.open_warehouse(tmp_path / "wh")
    view = wh.sql("SELECT period, period_index FROM monitoring ORDER BY period_index")
    assert view["period"].to_list() == period_order(periods)
    assert view["period"].to_list() == ["1", "1.0", "2.5", "9", "10", "1e3", "a", "b"]
    assert view["period_index"].to_list() == list(range(len(periods)))


def test_the_view_and_the_metrics_match_a_hand_worked_example(tmp_path):
    assert ingest(tmp_path, weekly_frame(), "--period", "week").exit_code == 0
    wh = relcol.open_warehouse(tmp_path / "wh")
    view = wh.sql("SELECT * FROM monitoring ORDER BY period_index")
    # week 1: 0.9 ✓, 0.6 ✓, 0.8 ✓, 0.7 ✗; 15 bins put each confidence in its own bin
    # ECE = (0.1 + 0.4 + 0.2 + 0.7)/4 = 0.35, MCE = 0.7, Brier = (.01+.16+.04+.49)/4 = 0.175
    # week 2: 0.9 ✗, 0.6 ✓, 0.8 ✗, 0.7 ✓: ECE = (0.9 + 0.4 + 0.8 + 0.3)/4 = 0.6, MCE = 0.9
    assert view["period"].to_list() == ["2026-W01", "2026-W02"]
    assert view["baseline"].to_list() == ["2026-W01"] * 2
    assert view["accuracy"].to_list() == [0.75, 0.5]
    assert view["ece"].to_list() == pytest.approx([0.35, 0.6])
    assert view["mce"].to_list() == pytest.approx([0.7, 0.9])
    assert view["brier_top"].to_list() == pytest.approx([0.175, (0.81 + 0.16 + 0.64 + 0.09) / 4])
    assert view["ece_change"].to_list() == pytest.approx([0.0, 0.25])
    assert view["mce_change"].to_list() == pytest.approx([0.0, 0.2])
    result = monitor(wh, rules=Rules(permutations=99), replicates=50)
    python = result.metrics
    for column in ("accuracy", "mean_confidence", "ece", "mce", "brier_top"):
        assert python[column].to_list() == pytest.approx(view[column].to_list(), abs=1e-12)
    assert python["n"].to_list() == [4, 4]
    done = CliRunner().invoke(
        main, ["monitor", "--warehouse", str(tmp_path / "wh"), "--bootstrap", "0"]
    )
    assert done.exit_code in (0, ALERT_EXIT), done.output
    assert (
        "2026-W01  n 4  accuracy 0.750  confidence 0.750  ECE 0.350  MCE 0.700  brier_top 0.175"
        in done.stdout
    )
    assert (
        "2026-W02  n 4  accuracy 0.500  confidence 0.750  ECE 0.600  MCE 0.900  brier_top 0.425"
        in done.stdout
    )


def test_only_verified_metrics_get_an_interval_and_it_matches_the_bootstrap():
    rows = simulate_stream(Stream("stable", periods=3, samples=300), np.random.default_rng(3))
    table = period_metrics(rows, replicates=400, seed=1)
    assert {"accuracy_lo", "mean_confidence_lo", "brier_top_lo", "auroc_lo"} <= set(table.columns)
    assert not {"ece_lo", "mce_lo"} & set(table.columns)
    # point estimates against numpy, period by period
    for period, part in rows.partition_by("period", as_dict=True, maintain_order=True).items():
        c, z = part["confidence"].to_numpy(), part["correct"].to_numpy().astype(float)
        row = table.filter(pl.col("period") == period[0]).row(0, named=True)
        assert row["accuracy"] == pytest.approx(z.mean())
        assert row["brier_top"] == pytest.approx(np.mean((c - z) ** 2))
        bins = np.maximum(np.ceil(c * 15) - 1, 0)
        ece = sum(abs((z - c)[bins == m].sum()) for m in range(15)) / len(c)
        assert row["ece"] == pytest.approx(ece)
        # the accuracy interval is about the binomial one: ±1.96·√(p(1 − p)/n)
        half = 1.96 * np.sqrt(z.mean() * (1 - z.mean()) / len(z))
        assert row["accuracy_hi"] - row["accuracy_lo"] == pytest.approx(2 * half, rel=0.15)


# -- the tests behind the alerts --------------------------------------------------------------


def tiny_groups() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two groups in two of 4 bins: (0.5, 0.75] and (0.75, 1]."""
    baseline = pl.DataFrame(
        {
            "sample_id": [0, 1, 2, 3],
            "confidence": [0.55, 0.58, 0.9, 0.95],
            "correct": [True, False, True, True],
        }
    )
    period = pl.DataFrame(
        {
            "sample_id": [4, 5, 6, 7, 8],
            "confidence": [0.52, 0.59, 0.91, 0.97, 0.93],
            "correct": [False, False, False, True, False],
        }
    )
    return baseline, period


def reference_ece_mce(c: np.ndarray, z: np.ndarray, bins: int = 4) -> tuple[float, float]:
    b = np.maximum(np.ceil(c * bins) - 1, 0)
    gaps = [abs((z - c)[b == m].sum()) for m in range(bins) if (b == m).any()]
    sizes = [(b == m).sum() for m in range(bins) if (b == m).any()]
    return sum(gaps) / len(c), max(g / n for g, n in zip(gaps, sizes, strict=True))


def test_the_permutation_p_values_match_exact_enumeration():
    baseline, period = tiny_groups()
    c = np.concatenate([baseline["confidence"].to_numpy(), period["confidence"].to_numpy()])
    z = np.concatenate([baseline["correct"].to_numpy(), period["correct"].to_numpy()]).astype(float)
    low, high = [0, 1, 4, 5], [2, 3, 6, 7, 8]  # units of each bin (indices into c, z)

    def delta(base: list[int]) -> tuple[float, float]:
        rest = [i for i in range(9) if i not in base]
        eb, mb = reference_ece_mce(c[base], z[base])
        ep, mp = reference_ece_mce(c[rest], z[rest])
        return ep - eb, mp - mb

    observed = delta([0, 1, 2, 3])
    null = [
        delta([*a, *b])
        for a in itertools.combinations(low, 2)
        for b in itertools.combinations(high, 2)
    ]
    assert len(null) == 60
    exact_ece = np.mean([d[0] >= observed[0] - 1e-12 for d in null])
    exact_mce = np.mean([d[1] >= observed[1] - 1e-12 for d in null])
    got = permutation_test(_units(baseline, period, 4), 4, 20000, np.random.default_rng(0))
    assert got["period_ece"] - got["baseline_ece"] == pytest.approx(observed[0])
    assert got["period_mce"] - got["baseline_mce"] == pytest.approx(observed[1])
    for p, exact in ((got["p_ece"], exact_ece), (got["p_mce"], exact_mce)):
        assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / 20000) + 1e-4


@pytest.mark.parametrize("generator", [np.random.PCG64, np.random.Philox, np.random.SFC64])
def test_the_compiled_shuffles_draw_what_generator_permuted_draws(generator):
    """Each permutation's baseline sums are those of numpy's own shuffle of the bin (the same
    units, in the same order of draws), and the generator ends where numpy leaves it."""
    from relcol.analysis._compiled import baseline_sums

    source = np.random.default_rng(7)
    sizes = [1, 2, 3, 17, 130, 1000]  # units per bin: 1 and 2 are the smallest bounds
    starts = np.cumsum([0, *sizes[:-1]])
    ends = starts + sizes
    base_count = np.array([1, 1, 2, 5, 64, 999])
    n = source.integers(1, 9, sum(sizes)).astype(np.float64)
    residual = source.normal(size=sum(sizes))
    mixed = [1, 2, 3, 4, 5]  # bin 0 (one unit) is never shuffled
    ours, numpy = np.random.Generator(generator(3)), np.random.Generator(generator(3))
    got_n, got_r = baseline_sums(n, residual, starts, ends, base_count, mixed, 300, ours)
    for column, b in enumerate(mixed):
        order = numpy.permuted(np.tile(np.arange(sizes[b]), (300, 1)), axis=1)
        chosen = starts[b] + order[:, : base_count[b]]
        np.testing.assert_array_equal(got_n[:, column], n[chosen].sum(1))
        np.testing.assert_allclose(got_r[:, column], residual[chosen].sum(1), rtol=0, atol=1e-12)
    # the generator ends where numpy leaves it: the next draws are the same
    np.testing.assert_array_equal(ours.integers(2**62, size=8), numpy.integers(2**62, size=8))


def test_the_drift_test_is_the_ks_test_of_per_sample_mean_confidence():
    baseline, period = tiny_groups()
    # a second row of sample 0 (another seed): the sample counts once, at its mean
    baseline = pl.concat(
        [baseline, pl.DataFrame({"sample_id": [0], "confidence": [0.65], "correct": [True]})]
    )
    statistic, p = drift_test(baseline, period)
    b = np.array([0.6, 0.58, 0.9, 0.95])
    q = np.array([0.52, 0.59, 0.91, 0.97, 0.93])
    grid = np.concatenate([b, q])
    reference = max(abs((b <= x).mean() - (q <= x).mean()) for x in grid)
    assert statistic == pytest.approx(reference)
    assert p == pytest.approx(stats.ks_2samp(b, q).pvalue)


def test_holm_matches_a_hand_worked_example():
    # sorted 0.01, 0.03, 0.04 -> 3·0.01, 2·0.03, max(0.06, 1·0.04)
    assert holm(np.array([0.01, 0.04, 0.03, np.nan])).tolist()[:3] == pytest.approx(
        [0.03, 0.06, 0.06]
    )
    assert np.isnan(holm(np.array([0.01, np.nan]))[1])


def test_an_alert_needs_both_the_threshold_and_the_test():
    rows = simulate_stream(Stream("x", rise=0.15, periods=3, change_at=2), np.random.default_rng(4))
    table = alerts(rows, Rules(permutations=199))
    ece = table.filter(pl.col("check") == "ece_rise").sort("period_index")
    assert ece["alert"].to_list() == [False, True]
    assert ece["change"][1] > 0.02 and ece["p_adjusted"][1] <= 0.05
    # the same rise against a threshold above it does not alert
    high = alerts(rows, Rules(permutations=199, ece_rise=0.5))
    assert not high.filter(pl.col("check") == "ece_rise")["alert"].any()
    # Holm multiplies the smallest of the stream's 6 p-values by 6
    smallest = table["p_value"].min()
    assert table.filter(pl.col("p_value") == smallest)["p_adjusted"][0] == pytest.approx(
        min(1.0, 6 * smallest)
    )


def test_too_few_permutations_to_reject_are_refused():
    rows = simulate_stream(Stream("x", periods=8, samples=50), np.random.default_rng(4))
    with pytest.raises(ParameterError, match=r"21 checks at alpha 0\.05 need permutations >= 419"):
        alerts(rows, Rules(permutations=199))
    assert alerts(rows, Rules(permutations=199, correction="none")).height == 21


def test_rules_are_checked():
    with pytest.raises(ParameterError, match="ece_rise must be a number in"):
        Rules(ece_rise=-0.1)
    with pytest.raises(ParameterError, match="permutations must be an int >= 19"):
        Rules(permutations=5)
    with pytest.raises(ParameterError, match="correction must be 'holm' or 'none'"):
        Rules(correction="bonferroni")


# -- false alarms and power, with known truth -------------------------------------------------

#: Streams where neither calibration changes (ECE and MCE alerts are false alarms) …
STABLE = (Stream("stable, calibrated"), Stream("stable, overconfident by 0.05", gap=0.05))
#: … and one where only the confidence distribution changes (drift is true, not calibration).
SHARPENING = Stream("confidence sharpens ×1.6 from period 5, calibration intact", sharpen=1.6)


def test_a_small_simulation_reports_its_rates():
    rates = simulate_monitoring(Stream("s", samples=200), 3, Rules(permutations=499), seed=1)
    assert rates["check"].to_list() == ["ece_rise", "mce_rise", "drift", "any"]
    assert rates["runs"].to_list() == [3] * 4
    assert ((rates["run_rate"] >= 0) & (rates["run_rate"] <= 1)).all()


@pytest.mark.slow
@pytest.mark.parametrize("stream", STABLE, ids=lambda s: s.name)
def test_a_stable_stream_raises_no_alert_beyond_alpha(stream):
    runs = 200
    rates = simulate_monitoring(stream, runs, Rules(permutations=499), seed=21)
    anything = rates.filter(pl.col("check") == "any").row(0, named=True)
    se = np.sqrt(0.05 * 0.95 / runs)
    assert anything["run_rate"] <= 0.05 + 2 * se, rates


@pytest.mark.slow
def test_a_confidence_shift_alone_is_drift_not_a_calibration_alert():
    runs = 200
    rates = simulate_monitoring(SHARPENING, runs, Rules(permutations=499), seed=22)
    by = {row["check"]: row for row in rates.iter_rows(named=True)}
    se = np.sqrt(0.05 * 0.95 / runs)
    assert by["ece_rise"]["run_rate"] + by["mce_rise"]["run_rate"] <= 0.05 + 2 * se, rates
    assert by["drift"]["run_rate"] >= 0.95, rates


@pytest.mark.slow
def test_a_planted_calibration_drift_raises_the_ece_alert():
    rates = simulate_monitoring(Stream("rise", rise=0.08), 100, Rules(permutations=499), seed=23)
    by = {row["check"]: row for row in rates.iter_rows(named=True)}
    assert by["ece_rise"]["run_rate"] >= 0.9, rates


# -- the command and the report ---------------------------------------------------------------


def planted(tmp_path, rise: float, name: str):
    rows = simulate_stream(Stream(name, rise=rise, samples=600), np.random.default_rng(8))
    frame = rows.select(
        truth=pl.when("correct").then(pl.lit("spam")).otherwise(pl.lit("ham")),
        pred=pl.lit("spam"),
        conf="confidence",
        week="period",
    )
    done = ingest(tmp_path, frame, "--period", "week", name=name)
    assert done.exit_code == 0, done.output


def test_monitor_exits_4_with_json_when_a_planted_drift_alerts(tmp_path):
    planted(tmp_path, 0.12, "drifting")
    done = CliRunner().invoke(
        main,
        ["monitor", "--warehouse", str(tmp_path / "wh"), "--bootstrap", "100", "--json"],
    )
    assert done.exit_code == ALERT_EXIT, done.output
    found = json.loads(done.stdout)
    assert found["status"] == "alert" and found["exit_code"] == ALERT_EXIT
    fired = {(a["check"], a["period"]) for a in found["alerts"]}
    assert {("ece_rise", f"week-{w:02d}") for w in range(5, 9)} <= fired
    assert all(a["period"] >= "week-05" for a in found["alerts"])
    assert len(found["periods"]) == 8 and len(found["checks"]) == 21


def test_monitor_exits_0_on_a_stable_stream_and_says_so(tmp_path):
    planted(tmp_path, 0.0, "stable")
    done = CliRunner().invoke(
        main, ["monitor", "--warehouse", str(tmp_path / "wh"), "--bootstrap", "0"]
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.strip().endswith("no alert: 21 checks, none fired")
    assert "week-08  n 600  accuracy" in done.stdout


def test_monitor_refuses_an_unknown_baseline_in_one_line(tmp_path):
    planted(tmp_path, 0.0, "stable")
    done = CliRunner().invoke(
        main, ["monitor", "--warehouse", str(tmp_path / "wh"), "--baseline", "week-99"]
    )
    assert done.exit_code == 2
    assert done.stderr.startswith("relcol: error: baseline period 'week-99' is not in study")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_later_baseline_is_compared_with_every_other_period(tmp_path):
    planted(tmp_path, 0.0, "stable")
    result = monitor(
        tmp_path / "wh", baseline="week-03", rules=Rules(permutations=499), replicates=0
    )
    checked = result.alerts.filter(pl.col("check") == "drift")
    assert checked["baseline"].unique().to_list() == ["week-03"]
    assert checked["period"].to_list() == [f"week-{w:02d}" for w in (1, 2, 4, 5, 6, 7, 8)]


def test_the_report_has_a_monitoring_section_only_with_periods(tmp_path):
    planted(tmp_path, 0.12, "drifting")
    assert ingest(tmp_path, weekly_frame(), name="plain").exit_code == 0
    with_periods = relcol.report(
        tmp_path / "wh", study="drifting", out=tmp_path / "r1", bootstrap=50
    )
    html = with_periods.html.read_text()
    assert '<section id="monitoring">' in html and "4 alerts fired" in html
    assert (tmp_path / "r1" / "monitoring_alerts.csv").exists()
    without = relcol.report(tmp_path / "wh", study="plain", out=tmp_path / "r2", bootstrap=50)
    assert '<section id="monitoring">' not in without.html.read_text()
