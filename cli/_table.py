"""`relcol sql`'s result as a text table that fits the terminal, and what it leaves out.

DuckDB draws the table (its own box renderer, as in its shell and its Python API): no Polars, so
`relcol sql` starts with DuckDB alone. A DOUBLE is drawn to ``DIGITS`` significant digits, as
Polars and pandas print a frame; ``--format csv`` and ``json`` write every digit.
"""

from __future__ import annotations

import contextlib
import io
import re

import duckdb

#: Rows ``relcol sql`` shows in a table unless told otherwise (``--limit``).
SQL_ROWS = 100
#: The most rows a table shows: ``DuckDBPyRelation.show`` reads at most 10,000, and given that
#: many cannot tell how many there are. Beyond it, ``--format csv`` writes every row.
TABLE_ROWS = 9_999
#: The widest a column's values are drawn before they are cut with "…".
CELL_CHARS = 60
#: The narrowest table drawn, whatever the terminal says.
NARROWEST = 20
#: Significant digits a table shows of a DOUBLE below 10⁶ in magnitude. DuckDB draws the
#: shortest digits that give a value back (``0.09817855280457571``), so a table of metrics
#: would be mostly digits, and fewer of its columns would fit.
DIGITS = 6

_HIDDEN_COLUMNS = re.compile(r"(\d+) columns \((\d+) shown\)")


def result_text(
    relation: duckdb.DuckDBPyRelation | None, *, limit: int | None, width: int
) -> tuple[str, list[str]]:
    """A query's result as a text table at most ``width`` characters wide, and what it leaves
    out.

    Parameters
    ----------
    relation
        The result (None: a statement without one, drawn as nothing).
    limit
        The most rows to show, from the top (None: every row, up to ``TABLE_ROWS``).
    width
        The terminal's width in characters.

    Returns
    -------
    tuple[str, list[str]]
        The table, drawn by DuckDB: a row of column names and one of types, the rows, and a
        footer with the rows and columns drawn. Columns that do not fit ``width`` at their
        natural width give way to a ``…`` column in the middle (the first and last are
        kept), rather than every column being squeezed. One note per thing not shown: rows
        beyond ``limit``, columns that do not fit; each says how to see everything. No notes
        when everything is shown.

    tests/test_terminal.py has an example, drawn in full.
    """
    if relation is None:
        return "", []
    width = max(width, NARROWEST)
    held = relation.materialize()  # the query runs once: the count and the table read its rows
    rows = len(held)
    shown = min(rows, TABLE_ROWS if limit is None else min(limit, TABLE_ROWS))
    top = _rounded(held.limit(shown), relation.columns)
    text = _drawn(top, shown, width)
    columns = len(held.columns)
    hidden = _HIDDEN_COLUMNS.search(text.splitlines()[-1])
    fits = int(hidden.group(2)) if hidden else columns
    # DuckDB draws at least three columns from each end, however narrow the terminal: fewer,
    # around a "…" column of our own, until they fit (or one is left)
    for keep in range(min(fits, columns - 1), 0, -1):
        if _widest(text) <= width:
            break
        text, fits = _drawn(_ends(top, keep, relation.columns), shown, width), keep
    notes = []
    if shown < rows:
        how = (
            "--limit N shows more (--limit 0: all), --format csv writes them all"
            if shown < min(rows, TABLE_ROWS)
            else f"a table shows at most {TABLE_ROWS:,}, --format csv writes them all"
        )
        notes.append(f"{shown:,} of {rows:,} rows shown: {how}")
    if fits < columns:
        notes.append(
            f"{fits} of {columns} columns shown, the others do not fit a terminal "
            f"{width} characters wide (COLUMNS sets it): select fewer columns, or --format csv "
            "writes them all"
        )
    return text, notes


def _drawn(relation: duckdb.DuckDBPyRelation, rows: int, width: int) -> str:
    """DuckDB's drawing of ``relation`` (``rows`` rows) at most ``width`` characters wide where
    it can, a value cut to fit a column of ``CELL_CHARS`` (or the terminal, if narrower)."""
    drawn = io.StringIO()
    with contextlib.redirect_stdout(drawn):
        relation.show(
            max_width=width, max_rows=max(rows, 1), max_col_width=min(CELL_CHARS, width - 4)
        )
    return drawn.getvalue().rstrip("\n")


def _rounded(relation: duckdb.DuckDBPyRelation, names: list[str]) -> duckdb.DuckDBPyRelation:
    """``relation`` with each DOUBLE below 10⁶ in magnitude rounded to ``DIGITS`` significant
    digits, still a DOUBLE (so the table shows its type), named ``names``. Larger values,
    non-finite values and NULL are drawn as they are: rounding 1234567.8 to 1234570.0 would
    read as a value it is not."""
    columns = [
        f"CASE WHEN abs(#{i}) < 1e6 THEN CAST(printf('%.{DIGITS}g', #{i}) AS DOUBLE) ELSE #{i} END"
        if str(kind) == "DOUBLE"
        else f"#{i}"
        for i, kind in enumerate(relation.types, start=1)
    ]
    return relation.project(
        ", ".join(f"{c} AS {_quoted(n)}" for c, n in zip(columns, names, strict=True))
    )


def _ends(
    relation: duckdb.DuckDBPyRelation, keep: int, names: list[str]
) -> duckdb.DuckDBPyRelation:
    """The first ⌈keep/2⌉ and the last ⌊keep/2⌋ columns of ``relation``, a ``…`` column between,
    taken by position and given the result's own ``names`` (which may repeat: a held copy
    renames a repeated one)."""
    kept = [*range((keep + 1) // 2), *range(len(names) - keep // 2, len(names))]
    columns = [f"#{i + 1} AS {_quoted(names[i])}" for i in kept]
    columns.insert((keep + 1) // 2, "'…' AS \"…\"")
    return relation.project(", ".join(columns))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)
