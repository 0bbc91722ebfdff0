"""`relcol recalibrate`: fit recalibration maps on a calibration split, judge them on the rest."""

from __future__ import annotations

import click
from relcol.cli._common import (
    bins_option,
    json_option,
    quiet_option,
    replace_option,
    say,
    study_option,
    user_errors,
    warehouse_option,
)

METHODS = ("temperature", "platt", "isotonic", "histogram")


@click.command()
@study_option("Study to recalibrate (default: the only study in the warehouse).")
@click.option(
    "--method",
    "methods",
    multiple=True,
    type=click.Choice([*METHODS, "all"]),
    help="Recalibration map; repeat for several (all: every one).  [default: temperature]",
)
@click.option(
    "--fraction",
    type=float,
    default=0.5,
    show_default=True,
    help="Share of each dataset's sample ids in the calibration split.",
)
@click.option(
    "--stored-split",
    is_flag=True,
    help="Use the split column of the ingested prediction file instead of --fraction.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split.")
@click.option("--name", help="Name of the new study (default: <study>-recal-<methods>).")
@bins_option("Equal-width bins of the ECE shown.")
@click.option(
    "--histogram-bins",
    type=int,
    default=15,
    show_default=True,
    help="Equal-mass bins of the histogram-binning map.",
)
@warehouse_option
@replace_option
@quiet_option("Print only the new study's name.")
@json_option("Print the before/after table as JSON.")
@user_errors
def recalibrate(
    study: str | None,
    methods: tuple[str, ...],
    fraction: float,
    stored_split: bool,
    seed: int,
    name: str | None,
    bins: int,
    histogram_bins: int,
    warehouse: str | None,
    replace: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Fit temperature scaling, Platt, isotonic or histogram binning on a calibration split.

    Each map is fitted per model (and label) on the clean (severity 0) predictions of the
    calibration split's samples, and applied to every row of the disjoint evaluation
    split. The result is a new study holding the evaluation rows as stated and
    recalibrated (model <model>+<method>), so `relcol report` shows them side by side
    with a before/after table.

    \b
    Examples:
      relcol recalibrate --study resnet110-c10 --method temperature --method isotonic
      relcol recalibrate --study email-llm --method all --fraction 0.3 --seed 1
      relcol report --study resnet110-c10-recal-temperature-isotonic
    """
    import relcol

    chosen = list(METHODS) if "all" in methods else list(methods or ("temperature",))
    result = relcol.recalibrate(
        warehouse,
        study=study,
        methods=chosen,
        fraction=fraction,
        stored_split=stored_split,
        seed=seed,
        name=name,
        bins=bins,
        histogram_bins=histogram_bins,
        replace=replace,
    )
    if as_json:
        say(result.table.write_json(), data=True)
        return
    if not quiet:
        say(result.summary)
        say(
            f"wrote {result.rows:,} rows of study {result.study!r} (the evaluation split of "
            f"{result.source!r}, as stated and recalibrated), run {result.run_id}, to "
            f"{result.warehouse} in {result.seconds:.1f} s"
        )
    say(f"report: relcol report --study {result.study}")
