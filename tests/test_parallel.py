"""Where the fits run changes nothing: jobs and the Dask backend give byte-identical parts."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from relcol.cli import main

import relcol
from relcol import _cluster
from relcol.errors import ParameterError
from relcol.study import _parallel
from relcol.study._parallel import available_cores, check_backend, run_tasks
from tests.conftest import TINY
from tests.test_store import checksums


def parts(wh) -> dict[str, str]:
    return {k: v for k, v in checksums(wh.root / "predictions").items() if "/part-" in k}


def numerics(wh) -> dict[str, str]:
    """The numeric environment the runs record names (the workers' own, as they reported it)."""
    versions = json.loads(wh.sql("SELECT versions FROM runs").item())
    return {k: versions[k] for k in ("blas", "libc", "machine")}


def test_local_processes_write_the_same_parts(tmp_path, tiny_warehouse):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh, jobs=2)
    assert parts(wh) == parts(tiny_warehouse)
    assert numerics(wh) == numerics(tiny_warehouse)
    assert numerics(wh)["machine"] == platform.machine()
    assert " | " not in numerics(wh)["blas"]  # every worker alike: one value, not several


def test_a_local_dask_cluster_writes_the_same_parts(tmp_path, tiny_warehouse, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    wh = relcol.open_warehouse(tmp_path / "wh")
    seen = []
    result = relcol.ingest(TINY, wh, jobs=2, backend="dask", progress=seen.append)
    assert parts(wh) == parts(tiny_warehouse)
    assert len(seen) == result.parts == 12
    assert numerics(wh) == numerics(tiny_warehouse)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "spark"}, "backend must be one of local, dask"),
        ({"jobs": 0}, "jobs must be an int >= 1"),
    ],
)
def test_bad_backend_or_jobs_is_refused_before_anything_is_written(tmp_path, kwargs, message):
    wh = relcol.open_warehouse(tmp_path / "wh")
    before = checksums(wh.root)
    with pytest.raises(ParameterError, match=message):
        relcol.ingest(TINY, wh, **kwargs)
    assert checksums(wh.root) == before


def test_workers_unlike_each_other_are_all_named():
    from relcol.study._runner import _merged

    one = {"blas": "openblas 0.3 Haswell", "libc": "glibc 2.36", "machine": "x86_64"}
    other = {"blas": "openblas 0.3 Prescott", "libc": "glibc 2.36", "machine": "x86_64"}
    assert _merged([one, other, one]) == {
        "blas": "openblas 0.3 Haswell | openblas 0.3 Prescott",
        "libc": "glibc 2.36",
        "machine": "x86_64",
    }
    assert _merged([one, one]) == one


def pool_workers() -> list[int]:
    """This process's live child processes that are local pool workers (Linux /proc)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:  # a thread that ended meanwhile
            continue
        for pid in children:
            try:
                if "LokyProcess" in Path(f"/proc/{pid}/cmdline").read_text():
                    found.append(int(pid))
            except OSError:  # ended meanwhile
                continue
    return found


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@linux_only
def test_no_worker_outlives_the_ingest(tmp_path, tiny_warehouse):
    # joblib's reusable workers idled 300 s after the work; the command line, which runs
    # its exit handlers itself, waited for them: --jobs 2 took 5.6 min instead of 40 s
    assert pool_workers() == []
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh, jobs=2)
    assert pool_workers() == []
    assert parts(wh) == parts(tiny_warehouse)


def test_the_command_line_with_jobs_ends_when_its_work_is_done(tmp_path):
    command = [sys.executable, "-m", "relcol.cli", "ingest", "--study", str(TINY)]
    command += ["--warehouse", str(tmp_path / "wh"), "--jobs", "2", "-q"]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr
    # the tiny study takes seconds; an idle worker kept the process for 300 s more
    assert time.monotonic() - start < 150


def _fail_on_three(x: int, path: Path) -> int:
    if x == 3:
        raise ValueError(f"task {x} failed writing {path.name}")
    time.sleep(0.2)
    return x * x


@linux_only
def test_a_failing_task_stops_the_pool_with_its_own_error(tmp_path):
    tasks = [(x,) for x in range(8)]
    paths = [tmp_path / f"part-{i}" for i in range(8)]
    with pytest.raises(ValueError, match="task 3 failed writing part-3"):
        list(run_tasks(_fail_on_three, tasks, paths, jobs=2))
    assert pool_workers() == []


@linux_only
def test_a_caller_stopping_early_stops_the_pool():
    tasks = [(x,) for x in range(4, 104)]  # no 3: none fails
    results = run_tasks(_fail_on_three, tasks, [Path(f"p{x}") for x in range(100)], jobs=2)
    assert next(results) in {x * x for x in range(4, 104)}
    start = time.monotonic()
    results.close()  # the ingest failed or was interrupted: the remaining tasks are dropped
    assert time.monotonic() - start < 5  # the 99 others would take 10 s on two workers
    assert pool_workers() == []


def test_every_result_comes_back_once_from_the_workers():
    tasks = [(x,) for x in range(4, 14)]
    got = list(run_tasks(_fail_on_three, tasks, [Path(f"p{x}") for x in range(10)], jobs=3))
    assert sorted(got) == [x * x for x in range(4, 14)]


def test_the_default_is_one_process_per_available_core(monkeypatch):
    if hasattr(os, "sched_getaffinity"):
        assert available_cores() == len(os.sched_getaffinity(0))
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 7})
        assert check_backend("local", None) == 3  # the affinity, not os.cpu_count()
    else:
        assert available_cores() == os.cpu_count()
    assert check_backend("local", 1) == 1


def test_the_command_line_runs_on_the_available_cores_unless_given_jobs(
    tmp_path, tiny_warehouse, monkeypatch
):
    seen = []
    local = _parallel._local

    def spy(fn, tasks, paths, jobs):
        seen.append(jobs)
        return local(fn, tasks, paths, jobs)

    monkeypatch.setattr(_parallel, "_local", spy)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1, 2}, raising=False)
    wh = tmp_path / "wh"
    done = CliRunner().invoke(main, ["ingest", "--study", str(TINY), "--warehouse", str(wh), "-q"])
    assert done.exit_code == 0, done.output
    assert seen == [3]  # one process per core this process may use
    assert parts(relcol.open_warehouse(wh)) == parts(tiny_warehouse)
    one = CliRunner().invoke(
        main, ["ingest", "--study", str(TINY), "--warehouse", str(wh), "--replace", "--jobs", "1"]
    )
    assert one.exit_code == 0 and seen == [3]  # --jobs 1: in this process, no pool
    assert parts(relcol.open_warehouse(wh)) == parts(tiny_warehouse)


def test_jobs_none_runs_on_the_available_cores(tmp_path, tiny_warehouse, monkeypatch):
    seen = []
    local = _parallel._local
    monkeypatch.setattr(_cluster, "available_cores", lambda: 2)
    monkeypatch.setattr(_parallel, "_local", lambda *a: seen.append(a[-1]) or local(*a))
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh, jobs=None)
    assert seen == [2]
    assert parts(wh) == parts(tiny_warehouse)


# Work beside the caller's (the report's consistency table beside its statistical layer) ------


def test_work_beside_gives_its_result_or_its_own_error():
    import threading

    from relcol.workflows._beside import beside

    def work(x, *, stop):
        if x < 0:
            raise ParameterError(f"x must be >= 0. Got {x}.")
        return x * x, threading.current_thread() is threading.main_thread()

    with beside(work, 3) as pending:
        assert pending.result() == (9, False)  # in a thread of its own
    with beside(work, 3, inline=True) as pending:
        assert pending.done() and pending.result() == (9, True)  # here, before the block
    with beside(work, -1) as pending, pytest.raises(ParameterError, match="Got -1"):
        pending.result()


def test_leaving_the_block_by_an_error_stops_the_work_and_does_not_wait():
    import threading

    from relcol.workflows._beside import Stopped, beside

    started, steps = threading.Event(), []

    def work(*, stop):
        started.set()
        while len(steps) < 100:  # 10 s unless stopped
            if stop.is_set():
                raise Stopped
            steps.append(1)
            time.sleep(0.1)

    with pytest.raises(KeyError), beside(work) as pending:
        started.wait(5)
        failed = time.monotonic()
        raise KeyError("the caller's own work failed")
    assert time.monotonic() - failed < 2  # the error goes on at once
    with pytest.raises(Stopped):
        pending.result(timeout=5)  # and the work ends at its next step
    assert len(steps) < 20


def test_an_error_of_the_consistency_table_reaches_the_report(tiny_warehouse, monkeypatch):
    from relcol.errors import InputError
    from relcol.workflows import _report_tables

    def failing(*args, **kwargs):
        raise InputError("consistency: a stratum has no replicates")

    monkeypatch.setattr(_report_tables, "consistency_table", failing)
    monkeypatch.setattr(type(tiny_warehouse), "stored", lambda *args: None)  # none stored
    with pytest.raises(InputError, match="no replicates"):
        _report_tables.report_tables(tiny_warehouse, "tiny", bootstrap=20)


def test_a_failing_statistical_layer_stops_the_consistency_table(tiny_warehouse, monkeypatch):
    import threading

    from relcol.workflows import _report_tables
    from relcol.workflows._beside import Stopped

    asked = threading.Event()

    def slow(*args, stop, **kwargs):
        if stop.wait(10):  # a long table, asked to stop between its chunks
            asked.set()
            raise Stopped

    failed = []

    def failing(*args, **kwargs):
        failed.append(time.monotonic())
        raise ParameterError("the statistical layer failed")

    monkeypatch.setattr(_report_tables, "consistency_table", slow)
    monkeypatch.setattr(_report_tables, "statistical_tables", failing)
    monkeypatch.setattr(type(tiny_warehouse), "stored", lambda *args: None)  # none stored
    with pytest.raises(ParameterError, match="statistical layer failed"):
        _report_tables.report_tables(tiny_warehouse, "tiny", bootstrap=20)
    assert time.monotonic() - failed[0] < 5  # not waiting for the table (10 s)
    assert asked.wait(5)
