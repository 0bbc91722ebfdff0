"""What every command shares: turning a RelcolError into one line, the warehouse and study-scope
options."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

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


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a RelcolError into one line on stderr and its exit code (2)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RelcolError as exc:
            click.echo(f"relcol: error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper
