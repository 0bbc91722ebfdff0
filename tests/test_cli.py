"""The `relcol` command end to end, run as a user runs it (the installed entry point)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import TINY
from tests.test_bad_input import relcol as relcol_here
from tests.test_store import checksums


def relcol(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("relcol") or sys.executable
    cmd = [exe, *args] if exe.endswith("relcol") else [exe, "-m", "relcol.cli", *args]
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder where the tiny study was ingested into ./warehouse and reported, as a user would."""
    cwd = tmp_path_factory.mktemp("user")
    done = relcol("ingest", "--study", str(TINY), cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "wrote 20,736 rows in 72 cells" in done.stdout
    return cwd


def test_report_writes_html_csv_parquet_and_a_terminal_summary(workdir):
    done = relcol("report", cwd=workdir)
    assert done.returncode == 0, done.stderr
    out = workdir / "reports" / "tiny"
    assert f"report: {out / 'index.html'}" in done.stdout.replace(
        str(workdir.resolve()) + "/", ""
    ) or ("index.html" in done.stdout)
    for name in ("index.html", "calibration.csv", "calibration.parquet"):
        assert (out / name).is_file()
    table = pl.read_parquet(out / "calibration.parquet")
    assert table.height == 72
    assert "label_noise" in done.stdout and "naive_bayes" in done.stdout
    # the report materialised the table into the warehouse, queryable as a view
    mat = relcol(
        "sql", "SELECT count(*) AS n FROM report_calibration", "--format", "json", cwd=workdir
    )
    assert json.loads(mat.stdout) == [{"n": 72}]


def test_sql_answers_the_readme_query_in_every_format(workdir):
    q = "SELECT model, corruption, severity, ece FROM calibration ORDER BY ALL"
    table = relcol("sql", q, cwd=workdir)
    assert table.returncode == 0, table.stderr
    assert "ece" in table.stdout and "logistic_regression" in table.stdout
    as_csv = relcol("sql", q, "--format", "csv", cwd=workdir)
    rows = as_csv.stdout.strip().splitlines()
    assert rows[0] == "model,corruption,severity,ece" and len(rows) == 1 + 72
    as_json = json.loads(relcol("sql", q, "--format", "json", cwd=workdir).stdout)
    assert len(as_json) == 72 and set(as_json[0]) == {"model", "corruption", "severity", "ece"}


def test_warehouse_location_from_the_environment(workdir, tmp_path):
    elsewhere = tmp_path / "wh"
    done = relcol(
        "ingest",
        "--study",
        str(TINY),
        "--quiet",
        cwd=tmp_path,
        env={"RELCOL_WAREHOUSE": str(elsewhere)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert (elsewhere / "predictions" / "study=tiny").is_dir()
    assert not (tmp_path / "warehouse").exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (lambda t: t.replace("[0.0, 0.25, 0.5]", "[0.0, 0.5, 0.25]"), "strictly increasing"),
        (lambda t: t.replace('name = "tiny"', "name = ["), "not valid TOML"),
        (lambda t: t.replace('name = "lightgbm"', 'name = "xgboost"'), "unknown model 'xgboost'"),
        (lambda t: t.replace("target_class = 1", "target_class = 7"), "target_class"),
        (None, "cannot read study spec"),
    ],
)
def test_a_broken_spec_exits_non_zero_with_one_line_and_changes_nothing(
    workdir, tmp_path, spec, message
):
    before = checksums(workdir / "warehouse")
    path = tmp_path / "broken.toml"
    if spec is not None:
        path.write_text(spec(TINY.read_text()).replace('name = "tiny"', 'name = "other"'))
    done = relcol("ingest", "--study", str(path), cwd=workdir)
    assert done.returncode == 2
    assert (
        done.stderr.count("\n") == 1
        and done.stderr.startswith("relcol: error: ")
        and message in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert checksums(workdir / "warehouse") == before


def test_bad_sql_and_unknown_study_are_one_line_errors(workdir):
    bad = relcol("sql", "SELEC 1", cwd=workdir)
    assert (
        bad.returncode == 2
        and bad.stderr.startswith("relcol: error: SQL error:")
        and bad.stderr.count("\n") == 1
    )
    missing = relcol("report", "--study", "nope", cwd=workdir)
    assert (
        missing.returncode == 2
        and "no study 'nope'" in missing.stderr
        and "it holds: tiny" in missing.stderr
    )


def test_shell_init_script_defines_the_views_for_the_duckdb_shell(workdir, tmp_path):
    script = relcol("shell", "--print-init", cwd=workdir)
    assert script.returncode == 0, script.stderr
    import duckdb

    con = duckdb.connect()
    for statement in script.stdout.split(";\n"):
        if statement.strip():
            con.execute(statement)
    assert con.sql("SELECT count(*) FROM calibration").fetchall()[0][0] == 72
    scoped = relcol("shell", "--print-init", "--study", "tiny", cwd=workdir)
    assert scoped.returncode == 0 and "study=tiny/run_id=" in scoped.stdout
    counted = relcol(
        "sql",
        "SELECT count(*) AS n FROM calibration",
        "--study",
        "tiny",
        "--format",
        "csv",
        cwd=workdir,
    )
    assert counted.stdout.splitlines() == ["n", "72"]
    exe = shutil.which("duckdb") or shutil.which("duckdb", path=sysconfig.get_path("scripts"))
    if exe is None:
        pytest.skip("the duckdb-cli shell is not installed")
    (tmp_path / "init.sql").write_text(script.stdout)
    done = subprocess.run(
        [
            exe,
            "-init",
            str(tmp_path / "init.sql"),
            "-csv",
            "-c",
            "SELECT count(*) AS n FROM calibration",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "72"


def _shell_in_process(workdir: Path, tmp_path: Path, monkeypatch, scripts: Path) -> tuple:
    """``relcol shell`` in this process with nothing on PATH, no RELCOL_DUCKDB, and this
    Python's scripts folder (where a virtual environment keeps ``duckdb``) at ``scripts``."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RELCOL_DUCKDB", raising=False)
    real = sysconfig.get_path
    monkeypatch.setattr(
        sysconfig,
        "get_path",
        lambda name, *a, **k: str(scripts) if name == "scripts" else real(name, *a, **k),
    )
    done = relcol_here("shell", "--warehouse", str(workdir / "warehouse"), cwd=workdir)
    return done.returncode, done.stderr


def test_shell_without_the_duckdb_executable_says_how_to_install_it(workdir, tmp_path, monkeypatch):
    code, err = _shell_in_process(workdir, tmp_path, monkeypatch, tmp_path / "nothing")
    assert code == 3 and "pip install duckdb-cli" in err
    assert f"neither on PATH nor in {tmp_path / 'nothing'}" in err


def test_shell_runs_the_duckdb_beside_this_python_when_it_is_not_on_path(
    workdir, tmp_path, monkeypatch
):
    # `.venv/bin/relcol shell` without activating the environment: its own duckdb-cli
    scripts = tmp_path / "bin"
    scripts.mkdir()
    called = tmp_path / "called.txt"
    fake = scripts / "duckdb"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"with open({str(called)!r}, 'w') as out:\n"
        "    out.write('\\n'.join(sys.argv[1:]) + '\\n' + open(sys.argv[2]).read(80))\n"
        "sys.exit(7)\n"
    )
    fake.chmod(0o755)
    code, _ = _shell_in_process(workdir, tmp_path, monkeypatch, scripts)
    assert code == 7  # the shell's own exit code
    lines = called.read_text().splitlines()
    assert lines[0] == "-init" and lines[1].endswith(".sql")
    assert not Path(lines[1]).exists()  # the init script is removed once the shell exits
    # the script the shell was given held the views' definitions when it ran
    assert lines[2] == "-- relcol: views over the warehouse; generated by `relcol shell`."


def test_every_command_has_help_with_an_example(workdir):
    for command in ("ingest", "report", "sql", "shell"):
        done = relcol(command, "--help", cwd=workdir)
        assert done.returncode == 0 and "Example" in done.stdout
