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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that hold slow tests first, the rest in their usual order: the suite runs
    on several workers a module at a time (``--dist loadfile``), so the longest modules start
    at once and the many short ones fill in around them, instead of one long module left
    running on one worker at the end."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)
