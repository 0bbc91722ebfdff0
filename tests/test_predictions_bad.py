"""Bad prediction files (docs/development.md): each gets one clear line naming the file and what was
expected and found, exit code 2, and a warehouse whose every file is unchanged."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from relcol.cli import main

import relcol
from relcol.errors import ParameterError
from tests.conftest import TESTS
from tests.test_store import checksums

BAD = TESTS / "data" / "bad" / "predictions"

GOOD = {
    "sample_id": [0, 1, 2, 3],
    "y_true": ["cat", "dog", "dog", "cat"],
    "y_pred": ["cat", "dog", "cat", "cat"],
    "confidence": [0.9, 0.8, 0.6, 0.7],
}
MULTI = {
    "sample_id": [0, 0, 1, 1],
    "label": ["A", "B", "A", "B"],
    "y_true": [1, 0, 0, 1],
    "y_pred": [1, 0, 1, 1],
    "confidence": [0.9, 0.8, 0.6, 0.7],
}


def good(**changes) -> pl.DataFrame:
    return pl.DataFrame({**GOOD, **changes}, strict=False)


def vector(**changes) -> pl.DataFrame:
    base = {"y_true": ["cat", "dog"], "p_cat": [0.7, 0.2], "p_dog": [0.3, 0.8]}
    return pl.DataFrame({**base, **changes}, strict=False)


def multi(**changes) -> pl.DataFrame:
    return pl.DataFrame({**MULTI, **changes}, strict=False)


def csv_text(text: str):
    return lambda path: path.write_text(text)


def bad_file(name: str):
    """A bad input kept as a file under tests/data/bad/predictions/, copied as the input."""
    return lambda path: path.write_bytes((BAD / name).read_bytes())


# (id, file suffix, how to write it (a frame or a writer), extra arguments, words in the message)
CASES = [
    (
        "confidence-above-1",
        ".csv",
        good(confidence=[0.9, 1.3, 0.6, 0.7]),
        [],
        "1 row is outside [0, 1] (from 1.3 to 1.3), first at row 2",
    ),
    (
        "confidence-negative",
        ".parquet",
        good(confidence=[0.9, 0.8, -0.2, -0.1]),
        [],
        "2 rows are outside [0, 1] (from -0.2 to -0.1), first at row 3",
    ),
    (
        "percentages",
        ".csv",
        good(confidence=[90, 80, 60, 70]),
        [],
        "percentages? divide them by 100",
    ),
    (
        "log-probabilities",
        ".csv",
        good(confidence=[-0.1, -0.2, -0.5, -0.3]),
        [],
        "log-probabilities? give them as answer_logprob",
    ),
    (
        "probability-column-above-1",
        ".csv",
        vector(p_cat=[0.7, 1.2]),
        [],
        "column 'p_cat' (cat probability): 1 row is outside [0, 1]",
    ),
    (
        "probabilities-not-summing-to-1",
        ".csv",
        pl.DataFrame(
            {
                "y_true": ["a"] * 5,
                "p_a": [0.5, 0.6, 0.3, 0.5, 0.5],
                "p_b": [0.5, 0.25, 0.52, 0.41, 0.5],
            }
        ),
        [],
        "3 rows have probabilities summing to 0.82–0.91 (expected 1 ± 0.001; relcol never "
        "renormalises), first at row 2",
    ),
    (
        "list-not-summing-to-1",
        ".parquet",
        pl.DataFrame({"y_true": [0, 1], "proba": [[0.5, 0.5], [0.2, 0.7]]}),
        [],
        "probabilities summing to 0.9–0.9",
    ),
    (
        "list-lengths-differ",
        ".parquet",
        pl.DataFrame({"y_true": [0, 1, 1], "proba": [[0.5, 0.5], [0.2, 0.8], [0.2, 0.3, 0.5]]}),
        [],
        "lists of another length than the usual 2",
    ),
    (
        "empty-probability-list",
        ".parquet",
        pl.DataFrame(
            {"y_true": [0, 1, 1], "proba": [[], [], [0.2, 0.8]]},
            schema={"y_true": pl.Int64, "proba": pl.List(pl.Float64)},
        ),
        [],
        "column 'proba': 2 rows hold an empty list; expected a probability per class, first at "
        "row 1",
    ),
    (
        "nan-confidence",
        ".csv",
        csv_text("y_true,y_pred,confidence\n1,1,0.9\n0,1,NaN\n"),
        [],
        "column 'confidence': 1 row has no value (empty, null or NaN)",
    ),
    (
        "empty-confidence-cell",
        ".csv",
        csv_text("y_true,y_pred,confidence\n1,1,0.9\n0,1,\n1,1,\n"),
        [],
        "2 rows have no value (empty, null or NaN); expected a value, first at row 2",
    ),
    (
        "nan-in-a-probability-list",
        ".parquet",
        pl.DataFrame({"y_true": [0, 1], "proba": [[0.5, 0.5], [math.nan, 1.0]]}),
        [],
        "holds a missing or NaN probability",
    ),
    (
        "label-outside-declared-classes",
        ".csv",
        good(y_true=["cat", "dog", "cow", "cow"]),
        ["--classes", "cat,dog"],
        "column 'y_true': 2 rows hold labels outside the declared classes (--classes: 'cat', "
        "'dog'): 'cow', first at row 3",
    ),
    (
        "label-outside-the-p-columns",
        ".csv",
        vector(y_true=["cat", "cow"]),
        [],
        "outside the declared classes (the probability columns: 'cat', 'dog'): 'cow'",
    ),
    (
        "code-outside-the-vector",
        ".parquet",
        pl.DataFrame({"y_true": [0, 2], "proba": [[0.5, 0.5], [0.2, 0.8]]}),
        [],
        "outside the declared classes (2 probabilities: '0', '1'): 2",
    ),
    (
        "prediction-outside-declared-classes",
        ".csv",
        good(y_pred=["cat", "dog", "bird", "cat"]),
        ["--classes", "cat,dog"],
        "column 'y_pred': 1 row holds labels outside",
    ),
    (
        "huge-undeclared-code",
        ".csv",
        good(y_true=[0, 1, 10**9, 1], y_pred=[0, 1, 1, 1]),
        [],
        "holds class code 1,000,000,000; integer labels are codes 0 … K−1 with K <= 100,000",
    ),
    (
        "negative-code",
        ".csv",
        good(y_true=[0, 1, -1, 1], y_pred=[0, 1, 1, 1]),
        [],
        "holds negative integers",
    ),
    (
        "duplicate-keys",
        ".csv",
        good(sample_id=[0, 1, 1, 0]),
        [],
        "2 rows repeat the key of an earlier row, first at row 3 (same sample_id=1 as row 2)",
    ),
    (
        "duplicate-multilabel-keys",
        ".csv",
        multi(label=["A", "A", "A", "B"]),
        [],
        "1 row repeats the key of an earlier row, first at row 2 (same sample_id=0, label=0 as row 1)",
    ),
    (
        "missing-y-true",
        ".csv",
        pl.DataFrame({"truth": [1], "y_pred": [1], "confidence": [0.5]}),
        [],
        "column 'y_true' not found; available: 'truth', 'y_pred', 'confidence'",
    ),
    (
        "misspelt-confidence",
        ".csv",
        pl.DataFrame({"y_true": [1], "y_pred": [1], "confidnce": [0.5]}),
        [],
        "did you mean 'confidnce' (--column confidence=confidnce)?",
    ),
    (
        "mapped-column-absent",
        ".csv",
        good(),
        ["--column", "y_true=truth"],
        "--column y_true=truth: column 'truth' not found; available: 'sample_id', 'y_true'",
    ),
    (
        "unknown-role",
        ".csv",
        good(),
        ["--column", "y_ture=y_true"],
        "unknown role 'y_ture' in --column y_ture=y_true (did you mean 'y_true'?)",
    ),
    (
        "no-score-at-all",
        ".csv",
        pl.DataFrame({"y_true": [1], "y_pred": [1]}),
        [],
        "expected a probability vector (a list column proba, or p_<class> columns) or y_pred with "
        "confidence",
    ),
    (
        "confidence-without-prediction",
        ".csv",
        pl.DataFrame({"y_true": [1], "confidence": [0.5]}),
        [],
        "column 'y_pred' not found",
    ),
    (
        "empty-file",
        ".csv",
        csv_text(""),
        [],
        "the file is empty: expected a header and rows; found 0 bytes",
    ),
    (
        "header-only",
        ".csv",
        csv_text("y_true,y_pred,confidence\n"),
        [],
        "the file is empty: expected one row per prediction; found columns 'y_true', 'y_pred', "
        "'confidence' but no rows",
    ),
    ("empty-parquet", ".parquet", good().head(0), [], "but no rows"),
    ("not-parquet", ".parquet", csv_text("y_true\n1\n"), [], "cannot read as PARQUET"),
    (
        "unknown-suffix",
        ".xlsx",
        csv_text("y_true\n1\n"),
        [],
        "unknown prediction file type '.xlsx'",
    ),
    (
        "text-in-a-number-column",
        ".csv",
        good(confidence=["0.9", "high", "0.6", "0.7"]),
        [],
        "1 row holds text where a number is expected (e.g. 'high'), first at row 2",
    ),
    (
        "string-confidence-in-json",
        ".jsonl",
        good(confidence=["0.9", "0.8", "0.6", "0.7"]),
        [],
        "column 'confidence': expected numbers; found text (e.g. '0.9' at row 1)",
    ),
    (
        "float-labels",
        ".parquet",
        good(y_true=[1.0, 0.0, 1.5, 1.0], y_pred=[1.0, 0.0, 1.0, 1.0]),
        [],
        "column 'y_true': expected class codes (integers) or class names (text); found type Float64",
    ),
    (
        "names-and-codes-mixed",
        ".csv",
        good(y_pred=[0, 1, 1, 0]),
        [],
        "y_true ('y_true') holds class names (text) but y_pred ('y_pred') holds class codes",
    ),
    (
        "names-in-two-columns-codes-in-one",
        ".csv",
        good(y_pred=[0, 1, 1, 0], y_clean=["cat", "dog", "cat", "cat"]),
        [],
        "y_true ('y_true'), y_clean ('y_clean') hold class names (text) but y_pred ('y_pred') "
        "holds class codes",
    ),
    (
        "fractional-seed",
        ".parquet",
        good(seed=[0.0, 1.5, 0.0, 0.0]),
        [],
        "column 'seed': 1 row holds numbers that are not whole (e.g. 1.5); expected integers, "
        "first at row 2",
    ),
    (
        "whole-seeds-stored-as-floats",
        ".parquet",
        good(seed=[0.0, 1.0, 0.0, 0.0]),
        [],
        "column 'seed': expected integers; found whole numbers stored as type Float64",
    ),
    (
        "negative-severity",
        ".csv",
        good(severity=[0.0, -0.5, 0.0, 0.0]),
        [],
        "1 row is negative or infinite; expected a severity d >= 0",
    ),
    (
        "confidence-disagreeing-with-its-vector",
        ".parquet",
        pl.DataFrame(
            {"y_true": [0, 1], "confidence": [0.6, 0.9], "proba": [[0.6, 0.4], [0.3, 0.7]]}
        ),
        [],
        "1 row differs from the probability of y_pred by more than 0.001 (up to 0.2)",
    ),
    (
        "names-with-an-unnamed-vector",
        ".parquet",
        pl.DataFrame({"y_true": ["a", "b"], "proba": [[0.6, 0.4], [0.3, 0.7]]}),
        [],
        "declare them in vector order with --classes",
    ),
    (
        "multilabel-truth-not-0-1",
        ".csv",
        multi(y_true=[1, 0, 2, 1]),
        [],
        "column 'y_true': 1 row holds values other than 0/1 (label absent/present) in multi-label "
        "rows: 2 (column 'label' makes the file multi-label; if it holds single-label classes, "
        "map it with --column y_true=label), first at row 3",
    ),
    (
        "multilabel-without-sample-id",
        ".csv",
        multi().drop("sample_id"),
        [],
        "column 'sample_id' not found",
    ),
    (
        "multilabel-with-a-vector",
        ".parquet",
        multi(proba=[[0.1, 0.9]] * 4),
        [],
        "a probability vector (proba) is for single-label files",
    ),
    (
        "probability-without-labels",
        ".csv",
        pl.DataFrame({"y_true": [1], "probability": [0.5]}),
        [],
        "is P(label present) of multi-label rows, but the file has no label column",
    ),
    (
        "agreement-above-1",
        ".csv",
        multi(agreement=[1.0, 0.5, 1.5, 0.0]),
        [],
        "column 'agreement': 1 row is outside [0, 1]",
    ),
    (
        "bad-split-value",
        ".csv",
        good(split=["cal", "test", "train", "test"]),
        [],
        "column 'split': 1 row holds 'train'; expected one of calibration, cal, val",
    ),
    (
        "sample-in-both-splits",
        ".csv",
        multi(split=["cal", "test", "test", "test"]),
        [],
        "sample_id 0 is in both splits (rows 1, 2)",
    ),
    (
        "two-unnamed-scores",
        ".csv",
        multi(probability=[0.9, 0.2, 0.6, 0.7]),
        [],
        "two unnamed scores ('confidence', 'probability')",
    ),
    ("column-syntax", ".csv", good(), ["--column", "y_true"], "--column must be ROLE=COLUMN"),
    ("name-escaping-the-warehouse", ".csv", good(), ["--name", "../escape"], "study name must be"),
    (
        "an-existing-study",
        ".csv",
        good(),
        ["--name", "existing"],
        "study 'existing' is already in warehouse",
    ),
    (
        "study-and-predictions",
        ".csv",
        good(),
        ["--study", "x.toml"],
        "give --study or --predictions",
    ),
    ("tolerance-out-of-range", ".csv", good(), ["--tolerance", "2"], "tolerance must be a number"),
    (
        "unsigned-sample-id-above-int64",
        ".parquet",
        good(sample_id=pl.Series([0, 1, 2, 2**63 + 5], dtype=pl.UInt64)),
        [],
        "column 'sample_id': 1 row is outside the integer range [-9223372036854775808, "
        "9223372036854775807], first at row 4",
    ),
    (
        "unsigned-seed-above-int32",
        ".parquet",
        good(seed=pl.Series([0, 2**32 - 1, 0, 0], dtype=pl.UInt32)),
        [],
        "column 'seed': 1 row is outside the integer range [-2147483648, 2147483647], "
        "first at row 2",
    ),
    (
        "unsigned-label-code-above-int64",
        ".parquet",
        good(
            y_true=pl.Series([0, 1, 2**64 - 1, 1], dtype=pl.UInt64),
            y_pred=pl.Series([0, 1, 1, 1], dtype=pl.UInt64),
        ),
        [],
        "column 'y_true': 1 row holds class codes above 2**63 − 1, first at row 3",
    ),
    (
        "jsonl-type-error-names-the-offending-row",
        ".jsonl",
        bad_file("text-confidence-third-row.jsonl"),
        [],
        "column 'confidence': 1 row holds text where a number is expected (e.g. 'high'), "
        "first at row 3",
    ),
    (
        "jsonl-broken-line-names-the-line",
        ".jsonl",
        bad_file("broken-third-line.jsonl"),
        [],
        "cannot read as JSONL: line 3, column 54: Expecting property name",
    ),
    (
        "jsonl-line-not-an-object",
        ".jsonl",
        bad_file("array-line.jsonl"),
        [],
        "cannot read as JSONL: line 2: expected an object {...} per line; found list",
    ),
    (
        "csv-two-y-true-columns",
        ".csv",
        bad_file("two-y-true-columns.csv"),
        [],
        "the header names column 'y_true' twice (columns 1 and 4); expected each column once",
    ),
    (
        "tsv-two-columns-of-one-name",
        ".tsv",
        csv_text("y_true\ty_pred\ty_pred\nA\tA\tB\n"),
        [],
        "the header names column 'y_pred' twice (columns 2 and 3)",
    ),
    (
        "column-mapped-away-from-its-role",
        ".csv",
        good(),
        ["--column", "y_true=y_pred"],
        "no column plays y_pred: column 'y_pred' plays y_true (--column y_true=y_pred)",
    ),
    (
        "multilabel-y-pred-1-with-probability-0.1",
        ".csv",
        bad_file("multilabel-y-pred-1-with-p-0.1.csv"),
        [],
        "column 'probability': 1 row contradicts y_pred (y_pred = 1 with P(label present) < 0.5, "
        "or 0 with P > 0.5); expected y_pred = 1 when P > 0.5 and 0 when P < 0.5, first at row 2",
    ),
    (
        "blank-model-name",
        ".csv",
        bad_file("blank-model-name.csv"),
        [],
        "column 'model': 1 row is empty or blank; expected a name, first at row 2",
    ),
    ("empty-model-option", ".csv", good(), ["--model", ""], "model must be a non-empty string"),
    (
        "escape-in-model-name",
        ".csv",
        bad_file("escape-in-model-name.csv"),
        [],
        "column 'model': 1 row holds control characters (e.g. '\\x1b[31mresnet\\x07'); expected "
        "printable names, first at row 2",
    ),
    (
        "nul-in-class-name",
        ".csv",
        bad_file("nul-in-class-name.csv"),
        [],
        "column 'y_true': 1 row holds control characters (e.g. 'dog\\x00')",
    ),
    (
        "escape-in-model-option",
        ".csv",
        good(),
        ["--model", "a\x1b[2Jb"],
        "model must be a non-empty string without control characters. Got 'a\\x1b[2Jb'.",
    ),
    (
        "empty-proba-prefix",
        ".csv",
        vector(),
        ["--proba-prefix", ""],
        "proba_prefix must be a non-empty string. Got ''.",
    ),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    """A warehouse already holding a study, so 'unchanged' covers existing files too."""
    root = tmp_path_factory.mktemp("bad") / "wh"
    relcol.ingest_predictions(pl.DataFrame(GOOD), root, name="existing")
    return root


@pytest.mark.parametrize(
    ("suffix", "content", "extra", "message"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_bad_prediction_file_gets_one_line_exit_2_and_changes_nothing(
    warehouse, tmp_path, suffix, content, extra, message
):
    path = tmp_path / f"predictions{suffix}"
    if callable(content):
        content(path)
    elif suffix in (".csv", ".tsv"):
        content.write_csv(path, separator="\t" if suffix == ".tsv" else ",")
    elif suffix == ".parquet":
        content.write_parquet(path)
    else:
        content.write_ndjson(path)
    before = checksums(warehouse)
    done = CliRunner().invoke(
        main, ["ingest", "--predictions", str(path), "--warehouse", str(warehouse), *extra]
    )
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    assert done.stderr.startswith("relcol: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr, done.stderr
    if not {"--name", "--study", "--tolerance", "--model", "--proba-prefix"} & set(extra) and extra[
        :1
    ] != ["--column"]:
        assert str(path) in done.stderr  # the file is named
    assert checksums(warehouse) == before


def test_a_file_that_changes_while_it_is_read_is_refused(warehouse, tmp_path, monkeypatch):
    """The runs table's SHA-256 is of the bytes read before parsing: a file still being
    written when it is parsed (its size or time stamp changed) is refused."""
    path = tmp_path / "predictions.parquet"
    good().write_parquet(path)
    read_parquet = pl.read_parquet

    def and_append(source, *args, **kwargs):
        frame = read_parquet(source, *args, **kwargs)
        with open(path, "ab") as file:
            file.write(b"more")
        return frame

    monkeypatch.setattr(pl, "read_parquet", and_append)
    before = checksums(warehouse)
    done = CliRunner().invoke(
        main, ["ingest", "--predictions", str(path), "--warehouse", str(warehouse)]
    )
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"relcol: error: {path}: the file changed while it was read; ingest it once it is "
        "complete\n"
    )
    assert checksums(warehouse) == before


def test_every_case_is_distinct():
    assert len({case[0] for case in CASES}) == len(CASES)


def test_unsigned_integer_keys_are_accepted_when_they_fit_and_converted_exactly(tmp_path):
    # numpy/pandas write unsigned columns; every value below fits the long table's types
    frame = good(
        sample_id=pl.Series([0, 7, 2**40 + 3, 2**63 - 1], dtype=pl.UInt64),
        seed=pl.Series([0, 1, 2**31 - 1, 5], dtype=pl.UInt32),
        repeat=pl.Series([0, 255, 3, 9], dtype=pl.UInt8),
    )
    frame.write_parquet(tmp_path / "unsigned.parquet")
    rows = relcol.read_predictions(tmp_path / "unsigned.parquet").rows.sort("sample_id")
    assert rows.get_column("sample_id").to_list() == [0, 7, 2**40 + 3, 2**63 - 1]
    assert rows.get_column("seed").to_list() == [0, 1, 2**31 - 1, 5]
    assert rows.get_column("repeat").to_list() == [0, 255, 3, 9]


# Several files into one study: (id, the files (name -> frame), extra arguments, message)
SEVERAL = [
    (
        "classes-differ",
        {"a": good(), "b": good(y_true=["cat", "dog", "bird", "cat"])},
        ["--name", "s"],
        "names the classes 'cat', 'dog' and",
    ),
    (
        "one-model-in-two-files",
        {"a": good(model="m"), "b": good(model="m")},
        ["--name", "s"],
        "both hold the model 'm' of the dataset 's': each model of a study comes from one file",
    ),
    (
        "single-and-multi-label",
        {"a": good(), "b": multi(y_true=[1, 0, 0, 1])},
        ["--name", "s"],
        "is single-label and",
    ),
    (
        "one-model-name-for-two-files",
        {"a": good(), "b": good()},
        ["--name", "s", "--model", "m"],
        "model gives 1 name for 2 prediction files: give one per file, in the same order",
    ),
    (
        "a-name-for-a-file-with-a-model-column",
        {"a": good(), "b": good(model="judge")},
        ["--name", "s", "--model", "m", "--model", "n"],
        "b.csv has a model column ('model'), which names its models; model names the model of a",
    ),
    (
        "one-model-name-twice",
        {"a": good(), "b": good()},
        ["--name", "s", "--model", "m", "--model", "m"],
        "model gives the name 'm' to two files",
    ),
    ("no-name", {"a": good(), "b": good()}, [], "name is required when ingesting several"),
]


@pytest.mark.parametrize(
    ("files", "extra", "message"), [c[1:] for c in SEVERAL], ids=[c[0] for c in SEVERAL]
)
def test_several_files_that_cannot_be_one_study_get_one_line_and_change_nothing(
    warehouse, tmp_path, files, extra, message
):
    paths = []
    for name, frame in files.items():
        frame.write_csv(tmp_path / f"{name}.csv")
        paths += ["--predictions", str(tmp_path / f"{name}.csv")]
    before = checksums(warehouse)
    done = CliRunner().invoke(main, ["ingest", *paths, "--warehouse", str(warehouse), *extra])
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    assert done.stderr.startswith("relcol: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr, done.stderr
    assert checksums(warehouse) == before


def test_model_names_that_do_not_match_the_files_are_refused(warehouse, tmp_path):
    good().write_csv(tmp_path / "a.csv")
    good().write_csv(tmp_path / "b.csv")
    before = checksums(warehouse)
    done = CliRunner().invoke(
        main,
        [
            *("ingest", "--predictions", str(tmp_path / "a.csv")),
            *("--model", "m", "--model", "n", "--warehouse", str(warehouse)),
        ],
    )
    assert done.exit_code == 2, done.output
    assert "model gives 2 names for 1 prediction file:" in done.stderr, done.stderr
    with pytest.raises(ParameterError, match="the DataFrame has a model column"):
        relcol.ingest_predictions(good(model="judge"), warehouse, name="s", model="m")
    with pytest.raises(ParameterError, match="model is one name for 2 prediction files"):
        relcol.ingest_predictions(
            [tmp_path / "a.csv", tmp_path / "b.csv"], warehouse, name="s", model="m"
        )
    assert checksums(warehouse) == before


def test_the_same_file_twice_is_refused(warehouse, tmp_path):
    good().write_csv(tmp_path / "a.csv")
    before = checksums(warehouse)
    twice = ["--predictions", str(tmp_path / "a.csv")] * 2
    done = CliRunner().invoke(
        main, ["ingest", *twice, "--name", "s", "--warehouse", str(warehouse)]
    )
    assert done.exit_code == 2, done.output
    assert "is given twice" in done.stderr and str(tmp_path / "a.csv") in done.stderr
    assert checksums(warehouse) == before
