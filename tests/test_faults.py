"""Nothing lost at any crash point: SIGKILL injected at every file-system step of an ingest
and of a replace (tests/faults.py), checksums that find damage (`relcol check`), and
writes that publish nothing unless everything succeeded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import relcol
from relcol.store import Warehouse
from tests.conftest import TESTS
from tests.test_sandbox import small_predictions


class Injector:
    """tests/faults.py running beside the test: one forked ingest per ``trial``."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(TESTS / "faults.py"), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=TESTS.parent,
            env={**__import__("os").environ, "PYTHONPATH": str(TESTS.parent)},
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
