"""`relcol sql`'s result as a text table that fits the terminal, and what it leaves out.

Only polars is needed here: `relcol sql` starts without the report's libraries.
"""

from __future__ import annotations

import polars as pl

#: Rows ``relcol sql`` shows in a table unless told otherwise (``--limit``).
SQL_ROWS = 100
#: The widest table polars draws (its width is a 16-bit number).
_WIDEST = 65_535


def frame_text(frame: pl.DataFrame, *, limit: int | None, width: int) -> tuple[str, list[str]]:
    """A query result as a text table at most ``width`` characters wide, and what it leaves out.

    Parameters
    ----------
    frame
        The result.
    limit
        The most rows to show, from the top (None: every row).
    width
        The terminal's width in characters.

    Returns
    -------
    tuple[str, list[str]]
        The table (its first line states the whole result's shape), and one note per thing
        not shown: rows beyond ``limit``, columns that do not fit ``width`` at their natural
        width (the first and last columns are kept, the middle ones give way to a ``…``
        column, rather than every column being squeezed into a few characters). Each note
        says how to see everything. No notes when everything is shown.

    tests/test_terminal.py has an example, drawn in full.
    """
    shown = frame if limit is None else frame.head(limit)
    width = min(max(width, 20), _WIDEST)
    rows = max(shown.height, 1)
    columns = frame.width

    def render(cols: int, chars: int) -> str:
        with pl.Config(
            tbl_rows=rows,
            tbl_cols=cols,
            tbl_width_chars=chars,
            fmt_str_lengths=60,
            tbl_hide_dataframe_shape=True,
        ):
            return str(shown)

    # The most columns whose natural width fits; at least one (then wrapped to the width).
    fits = 1
    for cols in range(columns, 1, -1):
        natural = render(cols, _WIDEST)
        if max(len(line) for line in natural.splitlines()) <= width:
            fits = cols
            break
    text = render(fits, width)
    notes = []
    if shown.height < frame.height:
        notes.append(
            f"{shown.height:,} of {frame.height:,} rows shown: --limit N shows more "
            "(--limit 0: all), --format csv writes them all"
        )
    if fits < columns:
        notes.append(
            f"{fits} of {columns} columns shown, the others do not fit a terminal "
            f"{width} characters wide (COLUMNS sets it): select fewer columns, or --format csv "
            "writes them all"
        )
    return f"shape: ({frame.height}, {columns})\n{text}", notes
