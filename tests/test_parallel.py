"""Where the fits run changes nothing: jobs and the Dask backend give byte-identical parts."""

from __future__ import annotations

import pytest

import relcol
from relcol.errors import ParameterError
from tests.conftest import TINY
from tests.test_store import checksums


def parts(wh) -> dict[str, str]:
    return {k: v for k, v in checksums(wh.root / "predictions").items() if "/part-" in k}


def test_local_processes_write_the_same_parts(tmp_path, tiny_warehouse):
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(TINY, wh, jobs=2)
    assert parts(wh) == parts(tiny_warehouse)


def test_a_local_dask_cluster_writes_the_same_parts(tmp_path, tiny_warehouse, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    wh = relcol.open_warehouse(tmp_path / "wh")
    seen = []
    result = relcol.ingest(TINY, wh, jobs=2, backend="dask", progress=seen.append)
    assert parts(wh) == parts(tiny_warehouse)
    assert len(seen) == result.parts == 12


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
