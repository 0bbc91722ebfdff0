"""Exact sums taken by compiled passes give Polars' ``exact_sum`` to the bit, and hand the
rows they cannot sum exactly to Polars: the classwise ECE's sums per cell × class × bin
(``_class_sums`` against the explosion and group-by of ``_class_entries``), the effect
sizes' sums per cell × outcome (``_compiled_outcome_sums`` against ``_outcome_sums``) and
any sums per group (``exact_sums_by``, which the calibration bins and the rank metrics
use, against Polars' group-by of ``exact_sum``)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import polars as pl
import pytest

from relcol.metrics._bins import _bin_index
from relcol.metrics._discrimination import _compiled_outcome_sums, _moments, _outcome_sums
from relcol.metrics._exact import exact_sum, exact_sums_by, group_exact_sums
from relcol.metrics._frames import CELL_ID
from relcol.metrics._proba import _class_entries, _class_sums, class_statistics
from relcol.metrics._statistics import bin_sums, bin_terms, binned_sums

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


# Exact sums per group (``exact_sums_by``): the calibration bins' and the rank metrics' sums -----


def hazard_terms(rng: np.random.Generator, n: int) -> np.ndarray:
    """Terms with every fixed-point hazard: 0, ±0.0, subnormals and tiny values (whose low
    part counts), values near 1 and the clipped log loss's scale, exact halves of 2⁻⁶⁴."""
    hazards = np.array(
        [0.0, -0.0, 5e-324, 1e-300, 3e-30, -1e-20, 2.0**-65, 3 * 2.0**-65, 1 - 2**-53, 1.0, 36.04]
    )
    pick = rng.random(n) < 0.4
    return np.where(pick, rng.choice(hazards, n), rng.normal(0, 3, n))


def grouped(rng: np.random.Generator, n: int, groups: int) -> pl.DataFrame:
    keys = rng.integers(0, groups, n) * 3  # sparse ids
    return pl.DataFrame({"g": keys, "x": hazard_terms(rng, n), "y": hazard_terms(rng, n)})


def polars_grouped(frame: pl.DataFrame) -> pl.DataFrame:
    sums = [exact_sum(pl.col("x")).alias("sx"), exact_sum(pl.col("y")).alias("sy")]
    return frame.group_by("g").agg(pl.len().cast(pl.Int64).alias("n"), *sums).sort("g")


def by_exact_sums(frame: pl.DataFrame, monkeypatch, compiled: bool = True) -> pl.DataFrame:
    """``exact_sums_by`` of ``frame``, checking whether its compiled pass served."""
    import relcol.metrics._exact as exact

    served = []
    real = exact.group_exact_sums

    def watched(*args):
        out = real(*args)
        served.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(exact, "group_exact_sums", watched)
        out = exact_sums_by(frame.lazy(), "g", {"sx": "x", "sy": "y"}).collect().sort("g")
    assert any(served) == compiled
    return out


@pytest.mark.parametrize("chunks", [1, 7])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_grouped_sums_have_polars_bits(threads, chunks, monkeypatch):
    """In one chunk or several (as a frame read from row groups), cut into pieces shared
    among one or two threads."""
    import relcol.metrics._exact as exact

    frame = grouped(np.random.default_rng(threads), 20_000, 37)
    monkeypatch.setattr(exact, "_SHARE_ROWS", 20_000 // threads)
    monkeypatch.setattr(exact, "_PIECE_ROWS", 1_500)
    monkeypatch.setattr(exact, "available_cores", lambda: threads)
    cuts = np.linspace(0, frame.height, chunks + 1).astype(int)
    parts = [frame.slice(a, b - a) for a, b in pairwise(cuts)]
    frame = pl.concat(parts, rechunk=False)
    assert frame.n_chunks() == chunks
    got = by_exact_sums(frame, monkeypatch)
    assert got.equals(polars_grouped(frame))
    assert got.schema == polars_grouped(frame).schema
    # and a plain check of the sums: within an ulp or so of math.fsum per group
    import math

    for g, n, sx in got.select("g", "n", "sx").iter_rows():
        part = frame.filter(pl.col("g") == g)["x"].to_list()
        assert n == len(part)
        assert sx == pytest.approx(math.fsum(part), rel=1e-15, abs=1e-300)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"x": None}, id="a null term"),
        pytest.param({"g": -3}, id="a negative key"),
        pytest.param({"g": None}, id="a null key"),
        pytest.param({"x": 1e12}, id="a term too large to hold exactly"),
    ],
)
def test_rows_the_grouped_pass_cannot_sum_go_to_polars(change, monkeypatch):
    frame = grouped(np.random.default_rng(5), 2_000, 5)
    frame = frame.with_columns(
        **{
            name: pl.when(pl.int_range(pl.len()) == 7).then(value).otherwise(pl.col(name))
            for name, value in change.items()
        }
    )
    want = polars_grouped(frame).sort("g", nulls_last=True)
    got = by_exact_sums(frame, monkeypatch, compiled=False).sort("g", nulls_last=True)
    assert got.equals(want)


def test_a_nan_term_goes_to_polars_and_its_error(monkeypatch):
    frame = grouped(np.random.default_rng(6), 500, 5).with_columns(
        x=pl.when(pl.int_range(pl.len()) == 3).then(float("nan")).otherwise(pl.col("x"))
    )
    with pytest.raises(pl.exceptions.InvalidOperationError):
        polars_grouped(frame)
    with pytest.raises(pl.exceptions.InvalidOperationError):
        by_exact_sums(frame, monkeypatch, compiled=False)


def test_more_groups_than_the_grouped_pass_holds_go_to_polars(monkeypatch):
    import relcol.metrics._exact as exact

    frame = grouped(np.random.default_rng(7), 1_000, 50)
    monkeypatch.setattr(exact, "SUM_GROUPS", 100)
    assert by_exact_sums(frame, monkeypatch, compiled=False).equals(polars_grouped(frame))


@pytest.mark.parametrize("ranges", [False, True])
def test_the_bins_sums_have_the_group_bys_bits(ranges, monkeypatch):
    """``binned_sums`` (compiled) against ``bin_sums``' group-by, on confidences at and next
    to every bin edge, 0, 1 and ties, in several cells."""
    bins, n = 10, 5_000
    rng = np.random.default_rng(8)
    edges = np.arange(bins + 1) / bins
    hazards = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1)])
    c = np.clip(np.where(rng.random(n) < 0.5, rng.choice(hazards, n), rng.random(n)), 0, 1)
    frame = pl.DataFrame(
        {
            CELL_ID: rng.integers(0, 6, n).astype(np.uint32),
            "c": c,
            "z": (rng.random(n) < c).astype(np.float64),
        }
    ).with_columns(_bin_index("c", bins))
    terms = frame.with_columns(**bin_terms())
    bounds = {"bin_lower": pl.col("c").min(), "bin_upper": pl.col("c").max()} if ranges else {}
    want = terms.group_by(CELL_ID, "bin").agg(*bin_sums(), **bounds).sort(CELL_ID, "bin")
    got = binned_sums(frame.lazy(), bins, ranges=ranges).collect().sort(CELL_ID, "bin")
    assert got.select(want.columns).equals(want)
    assert got.select(want.columns).schema == want.schema


def test_the_grouped_pass_takes_writable_and_read_only_terms_together():
    """Arrow hands Polars' columns over read-only and numpy's arrays are writable; numba
    types a tuple of both as two kinds, so every term is passed read-only."""
    rng = np.random.default_rng(9)
    frozen = rng.random(100)
    frozen.flags.writeable = False
    group = rng.integers(0, 4, 100)
    got = group_exact_sums([(group, [rng.random(100), frozen])], 4, ["a", "b"]).sort("group")
    want = (
        pl.DataFrame({"group": group, "b": frozen})
        .group_by("group")
        .agg(pl.len().cast(pl.Int64).alias("n"), exact_sum(pl.col("b")))
        .sort("group")
    )
    assert got.select(want.columns).equals(want)
