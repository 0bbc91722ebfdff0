"""`relcol monitor`: per-period metrics and alerts of predictions collected over periods."""

from __future__ import annotations

import json
import sys

import click
from relcol.cli._common import (
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
@study_option("Study to monitor (default: the only study in the warehouse).")
@click.option(
    "--baseline",
    metavar="PERIOD",
    help="The baseline period every other period is compared with (default: the first).",
)
@click.option(
    "--ece-rise",
    type=float,
    default=0.02,
    show_default=True,
    help="Alert when ECE rises by more than this over the baseline (and the test rejects).",
)
@click.option(
    "--mce-rise",
    type=float,
    default=0.05,
    show_default=True,
    help="Alert when MCE exceeds the baseline's by more than this (and the test rejects).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Level of the tests (family-wise per stream with Holm's method) and 1 − the "
    "intervals' level.",
)
@click.option(
    "--correction",
    type=click.Choice(["holm", "none"]),
    default="holm",
    show_default=True,
    help="Adjust a stream's p-values together (holm) or test each check at --alpha (none).",
)
@click.option(
    "--permutations",
    type=click.IntRange(min=19),
    default=999,
    show_default=True,
    help="Permutations of each calibration test.",
)
@bootstrap_option("Bootstrap replicates of the per-period intervals (0: none).")
@bins_option("Equal-width bins of ECE and MCE.", click.IntRange(min=1, max=1000))
@seed_option("Seed of the permutation tests and the bootstrap.")
@warehouse_option
@quiet_option("Print only the alerts that fired.")
@json_option("Print the result as JSON on stdout.")
@user_errors
def monitor(
    study: str | None,
    baseline: str | None,
    ece_rise: float,
    mce_rise: float,
    alpha: float,
    correction: str,
    permutations: int,
    bootstrap: int,
    bins: int,
    seed: int,
    warehouse: str | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Compare every period of a study with a baseline period and raise alerts.

    The study's predictions must have been ingested with a period column
    (`relcol ingest --predictions FILE --period week`). Alerts: ece_rise (ECE rose by more
    than --ece-rise and a permutation test says it is no chance), mce_rise (MCE above the
    baseline's + --mce-rise, likewise tested) and drift (a Kolmogorov–Smirnov test of the
    confidence distribution).

    \b
    Exit status (for a scheduler):
      0  no alert fired
      4  at least one alert fired (listed on stdout; every check in --json)
      2  bad input (one line on stderr)

    \b
    Examples:
      relcol monitor --study email-weekly
      relcol monitor --study email-weekly --baseline 2026-W01 --ece-rise 0.03 --json
    """
    from relcol.analysis import ALERT_EXIT
    from relcol.analysis import MonitorRules as Rules
    from relcol.analysis import monitor as run_monitor

    rules = Rules(
        ece_rise=ece_rise,
        mce_rise=mce_rise,
        alpha=alpha,
        permutations=permutations,
        correction=correction,
        bins=bins,
        seed=seed,
    )
    result = run_monitor(
        warehouse, study=study, baseline=baseline, rules=rules, replicates=bootstrap
    )
    fired = result.fired
    if as_json:
        say(json.dumps(result.to_json(), default=str), data=True)
    else:
        if not quiet:
            say(periods_text(result.metrics))
        say(alerts_text(fired, result.alerts.height))
    if fired.height:
        sys.stdout.flush()
        sys.exit(ALERT_EXIT)


def _stream_name(row: dict, varying: list[str]) -> str:
    return " / ".join(str(row[k]) if k == "model" else f"{k} {row[k]}" for k in ("model", *varying))


def _varying(frame) -> list[str]:
    return [
        k
        for k in ("dataset", "corruption", "severity", "label")
        if frame.get_column(k).n_unique() > 1
    ]


def periods_text(metrics) -> str:
    """One line per stream × period: n, accuracy [interval], ECE, MCE, the top-label Brier."""
    varying = _varying(metrics)
    lines = []
    for row in metrics.iter_rows(named=True):
        accuracy = f"accuracy {row['accuracy']:.3f}"
        if row.get("accuracy_lo") is not None:
            accuracy += f" [{row['accuracy_lo']:.3f}, {row['accuracy_hi']:.3f}]"
        lines.append(
            f"{_stream_name(row, varying)}  {row['period']}  n {row['n']}  {accuracy}  "
            f"confidence {row['mean_confidence']:.3f}  ECE {row['ece']:.3f}  "
            f"MCE {row['mce']:.3f}  brier_top {row['brier_top']:.3f}"
        )
    return "\n".join(lines)


_WHAT = {
    "ece_rise": "ECE rose {change:+.3f} ({before:.3f} -> {after:.3f}) over {threshold}",
    "mce_rise": "MCE rose {change:+.3f} ({before:.3f} -> {after:.3f}) over {threshold}",
    "drift": "the confidence distribution moved (KS distance {after:.3f})",
}


def alerts_text(fired, checks: int) -> str:
    """One line per fired alert, or a line saying none fired."""
    if fired.is_empty():
        return f"no alert: {checks} checks, none fired"
    varying = _varying(fired)
    lines = []
    for row in fired.iter_rows(named=True):
        what = _WHAT[row["check"]].format(
            change=row["change"],
            before=row["baseline_value"] or 0.0,
            after=row["period_value"],
            threshold=row["threshold"],
        )
        lines.append(
            f"ALERT {row['check']}: {_stream_name(row, varying)}, period {row['period']} vs "
            f"{row['baseline']}: {what}; p = {row['p_value']:.4f} (adjusted {row['p_adjusted']:.4f})"
        )
    return "\n".join(lines)
