"""Real predictions of published image classifiers (../shared/data/real-predictions), ingested as a
user would, held to an independent numpy computation. Skipped when ../shared is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import relcol
from tests import reference
from tests.conftest import SHARED

REAL = SHARED / "data" / "real-predictions"
FILES = (
    "resnet110_cifar10",
    "densenet40_cifar10",
    "resnet110_cifar100",
    "densenet40_cifar100",
    "resnet50_birds",
)
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is absent")
MAPPING = {"y_true": "true_label", "y_pred": "pred_label"}


def columns(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """true_label, pred_label, confidence, read with numpy alone."""
    table = np.loadtxt(REAL / f"{name}.csv", delimiter=",", skiprows=1)
    return table[:, 0].astype(int), table[:, 1].astype(int), table[:, 2]


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    return relcol.open_warehouse(tmp_path_factory.mktemp("real") / "wh")


@pytest.mark.parametrize("name", FILES)
def test_accuracy_and_ece_match_an_independent_numpy_computation(wh, name):
    y, pred, confidence = columns(name)
    result = relcol.ingest_predictions(REAL / f"{name}.csv", wh, name=name, columns=MAPPING)
    assert result.rows == len(y) and result.cells == 1
    assert len(result.classes) == max(y.max(), pred.max()) + 1
    expected = reference.metrics(confidence, pred == y, 15)
    for engine in ("polars", "duckdb"):
        row = relcol.calibration(wh, study=name, engine=engine).row(0, named=True)
        assert row["n"] == len(y)
        for metric in ("accuracy", "mean_confidence", "gap", "ece", "mce"):
            assert row[metric] == pytest.approx(expected[metric], abs=1e-12), (engine, metric)


def test_confidences_of_exactly_one_land_in_the_last_bin(wh):
    name = "densenet40_cifar10"
    _, _, confidence = columns(name)
    ones = int((confidence == 1.0).sum())
    assert ones > 5000  # float32 softmax saturates
    if name not in wh.studies():
        relcol.ingest_predictions(REAL / f"{name}.csv", wh, name=name, columns=MAPPING)
    stored = wh.sql(
        "SELECT count(*) AS n FROM predictions WHERE study = ? AND confidence = 1", [name]
    )
    assert stored["n"][0] == ones  # nothing clipped or nudged
    last = wh.sql(
        "SELECT bin, n FROM calibration_bins WHERE study = ? AND binning = 'width' "
        "ORDER BY bin DESC LIMIT 1",
        [name],
    )
    assert last["bin"][0] == 14 and last["n"][0] >= ones


def test_recalibration_on_half_the_images_improves_ece_on_the_other_half(wh):
    name = "resnet110_cifar100"
    if name not in wh.studies():
        relcol.ingest_predictions(REAL / f"{name}.csv", wh, name=name, columns=MAPPING)
    result = relcol.recalibrate(wh, study=name, methods=["temperature", "isotonic"])
    ece = result.table.filter(pl.col("metric") == "ece")
    assert ece["n"].to_list() == [5000, 5000]
    assert (ece["before"] > 0.17).all() and (ece["after"] < 0.08).all()
    assert result.fits[0]["variant"] == "binary"  # a top-label file has no vector


def relcol_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("relcol")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "relcol.cli", *args]
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=300
    )


def test_the_readme_walkthrough(tmp_path):
    """README, "Walkthrough: a CIFAR-10 model's predictions", as a user types it."""
    csv = REAL / "resnet110_cifar10.csv"
    done = relcol_cli(
        "ingest", "--predictions", str(csv), "--column", "y_true=true_label",
        "--column", "y_pred=pred_label", "--name", "resnet110-c10", "--model", "resnet110",
        "--dataset", "cifar10", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote 10,000 rows in 1 cell of study 'resnet110-c10'" in done.stdout
    report = relcol_cli("report", "--study", "resnet110-c10", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    row = next(line for line in report.stdout.splitlines() if line.startswith("cifar10 "))
    assert row.split()[:3] == ["cifar10", "resnet110", "none"]
    assert "0.936" in row.split() and "0.048" in row.split()  # clean accuracy and ECE
    html = (tmp_path / "reports" / "resnet110-c10" / "index.html").read_text()
    assert "By predicted class" in html
    by_class = pl.read_csv(tmp_path / "reports" / "resnet110-c10" / "by_class.csv")
    assert by_class.height == 10 and by_class["n"].sum() == 10_000


def test_two_networks_in_one_study_pair_their_test_images(tmp_path):
    """Both CIFAR-10 files as one study: a model per file, the images paired by row."""
    names = ("resnet110_cifar10", "densenet40_cifar10")
    wh = relcol.open_warehouse(tmp_path / "wh")
    files = [REAL / f"{name}.csv" for name in names]
    result = relcol.ingest_predictions(files, wh, name="cifar10", columns=MAPPING)
    assert result.rows == 20_000 and result.cells == 2 and result.sources == names
    report = relcol.report(wh, study="cifar10", out=tmp_path / "r")
    differences = pl.read_parquet(report.out / "differences.parquet")
    # docs/predictions.md quotes these, rounded
    quoted = {"accuracy": (0.0114, 0.0065, 0.0163), "abs_gap": (-0.0074, -0.0121, -0.0024)}
    for metric, numbers in quoted.items():
        row = differences.filter(pl.col("metric") == metric).row(0, named=True)
        assert row["model"] == "resnet110_cifar10", row
        got = [round(row[c], 4) for c in ("difference", "difference_lo", "difference_hi")]
        assert tuple(got) == numbers, metric
    row = differences.filter(pl.col("metric") == "accuracy").row(0, named=True)
    correct = {}
    for name in names:
        y, pred, _ = columns(name)
        correct[name] = pred == y
    assert correct[row["model"]].mean() - correct[row["reference_model"]].mean() == pytest.approx(
        row["difference"], abs=1e-12
    )
    # paired: the interval is that of the per-image differences, narrower than unpaired
    each = correct[names[0]].astype(float) - correct[names[1]].astype(float)
    paired_se = each.std(ddof=1) / np.sqrt(each.size)
    width = row["difference_hi"] - row["difference_lo"]
    assert width == pytest.approx(2 * 1.96 * paired_se, rel=0.2)
    unpaired_se = np.sqrt(sum(c.var(ddof=1) / c.size for c in correct.values()))
    assert width < 0.8 * 2 * 1.96 * unpaired_se  # 1.44 times wider here
