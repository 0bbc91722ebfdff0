"""What every command shares: turning a RelcolError into one line, the warehouse and study-scope
options."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from relcol._text import printable, printable_line
from relcol.errors import RelcolError

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
