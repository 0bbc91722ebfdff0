"""Recalibration: each map recovers what it should, the split is deterministic and disjoint, no
evaluation sample is ever fitted on, and the before/after table is what an independent
computation on the evaluation split gives."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal
from relcol.cli import main
from scipy.special import expit, logit, softmax
from sklearn.isotonic import IsotonicRegression

import relcol
from relcol.analysis import METHODS, calibration_split, fit_map
from relcol.errors import InputError, ParameterError, WarehouseError
from tests import reference
from tests.test_store import checksums


def overconfident(seed: int, n: int = 4000, *, t: float = 2.0) -> pl.DataFrame:
    """Binary-correctness data whose true accuracy is σ(logit(c)/t): overconfident for t > 1."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.5, 0.999, n)
    correct = rng.random(n) < expit(logit(c) / t)
    return pl.DataFrame({"y_true": np.ones(n, dtype=int), "y_pred": np.where(correct, 1, 0),
                         "confidence": c})  # fmt: skip


def softmax_file(seed: int, n: int = 3000, k: int = 5, t: float = 2.5) -> pl.DataFrame:
    """Stated probabilities softmax(z·t) where the truth is drawn from softmax(z): T = t."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, k))
    truth = np.array([rng.choice(k, p=row) for row in softmax(z, axis=1)])
    return pl.DataFrame({"y_true": truth, "proba": softmax(z * t, axis=1)})


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    wh = relcol.open_warehouse(tmp_path_factory.mktemp("recal") / "wh")
    relcol.ingest_predictions(overconfident(0), wh, name="over", model="m")
    relcol.ingest_predictions(softmax_file(1), wh, name="soft", model="net")
    return wh


def test_the_split_is_deterministic_disjoint_and_exact():
    samples = pl.DataFrame(
        {"dataset": ["a"] * 101 + ["b"] * 10, "sample_id": [*range(101), *range(10)]}
    )
    split = calibration_split(samples, fraction=0.3, seed=4)
    again = calibration_split(
        samples.sample(fraction=1.0, shuffle=True, seed=9), fraction=0.3, seed=4
    )
    assert split.sort("dataset", "sample_id").equals(again.sort("dataset", "sample_id"))
    counts = split.group_by("dataset", "split").len().sort("dataset", "split")
    assert counts["len"].to_list() == [30, 71, 3, 7]
    assert split.select("dataset", "sample_id").is_unique().all()
    other = calibration_split(samples, fraction=0.3, seed=5)
    assert not split.sort("dataset", "sample_id").equals(other.sort("dataset", "sample_id"))


def test_softmax_temperature_recovers_the_temperature_of_the_data():
    frame = softmax_file(2, n=6000)
    proba = np.vstack(frame["proba"].to_list())
    fitted = fit_map(
        "temperature",
        confidence=proba.max(axis=1),
        correct=proba.argmax(axis=1) == frame["y_true"].to_numpy(),
        proba=proba,
        y_true=frame["y_true"].to_numpy(),
    )
    assert fitted.variant == "softmax"
    assert fitted.params["T"] == pytest.approx(2.5, rel=0.08)


def test_binary_temperature_and_platt_recover_their_parameters():
    frame = overconfident(3, n=20000, t=2.0)
    c, z = frame["confidence"].to_numpy(), (frame["y_pred"] == frame["y_true"]).to_numpy()
    temperature = fit_map("temperature", confidence=c, correct=z)
    assert temperature.variant == "binary" and temperature.params["T"] == pytest.approx(
        2.0, rel=0.08
    )
    platt = fit_map("platt", confidence=c, correct=z)
    assert platt.params["a"] == pytest.approx(0.5, abs=0.05)
    assert platt.params["b"] == pytest.approx(0.0, abs=0.08)


def test_isotonic_is_scikit_learns_and_histogram_maps_to_bin_accuracies():
    rng = np.random.default_rng(5)
    c, z = rng.random(500), rng.random(500) < 0.6
    fitted = fit_map("isotonic", confidence=c, correct=z)
    iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(c, z)
    probe = np.linspace(-0.1, 1.1, 97)
    eps = 1 / 502  # the map's stated clipping, 1/(n_fit + 2)
    np.testing.assert_allclose(
        fitted.apply(probe, None, None)[0], np.clip(iso.predict(probe), eps, 1 - eps), atol=1e-12
    )
    hist = fit_map(
        "histogram", confidence=[0.1, 0.2, 0.3, 0.4, 0.4, 0.9], correct=[0, 1, 0, 1, 1, 1], bins=3
    )
    np.testing.assert_array_equal(hist.params["edges"], [0.2, 0.4, 0.9])
    # ties never split: the two 0.4 land in one bin with 0.3
    np.testing.assert_allclose(hist.params["values"], [0.5, 2 / 3, 1.0])
    # the last bin's accuracy 1 is clipped to 1 − 1/(6 + 2)
    np.testing.assert_allclose(
        hist.apply(np.array([0.0, 0.25, 0.95]), None, None)[0], [0.5, 2 / 3, 7 / 8]
    )


@pytest.mark.parametrize("method", ["temperature", "platt", "isotonic", "histogram"])
def test_no_top_label_map_outputs_exact_0_or_1_isotonic_nll_regression(method):
    # a perfectly separable calibration split: isotonic and histogram fit steps of 0 and 1,
    # a tiny temperature saturates σ; clipped to [1/(n + 2), 1 − 1/(n + 2)] none reaches
    # 0 or 1, and one evaluation row on the wrong side costs log(n + 2), not 34.5 nats
    c = np.r_[np.linspace(0.05, 0.45, 20), np.linspace(0.55, 0.999999, 20)]
    z = np.r_[np.zeros(20), np.ones(20)]
    fitted = fit_map(method, confidence=c, correct=z, bins=2)
    assert fitted.eps == pytest.approx(1 / 42) and fitted.describe()["eps"] == fitted.eps
    out = fitted.apply(np.array([0.0, 0.05, 0.5, 0.9999999, 1.0]), None, None)[0]
    assert out.min() >= 1 / 42 - 1e-15 and out.max() <= 41 / 42 + 1e-15
    if method in ("isotonic", "histogram"):
        assert out[0] == pytest.approx(1 / 42) and out[-1] == pytest.approx(41 / 42)
        wrong = -np.log(1 - out[-1])  # NLL of a wrong row stated at the top step
        assert wrong == pytest.approx(np.log(42))


@pytest.mark.parametrize("method", METHODS)
def test_each_map_lowers_ece_on_the_evaluation_split(wh, method):
    result = relcol.recalibrate(wh, study="over", methods=[method], name=f"over-{method}")
    ece = result.table.filter(pl.col("metric") == "ece").row(0, named=True)
    assert ece["before"] > 0.08 and ece["after"] < 0.04
    assert ece["change"] == pytest.approx(ece["after"] - ece["before"])


def test_the_table_is_an_independent_computation_on_the_evaluation_split(wh):
    result = relcol.recalibrate(wh, study="soft", methods=["temperature", "isotonic"])
    assert result.study == "soft-recal-temperature-isotonic"
    rows = wh.predictions("soft").collect()
    split = calibration_split(rows.select("dataset", "sample_id"), fraction=0.5, seed=0)
    evaluation = rows.join(
        split.filter(pl.col("split") == "evaluation"), on=["dataset", "sample_id"]
    )
    before = reference.metrics(
        evaluation["confidence"].to_numpy(), evaluation["correct"].to_numpy(), 15
    )
    table = result.table.filter(pl.col("method") == "temperature")
    got = dict(zip(table["metric"], table["before"], strict=True))
    for metric in ("ece", "mce", "gap", "mean_confidence"):
        assert got[metric] == pytest.approx(before[metric], abs=1e-12)
    c = evaluation["confidence"].to_numpy()
    z = evaluation["correct"].to_numpy()
    assert got["brier_top"] == pytest.approx(np.mean((c - z) ** 2), abs=1e-12)
    # the temperature was fitted on log-probabilities: the new vectors are softmax(log p / T)
    fit = next(f for f in result.fits if f["method"] == "temperature")
    assert fit["variant"] == "softmax" and fit["T"] == pytest.approx(2.5, rel=0.15)
    after = wh.predictions(result.study).filter(pl.col("model") == "net+temperature").collect()
    proba = np.vstack(evaluation.sort("sample_id")["proba"].to_list()).astype(np.float64)
    expected = softmax(np.log(proba) / fit["T"], axis=1)
    got_proba = np.vstack(after.sort("sample_id")["proba"].to_list())
    np.testing.assert_allclose(got_proba, expected, atol=1e-6)
    np.testing.assert_allclose(
        after.sort("sample_id")["confidence"], expected.max(axis=1), atol=1e-6
    )


def test_the_new_study_holds_evaluation_rows_before_and_after_and_records_the_fits(wh):
    result = relcol.recalibrate(
        wh, study="over", methods=["platt", "histogram"], fraction=0.25, seed=2
    )
    rows = wh.predictions(result.study).collect()
    assert rows.height == 3 * 3000 and result.rows == rows.height
    assert set(rows["model"]) == {"m", "m+platt", "m+histogram"}
    counts = rows.group_by("model").agg(pl.col("sample_id").sort()).get_column("sample_id")
    assert counts[0].to_list() == counts[1].to_list() == counts[2].to_list()  # paired
    same = rows.group_by("sample_id").agg(pl.col("correct").n_unique(), pl.col("y_pred").n_unique())
    assert (same["correct"] == 1).all() and (same["y_pred"] == 1).all()  # only confidence moves
    run = wh.sql("SELECT kind, spec FROM runs WHERE study = ?", [result.study]).row(0, named=True)
    spec = json.loads(run["spec"])
    assert run["kind"] == "recalibration" and spec["source_study"] == "over"
    assert spec["split"] == {"kind": "fraction", "fraction": 0.25, "seed": 2}
    assert {f["method"] for f in spec["fits"]} == {"platt", "histogram"}
    assert spec["models"]["m+platt"] == {"model": "m", "method": "platt"}
    # the table recomputed from the stored study is the one recalibrate returned
    assert_frame_equal(relcol.recalibration(wh, study=result.study), result.table, abs_tol=1e-12)
    assert relcol.recalibration(wh, study="over").is_empty()


def test_no_evaluation_sample_is_ever_fitted_on(tmp_path):
    frame = overconfident(6, n=1000)
    samples = pl.DataFrame({"dataset": "d", "sample_id": np.arange(1000)})
    split = calibration_split(samples, fraction=0.5, seed=0)
    evaluation = split.filter(pl.col("split") == "evaluation")["sample_id"].to_numpy()
    # flip every evaluation sample's outcome: the fitted maps must not move
    flipped = (
        frame.with_row_index("sample_id")
        .with_columns(
            y_pred=pl.when(pl.col("sample_id").is_in(evaluation.tolist()))
            .then(1 - pl.col("y_pred"))
            .otherwise(pl.col("y_pred"))
        )
        .drop("sample_id")
    )
    fits = []
    for name, data in (("a", frame), ("b", flipped)):
        wh = relcol.open_warehouse(tmp_path / name)
        relcol.ingest_predictions(data, wh, name="x", dataset="d")
        fits.append(relcol.recalibrate(wh, study="x", methods=list(METHODS)).fits)
    assert fits[0] == fits[1]


def test_the_map_is_fitted_on_clean_rows_and_applied_at_every_severity(tmp_path):
    clean = overconfident(7, n=600).with_columns(severity=pl.lit(0.0), sample_id=pl.int_range(600))
    worse = clean.with_columns(severity=pl.lit(0.5), confidence=pl.col("confidence") * 0.9)
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(pl.concat([clean, worse]), wh, name="grid", dataset="d")
    result = relcol.recalibrate(wh, study="grid", methods=["platt"])
    assert result.fits[0]["n_fit"] == 300  # calibration samples at severity 0 only
    assert sorted(set(result.table["severity"])) == [0.0, 0.5]


def test_a_prediction_copied_to_every_corruption_and_repeat_is_fitted_on_once(tmp_path):
    """Severity 0 is the same prediction under every corruption and repeat: n_fit, the
    clipping's ε and Platt's targets count it once. Two different predictions of a sample
    (a sampled model's repeats) both count."""
    clean = overconfident(10, n=600).with_columns(sample_id=pl.int_range(600), severity=0.0)
    copies = pl.concat(
        clean.with_columns(corruption=pl.lit(c), repeat=pl.lit(r))
        for c in ("blur", "fog", "noise")
        for r in (0, 1)
    )
    worse = copies.with_columns(severity=pl.lit(0.5), confidence=pl.col("confidence") * 0.9)
    resampled = copies.with_columns(
        confidence=pl.when(pl.col("repeat") == 1)
        .then(pl.col("confidence") * 0.99)
        .otherwise(pl.col("confidence"))
    )
    fits = {}
    for name, frame in (
        ("once", clean),
        ("copies", pl.concat([copies, worse])),
        ("resampled", resampled),
    ):
        wh = relcol.open_warehouse(tmp_path / name)
        relcol.ingest_predictions(frame, wh, name=name, dataset="d", model="m")
        fits[name] = relcol.recalibrate(wh, study=name, methods=["platt", "histogram"]).fits
    assert fits["copies"] == fits["once"]
    assert [f["n_fit"] for f in fits["once"]] == [300, 300]
    assert [f["n_fit"] for f in fits["resampled"]] == [600, 600]
    assert fits["once"][0]["eps"] == 1 / 302


def test_a_stored_split_column_decides_instead_of_the_fraction(tmp_path):
    frame = overconfident(8, n=400).with_columns(
        split=pl.when(pl.int_range(400) < 100).then(pl.lit("val")).otherwise(pl.lit("test"))
    )
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(frame, wh, name="s")
    result = relcol.recalibrate(wh, study="s", methods=["isotonic"], stored_split=True)
    assert result.fits[0]["n_fit"] == 100
    assert result.table["n"][0] == 300
    with pytest.raises(InputError, match="stored split has no calibration samples"):
        relcol.recalibrate(wh, study="s-recal-isotonic", stored_split=True)
    relcol.ingest_predictions(overconfident(9, n=50), wh, name="plain")
    with pytest.raises(InputError, match="has no stored split"):
        relcol.recalibrate(wh, study="plain", stored_split=True)


def test_bad_requests_are_refused_and_change_nothing(wh):
    before = checksums(wh.root)
    with pytest.raises(ParameterError, match="method must be one of"):
        relcol.recalibrate(wh, study="over", methods=["beta"])
    with pytest.raises(ParameterError, match=r"fraction must be a number in \(0, 1\)"):
        relcol.recalibrate(wh, study="over", fraction=1.0)
    with pytest.raises(WarehouseError, match="no study 'nope'"):
        relcol.recalibrate(wh, study="nope")
    relcol.recalibrate(wh, study="over", name="taken")
    before = checksums(wh.root)
    with pytest.raises(WarehouseError, match="already in warehouse"):
        relcol.recalibrate(wh, study="over", name="taken")
    assert checksums(wh.root) == before


def test_the_cli_recalibrates_and_the_report_shows_before_and_after(wh, tmp_path):
    runner = CliRunner()
    done = runner.invoke(
        main,
        [
            "recalibrate",
            "--study",
            "soft",
            "--method",
            "all",
            "--warehouse",
            str(wh.root),
            "--seed",
            "1",
        ],
    )
    assert done.exit_code == 0, done.output
    assert "net  temperature" in done.stdout and "ECE " in done.stdout and "->" in done.stdout
    assert (
        "report: relcol report --study soft-recal-temperature-platt-isotonic-histogram"
        in done.stdout
    )
    report = runner.invoke(
        main,
        ["report", "--study", "soft-recal-temperature-platt-isotonic-histogram", "--warehouse",
         str(wh.root), "--out", str(tmp_path / "r")],
    )  # fmt: skip
    assert report.exit_code == 0, report.output
    html = (tmp_path / "r" / "index.html").read_text()
    assert '<section id="recalibration">' in html and "pending the statistical layer" in html
    table = pl.read_csv(tmp_path / "r" / "recalibration.csv")
    assert set(table["method"]) == set(METHODS)
    # the terminal's line names each score as its column, with the report's values
    line = next(row for row in done.stdout.splitlines() if "net  temperature" in row)
    shown = {m: (b, a) for m, b, a in re.findall(r"(\w+) (\d\.\d{3}) -> (\d\.\d{3})", line)}
    assert set(shown) == {"ECE", "brier_top", "nll_top"}
    # one line per method, in the table's order (not alphabetical)
    methods = [row.split()[1] for row in done.stdout.splitlines() if row.startswith("net  ")]
    assert methods == list(METHODS) == ["temperature", "platt", "isotonic", "histogram"]
    for metric, name in (("ece", "ECE"), ("brier_top", "brier_top"), ("nll_top", "nll_top")):
        row = table.filter(method="temperature", metric=metric)
        assert shown[name] == (f"{row['before'][0]:.3f}", f"{row['after'][0]:.3f}")
    bad = runner.invoke(
        main, ["recalibrate", "--study", "soft", "--fraction", "0", "--warehouse", str(wh.root)]
    )
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "fraction" in bad.stderr


def test_isotonic_on_the_email_example_lowers_nll_per_named_label_regression(tmp_path):
    # unclipped isotonic steps of exactly 0 and 1 raised this NLL from 0.30–0.37 to
    # 0.39–1.05 on every label; clipped to [1/(n_fit + 2), 1 − 1/(n_fit + 2)] it falls
    from relcol.data import EMAIL_LABELS

    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.example("email", wh)
    result = relcol.recalibrate(wh, study="email-example", methods=["isotonic"])
    nll = result.table.filter(pl.col("metric") == "nll_top")
    assert sorted(nll["label_name"]) == sorted(EMAIL_LABELS)
    assert (nll["after"] < nll["before"]).all()
    assert nll["after"].max() < 0.25 and nll["before"].min() > 0.29
    # recomputed from the stored rows: the clipped map's NLL of c against z, label by label
    rows = wh.predictions(result.study).filter(pl.col("model") == "llm+isotonic").collect()
    for label, part in rows.partition_by("label", as_dict=True).items():
        c, z = part["confidence"].to_numpy(), part["correct"].to_numpy()
        assert 0 < c.min() and c.max() < 1
        expected = -np.mean(np.where(z, np.log(c), np.log1p(-c)))
        assert nll.filter(pl.col("label") == label[0])["after"].item() == pytest.approx(expected)
    lines = result.summary.splitlines()
    assert [line.split()[1] for line in lines] == sorted(EMAIL_LABELS)
