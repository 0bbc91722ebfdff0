"""A corpus of malformed inputs: each gets one clear line, a non-zero exit, and a warehouse
whose every file is unchanged (DESIGN.md §8). Prediction files have their own corpus in
tests/test_predictions*.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.test_store import checksums

TEXT = TINY.read_text()


def edit(old: str, new: str) -> str:
    assert old in TEXT
    return TEXT.replace(old, new, 1)


# (id, spec text or None for no --study file, extra CLI arguments, expected words in the message)
SPECS = [
    ("unknown-operator", edit('name = "mcar"', 'name = "blur"'), "unknown corruption 'blur'"),
    ("unknown-model", edit('name = "naive_bayes"', 'name = "svm"'), "unknown model 'svm'"),
    ("unknown-dataset", edit('name = "wine"', 'name = "iris"'), "unknown dataset 'iris'"),
    ("unsorted-severities", edit("[0.0, 0.25, 0.5]", "[0.0, 0.5, 0.25]"), "strictly increasing"),
    ("repeated-severity", edit("[0.0, 0.25, 0.5]", "[0.0, 0.25, 0.25]"), "strictly increasing"),
    ("no-clean-level", edit("[0.0, 0.25, 0.5]", "[0.25, 0.5]"), "must start at 0.0"),
    ("empty-grid", edit("[0.0, 0.25, 0.5]", "[]"), "non-empty list"),
    ("severity-string", edit("[0.0, 0.25, 0.5]", '[0.0, "0.5"]'), "finite numbers"),
    ("severity-nan", edit("[0.0, 0.25, 0.5]", "[0.0, nan]"), "finite numbers"),
    ("severity-inf", edit("[0.0, 0.25, 0.5]", "[0.0, inf]"), "finite numbers"),
    (
        "rate-above-one",
        edit("[0.0, 0.25, 0.5]", "[0.0, 1.5]"),
        "severity must be a finite number in",
    ),
    ("negative-noise", edit("[0.0, 0.5, 1.0]", "[0.0, -0.5]"), "strictly increasing"),
    (
        "no-models",
        edit('[[models]]\nname = "naive_bayes"\n', "")
        .replace('[[models]]\nname = "logistic_regression"\n', "")
        .replace('[[models]]\nname = "lightgbm"\nn_estimators = 20\n', ""),
        "give at least one [[models]]",
    ),
    (
        "models-not-tables",
        edit('[[models]]\nname = "naive_bayes"\n', "").replace("[[models]]", "[[modelz]]"),
        "unknown key",
    ),
    ("typo-top-level", "seedz = [1]\n" + TEXT, "unknown key(s) ['seedz']"),
    ("no-name", TEXT.replace('name = "tiny"\n', ""), "`name` is required"),
    ("name-dotdot", edit('name = "tiny"', 'name = ".."'), "study name must be"),
    ("name-traversal", edit('name = "tiny"', 'name = "../../etc"'), "study name must be"),
    ("name-slash", edit('name = "tiny"', 'name = "a/b"'), "study name must be"),
    ("name-quote", edit('name = "tiny"', 'name = "it\'s"'), "study name must be"),
    ("name-nul", edit('name = "tiny"', 'name = "a\\u0000b"'), "study name must be"),
    (
        "name-sql",
        edit('name = "tiny"', 'name = "x\'; DROP VIEW predictions; --"'),
        "study name must be",
    ),
    ("name-not-string", edit('name = "tiny"', "name = 3"), "study name must be"),
    (
        "model-id-quote",
        edit('name = "lightgbm"', 'name = "lightgbm"\nid = "lgbm\'x"'),
        "id must be",
    ),
    (
        "model-id-slash",
        edit('name = "lightgbm"', 'name = "lightgbm"\nid = "../lgbm"'),
        "id must be",
    ),
    ("duplicate-model", TEXT + '\n[[models]]\nname = "naive_bayes"\n', "appears twice"),
    ("bad-model-param", edit("n_estimators = 20", "n_trees = 20"), "not parameter(s) of lightgbm"),
    (
        "random-state-param",
        edit("n_estimators = 20", "random_state = 3"),
        "random_state is set by the study's seeds",
    ),
    (
        "bad-test-size",
        "test_size = 0\n" + TEXT.replace("test_size = 0.3\n", ""),
        "test_size must be",
    ),
    ("bool-repeats", TEXT.replace("repeats = 2", "repeats = true"), "repeats must be"),
    ("negative-seed", TEXT.replace("seeds = [0, 1]", "seeds = [-1]"), "seeds must be"),
    ("duplicate-seed", TEXT.replace("seeds = [0, 1]", "seeds = [1, 1]"), "seeds must be"),
    ("bad-toml", TEXT.replace('name = "tiny"', "name = "), "not valid TOML"),
    (
        "duplicate-key-toml",
        TEXT.replace('name = "tiny"', 'name = "tiny"\nname = "other"'),
        "not valid TOML",
    ),
    (
        "bad-driver",
        edit('name = "mcar"', 'name = "mar"\ndriver = 99'),
        "driver must be a feature name or index",
    ),
    (
        "unknown-feature-name",
        edit('name = "mcar"', 'name = "mcar"\ncolumns = ["alcohol", "colour"]'),
        "no feature named 'colour'",
    ),
    (
        "mar-weights-without-drivers",
        edit('name = "mcar"', 'name = "mar"\nweights = [1.0, 2.0]'),
        "weights must be a list with one number per driver",
    ),
    (
        "mar-constant-driver",
        edit('name = "wine"', 'name = "digits"').replace(
            'name = "mcar"', 'name = "mar"\ndriver = 0', 1
        ),
        "driver feature(s) [0] give a score that is constant in the clean training data",
    ),
    ("bad-fraction", edit('name = "mcar"', 'name = "mcar"\nfraction = 1.5'), "fraction must be"),
    (
        "corruption-repeats",
        edit('name = "mcar"', 'name = "mcar"\nrepeats = 0'),
        "repeats must be an int in [1, 10000]",
    ),
    ("bad-beta", edit('name = "mcar"', 'name = "mar"\nbeta = "strong"'), "beta must be"),
    (
        "unknown-operator-param",
        edit('name = "mcar"', 'name = "mcar"\nrate = 0.3'),
        "unknown parameter",
    ),
    ("bias-unknown-base", edit('base = "mcar"', 'base = "blur"'), "base must be one of"),
    (
        "bias-recursive-base",
        edit('base = "mcar"', 'base = "structural_bias"'),
        "base must be one of",
    ),
    (
        "bias-class-out-of-range",
        edit("target_class = 1", "target_class = 9"),
        "target_class must be an int in",
    ),
    ("synthetic-too-many-classes", edit("n_classes = 3", "n_classes = 40"), "n_classes"),
    (
        "user-file-missing",
        edit('name = "wine"', 'name = "mine"\npath = "nope.csv"\ntarget = "y"'),
        "file not found",
    ),
    (
        "categorical-shift-without-categories",
        edit('name = "mcar"', 'name = "categorical_shift"'),
        "corruption 'categorical_shift' on dataset 'wine': categorical_shift: the dataset has no "
        "categorical feature",
    ),
    (
        "swap-a-column-twice",
        edit('name = "mcar"', 'name = "swapped_columns"\npairs = [[0, 1], [1, 2]]'),
        "column 1 appears in two pairs",
    ),
    (
        "transition-matrix-not-stochastic",
        edit('name = "mcar"', 'name = "label_transition"\nmatrix = [[1, 0], [0, 1]]'),
        "matrix must be 3 rows of 3 numbers",
    ),
    ("scaling-by-one", edit('name = "mcar"', 'name = "scaling"\nfactors = [1]'), "not 1"),
    ("not-utf8", None, "not UTF-8"),
]


def relcol(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "relcol.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bad")
    done = relcol("ingest", "--study", str(TINY), "-q", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return cwd


def assert_refused(
    done: subprocess.CompletedProcess, words: str, workdir: Path, before: dict
) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("relcol: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert checksums(workdir / "warehouse") == before


@pytest.mark.parametrize(("case", "text", "words"), SPECS, ids=[s[0] for s in SPECS])
def test_a_malformed_study_spec_is_refused(workdir, tmp_path, case, text, words):
    before = checksums(workdir / "warehouse")
    spec = tmp_path / "spec.toml"
    if text is None:
        spec.write_bytes(b'name = "caf\xe9"\n')
    else:
        spec.write_text(
            text.replace('name = "tiny"', 'name = "other"') if case != "no-name" else text
        )
    assert_refused(relcol("ingest", "--study", str(spec), cwd=workdir), words, workdir, before)


OPTIONS = [
    ("study-missing-file", ["ingest", "--study", "absent.toml"], "cannot read study spec"),
    ("study-is-folder", ["ingest", "--study", "."], "is a directory"),
    ("unknown-option", ["ingest", "--bogus"], "No such option '--bogus'"),
    ("unknown-command", ["ingets"], "No such command 'ingets'"),
    ("bins-zero", ["report", "--bins", "0"], "'--bins'"),
    ("stability-at-zero", ["report", "--stability-at", "0"], "'--stability-at'"),
    ("bins-text", ["report", "--bins", "many"], "'--bins'"),
    ("report-unknown-study", ["report", "--study", "nope"], "no study 'nope'"),
    ("report-traversal", ["report", "--study", "../x"], "study name must be"),
    ("sql-format", ["sql", "SELECT 1", "--format", "xml"], "'--format'"),
    ("sql-missing-query", ["sql"], "Missing argument 'QUERY'"),
    ("sql-syntax", ["sql", "SELEC 1"], "SQL error"),
    ("sql-unknown-view", ["sql", "SELECT * FROM predictionz"], "SQL error"),
    ("sql-copy-out", ["sql", "COPY predictions TO 'stolen.csv'"], "reading statements only"),
    ("sql-drop", ["sql", "DROP VIEW predictions"], "reading statements only"),
    ("sql-read-file", ["sql", "SELECT * FROM read_csv('/etc/passwd')"], "Permission Error"),
    ("sql-attach", ["sql", "ATTACH 'x.duckdb'"], "reading statements only"),
    ("portable-predictions", ["ingest", "--predictions", "p.csv", "--portable"], "applies only"),
    ("sql-unknown-study", ["sql", "SELECT 1", "--study", "nope"], "no study 'nope'"),
    ("sql-study-glob", ["sql", "SELECT 1", "--study", "t*"], "study name must be"),
    ("shell-study-traversal", ["shell", "--print-init", "--study", "../x"], "study name must be"),
    (
        "sql-quote-injection",
        ["sql", "SELECT * FROM calibration WHERE model = 'x'' OR 1=1"],
        "SQL error",
    ),
]


@pytest.mark.parametrize(("case", "args", "words"), OPTIONS, ids=[o[0] for o in OPTIONS])
def test_a_bad_option_or_query_is_refused(workdir, case, args, words):
    before = checksums(workdir / "warehouse")
    assert_refused(relcol(*args, cwd=workdir), words, workdir, before)
