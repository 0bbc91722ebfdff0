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


SPARED = """
name = "spared"
seeds = [0]
repeats = 2
severities = [0.0, 0.3]

[[datasets]]
name = "synthetic"
n_samples = 300
n_features = 6

[[models]]
name = "logistic_regression"

[[models]]
name = "lightgbm"

[[corruptions]]
name = "label_noise"

[[corruptions]]
name = "mcar"
id = "half-rows"
columns = [0, 1]
fraction = 0.5

[[corruptions]]
name = "gaussian_noise"
"""


def test_rows_a_corruption_left_as_they_were_keep_the_clean_prediction(tmp_path, monkeypatch):
    # a label-noise draw changes no feature, a corruption of half the rows spares the other
    # half: those rows are the clean input, and carry the model's clean prediction, to the
    # bit (predicting them again in another batch could move a BLAS model's last bits); the
    # rows a draw changed carry the model's prediction of them
    import numpy as np

    from relcol.corruption import TrainingStats
    from relcol.data import load_dataset
    from relcol.models import fit_frozen
    from relcol.study import _runner, load_study
    from relcol.study._runner import _draw, _validated

    (tmp_path / "spared.toml").write_text(SPARED)
    wh = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(tmp_path / "spared.toml", wh)
    rows = wh.predictions("spared").collect()
    clean = rows.filter(pl.col("severity") == 0.0).select(
        "model", "corruption", "repeat", "sample_id", clean=pl.col("proba")
    )
    study = load_study(tmp_path / "spared.toml")
    ds = load_dataset(study.datasets[0], test_size=study.test_size, split_seed=study.split_seed)
    stats = TrainingStats.fit(ds.X_train, ds.n_classes, labels=ds.y_train)
    for c in study.corruptions:
        draws = _draw(study, ds, c, _validated(c, ds), stats)
        with monkeypatch.context() as every:  # the whole draw: every row as changed
            every.setattr(_runner, "_changed_rows", lambda X, _: np.ones(len(X), dtype=bool))
            full = _draw(study, ds, c, _validated(c, ds), stats).X
        n = len(ds.y_test)
        clean_rows = np.tile(ds.X_test, (len(full) // n, 1))
        unchanged = ((full == clean_rows) | (np.isnan(full) & np.isnan(clean_rows))).all(axis=1)
        assert (draws.changed == ~unchanged).all()
        np.testing.assert_array_equal(draws.X, full[~unchanged])
        share = {"label_noise": 1.0, "gaussian_noise": 0.0}.get(c.id)
        if share is None:  # two of the columns, in some rows: some rows spared, some changed
            assert 0.2 < unchanged.mean() < 0.9, unchanged.mean()
        else:
            assert unchanged.mean() == share, (c.id, unchanged.mean())
        for model in study.models:
            frozen = fit_frozen(model, ds.X_train, ds.y_train, seed=0, n_classes=ds.n_classes)
            stored = (
                rows.filter(
                    (pl.col("model") == model.id)
                    & (pl.col("corruption") == c.id)
                    & (pl.col("severity") > 0)
                )
                .sort("repeat", "sample_id")
                .join(clean, on=["model", "corruption", "repeat", "sample_id"], how="left")
            )
            proba = np.array(stored["proba"].to_list(), dtype=np.float32)  # stored as Float32
            assert len(proba) == len(full)
            spared = stored.filter(pl.Series(unchanged))
            assert (spared["proba"] == spared["clean"]).all(), (model.id, c.id)
            # every row: the model's prediction of its features (Float64 confidence)
            direct = frozen.predict_proba(full)
            confidence = stored["confidence"].to_numpy()
            np.testing.assert_allclose(confidence, direct.max(axis=1), rtol=0, atol=1e-14)
            if model.name == "lightgbm":  # a tree's prediction of a row is that row's alone
                np.testing.assert_array_equal(proba, direct.astype(np.float32))
                np.testing.assert_array_equal(confidence, direct.max(axis=1))


def test_changed_rows_are_told_apart_from_their_clean_row_by_their_bytes():
    import numpy as np

    from relcol.study._runner import _changed_rows

    clean = np.array([[1.0, np.nan], [0.0, 2.0]])
    X = np.array(
        [
            [1.0, np.nan],  # as it was: NaN where the clean row has NaN
            [0.0, 2.5],  # a value changed
            [1.0, 3.0],  # a NaN filled
            [-0.0, 2.0],  # -0.0 for 0.0: other bytes, so predicted again
        ]
    )
    assert _changed_rows(X, clean).tolist() == [False, True, True, True]
    assert _changed_rows(X.astype(np.float32), clean).tolist() == [True] * 4
    assert _changed_rows(np.empty((0, 2)), clean).tolist() == []
