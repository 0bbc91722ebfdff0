"""Predictions made elsewhere: every accepted shape of file, the rows they become, the record kept."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from relcol.cli import main

import relcol
from relcol.data import read_predictions
from relcol.errors import WarehouseError
from relcol.store import ANNOTATIONS, KEY, PREDICTIONS
from tests.test_store import checksums


def spam_frame() -> pl.DataFrame:
    """Three emails, classes by name, a probability per class and a second score."""
    return pl.DataFrame(
        {
            "email": [10, 11, 12],
            "truth": ["spam", "ham", "spam"],
            "p_ham": [0.2, 0.7, 0.55],
            "p_spam": [0.8, 0.3, 0.45],
            "confidence:verbal": [0.9, 0.6, 0.5],
        }
    )


@pytest.fixture
def wh(tmp_path):
    return relcol.open_warehouse(tmp_path / "wh")


def test_a_probability_vector_gives_the_arg_max_and_its_probability():
    read = read_predictions(
        spam_frame(), columns={"y_true": "truth", "sample_id": "email"}, model="llm"
    )
    llm = read.rows.filter(pl.col("model") == "llm")
    assert read.spec["classes"] == ["ham", "spam"]  # the p_ suffixes, in column order
    assert llm["y_pred"].to_list() == [1, 0, 0]
    assert llm["confidence"].to_list() == [0.8, 0.7, 0.55]
    assert llm["correct"].to_list() == [True, True, False]
    assert llm["proba"].to_list() == [
        pytest.approx([0.2, 0.8]),
        pytest.approx([0.7, 0.3]),
        pytest.approx([0.55, 0.45]),
    ]
    assert llm["sample_id"].to_list() == [10, 11, 12]


def test_several_scores_become_several_confidence_sources_with_one_prediction():
    read = read_predictions(
        spam_frame(), columns={"y_true": "truth", "sample_id": "email"}, model="llm"
    )
    assert read.sources == ("llm", "llm:verbal")
    verbal = read.rows.filter(pl.col("model") == "llm:verbal")
    assert verbal["confidence"].to_list() == [0.9, 0.6, 0.5]
    assert verbal["y_pred"].to_list() == [1, 0, 0]  # the same prediction, another score
    assert verbal["proba"].null_count() == 3
    key = [k for k in KEY if k != "study"]
    assert read.rows.select(key).unique().height == read.rows.height


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".jsonl"])
def test_every_file_format_reads_to_the_same_rows(tmp_path, suffix):
    frame = pl.DataFrame(
        {
            "y_true": [0, 2, 1, 1],
            "y_pred": [0, 2, 2, 1],
            "confidence": [0.9, 0.75, 0.5, 1.0],
            "model": ["a", "a", "b", "b"],
            "severity": [0.0, 0.0, 0.5, 0.5],
        }
    )
    path = tmp_path / f"p{suffix}"
    if suffix == ".csv":
        frame.write_csv(path)
    elif suffix == ".tsv":
        frame.write_csv(path, separator="\t")
    elif suffix == ".parquet":
        frame.write_parquet(path)
    else:
        frame.write_ndjson(path)
    read = read_predictions(path)
    assert read.rows.height == 4 and read.sources == ("a", "b")
    assert read.rows["dataset"].unique().to_list() == ["p"]  # the file's stem
    assert read.rows["severity"].to_list() == [0.0, 0.0, 0.5, 0.5]
    assert read.rows["correct"].to_list() == [True, True, False, True]
    assert read.spec["format"] == {".csv": "csv", ".tsv": "tsv"}.get(suffix, suffix[1:])
    assert read.spec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_list_column_of_probabilities_reads_from_parquet_and_json_lines(tmp_path):
    frame = pl.DataFrame({"y_true": [1, 0], "proba": [[0.25, 0.75], [0.6, 0.4]]})
    for path in (tmp_path / "p.parquet", tmp_path / "p.jsonl"):
        frame.write_parquet(path) if path.suffix == ".parquet" else frame.write_ndjson(path)
        read = read_predictions(path)
        assert read.rows["y_pred"].to_list() == [1, 0]
        assert read.rows["confidence"].to_list() == [0.75, 0.6]
        assert read.spec["classes"] == ["0", "1"]


def test_the_defaults_for_keys_a_file_does_not_have():
    read = read_predictions(
        pl.DataFrame({"y_true": [3, 1], "y_pred": [3, 0], "confidence": [0.9, 0.6]})
    )
    row = read.rows.row(0, named=True)
    assert (row["model"], row["corruption"], row["severity"], row["seed"], row["repeat"]) == (
        "model",
        "none",
        0.0,
        0,
        0,
    )
    assert read.rows["sample_id"].to_list() == [0, 1]  # the row's position
    assert read.rows["y_clean"].to_list() == read.rows["y_true"].to_list()
    assert read.rows["label"].null_count() == 2
    assert read.spec["classes"] == ["0", "1", "2", "3"]  # integer codes 0 … max
    assert set(read.spec["defaults"]) >= {"corruption", "severity", "sample_id"}


def test_row_hashes_are_equal_exactly_where_the_keys_are():
    from relcol.data._predictions import _row_hashes

    rng = np.random.default_rng(3)
    n = 4000
    frame = pl.DataFrame(
        {
            "model": pl.Series([["a", "b", None][i] for i in rng.integers(0, 3, n)]),
            # −0.0 and 0.0, NaN and NaN are equal keys, as distinct rows compare them
            "severity": rng.choice([0.0, -0.0, 0.5, float("nan")], n),
            "sample_id": rng.integers(0, 40, n),
            "label": pl.Series([[None, 1][i] for i in rng.integers(0, 2, n)], dtype=pl.Int32),
        }
    )
    keys = frame.columns
    hashed = frame.with_columns(hash=_row_hashes(frame, keys), key=pl.struct(keys).rank("dense"))
    # the same key, the same hash; different keys, different hashes (no collision here)
    assert hashed.group_by("key").agg(pl.col("hash").n_unique()).get_column("hash").max() == 1
    assert hashed.get_column("hash").n_unique() == hashed.get_column("key").n_unique()
    assert hashed.get_column("key").n_unique() < n  # the frame does repeat keys


def test_a_collision_of_key_hashes_is_told_apart_key_by_key(monkeypatch):
    import relcol.data._predictions as predictions

    monkeypatch.setattr(  # every row's hash the same: every key compared
        predictions, "_row_hashes", lambda frame, columns: pl.Series(np.zeros(frame.height))
    )
    frame = pl.DataFrame({"y_true": [1, 0, 1], "y_pred": [1, 1, 0], "confidence": [0.9, 0.6, 0.7]})
    assert read_predictions(frame).rows.height == 3
    with pytest.raises(relcol.errors.InputError, match="1 row repeats the key of an earlier row"):
        read_predictions(frame.with_columns(sample_id=pl.Series([0, 1, 1])))


def test_text_labels_get_sorted_names_unless_classes_are_declared():
    frame = pl.DataFrame({"y_true": ["b", "a"], "y_pred": ["b", "b"], "confidence": [0.9, 0.6]})
    assert read_predictions(frame).spec["classes"] == ["a", "b"]
    declared = read_predictions(frame, classes=["b", "c", "a"])
    assert declared.spec["classes"] == ["b", "c", "a"]
    assert declared.rows["y_true"].to_list() == [0, 2]
    # --classes reorders the p_ columns into the declared order
    vector = read_predictions(
        pl.DataFrame({"y_true": ["x"], "p_x": [0.3], "p_y": [0.7]}), classes=["y", "x"]
    )
    assert vector.rows["proba"].to_list() == [pytest.approx([0.7, 0.3])]
    assert vector.rows["y_pred"].to_list() == [0] and vector.rows["y_true"].to_list() == [1]


def test_integer_codes_with_numbered_p_columns_keep_their_codes():
    frame = pl.DataFrame({"y_true": [1, 0], "p_1": [0.9, 0.2], "p_0": [0.1, 0.8]})
    read = read_predictions(frame)
    assert read.spec["classes"] == ["0", "1"]
    assert read.rows["y_pred"].to_list() == [1, 0]
    assert read.rows["correct"].to_list() == [True, True]


def test_a_stated_confidence_beside_a_vector_is_kept_when_it_agrees():
    frame = pl.DataFrame(
        {
            "y_true": [0, 1],
            "y_pred": [0, 1],
            "confidence": [0.6004, 0.7],
            "proba": [[0.6, 0.4], [0.3, 0.7]],
        }
    )
    read = read_predictions(frame)
    assert read.sources == ("model",)
    assert read.rows["confidence"].to_list() == [0.6004, 0.7]


def test_multilabel_rows_from_a_positive_class_probability():
    frame = pl.DataFrame(
        {
            "sample_id": [0, 0, 1, 1],
            "label": ["B", "A", "A", "B"],
            "y_true": [True, False, False, True],
            "probability": [0.9, 0.2, 0.5, 0.3],
        }
    )
    read = read_predictions(frame, model="llm")
    assert read.multilabel and read.spec["classes"] == ["A", "B"]
    assert read.rows["label"].to_list() == [1, 0, 0, 1]
    assert read.rows["y_pred"].to_list() == [1, 0, 1, 0]  # 1[p >= 0.5]
    assert read.rows["confidence"].to_list() == pytest.approx([0.9, 0.8, 0.5, 0.7])
    assert read.rows["correct"].to_list() == [True, True, False, False]


def test_ingest_commits_rows_classes_annotations_and_a_run_record(wh, tmp_path):
    path = tmp_path / "llm.csv"
    spam_frame().with_columns(agreement=pl.Series([1.0, 0.5, 0.25])).write_csv(path)
    result = relcol.ingest_predictions(
        path, wh, name="email-llm", columns={"y_true": "truth", "sample_id": "email"}
    )
    assert (result.rows, result.cells, result.sources) == (6, 2, ("email-llm", "email-llm:verbal"))
    frame = wh.predictions("email-llm").collect()
    assert frame.schema == pl.Schema(PREDICTIONS) and frame.height == 6
    names = wh.sql("SELECT code, name FROM classes WHERE study = 'email-llm' ORDER BY code")
    assert names.rows() == [(0, "ham"), (1, "spam")]
    annotations = wh.sql("SELECT * FROM annotations")
    assert annotations.columns == list(ANNOTATIONS) and annotations.height == 6
    assert sorted(annotations["agreement"].to_list()) == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]
    run = wh.sql("SELECT * FROM runs").row(0, named=True)
    assert run["kind"] == "predictions" and run["rows"] == 6 and run["cells"] == 2
    spec = json.loads(run["spec"])
    assert spec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert spec["file"] == str(path) and spec["columns"]["y_true"] == "truth"
    assert run["spec_hash"] == hashlib.sha256(run["spec"].encode()).hexdigest()
    # the calibration view and the report see the new study
    assert relcol.calibration(wh, study="email-llm").height == 2
    assert relcol.calibration(wh, study="email-llm", engine="duckdb").height == 2


def test_the_same_file_gives_byte_identical_files_and_reingesting_is_refused(tmp_path):
    path = tmp_path / "p.parquet"
    spam_frame().write_parquet(path)
    kwargs = {"name": "llm", "columns": {"y_true": "truth"}}
    a = relcol.open_warehouse(tmp_path / "a")
    b = relcol.open_warehouse(tmp_path / "b")
    first = relcol.ingest_predictions(path, a, **kwargs)
    relcol.ingest_predictions(path, b, **kwargs)
    parts = [
        {k: v for k, v in checksums(w.root / "predictions").items() if "part-" in k} for w in (a, b)
    ]
    assert parts[0] == parts[1] != {}
    before = checksums(a.root)
    with pytest.raises(WarehouseError, match=r"already in warehouse .* --replace"):
        relcol.ingest_predictions(path, a, **kwargs)
    assert checksums(a.root) == before
    second = relcol.ingest_predictions(path, a, replace=True, **kwargs)
    assert second.run_id == first.run_id  # a content address
    assert a.sql("SELECT count(*) AS n FROM predictions")["n"][0] == 6


def test_the_cli_ingests_a_file_and_notes_the_columns_it_ignored(tmp_path):
    path = tmp_path / "llm.csv"
    spam_frame().with_columns(notes=pl.lit("x")).write_csv(path)
    runner = CliRunner()
    done = runner.invoke(
        main,
        [
            "ingest",
            "--predictions",
            str(path),
            "--warehouse",
            str(tmp_path / "wh"),
            "--column",
            "y_true=truth",
            "--column",
            "sample_id=email",
            "--model",
            "llm",
        ],
    )
    assert done.exit_code == 0, done.output
    assert "wrote 6 rows in 2 cells of study 'llm'" in done.stdout
    assert "llm, llm:verbal" in done.stdout and "2 classes" in done.stdout
    assert "ignored columns 'notes'" in done.stderr
    as_json = runner.invoke(
        main,
        [
            "ingest",
            "--predictions",
            str(path),
            "--warehouse",
            str(tmp_path / "wh"),
            "--name",
            "x",
            "--column",
            "y_true=truth",
            "--json",
        ],
    )
    assert json.loads(as_json.stdout)["sources"] == ["x", "x:verbal"]


def test_the_ingest_help_has_an_example_of_a_prediction_file():
    done = CliRunner().invoke(main, ["ingest", "--help"])
    assert done.exit_code == 0 and "--predictions" in done.stdout and "Examples" in done.stdout


def test_a_dataframe_needs_a_name(wh):
    with pytest.raises(relcol.RelcolError, match="name is required"):
        relcol.ingest_predictions(spam_frame(), wh)
    # a LazyFrame is not read: one clear error, not a TypeError from deep inside
    with pytest.raises(relcol.RelcolError, match=r"Got LazyFrame \(collect it first\)\."):
        relcol.ingest_predictions(spam_frame().lazy(), wh, name="llm")


def test_sample_ids_and_probabilities_survive_unchanged():
    rng = np.random.default_rng(0)
    raw = rng.dirichlet(np.ones(4), size=50)
    frame = pl.DataFrame(
        {
            "y_true": rng.integers(0, 4, 50),
            "sample_id": rng.choice(10**12, size=50, replace=False),
            "proba": raw,
        }
    )
    read = read_predictions(frame)
    assert read.rows["sample_id"].to_list() == frame["sample_id"].to_list()
    np.testing.assert_array_equal(read.rows["confidence"].to_numpy(), raw.max(axis=1))
    np.testing.assert_array_equal(read.rows["y_pred"].to_numpy(), raw.argmax(axis=1))


def test_long_vectors_are_stored_in_row_groups_of_at_most_2_to_the_22_entries(wh):
    """Polars' streaming engine explodes a row group's vectors at once (the classwise ECE):
    1000 classes give row groups of 2²² // 1000 = 4194 rows, the rows themselves unchanged."""
    rng = np.random.default_rng(1)
    raw = rng.dirichlet(np.ones(1000), size=5000)
    frame = pl.DataFrame({"y_true": rng.integers(0, 1000, 5000), "proba": raw})
    relcol.ingest_predictions(frame, wh, name="wide")
    (part,) = wh.root.glob("predictions/study=wide/*/part-*.parquet")
    meta = pq.ParquetFile(part).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4194, 806]
    stored = wh.predictions("wide").sort("sample_id").collect()
    np.testing.assert_array_equal(np.stack(stored["proba"].to_numpy()), raw.astype(np.float32))


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
@pytest.mark.parametrize("group", [3, None])
def test_vectors_read_in_blocks_give_numpys_arg_max_maximum_and_float32(tmp_path, dtype, group):
    """Lists in several row groups (blocks of 2²² entries: 1100 classes make 3813 rows) or one,
    in Float64 or Float32: y_pred is numpy's arg max (the lowest index on ties), the
    confidence its maximum, the stored vector the Float32 of the file's."""
    rng = np.random.default_rng(5)
    raw = rng.dirichlet(np.ones(1100), size=9000)
    raw[7, :2] = raw[7].max() + 1e-3  # a tie, at classes 0 and 1
    raw[7] /= raw[7].sum()
    raw = raw.astype(np.float32 if dtype == pl.Float32 else np.float64)
    frame = pl.DataFrame({"y_true": rng.integers(0, 1100, 9000), "proba": raw})
    path = tmp_path / "p.parquet"
    frame.with_columns(pl.col("proba").cast(pl.List(dtype))).write_parquet(
        path, row_group_size=group and 3000
    )
    read = read_predictions(path)
    assert read.rows["y_pred"][7] == 0
    np.testing.assert_array_equal(read.rows["y_pred"].to_numpy(), raw.argmax(axis=1))
    np.testing.assert_array_equal(
        read.rows["confidence"].to_numpy(), raw.max(axis=1).astype(np.float64)
    )
    np.testing.assert_array_equal(np.stack(read.rows["proba"].to_numpy()), raw.astype(np.float32))
    assert read.rows["proba"].n_chunks() == 1


def test_a_frame_is_hashed_as_its_arrow_ipc_bytes():
    frame = spam_frame()
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    read = read_predictions(frame, columns={"y_true": "truth"})
    assert read.spec["sha256"] == hashlib.sha256(buffer.getvalue()).hexdigest()


def test_by_class_has_each_predicted_classs_metrics_and_its_vector_scores(wh):
    """The top-label metrics, Brier and NLL of the rows predicted as each class, against numpy
    on the stored (Float32) vectors; no classwise ECE (K² × M sums per cell)."""
    rng = np.random.default_rng(2)
    raw = rng.dirichlet(np.full(3, 0.7), size=300)
    y_true = rng.integers(0, 3, 300)
    relcol.ingest_predictions(pl.DataFrame({"y_true": y_true, "proba": raw}), wh, name="tri")
    table = relcol.by_class(wh, study="tri")
    assert "classwise_ece" not in table.columns and table["class_name"].to_list() == ["0", "1", "2"]
    p = raw.astype(np.float32).astype(np.float64)
    predicted = p.argmax(axis=1)
    for row in table.iter_rows(named=True):
        rows = predicted == row["y_pred"]
        truth = np.eye(3)[y_true[rows]]
        assert row["n"] == rows.sum()
        assert row["accuracy"] == pytest.approx((y_true[rows] == row["y_pred"]).mean(), abs=1e-15)
        assert row["brier"] == pytest.approx(((p[rows] - truth) ** 2).sum(axis=1).mean(), rel=1e-13)
        true_p = p[rows, y_true[rows]]
        assert row["nll"] == pytest.approx(-np.log(np.maximum(true_p, 1e-15)).mean(), rel=1e-13)


def test_by_class_in_runs_of_cells_is_the_table_of_one_pass(wh, monkeypatch):
    # a large study's by-class table is computed a run of whole cells at a time, like the
    # per-cell tables; cut into runs of one cell it is the one-pass table
    import relcol.workflows._external_predictions as external
    from relcol.metrics import by_chunks

    rng = np.random.default_rng(5)
    frames = [
        pl.DataFrame(
            {
                "model": f"m{m}",
                "y_true": rng.integers(0, 3, 200),
                "proba": rng.dirichlet([1] * 3, 200),
            }
        ).with_row_index("sample_id")
        for m in range(4)
    ]
    relcol.ingest_predictions(pl.concat(frames), wh, name="four")
    budgets = []

    def with_budget(budget):
        def chunked(*args, **kwargs):
            budgets.append(budget)
            return by_chunks(*args, **kwargs, budget=budget)

        return chunked

    monkeypatch.setattr(external, "by_chunks", with_budget(10**9))
    whole = relcol.by_class(wh, study="four")
    monkeypatch.setattr(external, "by_chunks", with_budget(200))
    runs = relcol.by_class(wh, study="four")
    assert budgets == [10**9, 200] and whole.height == 12
    assert runs.equals(whole)


def benchmark_layout() -> pl.DataFrame:
    """A corruption benchmark's layout: m1's clean rows under corruption 'none', its blur at
    severities 1 and 2 only, its fog with a severity 0 of its own; m2 has blur and no clean
    rows. Five samples, three classes, an agreement per row."""
    rng = np.random.default_rng(3)
    blocks = []
    for model, corruption, severities in (
        ("m1", "none", [0.0]),
        ("m1", "blur", [1.0, 2.0]),
        ("m1", "fog", [0.0, 1.0]),
        ("m2", "blur", [1.0, 2.0]),
    ):
        for severity in severities:
            p = rng.dirichlet(np.ones(3), size=5)
            blocks.append(
                pl.DataFrame(
                    {
                        "model": model,
                        "corruption": corruption,
                        "severity": severity,
                        "sample_id": np.arange(5),
                        "y_true": [0, 1, 2, 1, 0],
                        "proba": p.tolist(),
                        "agreement": rng.uniform(size=5),
                    }
                )
            )
    return pl.concat(blocks)


def test_clean_rows_give_a_severity_0_to_every_curve_without_one(wh):
    frame = benchmark_layout()
    result = relcol.ingest_predictions(frame, wh, name="bench")
    assert result.clean_reference == {
        "served": [["predictions", "m1", "blur"]],
        "without": [["predictions", "m2", "blur"]],
    }
    assert result.rows == frame.height + 5  # m1's five clean rows, once more
    stored = wh.predictions("bench").collect()
    key = ["sample_id"]
    clean = stored.filter(pl.col("model") == "m1", pl.col("corruption") == "none").sort(key)
    start = stored.filter(pl.col("model") == "m1", pl.col("corruption") == "blur")
    start = start.filter(pl.col("severity") == 0.0).sort(key)
    assert start.drop("corruption").equals(clean.drop("corruption"))
    # the clean rows are the file's own: y_pred the arg max, confidence its probability
    given = frame.filter(pl.col("model") == "m1", pl.col("corruption") == "none").sort(key)
    p = np.array(given["proba"].to_list())
    assert start["y_pred"].to_list() == p.argmax(axis=1).tolist()
    assert start["confidence"].to_numpy() == pytest.approx(p.max(axis=1).astype(np.float32))
    # fog had its own severity 0 and m2 had no clean rows: neither got one
    fog = stored.filter(pl.col("corruption") == "fog", pl.col("severity") == 0.0)
    assert fog.height == 5
    assert stored.filter(pl.col("model") == "m2", pl.col("severity") == 0.0).height == 0
    annotations = wh.sql(
        "SELECT corruption, sample_id, agreement FROM annotations "
        "WHERE model = 'm1' AND severity = 0 AND corruption <> 'fog' ORDER BY sample_id"
    )
    by = annotations.partition_by("corruption", as_dict=True)
    assert by[("blur",)].drop("corruption").equals(by[("none",)].drop("corruption"))
    assert by[("none",)]["agreement"].to_list() == given["agreement"].to_list()
    spec = json.loads(wh.sql("SELECT spec FROM runs")["spec"][0])
    assert spec["clean_reference"] == result.clean_reference
    # the curve now starts at the clean model: its clean accuracy is the clean rows'
    cal = relcol.calibration(wh, study="bench").filter(pl.col("severity") == 0.0)
    accuracy = dict(zip(cal["corruption"] + "/" + cal["model"], cal["accuracy"], strict=True))
    expected = float(np.mean(p.argmax(axis=1) == given["y_true"].to_numpy()))
    assert accuracy == pytest.approx(
        {"none/m1": expected, "blur/m1": expected, "fog/m1": accuracy["fog/m1"]}
    )


def test_a_file_whose_curves_all_start_at_0_is_stored_as_it_is():
    frame = benchmark_layout().filter(pl.col("corruption") != "blur")
    read = read_predictions(frame)
    assert read.rows.height == frame.height
    assert read.spec["clean_reference"] == {"served": [], "without": []}


def test_multilabel_clean_rows_serve_each_label_s_curve():
    frame = pl.DataFrame(
        {
            "corruption": ["none", "none", "blur", "blur", "blur"],
            "severity": [0.0, 0.0, 1.0, 1.0, 1.0],
            "sample_id": [0, 0, 0, 0, 1],
            "label": ["A", "B", "A", "B", "A"],
            "y_true": [True, False, True, False, False],
            "probability": [0.9, 0.2, 0.6, 0.3, 0.4],
        }
    )
    read = read_predictions(frame, model="llm", dataset="d")
    assert read.spec["clean_reference"]["served"] == [
        ["d", "llm", "blur", "0"],
        ["d", "llm", "blur", "1"],
    ]
    start = read.rows.filter(pl.col("corruption") == "blur", pl.col("severity") == 0.0)
    assert start.sort("label")["confidence"].to_list() == pytest.approx([0.9, 0.8])


def test_the_cli_says_which_curves_the_clean_rows_started(tmp_path):
    path = tmp_path / "bench.parquet"
    benchmark_layout().write_parquet(path)
    done = CliRunner().invoke(
        main, ["ingest", "--predictions", str(path), "--warehouse", str(tmp_path / "wh")]
    )
    assert done.exit_code == 0, done.output
    assert "1 curve had no severity 0 of its own (blur of m1)" in done.stderr
    assert "no clean rows (corruption 'none', severity 0) of its model (blur of m2)" in done.stderr
    report = CliRunner().invoke(
        main,
        [
            "report",
            "--warehouse",
            str(tmp_path / "wh"),
            "--out",
            str(tmp_path / "r"),
            "--bootstrap",
            "200",
        ],
    )
    assert report.exit_code == 0, report.output
    legend = " ".join(report.stdout.split())
    assert "No severity 0, so nothing is compared with the clean model" in legend
    assert "the break and d* are empty, for: blur of m2." in legend
    page = (tmp_path / "r" / "index.html").read_text()
    assert "the break and d* are empty, for: blur of m2." in page


def test_several_files_become_one_study_with_the_models_of_each(tmp_path):
    # one file with a probability vector, one with a stated confidence, the same three emails
    spam_frame().drop("confidence:verbal").write_csv(tmp_path / "vector.csv")
    stated = pl.DataFrame(
        {"truth": ["spam", "ham", "spam"], "y_pred": ["spam", "spam", "ham"], "confidence": 0.8}
    )
    stated.write_csv(tmp_path / "stated.csv")
    files = [tmp_path / "vector.csv", tmp_path / "stated.csv"]
    wh = tmp_path / "wh"
    args = ["ingest", "--warehouse", str(wh), "--name", "emails", "--column", "y_true=truth"]
    done = CliRunner().invoke(
        main, [*args, "--predictions", str(files[0]), "--predictions", str(files[1])]
    )
    assert done.exit_code == 0, done.output
    assert "wrote 6 rows in 2 cells of study 'emails'" in done.stdout
    # the rows are each file's as read alone, a model per file name, one dataset: the study's
    alone = [
        read_predictions(f, columns={"y_true": "truth"}, model=f.stem, dataset="emails").rows
        for f in files
    ]
    warehouse = relcol.open_warehouse(wh)
    stored = warehouse.predictions("emails").collect().drop("study", "run_id")
    expected = pl.concat(alone, how="vertical_relaxed").select(stored.columns)
    sort = ["model", "sample_id"]
    assert stored.sort(sort).equals(expected.sort(sort).cast(stored.schema))
    assert sorted(stored["model"].unique()) == ["stated", "vector"]
    names = warehouse.sql("SELECT code, name FROM classes WHERE study = 'emails' ORDER BY code")
    assert names.rows() == [(0, "ham"), (1, "spam")]
    spec = json.loads(warehouse.sql("SELECT spec FROM runs")["spec"][0])
    assert [f["sha256"] for f in spec["files"]] == [
        hashlib.sha256(f.read_bytes()).hexdigest() for f in files
    ]
    kinds = relcol.confidence_sources(warehouse, study="emails")
    assert dict(kinds.select("source", "kind").rows()) == {
        "vector": "probability",
        "stated": "stated",
    }
    # the samples pair by row position, and each model's accuracy is its file's (by hand)
    samples = stored.group_by("model").agg(pl.col("sample_id").sort())
    assert samples["sample_id"].to_list() == [[0, 1, 2], [0, 1, 2]]
    table = relcol.calibration(warehouse, study="emails").sort("model")
    assert table["accuracy"].to_list() == pytest.approx([1 / 3, 2 / 3])  # stated, vector


def test_several_files_of_one_name_take_the_model_names_given_in_order(tmp_path):
    # two runs' files both called preds.csv: the names, one per file, tell them apart
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    files = [tmp_path / "a" / "preds.csv", tmp_path / "b" / "preds.csv"]
    spam_frame().drop("confidence:verbal").write_csv(files[0])
    wrong = {"truth": ["ham", "spam", "ham"], "y_pred": ["ham", "ham", "ham"], "confidence": 0.7}
    pl.DataFrame(wrong).write_csv(files[1])
    wh = tmp_path / "wh"
    paired = [
        arg
        for f, m in zip(files, ["first", "second"], strict=True)
        for arg in ("--predictions", str(f), "--model", m)
    ]
    done = CliRunner().invoke(
        main,
        ["ingest", "--warehouse", str(wh), "--name", "runs", "--column", "y_true=truth", *paired],
    )
    assert done.exit_code == 0, done.output
    stored = relcol.open_warehouse(wh).predictions("runs").collect()
    assert sorted(stored["model"].unique()) == ["first", "second"]
    alone = read_predictions(files[1], columns={"y_true": "truth"}, model="second", dataset="runs")
    second = stored.filter(pl.col("model") == "second").drop("study", "run_id")
    assert second.sort("sample_id").equals(alone.rows.select(second.columns).cast(second.schema))
    # the same in Python, as a list of names
    result = relcol.ingest_predictions(
        files, wh, name="runs2", columns={"y_true": "truth"}, model=("first", "second")
    )
    assert result.sources == ("first", "second")


def test_a_list_of_one_file_is_that_file(wh, tmp_path):
    spam_frame().write_csv(tmp_path / "llm.csv")
    result = relcol.ingest_predictions([tmp_path / "llm.csv"], wh, columns={"y_true": "truth"})
    assert result.study == "llm" and result.sources == ("llm", "llm:verbal")
