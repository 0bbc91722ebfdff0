"""Every table the page shows, exported beside it: HTML, LaTeX, CSV and Parquet.

While a page renders (:func:`collecting`), each great-tables table that goes through
``table_html`` is registered here under its HTML id; the page links to
``tables/<id>.html``, ``.tex``, ``.csv`` and ``.parquet``, and ``write_report`` writes
them. The CSV and Parquet files hold the table's own rows (the frame given to great-tables,
without its helper columns), so a table can be rebuilt in a spreadsheet or a notebook;
LaTeX comes from ``GT.as_latex()``, made into ASCII that pdflatex compiles and set to fit
the page (``relcol.report._latex``), and is left out where great-tables cannot write it
(nanoplots, for instance) unless a plainer twin of the table is registered for it.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import polars as pl
from great_tables import GT

from relcol.report._latex import table_latex
from relcol.text import printable

#: The folder, inside the report folder, that holds the table exports.
FOLDER = "tables"


@dataclass
class Export:
    """One shown table: its id, title and the files it becomes."""

    id: str
    title: str
    html: str
    latex: str | None
    data: pl.DataFrame | None


@dataclass
class Exports:
    """The tables registered while one page rendered, in page order."""

    tables: dict[str, Export] = field(default_factory=dict)

    def write(self, out: Path, replace) -> list[Path]:
        """Write every table's files into ``out / FOLDER`` with ``replace(path, write)``."""
        folder = out / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for table in self.tables.values():
            files = {
                "html": lambda p, t=table: p.write_text(printable(_page(t)), encoding="utf-8"),
            }
            if table.latex is not None:
                files["tex"] = lambda p, t=table: p.write_text(t.latex, encoding="ascii")
            if table.data is not None:
                files["csv"] = lambda p, t=table: flat(t.data).write_csv(p)
                files["parquet"] = lambda p, t=table: t.data.write_parquet(p)
            for suffix, write in files.items():
                path = folder / f"{table.id}.{suffix}"
                replace(path, write)
                written.append(path)
        return written


_ACTIVE: contextvars.ContextVar[Exports | None] = contextvars.ContextVar(
    "relcol_exports", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[Exports]:
    """Collect the tables rendered inside the block (nested blocks collect separately)."""
    exports = Exports()
    token = _ACTIVE.set(exports)
    try:
        yield exports
    finally:
        _ACTIVE.reset(token)


def register(gt: GT, html: str, *, latex: GT | None = None) -> str:
    """Register a rendered table; returns the HTML line that links to its files.

    ``latex`` is a twin of ``gt`` to write as LaTeX instead of ``gt`` itself (a version
    without nanoplots, say). Outside :func:`collecting`, nothing is registered and no
    links are returned.
    """
    exports = _ACTIVE.get()
    table_id = gt._options.table_id.value
    if exports is None or not table_id:
        return ""
    if table_id in exports.tables:
        raise ValueError(f"two tables of one report share the id {table_id!r}")
    table = Export(
        id=table_id,
        title=_title(gt) or table_id,
        html=html,
        latex=_latex(latex if latex is not None else gt),
        data=_data(gt),
    )
    exports.tables[table_id] = table
    return f'<p class="exports">This table as {links(table)}</p>'


def register_data(table_id: str, title: str, data: pl.DataFrame, html: str) -> str | None:
    """Register a table that lives only in files (too long for the page): ``html`` is its
    plain page, ``data`` its rows; returns the links to its files (None outside
    :func:`collecting`, where nothing is written)."""
    exports = _ACTIVE.get()
    if exports is None:
        return None
    if table_id in exports.tables:
        raise ValueError(f"two tables of one report share the id {table_id!r}")
    table = Export(id=table_id, title=title, html=html, latex=None, data=data)
    exports.tables[table_id] = table
    return links(table)


def links(table: Export) -> str:
    """Links to a registered table's files, separated by middle dots."""
    files = [("HTML", "html")]
    files += [("LaTeX", "tex")] if table.latex is not None else []
    files += [("CSV", "csv"), ("Parquet", "parquet")] if table.data is not None else []
    return " · ".join(
        f'<a href="{FOLDER}/{escape(table.id)}.{suffix}">{name}</a>' for name, suffix in files
    )


def _title(gt: GT) -> str | None:
    heading = getattr(gt, "_heading", None)
    title = getattr(heading, "title", None)
    return str(title) if title else None


def _latex(gt: GT) -> str | None:
    """The table as LaTeX that pdflatex compiles and that fits the page (see ``_latex``)."""
    try:
        with warnings.catch_warnings():
            # "Styles are not yet supported in LaTeX output": colours stay on the web page.
            warnings.simplefilter("ignore", UserWarning)
            return table_latex(gt)
    except NotImplementedError:
        return None


def _data(gt: GT) -> pl.DataFrame | None:
    data = getattr(gt, "_tbl_data", None)
    if not isinstance(data, pl.DataFrame):
        return None
    return data.drop([c for c in data.columns if c.startswith("__")])


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV holds no lists or structs: write those as their JSON text."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(pl.col(c).map_elements(_json, return_dtype=pl.String) for c in nested)


def _json(value) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value)


def _page(table: Export) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(table.title)}</title>\n</head>\n<body>\n{table.html}\n</body>\n</html>\n"
    )
