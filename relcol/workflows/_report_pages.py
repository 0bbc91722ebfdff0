"""The report: compute its tables, materialise them in the warehouse, write the HTML page
and say what it found on the terminal."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from relcol import _interrupts as interrupts
from relcol.errors import OutputError, WarehouseError
from relcol.report import drawing_workers, page_workers
from relcol.store import MATERIALISED, Warehouse, os_error, publish_folder, staged_folder
from relcol.workflows._shared import study_of


@dataclass(frozen=True)
class ReportResult:
    """What ``report`` wrote."""

    study: str
    out: Path
    html: Path
    calibration: pl.DataFrame
    summary: str


def report(
    warehouse: Warehouse | str | os.PathLike[str] | None = None,
    *,
    study: str | None = None,
    out: str | os.PathLike[str] | None = None,
    bins: int = 15,
    bootstrap: int = 1000,
    alpha: float = 0.05,
    tau: float = 0.05,
    margin: float = 0.02,
    seed: int = 0,
    intervals: str = "samples",
    noise: str | None = None,
    stability_at: float | None = None,
    resilience_at: float | None = None,
    compare: str | Sequence[str] | None = None,
    backend: str = "local",
    jobs: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ReportResult:
    """Compute the metric tables of one study, materialise them, and write the HTML report.

    ``bootstrap`` (B replicates, 0 for none), ``alpha``, ``tau``, ``margin``, ``seed`` and
    ``intervals`` set the statistical layer (``report_tables``); ``noise``, ``stability_at``
    and ``resilience_at`` the scorecard (``scorecard``); ``compare`` the reference models of
    the model-vs-model differences (``report_tables``); ``backend`` (``"local"`` or
    ``"dask"``) and ``jobs`` where the per-cell tables are computed (``report_tables``).

    ``progress``, when given, is called as ``progress(step, done, total)`` after each step
    (``"tables"``, ``"warehouse"``, each section of the page, ``"figures"``, ``"files"``),
    with ``total`` the same in every call, so a caller can draw a progress bar on its first
    call.
    """
    wh, study = study_of(warehouse, study)  # said before the report's libraries are imported
    out_dir = Path(out) if out is not None else Path("reports") / study
    wh.writable()
    wh.create()  # rewrites a damaged schema file (it is derived from the code)
    try:
        staged = staged_folder(out_dir)
    except OSError as exc:
        raise OutputError(_cannot_write_report(out_dir, exc)) from None
    hold = None
    try:
        settings = {"bins": bins, "bootstrap": bootstrap, "alpha": alpha, "tau": tau}
        settings |= {"margin": margin, "seed": seed, "intervals": intervals}
        settings |= {"noise": noise, "stability_at": stability_at, "resilience_at": resilience_at}
        settings |= {"compare": compare, "backend": backend, "jobs": jobs}
        # the page's figures are drawn beside this process for a large study: its workers
        # start now, to be ready when the tables are. Their imports run on another core
        # while this process imports the libraries of the tables and the page (here, not
        # with this module), rather than beside the tables' threads.
        with drawing_workers(page_workers(_rows(wh, study))):
            from relcol.report import SECTIONS, write_report

            advance = _progress(progress, ["tables", "warehouse", *SECTIONS, "figures", "files"])
            tables, meta = _report_content(wh, study, settings)
            advance("tables")
            # everything is written to staging first and published only once all of it is
            # written: a failure (a full disk, a table with no rows, Ctrl-C) changes nothing
            with wh.materialise(study) as materialised:
                for view, name in MATERIALISED.items():
                    if name in tables:
                        materialised.write(view, tables[name])
                advance("warehouse")
                write_report(staged, tables=tables, meta=meta, progress=advance)
                interrupts.check()
                # the tables (published as this block ends) and the report folder belong
                # together: a Ctrl-C from here waits until both are published
                hold = interrupts.Hold()
        publish_folder(staged, out_dir)
    except Exception as exc:
        cause = os_error(exc)  # a full disk, a folder made read-only meanwhile …
        if cause is None:
            raise
        raise OutputError(_cannot_write_report(out_dir, cause)) from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        if hold is not None:
            hold.release()  # a Ctrl-C that came meanwhile: now, after both are published
    from relcol.analysis import name_label_codes
    from relcol.report import terminal_summary

    html = out_dir / "index.html"
    table = tables["calibration"]
    ml = tables.get("multilabel")  # labels by name, not code
    thresholds = tables.get("thresholds")
    summary = terminal_summary(
        name_label_codes(table, ml),
        None if thresholds is None else name_label_codes(thresholds, ml),
        summary=name_label_codes(tables["degradation"], ml),
    )
    summary = "\n".join(s for s in (summary, sources_summary(tables)) if s)
    return ReportResult(study=study, out=out_dir, html=html, calibration=table, summary=summary)


def _progress(
    progress: Callable[[str, int, int], None] | None, steps: list[str]
) -> Callable[[str], None]:
    """``advance(step)``: ``progress(step, done, len(steps))``, counting the steps done."""
    done = iter(range(1, len(steps) + 1))

    def advance(step: str) -> None:
        if progress is not None:
            progress(step, next(done), len(steps))

    return advance


def _rows(wh: Warehouse, study: str) -> int:
    """The study's predictions (from the Parquet footers), or 0 if they cannot be counted:
    then the tables' own reads say what is wrong."""
    try:
        return wh.predictions(study).select(pl.len()).collect().item()
    except Exception:
        return 0


def _report_content(wh: Warehouse, study: str, settings: dict):
    """The report's tables and run metadata (``settings``: the options of
    ``report_tables``). A study replaced meanwhile (its files swapped away under the reads)
    is one clear error, not whatever the failed read said."""
    from relcol.workflows._report_tables import ECE_NULL_DRAWS, report_tables

    before = wh.sources(study, derived=False)
    try:
        runs = wh.sql(
            "SELECT * FROM runs WHERE study = ? ORDER BY finished_at DESC LIMIT 1", [study]
        )
        if runs.is_empty():  # the page's header needs it: said before any table is computed
            raise WarehouseError(
                f"study {study!r} has no run record (its run folder has no _run.parquet): "
                "ingest it again, or write one with Staging.write_run before the commit"
            )
        run = runs.row(0, named=True)
        tables = report_tables(wh, study, **settings)
    except Exception as exc:
        if study in wh.studies() and wh.sources(study, derived=False) == before:
            if isinstance(exc, OSError | pl.exceptions.ComputeError) and "parquet" in str(exc):
                raise WarehouseError(
                    f"cannot read study {study!r}: {str(exc).splitlines()[0]} (a damaged file: "
                    "`relcol check` names it)"
                ) from None
            raise
        raise WarehouseError(
            f"study {study!r} was replaced or removed while the report read it; run it again"
        ) from None
    meta = {
        "study": study,
        "run_id": run["run_id"],
        "spec": run["spec"],
        "versions": json.loads(run["versions"]),
        "bins": settings["bins"],
        "created": run["finished_at"].strftime("%Y-%m-%d %H:%M UTC"),
        "rows": run["rows"],
        "draws": ECE_NULL_DRAWS,
    }
    if settings["bootstrap"]:
        alpha = settings["alpha"]
        meta |= {"level": 1 - alpha}
        meta |= {k: settings[k] for k in ("bootstrap", "alpha", "tau", "margin", "seed")}
        meta |= {"intervals": settings["intervals"]}
    return tables, meta


def _cannot_write_report(out_dir: Path, exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return (
        f"cannot write the report to {out_dir}: {exc.strerror or exc}{where}; nothing was changed"
    )


def sources_summary(tables: Mapping[str, pl.DataFrame]) -> str:
    """Terminal lines for the report: which sources are scores, and the soft agreement."""
    lines = []
    sources = tables.get("sources")
    if sources is not None and not sources.is_empty():
        scores = sources.filter(pl.col("kind") == "score")["source"].to_list()
        if scores:
            lines.append(
                f"scores, not probabilities (read their AUROC and AURC; recalibrate before "
                f"their ECE): {', '.join(scores)}"
            )
    agreement = tables.get("agreement")
    if agreement is not None and not agreement.is_empty():
        clean = agreement.filter(pl.col("severity") == pl.col("severity").min().over("model"))
        for row in clean.sort("model").iter_rows(named=True):
            r = "–" if row["spearman_rho"] is None else f"{row['spearman_rho']:+.2f}"
            lines.append(
                f"soft agreement {row['model']}: mean agreement {row['mean_agreement']:.3f}, "
                f"Spearman rho(confidence, agreement) {r}, ECE against agreement "
                f"{row['ece']:.3f} (n = {row['n']:,})"
            )
    return "\n".join(lines)
