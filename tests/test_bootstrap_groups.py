"""The bootstrap's product per group of cells sharing their samples equals the one dense
product over a block's samples, bit for bit."""

from __future__ import annotations

import time

import numpy as np
import polars as pl
import pytest

from relcol.analysis import _bootstrap, bootstrap
from relcol.analysis._bootstrap import sample_groups, weight_columns
from tests.test_bootstrap import frame_of


def mixed_rows() -> pl.DataFrame:
    """Models a, b on one test set; c on a disjoint one; d on a set that shares a third of
    a's samples; e on a's samples but two."""
    rng = np.random.default_rng(21)
    shared = frame_of(rng, models=("a", "b"), samples=40)
    disjoint = frame_of(rng, models=("c",), samples=30).with_columns(
        sample_id=pl.col("sample_id") + 1_000_000
    )
    overlap = frame_of(rng, models=("d",), samples=60).with_columns(
        sample_id=pl.col("sample_id")
        + pl.when(pl.col("sample_id") < 20 * 7).then(0).otherwise(5_000)
    )
    most = frame_of(rng, models=("e",), samples=40).filter(~pl.col("sample_id").is_in([3, 10]))
    return pl.concat([shared, disjoint, overlap, most])


def assert_same_bits(got: _bootstrap.Replicates, want: _bootstrap.Replicates) -> None:
    """Every replicate, point estimate, per-bin value and per-seed value the same bits."""
    assert got.cells.equals(want.cells)
    for name in want.values:
        np.testing.assert_array_equal(got.values[name], want.values[name], err_msg=name)
        np.testing.assert_array_equal(got.points[name], want.points[name], err_msg=name)
    for binning in want.bins:
        np.testing.assert_array_equal(got.bins[binning], want.bins[binning])
        np.testing.assert_array_equal(got.bin_samples[binning], want.bin_samples[binning])
    assert got.seeds.equals(want.seeds)


def dense_groups(cell, sid, n_cells, n_samples):
    return [(np.arange(n_cells), np.arange(n_samples))]


def test_groups_follow_the_shared_samples():
    rows = mixed_rows()
    cells = rows.select("model", "severity").unique().sort("model", "severity")
    rows = rows.join(cells.with_row_index("cell"), on=["model", "severity"]).sort("cell")
    samples, sid = np.unique(rows["sample_id"].to_numpy(), return_inverse=True)
    cell = rows["cell"].to_numpy()
    groups = sample_groups(cell, sid, cells.height, len(samples))
    models = [sorted({cells["model"][int(c)] for c in g}) for g, _ in groups]
    # a, b and e on (nearly) one test set: one product over its 40 samples; d shares a
    # third of them but would more than double it: its own; c is disjoint
    assert models == [["a", "b", "e"], ["c"], ["d"]]
    assert [len(s) for _, s in groups] == [40, 30, 60]
    # every dense block is one group of everything
    dense = np.repeat(np.arange(3), 5), np.tile(np.arange(5), 3)
    [(all_cells, all_samples)] = sample_groups(dense[0], dense[1], 3, 5)
    assert all_cells.tolist() == [0, 1, 2] and all_samples.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch_entries", [None, 1], ids=["batches", "a-cell-a-batch"])
@pytest.mark.parametrize("chunk_rows", [10**9, 700])
def test_grouped_product_equals_the_dense_product(monkeypatch, chunk_rows, batch_entries, threads):
    # a cell a batch: each group's weights serve several batches, a thread's buffer grows
    # from a group of 40 samples to one of 60, and a and b's batches come back to their
    # group after c's and d's
    if batch_entries is not None:
        monkeypatch.setattr(_bootstrap, "BATCH_ENTRIES", batch_entries)
    monkeypatch.setattr(_bootstrap, "_threads", lambda: threads)
    rows = mixed_rows()
    seen = []

    def spy(*args):
        seen.append(len(groups := sample_groups(*args)))
        return groups

    monkeypatch.setattr(_bootstrap, "sample_groups", spy)
    grouped = bootstrap(rows, replicates=60, chunk_rows=chunk_rows)
    assert max(seen) > 1  # the grouped path ran
    monkeypatch.setattr(_bootstrap, "sample_groups", dense_groups)
    dense = bootstrap(rows, replicates=60, chunk_rows=chunk_rows)
    assert_same_bits(grouped, dense)
    # the replicates are not trivially equal: they vary, and c's differ from a's
    assert np.nanstd(grouped.values["accuracy"], axis=1).min() > 0


def test_a_thread_draws_a_groups_weights_once_for_its_run_of_batches(monkeypatch):
    # one thread, a cell a batch: the cells in order are a's, b's (group 0), c's (1), d's
    # (2), e's (group 0 again), so the groups' weights are drawn four times, not once per
    # cell (15 cells)
    monkeypatch.setattr(_bootstrap, "BATCH_ENTRIES", 1)
    monkeypatch.setattr(_bootstrap, "_threads", lambda: 1)
    drawn = []

    def spy(study, ids, replicates, **kwargs):
        drawn.append(len(ids))
        return weight_columns(study, ids, replicates, **kwargs)

    monkeypatch.setattr(_bootstrap, "weight_columns", spy)
    bootstrap(mixed_rows(), replicates=20)
    assert drawn == [40, 30, 60, 40]


@pytest.mark.parametrize(
    "streamed",
    [
        # every group streamed, each in one block of samples
        {"STREAM_ENTRIES": 0},
        # blocks of 3 samples, one cell per pass over them
        {"STREAM_ENTRIES": 0, "STREAM_BLOCK": 3 * 61, "STREAM_COUNTS": 1},
        # the groups of 40 and 60 samples streamed, the one of 30 multiplied whole
        {"STREAM_ENTRIES": 35 * 61, "STREAM_BLOCK": 7 * 61},
    ],
)
@pytest.mark.parametrize("levels", [1024, 8])
def test_streamed_groups_have_the_bits_of_w_whole(monkeypatch, streamed, levels):
    # A group of many samples never holds its weights whole: they are drawn a block at a
    # time where its product and rank counts use them, with the same bits
    rows = mixed_rows()
    whole = bootstrap(rows, replicates=60, levels=levels)
    drawn = []

    def spy(study, sample_ids, replicates, *, seed=0, out=None):
        drawn.append(len(sample_ids))
        return weight_columns(study, sample_ids, replicates, seed=seed, out=out)

    for name, value in streamed.items():
        monkeypatch.setattr(_bootstrap, name, value)
    monkeypatch.setattr(_bootstrap, "weight_columns", spy)
    blocks = bootstrap(rows, replicates=60, levels=levels)
    span = _bootstrap.STREAM_BLOCK // 61
    if streamed["STREAM_ENTRIES"]:
        assert sorted(drawn)[-1] == 30  # the group of 30, whole; the others in blocks
        assert sorted(drawn)[-2] <= span
    else:
        assert max(drawn) <= span
    assert_same_bits(blocks, whole)
    assert np.isfinite(blocks.values["brier"]).all() and np.isfinite(blocks.values["auroc"]).all()
    assert np.nanstd(blocks.values["auroc"], axis=1).min() > 0


def test_a_failing_share_of_a_streamed_group_stops_the_others(monkeypatch):
    # the samples' blocks are shared out over the cores; when one core fails the others stop
    # at their next block instead of finishing their share
    monkeypatch.setattr(_bootstrap, "STREAM_ENTRIES", 0)
    monkeypatch.setattr(_bootstrap, "STREAM_BLOCK", 61)  # one sample per block
    monkeypatch.setattr(_bootstrap, "_threads", lambda: 2)
    drawn = []

    def failing(study, sample_ids, replicates, *, seed=0, out=None):
        drawn.append(len(sample_ids))
        if len(drawn) == 3:
            raise MemoryError("a block failed")
        time.sleep(0.01)  # a block takes longer than the failure takes to be seen
        return weight_columns(study, sample_ids, replicates, seed=seed, out=out)

    monkeypatch.setattr(_bootstrap, "weight_columns", failing)
    rows = frame_of(np.random.default_rng(4), models=("a",), severities=(0.0,), samples=200)
    with pytest.raises(MemoryError, match="a block failed"):
        bootstrap(rows, replicates=60)
    # 200 blocks in two shares of 100: the other share stopped within a block or two
    assert len(drawn) <= 6


@pytest.mark.parametrize(("n_samples", "rows"), [(50, 300), (1000, 200), (7, 0), (1, 5)])
def test_a_streamed_groups_blocks_follow_the_samples_first_rows(n_samples, rows):
    # the samples in the order of their first row (those without one after, in order), each
    # row's place, the rows grouped by place in their order, and where each place starts:
    # what np.minimum.at and two stable argsorts give
    from relcol.analysis._compiled import first_row_order
    from relcol.metrics import rows_by_key

    rng = np.random.default_rng(n_samples + rows)
    sid = rng.integers(0, max(1, n_samples // 3), rows)  # repeated samples, and some unseen
    first = np.full(n_samples, rows)
    np.minimum.at(first, sid, np.arange(rows))
    order = np.argsort(first, kind="stable")
    place = np.empty(n_samples, dtype=np.int64)
    place[order] = np.arange(n_samples)
    by_place = np.argsort(place[sid], kind="stable")
    seen = int(np.count_nonzero(first < rows))
    got_order, row_place, got_seen = first_row_order(sid, n_samples)
    bounds, got_by_place = rows_by_key(row_place, got_seen)
    assert got_seen == seen == len(np.unique(sid))
    assert np.array_equal(got_order, order) and np.array_equal(row_place, place[sid])
    assert np.array_equal(got_by_place, by_place)
    assert np.array_equal(bounds, np.searchsorted(place[sid][by_place], np.arange(seen + 1)))


@pytest.mark.parametrize("size", [0, 1, 7, 5000])
def test_distinct_values_are_numpys_unique(size):
    # the groups' keys through a sort (numpy's own unique of integers is a hash table, slow
    # when most keys are distinct): the same sorted values, duplicates and negatives included
    rng = np.random.default_rng(size)
    values = rng.integers(-50, 3 * size + 1, size)
    got = _bootstrap._distinct(values)
    np.testing.assert_array_equal(got, np.unique(values))
    assert got.dtype == values.dtype
