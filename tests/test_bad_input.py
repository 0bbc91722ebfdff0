"""A corpus of malformed inputs: each gets one clear line, a non-zero exit, and a warehouse
whose every file is unchanged (docs/development.md). Prediction files have their own corpus in
tests/test_predictions*.py.

The cases run through the console entry point's code in this process (``relcol``); a sample
also runs as the installed command (``relcol_process``) and must read the same."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from relcol.errors import SpecError
from relcol.study import load_study, n_rows, parse_study
from tests.conftest import TESTS, TINY
from tests.test_store import checksums

TEXT = TINY.read_text()
BAD = TESTS / "data" / "bad"


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
    (
        "split-seed-beyond-2-32",
        TEXT.replace("split_seed = 0", "split_seed = 99999999999999999999"),
        "split_seed must be an int in [0, 2**32). Got 99999999999999999999.",
    ),
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
    (
        "model-param-wrong-type",
        edit('name = "logistic_regression"', 'name = "logistic_regression"\nC = "abc"'),
        "logistic_regression refuses its parameters {'C': 'abc'}: The 'C' parameter of "
        "LogisticRegression must be a float in the range (0.0, inf]. Got 'abc' instead.",
    ),
    (
        "model-param-negative-trees",
        edit('name = "naive_bayes"', 'name = "random_forest"\nn_estimators = -5'),
        "The 'n_estimators' parameter of RandomForestClassifier must be an int in the range "
        "[1, inf). Got -5 instead.",
    ),
    (
        "lightgbm-negative-rounds",
        edit("n_estimators = 20", "n_estimators = -5"),
        "lightgbm refuses its parameters {'n_estimators': -5}: n_estimators must be an int >= 1",
    ),
    (
        "lightgbm-native-check",
        edit("n_estimators = 20", "num_leaves = 1"),
        "lightgbm refuses its parameters {'num_leaves': 1}: Check failed: (num_leaves) > (1)",
    ),
    (
        "knn-more-neighbours-than-samples",
        edit('name = "logistic_regression"', 'name = "knn"\nn_neighbors = 100000'),
        # on workers (the default) the first fit to fail may be any seed's
        ") cannot be fitted or used with its parameters {'n_neighbors': "
        "100000}: Expected n_neighbors <= n_samples_fit",
    ),
    (
        "penalty-its-solver-lacks",
        edit('name = "logistic_regression"', 'name = "logistic_regression"\npenalty = "l1"'),
        "Solver lbfgs supports only 'l2' or None penalties, got l1 penalty.",
    ),
    (
        "mlp-negative-layer",
        edit('name = "logistic_regression"', 'name = "mlp"\nhidden_layer_sizes = [-1]'),
        "hidden_layer_sizes must be > 0, got [-1].",
    ),
    (
        "synthetic-29-tib",
        edit("n_samples = 300", "n_samples = 200_000_000_000").replace(
            "n_features = 6", "n_features = 20"
        ),
        "n_samples × n_features = 4,000,000,000,000 values (29.1 TiB as float64) exceeds the "
        "bound of 100,000,000 (762.9 MiB)",
    ),
    ("synthetic-flip-y", edit("n_classes = 3", "n_classes = 3\nflip_y = 2"), "flip_y must be"),
    (
        "synthetic-class-sep-text",
        edit("n_classes = 3", 'n_classes = 3\nclass_sep = "wide"'),
        "class_sep must be a number",
    ),
    (
        "synthetic-classes-beyond-corners",
        edit("n_informative = 4", "n_informative = 1").replace("n_classes = 3", "n_classes = 2"),
        "n_classes (2) must be <= 2**n_informative / 2 (1)",
    ),
    (
        "cost-above-the-bound",
        TEXT.replace("seeds = [0, 1]", f"seeds = {list(range(500))}")
        .replace("repeats = 2", "repeats = 10000")
        .replace(
            "severities = [0.0, 0.25, 0.5]", f"severities = {[i / 1000 for i in range(1000)]}"
        ),
        # 1000 + 1000 + 3 severities: mcar and label_noise take the grid, gaussian_noise its own
        "study 'other' would write 6,486,480,000,000 rows (144 test samples × 3 models × 500 "
        "seeds × 3003 severities × 10000 repeats) in 3,000 fits, above the bound of 50,000,000",
    ),
]


def relcol(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`relcol ARGS` run in ``cwd`` by the console entry point's own code (``relcol.cli``'s
    ``_run``: usage errors as one line, exit codes) in this process, which saves a Python
    start-up per case; ``relcol_process`` runs the same as a process of its own, for the cases
    that check what a shell sees."""
    from relcol.cli import _run

    folder, argv = Path.cwd(), sys.argv
    code = 0
    with CliRunner().isolation() as (out, err, _):
        os.chdir(cwd)
        sys.argv = ["relcol", *args]
        try:
            _run()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # a bug: shown as Python would show it
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = argv
            os.chdir(folder)
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(
            args, code, out.getvalue().decode(), err.getvalue().decode("utf-8", "replace")
        )


def relcol_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`relcol ARGS` in ``cwd``, as a process of its own: the console script installed beside
    this Python."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("relcol")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bad")
    done = relcol_process("ingest", "--study", str(TINY), "-q", cwd=cwd)
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
    # click's own words, quoted differently from one version to the next: the option named
    ("unknown-option", ["ingest", "--bogus"], "--bogus"),
    ("unknown-command", ["ingets"], "No such command 'ingets'"),
    ("bins-zero", ["report", "--bins", "0"], "bins must be an int in [1, 1000]. Got 0."),
    ("stability-at-zero", ["report", "--stability-at", "0"], "'--stability-at'"),
    ("bins-text", ["report", "--bins", "many"], "'--bins'"),
    ("report-unknown-study", ["report", "--study", "nope"], "no study 'nope'"),
    ("report-traversal", ["report", "--study", "../x"], "study name must be"),
    ("sql-format", ["sql", "SELECT 1", "--format", "xml"], "'--format'"),
    ("sql-missing-query", ["sql"], "Missing argument 'QUERY'"),
    ("sql-syntax", ["sql", "SELEC 1"], "SQL error"),
    ("sql-unknown-view", ["sql", "SELECT * FROM predictionz"], "SQL error"),
    (
        "sql-interval",
        ["sql", "SELECT [INTERVAL 1 DAY] AS gap", "--format", "csv"],
        "a type a Polars frame cannot hold: gap (INTERVAL[])",
    ),
    ("sql-copy-out", ["sql", "COPY predictions TO 'stolen.csv'"], "reading statements only"),
    ("sql-drop", ["sql", "DROP VIEW predictions"], "reading statements only"),
    ("sql-read-file", ["sql", "SELECT * FROM read_csv('/etc/passwd')"], "Permission Error"),
    ("sql-attach", ["sql", "ATTACH 'x.duckdb'"], "reading statements only"),
    ("portable-predictions", ["ingest", "--predictions", "p.csv", "--portable"], "applies only"),
    ("sql-unknown-study", ["sql", "SELECT 1", "--study", "nope"], "no study 'nope'"),
    ("sql-study-glob", ["sql", "SELECT 1", "--study", "t*"], "study name must be"),
    ("shell-study-traversal", ["shell", "--print-init", "--study", "../x"], "study name must be"),
    ("tau-infinite", ["report", "--tau", "inf"], "tau must be a number in [0, 1). Got inf."),
    ("tau-nan", ["report", "--tau", "nan"], "tau must be a number in [0, 1). Got nan."),
    ("alpha-nan", ["report", "--alpha", "nan"], "alpha must be a number in (0, 1). Got nan."),
    ("bins-too-many", ["report", "--bins", "5000"], "bins must be an int in [1, 1000]. Got 5000."),
    (
        "sql-bins-too-many",
        ["sql", "SELECT 1", "--bins", "1001"],
        "bins must be an int in [1, 1000]",
    ),
    ("shell-bins-too-many", ["shell", "--print-init", "--bins", "10000"], "bins must be an int"),
    (
        "recalibrate-bins-too-many",
        ["recalibrate", "--bins", "5000"],
        "bins must be an int in [1, 1000]. Got 5000.",
    ),
    # bins = 0: the library's check and message (as for report), whichever command
    (
        "sql-bins-zero",
        ["sql", "SELECT 1", "--bins", "0"],
        "bins must be an int in [1, 1000]. Got 0.",
    ),
    (
        "shell-bins-zero",
        ["shell", "--print-init", "--bins", "0"],
        "bins must be an int in [1, 1000]. Got 0.",
    ),
    (
        "recalibrate-bins-zero",
        ["recalibrate", "--bins", "0"],
        "bins must be an int in [1, 1000]. Got 0.",
    ),
    ("sql-empty", ["sql", ""], "the SQL query is empty (no statement). Got ''."),
    ("sql-only-comment", ["sql", "/* nothing */ ;"], "the SQL query is empty"),
    (
        "simulate-too-many-rows",
        ["simulate", "consistency", "--samples", "100000000"],
        "the simulation would write 96,000,000,000 rows",
    ),
    (
        "simulate-too-many-classes",
        ["simulate", "consistency", "--classes", "1000000000"],
        "classes must be <= 100,000",
    ),
    (
        "max-rows-with-predictions",
        ["ingest", "--predictions", "p.csv", "--max-rows", "9"],
        "applies only",
    ),
    (
        "outside-paths-with-predictions",
        ["ingest", "--predictions", "p.csv", "--allow-outside-paths"],
        "--allow-outside-paths applies only to a study",
    ),
    ("max-rows-zero", ["ingest", "--max-rows", "0"], "'--max-rows'"),
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


# Dataset files: (id, file under tests/data/bad/datasets, dataset keys, expected words)
DATASETS = [
    ("infinite-feature", "inf-feature.csv", "", "feature column 'a' holds inf at row 7"),
    (
        "feature-plus-minus-1e308",
        "plus-minus-1e308-feature.csv",
        "",
        "feature column 'b' holds values as large as 1e+308, too large for its variance",
    ),
    (
        "class-with-one-sample",
        "class-with-one-sample.csv",
        "",
        "class '2' has 1 sample(s); every class needs at least 2",
    ),
    (
        "nan-target",
        "nan-target.csv",
        "",
        "target column 't' has 1 missing value(s) (empty, null or NaN), first at row 8",
    ),
    (
        "escape-in-class-name",
        "escape-in-class-name.csv",
        "",
        "holds a class name with control characters ('\\x1b[2Jdog')",
    ),
    (
        "two-target-columns",
        "two-target-columns.csv",
        "",
        "the header names column 't' twice (columns 2 and 3); expected each column once",
    ),
    (
        "ragged-row",
        "ragged-row.csv",
        "",
        "cannot read: found more fields than defined in 'Schema'",
    ),
    ("features-include-target", "good.csv", 'features = ["a", "t"]', "features include the target"),
    ("features-a-string", "good.csv", 'features = "a"', "features must be a non-empty list"),
    ("features-empty", "good.csv", "features = []", "features must be a non-empty list"),
    ("features-twice", "good.csv", 'features = ["a", "a"]', "features name 'a' twice"),
    ("features-missing-column", "good.csv", 'features = ["a", "z"]', "column 'z' not found"),
    ("path-parent-folder", "../good.csv", "", "outside the spec's folder"),
    ("path-absolute", "/etc/passwd", "", "resolves to /etc/passwd, outside the spec's folder"),
    ("path-symlink-out", "link.csv", "", "outside the spec's folder"),
    ("target-not-a-string", "good.csv", "target = 3", "target must be a column name"),
    ("path-with-nul", "a\\u0000b.csv", "", "path 'a\\x00b.csv' cannot be resolved"),
    ("path-unknown-home", "~nobody-here-at-all/x.csv", "", "cannot be resolved"),
    ("path-symlink-loop", "loop.csv", "", "cannot be resolved: Symlink loop from"),
]

USER_SPEC = """name = "mine"
severities = [0.0, 0.5]
[[datasets]]
name = "own"
path = "{path}"
{keys}
[[models]]
name = "naive_bayes"
[[corruptions]]
name = "gaussian_noise"
"""


def user_spec(folder: Path, path: str, keys: str = "") -> Path:
    """A one-model study of a user file, written in ``folder`` beside a copy of the file."""
    folder.mkdir(parents=True, exist_ok=True)
    datasets = BAD / "datasets"
    if path == "loop.csv":  # a link to itself
        (folder / path).symlink_to(folder / path)
    elif path == "link.csv":  # a link inside the folder to a file outside it
        (folder.parent / "outside.csv").write_bytes((datasets / "good.csv").read_bytes())
        (folder / path).symlink_to(folder.parent / "outside.csv")
    elif path.startswith("../"):
        (folder.parent / path[3:]).write_bytes((datasets / path[3:]).read_bytes())
    elif (datasets / path).is_file():
        (folder / path).write_bytes((datasets / path).read_bytes())
    target = "" if "target" in keys else 'target = "t"'
    spec = folder / "spec.toml"
    spec.write_text(USER_SPEC.format(path=path, keys=f"{target}\n{keys}"))
    return spec


@pytest.mark.parametrize(("case", "path", "keys", "words"), DATASETS, ids=[d[0] for d in DATASETS])
def test_a_bad_dataset_file_or_entry_is_refused(workdir, tmp_path, case, path, keys, words):
    before = checksums(workdir / "warehouse")
    spec = user_spec(tmp_path / "spec", path, keys)
    assert_refused(relcol("ingest", "--study", str(spec), cwd=workdir), words, workdir, before)


def test_a_file_outside_the_spec_folder_is_read_only_when_allowed(tmp_path):
    spec = user_spec(tmp_path / "spec", "../good.csv")
    with pytest.raises(SpecError, match="outside the spec's folder"):
        load_study(spec)
    study = load_study(spec, allow_outside_paths=True)
    assert study.datasets[0].params["path"] == "../good.csv"
    text = spec.read_text()  # without a file, the folder is the one given (else the cwd)
    with pytest.raises(SpecError, match="outside the spec's folder"):
        parse_study(text, base=tmp_path / "spec")
    assert parse_study(text, base=tmp_path / "spec", allow_outside_paths=True).datasets


def test_the_cost_estimate_is_the_row_count_an_ingest_writes(workdir):
    # (54 wine + 90 synthetic test samples) × 3 models × 2 seeds × 12 severities over the
    # four corruptions × 2 repeats = 20,736: what the tiny study in the warehouse holds
    assert n_rows(load_study(TINY), [54, 90]) == 20_736
    counted = relcol("sql", "SELECT count(*) AS n FROM predictions", "--format", "csv", cwd=workdir)
    assert counted.stdout.split() == ["n", "20736"]
    before = checksums(workdir / "warehouse")
    done = relcol("ingest", "--study", str(TINY), "--max-rows", "20735", "--replace", cwd=workdir)
    assert_refused(done, "study 'tiny' would write 20,736 rows", workdir, before)
    assert "--max-rows 20736" in done.stderr


def test_terminal_output_shows_control_characters_and_data_stays_exact(workdir):
    query = "SELECT 'red' || chr(27) || '[31m' || chr(7) || chr(0) AS name"
    table = relcol("sql", query, cwd=workdir)
    assert table.returncode == 0, table.stderr
    # DuckDB's drawing shows them as escapes; anything it left raw, `say` would make visible
    assert "red\\e[31m\\a\\0" in table.stdout and "\x1b" not in table.stdout
    csv = relcol("sql", query, "--format", "csv", cwd=workdir)  # to a pipe: data, byte-exact
    assert csv.stdout == "name\nred\x1b[31m\x07\x00\n"
    # an error naming a file whose name holds an escape and a newline: still one line
    missing = relcol("ingest", "--predictions", "x\x1b[2J\ny.csv", "--name", "x", cwd=workdir)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert missing.stderr == "relcol: error: x␛[2J␊y.csv: no such prediction file\n"


@pytest.mark.parametrize(
    "case",
    ["unknown-option", "bins-zero", "sql-syntax", "unknown-operator", "infinite-feature"],
)
def test_a_refusal_reads_the_same_from_a_process_of_its_own(workdir, tmp_path, case):
    """The corpus runs in this process; a few of its cases, run as the command a shell
    starts, give the same exit code and the same one line."""
    args = dict((o[0], o[1]) for o in OPTIONS).get(case)
    if case == "unknown-operator":
        spec = tmp_path / "spec.toml"
        spec.write_text(dict((s[0], s[1]) for s in SPECS)[case].replace("tiny", "other", 1))
        args = ["ingest", "--study", str(spec)]
    elif case == "infinite-feature":
        args = ["ingest", "--study", str(user_spec(tmp_path / "spec", "inf-feature.csv"))]
    before = checksums(workdir / "warehouse")
    alone = relcol_process(*args, cwd=workdir)
    here = relcol(*args, cwd=workdir)
    assert (alone.returncode, alone.stderr) == (here.returncode, here.stderr) == (2, here.stderr)
    assert here.stderr.startswith("relcol: error: ") and here.stderr.count("\n") == 1
    assert checksums(workdir / "warehouse") == before
