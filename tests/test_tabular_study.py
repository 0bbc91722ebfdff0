"""The tabular example study (tests/data/tabular.toml): the Palmer penguins, with
categorical features, under the tabular operators, ingested end to end."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

import relcol
from relcol.data import DatasetSpec, load_dataset
from tests.conftest import TESTS

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("palmerpenguins") is None, reason="needs relcol[datasets]"
)
TABULAR = TESTS / "data" / "tabular.toml"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    wh = relcol.open_warehouse(tmp_path_factory.mktemp("tabular") / "warehouse")
    relcol.ingest(TABULAR, wh)
    return wh


def test_every_cell_is_stored_once_per_model_seed_repeat_and_test_row(warehouse):
    ds = load_dataset(DatasetSpec("penguins"), test_size=0.3, split_seed=0)
    models, seeds, corruptions, severities, repeats = 3, 2, 7, 4, 2
    rows = warehouse.sql("SELECT count(*) AS n FROM predictions")["n"].item()
    assert rows == models * seeds * corruptions * severities * repeats * len(ds.y_test)


def test_realised_rates_track_d_for_every_operator(warehouse):
    ds = load_dataset(DatasetSpec("penguins"), test_size=0.3, split_seed=0)
    numeric, categorical = ~ds.categorical, ds.categorical
    observed = ~np.isnan(ds.X_test)
    eligible = {  # per draw, as each operator's docstring counts them
        "scaling": ds.X_test[:, numeric].size,
        "swapped_columns": 2 * len(ds.y_test),  # 5 numeric features with spread: 2 pairs
        "outliers": (observed & numeric).sum(),
        "categorical_shift": (observed & categorical).sum(),
        "mcar": ds.X_test.size,
        "label_transition": len(ds.y_test),
        "label_flip": len(ds.y_test),
    }
    rates = warehouse.sql(
        "SELECT corruption, severity, avg(realised_rate) AS r, count(*) AS draws "
        "FROM corruptions WHERE severity > 0 GROUP BY ALL"
    )
    assert rates.height == 7 * 3
    for corruption, d, r, draws in rates.iter_rows():
        n = eligible[corruption] * draws
        assert abs(r - d) <= 4 * math.sqrt(d * (1 - d) / n), (corruption, d, r)


def test_only_the_label_operators_change_labels(warehouse):
    changed = warehouse.sql(
        "SELECT corruption, avg((y_true <> y_clean)::DOUBLE) AS share FROM predictions "
        "WHERE severity = 0.5 GROUP BY ALL"
    )
    share = dict(changed.iter_rows())
    for corruption in ("scaling", "swapped_columns", "outliers", "categorical_shift", "mcar"):
        assert share[corruption] == 0.0
    logged = warehouse.sql(
        "SELECT corruption, avg(changed_share) AS c FROM corruptions WHERE severity = 0.5 "
        "GROUP BY ALL"
    )
    logged = dict(logged.iter_rows())
    for corruption in ("label_transition", "label_flip"):
        assert share[corruption] == pytest.approx(logged[corruption], abs=1e-12)
