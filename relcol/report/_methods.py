"""The methods section: enough to reproduce every number of the page.

The study design (read from the spec the run recorded), the conventions every metric
follows, the intervals and how many bootstrap replicates made them, the files beside the
page, package versions (with, for a study, the numeric environment its models ran on) and
the spec itself.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from html import escape
from typing import Any

import polars as pl

from relcol.report._exports import FOLDER
from relcol.report._layout import details, section
from relcol.report._tables import bin_convention, interval_columns

# Spec fields shown as the study design: (key, label).
_DESIGN = (
    ("seeds", "Training seeds"),
    ("repeats", "Corruption repeats"),
    ("split_seed", "Split seed"),
    ("test_size", "Test share"),
    ("severities", "Severities d"),
)


def methods_section(
    tables: Mapping[str, pl.DataFrame], *, meta: Mapping[str, Any], bins: int, **_: object
) -> str:
    """The methods section's HTML."""
    calibration = tables["calibration"]
    spec = _parse(meta.get("spec"))
    facts: list[tuple[str, str]] = [
        ("Run id", escape(str(meta.get("run_id") or "not recorded"))),
        ("Created", escape(str(meta.get("created") or "not recorded"))),
    ]
    if meta.get("rows") is not None:
        facts.append(("Predictions", f"{int(meta['rows']):,} rows"))
    for key, label in (("dataset", "Datasets"), ("model", "Models"), ("corruption", "Corruptions")):
        names = calibration.get_column(key).unique(maintain_order=True).to_list()
        facts.append((label, escape(", ".join(map(str, names)))))
    for key, label in _DESIGN:
        if key in spec:
            facts.append((label, escape(_show(spec[key]))))
    facts += [
        (
            "Calibration bins",
            f"{escape(bin_convention(bins))}: the first bin is [0, 1/M] and a confidence of "
            "exactly 1 falls in the last. Equal-mass bins (ACE): rows ordered by (confidence, "
            "sample_id, seed, repeat), the row of rank r of n in bin ⌊r·M/n⌋ (docs/metrics.md).",
        ),
        ("Gap", "Δ = mean confidence − accuracy; &gt; 0 means overconfident."),
        ("Cells", "A cell pools every seed and repeat of one dataset × model × corruption × d."),
    ]
    if meta.get("draws") is not None:
        facts.append(
            (
                "ECE₀",
                f"mean ECE of R = {int(meta['draws'])} calibrated draws per cell, one outcome per "
                "distinct prediction (sample, seed, predicted class, confidence); "
                "p = (b + 1)/(R + 1), b the draws with an ECE at least the observed.",
            )
        )
    facts.append(("Intervals", _intervals(tables, meta)))
    selective = tables.get("selective")
    if selective is not None and not selective.is_empty():
        coverage = selective.get_column("target_coverage").drop_nulls()
        risk = selective.get_column("target_risk").drop_nulls()
        if len(coverage) and len(risk):
            facts.append(
                (
                    "Selective targets",
                    f"risk at {coverage[0]:.0%} coverage; coverage at {risk[0]:.0%} risk.",
                )
            )
    facts.append(("Files", _files(tables)))
    rows = "\n".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    body = f"<dl>\n{rows}\n</dl>\n"

    versions = meta.get("versions") or {}
    version_rows = "\n".join(
        f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in versions.items()
    )
    # a study's record also names the BLAS kernels, C library and architecture its models
    # ran on: what decides their last bits between machines with the same packages
    heading = "Package versions" + (" and numeric environment" if "blas" in versions else "")
    body += f"<h3>{heading}</h3>\n" + (
        f'<table class="versions">\n{version_rows}\n</table>\n'
        if version_rows
        else "<p>not recorded</p>\n"
    )
    text = meta.get("spec")
    body += "<h3>Study spec</h3>\n" + (
        details(
            "the spec as recorded with the run",
            f'<pre class="spec">{escape(text)}</pre>',
            open=True,
        )
        if text
        else "<p>not recorded</p>"
    )
    return section("methods", "Methods", body)


def _intervals(tables: Mapping[str, pl.DataFrame], meta: Mapping[str, Any]) -> str:
    with_intervals = sorted(
        name for name, t in tables.items() if interval_columns(t) and name != "reliability"
    )
    if meta.get("bootstrap") is not None:
        level = float(meta.get("level", 0.95))
        text = (
            f"Paired Poisson bootstrap over test samples: B = {int(meta['bootstrap']):,} "
            f"replicates, the same resample in every cell, {level:.0%} percentile intervals "
            "(docs/statistics.md)."
        )
    elif with_intervals:
        text = "As computed by the statistical layer (docs/statistics.md)."
    else:
        text = "None computed for this report: values are point estimates."
    if with_intervals:
        text += f" Tables with intervals: {escape(', '.join(with_intervals))}."
    reliability = tables.get("reliability")
    if reliability is not None and "interval" in reliability.columns:
        if set(reliability.get_column("interval").unique()) - {"bootstrap"}:
            text += (
                " Reliability diagrams: 95 % Wilson intervals per bin with each test sample "
                "counted once (effective n = the bin's distinct samples, or without the "
                "statistical layer its rows × samples / rows of the cell)."
            )
    return text


def _files(tables: Mapping[str, pl.DataFrame]) -> str:
    links = ", ".join(
        f'<a href="{escape(name)}.csv">{escape(name)}</a> '
        f'(<a href="{escape(name)}.parquet">Parquet</a>)'
        for name in tables
    )
    return (
        f"Every table as CSV and Parquet beside this page: {links}. Every table shown, as HTML, "
        f"LaTeX, CSV and Parquet, in <code>{FOLDER}/</code> (linked under each table)."
    )


def _parse(spec: object) -> dict[str, Any]:
    """The spec's fields, from TOML (a study) or JSON (predictions made elsewhere)."""
    if not isinstance(spec, str) or not spec.strip():
        return {}
    for parse in (tomllib.loads, json.loads):
        try:
            value = parse(spec)
        except ValueError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def _show(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)
