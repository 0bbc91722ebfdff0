"""A fixed-width text summary of the report for the terminal.

Plain text (no colour codes; a control character in a name is shown as a visible
symbol, see ``relcol.text``), one line per dataset × model × corruption; column
widths follow the longest name, so the output lines up in any monospace font. With the
statistical layer's ``thresholds`` table, each line starts with where trust breaks: whether
the model is already overconfident when clean, the break point, d* and the traffic light.
"""

from __future__ import annotations

import textwrap

import polars as pl

from relcol.analysis import group_keys, sort_by_appearance, summary_tables
from relcol.metrics import labels
from relcol.text import printable_line

_MISSING = "-"

_ECE = labels(("ece",))["ece"]
# (column of degradation_summary, header, format, header group)
_NUMBERS = (
    ("clean_accuracy", "acc", "{:.3f}", "clean"),
    ("clean_ece", _ECE, "{:.3f}", "clean"),
    ("worst_severity", "d", "{:.2f}", "worst severity"),
    ("accuracy", "acc", "{:.3f}", "worst severity"),
    ("mean_confidence", "conf", "{:.3f}", "worst severity"),
    ("gap", "gap", "{:+.3f}", "worst severity"),
    ("ece", _ECE, "{:.3f}", "worst severity"),
)


# (column of thresholds, header, format) of the "where trust breaks" group
_TRUST = (
    ("clean_overconfident", "clean", "{}"),
    ("break_point", "break", "{:.2f}"),
    ("d_star", "d*", "{:.2f}"),
    ("traffic_light", "light", "{}"),
)
#: Said of the curves that have no severity 0, where "-" does not mean "never".
WITHOUT_CLEAN = (
    "No severity 0, so nothing is compared with the clean model and the clean columns, the "
    "break and d* are empty, for"
)
#: How ``clean_overconfident`` reads in the terminal.
_CLEAN = {True: "over", False: "ok"}
#: The summary shows at most this many curves: those with the largest gap at their worst
#: severity, in the study's order (a study of 400 models printed 2 000 lines).
TERMINAL_CURVES = 60


def terminal_summary(
    calibration: pl.DataFrame,
    thresholds: pl.DataFrame | None = None,
    *,
    summary: pl.DataFrame | None = None,
) -> str:
    """Clean versus worst-severity numbers per dataset × model × corruption, as text.

    Parameters
    ----------
    calibration
        A calibration table (see :func:`relcol.analysis.degradation_summary`).
    thresholds
        The statistical layer's ``thresholds`` table (one row per curve), if any: adds
        ``d*``, the traffic ``light`` and the ``break`` point in front of the numbers
        (``-``: never reached within the severities studied), and a legend line.
    summary
        ``degradation_summary(calibration)`` when the caller has it (``report_tables``
        computes it as the ``degradation`` table); else it is computed here.

    Returns
    -------
    str
        A header of two lines, a rule, then one line per curve (of more than
        ``TERMINAL_CURVES``, those with the largest gap at the worst severity, and a line
        that says so), ending in a newline.
        Columns: dataset, model, corruption (plus study and label when they vary),
        clean accuracy and ECE, then severity d, accuracy, mean confidence, gap and
        ECE at the worst severity.

    Examples
    --------
    >>> import polars as pl
    >>> cal = pl.DataFrame({
    ...     "study": "s", "dataset": "digits", "model": "knn", "corruption": "mcar",
    ...     "severity": [0.0, 0.5], "accuracy": [0.75, 0.5],
    ...     "mean_confidence": [0.75, 0.875], "gap": [0.0, 0.375], "ece": [0.125, 0.375],
    ... })
    >>> print(terminal_summary(cal), end="")
                                -- clean ---  -------- worst severity ---------
    dataset  model  corruption    acc    ECE     d    acc   conf     gap    ECE
    ---------------------------------------------------------------------------
    digits   knn    mcar        0.750  0.125  0.50  0.500  0.875  +0.375  0.375
    """
    if summary is None:
        summary = summary_tables({"calibration": calibration})["degradation"]
    names = ["dataset", "model", "corruption"]
    if summary.get_column("study").n_unique() > 1:
        names.insert(0, "study")
    if "label" in summary.columns and summary.get_column("label").null_count() < summary.height:
        names.append("label")
    # Curves in the order the study lists them, not alphabetically.
    keys = group_keys(calibration)
    label = ["label"] if "label" in keys else []
    order = (
        sort_by_appearance(calibration.select(keys), [k for k in keys if k != "label"], *label)
        .unique(maintain_order=True)
        .with_row_index("__order")
    )
    summary = summary.join(order, on=keys, how="left", nulls_equal=True).sort("__order")
    curves = summary.height
    if curves > TERMINAL_CURVES:
        summary = (
            summary.sort("gap", descending=True, nulls_last=True, maintain_order=True)
            .head(TERMINAL_CURVES)
            .sort("__order")
        )

    columns = [
        (
            "",
            n,
            "<",
            [_MISSING if v is None else printable_line(str(v)) for v in summary.get_column(n)],
        )
        for n in names
    ]
    trust = thresholds is not None and not thresholds.is_empty()
    if trust:
        on = [k for k in keys if k in thresholds.columns]
        wanted = [c for c, _, _ in _TRUST if c in thresholds.columns]
        found = summary.select(keys).join(
            thresholds.select(*on, *wanted),
            on=on,
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        columns += [
            (
                "trust breaks",
                header,
                ">",
                [
                    _MISSING
                    if v is None
                    else fmt.format(_CLEAN.get(v, v) if c.startswith("clean") else v)
                    for v in found.get_column(c)
                ],
            )
            for c, header, fmt in _TRUST
            if c in wanted
        ]
    columns += [
        (group, header, ">", [_MISSING if v is None else fmt.format(v) for v in summary[c]])
        for c, header, fmt, group in _NUMBERS
    ]
    widths = [max(len(header), *(len(v) for v in values)) for _, header, _, values in columns]

    # The group line: each group's name centred over its columns.
    spans: dict[str, list[int]] = {}
    at = 0
    for (group, *_), width in zip(columns, widths, strict=True):
        if group:
            spans.setdefault(group, [at, at + width])[1] = at + width
        at += width + 2
    group_line = ""
    for group, (start, end) in spans.items():
        group_line = group_line.ljust(start) + f"{' ' + group + ' ':-^{end - start}}"

    lines = [
        group_line,
        _row([h for _, h, _, _ in columns], widths, [a for _, _, a, _ in columns]),
    ]
    lines.append("-" * len(lines[1]))
    for i in range(summary.height):
        lines.append(_row([v[i] for *_, v in columns], widths, [a for _, _, a, _ in columns]))
    if curves > summary.height:
        shown = (
            f"{summary.height} of the {curves:,} curves shown: those with the largest gap at "
            "their worst severity. Every curve is in the report's degradation table "
            "(degradation.csv)."
        )
        lines += ["", *textwrap.wrap(shown, width=90)]
    if trust:
        tau = thresholds.get_column("tau")[0] if "tau" in thresholds.columns else None
        margin = thresholds.get_column("margin")[0] if "margin" in thresholds.columns else None
        over = f"τ = {tau:g}" if tau is not None else "τ"
        rise = f"{margin:g}" if margin is not None else "the margin"
        legend = (
            f"clean: 'over' when the clean gap is significantly above {over}; break: the "
            f"smallest severity from which the gap has risen significantly by more than {rise} "
            f"over clean (tested from the most severe down); d*: the same, where the gap is "
            f"also significantly above {over}; light: the worst traffic light over the "
            "severities; -: never within the severities studied."
        )
        unmeasured = summary.filter(pl.col("clean_accuracy").is_null())
        if unmeasured.height:
            legend += (
                f" {WITHOUT_CLEAN}: "
                + ", ".join(
                    f"{printable_line(str(c))} of {printable_line(str(m))}"
                    for c, m in unmeasured.select("corruption", "model").iter_rows()
                )
                + "."
            )
        lines += ["", *textwrap.wrap(legend, width=90)]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _row(cells: list[str], widths: list[int], aligns: list[str]) -> str:
    return "  ".join(f"{c:{a}{w}}" for c, w, a in zip(cells, widths, aligns, strict=True))
