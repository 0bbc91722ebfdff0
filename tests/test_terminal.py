"""`relcol sql` in a terminal: it says when rows are cut and honours the terminal's width.

The table is DuckDB's own drawing (a row of names, one of types, the rows): the first rows up to
--limit, the columns that fit the terminal at their natural width, and a note on stderr for
whatever is left out.
"""

from __future__ import annotations

import re

import duckdb
import pytest
from click.testing import CliRunner
from relcol.cli import main
from relcol.cli._table import DIGITS, SQL_ROWS, TABLE_ROWS, result_text

import relcol


def wide(rows: int = 250, columns: int = 20) -> duckdb.DuckDBPyRelation:
    names = ", ".join(f"range * 1.5 AS column_{i}" for i in range(columns))
    return duckdb.connect().sql(f"SELECT {names} FROM range({rows})")


def data_lines(text: str) -> list[str]:
    """The body lines of a drawn table (between the ├─┤ rule and the bottom border)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("├"))
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    return lines[start + 1 : end]


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("│").split("│")]


def header(text: str) -> list[str]:
    return cells(next(line for line in text.splitlines() if line.startswith("│")))


def test_rows_beyond_the_limit_are_cut_from_the_bottom_and_said():
    text, notes = result_text(wide(columns=2), limit=100, width=80)
    rows = data_lines(text)
    assert len(rows) == 100
    # the first 100 rows in order, not a head and a tail around a "·" row
    assert [float(cells(r)[0]) for r in rows] == [i * 1.5 for i in range(100)]
    assert notes == [
        "100 of 250 rows shown: --limit N shows more (--limit 0: all), --format csv writes them all"
    ]
    everything, notes = result_text(wide(columns=1), limit=None, width=80)
    assert len(data_lines(everything)) == 250 and notes == []


def test_a_table_stops_at_its_most_rows_and_says_so():
    text, notes = result_text(wide(rows=TABLE_ROWS + 51, columns=1), limit=None, width=80)
    assert [float(cells(r)[0]) for r in data_lines(text)] == [i * 1.5 for i in range(TABLE_ROWS)]
    assert notes == [
        "9,999 of 10,050 rows shown: a table shows at most 9,999, --format csv writes them all"
    ]


@pytest.mark.parametrize("width", [40, 80, 120, 200])
def test_columns_keep_their_natural_width_and_those_that_do_not_fit_are_said(width):
    text, notes = result_text(wide(), limit=5, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    names = [h for h in header(text) if h != "…"]
    # no squeezing: every shown name whole, the first and the last columns kept
    assert names and all(re.fullmatch(r"column_\d+", name) for name in names)
    assert names[0] == "column_0" and (len(names) == 1 or names[-1] == "column_19")
    assert len(names) < 20 and "…" in header(text)
    assert notes[-1] == (
        f"{len(names)} of 20 columns shown, the others do not fit a terminal {width} "
        "characters wide (COLUMNS sets it): select fewer columns, or --format csv writes them all"
    )


def test_a_narrow_terminal_keeps_columns_of_the_same_name_apart():
    middle = ", ".join(f"{i} AS c{i}" for i in range(8))
    relation = duckdb.connect().sql(f"SELECT 'first' AS a, {middle}, 'last' AS a")
    text, notes = result_text(relation, limit=5, width=40)
    assert max(len(line) for line in text.splitlines()) <= 40
    names, values = header(text), cells(data_lines(text)[0])
    assert names[0] == names[-1] == "a" and "…" in names
    assert values[0] == "first" and values[-1] == "last"  # not the first "a" twice
    assert notes[-1].startswith(f"{len(names) - 1} of 10 columns shown")


def test_a_result_that_fits_is_shown_whole_with_no_note():
    text, notes = result_text(wide(rows=3), limit=100, width=400)
    assert header(text) == [f"column_{i}" for i in range(20)] and notes == []
    assert len(data_lines(text)) == 3


def test_a_statement_without_a_result_draws_nothing():
    assert result_text(None, limit=100, width=80) == ("", [])


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
    assert [int(cells(r)[0]) for r in shown] == list(range(rows))
    assert ("rows shown" in done.stderr) == (rows < 250)


def test_csv_writes_every_row_and_a_bad_limit_is_refused(warehouse):
    done = sql(warehouse, "--format", "csv", columns=40)
    assert done.stdout.count("\n") == 1 + 250 and done.stderr == ""
    bad = sql(warehouse, "--limit", "-1")
    assert bad.exit_code == 2 and "--limit" in bad.stderr


def test_a_small_result_drawn_whole_but_for_the_rows_beyond_the_limit():
    relation = duckdb.connect().sql("SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'z')) t(a, b)")
    text, notes = result_text(relation, limit=2, width=80)
    assert text == (
        "┌───────┬─────────┐\n"
        "│   a   │    b    │\n"
        "│ int32 │ varchar │\n"
        "├───────┼─────────┤\n"
        "│     1 │ x       │\n"
        "│     2 │ y       │\n"
        "└───────┴─────────┘"
    )
    assert notes == [
        "2 of 3 rows shown: --limit N shows more (--limit 0: all), --format csv writes them all"
    ]


DOUBLES = [0.0981785528045757, 1 / 3, 1e-20 / 3, -2.5e-7, 0.9999995, 123456.789, 999999.4]


def test_a_table_draws_doubles_to_six_significant_digits_and_csv_writes_them_all(warehouse):
    # what Python prints of each value rounded to DIGITS significant digits: an independent
    # reference for DuckDB's drawing of the rounded DOUBLE
    expected = [repr(float(f"{x:.{DIGITS}g}")) for x in DOUBLES]
    assert expected == [
        "0.0981786",
        "0.333333",
        "3.33333e-21",
        "-2.5e-07",
        "1.0",
        "123457.0",
        "999999.0",
    ]
    values = ", ".join(f"({x!r}::DOUBLE)" for x in DOUBLES)
    relation = duckdb.connect().sql(f"SELECT x FROM (VALUES {values}) t(x)")
    text, _ = result_text(relation, limit=None, width=80)
    assert [cells(r)[0] for r in data_lines(text)] == expected
    assert header(text) == ["x"] and cells(text.splitlines()[2]) == ["double"]  # still a DOUBLE
    # as they are: 10⁶ and above (rounding would read as another value), non-finite and NULL
    # values, a FLOAT, a list, a DECIMAL
    relation = duckdb.connect().sql(
        "SELECT 1234567.891::DOUBLE AS big, 'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, "
        "NULL::DOUBLE AS none, 0.1::FLOAT AS single, [0.1::DOUBLE + 0.2] AS list, "
        "0.123456789::DECIMAL(10, 9) AS exact"
    )
    text, _ = result_text(relation, limit=None, width=200)
    assert cells(data_lines(text)[0]) == [
        "1234567.891",
        "nan",
        "inf",
        "NULL",
        "0.1",
        "[0.30000000000000004]",
        "0.123456789",
    ]
    # every digit in a file
    query = f"SELECT x FROM (VALUES {values}) t(x)"
    done = CliRunner().invoke(main, ["sql", query, "--format", "csv", "--warehouse", warehouse])
    assert done.exit_code == 0, done.output
    assert [float(v) for v in done.stdout.split()[1:]] == DOUBLES


def test_a_table_draws_types_a_frame_cannot_hold(warehouse):
    done = CliRunner().invoke(
        main, ["sql", "SELECT [INTERVAL 1 DAY] AS gap", "--warehouse", warehouse]
    )
    assert done.exit_code == 0, done.output
    assert cells(data_lines(done.stdout)[0]) == ["[1 day]"] and header(done.stdout) == ["gap"]
