"""`relcol report`: metrics with intervals, the HTML report, the terminal summary."""

from __future__ import annotations

import click
from relcol.cli._common import (
    backend_option,
    bins_option,
    bootstrap_option,
    json_option,
    quiet_option,
    say,
    seed_option,
    study_option,
    user_errors,
    warehouse_option,
)


@click.command()
@study_option("Study to report (default: the only study in the warehouse).")
@click.option(
    "--out", type=click.Path(file_okay=False), help="Output folder (default: ./reports/<study>)."
)
@bins_option("Equal-width bins for ECE/MCE.")
@bootstrap_option(
    "Paired Poisson bootstrap replicates behind every interval (0: point estimates only)."
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Intervals are percentile intervals at level 1 - alpha.",
)
@click.option(
    "--tau",
    type=click.FloatRange(min=0),
    default=0.05,
    show_default=True,
    help="Overconfidence margin: clean overconfidence and d* need the gap significantly above tau.",
)
@click.option(
    "--margin",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.02,
    show_default=True,
    help="Break point margin: the gap's rise over clean must be significantly above it.",
)
@click.option(
    "--intervals",
    type=click.Choice(["samples", "training"]),
    default="samples",
    show_default=True,
    help="What intervals cover: test samples with the trained models fixed, or also the "
    "spread between training seeds.",
)
@seed_option("Offset of the bootstrap's generator (another seed, another resample).", 2**62 - 1)
@click.option(
    "--noise",
    metavar="CORRUPTION",
    help="Scorecard: the corruption (id) behind stability and resilience "
    "(default: the study's [scorecard] table, else gaussian_noise).",
)
@click.option(
    "--stability-at",
    type=click.FloatRange(min=0, min_open=True),
    metavar="D",
    help="Scorecard: severity of --noise for stability (default: the study's, else 0.05).",
)
@click.option(
    "--resilience-at",
    type=click.FloatRange(min=0, min_open=True),
    metavar="D",
    help="Scorecard: severity of --noise for resilience (default: the study's, else 0.1).",
)
@click.option(
    "--compare",
    metavar="MODELS",
    help="Reference models of the model-vs-model differences, separated by commas, or 'all' "
    "for every pair (default: the study's baseline, else the first model its spec lists).",
)
@backend_option("the per-cell tables (metrics, consistency)")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Workers of the local Dask cluster (--backend dask).  [default: one per core]",
)
@warehouse_option
@quiet_option("Print only the report's path.")
@json_option("Print the calibration table as JSON on stdout.")
@user_errors
def report(
    study: str | None,
    out: str | None,
    bins: int,
    bootstrap: int,
    alpha: float,
    tau: float,
    margin: float,
    intervals: str,
    seed: int,
    noise: str | None,
    stability_at: float | None,
    resilience_at: float | None,
    compare: str | None,
    backend: str | None,
    jobs: int | None,
    warehouse: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Compute every metric per cell with its interval, the trends and where trust breaks;
    materialise them in the warehouse, write the HTML report.

    \b
    Examples:
      relcol report                               # the only study, into ./reports/<study>
      relcol report --study email-llm --out reports/email --bins 10
      relcol report --bootstrap 2000 --alpha 0.1 --tau 0.03 --seed 1
      relcol report --compare lightgbm,mlp            # differences against two models
      relcol report --backend dask --jobs 2           # per-cell tables on 2 Dask workers
    """
    import contextlib
    import sys

    import relcol

    with contextlib.ExitStack() as stack:
        bar = None

        def advance(step: str, done: int, total: int) -> None:
            # Starts with the first step, after the study was found: a bad option or an
            # unknown study prints its one error line and nothing else.
            nonlocal bar
            if bar is None:
                bar = stack.enter_context(
                    click.progressbar(
                        length=total, label="report", file=sys.stderr, hidden=quiet or as_json
                    )
                )
            bar.label = f"report: {step}"
            bar.update(done - bar.pos)

        result = relcol.report(
            warehouse,
            study=study,
            out=out,
            bins=bins,
            bootstrap=bootstrap,
            alpha=alpha,
            tau=tau,
            margin=margin,
            seed=seed,
            intervals=intervals,
            noise=noise,
            stability_at=stability_at,
            resilience_at=resilience_at,
            compare=compare,
            backend=backend or "local",
            jobs=jobs,
            progress=advance,
        )
    if as_json:
        say(result.calibration.write_json(), data=True)
        return
    if not quiet:
        say(result.summary)
    say(f"report: {result.html}")
