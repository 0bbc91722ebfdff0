"""Predictions made elsewhere, read into long-table rows and validated at the boundary.

A prediction file (CSV, TSV, Parquet or JSON lines; or a Polars frame) has one row per
prediction: for a single-label task per sample, for a multi-label task per sample × label.
Its columns play *roles*: ``y_true`` always, then either a probability vector (a list column
``proba`` or one ``p_<class>`` column per class) or ``y_pred`` with ``confidence``; optional
keys (``model``, ``dataset``, ``corruption``, ``severity``, ``seed``, ``repeat``,
``sample_id``, ``label``) and extras (``agreement``, ``split``, ``period``, ``y_clean``). A
column named after its role plays it; ``columns={"y_true": "true_label"}`` maps any other. Several score
columns (``confidence:margin``, ``confidence:logprob`` …) become several confidence sources,
the models ``<model>:margin``, ``<model>:logprob`` …, so every metric compares them side by
side.

Everything is checked before anything is returned (docs/development.md): each problem is one
``InputError`` naming the file, the column and its role, what was expected and what was
found, with the number of rows affected and the first of them (rows are counted from 1,
header excluded). Nothing is clipped, dropped, renormalised or softmaxed.

Conventions (README, "Your own predictions"):

- Classes. Integer labels are class codes; text labels are class names. The class list is
  ``classes=`` if given, else the ``p_<class>`` suffixes, else ``0 … K−1`` for a list column,
  else the sorted union of the text labels seen (or ``0 … max`` for integer codes). A code
  must lie in ``0 … K−1`` and a name must be in the list: anything else is a label outside
  the declared classes. Codes are positions in the list; the list goes to the classes table.
- A probability vector gives ``y_pred`` = its arg max (lowest index on ties) and
  ``confidence`` = its maximum, unless ``y_pred`` (and ``confidence``) columns are given,
  which must then agree with it within ``tolerance``.
- Multi-label (a ``label`` column is present): ``y_true`` and ``y_pred`` are 0/1, and the
  score is either ``confidence`` (in the predicted outcome; needs ``y_pred``) or
  ``probability`` = P(label present), which gives ``y_pred`` = 1[p ≥ 0.5] unless ``y_pred``
  is given, and ``confidence`` = p when y_pred = 1, else 1 − p.
- Defaults: ``dataset`` the file's stem, ``model`` the caller's name, ``corruption`` ``none``,
  ``severity`` 0, ``seed`` and ``repeat`` 0, ``sample_id`` the row's 0-based position
  (multi-label files must give ``sample_id``), ``y_clean`` = ``y_true``.
- Every curve starts at severity 0: the rows of corruption ``none`` at severity 0 are also
  stored as severity 0 of each corruption of the same dataset, model and label that has none
  (``_clean_reference``).
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from relcol.checks import check_interval
from relcol.data import _llm
from relcol.errors import ColumnNotFoundError, InputError, ParameterError, first_line
from relcol.store import ANNOTATIONS, CLASSES, KEY, PREDICTIONS
from relcol.text import printable_line

#: Every role a column can play, with what it holds.
ROLES: dict[str, str] = {
    "y_true": "the true label: a class name or code (multi-label: 0/1, label present)",
    "y_pred": "the predicted label (multi-label: 0/1)",
    "confidence": "the stated confidence in y_pred, in [0, 1]; confidence:<method> for more",
    "probability": "multi-label: P(label present), in [0, 1]; probability:<method> for more",
    "proba": "single-label: the class-probability vector, a list column",
    "y_clean": "the label before any corruption (default: y_true)",
    "dataset": "dataset name (default: the file's stem)",
    "model": "the system that predicted (default: the study name)",
    "corruption": "corruption name (default: none)",
    "severity": "corruption severity d >= 0 (default: 0)",
    "seed": "training seed, an integer (default: 0)",
    "repeat": "corruption draw, an integer (default: 0)",
    "sample_id": "the sample's integer id (default: the row's position)",
    "label": "multi-label: the label (name or code) this row is about",
    "agreement": "share of annotators agreeing with y_pred, in [0, 1] (a soft target)",
    "split": "calibration or evaluation: the file's own split for recalibration",
    **_llm.LLM_ROLES,
    "period": "the collection period (a week, a date, a number), for monitoring",
}
SCORES = ("confidence", "probability")
FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
#: Accepted values of a split column, and what they mean.
SPLITS = {
    "calibration": "calibration",
    "cal": "calibration",
    "val": "calibration",
    "validation": "calibration",
    "evaluation": "evaluation",
    "eval": "evaluation",
    "test": "evaluation",
}
#: Appended to multi-label errors: a column called `label` may be a single-label truth.
_LABEL_HINT = (
    " (column {col!r} makes the file multi-label; if it holds single-label classes, "
    "map it with --column y_true={col})"
)
_METHOD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
_ROW = "__relcol_row"
#: The most classes integer codes may imply without a declared class list.
MAX_CODES = 100_000
_INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Predictions:
    """A prediction file, validated and turned into long-table rows.

    Attributes
    ----------
    rows
        The long table's columns except ``study`` and ``run_id``, one row per prediction
        and confidence source.
    classes
        ``dataset``, ``code``, ``name``: the class (multi-label: label) names.
    annotations
        The key columns except ``study``, ``agreement`` and ``split``; None when the
        file has neither.
    spec
        A JSON-able description of the file (path, SHA-256, format) and of how its
        columns were read: what the ``runs`` table records.
    """

    rows: pl.DataFrame
    classes: pl.DataFrame
    annotations: pl.DataFrame | None
    spec: dict
    multilabel: bool
    sources: tuple[str, ...]
    ignored: tuple[str, ...] = field(default=())


@dataclass
class _Roles:
    columns: dict[str, str]  # plain role -> file column
    scores: list[tuple[str, str | None, str]]  # (kind, method or None, file column)
    vector: list[tuple[str, str]]  # p_<class> columns: (class name, file column)
    ignored: list[str]
    logvector: list[tuple[str, str]] = field(default_factory=list)  # logp_<class> columns


def read_predictions(
    source: str | os.PathLike[str] | pl.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    classes: Sequence[str] | None = None,
    model: str = "model",
    dataset: str | None = None,
    proba_prefix: str = "p_",
    tolerance: float = 1e-3,
    ensemble: bool = False,
) -> Predictions:
    """Read and validate a prediction file (or frame) into long-table rows.

    Parameters
    ----------
    source
        A ``.csv``, ``.tsv``, ``.parquet``/``.pq`` or ``.jsonl``/``.ndjson`` file, or a
        Polars DataFrame.
    columns
        Role -> column for columns not named after their role, e.g.
        ``{"y_true": "true_label", "confidence:margin": "margin"}`` (roles: ``ROLES``).
    classes
        The class names in code order (multi-label: the label names). Declares which
        labels are valid; default: see the module docstring.
    model
        The model name when the file has no ``model`` column.
    dataset
        The dataset name when the file has no ``dataset`` column (default: the file's
        stem, or ``predictions`` for a frame).
    proba_prefix
        Prefix of the per-class probability columns (single-label files).
    tolerance
        How far a probability vector's sum may be from 1, and a stated confidence from
        the vector's value for ``y_pred``.
    ensemble
        The ``seed`` column numbers runs of one system: add, per source, the ensemble's mean
        probability, 1 − 4·variance and vote share as sources of their own
        (``relcol.data._llm.ensemble_rows``).

    Returns
    -------
    Predictions

    Raises
    ------
    InputError, ColumnNotFoundError
        One line naming the file, the column, what was expected and what was found.
    """
    model, dataset, proba_prefix, tolerance, classes = _check_parameters(
        model, dataset, proba_prefix, tolerance, classes
    )
    raw, where, fmt, digest = _read(source)
    if dataset is None:
        dataset = Path(source).stem if not isinstance(source, pl.DataFrame) else "predictions"
    if raw.width == 0 or raw.height == 0:
        found = (
            f"columns {', '.join(map(repr, raw.columns))} but no rows" if raw.width else "nothing"
        )
        raise InputError(
            f"{where}: the file is empty: expected one row per prediction; found {found}"
        )
    if _ROW in raw.columns:
        raise InputError(f"{where}: column name {_ROW!r} is reserved")
    roles = _resolve(where, raw.columns, dict(columns or {}), proba_prefix)
    multilabel = "label" in roles.columns
    _check_required(where, raw.columns, roles, multilabel, dict(columns or {}))

    frame = raw.with_row_index(_ROW, offset=1)
    reader = _Reader(where, frame, csv=fmt in ("csv", "tsv"), tolerance=tolerance)
    llm = None
    if _llm.llm_roles(roles.columns, roles.logvector):
        llm = _llm.derive(reader, roles.columns, roles.logvector, classes, multilabel)
        reader = _Reader(where, llm.frame, csv=reader.csv, tolerance=tolerance)
        roles.scores += [("confidence", name, col) for name, col in llm.scores]
        if llm.y_pred is not None:
            roles.columns["y_pred"] = llm.y_pred
        classes = classes or llm.classes
    base, names, vector = _base(reader, roles, multilabel, classes, model, dataset)
    rows, sources = _sources(reader, roles, base, vector, multilabel)

    key = [k for k in KEY if k != "study"]
    _check_unique(reader, base, roles, key)
    annotations = _annotations(reader, roles, base, rows, key)
    kinds = _source_kinds(roles, base, llm, vector is not None)
    if ensemble:
        rows, annotations, made = _llm.ensemble_rows(
            where, rows, annotations, multilabel, kinds, len(names)
        )
        sources += list(made)
        kinds |= made
    rows, annotations, clean = _clean_reference(rows, annotations)
    datasets = rows.get_column("dataset").unique(maintain_order=True)
    class_table = pl.DataFrame(
        {
            "dataset": np.repeat(datasets.to_numpy(), len(names)),
            "code": np.tile(np.arange(len(names), dtype=np.int32), len(datasets)),
            "name": names * len(datasets),
        },
        schema={k: v for k, v in CLASSES.items() if k != "study"},
    )
    spec = {
        "kind": "predictions",
        "file": where if isinstance(source, pl.DataFrame) else str(Path(source).resolve()),
        "format": fmt,
        "sha256": digest,
        "rows": raw.height,
        "multilabel": multilabel,
        "columns": roles.columns,
        "scores": [
            {"kind": kind, "method": method, "column": col} for kind, method, col in roles.scores
        ],
        "proba_columns": [col for _, col in roles.vector],
        "classes": names,
        "defaults": {
            role: value
            for role, value in (
                ("model", model),
                ("dataset", dataset),
                ("corruption", "none"),
                ("severity", 0.0),
                ("seed", 0),
                ("repeat", 0),
                ("sample_id", "row position"),
                ("y_clean", "y_true"),
            )
            if role not in roles.columns
        },
        "tolerance": tolerance,
        "sources": sources,
        "source_kinds": kinds,
        "ignored": roles.ignored,
        "clean_reference": clean,
    }
    if llm is not None:
        spec["llm"] = llm.spec
    if ensemble:
        spec["ensemble"] = {
            name: {"formula": d.formula, "mapping": d.mapping, "kind": _llm.score_kind(d)}
            for name, d in _llm.ENSEMBLE.items()
        }
    return Predictions(
        rows=rows.drop(_ROW),
        classes=class_table,
        annotations=annotations,
        spec=spec,
        multilabel=multilabel,
        sources=tuple(sources),
        ignored=tuple(roles.ignored),
    )


# -- parameters and reading -------------------------------------------------------------------


def merge_predictions(files: Sequence[Predictions], where: Sequence[str]) -> Predictions:
    """Several prediction files' ``Predictions`` as one study's: their rows, classes and
    annotations together and a spec that keeps each file's under ``files``.

    ``where`` names the files for errors. The files must be all multi-label or all not,
    name the same classes (labels) in the same order, and hold different models: a model
    of a dataset comes from one file, so no two files give the same row. Samples of the same
    dataset pair across files by ``sample_id`` (by default, the row position).
    """
    first = files[0]
    for read, name in zip(files[1:], where[1:], strict=True):
        if read.multilabel != first.multilabel:
            kinds = {True: "multi-label", False: "single-label"}
            raise InputError(
                f"{where[0]} is {kinds[first.multilabel]} and {name} is "
                f"{kinds[read.multilabel]}: the files of one study are all one or the other"
            )
        if read.spec["classes"] != first.spec["classes"]:
            what = "labels" if first.multilabel else "classes"
            raise InputError(
                f"{where[0]} names the {what} {_values_text(first.spec['classes'])} and {name} "
                f"{_values_text(read.spec['classes'])}: the files of one study name the same "
                f"{what} in the same order (declare them with --classes, or ingest the files "
                "as studies of their own)"
            )
    owner: dict[tuple[str, str], str] = {}
    for read, name in zip(files, where, strict=True):
        for dataset, model in read.rows.select("dataset", "model").unique().sort("*").rows():
            if (dataset, model) in owner:
                raise InputError(
                    f"{owner[dataset, model]} and {name} both hold the model {model!r} of the "
                    f"dataset {dataset!r}: each model of a study comes from one file (give the "
                    "files' models different names: a model column, or the file names)"
                )
            owner[dataset, model] = name
    specs = [read.spec for read in files]
    spec = {
        "kind": "predictions",
        "files": specs,
        "multilabel": first.multilabel,
        "classes": first.spec["classes"],
        "sources": [s for spec in specs for s in spec["sources"]],
        "source_kinds": {k: v for spec in specs for k, v in spec["source_kinds"].items()},
        "clean_reference": {
            part: [key for spec in specs for key in spec["clean_reference"][part]]
            for part in ("served", "without")
        },
    }
    # the derived scores' formulas, which confidence_sources reads (the rest: under files)
    llm = {k: v for s in specs for k, v in s.get("llm", {}).get("scores", {}).items()}
    ensemble = {k: v for s in specs for k, v in s.get("ensemble", {}).items()}
    spec |= {"llm": {"scores": llm}} if llm else {}
    spec |= {"ensemble": ensemble} if ensemble else {}
    annotations = [read.annotations for read in files if read.annotations is not None]
    return Predictions(
        rows=pl.concat([read.rows for read in files], how="vertical_relaxed"),
        classes=pl.concat([read.classes for read in files]).unique(maintain_order=True),
        annotations=pl.concat(annotations, how="diagonal_relaxed") if annotations else None,
        spec=spec,
        multilabel=first.multilabel,
        sources=tuple(dict.fromkeys(s for read in files for s in read.sources)),
        ignored=tuple(dict.fromkeys(c for read in files for c in read.ignored)),
    )


def _check_parameters(model, dataset, proba_prefix, tolerance, classes):
    for name, value in (("model", model), ("dataset", dataset)):
        if value is not None and (
            not isinstance(value, str) or not value or printable_line(value) != value
        ):
            raise ParameterError(
                f"{name} must be a non-empty string without control characters. Got {value!r}."
            )
    if not isinstance(proba_prefix, str) or not proba_prefix:
        raise ParameterError(f"proba_prefix must be a non-empty string. Got {proba_prefix!r}.")
    check_interval("tolerance", tolerance, "[0, 0.5)")
    if classes is not None:
        if isinstance(classes, str):
            classes = [c.strip() for c in classes.split(",")]
        classes = list(classes)
        bad = [c for c in classes if not isinstance(c, str) or not c or printable_line(c) != c]
        if not classes or bad:
            raise ParameterError(f"classes must be non-empty names. Got {classes!r}.")
        twice = sorted({c for c in classes if classes.count(c) > 1})
        if twice:
            raise ParameterError(f"classes must be distinct; repeated: {', '.join(twice)}.")
    return model, dataset, proba_prefix, float(tolerance), classes


def _read(source) -> tuple[pl.DataFrame, str, str, str]:
    """The frame, how to name it in messages, its format and its SHA-256.

    The file is hashed as it is read from disk and parsed from its path, so its bytes are
    never in memory beside the frame (for a vision model's vectors that was twice the file);
    a file that changes size or time stamp between the two is refused."""
    if isinstance(source, pl.DataFrame):
        digest = _Digest()
        source.write_ipc(digest)
        return source, "<DataFrame>", "frame", digest.hash.hexdigest()
    if not isinstance(source, str | os.PathLike):
        lazy = " (collect it first)" if isinstance(source, pl.LazyFrame) else ""
        raise ParameterError(
            "source must be a prediction file's path or a polars DataFrame. "
            f"Got {type(source).__name__}{lazy}."
        )
    path = Path(source)
    where = str(source)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{where}: unknown prediction file type {path.suffix or '(no suffix)'!r}; "
            f"expected one of {', '.join(FORMATS)}"
        )
    try:
        with path.open("rb") as file:
            stamp = _stamp(os.fstat(file.fileno()))
            digest = hashlib.file_digest(file, "sha256").hexdigest()
            file.seek(0)
            blank = not any(block.strip() for block in iter(lambda: file.read(2**20), b""))
    except FileNotFoundError:
        raise InputError(f"{where}: no such prediction file") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read: {exc.strerror or exc}") from None
    if blank:
        raise InputError(f"{where}: the file is empty: expected a header and rows; found 0 bytes")
    separator = "\t" if fmt == "tsv" else ","
    try:
        if fmt in ("csv", "tsv"):
            check_header(where, path, separator)
            frame = pl.read_csv(path, separator=separator, infer_schema_length=None)
        elif fmt == "parquet":
            frame = pl.read_parquet(path)
        else:
            frame = pl.read_ndjson(path, infer_schema_length=None)
    except InputError:
        raise
    except Exception as exc:  # the readers raise many types; all mean "not this format"
        if fmt == "jsonl":
            _locate_json_error(where, path.read_bytes())
        raise InputError(f"{where}: cannot read as {fmt.upper()}: {first_line(exc)}") from None
    if _stamp(path.stat()) != stamp:
        raise InputError(
            f"{where}: the file changed while it was read; ingest it once it is complete"
        )
    return frame, where, fmt, digest


def _stamp(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_size, stat.st_mtime_ns


class _Digest(io.RawIOBase):
    """A writable stream that only hashes what is written (SHA-256)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.hash.update(data)
        return len(data)


def check_header(where: str, data: bytes | Path, separator: str) -> None:
    """Refuse a CSV header that names a column twice (the reader would rename the second,
    and the first would play the role silently). Shared with dataset files."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    header = pl.read_csv(
        source, separator=separator, has_header=False, n_rows=1, infer_schema=False
    ).row(0)
    seen: dict[object, int] = {}
    for position, name in enumerate(header, start=1):
        if name in seen:
            raise InputError(
                f"{where}: the header names column {name!r} twice (columns {seen[name]} and "
                f"{position}); expected each column once"
            )
        seen[name] = position


def _locate_json_error(where: str, data: bytes) -> None:
    """Raise an InputError naming the first line of ``data`` that is not a JSON object."""
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
            column = f", column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            raise InputError(
                f"{where}: cannot read as JSONL: line {number}{column}: {reason}"
            ) from None
        if not isinstance(value, dict):
            raise InputError(
                f"{where}: cannot read as JSONL: line {number}: expected an object "
                f"{{...}} per line; found {type(value).__name__}"
            )


# -- roles ------------------------------------------------------------------------------------


def _score_role(role: str) -> tuple[str, str | None] | None:
    kind, sep, method = role.partition(":")
    if kind not in SCORES:
        return None
    return kind, (method if sep else None)


def _resolve(where: str, available: list[str], mapping: dict[str, str], prefix: str) -> _Roles:
    plain: dict[str, str] = {}
    scores: list[tuple[str, str | None, str]] = []
    for role, col in mapping.items():
        score = _score_role(role)
        if score is not None and score[1] is not None and not _METHOD.fullmatch(score[1]):
            raise InputError(
                f"{where}: score method {score[1]!r} in --column {role}={col} must be 1-32 "
                "letters, digits, '_', '.', '-'"
            )
        if score is None and role not in ROLES:
            close = difflib.get_close_matches(role, ROLES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"{where}: unknown role {role!r} in --column {role}={col}{hint}; roles: "
                f"{', '.join(ROLES)} (and confidence:<method>, probability:<method>)"
            )
        if col not in available:
            raise ColumnNotFoundError.from_missing_and_available(
                f"{where}: --column {role}={col}", [col], available
            )
        if score is not None:
            scores.append((score[0], score[1], col))
        else:
            plain[role] = col
    taken = list(mapping.values())
    twice = sorted({c for c in taken if taken.count(c) > 1})
    if twice:
        raise InputError(f"{where}: column {twice[0]!r} is mapped to more than one role")
    for col in available:
        if col in taken:
            continue
        score = _score_role(col)
        if score is not None and (score[1] is None or _METHOD.fullmatch(score[1])):
            if not any(s[:2] == score for s in scores):
                scores.append((score[0], score[1], col))
                taken.append(col)
        elif col in ROLES and col not in plain:
            plain[col] = col
            taken.append(col)
    vector, logvector = [], []
    if "label" not in plain:
        # per-class columns: p_<class> probabilities, logp_<class> log-probabilities
        for found, start in ((vector, prefix), (logvector, _llm.LOGPROB_PREFIX)):
            found += [
                (col[len(start) :], col)
                for col in available
                if col not in taken and col.startswith(start) and len(col) > len(start)
            ]
            taken += [col for _, col in found]
    ignored = [col for col in available if col not in taken]
    return _Roles(plain, scores, vector, ignored, logvector)


def _missing(
    where: str, role: str, available: list[str], how: str, mapping: Mapping[str, str]
) -> ColumnNotFoundError:
    playing = {col: r for r, col in mapping.items()}
    if role in playing:
        # the column named after the role exists but was mapped to another role
        return ColumnNotFoundError(
            f"{where}: no column plays {role}: column {role!r} plays {playing[role]} "
            f"(--column {playing[role]}={role}); {how}"
        )
    error = ColumnNotFoundError.from_missing_and_available(where, [role], available)
    close = difflib.get_close_matches(
        role, [c for c in available if c not in playing], n=1, cutoff=0.6
    )
    hint = f"; did you mean {close[0]!r} (--column {role}={close[0]})?" if close else ""
    return ColumnNotFoundError(f"{error}{hint or ';'} {how}")


def _check_required(
    where: str, available: list[str], roles: _Roles, multilabel: bool, mapping: dict
) -> None:
    cols = roles.columns

    def missing(role: str, how: str) -> ColumnNotFoundError:
        return _missing(where, role, available, how, mapping)

    if "y_true" not in cols:
        raise missing("y_true", "map the true labels with --column y_true=COL")
    plain = [s for s in roles.scores if s[1] is None]
    llm = _llm.llm_roles(cols, roles.logvector)
    # a class distribution, or a chat answer, names y_pred itself
    names_y_pred = any(r in llm for r in ("label_logprobs", "logp_<class>", "logprobs"))
    if multilabel:
        if "proba" in cols:
            raise InputError(
                f"{where}: a probability vector (proba) is for single-label files; multi-label "
                "rows (this file has a label column) take probability = P(label present), or "
                "y_pred with confidence"
            )
        if not roles.scores and not llm:
            raise missing(
                "probability",
                "multi-label rows need probability (P(label present)) or y_pred with confidence",
            )
        if (any(k == "confidence" for k, _, _ in roles.scores) or llm) and "y_pred" not in cols:
            raise missing("y_pred", "a confidence is the confidence in y_pred (0/1)")
        if "sample_id" not in cols:
            raise missing(
                "sample_id",
                "multi-label rows need the sample each (sample, label) row belongs to"
                + _LABEL_HINT.format(col=cols["label"]),
            )
    else:
        if any(k == "probability" for k, _, _ in roles.scores):
            col = next(c for k, _, c in roles.scores if k == "probability")
            raise InputError(
                f"{where}: column {col!r} (probability) is P(label present) of multi-label rows, "
                "but the file has no label column; single-label files give a probability "
                "vector (proba or p_<class> columns) or y_pred with confidence"
            )
        if "proba" in cols and roles.vector:
            raise InputError(
                f"{where}: both a probability list column ({cols['proba']!r}) and per-class "
                f"columns ({', '.join(c for _, c in roles.vector)}); give one"
            )
        has_vector = "proba" in cols or bool(roles.vector)
        if not has_vector and not roles.scores and not llm:
            raise missing(
                "confidence",
                "expected a probability vector (a list column proba, or p_<class> columns) "
                "or y_pred with confidence (or an LLM's log-probabilities: label_logprobs, "
                "logp_<class>, answer_logprob, token_logprobs, logprobs)",
            )
        if not has_vector and "y_pred" not in cols and not names_y_pred:
            raise missing(
                "y_pred",
                "without a probability vector or class log-probabilities, y_pred must be given",
            )
    if len(plain) > 1:
        raise InputError(
            f"{where}: two unnamed scores ({', '.join(repr(c) for *_, c in plain)}); name them "
            "apart with --column confidence:<method>=COL"
        )
    if "agreement" in cols and "y_pred" not in cols and multilabel and len(roles.scores) > 1:
        # each probability would predict on its own; agreement is with one prediction
        raise missing(
            "y_pred",
            "agreement is the share of annotators agreeing with the prediction, and several "
            "probabilities predict apart",
        )


# -- typed columns ----------------------------------------------------------------------------


_SINGULAR = {
    "are": "is",
    "have": "has",
    "hold": "holds",
    "repeat": "repeats",
    "differ": "differs",
    "contradict": "contradicts",
}


def _rows_text(count: int) -> str:
    return f"{count:,} row{'s' if count != 1 else ''}"


def _num(value: float) -> str:
    return f"{value:.6g}"


def _values_text(values: Sequence[object], limit: int = 5) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


class _Reader:
    """Typed access to the file's columns; every check raises one InputError."""

    def __init__(self, where: str, frame: pl.DataFrame, *, csv: bool, tolerance: float) -> None:
        self.where, self.frame, self.csv, self.tolerance = where, frame, csv, tolerance
        self.row = frame.get_column(_ROW)

    def name(self, role: str, col: str) -> str:
        return f"{self.where}: column {col!r}" + (f" ({role})" if role != col else "")

    def fail(self, role: str, col: str, mask: pl.Series, what: str) -> None:
        """Raise if ``mask`` holds anywhere: '<column>: <count> rows <what>, first at row r'."""
        self.fail_subject(self.name(role, col), mask, what)

    def fail_subject(self, subject: str, mask: pl.Series, what: str) -> None:
        mask = mask.fill_null(True)
        count = int(mask.sum())
        if count:
            first = int(self.row.filter(mask)[0])
            verb, _, rest = what.partition(" ")
            if count == 1:
                verb = _SINGULAR.get(verb, verb)
            raise InputError(f"{subject}: {_rows_text(count)} {verb} {rest}, first at row {first}")

    def present(self, role: str, col: str, series: pl.Series) -> None:
        missing = series.is_null()
        if series.dtype.is_float():
            missing = missing | series.is_nan()
        self.fail(role, col, missing, "have no value (empty, null or NaN); expected a value")

    def parsed(self, role: str, col: str, dtype: pl.DataType, kind: str) -> pl.Series:
        """A text column as ``dtype`` (``kind``: number or integer); each value that does not
        parse fails at its own row.

        A CSV holds only text, so its numbers arrive as text; in a typed format (JSON lines,
        Parquet) a text column is a type error, named at the first row holding text that is
        not a number, else (every value a quoted number) at the first row.
        """
        s = self.frame.get_column(col)
        parsed = s.cast(dtype, strict=False)
        text = parsed.is_null() & s.is_not_null()
        article = "an" if kind == "integer" else "a"
        if text.any():
            example = s.filter(text)[0]
            self.fail(
                role, col, text, f"hold text where {article} {kind} is expected (e.g. {example!r})"
            )
        given = s.is_not_null()
        if not self.csv and given.any():
            raise InputError(
                f"{self.name(role, col)}: expected {kind}s; found text (e.g. "
                f"{s.filter(given)[0]!r} at row {self.row.filter(given)[0]})"
            )
        return parsed

    def numbers(self, role: str, col: str) -> pl.Series:
        s = self.frame.get_column(col)
        if s.dtype == pl.String:
            s = self.parsed(role, col, pl.Float64, "number")
        elif not s.dtype.is_numeric():
            raise InputError(f"{self.name(role, col)}: expected numbers; found type {s.dtype}")
        s = s.cast(pl.Float64)
        self.present(role, col, s)
        return s

    def in_unit_interval(self, role: str, col: str, s: pl.Series) -> None:
        outside = (s < 0) | (s > 1)
        if not outside.any():
            return
        bad = s.filter(outside)
        hint = ""
        logs = "give the class log-probabilities (label_logprobs or logp_<class> columns) and "
        if re.search(r"log|margin|logit", role, re.IGNORECASE) and s.min() >= 0:
            hint = (
                f"; a score on a log scale? {logs}relcol derives <model>:margin, mapped into "
                "[0, 1] as p(y_pred) / (p(y_pred) + p(runner-up))"
            )
        elif s.max() <= 0:
            hint = (
                "; log-probabilities? give them as answer_logprob (or token_logprobs) and relcol "
                "derives <model>:loglik = exp(LL)"
            )
        elif s.min() >= 0 and s.max() <= 100 and s.median() > 1:
            hint = (
                "; percentages? divide them by 100 first (a margin or a logit? "
                f"{logs.replace(' and ', '')} instead)"
            )
        self.fail(
            role,
            col,
            outside,
            f"are outside [0, 1] (from {_num(bad.min())} to {_num(bad.max())}){hint}",
        )

    def integers(self, role: str, col: str, bounds: tuple[int, int]) -> pl.Series:
        s = self.frame.get_column(col)
        if s.dtype == pl.String:
            s = self.parsed(role, col, pl.Int64, "integer")
        elif s.dtype.is_float():
            self.present(role, col, s)
            fraction = s != s.round()
            example = s.filter(fraction)[0] if fraction.any() else None
            self.fail(
                role,
                col,
                fraction,
                f"hold numbers that are not whole (e.g. {example!r}); expected integers",
            )
            raise InputError(
                f"{self.name(role, col)}: expected integers; found whole numbers stored as type "
                f"{s.dtype}; store the column as integers"
            )
        elif not s.dtype.is_integer():
            raise InputError(f"{self.name(role, col)}: expected integers; found type {s.dtype}")
        self.present(role, col, s)
        lo, hi = bounds
        # unsigned columns (common from numpy/pandas) are accepted when every value fits
        if s.dtype.is_signed_integer():
            wide = s.cast(pl.Int64)
            outside = (wide < lo) | (wide > hi)
        else:
            outside = s.cast(pl.UInt64) > hi
        self.fail(role, col, outside, f"are outside the integer range [{lo}, {hi}]")
        return s.cast(pl.Int64)

    def text(self, role: str, col: str, s: pl.Series | None = None) -> pl.Series:
        """Column ``col`` (or its converted values ``s``) as non-blank printable text."""
        s = self.frame.get_column(col) if s is None else s
        if s.dtype.is_nested():
            raise InputError(f"{self.name(role, col)}: expected text; found type {s.dtype}")
        s = s.cast(pl.String)
        self.present(role, col, s)
        self.fail(role, col, s.str.strip_chars() == "", "are empty or blank; expected a name")
        self.printable(role, col, s)
        return s

    def printable(self, role: str, col: str, s: pl.Series) -> None:
        """Refuse names holding control characters (terminal escapes, NUL, newlines)."""
        bad = [v for v in s.drop_nulls().unique().to_list() if printable_line(v) != v]
        if bad:
            self.fail(
                role,
                col,
                s.is_in(bad),
                f"hold control characters (e.g. {bad[0]!r}); expected printable names",
            )

    def labels(self, role: str, col: str) -> pl.Series:
        """Class codes (Int64) or names (String); bool is a code 0/1."""
        s = self.frame.get_column(col)
        if s.dtype == pl.Boolean:
            s = s.cast(pl.Int64)
        elif isinstance(s.dtype, pl.Categorical | pl.Enum):
            s = s.cast(pl.String)
        elif s.dtype.is_integer():
            if s.dtype.is_unsigned_integer():
                too_large = s.cast(pl.UInt64) > 2**63 - 1
                self.fail(role, col, too_large, "hold class codes above 2**63 − 1")
            s = s.cast(pl.Int64)
        elif s.dtype != pl.String:
            raise InputError(
                f"{self.name(role, col)}: expected class codes (integers) or class names (text); "
                f"found type {s.dtype}"
                + (f" (e.g. {s.drop_nulls()[0]!r})" if s.drop_nulls().len() else "")
            )
        self.present(role, col, s)
        if s.dtype == pl.String:
            self.printable(role, col, s)
        return s


# -- building rows ----------------------------------------------------------------------------


def _class_list(
    reader: _Reader,
    labels: dict[str, tuple[str, pl.Series]],
    declared: list[str] | None,
    declared_from: str,
) -> tuple[list[str], dict[str, pl.Series]]:
    """The class names and each label column as Int32 codes (positions in the names)."""
    kinds = {role: s.dtype == pl.String for role, (_, s) in labels.items()}
    if len(set(kinds.values())) > 1:
        text = [f"{r} ({labels[r][0]!r})" for r, t in kinds.items() if t]
        codes = [f"{r} ({labels[r][0]!r})" for r, t in kinds.items() if not t]

        def hold(columns: list[str]) -> str:
            return f"{', '.join(columns)} {'holds' if len(columns) == 1 else 'hold'}"

        raise InputError(
            f"{reader.where}: {hold(text)} class names (text) but {hold(codes)} class codes "
            "(integers); expected the same kind in every label column"
        )
    textual = next(iter(kinds.values()))
    if textual:
        names = declared or sorted(set().union(*(s.unique().to_list() for _, s in labels.values())))
        lookup = {name: i for i, name in enumerate(names)}
        codes = {
            role: s.replace_strict(lookup, default=None, return_dtype=pl.Int32)
            for role, (_, s) in labels.items()
        }
    else:
        if declared is None:
            low = min(int(s.min()) for _, s in labels.values())
            if low < 0:
                role = next(r for r, (_, s) in labels.items() if s.min() == low)
                col, s = labels[role]
                reader.fail(
                    role,
                    col,
                    s < 0,
                    "hold negative integers; class codes are 0 … K−1 (give names as text or "
                    "declare the classes)",
                )
            k = max(int(s.max()) for _, s in labels.values()) + 1
            if k > MAX_CODES:
                role = next(r for r, (_, s) in labels.items() if s.max() == k - 1)
                raise InputError(
                    f"{reader.name(role, labels[role][0])}: holds class code {k - 1:,}; integer "
                    f"labels are codes 0 … K−1 with K <= {MAX_CODES:,} unless the classes are "
                    "declared (--classes) or given as text"
                )
            names = [str(i) for i in range(k)]
        else:
            names = declared
        k = len(names)
        inside = (pl.col("v") >= 0) & (pl.col("v") < k)
        codes = {
            role: s.to_frame("v")
            .select(pl.when(inside).then(pl.col("v")).cast(pl.Int32))
            .to_series()
            for role, (_, s) in labels.items()
        }
    for role, (col, s) in labels.items():
        outside = codes[role].is_null()
        if outside.any():
            values = s.filter(outside).unique(maintain_order=True).to_list()
            shown = _values_text(names, 10)
            reader.fail(
                role,
                col,
                outside,
                f"hold labels outside the declared classes ({declared_from}: {shown}): "
                f"{_values_text(values)}",
            )
    return names, codes


def _base(reader: _Reader, roles: _Roles, multilabel: bool, declared, model, dataset):
    """Key columns and labels (one row per file row), the class names and the vector."""
    cols, n = roles.columns, reader.frame.height
    out: dict[str, pl.Series] = {_ROW: reader.row}
    for role, default in (("dataset", dataset), ("model", model), ("corruption", "none")):
        out[role] = (
            reader.text(role, cols[role])
            if role in cols
            else pl.repeat(default, n, dtype=pl.String, eager=True).alias(role)
        )
    if "severity" in cols:
        severity = reader.numbers("severity", cols["severity"])
        reader.fail(
            "severity",
            cols["severity"],
            severity.is_infinite() | (severity < 0),
            "are negative or infinite; expected a severity d >= 0",
        )
        out["severity"] = severity
    else:
        out["severity"] = pl.repeat(0.0, n, dtype=pl.Float64, eager=True).alias("severity")
    for role in ("seed", "repeat"):
        out[role] = (
            reader.integers(role, cols[role], _INT32)
            if role in cols
            else pl.repeat(0, n, dtype=pl.Int64, eager=True).alias(role)
        )
    out["sample_id"] = (
        reader.integers("sample_id", cols["sample_id"], (-(2**63), 2**63 - 1))
        if "sample_id" in cols
        else (reader.row - 1).cast(pl.Int64)
    )

    vector = None
    if multilabel:
        for role in ("y_true", "y_pred", "y_clean"):
            if role in cols:
                s = reader.labels(role, cols[role])
                if s.dtype == pl.String:
                    raise InputError(
                        f"{reader.name(role, cols[role])}: expected 0/1 (label absent/present) in "
                        f"multi-label rows; found text (e.g. {s[0]!r})"
                        + _LABEL_HINT.format(col=cols["label"])
                    )
                bad = ~s.is_in([0, 1])
                if bad.any():
                    reader.fail(
                        role,
                        cols[role],
                        bad,
                        "hold values other than 0/1 (label absent/present) in multi-label rows: "
                        + _values_text(s.filter(bad).unique(maintain_order=True).to_list())
                        + _LABEL_HINT.format(col=cols["label"]),
                    )
                out[role] = s.cast(pl.Int32)
        label = reader.labels("label", cols["label"])
        names, codes = _class_list(
            reader,
            {"label": (cols["label"], label)},
            declared,
            "--classes" if declared else "labels seen",
        )
        out["label"] = codes["label"]
    else:
        labels = {
            role: (cols[role], reader.labels(role, cols[role]))
            for role in ("y_true", "y_pred", "y_clean")
            if role in cols
        }
        textual = labels["y_true"][1].dtype == pl.String
        declared_from = "--classes" if declared else ""
        if roles.vector:
            vector_names = [name for name, _ in roles.vector]
            if declared:
                if set(declared) != set(vector_names):
                    raise InputError(
                        f"{reader.where}: the classes given ({', '.join(declared)}) differ from "
                        f"the probability columns' ({', '.join(vector_names)})"
                    )
                order = {name: col for name, col in roles.vector}
                roles.vector = [(name, order[name]) for name in declared]
            elif not textual and all(name.isdigit() for name in vector_names):
                # integer codes with p_0, p_1 …: the suffix is the code
                numbered = sorted(roles.vector, key=lambda item: int(item[0]))
                if [int(name) for name, _ in numbered] != list(range(len(numbered))):
                    raise InputError(
                        f"{reader.where}: probability columns "
                        f"{', '.join(c for _, c in roles.vector)} must be numbered 0 … K−1 to "
                        "match integer class codes"
                    )
                roles.vector = numbered
            declared = [name for name, _ in roles.vector]
            declared_from = declared_from or "the probability columns"
            vector = _vector_from_columns(reader, roles.vector)
        elif "proba" in cols:
            vector = _vector_from_list(reader, cols["proba"])
            k = vector.stored.list.len().max()
            if declared is None:
                if textual:
                    raise InputError(
                        f"{reader.name('y_true', cols['y_true'])}: holds class names, but the "
                        f"probability lists ({cols['proba']!r}) do not name their classes; "
                        "declare them in vector order with --classes"
                    )
                declared, declared_from = [str(i) for i in range(k)], f"{k} probabilities"
            elif len(declared) != k:
                raise InputError(
                    f"{reader.name('proba', cols['proba'])}: lists hold {k} probabilities but "
                    f"{len(declared)} classes were declared"
                )
        names, codes = _class_list(reader, labels, declared, declared_from or "labels seen")
        out.update({role: codes[role] for role in labels})
        out["label"] = pl.repeat(None, n, dtype=pl.Int32, eager=True).alias("label")
    out.setdefault("y_clean", out["y_true"])
    # One chunk per column (the file's row groups gave several): the vectors and scores join
    # these columns as one chunk each, and columns chunked apart are copied to align them.
    base = pl.DataFrame({k: v.alias(k) for k, v in out.items()}).rechunk()
    return base, names, vector


class _Vectors(NamedTuple):
    """A file's probability vectors: as Polars lists in the file's own float type (its arg
    max and maximum are taken there), and as the Float32 lists the warehouse stores, in one
    chunk like the columns they join."""

    lists: pl.Series
    stored: pl.Series


def _vector_from_columns(reader: _Reader, vector: list[tuple[str, str]]) -> _Vectors:
    series = [reader.numbers(f"{name} probability", col) for name, col in vector]
    for (name, col), s in zip(vector, series, strict=True):
        reader.in_unit_interval(f"{name} probability", col, s)
    matrix = np.column_stack([s.to_numpy() for s in series])
    _check_sums(reader, matrix.sum(axis=1), ", ".join(col for _, col in vector))
    lists = pl.Series(matrix).cast(pl.List(pl.Float64))
    return _Vectors(lists, pl.Series(matrix.astype(np.float32)).cast(pl.List(pl.Float32)))


def _vector_from_list(reader: _Reader, col: str) -> _Vectors:
    """The list column, checked, as lists of its own floats (integers as Float64) and as the
    Float32 lists to store: a vision model's 1000 classes are never copied as Float64."""
    s = reader.frame.get_column(col)
    if isinstance(s.dtype, pl.Array):
        s = s.cast(pl.List(s.dtype.inner))
    if not isinstance(s.dtype, pl.List) or not s.dtype.inner.is_numeric():
        hint = (
            "; a CSV cannot hold lists: give one p_<class> column per class" if reader.csv else ""
        )
        raise InputError(
            f"{reader.name('proba', col)}: expected a list of probabilities per row; "
            f"found type {s.dtype}{hint}"
        )
    reader.fail("proba", col, s.is_null(), "have no probability list")
    lengths = s.list.len()
    reader.fail("proba", col, lengths == 0, "hold an empty list; expected a probability per class")
    k = int(lengths.mode().sort()[-1])
    reader.fail(
        "proba",
        col,
        lengths != k,
        f"hold lists of another length than the usual {k} "
        f"(lengths {_values_text(lengths.filter(lengths != k).unique().sort().to_list())})",
    )
    values = s if s.dtype.inner in (pl.Float32, pl.Float64) else s.cast(pl.List(pl.Float64))
    # A block's flat values are copied only when the file split them across row groups or they
    # hold a null (which reads as NaN here). Lists in one chunk are cast in Polars (nothing to
    # do for Float32); lists in several, one per row group, are gathered into one Float32
    # matrix block by block, since a cast or copy of them whole took three times their size.
    bad, sums = [], []
    whole = values.n_chunks() == 1
    stored = None if whole else np.empty((values.len(), k), dtype=np.float32)
    start = 0
    for block in _row_blocks(values):
        matrix = block.explode().to_numpy().reshape(-1, k)
        bad.append(np.isnan(matrix).any(axis=1))
        sums.append(matrix.sum(axis=1, dtype=np.float64))
        if stored is not None:
            stored[start : start + len(matrix)] = matrix
        start += len(matrix)
    reader.fail("proba", col, pl.Series(np.concatenate(bad)), "hold a missing or NaN probability")
    low, high = values.list.min(), values.list.max()
    outside = (low < 0) | (high > 1)
    if outside.any():
        reader.fail(
            "proba",
            col,
            outside,
            f"hold probabilities outside [0, 1] (from {_num(low.min())} to {_num(high.max())})",
        )
    _check_sums(reader, np.concatenate(sums), col)
    if stored is None:
        return _Vectors(values, values.cast(pl.List(pl.Float32)))
    return _Vectors(values, pl.Series(stored).cast(pl.List(pl.Float32)))  # no copy


def _row_blocks(vectors: pl.Series) -> list[pl.Series]:
    """The rows of a list column in blocks of at most 2**22 entries. Cast or copied whole, a
    list column read from many row groups took three times its size at once."""
    step = max(2**22 // max(vectors.list.len().max() or 1, 1), 1)
    return [vectors.slice(start, step) for start in range(0, vectors.len(), step)]


def _check_sums(reader: _Reader, sums: np.ndarray, columns: str) -> None:
    """Refuse vectors whose sums (Float64, one per row) are off 1 by more than the
    tolerance."""
    off = np.abs(sums - 1.0) > reader.tolerance
    if off.any():
        bad = sums[off]
        reader.fail_subject(
            f"{reader.where}: probability vector ({columns})",
            pl.Series(off),
            f"have probabilities summing to {_num(bad.min())}–{_num(bad.max())} "
            f"(expected 1 ± {reader.tolerance:g}; relcol never renormalises)",
        )


def _sources(reader: _Reader, roles: _Roles, base: pl.DataFrame, vector, multilabel: bool):
    """One block of rows per confidence source; the source (model) names."""
    blocks = []
    y_pred_given = base.get_column("y_pred") if "y_pred" in base.columns else None
    for kind, method, col in roles.scores:
        s = reader.numbers(kind if method is None else f"{kind}:{method}", col)
        reader.in_unit_interval(kind if method is None else f"{kind}:{method}", col, s)
    if multilabel:
        for kind, method, col in roles.scores:
            s = reader.frame.get_column(col).cast(pl.Float64)
            if kind == "probability":
                y_pred = y_pred_given if y_pred_given is not None else (s >= 0.5).cast(pl.Int32)
                # y_pred = 1 with P(present) < 0.5 would be a confidence below 0.5 in it
                reader.fail(
                    kind if method is None else f"{kind}:{method}",
                    col,
                    ((y_pred == 1) & (s < 0.5)) | ((y_pred == 0) & (s > 0.5)),
                    "contradict y_pred (y_pred = 1 with P(label present) < 0.5, or 0 with "
                    "P > 0.5); expected y_pred = 1 when P > 0.5 and 0 when P < 0.5",
                )
                confidence = (
                    pl.DataFrame({"y": y_pred, "p": s})
                    .select(
                        pl.when(pl.col("y") == 1).then(pl.col("p")).otherwise(1.0 - pl.col("p"))
                    )
                    .to_series()
                )
            else:
                y_pred, confidence = y_pred_given, s
            blocks.append((method, y_pred, confidence, None))
    else:
        proba = None
        if vector is not None:
            # In Polars: numpy's arg max took 1.9 s on 80 000 × 1000 of Polars' own memory
            # (0.15 s on a copy of it), Polars' 0.12 s. Both take the lowest index on ties.
            if y_pred_given is not None:
                y_pred = y_pred_given
                stated = vector.lists.list.get(y_pred).cast(pl.Float64).to_numpy()
            else:
                y_pred = vector.lists.list.arg_max().cast(pl.Int32)
                stated = vector.lists.list.max().cast(pl.Float64).to_numpy()
            proba = vector.stored
            plain = [col for kind, method, col in roles.scores if method is None]
            if plain:
                given = reader.frame.get_column(plain[0]).cast(pl.Float64).to_numpy()
                off = np.abs(given - stated) > reader.tolerance
                reader.fail(
                    "confidence",
                    plain[0],
                    pl.Series(off),
                    f"differ from the probability of y_pred by more than {reader.tolerance:g} "
                    f"(up to {_num(float(np.abs(given - stated).max()))})",
                )
                stated = given
            blocks.append((None, y_pred, pl.Series(stated, dtype=pl.Float64), proba))
        for _kind, method, col in roles.scores:
            if method is None and vector is not None:
                continue
            y_pred = y_pred_given if y_pred_given is not None else blocks[0][1]
            blocks.append((method, y_pred, reader.frame.get_column(col).cast(pl.Float64), None))
    # every score is in [0, 1] and present (checked above); y_pred is a valid code
    frames, sources = [], []
    for method, y_pred, confidence, proba in blocks:
        model = pl.col("model") if method is None else pl.col("model") + f":{method}"
        block = base.with_columns(
            model=model,
            y_pred=pl.Series(y_pred).cast(pl.Int32),
            confidence=pl.Series(confidence).cast(pl.Float64),
            proba=proba if proba is not None else pl.lit(None, pl.List(pl.Float32)),
        ).with_columns(correct=pl.col("y_pred") == pl.col("y_true"))
        frames.append(block)
        sources += block.get_column("model").unique(maintain_order=True).to_list()
    if len(set(sources)) != len(sources):
        raise InputError(
            f"{reader.where}: two confidence sources share the model name "
            f"{next(s for s in sources if sources.count(s) > 1)!r}; name the scores apart"
        )
    rows = pl.concat(frames).select(*[c for c in PREDICTIONS if c not in ("study", "run_id")], _ROW)
    return rows, sources


def _source_kinds(roles: _Roles, base: pl.DataFrame, llm, vector: bool) -> dict[str, str]:
    """Per source: ``probability`` (a probability vector's, or exp of a log-likelihood),
    ``score`` (an ordering mapped into [0, 1]: recalibrate before reading its calibration)
    or ``stated`` (a confidence column as the file gave it)."""
    derived = {name for name, _ in llm.scores} if llm is not None else set()
    kinds: dict[str, str] = {}
    for model in base.get_column("model").unique(maintain_order=True).to_list():
        if vector:
            kinds[model] = "probability"
        for _, method, _ in roles.scores:
            name = model if method is None else f"{model}:{method}"
            kind = _llm.score_kind(_llm.DERIVED[method]) if method in derived else "stated"
            kinds.setdefault(name, kind)
    return kinds


def _check_unique(reader: _Reader, base: pl.DataFrame, roles: _Roles, key: list[str]) -> None:
    keys = [k for k in key if k != "model"] + ["model"]
    if _row_hashes(base, keys).n_unique() == base.height:
        return  # equal keys hash alike: all hashes distinct, no key repeats
    repeated = ~base.select(pl.struct(keys).is_first_distinct()).to_series()
    if not repeated.any():
        return  # two keys' hashes collided
    count = int(repeated.sum())
    first = base.filter(repeated).row(0, named=True)
    twin = base.filter(
        pl.all_horizontal(
            pl.col(k).eq_missing(pl.lit(first[k], dtype=base.schema[k])) for k in keys
        )
    ).row(0, named=True)
    given = [k for k in keys if k in roles.columns] or ["sample_id"]
    same = ", ".join(f"{k}={first[k]!r}" for k in given)
    raise InputError(
        f"{reader.where}: {_rows_text(count)} {'repeats' if count == 1 else 'repeat'} the key "
        "of an earlier row, "
        f"first at row {first[_ROW]} (same {same} as row {twin[_ROW]}); expected each "
        f"({', '.join(k for k in key if k != 'label' or 'label' in roles.columns)}) once"
    )


#: An odd 64-bit multiplier (2⁶⁴/φ) that mixes one column's hashes into the next.
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _row_hashes(frame: pl.DataFrame, columns: list[str]) -> pl.Series:
    """A 64-bit hash of each row's ``columns``, from each column's own hashes: rows with equal
    values (equal as ``is_first_distinct`` compares them: −0.0 and 0.0, NaN and NaN, null and
    null) hash alike. One pass per column, where a struct's hash or distinct rows encode every
    row's values together first (10⁷ rows of eight key columns, with the count of distinct
    hashes: 0.9 s and 0.2 GB more, against 2.1–2.5 s and 2.4 GB for the distinct rows)."""
    mixed = np.zeros(frame.height, dtype=np.uint64)
    for name in columns:
        mixed = mixed * _MIX ^ frame.get_column(name).hash().to_numpy()
    return pl.Series(mixed)


def _annotations(
    reader: _Reader, roles: _Roles, base: pl.DataFrame, rows: pl.DataFrame, key: list[str]
) -> pl.DataFrame | None:
    cols = roles.columns
    if not {"agreement", "split", "period"} & set(cols):
        return None
    n = reader.frame.height
    extra = {}
    if "agreement" in cols:
        a = reader.numbers("agreement", cols["agreement"])
        reader.in_unit_interval("agreement", cols["agreement"], a)
        extra["agreement"] = a
    else:
        extra["agreement"] = pl.repeat(None, n, dtype=pl.Float64, eager=True)
    if "split" in cols:
        s = reader.text("split", cols["split"])
        normal = s.str.to_lowercase().replace_strict(SPLITS, default=None)
        bad = normal.is_null()
        if bad.any():
            reader.fail(
                "split",
                cols["split"],
                bad,
                f"hold {_values_text(s.filter(bad).unique(maintain_order=True).to_list())}; "
                f"expected one of {', '.join(SPLITS)}",
            )
        extra["split"] = normal
        both = base.select("dataset", "sample_id", _ROW).with_columns(split=normal)
        both = both.filter(pl.col("split").n_unique().over("dataset", "sample_id") > 1)
        if both.height:
            rows_text = ", ".join(map(str, both.get_column(_ROW).head(2)))
            raise InputError(
                f"{reader.name('split', cols['split'])}: sample_id {both['sample_id'][0]} is in "
                f"both splits (rows {rows_text}); expected each sample in one split"
            )
    else:
        extra["split"] = pl.repeat(None, n, dtype=pl.String, eager=True)
    extra["period"] = (
        _periods(reader, cols["period"])
        if "period" in cols
        else pl.repeat(None, n, dtype=pl.String, eager=True)
    )
    blocks = rows.height // n
    return (
        rows.select(key)
        .with_columns(**{name: pl.concat([values] * blocks) for name, values in extra.items()})
        .select([k for k in ANNOTATIONS if k != "study"])
    )


def _clean_reference(
    rows: pl.DataFrame, annotations: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame | None, dict[str, list[list[str]]]]:
    """Give every curve a severity 0: the clean rows of its model serve one that has none.

    Severity 0 is the identity, so each curve (dataset, model, corruption, label) starts at the
    clean model. A file laid out as one clean set under corruption ``none`` and each corruption
    only at its severities 1, 2, … (the usual layout of a corruption benchmark) gives those
    curves no start. The rows of ``none`` at severity 0 of the same dataset, model and label are
    therefore also stored as severity 0 of each such corruption, with their annotations; they
    stay under ``none`` as well. Returns the rows, the annotations and, for the spec,
    ``served`` and ``without`` (curves that had no severity 0 and no clean rows either), each a
    sorted list of ``[dataset, model, corruption]`` (the label's code appended for multi-label
    rows).
    """
    curve = ["dataset", "model", "label"]
    keys = rows.lazy().select(*curve, "corruption", "severity")  # lazy: no filtered copies
    clean = (pl.col("corruption") == "none") & (pl.col("severity") == 0.0)
    starts, have = pl.collect_all(
        [
            keys.filter(pl.col("corruption") != "none")
            .group_by([*curve, "corruption"])
            .agg(start=(pl.col("severity") == 0.0).any())
            .filter(~pl.col("start"))
            .drop("start"),
            keys.filter(clean).select(curve).unique(),
        ]
    )
    served = starts.join(have, on=curve, how="semi", nulls_equal=True)
    without = starts.join(have, on=curve, how="anti", nulls_equal=True)

    def copies(frame: pl.DataFrame) -> pl.DataFrame:
        return (
            frame.filter(clean)
            .drop("corruption")
            .join(served, on=curve, nulls_equal=True)
            .select(frame.columns)
        )

    def listed(frame: pl.DataFrame) -> list[list[str]]:
        keys = frame.select("dataset", "model", "corruption", pl.col("label").cast(pl.String))
        keys = keys.sort(pl.all())
        return [[k for k in row if k is not None] for row in keys.iter_rows()]

    if served.height:
        rows = pl.concat([rows, copies(rows)])
        if annotations is not None:
            annotations = pl.concat([annotations, copies(annotations)])
    return rows, annotations, {"served": listed(served), "without": listed(without)}


def _periods(reader: _Reader, col: str) -> pl.Series:
    """A period column as text: names as given, integers as digits, dates and times in ISO
    form (so text order is time order); numbers that are not whole are refused."""
    s = reader.frame.get_column(col)
    if s.dtype.is_float():
        reader.present("period", col, s)
        reader.fail(
            "period",
            col,
            s != s.round(),
            "hold numbers that are not whole; expected period names, integers or dates",
        )
        s = s.cast(pl.Int64)
    elif s.dtype == pl.Date:
        s = s.dt.to_string("%Y-%m-%d")
    elif s.dtype.is_temporal():
        s = s.dt.to_string("iso")
    return reader.text("period", col, s)


def spec_text(spec: Mapping) -> str:
    """The spec as the runs table stores it: indented, key-sorted JSON."""
    return json.dumps(spec, indent=2, sort_keys=True, default=str)
