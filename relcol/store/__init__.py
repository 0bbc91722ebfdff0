"""The long table on disk: schema, atomic Parquet writes, DuckDB views (DESIGN.md §4–§5)."""

from __future__ import annotations

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
from relcol.store._sql import connect, connect_frame, init_script, sql_text
from relcol.store._warehouse import (
    ENV,
    MATERIALISED,
    Staging,
    Warehouse,
    check_name,
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
    "RUNS",
    "Staging",
    "Warehouse",
    "check_name",
    "conform",
    "connect",
    "connect_frame",
    "init_script",
    "sql_text",
    "write_part_file",
]
