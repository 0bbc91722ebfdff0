"""The report's per-cell tables on a Dask cluster are the single-machine tables, exactly."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import relcol
from relcol.errors import ParameterError
from relcol.store import CELL, CURVE_COUNTS, Warehouse
from relcol.workflows import report_tables
from relcol.workflows._report_backend import partitions
from tests.test_cli import relcol as run_cli
from tests.test_store import checksums

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster_address():
    """Two single-threaded worker processes: tasks and their results really are pickled."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def on_cluster(cluster_address, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster_address)
    return cluster_address


def assert_same_tables(local: dict, dask: dict) -> None:
    assert list(dask) == list(local)
    for name, table in local.items():
        assert_frame_equal(dask[name], table, check_exact=True, categorical_as_str=True), name


@pytest.mark.parametrize("bootstrap", [0, 40])
def test_every_report_table_is_the_local_one(tiny_warehouse, on_cluster, bootstrap, monkeypatch):
    # a study without stored rows: every per-cell table is computed from the rows
    monkeypatch.setattr(type(tiny_warehouse), "stored", lambda *args: None)
    settings = {"bins": 10, "bootstrap": bootstrap, "seed": 3}
    local = report_tables(tiny_warehouse, "tiny", **settings)
    with distributed.Client(on_cluster) as client, distributed.get_task_stream(client) as stream:
        dask = report_tables(tiny_warehouse, "tiny", backend="dask", **settings)
    assert_same_tables(local, dask)
    # the per-cell tables ran on both workers, one task per partition (about 2 per worker:
    # whole cells of at most ceil(20 736 / 4) rows), for the metric tables, then consistency
    counts = tiny_warehouse.predictions("tiny").group_by(CELL).len("n").sort(CELL).collect()
    runs = partitions(counts, 4)
    assert len(runs) == 5 and sum(run.height for run in runs) == 72
    tasks = [task for task in stream.data if task["key"].startswith("_partition")]
    # with B > 0 the bootstrap's runs of cells, too
    assert len(tasks) == (3 if bootstrap else 2) * len(runs)
    assert len({task["worker"] for task in tasks}) == 2
    # the tables hold what the study has: every cell, several seeds and repeats per cell
    cells = tiny_warehouse.predictions("tiny").select(CELL).unique().collect()
    assert local["calibration"].height == cells.height == 72
    assert not local["consistency"].is_empty()
    if bootstrap:
        assert local["calibration"]["bootstrap"].unique().to_list() == [40]


def test_with_stored_rows_only_a_curve_without_counts_goes_to_the_cluster(
    tiny_warehouse, on_cluster, monkeypatch
):
    def tasks() -> tuple[dict, list]:
        with distributed.Client(on_cluster) as client:
            with distributed.get_task_stream(client) as stream:
                dask = report_tables(tiny_warehouse, "tiny", backend="dask", bootstrap=0)
        return dask, [task for task in stream.data if task["key"].startswith("_partition")]

    # every table stored, the curve's counts too: nothing reads the rows
    assert tiny_warehouse.stored(CURVE_COUNTS, "tiny") is not None
    local = report_tables(tiny_warehouse, "tiny", bootstrap=0)
    dask, sent = tasks()
    assert_same_tables(local, dask)
    assert sent == []
    # without the counts, the risk-coverage curve is computed on the cluster, one task each
    real = Warehouse.stored
    monkeypatch.setattr(
        Warehouse,
        "stored",
        lambda self, view, study: None if view == CURVE_COUNTS else real(self, view, study),
    )
    dask, sent = tasks()
    assert_same_tables(local, dask)
    counts = tiny_warehouse.predictions("tiny").group_by(CELL).len("n").sort(CELL).collect()
    assert len(sent) == len(partitions(counts, 4))


def test_the_partitions_are_whole_cells_in_order_and_balanced():
    n = [5, 1, 7, 3, 3, 9, 2]
    cells = pl.DataFrame({key: [f"{key}{i}" for i in range(len(n))] for key in CELL}).with_columns(
        n=pl.Series(n)
    )
    runs = partitions(cells, 4)
    # ceil(30 / 4) = 8 rows per run at most, unless one cell is larger (9)
    assert [run["model"].to_list() for run in runs] == [
        ["model0", "model1"],
        ["model2"],
        ["model3", "model4"],
        ["model5"],
        ["model6"],
    ]
    assert pl.concat(runs).equals(cells)
    empty = partitions(cells.clear(), 4)
    assert len(empty) == 1 and empty[0].is_empty()


def test_the_cli_reports_on_the_cluster_with_the_local_values(tmp_path, tiny_warehouse, on_cluster):
    outs = {}
    for backend in ("local", "dask"):
        out = tmp_path / backend
        args = ("report", "--warehouse", str(tiny_warehouse.root), "--bootstrap", "0")
        done = run_cli(*args, "--out", str(out), "--backend", backend, "--quiet", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outs[backend] = pl.read_parquet(out / "calibration.parquet")
    assert_frame_equal(outs["dask"], outs["local"], check_exact=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "spark"}, "backend must be one of local, dask"),
        ({"backend": "dask", "jobs": 0}, "jobs must be an int >= 1"),
        ({"jobs": 2}, "jobs sets the workers of backend 'dask'"),
    ],
)
def test_a_bad_backend_is_refused_before_any_work(tiny_warehouse, kwargs, message):
    with pytest.raises(ParameterError, match=message):
        report_tables(tiny_warehouse, "tiny", bootstrap=0, **kwargs)


def test_without_dask_the_cli_says_how_to_install_it(tmp_path, tiny_warehouse):
    fake = tmp_path / "site" / "distributed"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('simulated: no dask.distributed')\n")
    before = checksums(tiny_warehouse.root)
    args = ("report", "--warehouse", str(tiny_warehouse.root), "--out", str(tmp_path / "r"))
    done = run_cli(*args, "--backend", "dask", cwd=tmp_path, env={"PYTHONPATH": str(fake.parent)})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "relcol: error: backend 'dask' needs dask.distributed: pip install 'relcol[dask]'"
    ]
    assert not (tmp_path / "r").exists()
    assert checksums(tiny_warehouse.root) == before


def test_an_unknown_backend_from_the_cli_is_one_error_line(tmp_path, tiny_warehouse):
    args = ("report", "--warehouse", str(tiny_warehouse.root), "--backend", "spark")
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert "'spark' is not one of 'local', 'dask'" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3  # click's usage line, hint and error
    assert relcol.open_warehouse(tiny_warehouse.root).studies() == ["tiny"]
