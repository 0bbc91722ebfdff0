"""Nothing lost under crashes and concurrency (docs/development.md): SIGKILL at random moments,
two ingests at once, and reading during an ingest."""

from __future__ import annotations

import os
import platform
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import relcol
from tests.conftest import TINY

EXPECTED_ROWS = 20_736  # the tiny study's row count (tests/test_cli.py checks it independently)


def spec_named(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(TINY.read_text().replace('name = "tiny"', f'name = "{name}"'))
    return path


def start_ingest(spec: Path, warehouse: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relcol.cli",
            "ingest",
            "--study",
            str(spec),
            "--warehouse",
            str(warehouse),
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def study_rows(warehouse: Path) -> dict[str, int]:
    wh = relcol.open_warehouse(warehouse)
    if not wh.exists():  # a first ingest killed before it created the warehouse
        return {}
    counts = wh.sql("SELECT study, count(*) AS n FROM predictions GROUP BY ALL")
    return dict(counts.iter_rows())


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_all_or_nothing(tmp_path):
    warehouse = tmp_path / "wh"
    rng = random.Random(20261122)
    outcomes = {"committed": 0, "nothing": 0}
    for trial in range(20):
        name = f"crash{trial}"
        proc = start_ingest(spec_named(tmp_path, name), warehouse)
        if trial % 2 == 0:
            time.sleep(rng.uniform(0.0, 3.0))  # anywhere: start-up, validation, writing, commit
        else:
            deadline = time.monotonic() + 30
            while not any((warehouse / "_staging").glob("*/study=*")) and proc.poll() is None:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.4))  # somewhere while parts are being written
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rows = study_rows(warehouse)
        # every study is either wholly there or absent; no part of a killed ingest is visible
        assert all(n == EXPECTED_ROWS for n in rows.values()), rows
        committed = name in rows
        outcomes["committed" if committed else "nothing"] += 1
        assert (warehouse / "predictions" / f"study={name}").exists() == committed
        if rows:
            runs = relcol.open_warehouse(warehouse).sql("SELECT study FROM runs")["study"]
            assert sorted(runs.to_list()) == sorted(rows)
    # the kills landed on both sides of the commit
    assert outcomes["nothing"] > 0
    # and the next ingest succeeds, clearing the dead ingests' staging folders
    after = subprocess.run(
        [
            sys.executable,
            "-m",
            "relcol.cli",
            "ingest",
            "--study",
            str(spec_named(tmp_path, "after")),
            "--warehouse",
            str(warehouse),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert after.returncode == 0, after.stderr
    assert study_rows(warehouse)["after"] == EXPECTED_ROWS
    assert list((warehouse / "_staging").iterdir()) == []


def test_two_ingests_of_different_studies_at_once_both_land(tmp_path):
    warehouse = tmp_path / "wh"
    a = start_ingest(spec_named(tmp_path, "first"), warehouse)
    b = start_ingest(spec_named(tmp_path, "second"), warehouse)
    assert a.wait(timeout=300) == 0, a.stderr.read()
    assert b.wait(timeout=300) == 0, b.stderr.read()
    assert study_rows(warehouse) == {"first": EXPECTED_ROWS, "second": EXPECTED_ROWS}


def test_two_ingests_of_the_same_study_at_once_one_lands_the_other_says_why(tmp_path):
    warehouse = tmp_path / "wh"
    spec = spec_named(tmp_path, "same")
    procs = [start_ingest(spec, warehouse) for _ in range(2)]
    codes = [p.wait(timeout=300) for p in procs]
    errors = [p.stderr.read() for p in procs]
    assert sorted(codes) == [0, 2], errors
    loser = errors[codes.index(2)]
    assert loser.count("\n") == 1 and "study 'same'" in loser
    assert study_rows(warehouse) == {"same": EXPECTED_ROWS}


def test_a_reader_during_an_ingest_sees_a_consistent_snapshot(tmp_path):
    warehouse = tmp_path / "wh"
    relcol.ingest(spec_named(tmp_path, "base"), relcol.open_warehouse(warehouse))
    proc = start_ingest(spec_named(tmp_path, "growing"), warehouse)
    seen = set()
    while proc.poll() is None:
        rows = study_rows(warehouse)
        assert rows["base"] == EXPECTED_ROWS
        seen.add(rows.get("growing", 0))
    assert proc.returncode == 0
    seen.add(study_rows(warehouse)["growing"])
    assert seen <= {0, EXPECTED_ROWS} and EXPECTED_ROWS in seen


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="--portable is x86-64 Linux only",
)
def test_ctrl_c_during_a_portable_ingest_stops_its_child_and_leaves_nothing(tmp_path):
    # --portable runs the ingest in a child process; a terminal's Ctrl-C reaches the whole
    # process group, so the child must get it (not inherit the parent's "ignore"), clean up,
    # and the parent exit with the child's 130
    ingest = subprocess.Popen(
        [sys.executable, "-m", "relcol.cli", "ingest", "--warehouse", "wh", "--portable", "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    _wait_until_writing(tmp_path / "wh")  # the built-in study takes far longer than this
    os.killpg(ingest.pid, signal.SIGINT)
    _, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 130 and err.strip().endswith("relcol: aborted")
    assert not (tmp_path / "wh").exists()  # the warehouse this ingest created is gone again


def _wait_until_writing(warehouse: Path, timeout: float = 120) -> None:
    """Until the ingest writes (its staging folder holds a run): the child has started and
    handles signals. A fixed sleep is too short when the machine is loaded."""
    deadline = time.monotonic() + timeout
    while not any((warehouse / "_staging").glob("*")):
        assert time.monotonic() < deadline, f"no ingest wrote into {warehouse} in {timeout} s"
        time.sleep(0.1)


def _parent_of(pid: int) -> int | None:
    """The parent process id of ``pid``, or None once it has ended (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_text():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="--portable is x86-64 Linux only",
)
def test_sigterm_to_a_portable_ingest_is_passed_to_its_child(tmp_path):
    warehouse = tmp_path / "wh-sigterm"
    ingest = subprocess.Popen(
        [sys.executable, "-m", "relcol.cli", "ingest", "--warehouse", str(warehouse), "--portable"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_until_writing(warehouse)
    # the parent and its child (a process the child is forking, not yet exec'd, shows the
    # same command line for a moment: its parent is the child, not the ingest)
    mentioning = _processes_mentioning(str(warehouse))
    children = [pid for pid in mentioning if _parent_of(pid) == ingest.pid]
    assert ingest.pid in mentioning and len(children) == 1
    ingest.send_signal(signal.SIGTERM)  # the parent only, as `kill PID` does
    ingest.communicate(timeout=120)
    assert ingest.returncode == 143  # the child's death by SIGTERM, as a shell reports it
    deadline = time.monotonic() + 10
    while _processes_mentioning(str(warehouse)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_mentioning(str(warehouse)) == []
    assert relcol.open_warehouse(warehouse).studies() == []
