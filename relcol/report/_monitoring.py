"""The report's monitoring section: per-period metrics and the alerts against the baseline.

Shown when the report's tables include ``monitoring`` (a study ingested with a period
column; ``relcol.analysis._monitoring``). Formatting only: every number is a column of the
``monitoring`` and ``monitoring_alerts`` tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

import polars as pl
from great_tables import GT

from relcol.analysis import ALERT_COLUMNS, STREAM
from relcol.metrics import labels
from relcol.report._drawing import drawn_svg
from relcol.report._layout import figure, section
from relcol.report._tables import TOP_SCORE_LABELS, grouped_table, table_html

#: Metrics of the per-period table, with their headings.
_METRICS = labels(("accuracy", "mean_confidence", "ece", "mce", "brier_top", "auroc")) | {
    "mean_confidence": "mean confidence",
    "brier_top": TOP_SCORE_LABELS["brier_top"],
}
#: The columns of a check shown (the stream is the row group).
_SHOWN_CHECK_COLUMNS = [c for c in ALERT_COLUMNS if c not in (*STREAM, "baseline", "period_index")]
_CHECKS = {
    "ece_rise": "ECE rise",
    "mce_rise": "MCE rise",
    "drift": "confidence drift (KS)",
}


def monitoring_section(
    tables: Mapping[str, pl.DataFrame], *, bins: int, meta: Mapping | None = None
) -> str | None:
    """The section's HTML, or None when the study has no periods."""
    metrics = tables.get("monitoring")
    if metrics is None or metrics.is_empty():
        return None
    checks = tables.get("monitoring_alerts")
    level = float((meta or {}).get("level") or 0.95)
    fired = 0 if checks is None else int(checks.get_column("alert").sum())
    rules = _rules_text(checks)
    lead = (
        "Predictions collected over periods, each period against the baseline (the first). "
        f"Intervals: {level:.0%} paired bootstrap over test samples, for the metrics whose "
        "coverage the project verifies; ECE and MCE are shown without one. "
        f"{rules} "
        + (f"<strong>{fired} alert{'s' if fired != 1 else ''} fired.</strong>" if fired else
           "No alert fired.")
    )  # fmt: skip
    parts = []
    for index, part in enumerate(metrics.partition_by(list(STREAM), maintain_order=True), start=1):
        name = _stream_name(part.row(0, named=True), metrics)
        svg = drawn_svg(
            _figure,
            part,
            name,
            checks,
            id_prefix=f"mon{index}",
            label=f"Calibration per period for {name}",
        )
        parts.append(
            figure(
                svg,
                f"{escape(name)}: accuracy, mean confidence, ECE and MCE per period "
                f"({bins} equal-width bins); red markers: periods where an alert fired.",
            )
        )
    parts.append(table_html(_metrics_gt(metrics, bins)))
    if checks is not None and not checks.is_empty():
        parts.append(table_html(_checks_gt(checks)))
    return section("monitoring", "Monitoring over periods", "\n".join(parts), lead=lead)


def _rules_text(checks: pl.DataFrame | None) -> str:
    if checks is None or checks.is_empty():
        return ""
    threshold = dict(checks.group_by("check").agg(pl.col("threshold").first()).iter_rows())
    return (
        f"Alerts: ECE rises by more than {threshold.get('ece_rise', 0):.3g}, or MCE by more "
        f"than {threshold.get('mce_rise', 0):.3g}, and a stratified permutation test rejects "
        "an unchanged calibration; or a Kolmogorov–Smirnov test finds the confidence "
        "distribution moved. The p-values of a stream (every period × check) are "
        "Holm-adjusted together, so a stable stream raises any alert with probability at "
        "most α. <code>relcol monitor</code> sets other thresholds and another baseline."
    )


def _varying(frame: pl.DataFrame) -> list[str]:
    return [
        k
        for k in ("dataset", "corruption", "severity", "label")
        if frame.get_column(k).n_unique() > 1
    ]


def _stream_name(row: Mapping, frame: pl.DataFrame) -> str:
    return " / ".join([str(row["model"])] + [f"{k} {row[k]}" for k in _varying(frame)])


def _figure(part: pl.DataFrame, name: str, checks: pl.DataFrame | None):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, 2.8))
    left, right = fig.subplots(1, 2)
    x = list(range(part.height))
    labels = part.get_column("period").to_list()
    for ax, columns in ((left, ("accuracy", "mean_confidence")), (right, ("ece", "mce"))):
        for column in columns:
            y = part.get_column(column).to_numpy()
            ax.plot(x, y, marker="o", ms=3, label=_METRICS[column])
            if f"{column}_lo" in part.columns:
                lo = part.get_column(f"{column}_lo").to_numpy()
                hi = part.get_column(f"{column}_hi").to_numpy()
                ax.fill_between(x, lo, hi, alpha=0.2)
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=7)
        ax.legend(fontsize=7, frameon=False)
    if checks is not None and not checks.is_empty():
        mine = checks.join(
            part.select(STREAM).unique(),
            on=list(STREAM),
            how="semi",
            nulls_equal=True,
        ).filter(pl.col("alert"))
        indices = {labels.index(p) for p in mine.get_column("period").to_list() if p in labels}
        ece = part.get_column("ece").to_list()
        for i in sorted(indices):
            right.plot([i], [ece[i]], marker="o", ms=8, mfc="none", mec="#D73027", mew=1.5)
    left.set_title("accuracy and confidence", fontsize=8)
    right.set_title("calibration error", fontsize=8)
    fig.suptitle(name, fontsize=9)
    fig.tight_layout()
    return fig


def _metrics_gt(metrics: pl.DataFrame, bins: int) -> GT:
    varying = _varying(metrics)
    shown = metrics.with_columns(
        stream=pl.concat_str(
            [pl.col("model"), *(pl.format(f"{k} {{}}", pl.col(k)) for k in varying)],
            separator=" / ",
        )
    )
    columns = []
    for m in _METRICS:
        if m not in shown.columns:
            continue
        if f"{m}_lo" in shown.columns:
            shown = shown.with_columns(
                pl.Series(
                    m, [_with_interval(*v) for v in shown.select(m, f"{m}_lo", f"{m}_hi").rows()]
                )
            )
        columns.append(m)
    gt = grouped_table(
        shown,
        group="stream",
        row="period",
        columns=["n", *columns],
        table_id="relcol-monitoring",
        title="Metrics per period",
        subtitle=f"ECE and MCE on {bins} equal-width bins; [interval] where verified",
        stubhead="period",
    ).cols_label(**{m: _METRICS[m] for m in columns})
    floats = [m for m in columns if shown.get_column(m).dtype.is_float()]
    return gt.fmt_number(floats, decimals=3) if floats else gt


def _with_interval(value: float | None, lo: float | None, hi: float | None) -> str | None:
    if value is None:
        return None
    return f"{value:.3f}" if lo is None or hi is None else f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _checks_gt(checks: pl.DataFrame) -> GT:
    varying = _varying(checks)
    shown = checks.with_columns(
        stream=pl.concat_str(
            [pl.col("model"), *(pl.format(f"{k} {{}}", pl.col(k)) for k in varying)],
            separator=" / ",
        ),
        check=pl.col("check").replace_strict(_CHECKS, default=pl.col("check")),
        alert=pl.when(pl.col("alert")).then(pl.lit("ALERT")).otherwise(pl.lit("")),
    )
    gt = (
        GT(
            shown.select("stream", *_SHOWN_CHECK_COLUMNS),
            groupname_col="stream",
            id="relcol-monitoring-alerts",
        )
        .tab_header(
            title="Checks against the baseline",
            subtitle="drift: the KS distance between the confidence distributions",
        )
        .fmt_number(["baseline_value", "period_value", "threshold"], decimals=3)
        .fmt_number("change", decimals=3, force_sign=True)
        .fmt_number(["p_value", "p_adjusted"], decimals=4)
        .sub_missing(missing_text="–")
        .cols_label(
            baseline_value="baseline",
            period_value="period value",
            p_value="p",
            p_adjusted="p adjusted",
        )
    )
    return gt
