"""The per-cell sort of the sufficient statistics and the bootstrap (``cell_sorted``): the
compiled radix sort gives Polars' stable multi-column sort row for row, and falls back to it
where its keys do not fit."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from relcol.metrics import cell_sorted
from relcol.metrics._sorting import _compiled_order

TIES = ("sample_id", "seed", "repeat")
#: Scores with every ordering hazard: ±0, ±inf, subnormals, ties, negative values.
HAZARDS = np.array([0.0, -0.0, 0.25, 0.5, 1.0, 1e-300, 5e-324, np.inf, -np.inf, -0.5, 0.7])


def polars_sorted(frame: pl.DataFrame, ties, descending: bool) -> pl.DataFrame:
    by = ["cell", "c", *ties]
    return frame.sort(
        by, descending=[False] + [descending] * len(ties) + [descending], maintain_order=True
    )


def random_rows(
    rng: np.random.Generator, n: int, cells: int, *, hazards: bool, wide: bool
) -> pl.DataFrame:
    scores = rng.choice(HAZARDS, n) if hazards else rng.random(n).round(int(rng.integers(1, 4)))
    return pl.DataFrame(
        {
            "cell": rng.integers(0, cells, n).astype(np.uint32),
            "c": scores,
            "sample_id": rng.integers(-5, 40, n) * (2**40 if wide else 1),
            "seed": rng.integers(0, 3, n).astype(np.int32),
            "repeat": rng.integers(0, 2, n).astype(np.int32),
            "row": np.arange(n),
        }
    )


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("ties", [(), ("sample_id",), TIES])
def test_the_compiled_sort_gives_polars_stable_order(descending, ties):
    rng = np.random.default_rng(7)
    for trial in range(60):
        rows = random_rows(
            rng,
            int(rng.integers(0, 200)),
            int(rng.integers(1, 6)),
            hazards=trial % 2 == 1,
            wide=trial % 3 == 0,
        )
        got = cell_sorted(rows, "cell", "c", ties, descending=descending)
        assert got["row"].to_list() == polars_sorted(rows, ties, descending)["row"].to_list()
        if rows.height >= 2:  # these keys fit: the compiled sort ran
            assert _compiled_order(rows, "cell", "c", list(ties), descending) is not None


def test_rows_equal_in_every_key_keep_their_order():
    rows = pl.DataFrame(
        {
            "cell": [0] * 6,
            "c": [0.5, 0.5, 0.2, 0.5, -0.0, 0.0],
            "sample_id": [1] * 6,
            "row": range(6),
        }
    )
    assert cell_sorted(rows, "cell", "c", ["sample_id"])["row"].to_list() == [4, 5, 2, 0, 1, 3]
    assert cell_sorted(rows, "cell", "c", ["sample_id"], descending=True)["row"].to_list() == [
        0,
        1,
        3,
        2,
        4,
        5,
    ]


def test_many_rows_sorted_on_several_threads():
    """Above the threaded size the cells are shared among threads; one cell of them all too."""
    rng = np.random.default_rng(3)
    n = 150_000
    rows = random_rows(rng, n, 37, hazards=False, wide=False).with_columns(
        c=pl.Series(rng.random(n).astype(np.float32).astype(np.float64))  # Float32 ties
    )
    for frame in (rows, rows.with_columns(cell=pl.lit(0, pl.UInt32))):
        for descending in (False, True):
            got = cell_sorted(frame, "cell", "c", TIES, descending=descending)
            assert got["row"].to_list() == polars_sorted(frame, TIES, descending)["row"].to_list()


def test_a_frame_of_many_chunks_is_sorted_as_one():
    """A frame read from many row groups comes in chunks; it is rechunked before the gather,
    and its rows come out in the order of the same rows in one chunk."""
    rows = random_rows(np.random.default_rng(4), 3000, 5, hazards=True, wide=False)
    chunked = pl.concat([rows.slice(a, 250) for a in range(0, 3000, 250)], rechunk=False)
    assert chunked.n_chunks() == 12
    got = cell_sorted(chunked, "cell", "c", TIES, descending=True)
    assert got.equals(polars_sorted(rows, TIES, True))


def test_sparse_and_negative_cell_ids_are_numbered_first():
    rows = pl.DataFrame(
        {"cell": [10**12, -3, 10**12, -3, 7], "c": [0.1, 0.9, 0.8, 0.2, 0.5], "row": range(5)}
    )
    assert _compiled_order(rows, "cell", "c", [], False) is not None
    assert cell_sorted(rows, "cell", "c")["row"].to_list() == [3, 1, 4, 0, 2]


@pytest.mark.parametrize(
    "change",
    [
        {"c": [0.1, None, 0.3, 0.2]},  # a null score
        {"c": [0.1, float("nan"), 0.3, 0.2]},  # a NaN score
        {"sample_id": [1, None, 2, 3]},  # a null tie
        {"sample_id": [0, 2**62, -(2**62), 1], "seed": [0, 3, 1, 2]},  # ties wider than 64 bits
        {"sample_id": pl.Series([1, 2, 3, 4], dtype=pl.UInt64)},  # unsigned 64-bit ties
        {"sample_id": ["a", "b", "c", "d"]},  # non-integer ties
    ],
)
def test_keys_the_compiled_sort_cannot_take_fall_back_to_polars(change):
    rows = pl.DataFrame(
        {
            "cell": [1, 0, 1, 0],
            "c": [0.1, 0.2, 0.1, 0.4],
            "sample_id": [4, 3, 2, 1],
            "seed": [0, 0, 1, 1],
            "row": range(4),
        }
    ).with_columns(
        **{k: pl.Series(v) if not isinstance(v, pl.Series) else v for k, v in change.items()}
    )
    ties = ["sample_id", "seed"]
    assert _compiled_order(rows, "cell", "c", ties, True) is None
    for descending in (False, True):
        got = cell_sorted(rows, "cell", "c", ties, descending=descending)
        assert got.equals(polars_sorted(rows, ties, descending), null_equal=True)


@pytest.mark.parametrize("n, cells", [(0, 1), (1, 1), (500, 1), (2000, 37)])
def test_each_rows_place_in_its_cell_is_polars_window_over_the_sorted_rows(n, cells):
    """``sorted_rows``' ``r`` and ``n_cell``, read off the runs of equal cell ids, equal
    Polars' count and row number over each cell of the same sorted rows."""
    from relcol.metrics._frames import CELL_ID
    from relcol.metrics._statistics import _with_ranks

    rows = random_rows(np.random.default_rng(n), n, cells, hazards=False, wide=False)
    ordered = cell_sorted(rows.rename({"cell": CELL_ID}), CELL_ID, "c", TIES, descending=True)
    n_cell = pl.len().cast(pl.Int64).over(CELL_ID)
    expected = ordered.with_columns(
        r=n_cell - 1 - pl.int_range(pl.len(), dtype=pl.Int64).over(CELL_ID), n_cell=n_cell
    )
    got = _with_ranks(ordered)
    assert got.equals(expected)
    sizes = np.bincount(rows["cell"].to_numpy(), minlength=cells)
    assert got["n_cell"].sum() == int((sizes**2).sum())  # each row counts its cell's rows
    assert got.filter(pl.col("r") == 0).height == int((sizes > 0).sum())  # one last row each
