"""The warehouse folder as a reader sees it: which files each view reads, and SQL over them.

Nothing here needs Polars, so `relcol sql` and `relcol shell` start with DuckDB alone;
``Warehouse`` (``_warehouse``) adds the frames and the writes.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Self, TypeVar

import duckdb

from relcol.checks import check_bins, is_number
from relcol.errors import ParameterError, WarehouseError
from relcol.store._sql import (
    STORED,
    UNSTORED,
    connect,
    damaged,
    init_script,
    reading_only,
)

T = TypeVar("T")

ENV = "RELCOL_WAREHOUSE"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

#: Side tables stored beside each ingest's parts: view name -> file name.
SIDE_FILES = {
    "classes": "_classes.parquet",
    "corruptions": "_corruptions.parquet",
    "runs": "_run.parquet",
    "annotations": "_annotations.parquet",  # prediction files only
}
#: Seconds a `WarehouseFolder.query` may run before it is stopped (None: no limit).
QUERY_TIMEOUT = 600.0
#: Listings of the warehouse's files a snapshot tries before it gives up on a warehouse that
#: changes under every one (``WarehouseFolder.sources``).
_LISTINGS = 10
#: Tables materialised by `relcol report`: view name -> folder under metrics/.
MATERIALISED = {
    "report_calibration": "calibration",
    "report_trends": "trends",
    "report_thresholds": "thresholds",
    "report_differences": "differences",
}


def check_name(name: object, what: str = "study name") -> str:
    """A name that becomes a folder: letters, digits, ``_ . -``; no ``..``, slashes or NUL."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise WarehouseError(
            f"{what} must be 1-64 characters of letters, digits, '_', '.', '-', starting with a "
            f"letter or digit and without '..'. Got {name!r}."
        )
    return name


class WarehouseFolder:
    """A warehouse folder, read: its studies, each view's files and SQL over them. Opening
    one creates nothing; ``Warehouse`` adds its frames and its writes."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise WarehouseError(f"warehouse {self.root} exists and is not a folder")

    @classmethod
    def default(cls, path: str | os.PathLike[str] | None = None) -> Self:
        """``path``, else ``$RELCOL_WAREHOUSE``, else ``./warehouse``."""
        return cls(path or os.environ.get(ENV) or "warehouse")

    def exists(self) -> bool:
        return (self.root / "_schema").is_dir() and (self.root / "predictions").is_dir()

    def require(self) -> None:
        """Refuse to read a warehouse that does not exist (a mistyped path is not an empty
        warehouse, and reading never creates one)."""
        if not self.exists():
            raise WarehouseError(
                f"no warehouse at {self.root} (`relcol ingest` creates one; check --warehouse "
                f"or ${ENV})"
            )

    def study_dir(self, study: str) -> Path:
        return self.root / "predictions" / f"study={check_name(study)}"

    def studies(self) -> list[str]:
        return sorted(
            p.name.removeprefix("study=") for p in (self.root / "predictions").glob("study=*")
        )

    def sources(self, study: str | None = None, *, derived: bool = True) -> dict[str, list[str]]:
        """A snapshot of every view's files: the schema file first, then committed files
        (of ``study`` only, when given: every view then covers that one study). Without
        ``derived`` the tables materialised by `relcol report` are left out (their views
        are then undefined).

        A replace that swaps a study away while its run folder is listed would leave that
        study out of the snapshot (its parts listed from a folder already gone), so the
        listing is taken again until every run folder it read is still there at its end."""
        # a study name is checked (no glob or path characters) before it is globbed on
        pattern = "study=*" if study is None else self.study_dir(self.require_study(study)).name
        self.require()
        for _ in range(_LISTINGS):
            runs = sorted((self.root / "predictions").glob(f"{pattern}/run_id=*"))
            out = self._listing(runs, pattern, derived)
            if all(run.is_dir() for run in runs):
                return out
        raise WarehouseError(
            f"the warehouse {self.root} changed under every one of {_LISTINGS} listings of its "
            "files (ingests with --replace running meanwhile); run it again"
        )

    def _listing(self, runs: list[Path], pattern: str, derived: bool) -> dict[str, list[str]]:
        schema = str(self.root / "_schema" / "predictions.parquet")
        out = {"predictions": [schema]} | {source: [schema] for source in UNSTORED.values()}
        for run in runs:
            parts = [str(p) for p in sorted(run.glob("part-*.parquet"))]
            out["predictions"] += parts
            for source in {UNSTORED[view] for view in STORED if not _has_stored(run, view)}:
                out[source] += parts
        for view in STORED:
            files = [str(run / stored_file(view)) for run in runs if _has_stored(run, view)]
            if files:
                out[f"stored_{view}"] = files
        for view, file in SIDE_FILES.items():
            out[view] = [str(self.root / "_schema" / f"{view}.parquet")]
            out[view] += [str(run / file) for run in runs if (run / file).exists()]
        for view, folder in MATERIALISED.items() if derived else ():
            out[view] = [str(self.root / "_schema" / f"{view}.parquet")]
            out[view] += [
                str(p) for p in sorted((self.root / "metrics" / folder).glob(f"{pattern}.parquet"))
            ]
        return out

    def connect(
        self,
        *,
        bins: int = 15,
        sandbox: bool = True,
        study: str | None = None,
        memory_limit: str | None = None,
    ) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with every view over a snapshot of the warehouse
        (of one ``study``, when given: the views then read that study's files only, which is
        much faster than filtering a view of every study, since a view such as
        ``consistency`` is computed before an outer ``WHERE`` applies).

        With ``sandbox`` it reads only the warehouse's committed files and writes nothing
        (as long as the statements run on it only read: see ``sql``).
        """
        return connect(
            self.sources(study), bins=check_bins(bins), sandbox=sandbox, memory_limit=memory_limit
        )

    def query(
        self,
        query: str,
        params: list | dict | None = None,
        *,
        consume: Callable[[duckdb.DuckDBPyRelation | None], T],
        bins: int = 15,
        unsafe: bool = False,
        study: str | None = None,
        timeout: float | None = QUERY_TIMEOUT,
        memory_limit: str | None = None,
    ) -> T:
        """Run ``query`` over the views (a fresh snapshot; of one ``study`` when given) and
        return what ``consume`` makes of its result (None for a statement without one), read
        while the query's connection is open and its time limit runs.

        Values go in ``params`` (``?`` or ``$name`` placeholders), never into the text.
        Only reading statements (SELECT, DESCRIBE, SUMMARIZE, EXPLAIN of a SELECT …) run,
        and only the warehouse's files can be read, unless ``unsafe`` says otherwise.
        A query running longer than ``timeout`` seconds (None: no limit, as relcol's own
        computations ask) is stopped;
        ``memory_limit`` (e.g. ``"4GB"``) bounds its memory (default: half the machine's).
        If a concurrent ``replace`` swaps files away under the query, it runs again on a
        new snapshot.
        """
        if timeout is not None and not (is_number(timeout) and timeout > 0):
            raise ParameterError(
                f"timeout must be a number of seconds > 0, or None. Got {timeout!r}."
            )
        bins = check_bins(bins)
        if not isinstance(query, str) or not _has_statement(query):
            raise WarehouseError(f"the SQL query is empty (no statement). Got {query!r}.")
        if not unsafe:
            reading_only(query)
        for attempt in range(3):
            sources = self.sources(study)
            files = _identities(sources)
            try:
                return self._run(
                    query, params, consume, sources, bins, unsafe, timeout, memory_limit
                )
            except _Failed as failure:
                # retried only when files changed under the query (a concurrent replace)
                unchanged = self.sources(study) == sources and _identities(sources) == files
                if attempt == 2 and not unchanged:
                    raise WarehouseError(
                        f"the warehouse {self.root} changed under the query three times (an "
                        "ingest with --replace running meanwhile); run it again"
                    ) from None
                if unchanged:
                    text = str(failure)
                    names = str(self.root) in text and "relcol check" not in text
                    hint = "; `relcol check` verifies the warehouse's files" if names else ""
                    raise WarehouseError(f"{text}{hint}") from None
        raise AssertionError("unreachable")

    def _run(self, query, params, consume, sources, bins, unsafe, timeout, memory_limit):
        try:
            con = connect(
                sources, bins=bins, sandbox=not unsafe, memory_limit=memory_limit, query=query
            )
        except WarehouseError as exc:
            raise _Failed(str(exc)) from None
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            con.interrupt()

        timer = threading.Timer(timeout, stop) if timeout is not None else None
        try:
            if timer is not None:
                timer.daemon = True
                timer.start()
            return consume(con.sql(query, params=params))
        except (duckdb.Error, RuntimeError) as exc:
            if expired.is_set():
                raise WarehouseError(
                    f"the query was stopped after {timeout:g} s (its time limit: --timeout)"
                ) from None
            interrupted = isinstance(exc, duckdb.InterruptException) or (
                isinstance(exc, RuntimeError) and "interrupted" in str(exc).lower()
            )
            if interrupted:  # Ctrl-C: DuckDB reports it as an error of its own
                raise KeyboardInterrupt from None
            if not isinstance(exc, duckdb.Error):
                raise
            why = damaged(con, exc)
            raise _Failed(why or f"SQL error: {str(exc).splitlines()[0]}") from None
        finally:
            if timer is not None:
                timer.cancel()
            con.close()

    def init_script(
        self, *, bins: int = 15, study: str | None = None, memory_limit: str | None = None
    ) -> str:
        return init_script(self.sources(study), bins=check_bins(bins), memory_limit=memory_limit)

    def _unknown_study(self, study: str) -> str:
        have = self.studies()
        return f"no study {study!r} in warehouse {self.root}; " + (
            f"it holds: {', '.join(have)}" if have else "it is empty (run `relcol ingest` first)"
        )

    def require_study(self, study: str | None) -> str:
        """``study`` if present; with None, the only study there is."""
        self.require()
        have = self.studies()
        if study is None:
            if len(have) == 1:
                return have[0]
            if not have:
                raise WarehouseError(f"warehouse {self.root} is empty: run `relcol ingest` first")
            raise WarehouseError(
                f"warehouse {self.root} holds several studies ({', '.join(have)}); choose one with --study"
            )
        check_name(study)
        if study not in have:
            raise WarehouseError(self._unknown_study(study))
        return study


def _identities(sources: dict[str, list[str]]) -> list[tuple[int, int] | None]:
    """Each source file's (inode, modification time), None where it is gone: a replace that
    swapped a study away and back under a query changes them even if the names are equal."""
    out = []
    for files in sources.values():
        for file in files:
            try:
                st = os.stat(file)
            except OSError:
                out.append(None)
                continue
            out.append((st.st_ino, st.st_mtime_ns))
    return out


class _Failed(Exception):
    """A query failed; `WarehouseFolder.query` decides whether the warehouse changed under it."""


def stored_file(view: str) -> str:
    """The file of a run folder that holds the stored rows of ``view`` (one of ``STORED``)."""
    return f"_stored_{view}.parquet"


def _has_stored(run: Path, view: str) -> bool:
    """Whether a run folder holds the stored rows of ``view`` (one of ``STORED``): the files
    of every view computed from the same ``UNSTORED`` source, which are stored together (else
    the run's rows of them all are computed from its parts: written by an older relcol, a
    stored file removed, or the curve's counts left out as large)."""
    return all((run / stored_file(v)).exists() for v in STORED if UNSTORED[v] == UNSTORED[view])


def _has_statement(query: str) -> bool:
    """Whether ``query`` holds a statement (not only blanks, comments or semicolons); a
    query DuckDB cannot parse counts as one, so running it reports the syntax error."""
    try:
        return bool(duckdb.extract_statements(query))
    except duckdb.Error:
        return True
