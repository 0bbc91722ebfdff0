from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
TINY = TESTS / "data" / "tiny.toml"
SHARED = TESTS.parent.parent / "shared"


@pytest.fixture(scope="session")
def tiny_warehouse(tmp_path_factory: pytest.TempPathFactory):
    """The tiny study ingested once per session (read-only for tests)."""
    import relcol

    wh = relcol.open_warehouse(tmp_path_factory.mktemp("wh") / "warehouse")
    relcol.ingest(TINY, wh)
    return wh
