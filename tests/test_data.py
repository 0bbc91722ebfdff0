from __future__ import annotations

import csv
import importlib.util
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn import datasets as skd

from relcol.data import DatasetSpec, load_dataset
from relcol.data._datasets import validate_dataset
from relcol.errors import InputError, SpecError


@pytest.mark.parametrize(
    ("name", "loader", "n_classes"),
    [
        ("digits", skd.load_digits, 10),
        ("breast_cancer", skd.load_breast_cancer, 2),
        ("wine", skd.load_wine, 3),
    ],
)
def test_builtin_test_rows_are_the_dataset_rows_named_by_sample_id(name, loader, n_classes):
    bunch = loader()
    ds = load_dataset(DatasetSpec(name), test_size=0.3, split_seed=0)
    assert ds.n_classes == n_classes
    assert len(ds.y_test) == int(np.ceil(0.3 * len(bunch.target)))
    np.testing.assert_array_equal(ds.X_test, bunch.data[ds.sample_id])
    np.testing.assert_array_equal(ds.y_test, bunch.target[ds.sample_id])
    # train and test partition the rows
    assert len(ds.y_train) + len(ds.y_test) == len(bunch.target)
    assert np.all(np.diff(ds.sample_id) > 0)


def test_split_is_fixed_by_split_seed_and_stratified():
    a = load_dataset(DatasetSpec("wine"), test_size=0.3, split_seed=0)
    b = load_dataset(DatasetSpec("wine"), test_size=0.3, split_seed=0)
    c = load_dataset(DatasetSpec("wine"), test_size=0.3, split_seed=1)
    np.testing.assert_array_equal(a.sample_id, b.sample_id)
    assert not np.array_equal(a.sample_id, c.sample_id)
    full = np.bincount(skd.load_wine().target) / 178
    np.testing.assert_allclose(np.bincount(a.y_test) / len(a.y_test), full, atol=0.03)


def test_synthetic_size_and_classes_are_parameters():
    ds = load_dataset(
        DatasetSpec(
            "synthetic", {"n_samples": 500, "n_features": 7, "n_classes": 5, "n_informative": 4}
        ),
        test_size=0.2,
        split_seed=3,
    )
    assert ds.X_train.shape == (400, 7) and ds.X_test.shape == (100, 7)
    assert ds.n_classes == 5 and set(np.unique(ds.y_test)) == set(range(5))


def test_user_csv_with_string_target_keeps_class_names(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    frame = pl.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 5, n),
            "kind": rng.choice(["spam", "ham", "promo"], n),
        }
    )
    frame.write_csv(tmp_path / "mail.csv")
    ds = load_dataset(
        DatasetSpec("mail", {"path": str(tmp_path / "mail.csv"), "target": "kind"}),
        test_size=0.25,
        split_seed=0,
    )
    assert ds.class_names == ("ham", "promo", "spam")
    assert ds.feature_names == ("a", "b")
    names = np.array(ds.class_names)[ds.y_test]
    np.testing.assert_array_equal(names, frame["kind"].to_numpy()[ds.sample_id])


def test_user_parquet_relative_to_the_spec_folder(tmp_path):
    pl.DataFrame({"x": np.arange(40.0), "y": [0, 1] * 20}).write_parquet(tmp_path / "d.parquet")
    ds = load_dataset(
        DatasetSpec("d", {"path": "d.parquet", "target": "y"}),
        test_size=0.25,
        split_seed=0,
        base=tmp_path,
    )
    np.testing.assert_array_equal(ds.X_test[:, 0], ds.sample_id.astype(float))


def test_user_file_errors_name_the_problem(tmp_path):
    pl.DataFrame(
        {"x": [1.0, 2.0, 3.0, 4.0], "name": ["a", "b", "c", "d"], "y": [0, 1, 0, 1]}
    ).write_csv(tmp_path / "f.csv")
    pl.DataFrame(
        {
            "x": [1.0, 2.0, 3.0, 4.0],
            "when": [date(2020, 1, d) for d in range(1, 5)],
            "y": [0, 1, 0, 1],
        }
    ).write_parquet(tmp_path / "dated.parquet")
    spec = {"path": str(tmp_path / "f.csv")}
    with pytest.raises(InputError, match=r"column 'label' not found; available: 'x', 'name', 'y'"):
        load_dataset(DatasetSpec("f", {**spec, "target": "label"}), test_size=0.5, split_seed=0)
    with pytest.raises(InputError, match=r"\['when'\] are neither numeric nor categorical"):
        load_dataset(
            DatasetSpec("f", {"path": str(tmp_path / "dated.parquet"), "target": "y"}),
            test_size=0.5,
            split_seed=0,
        )
    with pytest.raises(InputError, match="file not found"):
        load_dataset(
            DatasetSpec("f", {"path": str(tmp_path / "nope.csv"), "target": "y"}),
            test_size=0.5,
            split_seed=0,
        )


# ----------------------------------------------------------- categorical features


def test_user_file_string_and_boolean_features_become_category_codes(tmp_path):
    frame = pl.DataFrame(
        {
            "colour": ["red", "blue", None, "green", "blue", "red"] * 5,
            "size": [1.5, 2.0, 3.0, None, 1.0, 2.5] * 5,
            "member": [True, False, True, True, None, False] * 5,
            "y": [0, 1, 0, 1, 0, 1] * 5,
        }
    )
    frame.write_parquet(tmp_path / "shop.parquet")
    ds = load_dataset(
        DatasetSpec("shop", {"path": str(tmp_path / "shop.parquet"), "target": "y"}),
        test_size=0.5,
        split_seed=0,
    )
    assert ds.feature_names == ("colour", "size", "member")
    assert ds.categories == (("blue", "green", "red"), None, ("false", "true"))
    np.testing.assert_array_equal(ds.categorical, [True, False, True])
    X = np.concatenate([ds.X_train, ds.X_test])
    ids = np.concatenate([np.setdiff1d(np.arange(30), ds.sample_id), ds.sample_id])
    codes = {"blue": 0.0, "green": 1.0, "red": 2.0, None: np.nan}
    expected = np.array([codes[v] for v in frame["colour"].to_list()])[ids]
    np.testing.assert_array_equal(X[:, 0], expected)
    member = {False: 0.0, True: 1.0, None: np.nan}
    np.testing.assert_array_equal(
        X[:, 2], [member[v] for v in np.array(frame["member"].to_list(), dtype=object)[ids]]
    )
    np.testing.assert_array_equal(X[:, 1], frame["size"].to_numpy()[ids])


def test_integer_coded_columns_declared_categorical_become_categories(tmp_path):
    frame = pl.DataFrame({"zip": [10115, 80331, 10115, 20095] * 5, "y": [0, 1] * 10})
    frame.write_csv(tmp_path / "z.csv")
    spec = {"path": str(tmp_path / "z.csv"), "target": "y"}
    plain = load_dataset(DatasetSpec("z", spec), test_size=0.5, split_seed=0)
    assert plain.categories == (None,)
    ds = load_dataset(
        DatasetSpec("z", {**spec, "categorical": ["zip"]}), test_size=0.5, split_seed=0
    )
    assert ds.categories == (("10115", "20095", "80331"),)
    codes = {10115: 0.0, 20095: 1.0, 80331: 2.0}
    np.testing.assert_array_equal(
        ds.X_test[:, 0], [codes[z] for z in frame["zip"].to_numpy()[ds.sample_id]]
    )
    with pytest.raises(InputError, match=r"column 'zap' not found; available: 'zip'"):
        load_dataset(
            DatasetSpec("z", {**spec, "categorical": ["zap"]}), test_size=0.5, split_seed=0
        )
    with pytest.raises(
        SpecError, match=r"categorical must be a list of column names\. Got 'zip'\."
    ):
        validate_dataset(DatasetSpec("z", {**spec, "categorical": "zip"}), "dataset 'z'")


@pytest.mark.skipif(
    importlib.util.find_spec("palmerpenguins") is None, reason="needs relcol[datasets]"
)
def test_penguins_are_read_from_the_csv_inside_the_package():
    ds = load_dataset(DatasetSpec("penguins"), test_size=0.3, split_seed=0)
    location = importlib.util.find_spec("palmerpenguins").submodule_search_locations[0]
    with open(Path(location) / "data" / "penguins.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 344 == len(ds.y_train) + len(ds.y_test)
    assert ds.class_names == ("Adelie", "Chinstrap", "Gentoo")
    assert ds.feature_names == (
        "island",
        "bill_length_mm",
        "bill_depth_mm",
        "flipper_length_mm",
        "body_mass_g",
        "sex",
        "year",
    )
    assert ds.categories[0] == ("Biscoe", "Dream", "Torgersen")
    assert ds.categories[5] == ("female", "male")
    np.testing.assert_array_equal(ds.categorical, [True, False, False, False, False, True, False])
    for i, row_id in enumerate(ds.sample_id):
        row = rows[row_id]
        assert ds.class_names[ds.y_test[i]] == row["species"]
        assert ds.categories[0][int(ds.X_test[i, 0])] == row["island"]
        sex = ds.X_test[i, 5]
        assert (row["sex"] == "NA") if np.isnan(sex) else ds.categories[5][int(sex)] == row["sex"]
        mass = ds.X_test[i, 4]
        assert (row["body_mass_g"] == "NA") if np.isnan(mass) else mass == float(row["body_mass_g"])


def test_penguins_without_the_package_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "palmerpenguins" else real(name, *a),
    )
    with pytest.raises(
        InputError, match=r"needs the palmerpenguins package.*pip install palmerpenguins"
    ):
        load_dataset(DatasetSpec("penguins"), test_size=0.3, split_seed=0)
