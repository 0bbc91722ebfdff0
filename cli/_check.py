"""`relcol check`: verify a warehouse's files against the checksums recorded at commit."""

from __future__ import annotations

import sys

import click
from relcol.cli._common import user_errors, warehouse_option


@click.command()
@warehouse_option
@click.option("--quiet", "-q", is_flag=True, help="Print only the problems.")
@user_errors
def check(warehouse: str | None, quiet: bool) -> None:
    """Verify the warehouse: every committed file against the SHA-256 recorded when it was
    committed, every schema file against the code, and no stray file among them.

    Prints one line per damaged, missing or unexpected file (naming it) and exits 2 if
    there is any; exits 0 when everything is intact. `relcol report` rebuilds a study's
    materialised tables (metrics/) and the schema files (_schema/); a damaged study under
    predictions/ must be ingested again (--replace).

    \b
    Examples:
      relcol check
      relcol check --warehouse /data/wh -q
    """
    from relcol.store import Warehouse  # the store only: no modelling or report libraries

    result = Warehouse.default(warehouse).check()
    for problem in result.problems:
        click.echo(f"damaged: {problem}", err=True)
    if not quiet:
        for note in result.notes:
            click.echo(f"note: {note}", err=True)
        verdict = f"{len(result.problems)} problem(s)" if result.problems else "intact"
        click.echo(f"checked {result.files} files: {verdict}")
    if result.problems:
        sys.exit(2)
