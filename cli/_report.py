"""`relcol report`: metrics, the HTML report, the terminal summary."""

from __future__ import annotations

import click
from relcol.cli._common import user_errors, warehouse_option


@click.command()
@click.option("--study", help="Study to report (default: the only study in the warehouse).")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Output folder (default: ./reports/<study>)."
)
@click.option(
    "--bins",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Equal-width bins for ECE/MCE.",
)
@warehouse_option
@click.option("--quiet", "-q", is_flag=True, help="Print only the report's path.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the calibration table as JSON on stdout."
)
@user_errors
def report(
    study: str | None, out: str | None, bins: int, warehouse: str | None, quiet: bool, as_json: bool
) -> None:
    """Compute calibration per cell, materialise it in the warehouse, write the HTML report.

    \b
    Examples:
      relcol report                               # the only study, into ./reports/<study>
      relcol report --study email-llm --out reports/email --bins 10
    """
    import relcol

    result = relcol.report(warehouse, study=study, out=out, bins=bins)
    if as_json:
        click.echo(result.calibration.write_json())
        return
    if not quiet:
        click.echo(result.summary)
    click.echo(f"report: {result.html}")
