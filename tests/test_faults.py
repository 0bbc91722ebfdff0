"""Nothing lost at any crash point: SIGKILL injected at every file-system step of an ingest
and of a replace (tests/faults.py), checksums that find damage (`relcol check`), and
writes that publish nothing unless everything succeeded."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

import relcol
from relcol.errors import InputError, OutputError, WarehouseError
from relcol.store import Warehouse
from tests.conftest import TESTS
from tests.test_sandbox import run_cli, small_predictions, snapshot


class Injector:
    """tests/faults.py running beside the test: one forked ingest per ``trial``."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(TESTS / "faults.py"), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=TESTS.parent,
            env={**os.environ, "PYTHONPATH": str(TESTS.parent)},
        )

    def trial(self, kill_at: int, mode: str, name: str, rows: int) -> dict:
        self.proc.stdin.write(f"{kill_at} {mode} {name} {rows}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def rows_by_study(wh: Warehouse) -> dict[str, int]:
    counts = wh.sql("SELECT study, count(*) AS n FROM predictions GROUP BY ALL")
    return dict(counts.iter_rows())


@pytest.mark.parametrize("mode", ["replace", "fallback"])
def test_a_replace_killed_at_any_step_keeps_the_old_study_or_the_new_one_whole(tmp_path, mode):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(small_predictions(200), wh, name="s", model="m")
    injector = Injector(wh.root)
    outcomes, kill_at, current = [], 1, 200
    try:
        while True:
            new = 201 + kill_at
            result = injector.trial(kill_at, mode, "s", new)
            if not result["killed"]:
                assert result["code"] == 0
                break
            if mode == "replace":
                # the swap is one step: the study is never absent, even before recovery
                assert rows_by_study(wh)["s"] in (current, new)
            wh.recover()  # what the next write does first
            rows = rows_by_study(wh)
            assert rows == {"s": rows["s"]} and rows["s"] in (current, new), (kill_at, rows)
            outcomes.append(rows["s"] == new)
            current = rows["s"]
            check = wh.check()
            assert check.problems == [], (kill_at, check.problems)
            assert list((wh.root / "_staging").iterdir()) == []
            kill_at += 1
    finally:
        injector.close()
    assert rows_by_study(wh) == {"s": 201 + kill_at}
    # kills landed before the swap (old kept) and after it (new kept), never in between
    assert outcomes.count(False) >= 1 and outcomes.count(True) >= 1
    assert outcomes == sorted(outcomes)
    assert kill_at >= 5  # every step was hit: the probe, the swap, the clean-up of the old files


def test_an_ingest_killed_at_any_step_commits_all_of_it_or_nothing(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(small_predictions(200), wh, name="base", model="m")
    injector = Injector(wh.root)
    kill_at = 1
    try:
        while True:
            result = injector.trial(kill_at, "new", f"new{kill_at}", 250)
            if not result["killed"]:
                break
            wh.recover()
            rows = rows_by_study(wh)
            assert rows.pop("base") == 200
            assert set(rows.values()) <= {250}, rows
            assert wh.check().problems == []
            assert list((wh.root / "_staging").iterdir()) == []
            kill_at += 1
    finally:
        injector.close()
    assert rows_by_study(wh)[f"new{kill_at}"] == 250
    assert kill_at >= 3


@pytest.fixture
def reported(tmp_path):
    """A warehouse with one small study and its materialised tables (a report was made)."""
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(small_predictions(200), wh, name="small", model="m")
    relcol.report(wh, study="small", out=tmp_path / "report", bootstrap=0)
    return wh


def test_check_finds_flipped_bytes_in_a_part_and_names_it(reported):
    wh = reported
    clean = run_cli("check", "--warehouse", str(wh.root))
    assert clean.returncode == 0 and clean.stderr == ""
    assert clean.stdout == "checked 20 files: intact\n"  # 9 schema, 3 + 7 stored views, 1 table
    [part] = wh.root.glob("predictions/study=small/run_id=*/part-00000.parquet")
    data = bytearray(part.read_bytes())
    data[200:264] = bytes(b ^ 0xFF for b in data[200:264])  # 64 flipped bytes, as in the wild
    part.write_bytes(bytes(data))
    damaged = run_cli("check", "--warehouse", str(wh.root))
    assert damaged.returncode == 2
    relative = part.relative_to(wh.root)
    assert damaged.stderr == (
        f"damaged: {relative}: damaged (its checksum differs from the one recorded)\n"
    )
    assert damaged.stdout == "checked 20 files: 1 problem(s)\n"


def test_check_names_missing_and_stray_files(reported):
    wh = reported
    [run] = wh.root.glob("predictions/study=small/run_id=*")
    (run / "_classes.parquet").unlink()
    (run / "part-00001.parquet").write_bytes((run / "part-00000.parquet").read_bytes())
    problems = wh.check().problems
    assert problems == [
        f"{(run / '_classes.parquet').relative_to(wh.root)}: missing (it was committed)",
        f"{(run / 'part-00001.parquet').relative_to(wh.root)}: not part of what was committed",
    ]


def test_an_ingest_from_before_checksums_is_a_note_not_damage(reported):
    wh = reported
    [run] = wh.root.glob("predictions/study=small/run_id=*")
    (run / "_checksums.json").unlink()
    result = wh.check()
    assert result.problems == []
    assert result.notes == [
        f"{run.relative_to(wh.root)}: no checksums recorded (written by an older relcol); "
        "not verified"
    ]


def test_a_truncated_materialised_table_is_one_line_and_report_rebuilds_it(reported, tmp_path):
    wh = reported
    table = wh.root / "metrics" / "calibration" / "study=small.parquet"
    table.write_bytes(table.read_bytes()[:100])
    with pytest.raises(WarehouseError) as failed:
        wh.sql("SELECT count(*) AS n FROM report_calibration WHERE ece > 0")
    assert str(failed.value).startswith("the materialised table report_calibration cannot be read")
    assert str(table) in str(failed.value) and "\n" not in str(failed.value)
    assert wh.sql("SELECT count(*) AS n FROM calibration")["n"][0] == 1  # the rest still works
    assert [p.split(":")[0] for p in wh.check().problems] == [str(table.relative_to(wh.root))]
    relcol.report(wh, study="small", out=tmp_path / "again", bootstrap=0)
    assert wh.sql("SELECT count(*) AS n FROM report_calibration")["n"][0] == 1
    assert wh.check().problems == []


def test_a_truncated_schema_file_is_one_line_naming_it_and_report_rewrites_it(reported, tmp_path):
    wh = reported
    schema = wh.root / "_schema" / "runs.parquet"
    schema.write_bytes(schema.read_bytes()[:50])
    # a query defines only the views it reads: one on predictions is answered from intact files
    query = "SELECT count(*) AS n FROM predictions"
    done = run_cli("sql", "--warehouse", str(wh.root), "--format", "csv", query)
    assert done.returncode == 0 and done.stdout == "n\n200\n", done.stderr
    done = run_cli("sql", "--warehouse", str(wh.root), "SELECT count(*) FROM runs")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("relcol: error: cannot read the warehouse:")
    assert str(schema) in done.stderr and "relcol check" in done.stderr
    relcol.report(wh, study="small", out=tmp_path / "again", bootstrap=0)
    assert wh.check().problems == []
    assert wh.sql("SELECT count(*) AS n FROM predictions")["n"][0] == 200


def test_a_report_that_fails_late_publishes_nothing(reported, tmp_path, monkeypatch):
    wh = reported
    out = tmp_path / "report"
    before = snapshot(wh.root), snapshot(out)
    import relcol.report as pages

    def failing(folder, **_):
        (Path(folder) / "index.html").write_text("half")
        raise InputError("calibration: the table has no rows; there is nothing to report.")

    monkeypatch.setattr(pages, "write_report", failing)  # where the report takes it from
    with pytest.raises(InputError, match="no rows"):
        relcol.report(wh, study="small", out=out, bootstrap=0)
    assert (snapshot(wh.root), snapshot(out)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "wh"]  # no staging left


def test_a_full_disk_during_report_is_one_line_and_changes_nothing(reported, tmp_path, monkeypatch):
    wh = reported
    out = tmp_path / "report"
    before = snapshot(wh.root), snapshot(out)
    import errno

    import polars as pl

    written = []
    original = pl.DataFrame.write_parquet

    def filling(self, path, *args, **kwargs):
        written.append(path)
        if len(written) == 3:  # the disk fills up part-way through the report's files
            original(self.head(0), path, *args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", filling)
    with pytest.raises(OutputError, match=r"No space left on device .*; nothing was changed"):
        relcol.report(wh, study="small", out=out, bootstrap=0)
    assert (snapshot(wh.root), snapshot(out)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report", "wh"]
    assert list((wh.root / "_staging").iterdir()) == []


def test_an_unwritable_out_fails_before_any_work_and_changes_nothing(reported, tmp_path):
    wh = reported
    before = snapshot(wh.root)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = run_cli(
        "report", "--warehouse", str(wh.root), "--out", str(blocker / "out"), "--bootstrap", "0"
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"relcol: error: cannot write the report to {blocker / 'out'}")
    assert snapshot(wh.root) == before
    assert blocker.read_text() == "not a folder"


def test_a_failed_first_ingest_leaves_no_warehouse_behind(tmp_path, monkeypatch):
    from relcol.store._warehouse import Staging

    def failing(self, **_):
        raise InputError("a failure after the first part was written")

    monkeypatch.setattr(Staging, "write_run", failing)
    target = tmp_path / "new" / "wh"
    with pytest.raises(InputError):
        relcol.ingest_predictions(small_predictions(), target, name="s", model="m")
    assert not target.exists()
    done = run_cli(
        "ingest", "--predictions", str(tmp_path / "missing.csv"), "--warehouse", str(target)
    )
    assert done.returncode == 2
    assert not target.exists()


@contextmanager
def read_only(root: Path):
    """``root`` and everything in it unwritable, for root too (``chattr +i``) where needed."""
    if os.geteuid() != 0:
        paths = [root, *root.rglob("*")]
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(modes[p] & ~0o222)
        try:
            yield
        finally:
            for p in reversed(paths):
                p.chmod(modes[p])
        return
    if (
        shutil.which("chattr") is None
        or subprocess.run(["chattr", "-R", "+i", str(root)], capture_output=True).returncode
    ):
        pytest.skip("cannot make a folder read-only for root here (chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-R", "-i", str(root)], check=True)


def test_a_read_only_warehouse_is_read_but_every_write_is_one_line(reported, tmp_path):
    wh = reported
    csv = tmp_path / "more.csv"
    small_predictions(50).write_csv(csv)
    before = snapshot(wh.root)
    where = ["--warehouse", str(wh.root)]
    with read_only(wh.root):
        # reading needs no write: the query's spill folder is private, elsewhere
        assert run_cli(
            "sql", *where, "SELECT count(*) FROM predictions", "--format", "csv"
        ).stdout == ("count_star()\n200\n")
        assert run_cli("check", *where).returncode == 0
        for command in (
            ["report", "--out", str(tmp_path / "out"), "--bootstrap", "0"],
            ["ingest", "--predictions", str(csv), "--name", "more"],
            ["recalibrate", "--study", "small", "--method", "temperature"],
        ):
            done = run_cli(*command, *where)
            assert done.returncode == 2, (command, done.stderr)
            assert done.stderr.startswith(f"relcol: error: cannot write to warehouse {wh.root}: ")
            assert done.stderr.count("\n") == 1 and done.stderr.endswith("nothing was changed\n")
    assert snapshot(wh.root) == before
    assert not (tmp_path / "out").exists()


@contextmanager
def small_disk(path: Path, size: str):
    """A tmpfs of ``size`` at ``path`` (root only; skipped where it cannot be mounted)."""
    path.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small file system here")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def test_a_really_full_disk_is_one_line_for_report_and_ingest(reported, tmp_path):
    wh = reported
    before = snapshot(wh.root)
    with small_disk(tmp_path / "disk", "64k") as disk:
        done = run_cli(
            "report",
            "-q",
            "--warehouse",
            str(wh.root),
            "--out",
            str(disk / "out"),
            "--bootstrap",
            "0",
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "No space left on device; nothing was changed" in done.stderr
        assert list(disk.iterdir()) == []
        assert snapshot(wh.root) == before
        # an ingest into a warehouse on the full disk: its parts do not fit
        csv = tmp_path / "big.csv"
        small_predictions(20_000).write_csv(csv)
        done = run_cli("ingest", "--predictions", str(csv), "--warehouse", str(disk / "wh"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "No space left on device" in done.stderr
        assert list(disk.iterdir()) == []  # the new warehouse was removed again


def test_a_held_ctrl_c_waits_for_the_release_and_then_arrives_as_before():
    # each disposition set here, not inherited: a test run started in the background (`&`
    # in a shell without job control) hands its processes SIGINT ignored
    code = (
        "import os, signal\n"
        "from relcol import _interrupts\n"
        "for handler in ('ignored', 'python', 'relcol'):\n"
        "    if handler == 'ignored':\n"
        "        signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "    elif handler == 'python':\n"
        "        signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "    else:\n"
        "        _interrupts.install()\n"
        "    quiet = _interrupts.Hold()\n"
        "    quiet.release()\n"
        "    quiet.release()\n"
        "    hold = _interrupts.Hold()\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    print('held', _interrupts.received(), flush=True)\n"
        "    try:\n"
        "        hold.release()\n"
        "    except KeyboardInterrupt:\n"
        "        print('raised', _interrupts.received(), flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # ignored: held, then still ignored; Python's own handler; relcol's (which also records
    # the signal for exit code 130)
    assert done.stdout == "held False\nheld False\nraised False\nheld False\nraised True\n"


# each compiled kernel's first call from Python, on the smallest input
_FIRST_CALLS = {
    "rank kernel": (
        "from relcol.metrics import rank_metrics\n"
        "rank_metrics(np.array([0.0, 1, 1]), np.array([1.0, 1, 0]))\n"
    ),
    "monitoring shuffles": (
        "from relcol.analysis._compiled import baseline_sums\n"
        "one = np.ones(4)\n"
        "baseline_sums(one, one, np.array([0]), np.array([4]), np.array([2]), [0], 3,"
        " np.random.default_rng(0))\n"
    ),
}


def test_a_ctrl_c_inside_a_weakref_callback_prints_no_traceback_and_is_still_recorded():
    # matplotlib drops a transform's children in weakref callbacks while it draws; Python
    # prints an exception raised there ("Exception ignored in") and goes on
    code = (
        "import os, signal, weakref\n"
        "from relcol import _interrupts\n"
        "_interrupts.install()\n"
        "class Node: pass\n"
        "def dropped(_):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    for _ in range(10**6): pass  # the signal is handled here, inside the callback\n"
        "node = Node(); ref = weakref.ref(node, dropped); del node\n"
        "print('went on', _interrupts.received(), flush=True)\n"
        "def failing(_):\n"
        "    raise ValueError('kept')\n"
        "other = Node(); ref2 = weakref.ref(other, failing); del other\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "went on True\n", (done.stdout, done.stderr)
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    assert "ValueError: kept" in done.stderr  # anything else is still printed


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_ctrl_c_inside_polars_frame_wrapper_arrives_after_the_query_without_a_panic(engine):
    # Polars' native code calls its Python helper wrap_df around a map_batches function and
    # unwraps the result: a KeyboardInterrupt raised in it was a Rust panic with a backtrace.
    # The helper here sends SIGINT and runs long enough for the handler to run inside it.
    code = (
        "import os, signal, sys, time\n"
        "from relcol import _interrupts\n"
        "_interrupts.install()\n"
        "import polars as pl\n"
        "import polars._utils.wrap as wrap\n"
        "helper = wrap.wrap_df\n"
        "original = helper.__class__(helper.__code__, helper.__globals__)\n"
        "def interrupting(df):\n"
        "    if not fired:\n"
        "        fired.append(1)\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        for _ in range(10**5): pass  # the signal is handled here, in Polars' code\n"
        "    return original(df)\n"
        "helper.__globals__.update(fired=[], original=original, os=os, signal=signal)\n"
        "helper.__code__ = interrupting.__code__.replace(co_filename=helper.__code__.co_filename)\n"
        "try:\n"
        "    out = pl.LazyFrame({'a': [1, 2]}).map_batches(lambda df: df)"
        f".collect(engine={engine!r})\n"
        "    print('collected', out.height, flush=True)\n"
        "    time.sleep(30)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', _interrupts.received())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "collected 2\ninterrupted True\n", "")


@pytest.mark.parametrize("hook", ["_object_compiled_hook", "_object_getbuffer_hook"])
@pytest.mark.parametrize("kernel", sorted(_FIRST_CALLS))
def test_ctrl_c_while_numba_compiles_a_kernel_arrives_after_it_without_a_traceback(
    kernel, hook, tmp_path
):
    """Numba passes object code to and from LLVM in ctypes callbacks, where Python prints an
    exception and drops it. A SIGINT sent from inside each callback (compiling into an empty
    cache, or loading from a full one) must arrive as one KeyboardInterrupt, once the
    kernel is compiled, and print nothing."""
    code = (
        "import os, signal\n"
        "import numpy as np\n"
        "from numba.core import codegen\n"
        "from relcol import _interrupts\n"
        f"original = codegen.JITCodeLibrary.{hook}\n"
        "def interrupting(cls, *args):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    return original(*args)\n"
        f"codegen.JITCodeLibrary.{hook} = classmethod(interrupting)\n"
        "_interrupts.install()\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in _FIRST_CALLS[kernel].splitlines())
        + "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', _interrupts.received())\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    if hook == "_object_getbuffer_hook":  # fill the cache first: then numba loads from it
        filled = subprocess.run(
            [sys.executable, "-c", "import numpy as np\n" + _FIRST_CALLS[kernel]],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert filled.returncode == 0, filled.stderr
        assert list((tmp_path / "numba").rglob("*.nbi")), "no numba cache was written"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "interrupted True\n", "")


def test_ctrl_c_between_the_tables_and_the_folder_of_a_report_waits_for_both(reported, tmp_path):
    wh, out = reported, tmp_path / "again"
    code = (
        "import os, signal\n"
        "from relcol import _interrupts\n"
        "import relcol.workflows._report_pages as pages\n"
        "_interrupts.install()\n"
        "publish = pages.publish_folder\n"
        "def interrupted(staged, target):  # the tables are published; the folder is next\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    publish(staged, target)\n"
        "pages.publish_folder = interrupted\n"
        "try:\n"
        f"    pages.report({str(wh.root)!r}, study='small', out={str(out)!r}, bootstrap=20)\n"
        "except KeyboardInterrupt:\n"
        "    print('stopped after both')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "stopped after both\n", done.stderr
    assert (out / "index.html").exists() and not list(tmp_path.glob(".again.*.partial"))
    sums = json.loads((wh.root / "metrics/_checksums/study=small.json").read_text())["sha256"]
    assert "trends/study=small.parquet" in sums  # the tables of this report (B = 20), published
    assert relcol.open_warehouse(wh.root).check().problems == []


def test_ctrl_c_at_any_moment_of_a_report_exits_130_and_leaves_nothing_half_written(
    reported, tmp_path
):
    wh = reported

    def started(out: Path) -> subprocess.Popen:
        """`relcol report` into ``out``, once it has started (its staging folder is there)."""
        command = ["report", "-q", "--warehouse", str(wh.root), "--out", str(out)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "relcol.cli", *command, "--bootstrap", "3000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(f".{out.name}.*.partial")) and time.monotonic() < deadline:
            time.sleep(0.05)
        return proc

    # how long the report runs here and now: each trial signals at a share of that, so that
    # it lands inside the run on a fast machine or a slow one (a signal in the last moments
    # reaches a process already on its way out, and is no trial of its handling)
    whole, begun = started(tmp_path / "whole"), time.monotonic()
    _, err = whole.communicate(timeout=300)
    assert whole.returncode == 0, err
    length = time.monotonic() - begun
    before = snapshot(wh.root)
    interrupted = 0
    for trial, share in enumerate((0.0, 0.25, 0.5, 0.7)):
        out = tmp_path / f"out{trial}"
        proc = started(out)
        time.sleep(share * length)
        if proc.poll() is not None:  # finished before the signal: not a trial
            continue
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        interrupted += 1
        assert proc.returncode == 130, (share, length, err)
        assert "Traceback" not in err and err.strip().endswith("relcol: aborted"), err
        assert list((wh.root / "_staging").iterdir()) == []
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
        if not out.exists():  # interrupted before publishing: not a byte changed
            assert snapshot(wh.root) == before
        else:  # after: the report is whole
            assert (out / "index.html").exists()
    assert interrupted >= 2


def test_readers_during_repeated_replaces_always_see_one_whole_version(tmp_path):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(small_predictions(100), wh, name="race", model="m100")
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import relcol, sys, time\n"
            "from tests.test_sandbox import small_predictions\n"
            "for i in range(8):\n"
            "    time.sleep(1.5)\n"
            "    n = (150, 100)[i % 2]\n"
            "    relcol.ingest_predictions(\n"
            "        small_predictions(n), sys.argv[1], name='race', model=f'm{n}', replace=True\n"
            "    )\n",
            str(wh.root),
        ],
        cwd=TESTS.parent,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = set()
    while writer.poll() is None:
        assert wh.require_study("race") == "race"
        rows = wh.sql(
            "SELECT model, count(*) AS n FROM predictions WHERE study = 'race' GROUP BY ALL"
        )
        # one run's rows, never a mix of two runs' files, never none
        assert rows.height == 1 and rows.row(0) in {("m100", 100), ("m150", 150)}, rows
        seen.add(rows.row(0))
    assert writer.returncode == 0, writer.stderr.read()
    assert len(seen) == 2  # the reads did overlap the replaces


def test_an_annotations_file_from_before_the_period_column_is_intact(tmp_path):
    """A warehouse written before ``period`` existed: its annotations schema file and committed
    annotations lack the column. `relcol check` accepts it (readers fill the column with
    nulls); a schema file lacking a key column is still a problem."""
    wh = relcol.open_warehouse(tmp_path / "wh")
    rows = small_predictions(50).with_columns(agreement=pl.lit(0.75))
    relcol.ingest_predictions(rows, wh, name="old", model="m")
    schema = wh.root / "_schema" / "annotations.parquet"
    [run] = wh.root.glob("predictions/study=old/run_id=*")
    committed = run / "_annotations.parquet"
    pl.read_parquet(schema).drop("period").write_parquet(schema)
    pl.read_parquet(committed).drop("period").write_parquet(committed)
    sums = json.loads((run / "_checksums.json").read_text())
    sums["sha256"]["_annotations.parquet"] = hashlib.sha256(committed.read_bytes()).hexdigest()
    (run / "_checksums.json").write_text(json.dumps(sums))
    assert "period" not in pl.read_parquet_schema(schema)
    done = run_cli("check", "--warehouse", str(wh.root))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == "checked 20 files: intact\n"  # 9 schema, 4 + 7 stored views
    annotations = wh.sql("SELECT agreement, period FROM annotations")
    assert annotations.height == 50 and annotations["period"].null_count() == 50
    assert annotations["agreement"].to_list() == [0.75] * 50
    pl.read_parquet(schema).drop("study").write_parquet(schema)
    assert wh.check().problems == [
        "_schema/annotations.parquet: holds other columns or types than the code expects"
    ]


def test_a_study_without_its_run_record_is_one_line_before_any_table(tmp_path):
    # a study staged through the library without Staging.write_run: the page's header needs
    # the run, so the report says so at once instead of failing after every table
    import polars as pl

    from relcol.store import PREDICTIONS, Warehouse

    wh = Warehouse(tmp_path / "warehouse")
    rows = small_predictions(40).select(
        study=pl.lit("s"), dataset=pl.lit("d"), model=pl.lit("m"), corruption=pl.lit("none"),
        severity=pl.lit(0.0), seed=pl.lit(0), repeat=pl.lit(0), sample_id="sample_id",
        label=pl.lit(None), y_true="y_true", y_clean="y_true", y_pred="y_pred",
        confidence="confidence", correct=pl.col("y_pred") == pl.col("y_true"),
        proba=pl.lit(None), run_id=pl.lit("r"),
    ).select(pl.col(name).cast(dtype) for name, dtype in PREDICTIONS.items())  # fmt: skip
    with wh.ingest("s") as staging:
        staging.write_part(rows)
    before = snapshot(wh.root)
    done = run_cli("report", "--warehouse", str(wh.root), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "relcol: error: study 's' has no run record (its run folder has no _run.parquet): ingest it "
        "again, or write one with Staging.write_run before the commit"
    ]
    assert snapshot(wh.root) == before


def test_a_snapshot_taken_while_a_replace_swaps_the_study_lists_the_new_run(tmp_path, monkeypatch):
    from relcol.store._files import exchange

    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest_predictions(small_predictions(100), wh, name="race", model="m100")
    other = relcol.open_warehouse(tmp_path / "other")
    relcol.ingest_predictions(small_predictions(150), other, name="race", model="m150")
    glob = Path.glob
    swapped = []

    def swap_then_glob(self, pattern, *args, **kwargs):
        # the replace's one-step swap lands between listing the run folder and its parts
        if pattern.startswith("part-") and not swapped:
            swapped.append(exchange(wh.study_dir("race"), other.study_dir("race")))
        return glob(self, pattern, *args, **kwargs)

    monkeypatch.setattr(Path, "glob", swap_then_glob)
    parts = [f for f in wh.sources()["predictions"] if "study=race" in f]
    monkeypatch.undo()
    assert swapped == [True] and parts and all(Path(f).is_file() for f in parts)
    rows = wh.sql("SELECT model, count(*) AS n FROM predictions GROUP BY ALL")
    assert rows.rows() == [("m150", 150)]
