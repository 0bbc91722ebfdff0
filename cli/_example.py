"""`relcol example`: generate a built-in example prediction set and ingest it."""

from __future__ import annotations

import click
from relcol.cli._common import say, user_errors, warehouse_option


@click.command()
@click.argument("name", type=click.Choice(["email"]), default="email")
@click.option("--study", help="Study name (default: email-example).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generator.")
@click.option(
    "--save",
    type=click.Path(dir_okay=False),
    help="Also write the generated predictions as a CSV file (the format `ingest --predictions` reads).",
)
@warehouse_option
@click.option("--replace", is_flag=True, help="Replace a study of the same name wholesale.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@user_errors
def example(
    name: str,
    study: str | None,
    seed: int,
    save: str | None,
    warehouse: str | None,
    replace: bool,
    as_json: bool,
) -> None:
    """Regenerate a published worked example's dummy email predictions and ingest them.

    200 emails, 5 labels, about 2 true labels each, 30 % of the decisions flipped,
    confidence ~ N(0.8, 0.1) when right and N(0.4, 0.15) when wrong (clipped to [0, 1]),
    plus a simulated annotator agreement. Prints relcol's numbers beside the published table.

    \b
    Examples:
      relcol example email
      relcol report --study email-example
      relcol example email --seed 3 --study email-seed3 --save email.csv
    """
    import relcol
    from relcol.data import email_predictions

    if save is not None:
        email_predictions(seed).write_csv(save)
    result = relcol.example(name, warehouse, study=study, seed=seed, replace=replace)
    table = result.comparison
    if as_json:
        say(table.write_json(), data=True)
        return
    say(
        f"wrote {result.ingest.rows:,} multi-label rows of study {result.ingest.study!r} to "
        f"{result.ingest.warehouse}"
    )
    say(f"{'metric':<15}{'published':>10}{'relcol':>10}  relcol's definition")
    for row in table.iter_rows(named=True):
        ours = "pending" if row["relcol"] is None else f"{row['relcol']:.4f}"
        # the table gives MCE and PR-AUC as lower bounds only ("0.25+"): printed as it did
        bound = row["relation"] == "≥"
        published = f"{row['published']:.2f}+" if bound else f"{row['published']:.4f}"
        say(f"{row['metric']:<15}{published:>10}{ours:>10}  {row['definition']}")
    say(f"report: relcol report --study {result.ingest.study}")
