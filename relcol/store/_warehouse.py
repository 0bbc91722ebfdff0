"""The warehouse folder: committed ingests as hive-style Parquet, published atomically.

Layout (``RELCOL_WAREHOUSE``, ``--warehouse`` or ``./warehouse``)::

    README.md
    _schema/<table>.parquet                       zero-row files fixing each table's types
    _staging/<run_id>/                            an ingest in progress: invisible to readers
    predictions/study=<S>/run_id=<R>/part-*.parquet   the long table of one committed ingest
                                    /_run.parquet, _classes.parquet, _corruptions.parquet
                                    /_annotations.parquet (prediction files: agreement, split)
    metrics/<table>/study=<S>.parquet             tables materialised by `relcol report`

An ingest writes everything under ``_staging/<run_id>/study=<S>/`` and commits
with one ``rename`` of that folder to ``predictions/study=<S>``: a reader lists
either the whole study or none of it, a crash leaves only an invisible staging
folder, and since a rename onto a non-empty folder fails, a later ingest can
never overwrite an earlier one's files. Re-ingesting a study is refused unless
``replace`` is asked for, which swaps the folder whole (for the moment between
the two renames the study is absent, never doubled).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from relcol.errors import WarehouseError
from relcol.metrics._params import check_bins
from relcol.store import _schema
from relcol.store._sql import connect, init_script

ENV = "RELCOL_WAREHOUSE"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

README = """\
# warehouse/

relcol's default data location (`relcol ingest` writes here unless given
`--warehouse PATH` or the `RELCOL_WAREHOUSE` environment variable). Its data is
git-ignored; only this README is tracked.

- `predictions/study=<S>/run_id=<R>/part-*.parquet`: the long table, one row per
  prediction (see the project README for the columns), written once by one ingest
  and never modified; `_run.parquet`, `_classes.parquet` and `_corruptions.parquet`
  beside them are that ingest's side tables (and `_annotations.parquet`, when an
  ingested prediction file had agreement or split columns).
- `metrics/<table>/study=<S>.parquet`: tables materialised by `relcol report`.
- `_schema/`: zero-row files that fix each table's column types.
- `_staging/`: ingests in progress; never read. A crashed ingest leaves a folder
  here that the next ingest removes.

Query it with `relcol sql "..."`, `relcol shell`, or `relcol.open_warehouse()` in Python.
Delete a study by deleting its `predictions/study=<S>` folder.
"""

#: Side tables stored beside each ingest's parts: view name -> (file name, schema).
SIDE = {
    "classes": ("_classes.parquet", _schema.CLASSES),
    "corruptions": ("_corruptions.parquet", _schema.CORRUPTIONS),
    "runs": ("_run.parquet", _schema.RUNS),
    "annotations": ("_annotations.parquet", _schema.ANNOTATIONS),  # prediction files only
}
#: DuckDB statement types `Warehouse.sql` runs without ``unsafe``.
READING = frozenset({"SELECT", "EXPLAIN"})
#: Tables materialised by `relcol report`: view name -> folder under metrics/.
MATERIALISED = {
    "report_calibration": "calibration",
    "report_trends": "trends",
    "report_thresholds": "thresholds",
    "report_differences": "differences",
}
#: The columns of each materialised view in a warehouse without reports (its zero-row
#: schema file): the keys of its grain, typed as in the long table.
MATERIALISED_KEYS = {
    "report_calibration": _schema.CELL,
    "report_trends": ("study", "dataset", "model", "corruption", "label"),  # per curve
    "report_thresholds": ("study", "dataset", "model", "corruption", "label"),
    "report_differences": _schema.CELL,
}


def check_name(name: object, what: str = "study name") -> str:
    """A name that becomes a folder: letters, digits, ``_ . -``; no ``..``, slashes or NUL."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise WarehouseError(
            f"{what} must be 1-64 characters of letters, digits, '_', '.', '-', starting with a "
            f"letter or digit and without '..'. Got {name!r}."
        )
    return name


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}Z-{secrets.token_hex(4)}"


class Warehouse:
    """A warehouse folder. Opening one creates it (and its schema files) if absent."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise WarehouseError(f"warehouse {self.root} exists and is not a folder")
        try:
            for sub in ("_schema", "_staging", "predictions", "metrics"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            if not (self.root / "README.md").exists():
                _atomic_write_text(self.root / "README.md", README)
            schemas = {**{v: s for v, (_, s) in SIDE.items()}, "predictions": _schema.PREDICTIONS}
            for view in MATERIALISED:
                keys = MATERIALISED_KEYS.get(view, _schema.CELL)
                schemas[view] = {k: _schema.PREDICTIONS[k] for k in keys}
            for view, schema in schemas.items():
                path = self.root / "_schema" / f"{view}.parquet"
                if not path.exists():
                    _atomic_write_parquet(path, _schema.empty(schema))
        except OSError as exc:
            raise WarehouseError(
                f"cannot use warehouse {self.root}: {exc.strerror or exc}"
            ) from None

    @classmethod
    def default(cls, path: str | os.PathLike[str] | None = None) -> Warehouse:
        """``path``, else ``$RELCOL_WAREHOUSE``, else ``./warehouse``."""
        return cls(path or os.environ.get(ENV) or "warehouse")

    # -- reading -----------------------------------------------------------------

    def study_dir(self, study: str) -> Path:
        return self.root / "predictions" / f"study={check_name(study)}"

    def studies(self) -> list[str]:
        return sorted(
            p.name.removeprefix("study=") for p in (self.root / "predictions").glob("study=*")
        )

    def sources(self, study: str | None = None) -> dict[str, list[str]]:
        """A snapshot of every view's files: the schema file first, then committed files
        (of ``study`` only, when given: every view then covers that one study)."""
        # a study name is checked (no glob or path characters) before it is globbed on
        pattern = "study=*" if study is None else self.study_dir(self.require_study(study)).name
        runs = sorted((self.root / "predictions").glob(f"{pattern}/run_id=*"))
        out = {"predictions": [str(self.root / "_schema" / "predictions.parquet")]}
        out["predictions"] += [str(p) for run in runs for p in sorted(run.glob("part-*.parquet"))]
        for view, (file, _) in SIDE.items():
            out[view] = [str(self.root / "_schema" / f"{view}.parquet")]
            out[view] += [str(run / file) for run in runs if (run / file).exists()]
        for view, folder in MATERIALISED.items():
            out[view] = [str(self.root / "_schema" / f"{view}.parquet")]
            out[view] += [
                str(p) for p in sorted((self.root / "metrics" / folder).glob(f"{pattern}.parquet"))
            ]
        return out

    def connect(
        self, *, bins: int = 15, sandbox: bool = True, study: str | None = None
    ) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with every view over a snapshot of the warehouse
        (of one ``study``, when given: the views then read that study's files only, which is
        much faster than filtering a view of every study, since a view such as
        ``consistency`` is computed before an outer ``WHERE`` applies).

        With ``sandbox`` it reads only the warehouse's committed files and writes nothing.
        """
        return connect(self.sources(study), bins=check_bins(bins), sandbox=sandbox)

    def sql(
        self,
        query: str,
        params: list | dict | None = None,
        *,
        bins: int = 15,
        unsafe: bool = False,
        study: str | None = None,
    ) -> pl.DataFrame:
        """Run ``query`` over the views (a fresh snapshot; of one ``study`` when given) and
        return a Polars frame.

        Values go in ``params`` (``?`` or ``$name`` placeholders), never into the text.
        Only reading statements (SELECT, DESCRIBE, SUMMARIZE, EXPLAIN …) run, and only
        the warehouse's files can be read, unless ``unsafe`` says otherwise.
        """
        if not isinstance(query, str) or not _has_statement(query):
            raise WarehouseError(f"the SQL query is empty (no statement). Got {query!r}.")
        con = self.connect(bins=bins, sandbox=not unsafe, study=study)
        try:
            if not unsafe:
                kinds = {s.type.name for s in con.extract_statements(query)}
                writing = sorted(kinds - READING)
                if writing:
                    raise WarehouseError(
                        f"relcol sql runs reading statements only (SELECT, DESCRIBE, EXPLAIN …); "
                        f"this query has {', '.join(writing)}. Pass --unsafe to allow it."
                    )
            relation = con.sql(query, params=params)
            return pl.DataFrame() if relation is None else relation.pl()
        except duckdb.Error as exc:
            raise WarehouseError(f"SQL error: {str(exc).splitlines()[0]}") from None
        finally:
            con.close()

    def init_script(self, *, bins: int = 15, study: str | None = None) -> str:
        return init_script(self.sources(study), bins=check_bins(bins))

    def predictions(self, study: str | None = None) -> pl.LazyFrame:
        """The long table as a Polars LazyFrame (a snapshot of committed ingests; of one
        ``study``'s files only, when given, as the views of ``connect(study=…)``)."""
        return pl.scan_parquet(self.sources(study)["predictions"], hive_partitioning=False)

    def _unknown_study(self, study: str) -> str:
        have = self.studies()
        return f"no study {study!r} in warehouse {self.root}; " + (
            f"it holds: {', '.join(have)}" if have else "it is empty (run `relcol ingest` first)"
        )

    def require_study(self, study: str | None) -> str:
        """``study`` if present; with None, the only study there is."""
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

    # -- writing -----------------------------------------------------------------

    @contextmanager
    def ingest(
        self, study: str, *, replace: bool = False, run_id: str | None = None
    ) -> Iterator[Staging]:
        """Stage an ingest of ``study``; commit on normal exit, discard on any exception.

        ``run_id`` names the ingest (default: a new time-stamped id); a study passes a
        content address so that the same spec gives the same rows, byte for byte.
        """
        check_name(study)
        if not replace and self.study_dir(study).exists():
            raise WarehouseError(
                f"study {study!r} is already in warehouse {self.root}; ingest it under another name, "
                "or pass --replace to replace it wholesale"
            )
        self._remove_stale_staging()
        staging = Staging(self, study, run_id or new_run_id())
        try:
            yield staging
        except BaseException:
            staging.discard()
            raise
        staging.commit(replace=replace)

    def write_table(self, view: str, study: str, frame: pl.DataFrame) -> Path:
        """Materialise one study's table (atomically replacing the previous one)."""
        folder = self.root / "metrics" / MATERIALISED[view]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"study={check_name(study)}.parquet"
        _atomic_write_parquet(path, frame)
        return path

    def _remove_stale_staging(self) -> None:
        """Remove staging folders of ingests on this host whose process is gone."""
        host = socket.gethostname()
        for folder in (self.root / "_staging").glob("*"):
            try:
                owner_host, pid = (folder / "_owner").read_text().split(":")
            except (OSError, ValueError):
                continue
            if owner_host == host and not _alive(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)


class Staging:
    """The invisible folder one ingest writes into before it commits."""

    def __init__(self, warehouse: Warehouse, study: str, run_id: str) -> None:
        self.warehouse = warehouse
        self.study = study
        self.run_id = check_name(run_id, "run id")
        self.base = warehouse.root / "_staging" / f"{run_id}-{secrets.token_hex(4)}"
        self.folder = self.base / f"study={study}" / f"run_id={self.run_id}"
        self.folder.mkdir(parents=True)
        (self.base / "_owner").write_text(f"{socket.gethostname()}:{os.getpid()}")
        self.parts = 0
        self.rows = 0

    def write_part(self, frame: pl.DataFrame) -> None:
        """Append one part of the long table (conformed to its schema)."""
        self.record_part(write_part_file(frame, self.part_path(self.parts)))

    def part_path(self, index: int) -> Path:
        """Where part ``index`` goes: a worker elsewhere may write it (`write_part_file`)."""
        return self.folder / f"part-{index:05d}.parquet"

    def record_part(self, rows: int) -> None:
        """Count a part written to ``part_path`` by `write_part_file`."""
        self.parts += 1
        self.rows += rows

    def write_side(self, view: str, frame: pl.DataFrame) -> None:
        file, schema = SIDE[view]
        _schema.conform(frame, schema).write_parquet(self.folder / file, compression="zstd")

    def write_run(
        self, *, kind: str, spec: str, versions: dict[str, str], started_at: datetime, cells: int
    ) -> None:
        """Write this ingest's one-row ``runs`` record: its id, the rows written so far, the
        spec and its SHA-256, the package versions, start and finish times."""
        record = {
            "run_id": [self.run_id],
            "study": [self.study],
            "kind": [kind],
            "spec": [spec],
            "spec_hash": [hashlib.sha256(spec.encode()).hexdigest()],
            "versions": [json.dumps(versions, sort_keys=True)],
            "started_at": [started_at],
            "finished_at": [datetime.now(UTC)],
            "rows": [self.rows],
            "cells": [cells],
            "status": ["complete"],
        }
        self.write_side("runs", pl.DataFrame(record, schema=_schema.RUNS))

    def commit(self, *, replace: bool) -> None:
        target = self.warehouse.study_dir(self.study)
        source = self.base / f"study={self.study}"
        trash = None
        if replace and target.exists():
            trash = self.base / "_replaced"
            os.rename(target, trash)
        try:
            os.rename(source, target)
        except OSError:
            if trash is not None:
                os.rename(trash, target)
            self.discard()
            raise WarehouseError(
                f"study {self.study!r} was committed to {self.warehouse.root} by another ingest meanwhile; "
                "nothing was written"
            ) from None
        shutil.rmtree(self.base, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def write_part_file(frame: pl.DataFrame, path: Path) -> int:
    """Write one part of the long table, conformed to its schema; return its row count."""
    frame = _schema.conform(frame, _schema.PREDICTIONS)
    frame.write_parquet(path, compression="zstd")
    return frame.height


def _has_statement(query: str) -> bool:
    """Whether ``query`` holds a statement (not only blanks, comments or semicolons); a
    query DuckDB cannot parse counts as one, so running it reports the syntax error."""
    try:
        return bool(duckdb.extract_statements(query))
    except duckdb.Error:
        return True


def _atomic_write_parquet(path: Path, frame: pl.DataFrame) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    frame.write_parquet(tmp, compression="zstd")
    os.replace(tmp, path)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
