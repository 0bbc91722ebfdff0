"""`relcol sql` and `relcol shell`: the views, from the command line and from the DuckDB shell."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import click
from relcol.cli._common import say, study_scope_option, user_errors, warehouse_option

memory_limit_option = click.option(
    "--memory-limit",
    metavar="SIZE",
    help="Memory a query may hold before it spills to disk, e.g. 4GB (default: half the "
    "machine's memory).",
)


@click.command()
@click.argument("query")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="A table for the terminal (a DOUBLE below 10^6 to 6 significant digits), or every "
    "row and digit as CSV or JSON.",
)
@click.option(
    "--bins",
    type=int,
    default=15,
    show_default=True,
    help="Bins used by the calibration views.",
)
@click.option(
    "--unsafe",
    is_flag=True,
    help="Allow statements that write (COPY, CREATE …) and reading files outside the warehouse.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Stop a query that runs longer than this (default: relcol.store.QUERY_TIMEOUT, 600; "
    "0: no limit).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Rows a table shows (default: 100; 0: all, up to 9,999; csv and json always write "
    "every row).",
)
@memory_limit_option
@study_scope_option
@warehouse_option
@user_errors
def sql(
    query: str,
    fmt: str,
    limit: int | None,
    bins: int,
    unsafe: bool,
    timeout: float | None,
    memory_limit: str | None,
    study: str | None,
    warehouse: str | None,
) -> None:
    """Answer an ad-hoc SQL query over the views (predictions, calibration, calibration_bins, runs, ...).

    A table shows the first 100 rows (--limit) and the columns that fit the terminal's width
    (COLUMNS sets it), and says on stderr what it leaves out; csv and json write everything.

    Only reading statements run (SELECT, DESCRIBE, SUMMARIZE, EXPLAIN of a SELECT), only the
    warehouse's files can be read, and nothing can be written, unless --unsafe is given.
    A query is stopped after --timeout seconds; Ctrl-C stops it too (exit 130).

    \b
    Examples:
      relcol sql "SELECT model, corruption, severity, ece FROM calibration ORDER BY ALL"
      relcol sql --study tiny "SELECT * FROM consistency WHERE axis = 'seed'"
    """
    # the store only (not the facade, which brings the modelling and report libraries), and for
    # a table DuckDB alone: a query starts as fast as DuckDB allows
    from relcol.store import WarehouseFolder

    options = {"bins": bins, "unsafe": unsafe, "study": study, "memory_limit": memory_limit}
    if timeout is not None:
        options["timeout"] = timeout or None
    folder = WarehouseFolder.default(warehouse)
    if fmt == "table":
        from relcol.cli._table import SQL_ROWS, result_text

        rows = SQL_ROWS if limit is None else (limit or None)
        width = shutil.get_terminal_size().columns
        draw = functools.partial(result_text, limit=rows, width=width)
        text, notes = folder.query(query, consume=draw, **options)
        say(text)
        for note in notes:
            say(f"relcol: {note}", err=True)
        return
    from relcol.store import Warehouse  # csv and json are written by Polars

    frame = Warehouse(folder.root).sql(query, **options)
    say(frame.write_csv() if fmt == "csv" else frame.write_json(), nl=fmt == "json", data=True)


@click.command()
@warehouse_option
@study_scope_option
@click.option("--bins", type=int, default=15, show_default=True)
@click.option(
    "--print-init", is_flag=True, help="Print the init script instead of starting the shell."
)
@memory_limit_option
@user_errors
def shell(
    warehouse: str | None, study: str | None, bins: int, print_init: bool, memory_limit: str | None
) -> None:
    """Open the DuckDB shell with every relcol view defined.

    The views are created by an init script over the warehouse's Parquet files
    (absolute paths), so any DuckDB shell version that reads Parquet works; no
    database file is involved. The shell is not sandboxed (it is DuckDB's own, with all
    its powers) and has no time limit: Ctrl-C stops a query.

    \b
    Examples:
      relcol shell
      relcol shell --print-init > views.sql && duckdb -init views.sql
      relcol shell --study tiny
    """
    from relcol.store import WarehouseFolder

    script = WarehouseFolder.default(warehouse).init_script(
        bins=bins, study=study, memory_limit=memory_limit
    )
    if print_init:
        say(script, nl=False, data=True)
        return
    # beside this Python: the environment's own shell (`pip install duckdb-cli` puts it in its
    # bin/), found when relcol runs from a virtual environment that is not activated
    beside = sysconfig.get_path("scripts")
    exe = (
        os.environ.get("RELCOL_DUCKDB")
        or shutil.which("duckdb")
        or shutil.which("duckdb", path=beside)
    )
    if exe is None:
        say(
            f"relcol: error: the DuckDB shell (`duckdb`) is neither on PATH nor in {beside}. "
            "Install it with `pip install duckdb-cli` (or `pip install 'relcol[shell]'`), or "
            "point RELCOL_DUCKDB at it.",
            err=True,
        )
        sys.exit(3)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as handle:
        handle.write(script)
    try:
        sys.exit(subprocess.call([exe, "-init", handle.name]))
    finally:
        os.unlink(handle.name)
