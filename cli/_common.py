"""What every command shares: turning a RelcolError into one line, the options several
commands take (one definition each), and the line saying what an ingest wrote."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from relcol.errors import RelcolError
from relcol.text import printable, printable_line

warehouse_option = click.option(
    "--warehouse",
    type=click.Path(file_okay=False),
    help="Warehouse folder (default: $RELCOL_WAREHOUSE, else ./warehouse).",
)


study_scope_option = click.option(
    "--study",
    help="Define the views over this study's files only (faster than a WHERE on a view of "
    "every study).",
)


replace_option = click.option(
    "--replace",
    is_flag=True,
    help="Replace a study of the same name wholesale instead of refusing.",
)


def study_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--study NAME``: which study the command reads (``help`` says how it is chosen)."""
    return click.option("--study", help=help)


def quiet_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--quiet", "-q", is_flag=True, help=help)


def json_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--json", "as_json", is_flag=True, help=help)


def bins_option(help: str, type: Any = int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--bins N`` (default 15): equal-width bins, checked by the library unless ``type``
    bounds it here."""
    return click.option("--bins", type=type, default=15, show_default=True, help=help)


def backend_option(work: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--backend local|dask`` (default: none given, which means local): where ``work`` runs."""
    return click.option(
        "--backend",
        type=click.Choice(["local", "dask"]),
        default=None,
        help=f"Where {work} run: here, or a Dask cluster ($DASK_SCHEDULER_ADDRESS, else a local "
        "one with --jobs workers).  [default: local]",
    )


def bootstrap_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--bootstrap B`` (default 1000, 0: none)."""
    return click.option(
        "--bootstrap",
        type=click.IntRange(min=0),
        default=1000,
        show_default=True,
        metavar="B",
        help=help,
    )


def seed_option(
    help: str, maximum: int | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed N`` (default 0, at least 0, at most ``maximum``)."""
    kind = click.IntRange(min=0, max=maximum)
    return click.option("--seed", type=kind, default=0, show_default=True, help=help)


def say_written(result: Any, what: str = "", *, as_json: bool = False, quiet: bool = False) -> None:
    """What an ingest (an ``IngestResult``) wrote: as JSON on stdout, or one line (none when
    ``quiet``); ``what`` qualifies the study (e.g. "simulated ")."""
    if as_json:
        say(json.dumps(result.__dict__), data=True)
    elif not quiet:
        say(
            f"wrote {result.rows:,} rows in {result.cells:,} cells ({result.parts} files) of "
            f"{what}study {result.study!r}, run {result.run_id}, to {result.warehouse} "
            f"in {result.seconds:.1f} s"
        )


def say(text: object, *, err: bool = False, nl: bool = True, data: bool = False) -> None:
    """The one way the CLI prints: control characters made visible (``printable``), so a
    hostile name in a file or a query result cannot drive the terminal. ``data`` (CSV,
    JSON, SQL) is written byte for byte when it goes to a file or a pipe."""
    text = str(text)
    exact = data and not (sys.stderr if err else sys.stdout).isatty()
    # color=True: click would otherwise strip escape sequences from data sent to a pipe
    click.echo(text if exact else printable(text), err=err, nl=nl, color=True if exact else None)


def complain(message: str, code: int) -> NoReturn:
    """One line on stderr (a newline in ``message`` is shown, not obeyed) and exit ``code``."""
    say(f"relcol: error: {printable_line(message)}", err=True)
    sys.exit(code)


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a RelcolError into one line on stderr and its exit code (2)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RelcolError as exc:
            complain(str(exc), exc.exit_code)

    return wrapper
