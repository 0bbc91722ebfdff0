"""`relcol simulate`: simulated studies with known behaviour, written like a study."""

from __future__ import annotations

import click
from relcol.cli._common import (
    json_option,
    quiet_option,
    replace_option,
    say,
    say_written,
    seed_option,
    user_errors,
    warehouse_option,
)


@click.group()
def simulate() -> None:
    """Write a simulated study into the warehouse (no models: runs with known behaviour)."""


@simulate.command("consistency")
@click.option("--name", default="consistency-sim", show_default=True, help="Study name.")
@click.option(
    "--samples", type=click.IntRange(min=1), default=1000, show_default=True,
    help="Test samples per dataset.",
)  # fmt: skip
@click.option(
    "--replicates", type=click.IntRange(min=2), default=10, show_default=True,
    help="Runs per condition (the seed column).",
)  # fmt: skip
@click.option(
    "--classes", type=click.IntRange(min=2), default=10, show_default=True, help="Classes K."
)
@click.option(
    "--perturbation", type=click.FloatRange(0, 1), default=0.1, show_default=True,
    help="Share of a dependent run's error set that differs from the base prediction.",
)  # fmt: skip
@seed_option("Seed.")
@warehouse_option
@replace_option
@quiet_option("No summary line.")
@json_option("Print what was written as JSON on stdout.")
@user_errors
def consistency(
    name: str,
    samples: int,
    replicates: int,
    classes: int,
    perturbation: float,
    seed: int,
    warehouse: str | None,
    replace: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Replicate runs with independent or dependent, fixed or variable errors.

    \b
    Datasets: class distributions balanced, uniform, multimodal, exponential.
    Models:   sim:independent-fixed, sim:independent-variable, sim:dependent-fixed,
              sim:dependent-variable.
    Severity: the maximum error proportion r (corruption max_error_rate), 0 to 0.5.
    Then `relcol report --study NAME` shows how each consistency metric responds: at one
    accuracy, churn separates dependent from independent runs, EC_l and kappa_e a fixed
    error set from a variable one.

    \b
    Examples:
      relcol simulate consistency
      relcol simulate consistency --name sim-25 --replicates 25 --samples 2000 --seed 1
    """
    import relcol

    result = relcol.simulate_consistency(
        warehouse,
        replace=replace,
        name=name,
        samples=samples,
        replicates=replicates,
        classes=classes,
        perturbation=perturbation,
        seed=seed,
    )
    say_written(result, "simulated ", as_json=as_json, quiet=quiet)
    if not (as_json or quiet):
        say(f"report: relcol report --study {result.study}")
