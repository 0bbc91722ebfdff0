"""`relcol sql` in a terminal: it says when rows are cut and honours the terminal's width.

Before, the table silently stopped at 100 rows (polars' head-and-tail with a "…" row) and
was drawn 200 characters wide whatever the terminal, squeezing a wide result into columns
three characters wide.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from relcol.cli import main
from relcol.cli._table import SQL_ROWS, frame_text

import relcol

WIDE = pl.DataFrame({f"column_{i}": np.arange(250) * 1.5 for i in range(20)})


def data_lines(text: str) -> list[str]:
    """The body lines of a polars table (between the ╞═╡ rule and the bottom border)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("╞"))
    return [line for line in lines[start + 1 :] if line.startswith("│")]


def header(text: str) -> list[str]:
    first = next(line for line in text.splitlines() if line.startswith("│"))
    return [cell.strip() for cell in first.strip("│").split("┆")]


def test_rows_beyond_the_limit_are_cut_from_the_bottom_and_said():
    text, notes = frame_text(WIDE.select("column_0", "column_1"), limit=100, width=80)
    assert text.splitlines()[0] == "shape: (250, 2)"  # the whole result's shape
    rows = data_lines(text)
    assert len(rows) == 100
    # the first 100 rows in order, not polars' head and tail around a "…" row
    assert [float(r.strip("│").split("┆")[0]) for r in rows] == [i * 1.5 for i in range(100)]
    assert notes == [
        "100 of 250 rows shown: --limit N shows more (--limit 0: all), --format csv writes them all"
    ]
    everything, notes = frame_text(WIDE.select("column_0"), limit=None, width=80)
    assert len(data_lines(everything)) == 250 and notes == []


@pytest.mark.parametrize("width", [40, 80, 120, 200])
def test_columns_keep_their_natural_width_and_those_that_do_not_fit_are_said(width):
    text, notes = frame_text(WIDE, limit=5, width=width)
    lines = text.splitlines()[1:]
    assert max(len(line) for line in lines) <= width
    names = [h for h in header(text) if h != "…"]
    # no squeezing: every shown name whole, the first and the last columns kept
    assert names and all(re.fullmatch(r"column_\d+", name) for name in names)
    assert names[0] == "column_0" and (len(names) == 1 or names[-1] == "column_19")
    # as many columns as fit at their natural width (each 8 or 9 characters + 3 of border)
    natural = [len(f"column_{i}") + 3 for i in range(20)]
    assert len(names) < 20
    first, last = natural[: (len(names) + 1) // 2], natural[20 - len(names) // 2 :]
    assert sum(first) + sum(last) + 4 + 1 <= width  # "…" column and the closing border
    assert notes[-1] == (
        f"{len(names)} of 20 columns shown, the others do not fit a terminal {width} "
        "characters wide (COLUMNS sets it): select fewer columns, or --format csv writes them all"
    )


def test_a_result_that_fits_is_shown_whole_with_no_note():
    text, notes = frame_text(WIDE.head(3), limit=100, width=400)
    assert header(text) == [f"column_{i}" for i in range(20)] and notes == []
    assert len(data_lines(text)) == 3


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("sql-terminal") / "wh"
    relcol.simulate_consistency(root, name="s", samples=5, replicates=2, families=("balanced",))
    return str(root)


def sql(warehouse: str, *args: str, columns: int = 80):
    query = "SELECT range AS n, " + ", ".join(f"range * {i} AS column_{i}" for i in range(20))
    query += " FROM range(250)"
    return CliRunner().invoke(
        main, ["sql", query, "--warehouse", warehouse, *args], env={"COLUMNS": str(columns)}
    )


def test_the_command_says_what_it_cut_on_stderr_and_follows_columns(warehouse):
    done = sql(warehouse, columns=70)
    assert done.exit_code == 0, done.output
    assert max(len(line) for line in done.stdout.splitlines()) <= 70
    assert len(data_lines(done.stdout)) == SQL_ROWS
    assert "relcol: 100 of 250 rows shown: --limit N shows more" in done.stderr
    assert "columns shown, the others do not fit a terminal 70 characters wide" in done.stderr
    wide = sql(warehouse, columns=400)
    assert header(wide.stdout) == ["n", *(f"column_{i}" for i in range(20))]
    assert "columns shown" not in wide.stderr


@pytest.mark.parametrize(("limit", "rows"), [("0", 250), ("7", 7), ("250", 250), ("1000", 250)])
def test_limit_sets_the_rows_shown(warehouse, limit, rows):
    done = sql(warehouse, "--limit", limit, columns=400)
    assert done.exit_code == 0, done.output
    shown = data_lines(done.stdout)
    assert [int(r.strip("│").split("┆")[0]) for r in shown] == list(range(rows))
    assert ("rows shown" in done.stderr) == (rows < 250)


def test_csv_writes_every_row_and_a_bad_limit_is_refused(warehouse):
    done = sql(warehouse, "--format", "csv", columns=40)
    assert done.stdout.count("\n") == 1 + 250 and done.stderr == ""
    bad = sql(warehouse, "--limit", "-1")
    assert bad.exit_code == 2 and "--limit" in bad.stderr


def test_a_small_result_drawn_whole_but_for_the_rows_beyond_the_limit():
    frame = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    text, notes = frame_text(frame, limit=2, width=80)
    assert text == (
        "shape: (3, 2)\n"
        "┌─────┬─────┐\n"
        "│ a   ┆ b   │\n"
        "│ --- ┆ --- │\n"
        "│ i64 ┆ str │\n"
        "╞═════╪═════╡\n"
        "│ 1   ┆ x   │\n"
        "│ 2   ┆ y   │\n"
        "└─────┴─────┘"
    )
    assert notes == [
        "2 of 3 rows shown: --limit N shows more (--limit 0: all), --format csv writes them all"
    ]
