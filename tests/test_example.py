"""The published worked example's dummy email dataset (the email example of docs/email-example.md):
regenerated, ingested, reported, and its numbers near the published table (ECE ≈ 0.21, AUROC ≈ 0.98, Cohen's d ≈ 3.3, Brier ≈ 0.09).

AUROC, PR-AUC, Cohen's d and the point-biserial r are computed here independently
(scikit-learn, numpy) and relcol's own numbers are held to them.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from relcol.cli import main
from sklearn.metrics import average_precision_score, roc_auc_score

import relcol
from relcol.data import (
    EMAIL_LABELS,
    EMAIL_PUBLISHED_AT_LEAST,
    EMAIL_PUBLISHED_TABLE,
    email_predictions,
)
from tests import reference


def cohens_d(c: np.ndarray, z: np.ndarray) -> float:
    right, wrong = c[z], c[~z]
    pooled = np.sqrt((right.var(ddof=1) + wrong.var(ddof=1)) / 2)
    return float((right.mean() - wrong.mean()) / pooled)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    wh = relcol.open_warehouse(tmp_path_factory.mktemp("example") / "wh")
    return wh, relcol.example("email", wh)


def test_the_dataset_is_the_published_construction():
    frame = email_predictions(0)
    assert frame.shape == (1000, 6)
    assert frame["sample_id"].n_unique() == 200
    assert frame["label"].unique(maintain_order=True).to_list() == list(EMAIL_LABELS)
    per_email = frame.group_by("sample_id").agg(pl.col("y_true").sum())["y_true"]
    assert per_email.mean() == pytest.approx(2.0, abs=0.15)  # about 2 true labels each
    wrong = frame["y_pred"] != frame["y_true"]
    assert wrong.mean() == pytest.approx(0.3, abs=0.04)  # 30 % of decisions flipped
    c = frame["confidence"]
    assert c.filter(~wrong).mean() == pytest.approx(0.8, abs=0.02)
    assert c.filter(wrong).mean() == pytest.approx(0.4, abs=0.03)
    assert c.min() >= 0 and c.max() <= 1 and (c == 1.0).sum() > 0  # clipped, not dropped
    assert frame["agreement"].is_between(0, 1).all()


def test_the_same_seed_gives_the_same_frame_and_agreement_leaves_the_rest_alone():
    assert email_predictions(0).equals(email_predictions(0))
    assert not email_predictions(0).equals(email_predictions(1))
    fewer = email_predictions(0, annotators=3)
    assert fewer.drop("agreement").equals(email_predictions(0).drop("agreement"))


def test_every_row_of_the_published_table_lands_near_it(example):
    wh, result = example
    rows = wh.predictions("email-example").collect()
    c, z = rows["confidence"].to_numpy(), rows["correct"].to_numpy()
    ours = dict(zip(result.comparison["metric"], result.comparison["relcol"], strict=True))
    # relcol's own ECE and Brier (micro, prediction confidence), and independent references
    assert ours["ece"] == pytest.approx(reference.metrics(c, z, 15)["ece"], abs=1e-12)
    assert ours["brier"] == pytest.approx(np.mean((c - z) ** 2), abs=1e-12)
    auroc, d = roc_auc_score(z, c), cohens_d(c, z)
    assert ours["ece"] == pytest.approx(EMAIL_PUBLISHED_TABLE["ece"], abs=0.03)
    assert auroc == pytest.approx(EMAIL_PUBLISHED_TABLE["auroc"], abs=0.015)
    assert d == pytest.approx(EMAIL_PUBLISHED_TABLE["cohens_d"], abs=0.4)
    assert ours["brier"] == pytest.approx(EMAIL_PUBLISHED_TABLE["brier"], abs=0.01)
    assert ours["accuracy"] == pytest.approx(EMAIL_PUBLISHED_TABLE["accuracy"], abs=0.05)
    assert ours["nll"] == pytest.approx(EMAIL_PUBLISHED_TABLE["nll"], abs=0.03)
    # every row of the published table is there, in its order, with relcol's value beside it
    assert result.comparison["metric"].to_list() == list(EMAIL_PUBLISHED_TABLE)
    assert result.comparison["relcol"].null_count() == 0
    relation = dict(zip(result.comparison["metric"], result.comparison["relation"], strict=True))
    assert (
        {m for m, r in relation.items() if r == "≥"}
        == EMAIL_PUBLISHED_AT_LEAST
        == {"mce", "pr_auc"}
    )
    pr_auc = average_precision_score(z, c)
    r = float(np.corrcoef(c, z.astype(float))[0, 1])
    for name, expected in (
        ("auroc", auroc),
        ("cohens_d", d),
        ("pr_auc", pr_auc),
        ("point_biserial", r),
        ("mce", reference.metrics(c, z, 15)["mce"]),
    ):
        assert ours[name] == pytest.approx(expected, abs=1e-9), name  # fmt: skip
    # the table gives MCE and PR-AUC as lower bounds ("0.25+", "0.85+"): both hold here
    assert (
        ours["mce"] >= EMAIL_PUBLISHED_TABLE["mce"]
        and ours["pr_auc"] >= EMAIL_PUBLISHED_TABLE["pr_auc"]
    )


@pytest.mark.parametrize("seed", range(1, 9))
def test_other_seeds_land_near_the_table_too(seed):
    frame = email_predictions(seed)
    z = (frame["y_pred"] == frame["y_true"]).to_numpy()
    c = frame["confidence"].to_numpy()
    assert reference.metrics(c, z, 15)["ece"] == pytest.approx(0.21, abs=0.03)
    assert roc_auc_score(z, c) == pytest.approx(0.98, abs=0.015)
    assert cohens_d(c, z) == pytest.approx(3.3, abs=0.45)
    assert np.mean((c - z) ** 2) == pytest.approx(0.09, abs=0.01)


def test_ece_does_not_depend_on_the_binning_here(example):
    """Why the published ECE is reproduced whatever binning it used: every bin is one-sided."""
    wh, _ = example
    rows = wh.predictions("email-example").collect()
    c, z = rows["confidence"].to_numpy(), rows["correct"].to_numpy()
    eces = [reference.metrics(c, z, m)["ece"] for m in (5, 10, 15, 20)]
    assert max(eces) - min(eces) < 1e-3
    assert abs(reference.metrics(c, z, 15)["gap"]) < 0.02  # overconfident low, underconfident high


def test_the_cli_prints_the_comparison_and_the_report_works(tmp_path):
    runner = CliRunner()
    wh = str(tmp_path / "wh")
    done = runner.invoke(
        main, ["example", "email", "--warehouse", wh, "--save", str(tmp_path / "e.csv")]
    )
    assert done.exit_code == 0, done.output
    assert (
        "ece" in done.stdout and "0.2098" in done.stdout and "report: relcol report" in done.stdout
    )
    printed = {line.split()[0]: line.split()[1:3] for line in done.stdout.splitlines()[2:11]}
    assert list(printed) == list(EMAIL_PUBLISHED_TABLE)
    assert printed["mce"][0] == "0.25+" and printed["pr_auc"][0] == "0.85+"
    report = runner.invoke(
        main,
        ["report", "--study", "email-example", "--warehouse", wh, "--out", str(tmp_path / "r")],
    )
    assert report.exit_code == 0, report.output
    html = (tmp_path / "r" / "index.html").read_text()
    assert "confidential" in html and "Label by confidence-bin heatmap" in html
    # the saved file is a prediction file that ingests to the same rows
    again = runner.invoke(
        main,
        ["ingest", "--predictions", str(tmp_path / "e.csv"), "--warehouse", wh, "--name", "again",
         "--model", "llm", "--dataset", "email", "--classes", ",".join(EMAIL_LABELS)],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    a = relcol.open_warehouse(wh).predictions("email-example").drop("study", "run_id").collect()
    b = relcol.open_warehouse(wh).predictions("again").drop("study", "run_id").collect()
    assert a.equals(b)
