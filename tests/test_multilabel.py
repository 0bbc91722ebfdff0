"""Multi-label calibration (docs/multilabel.md): both modes named everywhere, per label, micro, macro,
the agreement target, both engines to 1e-9, and the report's section and heatmap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import relcol
from relcol import metrics
from relcol.analysis import (
    multilabel_calibration,
    multilabel_intervals,
    multilabel_micro_tables,
    multilabel_pairs,
    poisson_weights,
    with_multilabel_intervals,
)
from relcol.analysis._multilabel import INTERVALS, NO_MACRO_INTERVAL, macro_rows
from relcol.store import CELL, KEY
from tests import reference

LABELS = ["A", "B", "C"]


def random_file(seed: int, *, samples: int = 120, agreement: bool = True) -> pl.DataFrame:
    """A multi-label prediction file with edge values (0, 1, exact bin edges) mixed in."""
    rng = np.random.default_rng(seed)
    n = samples * len(LABELS)
    p = rng.beta(0.7, 0.7, n)
    edge = rng.random(n) < 0.1
    p[edge] = rng.choice([0.0, 1.0, 0.2, 0.6, 0.5], int(edge.sum()))
    y = (rng.random(n) < p).astype(int)
    frame = pl.DataFrame(
        {
            "sample_id": np.repeat(np.arange(samples), len(LABELS)),
            "label": np.tile(LABELS, samples),
            "y_true": y,
            "probability": p,
        }
    )
    if agreement:
        frame = frame.with_columns(
            y_pred=(pl.col("probability") >= 0.5).cast(pl.Int64),
            agreement=pl.Series(rng.integers(0, 6, n) / 5),
        )
    return frame


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    wh = relcol.open_warehouse(tmp_path_factory.mktemp("ml") / "wh")
    for seed in (0, 1):
        relcol.ingest_predictions(random_file(seed), wh, name=f"ml{seed}", model="m")
    relcol.ingest_predictions(
        random_file(2, agreement=False)
        .with_columns(
            pl.col("probability").alias("probability:sharp"),
            (pl.col("probability") * 0.5 + 0.25).alias("probability:soft"),
        )
        .drop("probability"),
        wh,
        name="two-scores",
        model="llm",
    )
    return wh


def test_the_two_modes_on_a_hand_computed_example(tmp_path):
    frame = pl.DataFrame(
        {
            "sample_id": [0, 0, 1, 1],
            "label": ["A", "B", "A", "B"],
            "y_true": [1, 0, 1, 1],
            "y_pred": [1, 1, 0, 1],
            "confidence": [0.9, 0.6, 0.7, 0.8],
        }
    )
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(frame, wh, name="hand", model="m")
    table = relcol.multilabel(wh, study="hand", bins=10).filter(pl.col("average") == "micro")
    pc = table.filter(pl.col("mode") == "prediction_confidence").row(0, named=True)
    pos = table.filter(pl.col("mode") == "positive_class").row(0, named=True)
    # prediction confidence: c = (.9, .6, .7, .8) against z = (1, 0, 0, 1)
    assert pc["accuracy"] == 0.5 and pc["mean_confidence"] == pytest.approx(0.75)
    assert pc["brier_top"] == pytest.approx((0.01 + 0.36 + 0.49 + 0.04) / 4)
    # positive class: p = (.9, .6, .3, .8) against y = (1, 0, 1, 1)
    assert pos["accuracy"] == 0.75 and pos["mean_confidence"] == pytest.approx(0.65)
    assert pos["brier_top"] == pytest.approx(pc["brier_top"])  # the same in both modes
    # bins of 0.1: (.9) (.6) (.7) (.8) each alone vs (.9)(.6)(.3)(.8)
    assert pc["ece"] == pytest.approx((0.1 + 0.6 + 0.7 + 0.2) / 4)
    assert pos["ece"] == pytest.approx((0.1 + 0.6 + 0.7 + 0.2) / 4)
    assert table.get_column("label_name").null_count() == 2
    per_label = relcol.multilabel(wh, study="hand").filter(pl.col("average") == "label")
    assert set(per_label["label_name"]) == {"A", "B"}


@pytest.mark.parametrize("study", ["ml0", "ml1", "two-scores"])
def test_polars_and_duckdb_agree_to_1e_9(wh, study):
    for function in (relcol.multilabel, relcol.multilabel_bins):
        for bins in (7, 15):
            polars = function(wh, study=study, bins=bins)
            duckdb = function(wh, study=study, bins=bins, engine="duckdb")
            assert polars.height == duckdb.height > 0
            assert_frame_equal(polars, duckdb, check_dtypes=False, abs_tol=1e-9, rel_tol=0)


def test_every_output_names_its_mode_target_and_average(wh):
    table = relcol.multilabel(wh, study="ml0")
    assert set(table["mode"]) == {"prediction_confidence", "positive_class"}
    assert set(table["target"]) == {"binary", "agreement"}
    assert set(table["average"]) == {"label", "micro", "macro"}
    # 3 labels + micro + macro, for each of 2 modes × 2 targets
    assert table.height == 5 * 2 * 2
    bins = relcol.multilabel_bins(wh, study="ml0")
    assert {"mode", "target", "label_name"} <= set(bins.columns)
    described = wh.sql("DESCRIBE multilabel")["column_name"].to_list()
    assert described[6:9] == ["mode", "target", "average"]


def test_per_label_prediction_confidence_is_the_calibration_view(wh):
    table = relcol.multilabel(wh, study="ml1").filter(
        (pl.col("average") == "label")
        & (pl.col("mode") == "prediction_confidence")
        & (pl.col("target") == "binary")
    )
    cal = relcol.calibration(wh, study="ml1").sort("label")
    for metric in ("n", "accuracy", "mean_confidence", "gap", "ece", "mce"):
        np.testing.assert_allclose(table[metric].to_numpy(), cal[metric].to_numpy(), atol=1e-12)


def test_micro_pools_pairs_and_macro_averages_labels(wh):
    rows = wh.predictions("ml0").collect()
    table = relcol.multilabel(wh, study="ml0").filter(pl.col("target") == "binary")
    pc = table.filter(pl.col("mode") == "prediction_confidence")
    micro = pc.filter(pl.col("average") == "micro").row(0, named=True)
    expected = reference.metrics(rows["confidence"].to_numpy(), rows["correct"].to_numpy(), 15)
    for metric in ("accuracy", "ece", "mce", "gap"):
        assert micro[metric] == pytest.approx(expected[metric], abs=1e-12)
    labels = pc.filter(pl.col("average") == "label")
    macro = pc.filter(pl.col("average") == "macro").row(0, named=True)
    for metric in ("ece", "abs_gap", "brier_top", "nll_top"):
        assert macro[metric] == pytest.approx(labels[metric].mean(), abs=1e-12)
    assert macro["n"] == micro["n"] == rows.height
    # positive class: p against y, independently
    p = np.where(rows["y_pred"] == 1, rows["confidence"], 1 - rows["confidence"])
    positive = reference.metrics(p, rows["y_true"].to_numpy(), 15)
    pos = table.filter((pl.col("mode") == "positive_class") & (pl.col("average") == "micro"))
    assert pos["ece"][0] == pytest.approx(positive["ece"], abs=1e-12)
    assert pos["brier_top"][0] == pytest.approx(micro["brier_top"], abs=1e-12)


def test_the_positive_class_probability_comes_back_from_the_stored_confidence(wh):
    frame = random_file(0)
    pairs = multilabel_pairs(wh.predictions("ml0")).filter(pl.col("mode") == "positive_class")
    got = pairs.sort("sample_id", "label").collect()["confidence"].to_numpy()
    want = frame.sort("sample_id", "label")["probability"].to_numpy()
    np.testing.assert_allclose(got, want, atol=1e-15)


def test_agreement_replaces_the_target_and_equals_it_when_annotators_are_unanimous(tmp_path):
    frame = random_file(3, agreement=False).with_columns(
        y_pred=(pl.col("probability") >= 0.5).cast(pl.Int64)
    )
    unanimous = frame.with_columns(
        agreement=(pl.col("y_pred") == pl.col("y_true")).cast(pl.Float64)
    )
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(unanimous, wh, name="u", model="m")
    table = relcol.multilabel(wh, study="u")
    metrics = ["n", "accuracy", "mean_confidence", "ece", "mce", "brier_top", "nll_top"]
    binary = table.filter(pl.col("target") == "binary").drop("target")
    agreed = table.filter(pl.col("target") == "agreement").drop("target")
    assert_frame_equal(binary.select(metrics), agreed.select(metrics), abs_tol=1e-12)


def test_agreement_is_kept_in_the_annotations_side_table_keyed_like_the_long_table(wh):
    joined = wh.sql(
        "SELECT count(*) AS n, count(a.agreement) AS k FROM predictions p JOIN annotations a "
        'USING (study, dataset, model, corruption, severity, seed, "repeat", sample_id, label) '
        "WHERE p.study = 'ml0'"
    )
    assert joined.row(0) == (360, 360)
    # existing views are untouched by it
    assert wh.sql("SELECT count(*) AS n FROM calibration WHERE study = 'ml0'")["n"][0] == 3


def test_several_probabilities_are_several_sources_each_with_its_own_prediction(wh):
    table = relcol.multilabel(wh, study="two-scores")
    assert set(table["model"]) == {"llm:sharp", "llm:soft"}
    rows = wh.predictions("two-scores").collect()
    soft = rows.filter(pl.col("model") == "llm:soft")
    assert soft["confidence"].min() >= 0.5  # p in [.25, .75] → c = max(p, 1 − p)


def test_polars_builders_match_without_the_warehouse(wh):
    rows = wh.predictions("ml1").collect()
    annotations = wh.sql("SELECT * FROM annotations WHERE study = 'ml1'")
    table = multilabel_calibration(multilabel_pairs(rows, annotations)).collect()
    api = relcol.multilabel(wh, study="ml1").drop("label_name")
    assert_frame_equal(table, api)
    # and the per-label binary rows are relcol.metrics' row-level ECE of the pairs
    pairs = multilabel_pairs(rows).filter(pl.col("target") == "binary")
    ece = (
        pairs.group_by("mode", "label")
        .agg(metrics.ece("confidence", "outcome", bins=15))
        .sort("mode", "label")
        .collect()
    )
    ours = table.filter((pl.col("average") == "label") & (pl.col("target") == "binary")).sort(
        "mode", "label"
    )
    np.testing.assert_allclose(ours["ece"].to_numpy(), ece["ece"].to_numpy(), atol=1e-12)


def test_the_report_of_a_multilabel_study_has_the_section_and_heatmap(wh, tmp_path):
    result = relcol.report(wh, study="ml0", out=tmp_path / "r")
    html = result.html.read_text()
    assert '<section id="multilabel">' in html and "per label, micro and macro" in html
    assert "prediction confidence (c vs correct)" in html and "positive class" in html
    assert html.count('aria-label="Label by confidence-bin heatmap') == 1
    assert ">A<" in html or "A</" in html  # label names, not codes
    for name in ("multilabel", "multilabel_bins"):
        exported = pl.read_parquet(tmp_path / "r" / f"{name}.parquet")
        assert "mode" in exported.columns and "label_name" in exported.columns


def test_a_single_label_study_has_no_multilabel_table(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(
        pl.DataFrame({"y_true": [0, 1], "y_pred": [0, 0], "confidence": [0.9, 0.8]}), wh, name="s"
    )
    assert relcol.multilabel(wh, study="s").is_empty()
    assert "multilabel" not in relcol.report_tables(wh, "s")


def _percentile(values: np.ndarray) -> tuple[float, float]:
    return tuple(np.quantile(values[np.isfinite(values)], [0.025, 0.975]))


@pytest.mark.parametrize("mode", ["prediction_confidence", "positive_class"])
def test_intervals_are_the_explicit_reweighting_of_samples(wh, mode):
    """Per label, micro and macro intervals equal numpy's percentiles of the metrics
    recomputed under each replicate's Poisson weights, one weight per sample for all of
    its labels (so micro is a clustered resample, and macro the mean of the labels')."""
    pairs = multilabel_pairs(wh.predictions("ml0")).collect()
    bounds = multilabel_intervals(pairs, replicates=200, seed=3)
    rows = pairs.filter((pl.col("mode") == mode) & (pl.col("target") == "binary")).sort(
        "sample_id", "label"
    )
    samples = np.unique(rows["sample_id"].to_numpy())
    w = poisson_weights("ml0", samples, 200, seed=3).astype(np.float64)  # B × samples
    index = np.searchsorted(samples, rows["sample_id"].to_numpy())
    c, z, label = rows["confidence"].to_numpy(), rows["outcome"].to_numpy(), rows["label"]

    def metrics_of(mask: np.ndarray) -> dict[str, np.ndarray]:
        weight = w[:, index[mask]]  # B × rows
        total = weight.sum(axis=1)
        cm, zm = c[mask], z[mask]
        clipped = np.clip(cm, 1e-15, 1 - 1e-15)
        nll = -(zm * np.log(clipped) + (1 - zm) * np.log1p(-clipped))
        out = {
            "accuracy": weight @ zm / total,
            "mean_confidence": weight @ cm / total,
            "brier_top": weight @ (cm - zm) ** 2 / total,
            "nll_top": weight @ nll / total,
        }
        out["gap"] = out["mean_confidence"] - out["accuracy"]
        return out

    per_label = {k: metrics_of((label == k).to_numpy()) for k in range(len(LABELS))}
    expected = {("micro", None): metrics_of(np.ones(len(c), dtype=bool))}
    expected |= {("label", k): v for k, v in per_label.items()}
    expected[("macro", None)] = {
        m: np.mean([per_label[k][m] for k in per_label], axis=0) for m in per_label[0]
    }
    ours = bounds.filter((pl.col("mode") == mode) & (pl.col("target") == "binary"))
    assert ours.height == len(LABELS) + 2
    for (average, code), values in expected.items():
        row = ours.filter(
            (pl.col("average") == average)
            & (pl.col("label").is_null() if code is None else pl.col("label") == code)
        ).row(0, named=True)
        for metric in ("accuracy", "mean_confidence", "gap", "brier_top", "nll_top"):
            lo, hi = _percentile(values[metric])
            assert row[f"{metric}_lo"] == pytest.approx(lo, abs=1e-9), (average, code, metric)
            assert row[f"{metric}_hi"] == pytest.approx(hi, abs=1e-9), (average, code, metric)
        if average == "macro":  # printed without an interval, documented why
            assert row["abs_gap_lo"] is None and "abs_gap" in NO_MACRO_INTERVAL
        else:  # |Δ|: the image of Δ's interval under |·|
            lo, hi = _percentile(values["gap"])
            low = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
            assert row["abs_gap_lo"] == pytest.approx(low, abs=1e-9)
            assert row["abs_gap_hi"] == pytest.approx(max(abs(lo), abs(hi)), abs=1e-9)
    assert set(INTERVALS) == {"accuracy", "mean_confidence", "gap", "abs_gap", "brier_top",
                              "nll_top"}  # fmt: skip


def test_micro_and_macro_rank_intervals_are_the_labels_replicates(wh):
    """Micro's AUROC, Cohen's d … intervals are those of the pooled rows bootstrapped alone;
    macro's the percentiles of the mean of the labels' replicates, each label bootstrapped
    alone (the weights depend on (study, seed, replicate, sample) only)."""
    from relcol.analysis import bootstrap, percentile_interval
    from relcol.analysis._multilabel import RANK_INTERVALS

    rows = wh.predictions("ml0").collect()
    bounds = multilabel_intervals(multilabel_pairs(rows), replicates=150, seed=2).filter(
        pl.col("mode") == "prediction_confidence"
    )
    micro = bootstrap(rows.with_columns(label=pl.lit(None, pl.Int32)), replicates=150, seed=2)
    labels = [
        bootstrap(rows.filter(pl.col("label") == k), replicates=150, seed=2)
        for k in range(len(LABELS))
    ]
    assert "auroc" in RANK_INTERVALS and "aupr_success" not in RANK_INTERVALS
    for metric in RANK_INTERVALS:
        row = bounds.filter(pl.col("average") == "micro").row(0, named=True)
        lo, hi = percentile_interval(micro.values[metric])
        assert (row[f"{metric}_lo"], row[f"{metric}_hi"]) == pytest.approx((lo[0], hi[0]))
        mean = np.mean([r.values[metric][0] for r in labels], axis=0)
        lo, hi = percentile_interval(mean[None, :])
        row = bounds.filter(pl.col("average") == "macro").row(0, named=True)
        assert (row[f"{metric}_lo"], row[f"{metric}_hi"]) == pytest.approx((lo[0], hi[0]))
    positive = multilabel_intervals(multilabel_pairs(rows), replicates=20).filter(
        pl.col("mode") == "positive_class"
    )
    assert positive["auroc_lo"].null_count() == positive.height  # rank metrics: one mode


def test_intervals_take_the_layers_per_label_replicates_with_the_same_bits(wh, monkeypatch):
    """The statistical layer has bootstrapped the per-label cells from the same rows (c
    against z): handed its replicates, the prediction-confidence mode draws only the micro
    cells and gives the same bounds to the bit; replicates of other draws are not taken."""
    from relcol.analysis import _multilabel, bootstrap

    rows = wh.predictions("ml0")
    pairs = multilabel_pairs(rows).collect()
    expected = multilabel_intervals(pairs, replicates=60, seed=4)
    layer = bootstrap(rows, replicates=60, seed=4, bin_replicates=("width",), curve_points=10)
    drawn_here = []

    def spy(frame, **options):
        drawn_here.append(set(frame.lazy().select("label").collect()["label"]))
        return bootstrap(frame, **options)

    monkeypatch.setattr(_multilabel, "bootstrap", spy)
    got = multilabel_intervals(pairs, replicates=60, seed=4, drawn=[layer])
    assert_frame_equal(got, expected, check_exact=True)
    assert drawn_here == [{None}, {None, 0, 1, 2}]  # micro alone, then the other mode whole
    drawn_here.clear()
    other = bootstrap(rows, replicates=60, seed=5)
    assert_frame_equal(multilabel_intervals(pairs, replicates=60, seed=4, drawn=[other]), expected)
    assert drawn_here == [{None, 0, 1, 2}] * 2


def test_the_report_draws_the_per_label_cells_once(wh, monkeypatch):
    from relcol.analysis import _multilabel, bootstrap

    drawn_here = []

    def spy(frame, **options):
        drawn_here.append(set(frame.lazy().select("label").collect()["label"]))
        return bootstrap(frame, **options)

    monkeypatch.setattr(_multilabel, "bootstrap", spy)
    tables = relcol.report_tables(wh, "ml1", bootstrap=50, seed=2)
    assert drawn_here == [{None}, {None, 0, 1, 2}]
    bounds = multilabel_intervals(multilabel_pairs(wh.predictions("ml1")), replicates=50, seed=2)
    expected = with_multilabel_intervals(relcol.multilabel(wh, study="ml1"), bounds)
    ours = tables["multilabel"].select(expected.columns)
    assert_frame_equal(ours.sort(ours.columns[:10]), expected.sort(ours.columns[:10]))


def test_the_positive_class_intervals_drawn_with_one_bin_are_those_of_fifteen(wh):
    # no metric with an interval depends on the bins, so that mode draws one bin: the
    # intervals of 15 bins but for the last bits of sums over the bins
    from relcol.analysis import bootstrap
    from relcol.analysis._bootstrap import metric_interval
    from relcol.analysis._multilabel import interval_metrics

    pairs = multilabel_pairs(wh.predictions("ml0")).collect()
    rows = pairs.filter((pl.col("mode") == "positive_class") & (pl.col("target") == "binary"))
    rows = rows.select(*KEY, "confidence", correct=pl.col("outcome") > 0.5)
    both = pl.concat([rows, rows.with_columns(label=pl.lit(None, pl.Int32))])
    fifteen = bootstrap(both, replicates=80, seed=1, bins=15, proba=False)
    ours = multilabel_intervals(pairs, replicates=80, seed=1).filter(
        (pl.col("mode") == "positive_class") & (pl.col("average") != "macro")
    )
    ours = fifteen.cells.join(ours, on=list(CELL), how="left", nulls_equal=True)
    assert ours.height == len(LABELS) + 1 and set(interval_metrics("positive_class")) == set(
        INTERVALS
    )
    for metric in INTERVALS:
        for end, expected in zip(("lo", "hi"), metric_interval(fifteen, metric), strict=True):
            np.testing.assert_allclose(ours[f"{metric}_{end}"], expected, rtol=1e-13, atol=1e-15)


def test_a_layer_run_in_batches_of_models_hands_over_nothing(wh, monkeypatch):
    # batches bound the replicates held at once; keeping each for the multi-label intervals
    # would undo that, so they draw every cell themselves, to the same bounds
    from relcol.analysis import _multilabel, _statistical, bootstrap

    def multilabel_with_drawn():
        drawn_here = []

        def spy(frame, **options):
            drawn_here.append(set(frame.lazy().select("model", "label").collect().rows()))
            return bootstrap(frame, **options)

        monkeypatch.setattr(_multilabel, "bootstrap", spy)
        table = relcol.report_tables(wh, "two-scores", bootstrap=40)["multilabel"]
        return table, [len(cells) for cells in drawn_here]

    one_pass, drawn_at_once = multilabel_with_drawn()
    monkeypatch.setattr(_statistical, "BATCH_CELLS", 1)  # two models: two batches
    batched, drawn_in_batches = multilabel_with_drawn()
    assert drawn_at_once == [2, 8] and drawn_in_batches == [8, 8]  # 2 models × (3 labels + micro)
    assert_frame_equal(batched, one_pass, check_exact=True)


def test_the_micro_tables_pool_every_pair_as_one_cell(wh):
    rows = wh.predictions("ml0").collect()
    tables = multilabel_micro_tables(rows, bins=15)
    micro = tables["multilabel_micro"].row(0, named=True)
    c, z = rows["confidence"].to_numpy(), rows["correct"].to_numpy()
    ref = reference.metrics(c, z, 15)
    assert micro["label"] is None and micro["n"] == len(c)
    for metric in ("accuracy", "ece", "mce"):
        assert micro[metric] == pytest.approx(ref[metric], abs=1e-12)
    table = relcol.multilabel(wh, study="ml0").filter(
        (pl.col("average") == "micro") & (pl.col("mode") == "prediction_confidence")
        & (pl.col("target") == "binary")
    )  # fmt: skip
    assert micro["ece"] == pytest.approx(table["ece"].item(), abs=1e-12)
    from sklearn.metrics import roc_auc_score

    discrimination = tables["multilabel_micro_discrimination"].row(0, named=True)
    assert discrimination["auroc"] == pytest.approx(roc_auc_score(z, c), abs=1e-12)
    # a bin's Wilson interval counts its distinct samples once, whatever its labels
    reliability = tables["multilabel_micro_reliability"]
    assert set(reliability["binning"]) == {"width"}
    bins = np.maximum(np.ceil(c * 15) - 1, 0).astype(int)
    distinct = {b: len(np.unique(rows["sample_id"].to_numpy()[bins == b])) for b in set(bins)}
    for row in reliability.iter_rows(named=True):
        assert row["effective_n"] == distinct[row["bin"]]
        assert row["n"] == (bins == row["bin"]).sum()
    assert (reliability["effective_n"] < reliability["n"]).any()  # some bins hold 2 labels


def test_macro_rows_average_the_labels(wh):
    table = pl.DataFrame(
        {"study": "s", "dataset": "d", "model": "m", "corruption": "none", "severity": 0.0,
         "label": [0, 1, 2, None], "n": [10, 20, 30, 60], "auroc": [0.6, 0.7, 0.9, 0.5]}
    )  # fmt: skip
    macro = macro_rows(table, ["severity", "auroc"]).row(0, named=True)
    assert macro["n"] == 60 and macro["label"] is None and macro["average"] == "macro"
    assert macro["auroc"] == pytest.approx((0.6 + 0.7 + 0.9) / 3)


def test_the_report_gives_each_named_label_every_single_label_view(tmp_path):
    from relcol.data import EMAIL_LABELS

    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.example("email", wh)
    result = relcol.report(wh, study="email-example", out=tmp_path / "r", bootstrap=200)
    html = result.html.read_text()
    section = html[html.index('<section id="multilabel">') :]
    section = section[: section.index("</section>")]
    for heading in ("Where trust breaks, per label", "Reliability diagrams",
                    "Confidence distributions", "Risk–coverage", "Discrimination",
                    "Selective prediction", "Label × confidence bin"):  # fmt: skip
        assert f"<h3>{heading}</h3>" in section, heading
    for prefix in ("mlrel1", "mlconf1", "mlrc1", "mlheat1"):
        assert f'id="{prefix}' in section, prefix
    # every label by name in the verdicts, tables and figures; micro and macro rows too
    for name in (*EMAIL_LABELS, "micro (all labels)", "macro"):
        assert name in section, name
    assert "label 4" not in html
    # the calibration table prints micro accuracy with its interval, from the exported table
    table = pl.read_parquet(tmp_path / "r" / "multilabel.parquet")
    micro = table.filter(
        (pl.col("average") == "micro") & (pl.col("mode") == "prediction_confidence")
        & (pl.col("target") == "binary")
    ).row(0, named=True)  # fmt: skip
    assert micro["accuracy_lo"] < micro["accuracy"] < micro["accuracy_hi"]
    printed = f"{micro['accuracy']:.3f} [{micro['accuracy_lo']:.3f},\xa0{micro['accuracy_hi']:.3f}]"
    assert printed in section
    agreement = table.filter(pl.col("target") == "agreement")
    assert agreement["accuracy_lo"].null_count() == agreement.height  # no interval: a share
    # macro discrimination with its interval (the mean of the labels' AUROC replicates)
    macro = pl.read_parquet(tmp_path / "r" / "multilabel_macro_discrimination.parquet").row(
        0, named=True
    )
    labels = pl.read_parquet(tmp_path / "r" / "discrimination.parquet")["auroc"]
    assert macro["auroc"] == pytest.approx(labels.mean())
    assert macro["auroc_lo"] < macro["auroc"] < macro["auroc_hi"]
    assert f"{macro['auroc']:.3f} [{macro['auroc_lo']:.3f},\xa0{macro['auroc_hi']:.3f}]" in section
    # the terminal summary names the labels too
    assert all(name in result.summary for name in EMAIL_LABELS)


def test_figures_of_many_labels_draw_micro_and_the_labels_of_the_extreme_gaps(
    tmp_path, monkeypatch
):
    import re

    import relcol.report._multilabel as report_multilabel
    import relcol.report._sections as report_sections

    names = ["tag_alpha", "tag_bravo", "tag_charlie", "tag_delta", "tag_echo"]
    rng = np.random.default_rng(5)
    samples = 150
    label = np.tile(np.arange(len(names)), samples)
    p = rng.beta(0.8, 0.8, label.size)
    # each label miscalibrated by its own amount: distinct gaps
    y = (rng.random(label.size) < np.clip(p + (label - 2) * 0.08, 0, 1)).astype(int)
    frame = pl.DataFrame(
        {
            "sample_id": np.repeat(np.arange(samples), len(names)),
            "label": [names[i] for i in label],
            "y_true": y,
            "probability": p,
        }
    )
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(frame, wh, name="tags", model="m")
    monkeypatch.setattr(report_sections, "FIGURE_MODELS", 3)  # micro and two labels
    monkeypatch.setattr(report_multilabel, "HEATMAP_LABELS", 2)  # two rows of the heatmap
    result = relcol.report(wh, study="tags", out=tmp_path / "r", bootstrap=0)
    html = result.html.read_text()
    # the labels of the largest and the smallest largest gap, from the exported tables
    named = pl.read_parquet(tmp_path / "r" / "multilabel.parquet").select("label", "label_name")
    gaps = (
        pl.read_parquet(tmp_path / "r" / "calibration.parquet")
        .join(named.unique(), on="label")
        .group_by("label_name")
        .agg(pl.col("gap").max())
        .sort("gap")
    )
    kept = {gaps["label_name"][0], gaps["label_name"][-1]}
    left = set(names) - kept
    drawn = 0
    for label, svg in re.findall(r'<svg role="img" aria-label="([^"]+)"(.*?)</svg>', html, re.S):
        if label.startswith(("Reliability", "Confidence", "Risk", "Label by")):
            assert all(name in svg for name in kept), label
            assert ("micro" in svg) == (not label.startswith("Label by")), label
            assert not any(name in svg for name in left), label
            drawn += 1
    assert drawn == 4
    assert html.count("Drawn for 3 of the 6 rows: micro and, of the labels, the 1 whose") == 3
    assert (
        "Drawn for 2 of the 5 labels: the 1 whose largest gap Δ (at their most overconfident "
        "cell) is the largest and the 1 where it is the smallest, those without a gap Δ only "
        "filling the count; every label is in "
        "<code>multilabel_bins.csv</code>." in html
    )
    # the tables keep every label
    section = html[html.index('<section id="multilabel">') :]
    table = section[section.index('id="relcol-multilabel-binary"') :]
    assert all(name in table[: table.index("</table>")] for name in names)


def test_without_the_bootstrap_the_section_says_so_and_macro_is_a_plain_mean(wh, tmp_path):
    result = relcol.report(wh, study="ml0", out=tmp_path / "r", bootstrap=0)
    html = result.html.read_text()
    section = html[html.index('<section id="multilabel">') :]
    section = section[: section.index("</section>")]
    assert "No intervals: the report was made without the bootstrap (B = 0)." in section
    assert "Where trust breaks, per label" not in section  # no statistical layer, no verdicts
    exported = pl.read_parquet(tmp_path / "r" / "multilabel.parquet")
    assert not any(c.endswith("_lo") for c in exported.columns)
    # the macro AUROC row is the mean of the labels' AUROCs, printed without brackets
    aurocs = pl.read_parquet(tmp_path / "r" / "discrimination.parquet")["auroc"]
    assert "macro</th>" in section or ">macro<" in section
    assert f"{aurocs.mean():.3f}</td>" in section
