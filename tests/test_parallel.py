"""Where the fits run changes nothing: jobs and the Dask backend give byte-identical parts."""

from __future__ import annotations

import json
import platform

import pytest

import relcol
from relcol.errors import ParameterError
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
