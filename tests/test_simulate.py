"""Simulated consistency studies: determinism, the four conditions, the warehouse.

The regression this module exists for: in the published simulation's demo code the dependent runs were built
with a concatenate where a where was meant, so they were not dependent at all. Here dependent
runs must agree with each other far more than independent ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

import relcol
from relcol.errors import ParameterError, WarehouseError
from relcol.metrics import consistency
from relcol.store import PREDICTIONS, Warehouse
from relcol.study._runner import rng_for
from relcol.study._simulate import (
    CONDITIONS,
    FAMILIES,
    ConsistencySimulation,
    class_probabilities,
    simulate_consistency,
    simulate_predictions,
)
from tests.test_store import checksums

SMALL = ConsistencySimulation(samples=400, replicates=6, error_rates=(0.0, 0.2, 0.4), seed=3)


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return simulate_consistency(SMALL)


@pytest.fixture(scope="module")
def table(rows) -> pl.DataFrame:
    return consistency(rows).collect()


def test_rows_have_the_long_table_schema_and_a_unique_key(rows):
    assert rows.select(list(PREDICTIONS)[:-1]).schema == pl.Schema(
        {k: v for k, v in PREDICTIONS.items() if k != "run_id"}
    )
    assert rows.height == 4 * 4 * 3 * 6 * 400
    key = ["dataset", "model", "severity", "seed", "repeat", "sample_id"]
    assert rows.select(key).is_unique().all()
    assert set(rows["model"]) == {f"sim:{c}" for c in CONDITIONS}
    assert set(rows["dataset"]) == set(FAMILIES)


def test_the_same_simulation_gives_the_same_rows_and_another_seed_others(rows):
    assert simulate_consistency(SMALL).equals(rows)
    assert not simulate_consistency(SMALL._replace(seed=4)).equals(rows)


def test_the_test_set_is_shared_by_every_condition_and_run(rows):
    labels = rows.group_by("dataset", "sample_id").agg(pl.col("y_true").n_unique())
    assert (labels["y_true"] == 1).all()


def test_dependent_runs_agree_far_more_than_independent_ones_issue_regression(table):
    """The demo's concatenate-for-where bug made dependent runs independent."""
    at = table.filter(pl.col("severity") == 0.4)
    pa = dict(at.group_by("model").agg(pl.col("pa").mean()).iter_rows())
    ec_l = dict(at.group_by("model").agg(pl.col("ec_l").mean()).iter_rows())
    kappa_e = dict(at.group_by("model").agg(pl.col("kappa_error").mean()).iter_rows())
    # same error budget, same accuracy ...
    acc = at.group_by("model").agg(pl.col("accuracy").mean())
    assert acc["accuracy"].max() - acc["accuracy"].min() < 0.05
    # ... but dependent runs share their errors
    assert ec_l["sim:dependent-variable"] > 0.6 > 0.35 > ec_l["sim:independent-variable"]
    assert pa["sim:dependent-variable"] > pa["sim:independent-variable"] + 0.3
    assert kappa_e["sim:dependent-variable"] > 0.6
    assert abs(kappa_e["sim:independent-variable"]) < 0.05  # independent errors: κₑ ≈ 0
    assert ec_l["sim:dependent-fixed"] > 0.9 and kappa_e["sim:dependent-fixed"] > 0.9


def test_a_dependent_run_keeps_the_base_prediction_outside_its_perturbation():
    y = np.zeros(1000, dtype=np.int64)
    p = np.full(5, 0.2)
    runs = simulate_predictions(y, p, "dependent-fixed", 0.3, 8, 0.1, rng_for("t", 1))
    # every pair of runs predicts the same class on at least ~(1 − 2q) of the error set
    same = np.mean([np.mean(runs[i] == runs[j]) for i in range(8) for j in range(i + 1, 8)])
    assert same > 1 - 0.3 * 2 * 0.1 * 0.8 - 0.02
    independent = simulate_predictions(y, p, "independent-fixed", 0.3, 8, 0.1, rng_for("t", 1))
    same_ind = np.mean(
        [np.mean(independent[i] == independent[j]) for i in range(8) for j in range(i + 1, 8)]
    )
    assert same_ind < same - 0.15


def test_fixed_error_sets_confine_errors_and_variable_ones_do_not(table):
    at = table.filter(pl.col("severity") == 0.2)
    share = dict(at.group_by("model").agg(pl.col("consistently_correct").mean()).iter_rows())
    # at most r·n samples can ever be wrong under a fixed error set
    assert share["sim:independent-fixed"] >= 0.8 - 1e-12
    assert share["sim:dependent-fixed"] >= 0.8 - 1e-12
    assert share["sim:independent-variable"] < 0.5


def test_error_rate_zero_is_perfect_consistency(table):
    clean = table.filter(pl.col("severity") == 0.0)
    assert (clean["accuracy"] == 1.0).all() and (clean["pa"] == 1.0).all()
    assert (clean["ec_l"] == 1.0).all() and clean["ec_corr"].is_null().all()


@pytest.mark.parametrize("family", FAMILIES)
def test_class_probabilities_are_sorted_and_sum_to_one(family):
    p = class_probabilities(family, 12, rng_for("p", family))
    assert len(p) == 12 and np.isclose(p.sum(), 1.0) and np.all(np.diff(p) <= 0) and p.min() > 0
    if family == "balanced":
        assert np.allclose(p, 1 / 12)


def test_confidence_is_the_expected_accuracy(rows):
    # confidence = 1 − r·(1 − Σ p²); the realised accuracy is within sampling error of it
    cal = rows.group_by("dataset", "model", "severity").agg(
        pl.col("correct").mean(), pl.col("confidence").first()
    )
    assert (cal["correct"] - cal["confidence"]).abs().max() < 0.05


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"samples": 0}, "samples must be an int >= 1"),
        ({"replicates": 1}, "replicates must be an int >= 2"),
        ({"error_rates": (0.3, 0.1)}, "strictly increasing"),
        ({"error_rates": (0.0, 1.5)}, "strictly increasing values in"),
        ({"perturbation": 2.0}, "perturbation must be in"),
        ({"families": ("gaussian",)}, "families must be"),
        ({"seed": -1}, "seed must be an int >= 0"),
    ],
)
def test_bad_parameters_are_refused_with_the_value(change, message):
    with pytest.raises(ParameterError, match=message):
        ConsistencySimulation(**change)


def test_bad_study_names_are_refused():
    with pytest.raises(WarehouseError, match="study name"):
        ConsistencySimulation(name="../up")


# The warehouse and the command line --------------------------------------------------------


def test_simulation_commits_like_a_study_and_is_byte_identical(tmp_path):
    small = SMALL._replace(name="sim", samples=50, replicates=3)
    first = relcol.simulate_consistency(tmp_path / "a", **small.__dict__)
    second = relcol.simulate_consistency(tmp_path / "b", **small.__dict__)
    assert first.rows == 4 * 4 * 3 * 3 * 50 and first.run_id == second.run_id
    wh = Warehouse(tmp_path / "a")
    run = wh.sql("SELECT kind, rows, cells, spec FROM runs").row(0, named=True)
    assert run["kind"] == "simulation" and run["rows"] == first.rows and run["cells"] == 48
    assert json.loads(run["spec"])["replicates"] == 3
    parts = {k: v for k, v in checksums(tmp_path / "a" / "predictions").items() if "part-" in k}
    assert parts == {
        k: v for k, v in checksums(tmp_path / "b" / "predictions").items() if "part-" in k
    }
    # the views see it: consistency along the seed axis for every cell
    view = wh.sql("SELECT axis, count(*) AS n FROM consistency GROUP BY axis")
    assert view.rows() == [("seed", 48)]
    with pytest.raises(WarehouseError, match="already in warehouse"):
        relcol.simulate_consistency(tmp_path / "a", **small.__dict__)
    before = checksums(tmp_path / "a")
    with pytest.raises(ParameterError):
        relcol.simulate_consistency(tmp_path / "a", replace=True, name="sim", samples=-5)
    assert checksums(tmp_path / "a") == before


def test_the_command_writes_a_study_and_refuses_bad_options(tmp_path):
    env = {**os.environ, "RELCOL_WAREHOUSE": str(tmp_path / "wh")}
    cmd = [sys.executable, "-m", "relcol.cli", "simulate", "consistency"]
    done = subprocess.run(
        [*cmd, "--name", "s1", "--samples", "30", "--replicates", "3", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == 4 * 4 * 6 * 3 * 30
    bad = subprocess.run(
        [*cmd, "--replicates", "1"], capture_output=True, text=True, env=env, timeout=300
    )
    assert bad.returncode == 2 and "replicates" in bad.stderr
    plain = subprocess.run(
        [*cmd, "--name", "s2", "--samples", "5", "--replicates", "2"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[-1] == "report: relcol report --study s2"
    again = subprocess.run(
        [*cmd, "--name", "s1", "--samples", "30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "already" in again.stderr


# The report ---------------------------------------------------------------------------------------


def test_the_report_shows_the_metrics_that_separate_the_conditions(tmp_path):
    """At the same accuracy, churn tells dependent from independent errors and EC_l and κₑ
    tell a fixed error set from a variable one; the report's consistency tables show all
    three, with the values of ``consistency``."""
    sim = SMALL._replace(name="sim", families=("balanced",), error_rates=(0.0, 0.4))
    relcol.simulate_consistency(tmp_path / "wh", **sim.__dict__)
    tables = relcol.report(tmp_path / "wh", study="sim", out=tmp_path / "r", bootstrap=0)
    folder = tmp_path / "r" / "tables"
    (page,) = folder.glob("relcol-consistency-*.html")  # one table per dataset
    assert re.search(r"<title>Consistency: (.*?)</title>", page.read_text()).group(1) == "balanced"
    exported = pl.read_parquet(page.with_suffix(".parquet")).filter(pl.col("severity") == 0.4)
    shown = {row["model"]: row for row in exported.iter_rows(named=True)}
    # the page rounds to 3 decimals (the files keep every digit)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page.read_text())
    assert all(f"{row['ec_l_seed']:.3f}" in cells for row in shown.values())
    assert not any(re.fullmatch(r"\d\.\d{4,}", c.strip()) for c in cells)
    assert set(shown) == {f"sim:{c}" for c in CONDITIONS} and exported.height == len(shown)
    assert all(
        set(row) == {"study", "dataset", "model", "corruption", "label", "severity", "accuracy",
                     "consistently_correct_seed", "churn_seed", "ec_l_seed", "kappa_error_seed"}
        for row in shown.values()
    )  # fmt: skip
    expected = (
        consistency(simulate_consistency(sim))
        .collect()
        .filter(pl.col("severity") == 0.4)
        .select("model", "accuracy", "churn", "ec_l", "kappa_error")
    )
    for row in expected.iter_rows(named=True):
        got = shown[row["model"]]
        for metric in ("churn", "ec_l", "kappa_error"):
            assert got[f"{metric}_seed"] == pytest.approx(row[metric], abs=1e-12)
        assert got["accuracy"] == pytest.approx(row["accuracy"], abs=1e-12)
    churn = {m: r["churn_seed"] for m, r in shown.items()}
    ec_l = {m: r["ec_l_seed"] for m, r in shown.items()}
    kappa = {m: r["kappa_error_seed"] for m, r in shown.items()}
    # the same error budget, so accuracy does not tell them apart ...
    assert (
        max(r["accuracy"] for r in shown.values()) - min(r["accuracy"] for r in shown.values())
        < 0.05
    )
    # ... churn splits dependent from independent errors ...
    assert max(churn["sim:dependent-fixed"], churn["sim:dependent-variable"]) + 0.15 < min(
        churn["sim:independent-fixed"], churn["sim:independent-variable"]
    )
    # ... and the error overlap a fixed error set from a variable one, at either dependence
    for dependence in ("dependent", "independent"):
        assert ec_l[f"sim:{dependence}-fixed"] > ec_l[f"sim:{dependence}-variable"] + 0.1
        assert kappa[f"sim:{dependence}-fixed"] > kappa[f"sim:{dependence}-variable"] + 0.1
    assert abs(kappa["sim:independent-variable"]) < 0.05  # errors independent: κₑ ≈ 0
    html = tables.html.read_text()
    assert "EC<sub>l</sub>" in html and "κ<sub>e</sub>" in html
