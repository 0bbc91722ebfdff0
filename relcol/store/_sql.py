"""DuckDB connections with relcol's views defined, for Python and for the shell.

The views in ``sql/views`` read their Parquet files from DuckDB variables
(``getvariable('relcol_predictions')`` …) holding lists of absolute paths, so no
name or path is ever spliced into SQL text: the Python side binds the lists as
prepared-statement parameters. The shell cannot bind parameters, so its init
script spells the same lists as SQL literals through ``sql_literal``.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Collection, Mapping, Sequence
from importlib import resources

import duckdb

from relcol.errors import WarehouseError

#: Views in dependency order; each is ``sql/views/<name>.sql``.
VIEWS = (
    "predictions",
    "predictions_unstored",
    "predictions_without_curve",
    "predictions_binned",
    "classes",
    "corruptions",
    "runs",
    "annotations",
    "calibration_bins_from_rows",
    "calibration_bins",
    "calibration_from_rows",
    "calibration",
    "discrimination_from_rows",
    "discrimination",
    "selective_curve_counts_from_rows",
    "selective_curve_counts",
    "selective_curve",
    "selective_from_rows",
    "selective",
    "report_calibration",
    "report_trends",
    "report_thresholds",
    "report_differences",
    "multilabel_pairs",
    "multilabel_bins",
    "multilabel",
    "soft_agreement",
    "consistency_from_rows",
    "consistency",
    "consistency_samples_from_rows",
    "consistency_samples",
    "monitoring",
)

#: Views whose rows every commit stores beside the study's parts (``Staging.commit``), so that
#: a query reads them instead of computing them from the long table: each view ``X`` is its
#: stored rows (``stored_X``, over the variable ``relcol_stored_X``) and ``X_from_rows`` (the
#: studies without them, over the view ``UNSTORED[X]``), in the order of ``X_from_rows``.
#: Listed longest first: a commit starts storing them in this order on connections side by
#: side, so that they end close together, the last to start a short one. On the built-in study,
#: one thread each (2026-12-01): calibration 8.3 s (its ECE₀ draws), consistency_samples 5.2 s,
#: calibration_bins 4.0 s, discrimination 3.4 s, consistency 3.3 s, selective 2.8 s; on
#: 2026-12-03, consistency 2.8 s, selective_curve_counts 2.6 s, selective 1.6 s.
STORED = (
    "calibration",
    "consistency_samples",
    "calibration_bins",
    "discrimination",
    "consistency",
    "selective_curve_counts",
    "selective",
)
#: The stored view a commit leaves out where it would be large: the counts of the risk–coverage
#: curve have a row per distinct confidence of a cell, as many as the long table has rows where
#: confidences are continuous (the others are a few rows per cell). A commit stores them only
#: when their levels, at ``LEVEL_BYTES`` each (the level's DOUBLE, which does not compress when
#: confidences are continuous; 7.2 bytes per level on the built-in study), would take at most
#: ``CURVE_SHARE`` of the bytes of the study's parts: 1.4 M levels beside 34 MB of parts on the
#: built-in study, stored; 10⁷ levels beside 95 MB at 10⁷ rows of continuous confidences
#: without probability vectors, not stored (they would have added 14.5 s to a 47 s commit, and
#: about as many bytes as the parts).
CURVE_COUNTS = "selective_curve_counts"
CURVE_SHARE = 0.5
LEVEL_BYTES = 8
#: The view of the long table each stored view's ``X_from_rows`` reads: the parts of the
#: studies without X's stored rows. A run stores every view but ``CURVE_COUNTS`` or none
#: (written by an older relcol, a stored file removed, a commit out of memory), so those
#: share one.
UNSTORED = {
    view: "predictions_without_curve" if view == CURVE_COUNTS else "predictions_unstored"
    for view in STORED
}
#: The bin count the stored binned views (calibration, calibration_bins) were computed at;
#: a connection at another count computes them from rows.
STORED_BINS = 15
#: The ECE₀ draws R of the stored ``calibration`` rows (the view's R).
STORED_DRAWS = 100
#: The stored views that depend on the bin count.
BINNED = frozenset({"calibration_bins", "calibration"})

#: Macros; each is ``sql/macros/<name>.sql``.
MACROS: tuple[str, ...] = (
    "xorshift16",
    "mix32",
    "absorb32",
    "hash32",
    "uniform",
    "poisson_inverse",
    "poisson_weight",
    "bin_index",
    "ece_from_bins",
    "harmonic",
    "proba_entropy",
    "proba_margin",
    "cell_ids",
    "cell_rows",
    "bin_statistics",
    "calibration_bins",
    "calibration",
    "score_levels",
    "confidence_levels",
    "discrimination",
    "selective_curve_counts",
    "selective_curve",
    "selective",
    "consistency_layout",
    "consistency_units",
    "consistency_tally",
    "consistency_gram",
    "consistency_strata",
    "consistency_counts",
    "consistency_pairs",
    "consistency_samples",
    "consistency",
)


def sql_text(relative: str) -> str:
    """The text of ``sql/<relative>``, found through importlib.resources."""
    return resources.files("relcol.sql").joinpath(relative).read_text(encoding="utf-8")


def definitions(
    skip: Collection[str] = (),
    only: Collection[str] | None = None,
    stored: Collection[str] = (),
    settled: Collection[str] = (),
) -> list[str]:
    """Every macro and view definition (but the views in ``skip``; of ``only``, when given,
    only those, named as ``needed`` names them: ``macros/X``, ``views/X``), in the order they
    must run; ``stored`` names the views of ``STORED`` whose stored files are given
    (``stored_X`` reads them; for the others it is empty); ``settled`` those of them whose
    ``X_from_rows`` has no rows for good (``_settled``): it is then defined as no rows of the
    stored files' columns, and binds without the view's macros."""
    out = [sql_text(f"macros/{m}.sql") for m in MACROS if only is None or f"macros/{m}" in only]
    for view in VIEWS:
        if view in STORED and (only is None or f"views/stored_{view}" in only):
            out.append(_stored_view(view, view in stored))
        if view not in skip and (only is None or f"views/{view}" in only):
            base = _from_rows_of(view)
            out.append(_no_rows(base) if base in settled else sql_text(f"views/{view}.sql"))
    return out


def _from_rows_of(view: str) -> str | None:
    """``X`` for a view ``X_from_rows`` of a view ``X`` in ``STORED``; else None."""
    base = view.removesuffix("_from_rows")
    return base if base != view and base in STORED else None


def _no_rows(view: str) -> str:
    """``<view>_from_rows`` as no rows, with the columns and types of the stored rows (the
    rows of the view itself, written at commit)."""
    files = f"read_parquet(getvariable('relcol_stored_{view}'), hive_partitioning = false)"
    return f"CREATE OR REPLACE VIEW {view}_from_rows AS\nSELECT * FROM {files} LIMIT 0;"


def _settled(sources: Mapping[str, Sequence[str]], bins: int) -> frozenset[str]:
    """The views X of ``STORED`` whose every row is stored, so that ``X_from_rows`` has no
    rows: X's stored files are given, every study has its stored rows (``UNSTORED[X]`` is the
    empty schema file alone), and a binned view is asked at the stored bin count. Only
    for a connection whose variables cannot change (``connect``'s one query, reading only):
    ``SET VARIABLE relcol_bins`` must still reach the rows."""
    variables = _variables(sources, bins)
    return frozenset(
        view
        for view in _stored(sources)
        if len(variables[UNSTORED[view]]) == 1 and (view not in BINNED or int(bins) == STORED_BINS)
    )


def _stored_view(view: str, present: bool) -> str:
    """The definition of ``stored_<view>``: the rows of ``view`` stored at commit (at the
    connection's bin count, for a binned view, only when it is the stored one); without stored
    files, no rows with the columns of ``<view>_from_rows``."""
    if not present:
        return f"CREATE OR REPLACE VIEW stored_{view} AS SELECT * FROM {view}_from_rows LIMIT 0;"
    rows = f"SELECT * FROM read_parquet(getvariable('relcol_stored_{view}'), hive_partitioning = false)"
    if view in BINNED:
        rows += "\nWHERE getvariable('relcol_bins') = getvariable('relcol_stored_bins')"
    return f"CREATE OR REPLACE VIEW stored_{view} AS\n{rows};"


#: Words in a query that ask about the catalog (which views exist): every view is defined.
_CATALOG = re.compile(
    r"\b(show|pragma|information_schema|pg_catalog|sqlite_master|duckdb_\w+|table_info)\b",
    re.IGNORECASE,
)


def needed(query: str, settled: Collection[str] = ()) -> frozenset[str] | None:
    """The macros and views ``query`` can reach, as ``macros/X`` and ``views/X``: those it
    names (outside comments), and recursively those their definitions name; None (all of
    them) for a query that asks the catalog what exists, or that DuckDB cannot tokenize.
    Defining only these makes a query start in milliseconds instead of binding every view
    (some macros take a tenth of a second each to define), and gives the same answer: a name
    outside the set is not used. ``X_from_rows`` of a view X in ``settled`` names nothing
    (``definitions``)."""
    if _CATALOG.search(query):
        return None
    todo = _named(query)
    if todo is None:
        return None
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            settles = _from_rows_of(name.removeprefix("views/")) in settled  # macros: None
            todo |= set() if settles else _references(name)
    return frozenset(found)


_VIEW_NAMES = frozenset((*VIEWS, *(f"stored_{view}" for view in STORED)))
_EVERY = frozenset({*(f"macros/{m}" for m in MACROS), *(f"views/{v}" for v in _VIEW_NAMES)})


@functools.cache
def _references(name: str) -> frozenset[str]:
    """What the definition of ``name`` (``macros/X`` or ``views/X``) names."""
    view = name.removeprefix("views/")
    if view.startswith("stored_") and view.removeprefix("stored_") in STORED:
        return frozenset({f"views/{view.removeprefix('stored_')}_from_rows"})
    named = _named(sql_text(f"{name}.sql"))
    return _EVERY if named is None else frozenset(named)


def _named(text: str) -> set[str] | None:
    """The macros and views ``text`` names outside its comments (None if DuckDB cannot
    tokenize it). A name followed by ``(`` is a call of the macro of that name; any other
    mention (after FROM, or in a string literal, as a table macro names its source) is the
    view of that name, or the macro when no view has it. So the view ``calibration`` does not
    reach its namesake macro unless its own definition calls it."""
    try:
        tokens = [
            (token, kind) for _, token, kind in _tokens(text) if kind != duckdb.token_type.comment
        ]
    except duckdb.Error:
        return None
    found = set()
    for at, (token, kind) in enumerate(tokens):
        called = (
            kind != duckdb.token_type.string_const
            and at + 1 < len(tokens)
            and tokens[at + 1][0].lstrip().startswith("(")
        )
        for word in re.findall(r"\w+", token.lower()):
            if called and word in MACROS:
                found.add(f"macros/{word}")
            elif word in _VIEW_NAMES:
                found.add(f"views/{word}")
            elif word in MACROS:
                found.add(f"macros/{word}")
    return found


def _tokens(text: str) -> list[tuple[int, str, duckdb.token_type]]:
    """DuckDB's tokens of ``text``: (character offset, text up to the next token, type).
    DuckDB counts offsets in bytes of UTF-8; these are characters."""
    data = text.encode("utf-8")
    found = duckdb.tokenize(text)
    ends = [start for start, _ in found[1:]] + [len(data)]
    return [
        (
            len(data[:start].decode("utf-8", "replace")),
            data[start:end].decode("utf-8", "replace"),
            kind,
        )
        for (start, kind), end in zip(found, ends, strict=True)
    ]


def _absent(sources: Mapping[str, Sequence[str]]) -> list[str]:
    """Views over materialised report tables (``report_*``) whose files are not given: left
    undefined rather than failing (a caller may pass only the tables it has)."""
    return [v for v in VIEWS if v.startswith("report_") and v not in sources]


def connect(
    sources: Mapping[str, Sequence[str]],
    *,
    bins: int = 15,
    sandbox: bool = True,
    memory_limit: str | None = None,
    query: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection whose views read the given Parquet files.

    With ``query`` the connection is made for that one query: only the views and macros it
    can reach are defined (``needed``), so a query on one view does not wait for every
    other view to be bound; and, sandboxed, a stored view whose every row is stored reads
    those rows without binding the macros that would compute them (``_settled``).

    With ``sandbox`` (the default) the connection can read the listed files and
    nothing else, spills to a private temporary folder of its own (removed with the
    connection), loads no extension, and cannot change any of this; ``sandbox=False``
    is the user's explicit choice (``relcol sql --unsafe``). DuckDB's file settings
    cannot stop a write to a file it may read, so a sandboxed caller must also run only
    reading statements (``reading_only``).

    ``memory_limit`` (DuckDB's syntax, e.g. ``"4GB"``; default: half the machine's
    memory, ``default_memory_limit``) bounds the memory a query holds before it spills.

    ``sources`` maps a variable name without its ``relcol_`` prefix
    (``predictions``, ``classes``, ``corruptions``, ``runs``, ``report_calibration``)
    to a non-empty list of Parquet paths; a zero-row file with the right schema
    keeps a list non-empty in an empty warehouse. A view over a ``report_*`` table
    (derived, rebuilt by `relcol report`) whose file cannot be read is left undefined
    (``damaged`` tells why a query on it failed), so the rest of the warehouse stays usable.
    """
    # one reading query: its variables stay as set here, so what is stored is read as it is
    settled = _settled(sources, bins) if query is not None and sandbox else frozenset()
    con = duckdb.connect(":memory:")
    try:
        _configure(
            con,
            sources,
            bins=bins,
            sandbox=sandbox,
            memory_limit=memory_limit,
            only=None if query is None else needed(query, settled),
            settled=settled,
        )
    except BaseException:
        con.close()
        raise
    return con


def _variables(sources: Mapping[str, Sequence[str]], bins: int) -> dict[str, object]:
    """The DuckDB variables (without their ``relcol_`` prefix) the views read: every source's
    files (those of ``UNSTORED``, when not given, are every part: nothing is stored), the
    connection's bin count and the stored one."""
    files = {name: list(paths) for name, paths in sources.items()}
    for source in dict.fromkeys(UNSTORED.values()):
        files.setdefault(source, files.get("predictions", []))
    return {**files, "bins": int(bins), "stored_bins": STORED_BINS}


def _stored(sources: Mapping[str, Sequence[str]]) -> list[str]:
    """The views of ``STORED`` whose stored files ``sources`` gives."""
    return [view for view in STORED if sources.get(f"stored_{view}")]


def _configure(con, sources, *, bins, sandbox, memory_limit, only, settled) -> None:
    for name, value in _variables(sources, bins).items():
        con.execute(f"SET VARIABLE relcol_{_identifier(name)} = ?", [value])
    con.execute("SET enable_progress_bar = false")  # it would print into relcol's own output
    try:
        con.execute("SET memory_limit = ?", [memory_limit or default_memory_limit()])
    except duckdb.Error as exc:
        raise WarehouseError(f"memory limit {memory_limit!r}: {_first_line(exc)}") from None
    for statement in definitions(_absent(sources), only, _stored(sources), settled):
        _define(con, _deferred(statement), sources)
    if sandbox:
        # Queries may read the listed files and nothing else, load no extension, spill
        # only into a folder no one else knows (DuckDB may always read and write its
        # temp_directory: the default, ./.tmp, would expose the caller's folder), and
        # cannot switch any of this off (lock_configuration).
        private = tempfile.mkdtemp(prefix="relcol-sql-")
        weakref.finalize(con, shutil.rmtree, private, ignore_errors=True)
        con.execute("SET temp_directory = ?", [os.path.join(private, "spill")])
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute(
            "SET allowed_paths = ?", [sorted({f for files in sources.values() for f in files})]
        )
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")


def _deferred(statement: str) -> str:
    """``statement``, a view over other views and macros bound when a query first uses it
    rather than when it is made (DuckDB's ``DEFER_BINDING``): binding one such view binds all
    it reads, a tenth of a second for ``calibration``, which a query that reaches it through
    another view would pay twice. A view that reads files itself is bound when it is made, so
    that an unreadable file is found then (``_define``). The DuckDB shell of ``init_script``
    does not know the option: its definitions are the plain ones."""
    if "read_parquet(" in statement:
        return statement
    return re.sub(
        r"^(CREATE (?:OR REPLACE )?VIEW \w+) AS\b",
        r"\1 WITH (DEFER_BINDING) AS",
        statement,
        count=1,
        flags=re.MULTILINE,
    )


def _define(con, statement: str, sources: Mapping[str, Sequence[str]]) -> None:
    """Run one macro or view definition; a derived ``report_*`` view whose files cannot be
    read is left undefined, and ``damaged`` says why."""
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        view = _defined_view(statement)
        if view is None or not view.startswith("report_"):
            raise WarehouseError(f"cannot read the warehouse: {_first_line(exc)}") from None
        _DAMAGED.setdefault(con, {})[view] = (
            f"the materialised table {view} cannot be read ({_first_line(exc)}); "
            "`relcol report` rebuilds it, `relcol check` lists damaged files"
        )


#: connection -> {view: why it is undefined}, for the derived views ``connect`` left out.
_DAMAGED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def damaged(con: duckdb.DuckDBPyConnection, error: BaseException) -> str | None:
    """Why ``error`` (a query's failure on ``con``) happened, when it names a derived view
    that ``connect`` had to leave undefined because its files cannot be read."""
    for view, why in _DAMAGED.get(con, {}).items():
        if view in str(error):
            return why
    return None


def _defined_view(statement: str) -> str | None:
    """The name of the view a ``CREATE [OR REPLACE] VIEW name AS`` statement defines."""
    found = re.search(r"^CREATE (?:OR REPLACE )?VIEW (\w+)", statement, re.MULTILINE)
    return found.group(1) if found else None


def default_memory_limit(shares: int = 1) -> str:
    """Half the machine's physical memory, in DuckDB's syntax (a query that needs more
    spills to disk, then fails with an out-of-memory error, instead of starving the machine);
    one of ``shares`` equal parts of it, for connections that run at the same time."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 * 2**30
    return f"{max(total // 2 // shares // 2**20, 256)}MB"


#: The statement types a sandboxed query may hold (DESCRIBE, SUMMARIZE, SHOW, FROM …,
#: VALUES and WITH parse as SELECT); EXPLAIN is judged by the statement it explains.
READING = frozenset({"SELECT"})


def reading_only(query: str) -> None:
    """Refuse ``query`` unless every statement in it only reads.

    Each statement is classified by DuckDB's own parser; an ``EXPLAIN [ANALYZE] [(…)]``
    is classified by the statement it explains (``EXPLAIN ANALYZE`` runs it), found with
    DuckDB's tokenizer so that comments cannot hide it. Anything this cannot classify is
    refused.
    """
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise WarehouseError(f"SQL error: {_first_line(exc)}") from None
    for statement in statements:
        kind = _kind(statement.query)
        if kind not in READING:
            raise WarehouseError(
                "relcol sql runs reading statements only (SELECT, DESCRIBE, SUMMARIZE, "
                f"EXPLAIN of a SELECT …); this query has {kind}. Pass --unsafe to allow it."
            )


def _kind(text: str, depth: int = 0) -> str:
    """The type of the one statement in ``text``, looking through EXPLAIN."""
    try:
        [statement] = duckdb.extract_statements(text)
    except (duckdb.Error, ValueError):
        return "an unparsable statement"
    if statement.type.name != "EXPLAIN":
        return statement.type.name
    inner = _explained(statement.query)
    if inner is None or depth > 3:
        return "an EXPLAIN that could not be checked"
    kind = _kind(inner, depth + 1)
    return kind if kind in READING else f"EXPLAIN of {kind}"


def _explained(text: str) -> str | None:
    """The statement after ``EXPLAIN``, an optional ``ANALYZE`` and an optional
    parenthesised option list; None when ``text`` does not have that shape."""
    found = [
        (start, token, kind)
        for start, token, kind in _tokens(text)
        if kind != duckdb.token_type.comment
    ]
    words = [token.strip().upper() for _, token, _ in found]
    starts = [start for start, _, _ in found]
    if not words or words[0] != "EXPLAIN":
        return None
    i = 1
    if i < len(words) and words[i] == "ANALYZE":
        i += 1
    if i < len(words) and words[i] == "(":
        depth = 0
        while i < len(words):
            depth += {"(": 1, ")": -1}.get(words[i], 0)
            i += 1
            if depth == 0:
                break
    if i >= len(words):
        return None
    return text[starts[i] :]


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def init_script(
    sources: Mapping[str, Sequence[str]], *, bins: int = 15, memory_limit: str | None = None
) -> str:
    """The same connection as SQL text, for ``duckdb -init`` (the shell cannot bind parameters)."""
    lines = ["-- relcol: views over the warehouse; generated by `relcol shell`."]
    lines.append(f"SET memory_limit = {sql_literal(memory_limit or default_memory_limit())};")
    for name, value in _variables(sources, bins).items():
        literal = (
            "[" + ", ".join(sql_literal(f) for f in value) + "]"
            if isinstance(value, list)
            else str(int(value))
        )
        lines.append(f"SET VARIABLE relcol_{_identifier(name)} = {literal};")
    lines.extend(definitions(_absent(sources), stored=_stored(sources)))
    return "\n".join(lines) + "\n"


def sql_literal(text: str) -> str:
    """``text`` as a SQL string literal: quotes doubled, NUL refused."""
    if "\x00" in text:
        raise ValueError("a SQL string literal cannot contain NUL")
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"not a plain identifier: {name!r}")
    return name


def connect_frame(workdir, predictions, *, bins: int = 15) -> duckdb.DuckDBPyConnection:
    """Views over one in-memory predictions frame, for tests and notebooks.

    The frame is conformed to the long table's schema and written to
    ``workdir/predictions.parquet``; the side tables are empty.
    """
    from pathlib import Path

    from relcol.store import _schema

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    tables = {
        "predictions": _schema.conform(predictions, _schema.PREDICTIONS),
        "classes": _schema.empty(_schema.CLASSES),
        "corruptions": _schema.empty(_schema.CORRUPTIONS),
        "runs": _schema.empty(_schema.RUNS),
        "annotations": _schema.empty(_schema.ANNOTATIONS),
        "report_calibration": _schema.empty({k: _schema.PREDICTIONS[k] for k in _schema.CELL}),
    }
    sources = {}
    for name, frame in tables.items():
        path = workdir / f"{name}.parquet"
        frame.write_parquet(path)
        sources[name] = [str(path)]
    return connect(sources, bins=bins)
