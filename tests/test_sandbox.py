"""`relcol sql`'s sandbox: reading statements only, the warehouse's files only, no file
written anywhere (the private temp folder included), a time limit and a memory limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import relcol
from relcol.errors import ParameterError, WarehouseError
from relcol.store import reading_only
from tests.conftest import TESTS

ESCAPES = [
    line
    for line in (TESTS / "data" / "sql_escapes.sql").read_text().splitlines()
    if line.strip() and not line.startswith("--")
]
SECRET = "relcol-sandbox-secret-7f3a"


def small_predictions(n: int = 200, seed: int = 0) -> pl.DataFrame:
    """A binary classifier's predictions with known rows (ingested in a fraction of a second)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    confidence = rng.uniform(0.5, 1.0, n)
    y_pred = np.where(rng.uniform(size=n) < confidence, y, 1 - y)
    return pl.DataFrame(
        {"sample_id": np.arange(n), "y_true": y, "y_pred": y_pred, "confidence": confidence}
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (nothing may change, appear or vanish)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A warehouse with one small study and its materialised tables; targets outside it."""
    base = tmp_path_factory.mktemp("sandbox")
    wh = relcol.open_warehouse(base / "wh")
    relcol.ingest_predictions(small_predictions(), wh, name="small", model="m")
    relcol.report(wh, study="small", out=base / "report", bootstrap=0)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    small_predictions(5).write_parquet(outside / "secret.parquet")
    cwd = base / "cwd"
    (cwd / ".tmp").mkdir(parents=True)
    (cwd / ".tmp" / "notes.txt").write_text(f"{SECRET}\n")
    return wh, base


def placeholders(wh: relcol.store.Warehouse, base: Path) -> dict[str, str]:
    run = next((wh.root / "predictions" / "study=small").glob("run_id=*"))
    return {
        "part": str(run / "part-00000.parquet"),
        "side": str(run / "_run.parquet"),
        "sums": str(run / "_checksums.json"),
        "schema": str(wh.root / "_schema" / "predictions.parquet"),
        "table": str(wh.root / "metrics" / "calibration" / "study=small.parquet"),
        "readme": str(wh.root / "README.md"),
        "wh": str(wh.root),
        "cwd": str(base / "cwd"),
        "outside": str(base / "outside" / "secret.txt"),
        "outside_dir": str(base / "outside"),
        "outside_parquet": str(base / "outside" / "secret.parquet"),
    }


def test_the_escape_corpus_is_large_and_aims_at_every_kind_of_file():
    assert len(ESCAPES) >= 60
    text = "\n".join(ESCAPES)
    for target in ("{part}", "{schema}", "{table}", "{sums}", "{cwd}/.tmp", "{outside}"):
        assert target in text


@pytest.mark.parametrize("attempt", ESCAPES)
def test_every_sandbox_escape_attempt_is_refused_and_changes_nothing(small, attempt, monkeypatch):
    wh, base = small
    monkeypatch.chdir(base / "cwd")  # DuckDB's default temp folder would be ./.tmp
    before = snapshot(wh.root), snapshot(base / "cwd"), snapshot(base / "outside")
    query = attempt.format(**placeholders(wh, base))
    with pytest.raises(WarehouseError) as refused:
        wh.sql(query)
    message = str(refused.value)
    assert "\n" not in message and SECRET not in message
    after = snapshot(wh.root), snapshot(base / "cwd"), snapshot(base / "outside")
    assert after == before  # not a byte written, created or removed anywhere
    # and the warehouse still answers, with all its rows
    assert wh.sql("SELECT count(*) AS n FROM predictions")["n"][0] == 200


def test_explain_analyze_of_a_write_is_refused_but_of_a_select_runs(small):
    wh, _ = small
    reading_only("EXPLAIN ANALYZE SELECT count(*) FROM predictions")
    reading_only("EXPLAIN (FORMAT json) /* c */ SELECT 1")
    plan = wh.sql("EXPLAIN ANALYZE SELECT count(*) FROM predictions")
    assert plan["explain_key"].to_list() == ["analyzed_plan"]
    for query, kind in [
        ("EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'", "EXPLAIN of COPY"),
        ("EXPLAIN /* ANALYZE */ ANALYZE INSERT INTO t VALUES (1)", "EXPLAIN of INSERT"),
        ("SELECT 1; DROP VIEW calibration", "DROP"),
    ]:
        with pytest.raises(WarehouseError, match=f"this query has {kind}"):
            reading_only(query)


def test_queries_spill_into_a_private_folder_not_the_working_folders_tmp(small, monkeypatch):
    wh, base = small
    monkeypatch.chdir(base / "cwd")
    before = snapshot(base / "cwd")
    folder = wh.sql("SELECT current_setting('temp_directory') AS t")["t"][0]
    assert Path(folder).parent.name.startswith("relcol-sql-")
    assert not Path(folder).parent.exists()  # removed with its connection
    # a sort far larger than the memory limit spills, and still answers right
    n = 3_000_000
    ranked = wh.sql(
        "SELECT count(*) AS n, sum(k) AS s FROM "
        f"(SELECT r, row_number() OVER (ORDER BY hash(r)) AS k FROM range({n}) t(r))",
        memory_limit="64MB",
    )
    assert ranked.row(0) == (n, n * (n + 1) // 2)
    assert snapshot(base / "cwd") == before


def test_a_long_query_is_stopped_at_its_time_limit(small):
    wh, _ = small
    start = time.monotonic()
    with pytest.raises(WarehouseError, match=r"stopped after 1 s \(its time limit: --timeout\)"):
        wh.sql("SELECT count(*) FROM range(100000000000)", timeout=1)
    assert time.monotonic() - start < 30
    with pytest.raises(ParameterError, match="timeout must be"):
        wh.sql("SELECT 1", timeout=-1)


def test_a_memory_limit_that_is_not_a_size_is_one_line(small):
    wh, _ = small
    with pytest.raises(WarehouseError, match="memory limit 'lots'"):
        wh.sql("SELECT 1", memory_limit="lots")
    assert wh.sql("SELECT 1 AS x", memory_limit="1GB")["x"][0] == 1


def run_cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "relcol.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def test_sql_timeout_option_and_its_one_line(small):
    wh, _ = small
    done = run_cli(
        "sql",
        "--warehouse",
        str(wh.root),
        "--timeout",
        "1",
        "SELECT count(*) FROM range(100000000000)",
    )
    assert done.returncode == 2
    assert done.stderr == (
        "relcol: error: the query was stopped after 1 s (its time limit: --timeout)\n"
    )


def test_ctrl_c_in_a_long_sql_query_exits_130_without_a_traceback(small):
    wh, _ = small
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relcol.cli",
            "sql",
            "--warehouse",
            str(wh.root),
            "SELECT count(*) FROM range(100000000000)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)  # past start-up, inside the query
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip() == "relcol: aborted"  # after the line break that ends the terminal's ^C


def test_reading_a_warehouse_that_does_not_exist_creates_nothing(tmp_path):
    missing = tmp_path / "typo"
    done = run_cli("sql", "--warehouse", str(missing), "SELECT 1")
    assert done.returncode == 2
    assert done.stderr.startswith(f"relcol: error: no warehouse at {missing}")
    assert done.stderr.count("\n") == 1
    for command in (["report"], ["shell", "--print-init"], ["check"]):
        done = run_cli(*command, "--warehouse", str(missing))
        assert done.returncode == 2 and "no warehouse at" in done.stderr, done.stderr
    assert not missing.exists()
    with pytest.raises(WarehouseError, match="no warehouse at"):
        relcol.open_warehouse(missing).predictions()
    assert os.listdir(tmp_path) == []
