"""The per-cell views stored at commit answer what computing them from the long table answers.

Every commit writes the rows of the views in ``STORED`` beside the study's parts (the curve's
counts, ``CURVE_COUNTS``, only where they are small beside the parts); a query then reads them
instead of the rows. These tests compute each view both ways on warehouses written by
a study ingest, by prediction files and by recalibration, at a bin count that is stored and one
that is not, and with the stored files removed or damaged.
"""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal
from relcol.cli import main

import relcol
from relcol.store import Warehouse
from relcol.store._sql import (
    CURVE_COUNTS,
    CURVE_SHARE,
    LEVEL_BYTES,
    STORED,
    STORED_BINS,
    UNSTORED,
    _settled,
    connect,
    needed,
)
from relcol.store._warehouse import stored_file
from tests.conftest import TINY
from tests.test_recalibration import overconfident, softmax_file

#: DuckDB sums in parallel, in an order that changes from one run to the next: the same view
#: computed twice from the same rows differs in the last bits (up to ~5e-12 absolute was seen
#: on 2.7 M rows). Keys, counts and every integer column are compared exactly.
TOLERANCE = {"rel_tol": 1e-9, "abs_tol": 1e-10}


def answer(sources: dict[str, list[str]], query: str, bins: int = STORED_BINS) -> pl.DataFrame:
    with connect(sources, bins=bins, query=query) as con:
        return pl.from_arrow(con.sql(query).to_arrow_table())


def from_rows(sources: dict[str, list[str]]) -> dict[str, list[str]]:
    """The same warehouse as if nothing were stored: every view computed from the rows."""
    return {k: v for k, v in sources.items() if not k.startswith("stored_")} | {
        source: sources["predictions"] for source in UNSTORED.values()
    }


def same(stored: pl.DataFrame, computed: pl.DataFrame) -> None:
    assert stored.columns == computed.columns and stored.schema == computed.schema
    exact = [c for c, t in stored.schema.items() if not t.is_float()]
    assert_frame_equal(stored.select(exact), computed.select(exact), check_exact=True)
    assert_frame_equal(stored, computed, **TOLERANCE)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """A study ingest, two prediction files (one with probability vectors) and a
    recalibration of the second, in one warehouse."""
    wh = relcol.open_warehouse(tmp_path_factory.mktemp("stored") / "warehouse")
    relcol.ingest(TINY, wh)
    relcol.ingest_predictions(overconfident(0, n=1500), wh, name="over", model="m")
    relcol.ingest_predictions(softmax_file(1, n=1200), wh, name="soft", model="net")
    relcol.recalibrate(wh, study="soft", methods=["temperature"])
    return wh


def test_every_commit_stores_its_views_and_checksums_them(warehouse):
    runs = sorted((warehouse.root / "predictions").glob("study=*/run_id=*"))
    assert len(runs) == 4
    for run in runs:
        sums = (run / "_checksums.json").read_text()
        for view in set(STORED) - {CURVE_COUNTS}:
            assert (run / stored_file(view)).is_file() and stored_file(view) in sums
    sources = warehouse.sources()
    # nothing is left to compute from rows: the fallback reads only the zero-row schema file
    assert sources["predictions_unstored"] == sources["predictions"][:1]
    assert all(len(sources[f"stored_{view}"]) == 4 for view in set(STORED) - {CURVE_COUNTS})
    assert warehouse.check().problems == []


def test_the_curve_counts_are_stored_only_where_they_are_small_beside_the_parts(
    warehouse, tmp_path
):
    # the rule, applied here with the exact count of levels: LEVEL_BYTES per level against
    # CURVE_SHARE of the bytes of the run's parts (the commit estimates the levels)
    sources = warehouse.sources()
    kept = {}
    for run in sorted((warehouse.root / "predictions").glob("study=*/run_id=*")):
        study = run.parent.name.removeprefix("study=")
        parts = sorted(run.glob("part-*.parquet"))
        levels = answer(
            sources,
            f"SELECT count(*) AS levels FROM (SELECT DISTINCT study, dataset, model, corruption, "
            f"severity, label, confidence FROM predictions WHERE study = '{study}')",
        )["levels"].item()
        budget = CURVE_SHARE * sum(p.stat().st_size for p in parts)
        # far from the edge, so the commit's estimate of the levels cannot flip the rule
        assert abs(levels * LEVEL_BYTES / budget - 1) > 0.02
        kept[study] = levels * LEVEL_BYTES <= budget
        assert (run / stored_file(CURVE_COUNTS)).is_file() == kept[study], study
        if kept[study]:  # the rows of the view, written as a commit writes them
            counts = tmp_path / f"{study}.parquet"
            with connect(from_rows(sources), sandbox=False) as con:
                con.execute("SET threads = 1")
                query = f"SELECT * FROM {CURVE_COUNTS} WHERE study = '{study}'"
                con.execute(f"COPY ({query}) TO '{counts}' (FORMAT parquet, COMPRESSION zstd)")
            assert (run / stored_file(CURVE_COUNTS)).read_bytes() == counts.read_bytes()
        else:  # its rows are read from the long table
            assert set(sources["predictions_without_curve"][1:]) == {str(p) for p in parts}
    # 1500 distinct confidences and no probability vectors: as many levels as rows, at more
    # bytes than the parts hold per row; with vectors (soft) or repeats (tiny), fewer
    assert kept == {"over": False, "soft": True, "soft-recal-temperature": True, "tiny": True}


def test_the_curve_has_the_same_bits_stored_or_computed(warehouse):
    sources = warehouse.sources()
    query = "SELECT * FROM selective_curve"
    stored, computed = answer(sources, query), answer(from_rows(sources), query)
    assert set(stored["study"]) == set(warehouse.studies())
    assert_frame_equal(stored, computed, check_exact=True)
    assert_frame_equal(stored, answer(sources, "SELECT * FROM selective_curve('predictions')"))


@pytest.mark.parametrize("view", STORED)
def test_a_stored_view_equals_the_view_computed_from_rows(warehouse, view):
    sources = warehouse.sources()
    query = f"SELECT * FROM {view}"
    stored, computed = answer(sources, query), answer(from_rows(sources), query)
    studies = set(stored["study"])
    if view.startswith("consistency"):  # needs repeats or seeds: the study ingest only
        assert studies == {"tiny"}
    else:
        assert studies == set(warehouse.studies())
    same(stored, computed)
    # and both equal the view's table macro over the long table, in the same order
    macro = view if view != "calibration_bins" else None
    if macro is not None:
        direct = answer(sources, f"SELECT * FROM {macro}('predictions')").select(stored.columns)
        same(stored, direct)


@pytest.mark.parametrize("view", STORED)
def test_a_query_on_stored_rows_binds_nothing_that_would_compute_them(warehouse, view):
    # every study stored (soft keeps its curve's counts too), the stored bin count: a reading
    # query's connection defines X_from_rows as no rows of the stored files' columns, so
    # nothing reads the long table
    sources = warehouse.sources("soft")
    query = f"SELECT * FROM {view}"
    assert _settled(sources, STORED_BINS) == set(STORED)
    assert _settled(sources, 10) == set(STORED) - {"calibration", "calibration_bins"}
    reached = needed(query, _settled(sources, STORED_BINS))
    # the view, its stored rows and its empty X_from_rows: not its namesake macro, nor
    # through the macro's default source the view predictions, which reads every part
    assert reached == {f"views/{view}", f"views/stored_{view}", f"views/{view}_from_rows"}
    # the same frame, bit for bit and in order, as a connection that binds the computation
    with connect(sources, sandbox=False, query=query) as con:
        assert_frame_equal(answer(sources, query), pl.from_arrow(con.sql(query).to_arrow_table()))


def test_a_connection_whose_bin_count_can_change_keeps_the_computation(warehouse):
    # a connection of its own (the shell, Warehouse.connect) may SET VARIABLE relcol_bins
    # after it is made: its views must still compute from the rows then
    query = "SELECT * FROM calibration"
    with warehouse.connect() as con:
        con.execute("SET VARIABLE relcol_bins = 10")
        at_ten = pl.from_arrow(con.sql(query).to_arrow_table())
    assert_frame_equal(at_ten, answer(warehouse.sources(), query, bins=10), **TOLERANCE)


@pytest.mark.parametrize("view", ["calibration", "calibration_bins"])
def test_another_bin_count_is_computed_from_rows(warehouse, view):
    sources = warehouse.sources()
    query = f"SELECT * FROM {view}"
    at_ten = answer(sources, query, bins=10)
    assert_frame_equal(at_ten, answer(from_rows(sources), query, bins=10), **TOLERANCE)
    at_stored = answer(sources, query)
    if view == "calibration_bins":  # ten bins, not fifteen, in each binning of each cell
        assert at_ten["bin"].max() == 9 and at_stored["bin"].max() == STORED_BINS - 1
    else:  # one ECE per bin count, from the same rows
        ece = answer(sources, "SELECT ece FROM calibration('predictions', bins := 10)")
        np.testing.assert_allclose(at_ten["ece"], ece["ece"], rtol=1e-9, atol=1e-12)
        assert not np.allclose(at_ten["ece"], at_stored["ece"])


def test_without_its_stored_files_a_study_answers_the_same_from_rows(warehouse, tmp_path):
    copy = Warehouse(tmp_path / "warehouse")
    shutil.copytree(warehouse.root, copy.root)
    run = next((copy.root / "predictions").glob("study=soft/run_id=*"))
    (run / stored_file("selective")).unlink()  # one missing file: the study is computed whole
    sources = copy.sources()
    assert set(sources["predictions_unstored"][1:]) == {str(p) for p in run.glob("part-*")}
    assert all(len(sources[f"stored_{view}"]) == 3 for view in set(STORED) - {CURVE_COUNTS})
    # its curve's counts are kept apart: still read from its stored file
    assert str(run / stored_file(CURVE_COUNTS)) in sources[f"stored_{CURVE_COUNTS}"]
    for view in STORED:
        query = f"SELECT * FROM {view}"
        same(answer(sources, query), answer(warehouse.sources(), query))
    done = CliRunner().invoke(main, ["check", "--warehouse", str(copy.root)])
    assert done.exit_code != 0 and f"{stored_file('selective')}: missing" in done.output


def damaged_copy(warehouse: Warehouse, folder, view: str) -> Warehouse:
    """A copy of ``warehouse`` in ``folder`` whose study ``over`` has its stored ``view``
    overwritten with bytes that are not Parquet."""
    copy = Warehouse(folder / "warehouse")
    shutil.copytree(warehouse.root, copy.root)
    run = next((copy.root / "predictions").glob("study=over/run_id=*"))
    (run / stored_file(view)).write_bytes(b"not parquet")
    return copy


def test_a_damaged_stored_file_is_named_by_check_and_by_the_query(warehouse, tmp_path):
    copy = damaged_copy(warehouse, tmp_path, "discrimination")
    done = CliRunner().invoke(main, ["check", "--warehouse", str(copy.root)])
    assert done.exit_code != 0 and "_stored_discrimination.parquet: damaged" in done.output
    query = CliRunner().invoke(
        main, ["sql", "--warehouse", str(copy.root), "SELECT * FROM discrimination"]
    )
    assert query.exit_code == 2 and "_stored_discrimination.parquet" in query.output
    assert "Traceback" not in query.output
    # a view that does not read it still answers
    fine = CliRunner().invoke(
        main, ["sql", "--warehouse", str(copy.root), "SELECT * FROM selective"]
    )
    assert fine.exit_code == 0, fine.output


@pytest.mark.parametrize("view", STORED)
def test_the_stored_rows_read_directly_are_the_view(warehouse, view):
    # ``Warehouse.stored`` reads a study's stored file without DuckDB: it must be what the
    # view answers, names, types, values and order
    heights = []
    for study in warehouse.studies():
        direct = warehouse.stored(view, study)
        if view == CURVE_COUNTS and study == "over":  # too large to keep: none stored
            assert direct is None
            continue
        assert direct is not None
        assert_frame_equal(direct, warehouse.sql(f"SELECT * FROM {view}", study=study))
        heights.append(direct.height)
    assert max(heights) > 0  # the prediction files have no repeats: no consistency rows


def test_a_report_on_a_damaged_stored_file_fails_in_one_line(warehouse, tmp_path):
    copy = damaged_copy(warehouse, tmp_path, "consistency")

    def files() -> list:
        return sorted((p, p.stat().st_mtime_ns) for p in copy.root.rglob("*") if p.is_file())

    before = files()
    done = CliRunner().invoke(
        main,
        ["report", "--warehouse", str(copy.root), "--study", "over", "--out", str(tmp_path / "r")],
    )
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert "_stored_consistency.parquet cannot be read" in done.output
    assert "relcol check" in done.output
    assert files() == before


def test_the_same_study_stores_the_same_bytes(warehouse, tmp_path):
    again = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(TINY, again)

    def stored(wh: Warehouse) -> dict[str, bytes]:
        run = next((wh.root / "predictions").glob("study=tiny/run_id=*"))
        return {view: (run / stored_file(view)).read_bytes() for view in STORED}

    assert stored(again) == stored(warehouse)


def test_a_large_study_is_stored_in_chunks_of_whole_cells_to_the_same_rows(
    warehouse, tmp_path, monkeypatch
):
    # a study of more than STORE_CHUNK_ROWS rows is stored one chunk of cells at a time; the
    # stored rows are those of the study stored whole (the fixture's), to the last bit
    from relcol.store import _warehouse

    seen = []
    chunked = _warehouse.Staging._cell_chunks

    def spy(self):
        seen.append(chunked(self))
        return seen[-1]

    monkeypatch.setattr(_warehouse.Staging, "_cell_chunks", spy)
    monkeypatch.setattr(_warehouse, "STORE_CHUNK_ROWS", 700)
    again = relcol.open_warehouse(tmp_path / "warehouse")
    relcol.ingest(TINY, again)
    relcol.ingest_predictions(softmax_file(1, n=1200), again, name="soft", model="net")
    assert [len(chunks) > 2 for chunks in seen] == [True, False]  # soft is one cell of 1200
    for study in ("tiny", "soft"):
        for view in STORED:
            assert_frame_equal(again.stored(view, study), warehouse.stored(view, study))
    assert again.check().problems == []
    assert not list((again.root / "_staging").iterdir())  # the chunks went with the staging


def test_a_study_whose_views_run_out_of_memory_is_committed_without_them(tmp_path, monkeypatch):
    import duckdb

    from relcol.store import _warehouse

    real = _warehouse.connect

    def connect_running_out(sources, *, query=None, **options):
        if query == "SELECT * FROM consistency":  # a step DuckDB cannot spill
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate 64.0 MiB")
        return real(sources, query=query, **options)

    monkeypatch.setattr(_warehouse, "connect", connect_running_out)
    wh = relcol.open_warehouse(tmp_path / "warehouse")
    with pytest.warns(RuntimeWarning, match="per-cell views of study 'tiny' were not stored"):
        relcol.ingest(TINY, wh)
    monkeypatch.setattr(_warehouse, "connect", real)
    run = next((wh.root / "predictions").glob("study=tiny/run_id=*"))
    assert not list(run.glob("_stored_*")) and wh.check().problems == []
    sources = wh.sources()
    assert not any(k.startswith("stored_") for k in sources)
    assert sources["predictions_unstored"] == sources["predictions"]
    assert answer(sources, "SELECT * FROM consistency").height > 0


def test_the_reports_curve_grid_is_the_same_from_stored_counts(warehouse, monkeypatch):
    # without a bootstrap the report reads its risk–coverage grid off the stored counts where
    # the commit kept them; computed from the rows instead, the grid is the same frame
    from relcol.workflows._report_tables import _metric_tables

    def grids() -> dict[str, pl.DataFrame]:
        return {
            study: _metric_tables(warehouse, study, bins=STORED_BINS)[0]["risk_coverage"]
            for study in warehouse.studies()
        }

    read = grids()
    real = Warehouse.stored
    asked = []

    def nothing_stored_for_the_curve(self, view, study):
        asked.append(view)
        return None if view == CURVE_COUNTS else real(self, view, study)

    monkeypatch.setattr(Warehouse, "stored", nothing_stored_for_the_curve)
    computed = grids()
    assert asked.count(CURVE_COUNTS) == len(warehouse.studies())
    for study in warehouse.studies():
        assert read[study].height > 0
        assert_frame_equal(read[study], computed[study], check_exact=True)
