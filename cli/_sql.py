"""`relcol sql` and `relcol shell`: the views, from the command line and from the DuckDB shell."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import click
from relcol.cli._common import say, study_scope_option, user_errors, warehouse_option


@click.command()
@click.argument("query")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--bins",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Bins used by the calibration views.",
)
@click.option(
    "--unsafe",
    is_flag=True,
    help="Allow statements that write (COPY, CREATE …) and reading files outside the warehouse.",
)
@study_scope_option
@warehouse_option
@user_errors
def sql(
    query: str, fmt: str, bins: int, unsafe: bool, study: str | None, warehouse: str | None
) -> None:
    """Answer an ad-hoc SQL query over the views (predictions, calibration, calibration_bins, runs, ...).

    Only reading statements run, and only the warehouse's files can be read, unless
    --unsafe is given.

    \b
    Examples:
      relcol sql "SELECT model, corruption, severity, ece FROM calibration ORDER BY ALL"
      relcol sql --study tiny "SELECT * FROM consistency WHERE axis = 'seed'"
    """
    import polars as pl

    import relcol

    frame = relcol.open_warehouse(warehouse).sql(query, bins=bins, unsafe=unsafe, study=study)
    if fmt == "csv":
        say(frame.write_csv(), nl=False, data=True)
    elif fmt == "json":
        say(frame.write_json(), data=True)
    else:
        with pl.Config(tbl_rows=100, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60):
            say(frame)


@click.command()
@warehouse_option
@study_scope_option
@click.option("--bins", type=click.IntRange(min=1), default=15, show_default=True)
@click.option(
    "--print-init", is_flag=True, help="Print the init script instead of starting the shell."
)
@user_errors
def shell(warehouse: str | None, study: str | None, bins: int, print_init: bool) -> None:
    """Open the DuckDB shell with every relcol view defined.

    The views are created by an init script over the warehouse's Parquet files
    (absolute paths), so any DuckDB shell version that reads Parquet works; no
    database file is involved.

    \b
    Examples:
      relcol shell
      relcol shell --print-init > views.sql && duckdb -init views.sql
      relcol shell --study tiny
    """
    import relcol

    script = relcol.open_warehouse(warehouse).init_script(bins=bins, study=study)
    if print_init:
        say(script, nl=False, data=True)
        return
    exe = os.environ.get("RELCOL_DUCKDB") or shutil.which("duckdb")
    if exe is None:
        say(
            "relcol: error: the DuckDB shell (`duckdb`) is not on PATH. Install it with "
            "`pip install duckdb-cli` (or `pip install 'relcol[shell]'`), or point RELCOL_DUCKDB at it.",
            err=True,
        )
        sys.exit(3)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as handle:
        handle.write(script)
    try:
        sys.exit(subprocess.call([exe, "-init", handle.name]))
    finally:
        os.unlink(handle.name)
