"""The long table on disk: schema, atomic Parquet writes, DuckDB views (docs/development.md)."""

from __future__ import annotations

from relcol.store._chunks import chunk_spans
from relcol.store._files import os_error, publish_folder, staged_folder
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
    STORED_BINS,
    STORED_DRAWS,
    connect,
    connect_frame,
    init_script,
    reading_only,
    sql_text,
)
from relcol.store._warehouse import (
    ENV,
    MATERIALISED,
    QUERY_TIMEOUT,
    CheckResult,
    IngestResult,
    Staging,
    Warehouse,
    check_name,
    content_id,
    write_part_file,
)

__all__ = [
    "ANNOTATIONS",
    "CELL",
    "CLASSES",
    "CORRUPTIONS",
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
