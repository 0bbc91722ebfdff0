"""The warehouse folder: committed ingests as hive-style Parquet, published atomically.

Layout (``RELCOL_WAREHOUSE``, ``--warehouse`` or ``./warehouse``)::

    README.md
    _schema/<table>.parquet                       zero-row files fixing each table's types
    _staging/<run_id>/                            an ingest in progress: invisible to readers
    predictions/study=<S>/run_id=<R>/part-*.parquet   the long table of one committed ingest
                                    /_run.parquet, _classes.parquet, _corruptions.parquet
                                    /_annotations.parquet (prediction files: agreement, split)
    metrics/<table>/study=<S>.parquet             tables materialised by `relcol report`

An ingest writes everything under ``_staging/<run_id>/study=<S>/``, records the
SHA-256 of each file (``_checksums.json``), fsyncs files and folders, and commits
with one ``rename`` of that folder to ``predictions/study=<S>``: a reader lists
either the whole study or none of it, a crash leaves only an invisible staging
folder, and since a rename onto a non-empty folder fails, a later ingest can
never overwrite an earlier one's files. Re-ingesting a study is refused unless
``replace`` is asked for, which swaps the two folders in one step where the system
can (Linux ``renameat2``); elsewhere it takes two renames, and a crash between them
is completed by the next write (``recover``).

Opening a warehouse creates nothing: only a write (an ingest) creates the folder,
and removes what it created if it fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from relcol._cluster import available_cores
from relcol.errors import WarehouseError
from relcol.store import _files, _schema
from relcol.store._chunks import chunk_spans
from relcol.store._folder import (
    MATERIALISED,
    QUERY_TIMEOUT,
    SIDE_FILES,
    WarehouseFolder,
    check_name,
    stored_file,
)
from relcol.store._sql import (
    CURVE_COUNTS,
    CURVE_SHARE,
    LEVEL_BYTES,
    STORED,
    STORED_BINS,
    UNSTORED,
    connect,
    default_memory_limit,
    sql_literal,
)

README = """\
# warehouse/

relcol's default data location (`relcol ingest` writes here unless given
`--warehouse PATH` or the `RELCOL_WAREHOUSE` environment variable). Its data is
git-ignored; only this README is tracked.

- `predictions/study=<S>/run_id=<R>/part-*.parquet`: the long table, one row per
  prediction (see the project README for the columns), written once by one ingest
  and never modified; `_run.parquet`, `_classes.parquet` and `_corruptions.parquet`
  beside them are that ingest's side tables (and `_annotations.parquet`, when an
  ingested prediction file had agreement or split columns); `_checksums.json` holds
  the SHA-256 of each, recorded at commit.
- `metrics/<table>/study=<S>.parquet`: tables materialised by `relcol report`
  (their SHA-256s in `metrics/_checksums/study=<S>.json`).
- `_schema/`: zero-row files that fix each table's column types.
- `_staging/`: writes in progress; never read. A crashed write leaves a folder
  here that the next write on this host completes or removes.

Query it with `relcol sql "..."`, `relcol shell`, or `relcol.open_warehouse()` in Python;
verify it with `relcol check`. Delete a study by deleting its `predictions/study=<S>` folder
(and `metrics/*/study=<S>.*`, its materialised tables and their checksums).
"""

#: Side tables stored beside each ingest's parts: view name -> (file name, schema).
SIDE = {
    "classes": (SIDE_FILES["classes"], _schema.CLASSES),
    "corruptions": (SIDE_FILES["corruptions"], _schema.CORRUPTIONS),
    "runs": (SIDE_FILES["runs"], _schema.RUNS),
    "annotations": (SIDE_FILES["annotations"], _schema.ANNOTATIONS),
}
#: Columns a view's schema file may lack (written before they existed; readers fill them
#: with nulls): `relcol check` accepts such a file, and the next write rewrites it whole.
OPTIONAL = {"annotations": _schema.ANNOTATION_EXTRAS}
#: The columns of each materialised view in a warehouse without reports (its zero-row
#: schema file): the keys of its grain, typed as in the long table.
MATERIALISED_KEYS = {
    "report_calibration": _schema.CELL,
    "report_trends": ("study", "dataset", "model", "corruption", "label"),  # per curve
    "report_thresholds": ("study", "dataset", "model", "corruption", "label"),
    "report_differences": _schema.CELL,
}


def content_id(
    prefix: str, spec: str, versions: Mapping[str, str], *, study: str | None = None
) -> str:
    """A run id from what decides the rows: the spec, the package versions (and the study
    name, for kinds whose spec does not hold it). The same input under the same versions
    gets the same id and therefore byte-identical files. ``prefix`` tells the kind."""
    blob = {"spec": spec, "versions": versions} | ({} if study is None else {"study": study})
    return prefix + hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class IngestResult:
    """What one commit wrote: the study, its run id, rows, cells and part files, the
    seconds since its work started, and the warehouse folder."""

    study: str
    run_id: str
    rows: int
    cells: int
    parts: int
    seconds: float
    warehouse: str


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}Z-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class CheckResult:
    """What `Warehouse.check` found: ``problems`` (damaged, missing or unexpected files, one
    line each naming the file) and ``notes`` (what could not be verified, and why)."""

    files: int
    problems: list[str]
    notes: list[str]


class Warehouse(WarehouseFolder):
    """A warehouse folder. Opening one creates nothing: reading needs an existing warehouse,
    and the first write (an ingest, ``create``) makes the folder and its schema files."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = False) -> None:
        super().__init__(root)
        if create:
            self.create()

    def create(self) -> bool:
        """Make the folder, its subfolders and README where absent, and write each schema
        file that is absent or unreadable (they are derived from the code). True when the
        folder itself was new.

        ``predictions/`` comes last: a warehouse ``exists`` once it and ``_schema/`` are
        there, so a process killed while making a new one leaves a folder that readers take
        for no warehouse (and the next write completes), never one whose schema files are
        missing."""
        new = not self.root.exists()
        try:
            for sub in ("_schema", "_staging", "metrics"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            if not (self.root / "README.md").exists():
                _atomic_write_text(self.root / "README.md", README)
            for view, schema in schemas().items():
                path = self.root / "_schema" / f"{view}.parquet"
                if _schema_problem(path, schema) is not None:
                    _atomic_write_parquet(path, _schema.empty(schema))
            (self.root / "predictions").mkdir(exist_ok=True)
        except OSError as exc:
            raise WarehouseError(_cannot_write(self.root, exc)) from None
        return new

    def writable(self) -> None:
        """Refuse, before any work, a warehouse (or, if absent, the folder it would go in)
        where no file can be created: read-only, immutable, or not ours."""
        try:
            _files.probe_writable(self.root / "_staging" if self.exists() else self.root)
        except OSError as exc:
            raise WarehouseError(_cannot_write(self.root, exc)) from None

    def sql(
        self,
        query: str,
        params: list | dict | None = None,
        *,
        bins: int = 15,
        unsafe: bool = False,
        study: str | None = None,
        timeout: float | None = QUERY_TIMEOUT,
        memory_limit: str | None = None,
    ) -> pl.DataFrame:
        """``query``'s result as a Polars frame: ``WarehouseFolder.query`` (a fresh snapshot;
        only reading statements over the warehouse's files unless ``unsafe``; stopped after
        ``timeout`` seconds, None: no limit) with its other arguments."""
        return self.query(
            query,
            params,
            consume=_frame,
            bins=bins,
            unsafe=unsafe,
            study=study,
            timeout=timeout,
            memory_limit=memory_limit,
        )

    def predictions(self, study: str | None = None) -> pl.LazyFrame:
        """The long table as a Polars LazyFrame (a snapshot of committed ingests; of one
        ``study``'s files only, when given, as the views of ``connect(study=…)``)."""
        return pl.scan_parquet(self.sources(study)["predictions"], hive_partitioning=False)

    def stored(self, view: str, study: str) -> pl.DataFrame | None:
        """The rows of ``view`` (one of ``STORED``) that ``study``'s commit stored, as the
        view answers them, or None when some of the study's rows have none stored (written by
        an older relcol, a stored file removed, a commit that ran out of memory storing them,
        or ``CURVE_COUNTS`` of a study where they would be large).
        The binned views are stored at ``STORED_BINS`` bins, ``calibration`` at
        ``STORED_DRAWS`` ECE₀ draws."""
        if view not in STORED:
            raise ValueError(f"{view!r} is not a stored view; those are {', '.join(STORED)}")
        sources = self.sources(study, derived=False)
        if len(sources[UNSTORED[view]]) > 1 or f"stored_{view}" not in sources:
            return None
        files = sources[f"stored_{view}"]
        if len(files) > 1:  # rows of several runs: the view puts them in its order
            return self.sql(f"SELECT * FROM {view}", study=study)
        # One run, all of it stored: the view is that file, written in the view's order by a
        # one-thread COPY. Read directly, it is the same frame (names, types and values) at
        # a few ms instead of a connection that binds the view (about 0.1 s each).
        try:
            return pl.read_parquet(files[0], hive_partitioning=False)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise WarehouseError(
                f"{files[0]} cannot be read ({str(exc).splitlines()[0]}); "
                "`relcol check` verifies the warehouse's files"
            ) from None

    def check(self) -> CheckResult:
        """Verify the warehouse: every schema file against the code, every committed file
        against the checksum recorded when it was committed, and no file that was not
        committed among them (a view would read it)."""
        self.require()
        problems, notes, files = [], [], 0

        def name(path: Path) -> str:
            return str(path.relative_to(self.root))

        for view, schema in schemas().items():
            path = self.root / "_schema" / f"{view}.parquet"
            files += 1
            problem = _schema_problem(path, schema, optional=OPTIONAL.get(view, ()))
            if problem is not None:
                problems.append(f"{name(path)}: {problem}")
        folders = sorted((self.root / "predictions").glob("study=*/run_id=*"))
        for folder in folders:
            found = {p.name for p in folder.iterdir() if p.is_file()} - {_files.CHECKSUMS}
            files += len(found)
            problems += self._verify(folder, found, notes, name)
        for study in sorted((self.root / "predictions").glob("study=*")):
            if not any(study.glob("run_id=*")):
                problems.append(f"{name(study)}: a study folder without its run folder")
        for study in sorted(self._materialised_studies()):
            found = {
                f"{folder}/{study}.parquet"
                for folder in MATERIALISED.values()
                if (self.root / "metrics" / folder / f"{study}.parquet").exists()
            }
            files += len(found)
            record = self.root / "metrics" / _METRICS_SUMS / f"{study}.json"
            problems += self._verify(self.root / "metrics", found, notes, name, record=record)
        stale = [p for p in (self.root / "_staging").glob("*")]
        if stale:
            notes.append(
                f"_staging holds {len(stale)} folder(s) of writes in progress or interrupted "
                "(the next write on this host removes those whose process is gone)"
            )
        return CheckResult(files=files, problems=problems, notes=notes)

    def _verify(self, folder, found, notes, name, *, record=None) -> list[str]:
        record = record or folder / _files.CHECKSUMS
        if not record.exists():
            if found:
                notes.append(
                    f"{name(record.parent if record.name == _files.CHECKSUMS else record)}: "
                    "no checksums recorded (written by an older relcol); not verified"
                )
            return []
        try:
            recorded = _files.read_checksums(record)
        except ValueError as exc:
            return [f"{name(record)}: {exc}"]
        problems = []
        for file in sorted(set(recorded) | found):
            path = folder / file
            if file not in found:
                problems.append(f"{name(path)}: missing (it was committed)")
            elif file not in recorded:
                problems.append(f"{name(path)}: not part of what was committed")
            elif _files.sha256(path) != recorded[file]:
                problems.append(
                    f"{name(path)}: damaged (its checksum differs from the one recorded)"
                )
        return problems

    def _materialised_studies(self) -> set[str]:
        found = {
            p.stem
            for folder in MATERIALISED.values()
            for p in (self.root / "metrics" / folder).glob("study=*.parquet")
        }
        found |= {p.stem for p in (self.root / "metrics" / _METRICS_SUMS).glob("study=*.json")}
        return found

    # -- writing -----------------------------------------------------------------

    def refuse_existing(self, study: str, replace: bool) -> None:
        """Refuse, before any work, a write the commit would refuse: a warehouse that cannot
        be written, or a study already there without ``replace``."""
        self.writable()
        if not replace and check_name(study) in self.studies():
            raise WarehouseError(_already_there(study, self.root))

    def commit(
        self,
        study: str,
        *,
        kind: str,
        spec: str,
        versions: Mapping[str, str],
        cells: int,
        parts: Iterable[pl.DataFrame] | Callable[[Staging], object],
        sides: Mapping[str, pl.DataFrame | None] | None = None,
        prefix: str,
        keyed_by_name: bool = False,
        started_at: datetime,
        replace: bool = False,
        environment: Callable[[], Mapping[str, str]] | None = None,
    ) -> IngestResult:
        """The one way rows enter the warehouse: stage them, record the run, commit atomically.

        The run id is ``content_id(prefix, spec, versions)`` (with the study name when
        ``keyed_by_name``). ``parts`` are frames of the long table, each stamped with the
        study and the run id and written as one part; or a function that writes the parts
        itself (``Staging.part_path``, ``Staging.record_part``), as the study runner's
        workers do. ``sides`` maps side tables (``classes``, ``corruptions``,
        ``annotations``; None: absent) to their frames, stamped with the study. The
        ``runs`` record holds ``kind``, ``spec``, ``versions`` (and what ``environment``
        returns once the parts are written) and ``cells``. Any failure discards
        everything staged: the warehouse is left byte for byte as it was.
        """
        run_id = content_id(prefix, spec, versions, study=study if keyed_by_name else None)
        with self.ingest(study, replace=replace, run_id=run_id) as staging:
            stamp = {"study": pl.lit(study), "run_id": pl.lit(run_id)}
            if callable(parts):
                parts(staging)
            else:
                for part in parts:
                    staging.write_part(part.with_columns(**stamp))
            for view, frame in (sides or {}).items():
                if frame is not None:
                    staging.write_side(view, frame.with_columns(study=pl.lit(study)))
            extra = environment() if environment is not None else {}
            staging.write_run(
                kind=kind,
                spec=spec,
                versions={**versions, **extra},
                started_at=started_at,
                cells=cells,
            )
        seconds = (datetime.now(UTC) - started_at).total_seconds()
        return IngestResult(
            study=study,
            run_id=run_id,
            rows=staging.rows,
            cells=cells,
            parts=staging.parts,
            seconds=seconds,
            warehouse=str(self.root),
        )

    @contextmanager
    def ingest(
        self, study: str, *, replace: bool = False, run_id: str | None = None
    ) -> Iterator[Staging]:
        """Stage an ingest of ``study``; commit on normal exit, discard on any exception.

        ``run_id`` names the ingest (default: a new time-stamped id); a study passes a
        content address so that the same spec gives the same rows, byte for byte. A
        warehouse that did not exist is created, and removed again if the ingest fails.
        """
        check_name(study)
        new = self.create()
        staging = None
        try:
            if not replace and self.study_dir(study).exists():
                raise WarehouseError(_already_there(study, self.root))
            self.recover()
            staging = Staging(self, study, run_id or new_run_id())
            yield staging
            staging.commit(replace=replace)
        except BaseException as exc:
            if staging is not None:
                staging.discard()
            if new:
                self._remove_if_empty()
            cause = _files.os_error(exc)  # a full disk, a folder made read-only meanwhile …
            if cause is None:
                raise
            raise WarehouseError(_cannot_write(self.root, cause)) from None

    @contextmanager
    def materialise(self, study: str) -> Iterator[TableStaging]:
        """Stage materialised tables of ``study`` (``TableStaging.write``); publish them
        all, with their checksums, on normal exit; discard them on any exception."""
        check_name(study)
        self.create()
        self.recover()
        staging = TableStaging(self, study)
        try:
            yield staging
            staging.publish()
        finally:
            staging.discard()

    def recover(self) -> None:
        """Finish or undo what writers on this host that are gone left in ``_staging``: a
        replace interrupted between its two renames is completed (its new study was
        complete and fsynced before the first rename); every other folder is removed."""
        host = socket.gethostname()
        for entry in (self.root / "_staging").iterdir():
            made_by = _files.owner(entry)
            if made_by is None or made_by[0] != host or _alive(made_by[1]):
                continue
            try:
                for old in (entry / "_replaced").glob("study=*"):
                    target = self.root / "predictions" / old.name
                    if not target.exists():
                        new = entry / old.name
                        os.rename(new if new.exists() else old, target)
                        _files.fsync_dir(target.parent)
            except OSError as exc:
                raise WarehouseError(_cannot_write(self.root, exc)) from None
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def _remove_if_empty(self) -> None:
        """Undo ``create`` of a new warehouse, unless another writer has put something in it."""
        try:
            if any(
                any((self.root / sub).iterdir()) for sub in ("_staging", "predictions", "metrics")
            ):
                return
            shutil.rmtree(self.root)
        except OSError:
            pass


def schemas() -> dict[str, dict[str, pl.DataType]]:
    """Every view's zero-row schema file: view name -> schema."""
    out = {**{v: s for v, (_, s) in SIDE.items()}, "predictions": _schema.PREDICTIONS}
    for view in MATERIALISED:
        keys = MATERIALISED_KEYS.get(view, _schema.CELL)
        out[view] = {k: _schema.PREDICTIONS[k] for k in keys}
    return out


def _schema_problem(
    path: Path, schema: dict[str, pl.DataType], *, optional: tuple[str, ...] = ()
) -> str | None:
    """Why the schema file at ``path`` is not right (missing, unreadable, other columns).

    A column named in ``optional`` may be absent (a file written before it existed, which
    readers fill with nulls); any other difference is a problem."""
    if not path.exists():
        return "missing"
    try:
        found = pl.read_parquet_schema(path)
    except Exception as exc:  # polars raises several kinds for a damaged file
        return f"unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if dict(found) != {k: v for k, v in schema.items() if k in found or k not in optional}:
        return "holds other columns or types than the code expects"
    return None


def _already_there(study: str, root: Path) -> str:
    return (
        f"study {study!r} is already in warehouse {root}; ingest it under another name, "
        "or pass --replace to replace it wholesale"
    )


def _cannot_write(root: Path, exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"cannot write to warehouse {root}: {exc.strerror or exc}{where}; nothing was changed"


#: DuckDB types Polars cannot hold (anywhere in a column's type, nested or not).
_UNHELD = {"interval", "union"}


def _frame(relation: duckdb.DuckDBPyRelation | None) -> pl.DataFrame:
    """A query's result as a Polars frame (an empty one for a statement without a result),
    through the Arrow C stream interface: no pyarrow (nor numpy) import."""
    if relation is None:
        return pl.DataFrame()

    def unheld(kind) -> bool:
        if kind.id in _UNHELD:
            return True
        children = kind.children if kind.id in ("list", "array", "struct", "map") else []
        # an array's children also hold its size, an int
        return any(unheld(child) for _, child in children if hasattr(child, "id"))

    columns = zip(relation.columns, relation.types, strict=True)
    found = [f"{name} ({kind})" for name, kind in columns if unheld(kind)]
    if found:
        raise WarehouseError(
            f"the result has a column of a type a Polars frame cannot hold: {', '.join(found)}; "
            "cast it in the query (e.g. to VARCHAR)"
        )
    return pl.DataFrame(relation)


#: metrics/<this>/study=<S>.json: the checksums of one study's materialised tables.
_METRICS_SUMS = "_checksums"


class TableStaging:
    """Materialised tables of one study written into ``_staging`` and published together."""

    def __init__(self, warehouse: Warehouse, study: str) -> None:
        self.warehouse = warehouse
        self.study = study
        self.base = _new_staging_folder(warehouse.root, "tables")
        self.written: dict[str, Path] = {}

    def write(self, view: str, frame: pl.DataFrame) -> None:
        folder = MATERIALISED[view]
        path = self.base / f"{folder}.parquet"
        frame.write_parquet(path, compression="zstd")
        self.written[folder] = path

    def publish(self) -> None:
        """Move every staged table over its previous version, then record the checksums of
        the study's tables (`relcol check` verifies them)."""
        metrics = self.warehouse.root / "metrics"
        sums = {}
        for folder, path in self.written.items():
            _files.fsync_file(path)
            sums[f"{folder}/study={self.study}.parquet"] = _files.sha256(path)
        record = metrics / _METRICS_SUMS / f"study={self.study}.json"
        if record.exists():
            try:
                sums = _files.read_checksums(record) | sums
            except ValueError:
                pass
        for folder, path in self.written.items():
            (metrics / folder).mkdir(parents=True, exist_ok=True)
            os.replace(path, metrics / folder / f"study={self.study}.parquet")
            _files.fsync_dir(metrics / folder)
        record.parent.mkdir(exist_ok=True)
        text = json.dumps({"sha256": sums}, indent=1, sort_keys=True) + "\n"
        _atomic_write_text(record, text)

    def discard(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _new_staging_folder(root: Path, kind: str) -> Path:
    """A new folder under ``_staging`` whose name tells this host and process (``recover``
    removes it once the process is gone)."""
    base = root / "_staging" / _files.owned_name(f"{kind}-")
    base.mkdir()
    return base


class Staging:
    """The invisible folder one ingest writes into before it commits."""

    def __init__(self, warehouse: Warehouse, study: str, run_id: str) -> None:
        self.warehouse = warehouse
        self.study = study
        self.run_id = check_name(run_id, "run id")
        self.base = _new_staging_folder(warehouse.root, self.run_id)
        self.folder = self.base / f"study={study}" / f"run_id={self.run_id}"
        self.folder.mkdir(parents=True)
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
        """Publish the staged study: its stored views written, checksums recorded, every file
        and folder fsynced, then one rename (or, with ``replace``, one atomic swap with the
        committed study)."""
        target = self.warehouse.study_dir(self.study)
        source = self.base / f"study={self.study}"
        self._store_or_warn()
        _files.write_checksums(self.folder)
        _files.fsync_tree(source)
        if replace and target.exists():
            self._swap(source, target)
        else:
            try:
                os.rename(source, target)
            except OSError:
                raise WarehouseError(
                    f"study {self.study!r} was committed to {self.warehouse.root} by another "
                    "ingest meanwhile; nothing was written"
                ) from None
        _files.fsync_dir(target.parent)
        shutil.rmtree(self.base, ignore_errors=True)

    def store_views(self) -> None:
        """Write the rows of every view in ``STORED`` for the staged study (at ``STORED_BINS``
        bins), computed by the views themselves over the staged files, so that queries read
        them instead of computing them from the long table; ``CURVE_COUNTS`` only where they
        are small (``_curve_is_small``).

        A study of more than ``STORE_CHUNK_ROWS`` rows is stored one chunk of whole cells at a
        time (``_cell_chunks``): some of the views' steps cannot spill to disk."""
        sources = {"predictions": [str(self.warehouse.root / "_schema" / "predictions.parquet")]}
        for view, (file, _) in SIDE.items():
            sources[view] = [str(self.warehouse.root / "_schema" / f"{view}.parquet")]
            sources[view] += [str(self.folder / file)] if (self.folder / file).exists() else []
        chunks = self._cell_chunks()

        def reading(parts: list[str]) -> dict[str, list[str]]:
            return {**sources, "predictions": sources["predictions"] + parts}

        workers = min(available_cores(), len(STORED))
        memory = default_memory_limit(workers)  # the connections share half the memory
        running: list[duckdb.DuckDBPyConnection] = []
        stop = threading.Event()  # set on a Ctrl-C or a failure: no further chunk starts

        def copy(sources: dict[str, list[str]], query: str, path: Path) -> None:
            self._copy(sources, query, path, memory, running, stop)

        def store(view: str) -> None:
            target = self.folder / stored_file(view)
            if len(chunks) == 1:
                copy(reading(chunks[0]), f"SELECT * FROM {view}", target)
                return
            pieces = [self.base / "chunks" / f"{view}-{i}.parquet" for i in range(len(chunks))]
            for parts, piece in zip(chunks, pieces, strict=True):
                copy(reading(parts), f"SELECT * FROM {view}", piece)
            # one after the other, in the view's order: the chunks follow the cells' order
            listed = ", ".join(sql_literal(str(p)) for p in pieces)
            copy(
                reading([]),
                f"SELECT * FROM read_parquet([{listed}], hive_partitioning = false)",
                target,
            )

        parts = sorted(self.folder.glob("part-*.parquet"))
        small = self._curve_is_small(reading([str(p) for p in parts]), parts, memory)
        views = [view for view in STORED if view != CURVE_COUNTS or small]
        pool = ThreadPoolExecutor(max_workers=workers)
        futures = [pool.submit(store, view) for view in views]  # longest first
        try:
            # wait in short steps: a Ctrl-C is raised here only between them
            while not all(f.done() for f in futures):
                wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
                if any(f.done() and f.exception() is not None for f in futures):
                    break
            for future in futures:
                future.result()
        except BaseException:
            # a Ctrl-C, or one view failing: start no other view, stop those still running
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            for con in list(running):
                try:
                    con.interrupt()
                except duckdb.Error:  # it has just ended
                    pass
            raise
        finally:
            pool.shutdown(wait=True)

    @staticmethod
    def _curve_is_small(sources: dict[str, list[str]], parts: list[Path], memory: str) -> bool:
        """Whether the curve counts of the study whose ``parts`` ``sources`` reads would take,
        at ``LEVEL_BYTES`` per level, at most ``CURVE_SHARE`` of the parts' bytes. Its levels
        (distinct cells and confidences) are estimated by DuckDB's HyperLogLog sketch in one
        scan, before anything computes them: 0.13 s for 10⁷ rows against 1.9 s for the exact
        count, which it missed by 0.14 % (2026-12-03)."""
        query = (
            "SELECT approx_count_distinct(hash(study, dataset, model, corruption, severity, "
            "label, confidence)) FROM predictions"
        )
        with connect(sources, sandbox=False, memory_limit=memory, query=query) as con:
            (levels,) = con.execute(query).fetchall()[0]
        return levels * LEVEL_BYTES <= CURVE_SHARE * sum(p.stat().st_size for p in parts)

    def _copy(self, sources, query, path, memory, running, stop) -> None:
        """Write the rows of ``query`` over ``sources`` to ``path``, on one DuckDB thread: it
        adds a sum's terms in the order its threads meet them, so only a query on one thread
        writes the same bytes from the same parts every time (the views run side by side
        instead, each on a connection of its own, listed in ``running`` while it runs; once
        ``stop`` is set, none starts)."""
        with connect(
            sources, bins=STORED_BINS, sandbox=False, memory_limit=memory, query=query
        ) as con:
            running.append(con)
            try:
                if stop.is_set():  # stopped while this connection was being made
                    raise duckdb.InterruptException("the views' storing was stopped")
                con.execute("SET threads = 1")
                # what does not fit spills into the staging folder, never the caller's
                con.execute("SET temp_directory = ?", [str(self.base / f"spill-{path.stem}")])
                target = sql_literal(str(path))
                con.execute(f"COPY ({query}) TO {target} (FORMAT parquet, COMPRESSION zstd)")
            finally:
                running.remove(con)

    def _cell_chunks(self) -> list[list[str]]:
        """The staged parts as chunks of whole cells of at most ``STORE_CHUNK_ROWS`` rows (a
        cell with more is a chunk of its own), each a list of Parquet files: the parts
        themselves for a study that fits in one chunk, else each part's rows of the chunk's
        cells, written once into the staging folder in the parts' order, a block of a tenth of
        a chunk's rows at a time (so the memory held is a block's, whatever the part's size).
        Chunks follow the cells' order (the views' ``ORDER BY``, nulls last) and keep each
        cell's rows in the order of the parts, so the stored rows are those of one pass over
        the whole study."""
        parts = [str(p) for p in sorted(self.folder.glob("part-*.parquet"))]
        if self.rows <= STORE_CHUNK_ROWS:
            return [parts]
        cells = (
            pl.scan_parquet(parts, hive_partitioning=False)
            .group_by(_schema.CELL)
            .agg(rows=pl.len())
            .sort(_schema.CELL, nulls_last=True)
            .collect()
        )
        spans = chunk_spans(cells["rows"].to_list(), STORE_CHUNK_ROWS)
        numbers = [chunk for chunk, (_, length) in enumerate(spans) for _ in range(length)]
        cells = cells.select(*_schema.CELL, chunk=pl.Series(numbers, dtype=pl.UInt32))
        chunks: list[list[str]] = [[] for _ in spans]
        folder = self.base / "chunks"
        folder.mkdir()
        block = max(STORE_CHUNK_ROWS // 10, 1)
        for index, part in enumerate(parts):
            scan = pl.scan_parquet(part, hive_partitioning=False)
            total = scan.select(pl.len()).collect().item()
            # a block of rows at a time: a part may hold the whole study (a prediction file)
            for start in range(0, total, block):
                rows = scan.slice(start, block).collect()
                rows = rows.join(
                    cells, on=_schema.CELL, how="left", nulls_equal=True, maintain_order="left"
                )
                for (chunk,), piece in rows.partition_by("chunk", as_dict=True).items():
                    path = folder / f"part-{index:05d}-{start // block:05d}-chunk-{chunk}.parquet"
                    _write_rows(piece.drop("chunk"), path)
                    chunks[chunk].append(str(path))
        return chunks

    def _store_or_warn(self) -> None:
        """``store_views``; a study whose views run out of memory is committed without them."""
        try:
            self.store_views()
        except duckdb.OutOfMemoryException as exc:
            # Some of the views' steps cannot spill to disk. Without its stored rows the study
            # answers the same from its rows, more slowly: better than losing the ingest.
            for view in STORED:
                (self.folder / stored_file(view)).unlink(missing_ok=True)
            warnings.warn(
                f"the per-cell views of study {self.study!r} were not stored (DuckDB: "
                f"{str(exc).splitlines()[0]}); queries compute them from its rows",
                RuntimeWarning,
                stacklevel=2,
            )

    def _swap(self, source: Path, target: Path) -> None:
        """Put ``source`` at ``target`` and the old study into staging (removed afterwards):
        in one step where the system can; else in two renames, the old study first moved to
        ``_replaced``, where ``recover`` finds an interrupted swap and completes it."""
        if _files.exchange(source, target):
            return
        trash = self.base / "_replaced" / target.name
        trash.parent.mkdir()
        _files.fsync_dir(self.base)
        os.rename(target, trash)
        try:
            os.rename(source, target)
        except OSError:  # another ingest committed the study in between: keep theirs
            raise WarehouseError(
                f"study {self.study!r} was committed to {self.warehouse.root} by another "
                "ingest meanwhile; nothing was written"
            ) from None

    def discard(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


#: A commit stores the per-cell views of a study with more rows than this one chunk of whole
#: cells at a time (``Staging._cell_chunks``): some of the views' steps cannot spill to disk,
#: and at 10⁸ rows in one piece they ran out of memory (10⁷ rows stored in one piece).
STORE_CHUNK_ROWS = 10_000_000


def write_part_file(frame: pl.DataFrame, path: Path) -> int:
    """Write one part of the long table, conformed to its schema; return its row count."""
    frame = _schema.conform(frame, _schema.PREDICTIONS)
    _write_rows(frame, path)
    return frame.height


#: Rows in one row group of a part, and probability-vector entries (rows × the longest
#: vector) at most: Polars' streaming engine takes a row group's rows as one unit of work,
#: and the classwise ECE explodes that unit's vectors at once. 80 000 rows of 1000 classes
#: in one row group took 8.2 s and 4.5 GB to sum per cell, class and bin; in row groups of
#: 4096 rows, 4.0 s and 1.1 GB. Vectors of up to 34 classes keep 120 000 rows (Polars'
#: own default).
PART_GROUP_ROWS = 120_000
PART_GROUP_ENTRIES = 2**22


def _write_rows(frame: pl.DataFrame, path: Path) -> None:
    """Write rows of the long table in row groups of at most ``PART_GROUP_ROWS`` rows and
    ``PART_GROUP_ENTRIES`` vector entries."""
    longest = frame.get_column("proba").list.len().max() or 1  # None: no rows, no vectors
    rows = min(PART_GROUP_ROWS, max(PART_GROUP_ENTRIES // longest, 1))
    frame.write_parquet(path, compression="zstd", row_group_size=rows)


def _atomic_write_parquet(path: Path, frame: pl.DataFrame) -> None:
    _files.write_atomic(path, lambda tmp: frame.write_parquet(tmp, compression="zstd"))


def _atomic_write_text(path: Path, text: str) -> None:
    _files.write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
