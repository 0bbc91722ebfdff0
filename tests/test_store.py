"""The warehouse: layout, exact types, atomic commits, refusal to overwrite, snapshots."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

import relcol
from relcol.errors import SpecError, WarehouseError
from relcol.store import KEY, PREDICTIONS, Warehouse, check_name
from relcol.store._warehouse import README
from relcol.study import load_study
from tests.conftest import TESTS, TINY
from tests.test_metrics import assert_close


def checksums(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its SHA-256 (staging folders included: nothing may linger)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_repository_warehouse_readme_is_the_one_relcol_writes():
    assert (TESTS.parent / "warehouse" / "README.md").read_text() == README


def test_an_empty_warehouse_has_every_view_with_its_types(tmp_path):
    wh = Warehouse(tmp_path / "wh", create=True)
    assert wh.studies() == []
    described = wh.sql("DESCRIBE predictions")
    assert described["column_name"].to_list() == list(PREDICTIONS)
    types = dict(zip(described["column_name"], described["column_type"], strict=True))
    assert (
        types["severity"] == "DOUBLE"
        and types["seed"] == "INTEGER"
        and types["sample_id"] == "BIGINT"
    )
    assert (
        types["label"] == "INTEGER"
        and types["correct"] == "BOOLEAN"
        and types["proba"] == "FLOAT[]"
    )
    for view in (
        "predictions",
        "calibration",
        "calibration_bins",
        "discrimination",
        "selective_curve",
        "selective",
        "runs",
        "classes",
        "corruptions",
    ):
        assert wh.sql(f"SELECT count(*) AS n FROM {view}")["n"][0] == 0
    assert wh.predictions().collect().schema == pl.Schema(PREDICTIONS)
    # the metric views keep their column types on no rows (cell keys as in predictions)
    for view, integers in {
        "calibration": {"n", "mce_n"},
        "calibration_bins": {"bin", "n"},
        "discrimination": {"n"},
        "selective_curve": {"n", "accepted"},
        "selective": {"n"},
    }.items():
        described = wh.sql(f"DESCRIBE {view}")
        kinds = dict(zip(described["column_name"], described["column_type"], strict=True))
        assert all(kinds[key] == types[key] for key in ("study", "severity", "label"))
        metrics = set(kinds) - {"study", "dataset", "model", "corruption", "severity", "label"}
        text = {"binning", "score"}
        assert {c for c in metrics if kinds[c] == "BIGINT"} == integers, view
        assert all(kinds[c] == "DOUBLE" for c in metrics - integers - text), view


def test_ingest_writes_the_long_table_with_exact_types_and_a_unique_key(tiny_warehouse):
    frame = tiny_warehouse.predictions("tiny").collect()
    assert frame.schema == pl.Schema(PREDICTIONS)
    study = load_study(TINY)
    n_test = {"wine": 54, "synthetic": 90}
    per_model_seed = sum(
        n_test[d.name] * len(c.severities) * study.repeats
        for d in study.datasets
        for c in study.corruptions
    )
    assert frame.height == per_model_seed * len(study.models) * len(study.seeds)
    assert frame.select(KEY).unique().height == frame.height
    assert frame["label"].null_count() == frame.height
    # correct is y_pred == y_true, confidence is the top probability, proba sums to 1
    assert (frame["correct"] == (frame["y_pred"] == frame["y_true"])).all()
    top = frame.select(pl.col("proba").list.max()).to_series().to_numpy()
    np.testing.assert_allclose(frame["confidence"].to_numpy(), top, atol=1e-6)
    sums = frame.select(pl.col("proba").list.sum()).to_series().to_numpy()
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    # only label noise changes the evaluation label
    changed = frame.filter(pl.col("y_true") != pl.col("y_clean"))
    assert set(changed["corruption"].unique()) == {"label_noise"}


def test_severity_zero_is_the_clean_model_for_every_corruption(tiny_warehouse):
    clean = (
        tiny_warehouse.predictions("tiny")
        .filter(pl.col("severity") == 0)
        .group_by("dataset", "model", "seed", "repeat", "sample_id")
        .agg(pl.col("confidence").n_unique().alias("k"), pl.col("y_pred").n_unique().alias("p"))
        .collect()
    )
    assert (clean["k"] == 1).all() and (clean["p"] == 1).all()


def test_sample_ids_are_shared_across_models_corruptions_seeds_and_repeats(tiny_warehouse):
    ids = (
        tiny_warehouse.predictions("tiny")
        .group_by("dataset", "model", "corruption", "severity", "seed", "repeat")
        .agg(pl.col("sample_id").sort().hash().alias("h"))
        .group_by("dataset")
        .agg(pl.col("h").n_unique())
        .collect()
    )
    assert (ids["h"] == 1).all()


def test_side_tables_record_the_run_the_classes_and_realised_rates(tiny_warehouse):
    runs = tiny_warehouse.sql("SELECT * FROM runs")
    assert runs.height == 1 and runs["status"][0] == "complete"
    assert (
        runs["spec"][0] == TINY.read_text()
        and runs["rows"][0] == tiny_warehouse.predictions().collect().height
    )
    classes = tiny_warehouse.sql("SELECT name FROM classes WHERE dataset = 'wine' ORDER BY code")
    assert classes["name"].to_list() == ["class_0", "class_1", "class_2"]
    rates = tiny_warehouse.sql(
        "SELECT severity, avg(realised_rate) AS r FROM corruptions WHERE corruption = 'mcar' GROUP BY ALL ORDER BY ALL"
    )
    assert rates["r"][0] == 0.0
    np.testing.assert_allclose(rates["r"].to_numpy()[1:], [0.25, 0.5], atol=0.05)


def test_the_same_spec_gives_byte_identical_prediction_files(tmp_path, tiny_warehouse):
    other = relcol.open_warehouse(tmp_path / "again")
    relcol.ingest(TINY, other)
    a = tiny_warehouse.predictions().collect()
    b = other.predictions().collect()
    assert a.equals(b)
    assert a["run_id"].n_unique() == 1 and a["run_id"][0].startswith("s")

    def parts(wh):
        return {k: v for k, v in checksums(wh.root / "predictions").items() if "/part-" in k}

    assert parts(tiny_warehouse) == parts(other) != {}


def test_a_second_study_adds_rows_without_touching_the_first(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh)
    before = checksums(wh.root / "predictions")
    second = load_study(TINY).renamed("tiny2")
    relcol.ingest(second, wh)
    after = checksums(wh.root / "predictions")
    assert {k: v for k, v in after.items() if k.startswith("study=tiny/")} == before
    assert wh.studies() == ["tiny", "tiny2"]
    counts = wh.sql("SELECT study, count(*) AS n FROM predictions GROUP BY ALL ORDER BY ALL")
    assert counts["n"][0] == counts["n"][1] > 0


def test_views_scoped_to_one_study_read_only_its_files_and_agree_with_polars(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh)
    relcol.ingest(load_study(TINY).renamed("tiny2"), wh)
    relcol.report(wh, study="tiny2", out=tmp_path / "report", bootstrap=0)
    everything = wh.sql("SELECT study, count(*) AS n FROM predictions GROUP BY ALL ORDER BY ALL")
    assert everything["study"].to_list() == ["tiny", "tiny2"]
    for study, n in everything.rows():
        scoped = wh.sql("SELECT study, count(*) AS n FROM predictions GROUP BY ALL", study=study)
        assert scoped.rows() == [(study, n)]
        for view in ("runs", "classes", "corruptions", "report_calibration"):
            seen = wh.sql(f"SELECT DISTINCT study FROM {view}", study=study)["study"].to_list()
            assert seen == ([study] if view != "report_calibration" or study == "tiny2" else [])
    for function in (relcol.calibration, relcol.consistency):
        polars = function(wh, study="tiny2")
        duckdb = function(wh, study="tiny2", engine="duckdb")
        assert set(duckdb["study"]) == {"tiny2"}
        assert_close(duckdb.select(polars.columns), polars)
    with pytest.raises(WarehouseError, match="no study 'tiny3'"):
        wh.sql("SELECT 1", study="tiny3")
    with pytest.raises(WarehouseError, match="study name must be"):
        wh.sql("SELECT 1", study="tiny*")


def test_reingesting_a_study_is_refused_and_replace_swaps_it_whole(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    first = relcol.ingest(TINY, wh)
    before = checksums(wh.root)
    with pytest.raises(WarehouseError, match=r"study 'tiny' is already in warehouse .* --replace"):
        relcol.ingest(TINY, wh)
    assert checksums(wh.root) == before
    finished = wh.sql("SELECT finished_at FROM runs")["finished_at"][0]
    second = relcol.ingest(TINY, wh, replace=True)
    runs = wh.sql("SELECT run_id, finished_at FROM runs")
    assert runs["run_id"].to_list() == [second.run_id] == [first.run_id]  # a content address
    assert runs["finished_at"][0] > finished
    assert wh.sql("SELECT count(*) AS n FROM predictions")["n"][0] == first.rows
    assert not any((wh.root / "_staging").iterdir())


def test_a_failure_mid_ingest_leaves_the_warehouse_as_it_was(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh)
    before = checksums(wh.root)
    calls = []

    def explode(n: int) -> None:
        calls.append(n)
        if len(calls) == 5:
            raise RuntimeError("crash in the middle of the ingest")

    with pytest.raises(RuntimeError):
        relcol.ingest(load_study(TINY).renamed("other"), wh, progress=explode)
    assert checksums(wh.root) == before
    assert wh.studies() == ["tiny"]


def test_a_warehouse_killed_while_it_is_made_reads_as_none_until_a_write_completes_it(
    tmp_path, monkeypatch
):
    # a first ingest killed while it writes the schema files: the folder must not pass for a
    # warehouse (whose queries would fail on a missing schema file) until one is made whole
    from relcol.store import _warehouse

    root = tmp_path / "wh"
    real, written = _warehouse._atomic_write_parquet, []

    def dies(path: Path, frame: pl.DataFrame) -> None:
        if len(written) == 3:
            raise RuntimeError("killed")
        written.append(path)
        real(path, frame)

    monkeypatch.setattr(_warehouse, "_atomic_write_parquet", dies)
    with pytest.raises(RuntimeError, match="killed"):
        Warehouse(root).create()
    assert len(written) == 3 and (root / "_schema").is_dir()
    wh = relcol.open_warehouse(root)
    assert not wh.exists()
    with pytest.raises(WarehouseError, match="no warehouse at"):
        wh.sql("SELECT count(*) FROM predictions")
    monkeypatch.setattr(_warehouse, "_atomic_write_parquet", real)
    assert wh.create() is False  # the folder was there; its files are made now
    assert wh.exists()
    assert wh.sql("SELECT count(*) AS n FROM predictions")["n"][0] == 0


def test_a_bad_corruption_parameter_is_found_before_anything_is_written(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    before = checksums(wh.root)
    spec = TINY.read_text().replace('name = "mcar"', 'name = "mar"\ndriver = 99')
    (tmp_path / "bad.toml").write_text(spec)
    with pytest.raises(SpecError, match="driver"):
        relcol.ingest(tmp_path / "bad.toml", wh)
    assert checksums(wh.root) == before


def test_a_connection_is_a_snapshot(tmp_path):
    wh = Warehouse(tmp_path / "wh", create=True)
    con = wh.connect()
    relcol.ingest(TINY, wh)
    assert con.sql("SELECT count(*) FROM predictions").fetchall()[0][0] == 0
    assert wh.connect().sql("SELECT count(*) FROM predictions").fetchall()[0][0] > 0


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "", "x\x00y", "a b", "-lead", "é"])
def test_names_that_could_escape_the_warehouse_are_refused(name):
    with pytest.raises(WarehouseError, match="study name must be"):
        check_name(name)


def test_sql_takes_parameters_and_reports_errors_in_one_line(tiny_warehouse):
    out = tiny_warehouse.sql(
        "SELECT count(*) AS n FROM predictions WHERE model = ?", ["naive_bayes"]
    )
    assert (
        out["n"][0]
        == tiny_warehouse.predictions().filter(pl.col("model") == "naive_bayes").collect().height
    )
    with pytest.raises(WarehouseError, match=r"^SQL error: .*nope") as info:
        tiny_warehouse.sql("SELECT nope FROM predictions")
    assert "\n" not in str(info.value)


def test_the_documented_join_pairs_single_label_cells_that_a_join_on_label_drops(tiny_warehouse):
    # docs/warehouse.md, "Joining views": label is NULL on single-label rows
    keys = ["study", "dataset", "model", "corruption", "severity", "score"]
    documented = tiny_warehouse.sql(
        "SELECT model, corruption, severity, score, auroc, aurc FROM discrimination d "
        "JOIN selective s USING (study, dataset, model, corruption, severity, score) "
        "WHERE d.label IS NOT DISTINCT FROM s.label"
    )
    discrimination = tiny_warehouse.sql("SELECT * FROM discrimination")
    selective = tiny_warehouse.sql("SELECT * FROM selective")
    assert discrimination["label"].null_count() == discrimination.height > 0
    expected = discrimination.join(selective, on=keys).select(documented.columns)
    assert documented.sort(documented.columns).equals(expected.sort(expected.columns))
    assert documented.height == discrimination.height
    on_label = tiny_warehouse.sql(
        "SELECT count(*) AS n FROM discrimination JOIN selective "
        "USING (study, dataset, model, corruption, severity, label, score)"
    )
    assert on_label["n"][0] == 0


def test_sql_results_keep_duckdbs_types_and_name_those_polars_cannot_hold(tiny_warehouse):
    query = (
        "SELECT 1.5::DECIMAL(4, 1) AS d, 'a'::ENUM('a', 'b') AS e, [1, 2]::INTEGER[2] AS a, "
        "{'x': 1} AS s, MAP {'k': 1} AS m, TIMESTAMPTZ '2026-01-01 10:00+00' AS t"
    )
    out = tiny_warehouse.sql(query)
    assert out.schema == duckdb.sql(query).pl().schema  # as DuckDB's own conversion gives
    assert out.row(0) == duckdb.sql(query).pl().row(0)
    for query, named in [
        ("SELECT 1 AS n, INTERVAL 3 DAY AS gap", "gap (INTERVAL)"),
        ("SELECT {'x': union_value(k := 1)} AS u", "u (STRUCT(x UNION(k INTEGER)))"),
        ("SELECT MAP {'k': INTERVAL 1 DAY} AS m", "m (MAP(VARCHAR, INTERVAL))"),
    ]:
        with pytest.raises(WarehouseError, match=re.escape(f"cannot hold: {named}; cast it")):
            tiny_warehouse.sql(query)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("COPY (SELECT 1) TO 'out.csv'", "reading statements only"),
        ("CREATE TABLE t AS SELECT 1", "reading statements only"),
        ("SELECT 1; DROP VIEW predictions", "reading statements only"),
        ("SELECT * FROM read_csv('/etc/passwd')", "Permission Error"),
        ("SELECT * FROM read_parquet('{elsewhere}')", "Permission Error"),
        ("SELECT * FROM read_text('{readme}')", "Permission Error"),
    ],
)
def test_sql_cannot_write_or_read_outside_the_warehouse(tiny_warehouse, tmp_path, query, message):
    elsewhere = tmp_path / "private.parquet"
    pl.DataFrame({"secret": [1]}).write_parquet(elsewhere)
    query = query.format(elsewhere=elsewhere, readme=tiny_warehouse.root / "README.md")
    before = checksums(tiny_warehouse.root)
    with pytest.raises(WarehouseError, match=message):
        tiny_warehouse.sql(query)
    assert checksums(tiny_warehouse.root) == before


def test_sql_unsafe_is_the_users_explicit_choice(tiny_warehouse, tmp_path):
    out = tmp_path / "n.csv"
    tiny_warehouse.sql(f"COPY (SELECT count(*) AS n FROM predictions) TO '{out}'", unsafe=True)
    assert pl.read_csv(out)["n"][0] == tiny_warehouse.predictions().collect().height


def test_a_query_defines_only_the_views_and_macros_it_reaches(tmp_path):
    import polars as pl

    from relcol.store import PREDICTIONS, connect
    from relcol.store._sql import VIEWS, connect_frame, needed

    calibration = needed("SELECT * FROM calibration -- not selective")
    macros = {"calibration", "bin_statistics", "cell_rows", "cell_ids", "uniform"}
    assert {f"macros/{m}" for m in macros} | {"views/calibration"} <= calibration
    assert "views/predictions" in calibration  # named as a string: the macro's default source
    assert not {"views/selective", "macros/selective", "macros/poisson_weight"} & calibration
    assert needed("SELECT count(*) FROM predictions") == {"views/predictions"}
    # a name followed by ( is the macro; otherwise the view, which reaches its namesake
    # macro only through its own definition
    called = needed("FROM selective('runs')")
    assert {"macros/selective", "views/runs"} <= called and "views/selective" not in called
    assert "macros/selective" in needed("FROM selective")  # via selective_from_rows
    assert needed("SHOW TABLES") is None and needed("FROM duckdb_views()") is None
    # every view binds (a view is bound when created) with only what it reaches defined
    connect_frame(tmp_path, pl.DataFrame(schema=PREDICTIONS)).close()
    sources = {p.stem: [str(p)] for p in tmp_path.glob("*.parquet")}
    for view in [v for v in VIEWS if not v.startswith("report_") or v in sources]:
        query = f"SELECT * FROM {view}"
        with connect(sources, query=query) as con:
            assert con.execute(query).fetchall() == []
            defined = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
            assert view in {name for (name,) in defined.fetchall()}
    with connect(sources, query="SELECT 1 FROM calibration") as con:
        defined = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
        assert {name for (name,) in defined.fetchall()} == {
            "calibration",
            "stored_calibration",  # the rows stored at commit (here: none)
            "calibration_from_rows",  # the rest, from the rows of
            "predictions_binned",
            "predictions_unstored",
            "predictions",
            "classes",
        }
