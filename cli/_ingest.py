"""`relcol ingest`: run a study into the warehouse."""

from __future__ import annotations

import contextlib
import json
import sys

import click
from relcol.cli._common import user_errors, warehouse_option


@click.command()
@click.option(
    "--study",
    "study_file",
    type=click.Path(dir_okay=False),
    help="Study spec (TOML). Default: the built-in study.",
)
@warehouse_option
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a study of the same name wholesale instead of refusing.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary line.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON on stdout.")
@user_errors
def ingest(
    study_file: str | None, warehouse: str | None, replace: bool, quiet: bool, as_json: bool
) -> None:
    """Fit each model once on clean data, corrupt the test set at every severity, store every prediction.

    \b
    Examples:
      relcol ingest                              # the built-in study into ./warehouse
      relcol ingest --study my_study.toml --warehouse /data/wh
    """
    import relcol
    from relcol.study import n_fits

    study = relcol.load_study(study_file)
    wh = relcol.open_warehouse(warehouse)
    show = not quiet and not as_json
    with contextlib.ExitStack() as stack:
        bar = None

        def advance(n: int) -> None:
            # The bar starts with the first fit, after every check has passed: an invalid
            # study prints its one error line and nothing else.
            nonlocal bar
            if bar is None:
                bar = stack.enter_context(
                    click.progressbar(
                        length=n_fits(study),
                        label=f"ingest {study.name}",
                        file=sys.stderr,
                        hidden=not show,
                        show_pos=True,
                    )
                )
            bar.update(n)

        result = relcol.ingest(study, wh, replace=replace, progress=advance)
    if as_json:
        click.echo(json.dumps(result.__dict__))
    elif not quiet:
        click.echo(
            f"wrote {result.rows:,} rows in {result.cells:,} cells ({result.parts} files) of study "
            f"{result.study!r}, run {result.run_id}, to {result.warehouse} in {result.seconds:.1f} s"
        )
