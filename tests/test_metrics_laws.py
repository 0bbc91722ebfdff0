"""Laws the metrics must obey (hypothesis), the counter-based generator, and how close the
bin-level ECE₀ comes to docs/metrics.md's per-row definition."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from relcol.metrics import _kernels as kernels
from relcol.metrics import (
    auroc,
    calibration,
    harmonic,
    hash32,
    metric_tables,
    normal,
    stream_key,
    uniform,
)
from relcol.metrics._kernels import _harmonic_steps, harmonic_kernel
from relcol.store import connect_frame, sql_text
from relcol.store._sql import MACROS
from tests import reference
from tests import test_metrics as shared
from tests.test_metrics import long_table

rows = shared.rows  # fixture shared with test_metrics.py: ~24k rows over 72 cells

confidences = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 0.5, 1 / 15, 7 / 25, 14 / 15, 0.9]),
)
predictions = st.lists(st.tuples(confidences, st.booleans()), min_size=1, max_size=80)


def frame_of(data: list[tuple[float, bool]]) -> pl.DataFrame:
    """Rows with the long table's columns (one cell, sample ids in order, no vectors)."""
    confidence, correct = zip(*data, strict=True)
    return long_table(list(confidence), list(correct))


def tables_of(frame: pl.DataFrame, bins: int, draws: int = 20) -> dict[str, dict]:
    tables = metric_tables(frame, (), bins=bins, draws=draws)
    names = ("calibration", "discrimination", "selective")
    frames = pl.collect_all(tables[name] for name in names)
    return {name: out.row(0, named=True) for name, out in zip(names, frames, strict=True)}


# Laws --------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=predictions, bins=st.integers(1, 40))
def test_the_brier_decomposition_adds_up(data, bins):
    frame = frame_of(data)
    cell = tables_of(frame, bins)["calibration"]
    parts = (
        cell["brier_reliability"]
        - cell["brier_resolution"]
        + cell["brier_uncertainty"]
        + cell["brier_within"]
    )
    assert math.isclose(cell["brier_top"], parts, rel_tol=0, abs_tol=1e-12)
    assert cell["brier_reliability"] >= 0 and cell["brier_resolution"] >= -1e-15
    assert math.isclose(cell["rmsce"] ** 2, cell["brier_reliability"], abs_tol=1e-12)


def test_the_brier_decomposition_adds_up_in_sql(rows, tmp_path):
    table = connect_frame(tmp_path, rows).sql("SELECT * FROM calibration").pl()
    parts = table.select(
        pl.col("brier_reliability")
        - pl.col("brier_resolution")
        + pl.col("brier_uncertainty")
        + pl.col("brier_within")
    ).to_series()
    np.testing.assert_allclose(table["brier_top"], parts, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=predictions, bins=st.integers(1, 40))
def test_calibration_errors_lie_in_zero_one(data, bins):
    cell = tables_of(frame_of(data), bins)["calibration"]
    for name in ("ece", "ace", "mce", "rmsce", "ece_debiased", "ece_null", "ece_pvalue"):
        assert -1e-15 <= cell[name] <= 1 + 1e-15, name
    assert cell["ece"] <= cell["mce"] + 1e-12
    assert cell["ece"] <= cell["rmsce"] + 1e-12  # the mean of |gap| ≤ its root mean square
    assert math.isclose(cell["ece_excess"], cell["ece"] - cell["ece_null"], abs_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=predictions)
def test_auroc_flips_with_correctness(data):
    frame = frame_of(data)
    flipped = frame.with_columns(~pl.col("correct"))
    for table in (
        lambda f: f.select(auroc()).item(),
        lambda f: tables_of(f, 15)["discrimination"]["auroc"],
    ):
        a, b = table(frame), table(flipped)
        if a is None:
            assert b is None
        else:
            assert math.isclose(a + b, 1.0, abs_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=predictions)
def test_selective_prediction_laws(data):
    cell = tables_of(frame_of(data), 15)["selective"]
    assert cell["e_aurc"] >= -1e-12  # no ranking beats the perfect one
    assert 0.0 <= cell["aurc_optimal"] <= cell["aurc"] + 1e-12 <= 1.0 + 1e-12
    assert 0.0 <= cell["coverage_at_risk"] <= 1.0 and 0.0 <= cell["risk_at_coverage"] <= 1.0


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(100, 3000),
    shape=st.sampled_from([(20.0, 1.0), (5.0, 2.0), (2.0, 2.0), (1.0, 1.0)]),
)
def test_ece_null_of_calibrated_data_is_close_to_its_ece(seed, n, shape):
    # z ~ Bernoulli(c): the model is calibrated, so its ECE is one draw of the distribution
    # ECE₀ is the mean of. With 400 draws, that mean is within a few of its SDs of the ECE.
    rng = np.random.default_rng(seed)
    confidence = rng.beta(*shape, n)
    frame = long_table(confidence, rng.random(n) < confidence)
    cell = calibration(frame, (), draws=400).collect().row(0, named=True)
    assert 0.4 * cell["ece_null"] < cell["ece"] < 2.2 * cell["ece_null"]
    assert cell["ece_pvalue"] > 0.0


def test_ece_null_flags_miscalibration():
    rng = np.random.default_rng(5)
    confidence = rng.uniform(0.6, 1.0, 2000)
    frame = long_table(confidence, rng.random(2000) < confidence - 0.15)  # overconfident
    cell = calibration(frame, ()).collect().row(0, named=True)
    # no draw reaches the observed ECE: p = (0 + 1)/(100 + 1), the smallest p of 100 draws
    assert cell["ece_excess"] > 0.1 and cell["ece_pvalue"] == 1 / 101


def calibration_both(frame: pl.DataFrame, tmp_path, draws: int) -> list[dict]:
    """The one cell's calibration row by Polars and by the SQL macro, at ``draws`` draws."""
    polars = calibration(frame, (), draws=draws).collect().row(0, named=True)
    con = connect_frame(tmp_path, frame)
    sql = con.sql(f"SELECT * FROM calibration(draws := {draws})").pl().row(0, named=True)
    con.close()
    return [polars, sql]


def test_ece_pvalue_is_draws_reaching_the_ece_plus_one_over_draws_plus_one(tmp_path):
    # R = 1: p = (b + 1)/2 with b = 1 if the one draw reaches the observed ECE, else 0
    overconfident = long_table(np.full(200, 0.95), np.zeros(200, dtype=bool))  # ECE .95
    exact = long_table(np.full(200, 0.5), np.arange(200) % 2 == 0)  # ECE 0: every draw ≥ it
    for frame, p in ((overconfident, 0.5), (exact, 1.0)):
        for cell in calibration_both(frame, tmp_path / str(p), draws=1):
            assert cell["ece_pvalue"] == p


def copies(frame: pl.DataFrame, k: int) -> pl.DataFrame:
    """Every row of ``frame`` stored ``k`` times, as repeats 0…k − 1 (one event each)."""
    return pl.concat([frame.with_columns(repeat=pl.lit(r, pl.Int32)) for r in range(k)])


def test_k_copies_of_events_have_the_ece_null_of_the_events_alone(tmp_path):
    # Each copy of an event has the same outcome, so every simulated Zₘ − Sₘ of the copied
    # cell is k times that of the events alone, as is n: the same ECE_r, draw for draw, in
    # small bins (k·Bernoulli per event) and large ones (√(k²·V) = k·√V) alike.
    rng = np.random.default_rng(13)
    confidence = np.r_[rng.beta(5, 2, 400), rng.uniform(0.0, 0.2, 12)]  # large and small bins
    events = long_table(confidence, rng.random(412) < confidence)
    copied = copies(events, 4)
    alone = calibration_both(events, tmp_path / "alone", draws=200)
    for cell in calibration_both(copied, tmp_path / "copied", draws=200):
        for name in ("ece", "ece_null", "ece_excess", "ece_pvalue"):
            assert cell[name] == pytest.approx(alone[0][name], abs=1e-12), name
    # drawn once per row instead, four copies look like 4 × 412 independent trials:
    # the floor shrinks by about √4 and the same ECE looks significant
    per_row = calibration(copied, (), draws=200, events=()).collect().row(0, named=True)
    assert per_row["ece_null"] < 0.6 * alone[0]["ece_null"]
    assert per_row["ece_pvalue"] < alone[0]["ece_pvalue"]


def test_a_small_bin_draws_one_outcome_per_event_counted_k_times(tmp_path):
    # one bin, c = .5: event a stored 3 times, event b once; n = 4, S = 2.
    # Z = 3·zₐ + z_b ∈ {0, 1, 3, 4}: ECE_r = |Z − 2|/4 = .5 when zₐ = z_b, else .25,
    # so ECE₀ = (.5 + .25)/2 = .375 (four independent rows: E|Bin(4, .5) − 2|/4 = .1875)
    a = copies(long_table([0.5], [True]), 3)
    frame = pl.concat([a, long_table([0.5], [False], sample_id=np.array([1]))])
    expected = reference.ece_null(
        frame["confidence"].to_numpy(),
        frame["correct"].to_numpy(),
        15,
        4000,
        [frame[name].to_numpy() for name in ("sample_id", "seed", "y_pred")],
    )
    for cell in calibration_both(frame, tmp_path, draws=4000):
        assert cell["ece_null"] == pytest.approx(expected["ece_null"], abs=1e-12)
        assert cell["ece_null"] == pytest.approx(0.375, abs=3 * 0.125 / math.sqrt(4000))
        # observed: Σz = 3·1 + 0 = 3, ECE .25, reached by every draw
        assert cell["ece"] == 0.25 and cell["ece_pvalue"] == 1.0


@pytest.mark.parametrize("levels", [7, 10**6])
def test_the_events_read_off_the_sorted_rows_are_those_of_all_rows(levels):
    # the copies of an event share its cell and confidence, so grouping only the runs of equal
    # (cell, confidence) in the sorted rows finds every event stored twice or more: against a
    # group-by of all rows, with confidences tied across events and cells (7 levels), mostly
    # distinct ones, copies as repeats, predictions that differ between repeats, ±0.0 and
    # null confidences
    from relcol.metrics._bins import ORDER
    from relcol.metrics._frames import CELL_ID
    from relcol.metrics._null import EVENT, event_columns, event_keys, event_statistics
    from relcol.metrics._statistics import sorted_rows

    rng = np.random.default_rng(levels)
    n = 3000
    c = rng.integers(0, levels, n) / max(levels - 1, 1)
    c[rng.random(n) < 0.05] = -0.0
    rows = pl.DataFrame(
        {
            CELL_ID: rng.integers(0, 4, n).astype(np.uint32),
            "c": np.repeat(c[: n // 3], 3),  # each sample's three repeats share a confidence
            "z": rng.integers(0, 2, n).astype(np.float64),
            "o0": np.repeat(np.arange(n // 3), 3),  # sample_id
            "o1": np.zeros(n, dtype=np.int32),  # seed
            "o2": np.tile(np.arange(3, dtype=np.int32), n // 3),  # repeat
        }
    ).with_columns(e2=pl.Series(rng.integers(0, 2, n), dtype=pl.Int32))  # y_pred
    rows = rows.with_columns(
        pl.col(CELL_ID).shuffle(seed=1).alias(CELL_ID),
        c=pl.when(pl.col("o0") % 50 == 0).then(None).otherwise("c"),  # a null is a key too
    )
    want = (
        rows.group_by(CELL_ID, "c", "o0", "o1", "e2")
        .agg(k=pl.len().cast(pl.Int64))
        .filter(pl.col("k") > 1)
        .select(CELL_ID, "c", "k")
        .sort(CELL_ID, "c", "k")
    )
    # sample_id and seed are tie-breaking columns too: the sorted rows carry them once
    assert (list(event_columns(EVENT, ORDER)), event_keys(EVENT, ORDER)) == (
        ["e2"],
        ["o0", "o1", "e2"],
    )
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=2).lazy()
    ordered = sorted_rows(shuffled, 3, list(event_columns(EVENT, ORDER)))
    got = event_statistics(ordered, 15, event_keys(EVENT, ORDER))
    got = got.collect().select(CELL_ID, "c", "k")
    assert want.height > 50
    assert got.sort(CELL_ID, "c", "k").equals(want)


# The bin-level ECE₀ against docs/metrics.md's per-row Bernoulli draws -------------------------------


def per_row_ece_null(
    confidence: np.ndarray, bins: int, draws: int, seed: int
) -> tuple[float, float]:
    """ECE₀ by the definition: zᵢ ~ Bernoulli(cᵢ) for every row, R times; (mean, its SE)."""
    rng = np.random.default_rng(seed)
    b = reference.bin_searchsorted(confidence, bins)
    sums = np.bincount(b, weights=confidence, minlength=bins)
    eces = np.empty(draws)
    for r in range(draws):
        z = (rng.random(len(confidence)) < confidence).astype(np.float64)
        eces[r] = np.abs(np.bincount(b, weights=z, minlength=bins) - sums).sum() / len(confidence)
    return float(eces.mean()), float(eces.std(ddof=1) / math.sqrt(draws))


LAWS = {
    "peaked (Beta(20, 1))": lambda rng, n: rng.beta(20, 1, n),
    "spread (Beta(2, 2))": lambda rng, n: rng.beta(2, 2, n),
    "kNN-like (k/25)": lambda rng, n: rng.integers(8, 26, n) / 25,
}


@pytest.mark.parametrize("law", list(LAWS))
@pytest.mark.parametrize("n", [30, 300, 3000])
def test_bin_level_ece_null_is_within_4_percent_of_per_row_draws(law, n):
    rng = np.random.default_rng(n)
    confidence = LAWS[law](rng, n)
    exact, error = per_row_ece_null(confidence, 15, 3000, seed=n)
    frame = long_table(confidence, np.ones(n, dtype=bool))
    approx = calibration(frame, (), draws=3000, proba=None).collect()["ece_null"].item()
    # 3000 draws each: the two Monte Carlo errors are ~0.5 % of ECE₀ apiece
    assert abs(approx - exact) / exact < 0.04, (approx, exact, error)


# The generator ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generator_sql():
    con = duckdb.connect()
    for name in MACROS[: MACROS.index("uniform") + 1]:
        con.execute(sql_text(f"macros/{name}.sql"))
    return con


def test_hash_is_the_same_bits_in_polars_sql_and_numpy(generator_sql):
    rng = np.random.default_rng(0)
    keys = pl.DataFrame(
        {
            "a": rng.integers(-(2**62), 2**62, 20_000),
            "b": rng.integers(0, 100, 20_000),
            "c": np.r_[rng.integers(-5, 2**40, 19_998), [-(2**63), 2**63 - 1]],
            "d": np.arange(20_000),
        }
    )
    polars = keys.select(h=hash32("a", "b", "c", "d"), u=uniform("a", "b", "c", "d"))
    sql = generator_sql.sql(
        "SELECT hash32(a, b, c, d) AS h, uniform(a, b, c, d) AS u FROM keys"
    ).pl()
    assert polars.equals(sql)
    numpy = reference.hash32(*(keys[k].to_numpy() for k in "abcd"))
    np.testing.assert_array_equal(polars["h"].to_numpy(), numpy)
    assert polars["h"].min() >= 0 and polars["h"].max() < 2**32
    assert 0 < polars["u"].min() and polars["u"].max() < 1


def test_uniforms_are_uniform_and_independent():
    n = 200_000
    j = pl.DataFrame({"j": np.arange(n)})
    for keys in [(1, 0, 0, "j"), (1, 0, "j", 0), (1, "j", 0, 0), ("j", 0, 0, 0), (2, 3, 1, "j")]:
        u = j.select(uniform(*keys)).to_series().to_numpy()
        counts = np.histogram(u, bins=1000, range=(0, 1))[0]
        assert stats.chisquare(counts).pvalue > 1e-4, keys
        assert stats.kstest(u, "uniform").pvalue > 1e-4, keys
        for lag in (1, 2, 7, 64):  # neighbouring counters are uncorrelated
            assert abs(np.corrcoef(u[:-lag], u[lag:])[0, 1]) < 4 / math.sqrt(n), (keys, lag)
        pairs = np.histogram2d(u[:-1], u[1:], bins=40, range=[[0, 1], [0, 1]])[0].ravel()
        assert stats.chisquare(pairs).pvalue > 1e-4, keys  # and jointly uniform


def test_normal_is_standard_and_the_same_in_sql(generator_sql):
    frame = pl.DataFrame({"draw": np.arange(100_000)})
    polars = frame.select(normal(2, 5, "draw")).to_series().to_numpy()
    assert abs(polars.mean()) < 0.015 and abs(polars.std() - 1) < 0.01
    assert stats.kstest(polars, "norm").pvalue > 1e-4
    sql = generator_sql.sql(
        "SELECT sqrt(ln(uniform(2, 5, draw, 0)) * -2.0) * cos(uniform(2, 5, draw, 1) * 6.283185307179586e0) "
        "FROM frame"
    ).fetchnumpy()
    np.testing.assert_array_equal(next(iter(sql.values())), polars)


def test_harmonic_kernel_reads_counts_from_a_table_with_the_bits_of_the_steps():
    # weighted counts (whole, in any order, repeated; cells × replicates) take the table;
    # the formula's own steps on the same values are the reference, bit for bit, and so is
    # the Polars expression; a fraction, a NaN or a negative count takes the steps themselves
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 5000, (40, 1001)).astype(np.float64)
    counts[0, :3] = [0.0, -0.0, 4999.0]
    table = harmonic_kernel(counts)
    assert table.shape == counts.shape
    assert table.tobytes() == _harmonic_steps(counts).tobytes()
    polars = pl.select(harmonic(pl.Series(counts[1]))).to_series().to_numpy()
    assert table[1].tobytes() == polars.tobytes()
    for other in ([2.5, 3.0], [np.nan, 1.0], [-1.5, 2.0]):  # not -1: 1/(n + 1) ÷ 0
        other = np.array(other)
        np.testing.assert_array_equal(harmonic_kernel(other), _harmonic_steps(other))


def test_harmonic_kernel_keeps_one_table_for_the_process(monkeypatch):
    # a bootstrap's counts are larger than there are of them (a cell's weighted rows, one per
    # replicate): they read the process's table, grown when a larger count comes, up to its
    # limit; beyond it the steps themselves. Each value is checked against the steps on it
    # alone, so the table's bits cannot depend on where a value sat in the array it was
    # made from.
    monkeypatch.setattr(kernels, "_harmonic_table", np.zeros(1))
    monkeypatch.setattr(kernels, "HARMONIC_TABLE_MAX", 20_000)
    for top in (6, 4_238, 9_000, 19_999, 20_000):
        counts = np.array([top, 0.0, 1.0, top // 2], dtype=np.float64)
        got = harmonic_kernel(counts)
        alone = np.array([_harmonic_steps(np.array([c]))[0] for c in counts])
        assert got.tobytes() == alone.tobytes()
        assert top < len(kernels._harmonic_table) <= 20_001
    assert len(kernels._harmonic_table) == 20_001
    beyond = np.array([20_001.0, 3.0])
    assert harmonic_kernel(beyond).tobytes() == _harmonic_steps(beyond).tobytes()
    assert len(kernels._harmonic_table) == 20_001
    whole = kernels._harmonic_table
    assert (
        whole.tobytes()
        == np.concatenate(
            [_harmonic_steps(np.arange(a, a + 7, dtype=np.float64)) for a in range(0, 20_001, 7)]
        )[:20_001].tobytes()
    )


def test_stream_keys_are_fixed():
    assert stream_key("bootstrap:default") == 1941477685
    assert 0 <= stream_key("anything") < 2**31
    assert stream_key("a") != stream_key("b")


def test_harmonic_numbers_to_the_last_bits_in_both_engines():
    n = np.r_[np.arange(0, 300), [10**4, 10**6, 12_345_678, 2**40]]
    frame = pl.DataFrame({"n": n})
    polars = frame.select(harmonic(pl.col("n"))).to_series().to_numpy()
    con = duckdb.connect()
    con.execute(sql_text("macros/harmonic.sql"))
    sql = next(iter(con.sql("SELECT harmonic(n) FROM frame").fetchnumpy().values()))
    np.testing.assert_array_equal(polars, sql)
    exact = np.cumsum(np.r_[0.0, 1 / np.arange(1, 10**4 + 1, dtype=np.float64)])
    small = n[n <= 10**4]
    # (the running sum of the reference itself drifts by ~1e−15 per thousand terms)
    np.testing.assert_allclose(polars[: len(small)], exact[small], rtol=1e-14, atol=0)
    assert polars[0] == 0.0
