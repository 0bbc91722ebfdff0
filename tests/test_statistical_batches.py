"""The statistical layer a batch of models at a time (``model_batches``): the same tables,
to the bit, as one pass over every cell."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from relcol import report_tables
from relcol.analysis import _statistical
from relcol.analysis._statistical import model_batches


@pytest.mark.parametrize("compare", [None, "naive_bayes,lightgbm"])
def test_batches_of_models_give_the_tables_of_one_pass(tiny_warehouse, monkeypatch, compare):
    one = report_tables(tiny_warehouse, "tiny", bins=10, bootstrap=40, compare=compare)
    batches = []
    batched_models = model_batches

    def recorded(calibration, references):
        out = batched_models(calibration, references)
        batches.append(out)
        return out

    # the tiny study has 3 models of 24 cells each: with room for 30 cells, every batch
    # holds the references' cells and one other model, or the references alone
    monkeypatch.setattr(_statistical, "BATCH_CELLS", 30 if compare is None else 50)
    monkeypatch.setattr(_statistical, "model_batches", recorded)
    batched = report_tables(tiny_warehouse, "tiny", bins=10, bootstrap=40, compare=compare)
    assert len(batches[0]) > 1
    assert set(one) == set(batched)
    for name in one:
        assert_frame_equal(batched[name], one[name], check_exact=True)


def test_model_batches_hold_the_references_and_every_model_once(monkeypatch):
    calibration = pl.DataFrame(
        {"model": ["a"] * 3 + ["b"] * 2 + ["c"] * 2 + ["d"] * 1, "n": [1] * 8}
    )
    monkeypatch.setattr(_statistical, "BATCH_CELLS", 6)
    assert model_batches(calibration, ("b",)) == [
        (["b", "a"], ["b", "a"]),
        (["c", "d"], ["b", "c", "d"]),
    ]
    # every pair of models, or a study that fits: one batch of everything
    assert model_batches(calibration, None) == [(["a", "b", "c", "d"],) * 2]
    monkeypatch.setattr(_statistical, "BATCH_CELLS", 8)
    assert model_batches(calibration, ("b",)) == [(["a", "b", "c", "d"],) * 2]


def test_batches_keep_the_order_of_one_pass_for_tables_in_any_order(tiny_warehouse, monkeypatch):
    # statistical_tables called directly, with its per-cell tables in no particular order
    from relcol.analysis import statistical_tables
    from relcol.workflows import _report_tables

    seen = {}

    def captured(rows, tables, **options):
        seen.update(rows=rows, tables=dict(tables), options=options)
        return statistical_tables(rows, tables, **options)

    monkeypatch.setattr(_report_tables, "statistical_tables", captured)
    report_tables(tiny_warehouse, "tiny", bins=10, bootstrap=30)
    tables = {
        name: table.sample(fraction=1.0, shuffle=True, seed=3)
        if name in ("calibration", "discrimination", "selective", "calibration_bins")
        else table
        for name, table in seen["tables"].items()
    }
    options = seen["options"] | {"replicates": 30}
    one = statistical_tables(seen["rows"], tables, **options)
    monkeypatch.setattr(_statistical, "BATCH_CELLS", 30)
    batched = statistical_tables(seen["rows"], tables, **options)
    assert set(one) == set(batched)
    for name in one:
        assert_frame_equal(batched[name], one[name], check_exact=True)
