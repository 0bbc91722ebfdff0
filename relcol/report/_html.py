"""The self-contained HTML report and the files written beside it.

The page needs no network (inline CSS, inline SVG, no scripts) and is
deterministic: the same inputs give the same bytes, and the only times it shows
are those in the run metadata.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any, TypedDict

import polars as pl

from relcol.analysis import realised_rates, worst_gaps
from relcol.analysis._frames import CELL_KEYS, require_columns
from relcol.errors import InputError
from relcol.report._figures import degradation_figure, figure_svg, model_styles
from relcol.report._tables import (
    bin_convention,
    calibration_table,
    realised_rates_table,
    table_html,
)

_CALIBRATION_COLUMNS = (*CELL_KEYS, "n", "accuracy", "mean_confidence", "gap", "ece")


class ReportMeta(TypedDict, total=False):
    """Run metadata shown in the report; only ``bins`` is required."""

    study: str
    """Study name; defaults to the ``study`` values of the calibration table."""
    spec: str
    """The study spec (TOML text), shown verbatim."""
    run_id: str
    versions: Mapping[str, str]
    """Package name → version."""
    bins: int
    """Number of equal-width calibration bins M."""
    created: str
    """When the run was made, as the caller wants it shown."""


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    tables: Mapping[str, pl.DataFrame],
    meta: Mapping[str, Any],
) -> Path:
    """Write the HTML report and every table into ``out_dir``.

    Writes ``index.html`` and, for each entry of ``tables``, ``<name>.csv`` and
    ``<name>.parquet`` (the same rows and columns), creating ``out_dir`` if
    needed. Each file is written beside its final name and then renamed over it,
    so a reader never sees half a file.

    Parameters
    ----------
    out_dir
        The report folder.
    tables
        The frames to show, by name. ``calibration`` (one row per cell, METRICS.md
        §11 names: at least the cell keys, ``n``, ``accuracy``, ``mean_confidence``,
        ``gap`` and ``ece``) is required; every other section appears when its
        table is present (``corruptions``: realised corruption rates).
    meta
        Run metadata (:class:`ReportMeta`): ``bins`` (required), ``study``,
        ``spec``, ``run_id``, ``versions``, ``created``.

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.
    """
    page = render_html(tables, meta=meta)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        _replace(out / f"{name}.csv", frame.write_csv)
        _replace(out / f"{name}.parquet", frame.write_parquet)
    index = out / "index.html"
    _replace(index, lambda path: path.write_text(page, encoding="utf-8"))
    return index


def _replace(path: Path, write) -> None:
    partial = path.with_name(f".{path.name}.partial")
    try:
        write(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def render_html(tables: Mapping[str, pl.DataFrame], *, meta: Mapping[str, Any]) -> str:
    """The report page as a string; :func:`write_report` without the files."""
    if "calibration" not in tables:
        raise InputError(f"tables: a 'calibration' table is required. Got {sorted(tables)}.")
    calibration, corruptions = tables["calibration"], tables.get("corruptions")
    require_columns(calibration, _CALIBRATION_COLUMNS, "calibration")
    if calibration.is_empty():
        raise InputError("calibration: the table has no rows; there is nothing to report.")
    if corruptions is not None:
        require_columns(
            corruptions, ("dataset", "corruption", "severity", "realised_rate"), "corruptions"
        )
    bins = meta.get("bins")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise InputError(f"meta['bins'] must be an int in [1, inf). Got {bins!r}.")
    versions = meta.get("versions")
    if versions is not None and not isinstance(versions, Mapping):
        raise InputError(
            f"meta['versions'] must be a mapping of package name to version. "
            f"Got {type(versions).__name__}."
        )
    study = meta.get("study") or ", ".join(
        calibration.get_column("study").unique(maintain_order=True)
    )

    sections = [
        _summary(calibration, study, meta),
        _figures(calibration),
        _section(
            "calibration",
            "Calibration by cell",
            table_html(calibration_table(calibration, study=study, bins=bins)),
        ),
    ]
    if corruptions is not None and not corruptions.is_empty():
        sections.append(
            _section(
                "corruptions",
                "Realised corruption rates",
                table_html(realised_rates_table(realised_rates(corruptions))),
            )
        )
    sections.append(_methods(meta, bins))
    return _PAGE.format(
        title=escape(f"relcol report: {study}"),
        css=_CSS,
        body="\n".join(sections),
    )


def _section(anchor: str, heading: str, body: str) -> str:
    return f'<section id="{anchor}">\n<h2>{escape(heading)}</h2>\n{body}\n</section>'


def _summary(calibration: pl.DataFrame, study: str, meta: Mapping[str, Any]) -> str:
    counts = {k: calibration.get_column(k).n_unique() for k in ("dataset", "model", "corruption")}
    severity = calibration.get_column("severity")
    scope = (
        f"{_plural(calibration.height, 'cell')}: {_plural(counts['dataset'], 'dataset')}, "
        f"{_plural(counts['model'], 'model')}, {_plural(counts['corruption'], 'corruption')}, "
        f"severity d from {severity.min():g} to {severity.max():g}."
    )
    run = [f"run <code>{escape(str(meta['run_id']))}</code>"] if meta.get("run_id") else []
    run += [f"created {escape(str(meta['created']))}"] if meta.get("created") else []
    several = {k: calibration.get_column(k).n_unique() > 1 for k in ("study", "dataset")}
    items = "\n".join(
        f"<li>{escape(_worst_sentence(row, **several))}</li>"
        for row in worst_gaps(calibration).iter_rows(named=True)
    )
    return (
        f"<header>\n<h1>{escape(f'relcol report: {study}')}</h1>\n"
        + (f'<p class="run">{" · ".join(run)}</p>\n' if run else "")
        + "</header>\n"
        + _section(
            "summary",
            "Summary",
            f"<p>{escape(scope)} Where confidence outruns accuracy the most, per model "
            "(largest gap Δ = mean confidence − accuracy at any severity):</p>\n"
            f"<ul>\n{items}\n</ul>",
        )
    )


def _worst_sentence(row: Mapping[str, Any], *, study: bool, dataset: bool) -> str:
    """One model's most overconfident cell in words; ``study``/``dataset``: name them."""
    where = f"{row['model']} under {row['corruption']}"
    if dataset:
        where += f" on {row['dataset']}"
    if study:
        where += f" in {row['study']}"
    if row.get("label") is not None:
        where += f" (label {row['label']})"
    gap = row["gap"]
    if gap is None:
        return f"{where}: no gap could be computed."
    link = "but" if gap > 0 else "and"
    sentence = (
        f"{where}: at d = {row['severity']:g} accuracy {_num(row['accuracy'])} {link} "
        f"mean confidence {_num(row['mean_confidence'])} (gap {gap:+.2f})"
    )
    return sentence + ("; never overconfident." if gap <= 0 else ".")


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _figures(calibration: pl.DataFrame) -> str:
    # One style per model for the whole report, so a model keeps its colour.
    styles = model_styles(calibration.get_column("model").unique(maintain_order=True).to_list())
    several_studies = calibration.get_column("study").n_unique() > 1
    figures = []
    keys = ["study", "dataset"]
    for i, part in enumerate(calibration.partition_by(keys, maintain_order=True), start=1):
        study, dataset = part.row(0, named=True)["study"], part.row(0, named=True)["dataset"]
        name = f"{study} / {dataset}" if several_studies else dataset
        fig = degradation_figure(part, title=name, styles=styles)
        svg = figure_svg(fig, id_prefix=f"fig{i}", label=f"Degradation curves for {name}")
        figures.append(
            f"<figure>\n{svg}\n<figcaption>{escape(name)}: accuracy, mean confidence and "
            "ECE against corruption severity d, one column per corruption, a line per "
            "model.</figcaption>\n</figure>"
        )
    return _section("degradation", "Degradation curves", "\n".join(figures))


def _methods(meta: Mapping[str, Any], bins: int) -> str:
    facts = [
        ("Run id", str(meta.get("run_id") or "not recorded")),
        ("Created", str(meta.get("created") or "not recorded")),
        (
            "Calibration bins",
            f"{bin_convention(bins)}; the first bin is [0, 1/M] and a confidence of "
            "exactly 1 falls in the last (METRICS.md §2).",
        ),
        ("Gap", "Δ = mean confidence − accuracy; > 0 means overconfident."),
        ("Files", "calibration.csv and calibration.parquet beside this page hold the table."),
    ]
    rows = "\n".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    versions = meta.get("versions") or {}
    version_rows = "\n".join(
        f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in versions.items()
    )
    body = f"<dl>\n{rows}\n</dl>\n<h3>Package versions</h3>\n"
    body += (
        f'<table class="versions">\n{version_rows}\n</table>\n'
        if version_rows
        else "<p>not recorded</p>\n"
    )
    spec = meta.get("spec")
    body += "<h3>Study spec</h3>\n" + (
        f'<pre class="spec">{escape(spec)}</pre>' if spec else "<p>not recorded</p>"
    )
    return _section("methods", "Methods", body)


_CSS = re.sub(
    r"\s*\n\s*",
    "\n",
    """
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; color: #222; margin: 0; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { font-size: 1rem; margin-top: 1.2rem; }
.run { color: #666; margin-top: 0; }
figure { margin: 1rem 0 2rem; }
figure svg { width: 100%; height: auto; }
figcaption { color: #555; font-size: 0.9rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; }
table.versions td { padding: 0.1rem 1rem 0.1rem 0; }
pre.spec { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
""",
).strip()

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}
</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""
