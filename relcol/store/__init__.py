"""The long table on disk: schema, atomic Parquet writes, DuckDB views (docs/development.md).

Each name is imported from its module on first use, so a reader that needs only the folders and
DuckDB (`relcol sql`, `relcol shell`: ``WarehouseFolder``, ``connect``) never imports Polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relcol._lazy import lazy_getattr

#: name -> the module that defines it.
_LAZY = {
    "chunk_spans": "relcol.store._chunks",
    "os_error": "relcol.store._files",
    "publish_folder": "relcol.store._files",
    "staged_folder": "relcol.store._files",
    "ANNOTATIONS": "relcol.store._schema",
    "CELL": "relcol.store._schema",
    "CLASSES": "relcol.store._schema",
    "CORRUPTIONS": "relcol.store._schema",
    "KEY": "relcol.store._schema",
    "PREDICTIONS": "relcol.store._schema",
    "RUNS": "relcol.store._schema",
    "conform": "relcol.store._schema",
    "CURVE_COUNTS": "relcol.store._sql",
    "STORED_BINS": "relcol.store._sql",
    "STORED_DRAWS": "relcol.store._sql",
    "connect": "relcol.store._sql",
    "connect_frame": "relcol.store._sql",
    "init_script": "relcol.store._sql",
    "reading_only": "relcol.store._sql",
    "sql_text": "relcol.store._sql",
    "ENV": "relcol.store._folder",
    "MATERIALISED": "relcol.store._folder",
    "QUERY_TIMEOUT": "relcol.store._folder",
    "WarehouseFolder": "relcol.store._folder",
    "check_name": "relcol.store._folder",
    "CheckResult": "relcol.store._warehouse",
    "IngestResult": "relcol.store._warehouse",
    "Staging": "relcol.store._warehouse",
    "Warehouse": "relcol.store._warehouse",
    "content_id": "relcol.store._warehouse",
    "write_part_file": "relcol.store._warehouse",
}
__all__ = [
    "ANNOTATIONS",
    "CELL",
    "CLASSES",
    "CORRUPTIONS",
    "CURVE_COUNTS",
    "ENV",
    "KEY",
    "MATERIALISED",
    "PREDICTIONS",
    "QUERY_TIMEOUT",
    "RUNS",
    "STORED_BINS",
    "STORED_DRAWS",
    "CheckResult",
    "IngestResult",
    "Staging",
    "Warehouse",
    "WarehouseFolder",
    "check_name",
    "chunk_spans",
    "conform",
    "connect",
    "connect_frame",
    "content_id",
    "init_script",
    "os_error",
    "publish_folder",
    "reading_only",
    "sql_text",
    "staged_folder",
    "write_part_file",
]
if TYPE_CHECKING:
    from relcol.store._chunks import chunk_spans
    from relcol.store._files import os_error, publish_folder, staged_folder
    from relcol.store._folder import ENV, MATERIALISED, QUERY_TIMEOUT, WarehouseFolder, check_name
    from relcol.store._schema import (
        ANNOTATIONS,
        CELL,
        CLASSES,
        CORRUPTIONS,
        KEY,
        PREDICTIONS,
        RUNS,
        conform,
    )
    from relcol.store._sql import (
        CURVE_COUNTS,
        STORED_BINS,
        STORED_DRAWS,
        connect,
        connect_frame,
        init_script,
        reading_only,
        sql_text,
    )
    from relcol.store._warehouse import (
        CheckResult,
        IngestResult,
        Staging,
        Warehouse,
        content_id,
        write_part_file,
    )


__getattr__ = lazy_getattr(globals(), _LAZY)
