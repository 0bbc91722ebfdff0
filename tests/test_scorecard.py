"""The robustness scorecard (docs/consistency.md): each number by hand on tiny frames,
null with a reason where the study lacks what it needs, and the report's sections."""

from __future__ import annotations

import math

import polars as pl
import pytest

from relcol.analysis._scorecard import corruption_error, scorecard, stability
from relcol.errors import ColumnNotFoundError, ParameterError
from relcol.metrics import calibration
from relcol.report import render_html
from relcol.report._consistency_section import consistency_section
from tests.test_consistency import long_rows


def noise_rows(model: str, clean: list[int], noisy: dict[float, list[int]], y: list[int]):
    """One model on 4 samples, 2 seeds x 2 repeats: the clean predictions at d = 0 (the same
    for every repeat) and ``noisy[d]`` at each d (the same for every seed and repeat)."""
    parts = []
    for d, preds in {0.0: clean, **noisy}.items():
        for seed in (0, 1):
            for repeat in (0, 1):
                parts.append(
                    long_rows(
                        model=model, corruption="gaussian_noise", severity=d, seed=[seed] * 4,
                        repeat=[repeat] * 4, y_true=y, y_pred=preds, confidence=0.75,
                    )
                )  # fmt: skip
    return pl.concat(parts)


Y = [0, 1, 2, 2]


@pytest.fixture(scope="module")
def study() -> pl.DataFrame:
    base = noise_rows(
        "logistic_regression", [0, 1, 2, 0], {0.05: [0, 1, 2, 0], 0.1: [0, 1, 0, 0]}, Y
    )
    other = noise_rows("mlp", [0, 1, 2, 2], {0.05: [0, 1, 1, 2], 0.1: [0, 1, 1, 1]}, Y)
    return pl.concat([base, other])


def test_stability_is_agreement_with_the_clean_prediction(study):
    out = {r["model"]: r for r in stability(study).iter_rows(named=True)}
    assert out["logistic_regression"]["stability"] == 1.0
    assert out["mlp"]["stability"] == 0.75  # sample 2 flips at 0.05 SD
    assert out["mlp"]["pairs"] == 4 * 2 * 2  # samples x seeds x repeats


def test_each_score_by_hand(study):
    cal = calibration(study).collect()
    card = {r["model"]: r for r in scorecard(cal, study).iter_rows(named=True)}
    mlp = card["mlp"]
    assert mlp["classes"] == 3
    assert mlp["resilience"] == pytest.approx(0.5 / 1.0)  # acc 2/4 at 0.1 SD vs 4/4 clean
    assert mlp["resilience_chance"] == pytest.approx((0.5 - 1 / 3) / (1 - 1 / 3))
    # confidence 0.75, all right: ECE 0.25, beyond the red threshold 0.15, so L = 0
    assert mlp["reliability"] == 0.0
    chance = (0.5 - 1 / 3) / (1 - 1 / 3)
    assert mlp["robustness"] == pytest.approx(0.4 * 0.75 + 0.3 * chance + 0.3 * 0.0)
    base = card["logistic_regression"]
    assert base["resilience"] == pytest.approx(0.5 / 0.75)
    assert base["mean_ce"] == 1.0 and base["mean_cce"] == 1.0
    # CE: Σ_d err / Σ_d err_base over d in {0.05, 0.1}: mlp (1/4 + 2/4) vs base (1/4 + 2/4)
    assert mlp["mean_ce"] == pytest.approx((0.25 + 0.5) / (0.25 + 0.5))
    # relative: (err − clean err): mlp (0.25 + 0.5 − 0) vs base (0 + 0.25)
    assert mlp["mean_relative_ce"] == pytest.approx(0.75 / 0.25)
    assert mlp["note"] is None
    assert mlp["weights"] == "stability 0.4 · resilience 0.3 · reliability 0.3"


def test_weights_are_configurable_and_shown(study):
    cal = calibration(study).collect()
    weights = {"stability": 1.0, "resilience": 0.0, "reliability": 1.0}
    row = scorecard(cal, study, weights=weights).filter(pl.col("model") == "mlp").row(0, named=True)
    assert row["robustness"] == pytest.approx((0.75 + 0.0) / 2)
    assert row["weights"] == "stability 1 · resilience 0 · reliability 1"
    for bad in ({"stability": 1.0}, {"stability": -1, "resilience": 1, "reliability": 1}):
        with pytest.raises(ParameterError, match="weights must"):
            scorecard(cal, study, weights=bad)


def test_a_study_without_the_noise_levels_gets_nulls_and_reasons(study):
    no_noise = study.with_columns(corruption=pl.lit("mcar"))
    cal = calibration(no_noise).collect()
    card = scorecard(cal, no_noise)
    assert card["stability"].is_null().all() and card["resilience"].is_null().all()
    assert card["robustness"].is_null().all() and card["reliability"].is_not_null().all()
    assert "no gaussian_noise corruption" in card["note"][0]
    only_clean = study.filter(pl.col("severity") != 0.1)
    card = scorecard(calibration(only_clean).collect(), only_clean)
    assert card["stability"].is_not_null().all() and card["resilience"].is_null().all()
    assert "no gaussian_noise at d = 0.1: no resilience" in card["note"][0]


def test_a_missing_baseline_leaves_corruption_errors_null(study):
    cal = calibration(study).collect()
    card = scorecard(cal, study, baseline="resnet")
    assert card["mean_ce"].is_null().all()
    assert "baseline model 'resnet' is not in the study" in card["note"][0]
    assert card["robustness"].is_not_null().all()


def test_reliability_spreads_the_clean_ece_over_the_traffic_lights_scale(study):
    cal = calibration(study).collect()
    clean_ece = {
        r["model"]: r["ece"]
        for r in cal.filter(corruption="gaussian_noise", severity=0.0).iter_rows(named=True)
    }
    for row in scorecard(cal, study).iter_rows(named=True):
        assert row["reliability"] == pytest.approx(max(0.0, 1 - clean_ece[row["model"]] / 0.15))


def test_relative_corruption_errors_need_a_baseline_that_degrades(study):
    cal = calibration(study).collect()
    base = pl.col("model") == "logistic_regression"
    # The baseline's error rises by 0.01 over two severities (0.005 each): below the floor.
    barely = cal.with_columns(
        accuracy=pl.when(base)
        .then(pl.when(pl.col("severity") == 0).then(0.75).otherwise(0.745))
        .otherwise(pl.col("accuracy"))
    )
    ce = corruption_error(barely).filter(pl.col("model") == "mlp").row(0, named=True)
    assert ce["ce"] == pytest.approx((0.25 + 0.5) / (0.255 + 0.255))
    assert ce["relative_ce"] is None  # 0.75 / 0.01 = 75 would divide by noise
    # A model that improves under the corruption scores 0, not a negative "better".
    better = cal.with_columns(
        accuracy=pl.when(pl.col("model") == "mlp")
        .then(pl.when(pl.col("severity") == 0).then(0.5).otherwise(0.75))
        .otherwise(pl.col("accuracy"))
    )
    ce = corruption_error(better).filter(pl.col("model") == "mlp").row(0, named=True)
    assert ce["relative_ce"] == 0.0


def test_the_scorecard_section_compares_with_no_absent_baseline(study):
    cal = calibration(study).collect()
    alone = cal.filter(pl.col("model") == "mlp")
    rows = study.filter(pl.col("model") == "mlp")
    html = consistency_section({"calibration": alone, "scorecard": scorecard(alone, rows)})
    assert "CE against" not in html and "mCE" not in html and "vs logistic" not in html
    assert "&#x27;logistic_regression&#x27; is not in the study: no corruption errors." in html
    assert "robustness needs" not in html  # it does not need the corruption errors
    assert "robustness = weighted mean" in html
    both = consistency_section({"calibration": cal, "scorecard": scorecard(cal, study)})
    assert "CE against logistic_regression" in both and "relative mCE" in both


def test_chance_corrected_resilience_is_null_at_or_below_chance():
    rows = noise_rows("m", [0, 0, 0, 0], {0.05: [0, 0, 0, 0], 0.1: [0, 0, 0, 0]}, [0, 1, 2, 2])
    row = scorecard(calibration(rows).collect(), rows).row(0, named=True)
    assert row["resilience"] == 1.0 and row["resilience_chance"] is None  # acc 1/4 < 1/3
    assert "at or below chance" in row["note"]


def test_corruption_error_per_corruption_and_relative_nulls_when_the_baseline_does_not_degrade(
    study,
):
    cal = calibration(study).collect()
    flat = cal.with_columns(
        accuracy=pl.when(pl.col("model") == "logistic_regression")
        .then(0.75)
        .otherwise(pl.col("accuracy"))
    )
    ce = corruption_error(flat).filter(pl.col("model") == "mlp").row(0, named=True)
    assert ce["severities"] == 2 and ce["relative_ce"] is None
    assert ce["ce"] == pytest.approx((0.25 + 0.5) / (0.25 + 0.25))
    with pytest.raises(ColumnNotFoundError, match="ece"):
        corruption_error(cal.drop("ece"))


def test_the_default_study_has_the_scorecards_noise_levels():
    from relcol.study import load_study

    study = load_study(None)
    noise = [c for c in study.corruptions if c.name == "gaussian_noise"]
    assert noise and {0.0, 0.05, 0.1} <= set(noise[0].severities)
    assert "logistic_regression" in {m.name for m in study.models}
    assert len(study.seeds) >= 2 and study.repeats >= 2  # both consistency axes


# The report ------------------------------------------------------------------------------------


def test_report_sections_show_consistency_per_model_and_the_scorecard(study, tmp_path):
    from relcol.metrics import consistency

    cal = calibration(study).collect()
    tables = {
        "calibration": cal,
        "consistency": consistency(study).collect(),
        "scorecard": scorecard(cal, study),
    }
    html = consistency_section(tables, bins=15)
    consistency_html, scorecard_html = html.split('<section id="scorecard">')
    assert 'id="consistency"' in consistency_html
    # One table for every model, the model naming each row group.
    assert consistency_html.count('class="gt_table"') == 1
    for model in cal["model"].unique():
        assert f"/ {model} /" in consistency_html
    assert "across training seeds" in consistency_html
    assert "across corruption repeats" in consistency_html
    assert "relative mCE" in scorecard_html
    page = render_html(tables, meta={"bins": 15})
    assert (
        page.index('id="consistency"') < page.index('id="scorecard"') < page.index('id="methods"')
    )
    assert consistency_section({"calibration": cal}) == ""
    assert math.isfinite(tables["scorecard"]["robustness"][0])


# ---------------------------------- the noise levels as spec / API / CLI options (issue 15)

CARD_SPEC = """
name = "card"
seeds = [0, 1]
repeats = 2
severities = [0.0, 0.5, 1.0]

[[datasets]]
name = "synthetic"
n_samples = 300
n_features = 6
n_classes = 3

[[models]]
name = "naive_bayes"

[[models]]
name = "logistic_regression"

[[corruptions]]
name = "gaussian_noise"
id = "noise"

[scorecard]
noise = "noise"
stability_at = 0.5
resilience_at = 1.0
"""


def test_the_scorecards_noise_levels_come_from_the_spec_or_the_caller(tmp_path):
    import relcol

    (tmp_path / "card.toml").write_text(CARD_SPEC)
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(tmp_path / "card.toml", wh)
    predictions = wh.predictions("card").collect()
    cal = relcol.calibration(wh)

    def by_model(card: pl.DataFrame) -> dict:
        return {r["model"]: r for r in card.iter_rows(named=True)}

    from_spec = by_model(relcol.scorecard(wh))
    expected = {
        r["model"]: r["stability"]
        for r in stability(predictions, noise="noise", severity=0.5).iter_rows(named=True)
    }
    for model, row in from_spec.items():
        assert row["stability"] == expected[model] and row["stability"] is not None
        accuracy = cal.filter((pl.col("model") == model) & (pl.col("corruption") == "noise"))
        acc = dict(zip(accuracy["severity"], accuracy["accuracy"], strict=True))
        assert row["resilience"] == pytest.approx(min(acc[1.0] / acc[0.0], 1.0))
    # The caller overrides the spec: at 1.0 SD stability is agreement at that level.
    at_one = by_model(relcol.scorecard(wh, stability_at=1.0))
    expected_one = {
        r["model"]: r["stability"]
        for r in stability(predictions, noise="noise", severity=1.0).iter_rows(named=True)
    }
    assert {m: r["stability"] for m, r in at_one.items()} == expected_one
    # A level the study does not have: null with the reason.
    missing = by_model(relcol.scorecard(wh, stability_at=0.05))
    assert all(r["stability"] is None and "0.05" in r["note"] for r in missing.values())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('noise = "noise"', 'noise = "blur"'), "noise 'blur' is not one of the study's"),
        (("stability_at = 0.5", "stability_at = 0.25"), "stability_at = 0.25 is not a severity"),
        (("resilience_at = 1.0", "resilience_at = -1"), "resilience_at must be a severity > 0"),
        (("resilience_at = 1.0", "resilience_at = 1.0\nbaseline = 1"), "unknown key 'baseline'"),
    ],
)
def test_a_bad_scorecard_table_is_refused(edit, message):
    from relcol.errors import SpecError
    from relcol.study import parse_study

    assert parse_study(CARD_SPEC).scorecard == {
        "noise": "noise",
        "stability_at": 0.5,
        "resilience_at": 1.0,
    }
    with pytest.raises(SpecError, match=message):
        parse_study(CARD_SPEC.replace(*edit))
