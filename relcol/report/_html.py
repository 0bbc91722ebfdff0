"""The self-contained HTML report and the files written beside it.

The page needs no network (inline CSS, inline SVG, no scripts) and is deterministic: the
same inputs give the same bytes, and the only times it shows are those in the run metadata.
It opens with a summary and a navigation list, then answers docs/report.md in order: where
trust breaks, degradation curves, reliability diagrams, discrimination and selective
prediction, consistency and the scorecard, per-label calibration and recalibration, methods.
A section appears when its table exists. Long tables and per-dataset parts are collapsible
``<details>`` blocks, which need no script.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from html import escape
from pathlib import Path
from typing import Any, TypedDict

import polars as pl

from relcol.analysis import CELL_KEYS, name_labels_in, require_columns, summary_tables
from relcol.checks import check_bins
from relcol.errors import InputError
from relcol.report._classes import by_class_section
from relcol.report._consistency_section import consistency_section
from relcol.report._drawing import drawing, page_workers
from relcol.report._exports import Exports, collecting, flat
from relcol.report._figures import model_styles
from relcol.report._layout import anchors
from relcol.report._methods import methods_section
from relcol.report._metric_sections import discrimination_section, selective_section
from relcol.report._monitoring import monitoring_section
from relcol.report._multilabel import multilabel_section
from relcol.report._recalibration import recalibration_section
from relcol.report._sections import (
    calibration_section,
    corruptions_section,
    degradation_section,
    figure_models,
    reliability_section,
)
from relcol.report._sources import sources_section
from relcol.report._summary import header, summary_section
from relcol.text import printable

_CALIBRATION_COLUMNS = (*CELL_KEYS, "n", "accuracy", "mean_confidence", "gap", "ece")


class ReportMeta(TypedDict, total=False):
    """Run metadata shown in the report; only ``bins`` is required."""

    study: str
    """Study name; defaults to the ``study`` values of the calibration table."""
    spec: str
    """The study spec (TOML text, or JSON for predictions made elsewhere), shown verbatim."""
    run_id: str
    versions: Mapping[str, str]
    """Package name → version."""
    bins: int
    """Number of equal-width calibration bins M."""
    created: str
    """When the run was made, as the caller wants it shown."""
    rows: int
    """Predictions in the study."""
    draws: int
    """Monte Carlo draws R behind ``ece_null``."""
    bootstrap: int
    """Bootstrap replicates B behind the ``_lo``/``_hi`` intervals."""
    level: float
    """Coverage of those intervals (default 0.95)."""


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    tables: Mapping[str, pl.DataFrame],
    meta: Mapping[str, Any],
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Write the HTML report and every table into ``out_dir``.

    Writes ``index.html``; for each entry of ``tables``, ``<name>.csv`` and
    ``<name>.parquet`` (the same rows and columns); and for each table the page shows,
    ``tables/<id>.html``, ``.csv``, ``.parquet`` and, where great-tables can write it,
    ``.tex``. Creates ``out_dir`` if needed. Each file is written beside its final name
    and then renamed over it, so a reader never sees half a file; tables the page cannot be
    made of, or a page that fails, change no file.

    Parameters
    ----------
    out_dir
        The report folder.
    tables
        The frames to show, by name. ``calibration`` (one row per cell, with the
        names of docs/warehouse.md: at least the cell keys, ``n``, ``accuracy``, ``mean_confidence``,
        ``gap`` and ``ece``) is required; every other section appears when its
        table is present (``reliability``, ``confidence_histogram``,
        ``risk_coverage``, ``discrimination``, ``selective``, ``consistency``,
        ``scorecard``, ``multilabel``, ``recalibration``, ``corruptions``,
        ``thresholds``, ``trends`` …).
    meta
        Run metadata (:class:`ReportMeta`): ``bins`` (required), ``study``,
        ``spec``, ``run_id``, ``versions``, ``created``, ``rows``, ``draws``,
        ``bootstrap``, ``level``.
    progress
        Called with a step's name as each section is written (:data:`SECTIONS`), then
        with ``"figures"`` once its figures are drawn, and with ``"files"`` once everything
        is written.

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.
    """
    bins = _checked_bins(tables, meta)  # before anything is written
    out = Path(out_dir)
    made = not out.is_dir()
    out.mkdir(parents=True, exist_ok=True)
    # The tables' own files need nothing from the page, so they are written while it is made
    # (Polars writes them without the GIL), beside their names until the page is done: a page
    # that fails changes no file.
    with ThreadPoolExecutor(1, thread_name_prefix="relcol-files") as beside:
        staged = beside.submit(_staged_tables, out, tables)
        try:
            page, exports = _render(tables, meta, bins, progress)
        except BaseException:
            beside.shutdown()
            if staged.exception() is None:
                _discard(staged.result())
            if made:
                _remove_if_empty(out)
            raise
    written = staged.result()
    try:
        for partial, path in written:
            partial.replace(path)
    finally:
        _discard(written)  # those not renamed (a Ctrl-C meanwhile)
    page = printable(page)  # a NUL or escape in a name must not reach the page
    exports.write(out, _replace)
    index = out / "index.html"
    _replace(index, lambda path: path.write_text(page, encoding="utf-8"))
    if progress is not None:
        progress("files")
    return index


def _staged_tables(out: Path, tables: Mapping[str, pl.DataFrame]) -> list[tuple[Path, Path]]:
    """``<name>.csv`` and ``<name>.parquet`` of each table written beside their names in
    ``out``, as (where written, name) pairs; none is left behind if one fails."""
    staged: list[tuple[Path, Path]] = []
    try:
        for name, frame in tables.items():
            for path, write in (
                (out / f"{name}.csv", lambda partial, f=frame: flat(f).write_csv(partial)),
                (out / f"{name}.parquet", frame.write_parquet),
            ):
                staged.append((_beside(path), path))
                write(staged[-1][0])
    except BaseException:
        _discard(staged)
        raise
    return staged


def _discard(staged: list[tuple[Path, Path]]) -> None:
    for partial, _ in staged:
        partial.unlink(missing_ok=True)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _beside(path: Path) -> Path:
    """Where a file is written before it is renamed to ``path``."""
    return path.with_name(f".{path.name}.partial")


def _replace(path: Path, write) -> None:
    partial = _beside(path)
    try:
        write(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def render_html(
    tables: Mapping[str, pl.DataFrame],
    *,
    meta: Mapping[str, Any],
    progress: Callable[[str], None] | None = None,
) -> str:
    """The report page as a string; :func:`write_report` without the files.

    ``progress``, when given, is called with a section's name as each is written
    (:data:`SECTIONS` lists them in page order), then with ``"figures"`` once the figures
    are drawn.
    """
    page, _ = _render(tables, meta, _checked_bins(tables, meta), progress)
    return page


#: The page's sections in order (docs/report.md): each appears when its table exists.
SECTIONS = (
    "summary",
    "trust",
    "degradation",
    "reliability",
    "calibration",
    "by_class",
    "sources",
    "discrimination",
    "selective",
    "consistency",
    "multilabel",
    "recalibration",
    "monitoring",
    "corruptions",
    "methods",
)


def _builders() -> dict[str, Callable[..., str | None]]:
    builders: dict[str, Callable[..., str | None]] = {
        "summary": summary_section,
        "degradation": degradation_section,
        "reliability": reliability_section,
        "calibration": calibration_section,
        "by_class": by_class_section,
        "sources": sources_section,
        "discrimination": discrimination_section,
        "selective": selective_section,
        "consistency": consistency_section,
        "multilabel": multilabel_section,
        "recalibration": recalibration_section,
        "monitoring": monitoring_section,
        "corruptions": corruptions_section,
        "methods": methods_section,
    }
    # "Where trust breaks" comes from the statistical layer's own module, when installed.
    if importlib.util.find_spec("relcol.report._trust_section") is not None:
        module = importlib.import_module("relcol.report._trust_section")
        builders["trust"] = module.trust_section
    return builders


def _checked_bins(tables: Mapping[str, pl.DataFrame], meta: Mapping[str, Any]) -> int:
    """``meta``'s bins, once the tables and metadata are checked: one clear error for any the
    page cannot be made of."""
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
    bins = check_bins(meta.get("bins"))
    versions = meta.get("versions")
    if versions is not None and not isinstance(versions, Mapping):
        raise InputError(
            f"meta['versions'] must be a mapping of package name to version. "
            f"Got {type(versions).__name__}."
        )
    return bins


def _render(
    tables: Mapping[str, pl.DataFrame],
    meta: Mapping[str, Any],
    bins: int,
    progress: Callable[[str], None] | None,
) -> tuple[str, Exports]:
    """The page and its tables' exports, of tables and metadata ``_checked_bins`` passed."""
    calibration = tables["calibration"]
    study = meta.get("study") or ", ".join(
        calibration.get_column("study").unique(maintain_order=True)
    )
    # the summaries the page prints (report_tables computes them; a caller with only the
    # metric tables gets them here, from the same function), then labels by their names
    tables = {**tables, **summary_tables(tables, missing=True)}
    # One style per model the figures draw, for the whole report, so a model keeps its colour
    # everywhere; a study of many models draws some of them (the tables keep every one).
    models = calibration.get_column("model").unique(maintain_order=True).to_list()
    styles = model_styles(figure_models(tables["worst_gaps"], models))
    context = {"bins": bins, "styles": styles, "study": study, "meta": meta}
    tables = name_labels_in(tables)
    builders = _builders()
    sections = []
    # the figures are drawn once the sections are written, beside this process for a large study
    rows = meta.get("rows") or int(calibration.get_column("n").sum())
    with collecting() as exports, drawing(page_workers(rows)) as figures:
        for name in SECTIONS:
            build = builders.get(name)
            html = _call(build, tables, context) if build is not None else None
            if html:
                sections.append(html)
            if progress is not None:
                progress(name)
        body = figures.fill("\n".join(sections))
    if progress is not None:
        progress("figures")
    nav = "\n".join(
        f'<li><a href="#{escape(anchor)}">{heading}</a></li>'
        for anchor, heading in anchors(sections)
    )
    page = _PAGE.format(
        title=escape(f"relcol report: {study}"),
        css=_CSS,
        header=header(study, meta),
        nav=nav,
        body=body,
    )
    return page, exports


def _call(build: Callable[..., str | None], tables, context: Mapping[str, Any]) -> str | None:
    """Call a section builder with the keywords it takes (sections written elsewhere take
    only ``bins``; a ``**kwargs`` builder gets them all)."""
    parameters = inspect.signature(build).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return build(tables, **context)
    names = {p.name for p in parameters}
    return build(tables, **{k: v for k, v in context.items() if k in names})


# Below 1200 px the contents go above the page as a wrapped line of links instead of a column
# beside it: beside it they leave the built-in study's widest tables (the trust tables, about
# 910 px) too little room, and those would scroll inside their sections.
_CSS = re.sub(
    r"\s*\n\s*",
    "\n",
    """
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; color: #222; margin: 0; line-height: 1.45; background: #fff; }
.page { display: grid; grid-template-columns: 13rem minmax(0, 1fr); max-width: 1500px;
  margin: 0 auto; }
nav.toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto;
  box-sizing: border-box; padding: 1.6rem 0.8rem 1rem 1.2rem; font-size: 0.88rem;
  border-right: 1px solid #e3e3e3; }
nav.toc p { font-weight: 600; margin: 0 0 0.4rem; color: #555; text-transform: uppercase;
  font-size: 0.75rem; letter-spacing: 0.05em; }
nav.toc ol { list-style: none; margin: 0; padding: 0; }
nav.toc li { margin: 0.15rem 0; }
nav.toc a { color: #0b5394; text-decoration: none; display: block; padding: 0.15rem 0.3rem;
  border-radius: 3px; }
nav.toc a:hover, nav.toc a:focus { background: #eef3f8; }
main { min-width: 0; padding: 1.2rem 2rem 3rem; }
header h1 { font-size: 1.6rem; margin: 0.4rem 0 0.2rem; }
h2 { font-size: 1.3rem; border-bottom: 2px solid #e3e3e3; padding-bottom: 0.2rem;
  margin-top: 2.4rem; }
h3 { font-size: 1.02rem; margin-top: 1.2rem; }
section { scroll-margin-top: 0.5rem; }
main > section:first-of-type > h2 { margin-top: 1rem; }
.run { color: #666; margin-top: 0; }
.lead { max-width: 62rem; }
a { color: #0b5394; }
code { font-size: 0.9em; }
figure { margin: 0.8rem 0 1.6rem; }
figure svg { max-width: 100%; height: auto; display: block; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(26rem, 1fr));
  gap: 0 1.2rem; }
.figures figure svg { width: 100%; }
.gt_table { max-width: 100%; }
main > section, main details { max-width: 100%; overflow-x: auto; }
table.breaks { border-collapse: separate; border-spacing: 2px; font-size: 0.88rem;
  margin: 0.4rem 0 0.3rem; }
table.breaks th, table.breaks td { padding: 0.18rem 0.5rem; white-space: nowrap; }
table.breaks thead th { font-weight: 600; vertical-align: bottom; text-align: center; }
table.breaks thead th small { display: block; font-weight: normal; color: #666; }
table.breaks tbody th { text-align: left; font-weight: 600; }
table.breaks tr.group th { background: #f4f6f8; padding-top: 0.3rem; }
table.breaks td { text-align: center; min-width: 4.5rem; }
table.breaks td.red { background: #FCAE91; }
table.breaks td.amber { background: #FDD49E; }
table.breaks td.green { background: #C7E9C0; }
table.breaks td.none { background: #f1f1f1; color: #777; }
table.breaks td.clean { font-weight: 700; }
table.breaks td.holds { color: #333; font-style: italic; }
table.breaks td small { color: #333; }
p.legend { font-size: 0.84rem; color: #444; max-width: 72rem; margin-top: 0.2rem; }
p.table-file { margin: 0.4rem 0 1rem; }
figcaption { color: #555; font-size: 0.88rem; max-width: 62rem; }
details { margin: 0.5rem 0; }
details > summary { cursor: pointer; padding: 0.3rem 0.5rem; border-radius: 4px;
  background: #f4f6f8; }
details > summary:hover { background: #e9eef3; }
details.dataset > summary { font-weight: 600; font-size: 1.02rem; }
details[open] > summary { margin-bottom: 0.5rem; }
summary .count { color: #666; font-weight: normal; }
.exports { font-size: 0.8rem; color: #666; margin: 0.2rem 0 1.2rem; }
table.gt_table td.gt_row { white-space: nowrap; }
table.gt_table td.gt_row.wrap { white-space: normal; min-width: 9rem; }
table.gt_table .rho { font-size: 0.72rem; color: #555; }
ul.headline li, ul.verdicts li { margin: 0.15rem 0; }
.light { display: inline-block; padding: 0 0.35rem; border-radius: 3px; color: #fff;
  font-size: 0.85em; font-weight: 600; }
.light.red { background: #B2182B; }
.light.amber { background: #B8860B; }
.light.green { background: #1B7837; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; }
table.versions td { padding: 0.1rem 1rem 0.1rem 0; }
pre.spec { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
@media (max-width: 1200px) {
  .page { display: block; }
  nav.toc { position: static; max-height: none; border-right: 0;
    border-bottom: 1px solid #e3e3e3; }
  nav.toc ol { display: flex; flex-wrap: wrap; gap: 0 0.2rem; }
  nav.toc li { margin: 0; }
  main { padding: 1rem; }
}
@media print {
  nav.toc { display: none; }
  .page { display: block; }
}
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
<div class="page">
<nav class="toc" aria-label="Sections">
<p>Contents</p>
<ol>
{nav}
</ol>
</nav>
<main>
{header}
{body}
</main>
</div>
</body>
</html>
"""
