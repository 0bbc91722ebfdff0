"""Exact sums taken by compiled passes give Polars' ``exact_sum`` to the bit, and hand the
rows they cannot sum exactly to Polars: the classwise ECE's sums per cell × class × bin
(``_class_sums`` against the explosion and group-by of ``_class_entries``) and the effect
sizes' sums per cell × outcome (``_compiled_outcome_sums`` against ``_outcome_sums``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from relcol.metrics._discrimination import _compiled_outcome_sums, _moments, _outcome_sums
from relcol.metrics._frames import CELL_ID
from relcol.metrics._proba import _class_entries, _class_sums, class_statistics

KEY = [CELL_ID, "k", "bin"]


def vectors(rng: np.random.Generator, n: int, bins: int) -> list[list[float]]:
    """Vectors of 1–6 entries with every binning hazard: exact edges k/M (as Float32), their
    Float32 neighbours, 0, 1, subnormals and tiny values (whose low fixed-point part counts)."""
    edges = (np.arange(bins + 1) / bins).astype(np.float32)
    hazards = np.concatenate(
        [
            edges,
            np.nextafter(edges, np.float32(0)),
            np.nextafter(edges, np.float32(1)),
            np.array([0.0, 1.0, 1e-45, 1e-38, 3e-30, 1e-20], dtype=np.float32),
        ]
    )
    out = []
    for _ in range(n):
        size = int(rng.integers(1, 7))
        pick = rng.random(size) < 0.5
        entries = np.where(pick, rng.choice(hazards, size), rng.random(size).astype(np.float32))
        out.append(entries.astype(np.float32).tolist())
    return out


def rows(rng: np.random.Generator, n: int, bins: int, cells: int = 4) -> pl.DataFrame:
    return pl.DataFrame(
        {
            CELL_ID: rng.integers(0, cells, n).astype(np.uint32),
            "y": rng.integers(-1, 7, n),  # labels outside a vector count as probability 0
            "p": vectors(rng, n, bins),
        },
        schema={CELL_ID: pl.UInt32, "y": pl.Int64, "p": pl.List(pl.Float32)},
    )


def polars_sums(frame: pl.DataFrame, bins: int) -> pl.DataFrame:
    return _class_entries(frame.lazy(), bins, float32=True).collect().sort(KEY)


def compiled_only(monkeypatch) -> None:
    """Makes a fall-back to Polars fail the test."""
    import relcol.metrics._proba as proba

    monkeypatch.setattr(proba, "_class_entries", lambda *a, **k: pytest.fail("fell back"))


@pytest.mark.parametrize("bins", [1, 3, 10, 15])
def test_the_compiled_sums_have_polars_bits(bins, monkeypatch):
    rng = np.random.default_rng(bins)
    frame = rows(rng, 3000, bins)
    with monkeypatch.context() as m:
        compiled_only(m)
        got = _class_sums(frame, bins).sort(KEY)
    assert got.schema == polars_sums(frame, bins).schema
    assert got.equals(polars_sums(frame, bins))
    assert got["n"].sum() == frame["p"].list.len().sum()


def test_a_slice_and_many_entries_shared_among_threads(monkeypatch):
    """Rows in more than one share, and a frame that is a slice of a larger one (its vectors'
    offsets do not start at 0)."""
    rng = np.random.default_rng(5)
    import relcol.metrics._proba as proba

    frame = pl.concat(
        [rows(rng, 20_000, 15, cells=9), rows(rng, 20_000, 15, cells=9)], rechunk=False
    )
    frame = frame[1234:]
    assert frame.n_chunks() == 2
    assert frame["p"].slice(100, 10).to_arrow().offsets[0].as_py() > 0  # a block's offsets
    for entries in (1 << 22, 1000):  # one block; blocks that cross the chunks
        with monkeypatch.context() as m:
            compiled_only(m)
            m.setattr(proba, "_BLOCK_ENTRIES", entries)
            got = _class_sums(frame, 15).sort(KEY)
        assert got.equals(polars_sums(frame, 15))


def test_a_block_it_cannot_sum_sends_every_row_to_polars(monkeypatch):
    """An entry above 1 in the last block: the blocks summed before it are dropped."""
    import relcol.metrics._proba as proba

    frame = rows(np.random.default_rng(2), 5000, 15)
    frame = pl.concat(
        [frame, frame.head(1).with_columns(p=pl.lit([0.5, 1.25], pl.List(pl.Float32)))]
    )
    monkeypatch.setattr(proba, "_BLOCK_ENTRIES", 500)
    assert _class_sums(frame, 15).sort(KEY).equals(polars_sums(frame, 15))


def test_class_statistics_drops_rows_without_a_vector_first():
    frame = pl.DataFrame(
        {CELL_ID: [0, 0, 1, 1], "y": [0, 1, 1, 0], "p": [[0.25, 0.75], [], None, [1.0, 0.0]]},
        schema={CELL_ID: pl.UInt32, "y": pl.Int64, "p": pl.List(pl.Float32)},
    )
    got = class_statistics(frame.lazy(), 2).collect().sort(KEY)
    # by hand: cell 0 row 0 (y = 0): class 0 p = 0.25 in bin 0, error 0.75; class 1 p = 0.75
    # in bin 1, error −0.75; cell 1 row 3 (y = 0): class 0 p = 1 in bin 1, error 0; class 1
    # p = 0 in bin 0, error 0
    assert got.rows() == [
        (0, 0, 0, 1, 0.75),
        (0, 1, 1, 1, -0.75),
        (1, 0, 1, 1, 0.0),
        (1, 1, 0, 1, 0.0),
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"p": [[0.5, None], [0.2, 0.8]]},  # a null entry
        {"p": [[1.5, -0.5], [0.2, 0.8]]},  # entries outside [0, 1]
        {"y": [None, 1]},  # a null label
    ],
)
def test_rows_the_compiled_pass_cannot_sum_exactly_go_to_polars(change):
    base = {CELL_ID: [0, 1], "y": [0, 1], "p": [[0.5, 0.5], [0.2, 0.8]]} | change
    frame = pl.DataFrame(base, schema={CELL_ID: pl.UInt32, "y": pl.Int64, "p": pl.List(pl.Float32)})
    got = _class_sums(frame, 4).sort(KEY, nulls_last=True)
    want = _class_entries(frame.lazy(), 4, float32=True).collect().sort(KEY, nulls_last=True)
    assert got.equals(want, null_equal=True)


def test_a_nan_entry_goes_to_polars_and_its_error():
    frame = pl.DataFrame(
        {CELL_ID: [0, 1], "y": [0, 1], "p": [[0.5, float("nan")], [0.2, 0.8]]},
        schema={CELL_ID: pl.UInt32, "y": pl.Int64, "p": pl.List(pl.Float32)},
    )
    with pytest.raises(pl.exceptions.InvalidOperationError, match="NaN"):
        _class_entries(frame.lazy(), 4, float32=True).collect()
    with pytest.raises(pl.exceptions.InvalidOperationError, match="NaN"):
        _class_sums(frame, 4)


def test_more_groups_than_the_compiled_pass_holds_go_to_polars(monkeypatch):
    import relcol.metrics._proba as proba

    frame = rows(np.random.default_rng(11), 500, 15)
    monkeypatch.setattr(proba, "_CLASS_GROUPS", 10)
    calls = []
    monkeypatch.setattr(
        proba, "_class_entries", lambda *a, **k: calls.append(1) or _class_entries(*a, **k)
    )
    got = _class_sums(frame, 15).sort(KEY)
    assert calls and got.equals(polars_sums(frame, 15))


OUTCOME_KEY = [CELL_ID, "z"]


def scored(rng: np.random.Generator, n: int, cells: int, scores: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame(
        {
            CELL_ID: rng.integers(0, cells, n).astype(np.uint32),
            "z": (rng.random(n) < 0.6).astype(np.float64),
            "c": scores,
        },
        schema={CELL_ID: pl.UInt32, "z": pl.Float64, "c": pl.Float64},
    )


def polars_outcomes(frame: pl.DataFrame) -> pl.DataFrame:
    return _outcome_sums(frame.lazy()).collect().sort(OUTCOME_KEY)


def compiled_outcomes(frame: pl.DataFrame, monkeypatch) -> pl.DataFrame:
    import relcol.metrics._discrimination as discrimination

    schema = _outcome_sums(frame.lazy()).collect_schema()
    with monkeypatch.context() as m:
        m.setattr(discrimination, "_outcome_sums", lambda *a: pytest.fail("fell back"))
        return _compiled_outcome_sums(frame, schema).sort(OUTCOME_KEY)


@pytest.mark.parametrize("kind", ["confidence", "ties", "negative", "tiny"])
def test_the_compiled_outcome_sums_have_polars_bits(kind, monkeypatch):
    """Confidences; few distinct values; negative scores (−entropy of up to 1000 classes);
    values whose low fixed-point part counts."""
    rng = np.random.default_rng(len(kind))
    n = 5000
    scores = {
        "confidence": rng.random(n),
        "ties": rng.choice([0.1, 0.5, 0.7, 1.0], n),
        "negative": -rng.random(n) * np.log(1000),
        "tiny": rng.random(n) * 1e-25,
    }[kind]
    frame = scored(rng, n, 7, scores)
    got = compiled_outcomes(frame, monkeypatch)
    assert got.schema == polars_outcomes(frame).schema
    assert got.equals(polars_outcomes(frame))


def test_cells_of_one_outcome_and_of_one_value(monkeypatch):
    frame = pl.DataFrame(
        {
            CELL_ID: [0, 0, 0, 1, 1, 2],
            "z": [1.0, 1.0, 1.0, 0.0, 1.0, 0.0],
            "c": [0.3, 0.3, 0.3, 0.2, 0.9, 0.4],
        },
        schema={CELL_ID: pl.UInt32, "z": pl.Float64, "c": pl.Float64},
    )
    assert compiled_outcomes(frame, monkeypatch).equals(polars_outcomes(frame))


def test_the_effect_sizes_from_the_compiled_sums_match_numpy():
    """cohens_d and point_biserial of one cell against numpy's means and variances."""
    rng = np.random.default_rng(4)
    c = rng.random(2000)
    z = (rng.random(2000) < c).astype(np.float64)
    frame = pl.DataFrame({CELL_ID: np.zeros(2000, np.uint32), "z": z, "c": c})
    got = _moments(frame.lazy()).collect().row(0, named=True)
    right, wrong = c[z == 1], c[z == 0]
    pooled = np.sqrt((right.var(ddof=1) + wrong.var(ddof=1)) / 2)
    assert got["cohens_d"] == pytest.approx((right.mean() - wrong.mean()) / pooled, rel=1e-12)
    assert got["point_biserial"] == pytest.approx(np.corrcoef(c, z)[0, 1], rel=1e-12)


@pytest.mark.parametrize(
    "change",
    [
        {"z": [1.0, None, 0.0, 1.0]},  # a null outcome
        {"z": [1.0, 2.0, 0.0, 1.0]},  # an outcome other than 0 or 1
        {"c": [0.1, 1e9, 0.3, 0.2]},  # terms whose sums could pass 2⁶³
        {CELL_ID: [0, 10**6, 0, 10**6]},  # sparse cell ids
    ],
)
def test_rows_the_compiled_outcome_sums_cannot_take_go_to_polars(change):
    base = {CELL_ID: [0, 1, 0, 1], "z": [1.0, 0.0, 0.0, 1.0], "c": [0.1, 0.2, 0.3, 0.2]} | change
    frame = pl.DataFrame(base, schema={CELL_ID: pl.UInt32, "z": pl.Float64, "c": pl.Float64})
    schema = _outcome_sums(frame.lazy()).collect_schema()
    got = _compiled_outcome_sums(frame, schema).sort(OUTCOME_KEY, nulls_last=True)
    want = polars_outcomes(frame.lazy().collect()).sort(OUTCOME_KEY, nulls_last=True)
    assert got.equals(want, null_equal=True)


def test_a_nan_score_goes_to_polars_and_its_error():
    frame = pl.DataFrame(
        {CELL_ID: [0, 1, 0, 1], "z": [1.0, 0.0, 0.0, 1.0], "c": [0.1, float("nan"), 0.3, 0.2]},
        schema={CELL_ID: pl.UInt32, "z": pl.Float64, "c": pl.Float64},
    )
    schema = _outcome_sums(frame.lazy()).collect_schema()
    with pytest.raises(pl.exceptions.InvalidOperationError, match="NaN"):
        _outcome_sums(frame.lazy()).collect()
    with pytest.raises(pl.exceptions.InvalidOperationError, match="NaN"):
        _compiled_outcome_sums(frame, schema)
