"""Corruptions inside a study (issue 15): repeats that are real draws, feature names,
per-corruption repeats, and realised rates that track d on discrete data."""

from __future__ import annotations

import json

import polars as pl
import pytest

import relcol

SPEC = """
name = "ops"
seeds = [0]
repeats = 2
severities = [0.0, 0.2, 0.5]

[[datasets]]
name = "synthetic"
n_samples = 300
n_features = 6

[[datasets]]
name = "digits"

[[models]]
name = "naive_bayes"

[[corruptions]]
name = "mnar"

[[corruptions]]
name = "mcar"
id = "mcar-two"
columns = [0, 1]
fraction = 0.5
repeats = 3

[[corruptions]]
name = "mar"
repeats = 1
"""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("ops")
    (root / "ops.toml").write_text(SPEC)
    wh = relcol.open_warehouse(root / "warehouse")
    relcol.ingest(root / "ops.toml", wh)
    return wh


def _draws(wh) -> pl.DataFrame:
    return wh.sql(
        "SELECT dataset, corruption, severity, count(*) AS draws, avg(realised_rate) AS rate "
        "FROM corruptions GROUP BY ALL ORDER BY ALL"
    )


def test_a_draw_that_repeats_itself_is_stored_once(warehouse):
    draws = {
        (r["dataset"], r["corruption"], r["severity"]): r for r in _draws(warehouse).to_dicts()
    }
    # synthetic is continuous: mnar's quantile rule draws nothing, so one draw per severity;
    # digits' pixels tie at the quantile: the tie-break is random, two real draws.
    assert draws["synthetic", "mnar", 0.5]["draws"] == 1
    assert draws["digits", "mnar", 0.5]["draws"] == 2
    rows = warehouse.predictions("ops").filter(pl.col("corruption") == "mnar").collect()
    stored = (
        rows.group_by("dataset", "severity")
        .agg(pl.col("repeat").n_unique())
        .sort("dataset", "severity")
    )
    assert stored.rows() == [
        ("digits", 0.0, 2),
        ("digits", 0.2, 2),
        ("digits", 0.5, 2),
        ("synthetic", 0.0, 2),
        ("synthetic", 0.2, 1),
        ("synthetic", 0.5, 1),
    ]
    # Repeats of digits are different draws: some sample's prediction differs.
    digits = rows.filter((pl.col("dataset") == "digits") & (pl.col("severity") == 0.5))
    wide = digits.pivot(on="repeat", index="sample_id", values="y_pred")
    assert (wide["0"] != wide["1"]).any()


def test_realised_rates_track_d_and_per_corruption_repeats_apply(warehouse):
    draws = _draws(warehouse).filter(pl.col("severity") > 0)
    # digits: 540 test rows × 63-64 features (mcar-two's 2 columns of half the rows are few).
    digits = draws.filter((pl.col("dataset") == "digits") & (pl.col("corruption") != "mcar-two"))
    assert digits.height == 4
    for row in digits.to_dicts():
        assert abs(row["rate"] - row["severity"]) <= 0.03, row  # see tests/benchmarks
    counts = {(r["dataset"], r["corruption"], r["severity"]): r["draws"] for r in draws.to_dicts()}
    assert counts["digits", "mcar-two", 0.5] == 3 and counts["digits", "mar", 0.5] == 1


def test_columns_by_name_are_stored_as_indices(tmp_path):
    spec = SPEC.replace("columns = [0, 1]", 'columns = ["x1", "x0"]').replace(
        '[[datasets]]\nname = "digits"\n', ""
    )
    (tmp_path / "named.toml").write_text(spec)
    wh = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(tmp_path / "named.toml", wh)
    params = wh.sql("SELECT DISTINCT params FROM corruptions WHERE corruption = 'mcar-two'")
    assert json.loads(params.item()) == {"columns": [1, 0], "fraction": 0.5}
    rows = wh.predictions("ops").filter(pl.col("corruption") == "mcar-two").collect()
    assert rows.height == 90 * (3 + 2 * 3)  # the clean block once per repeat, 2 severities × 3
