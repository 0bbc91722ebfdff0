"""Loading datasets and splitting off the study's fixed test set.

Built-in datasets need no network: scikit-learn's bundled ``digits``,
``breast_cancer`` and ``wine``, ``synthetic`` (``make_classification`` with
size and class count as parameters) and ``penguins`` (the Palmer penguins, read
from the CSV inside the optional ``palmerpenguins`` package). A user file (CSV
or Parquet) with a named target column is the last kind. ``sample_id`` is the
row's position in the full dataset, so it is stable across models,
corruptions, seeds and repeats, and across studies that use the same data.

Categorical features (string, categorical, enum or boolean columns) are kept
as category codes: column j of ``X`` holds the index of the value in
``Dataset.categories[j]`` (the sorted distinct values of the column over all
rows) as a float, and NaN where the value is missing. Models encode the codes
with what they learn from clean training rows only, and operators that need
numbers (means, SDs, quantiles) leave categorical columns alone.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from sklearn import datasets as skd
from sklearn.model_selection import train_test_split

from relcol.errors import ColumnNotFoundError, InputError, SpecError


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset as a study names it: ``name`` plus loader parameters.

    ``name`` is a built-in loader (``digits``, ``breast_cancer``, ``wine``,
    ``synthetic``) or any name with ``path`` and ``target`` for a user file.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A dataset split once into clean training data and the study's test set."""

    name: str
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    sample_id: np.ndarray
    #: Per feature: its category values (codes index them) or None for a numeric feature.
    #: Empty means every feature is numeric.
    categories: tuple[tuple[str, ...] | None, ...] = ()

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def categorical(self) -> np.ndarray:
        """Boolean mask over features: True where the feature is categorical (codes)."""
        mask = np.zeros(len(self.feature_names), dtype=bool)
        for j, values in enumerate(self.categories):
            mask[j] = values is not None
        return mask


#: What a loader returns: X, y (class codes), feature names, class names, and the
#: categories of each feature (None for a numeric one).
Loaded = tuple[np.ndarray, np.ndarray, list, list, list]


def _sklearn(loader: Callable[..., Any]) -> Callable[..., Loaded]:
    def load() -> Loaded:
        bunch = loader()
        names = [str(c) for c in getattr(bunch, "target_names", np.unique(bunch.target))]
        features = list(bunch.feature_names)
        return bunch.data, bunch.target, features, names, [None] * len(features)

    return load


def _penguins() -> Loaded:
    """The Palmer penguins (344 birds, 3 species): the CSV shipped inside ``palmerpenguins``.

    The file is read directly, so nothing else of that package is imported and nothing
    is downloaded. Features: island and sex (categorical; sex has missing values),
    bill length and depth, flipper length, body mass (numeric, some missing) and year.
    """
    where = "dataset 'penguins'"
    spec = importlib.util.find_spec("palmerpenguins")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"{where}: needs the palmerpenguins package, which ships the data: "
            "pip install palmerpenguins (or relcol's `datasets` extra)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "penguins.csv"
    if not path.is_file():
        raise InputError(f"{where}: {path} is missing from the palmerpenguins package")
    frame = pl.read_csv(path, null_values=["NA", ""])
    return _from_frame(frame, "species", None, where)


def _synthetic(
    n_samples: int = 2000,
    n_features: int = 20,
    n_informative: int = 10,
    n_classes: int = 3,
    class_sep: float = 1.0,
    flip_y: float = 0.01,
    random_state: int = 0,
) -> Loaded:
    X, y = skd.make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=n_informative,
        n_redundant=min(2, n_features - n_informative),
        n_classes=n_classes,
        class_sep=class_sep,
        flip_y=flip_y,
        random_state=random_state,
    )
    features = [f"x{j}" for j in range(n_features)]
    return X, y, features, [f"class_{k}" for k in range(n_classes)], [None] * n_features


#: Built-in loaders: name -> (parameters allowed, loader).
BUILTIN: dict[str, tuple[frozenset[str], Callable[..., Loaded]]] = {
    "digits": (frozenset(), _sklearn(skd.load_digits)),
    "penguins": (frozenset(), _penguins),
    "breast_cancer": (frozenset(), _sklearn(skd.load_breast_cancer)),
    "wine": (frozenset(), _sklearn(skd.load_wine)),
    "synthetic": (
        frozenset(
            {
                "n_samples",
                "n_features",
                "n_informative",
                "n_classes",
                "class_sep",
                "flip_y",
                "random_state",
            }
        ),
        _synthetic,
    ),
}
FILE_PARAMS = frozenset({"path", "target", "features", "categorical"})


def validate_dataset(spec: DatasetSpec, where: str) -> None:
    """Check a dataset entry's parameters without loading it."""
    if spec.name in BUILTIN:
        allowed, _ = BUILTIN[spec.name]
        unknown = set(spec.params) - allowed
        if unknown:
            raise SpecError(
                f"{where}: unknown parameter(s) {sorted(unknown)} for dataset {spec.name!r}; "
                f"allowed: {sorted(allowed) or 'none'}"
            )
        if spec.name == "synthetic":
            _check_synthetic(spec.params, where)
        return
    if "path" not in spec.params or "target" not in spec.params:
        raise SpecError(
            f"{where}: unknown dataset {spec.name!r}; built-in datasets are "
            f"{sorted(BUILTIN)}, and a user file needs `path` and `target`"
        )
    unknown = set(spec.params) - FILE_PARAMS
    if unknown:
        raise SpecError(
            f"{where}: unknown parameter(s) {sorted(unknown)}; allowed: {sorted(FILE_PARAMS)}"
        )
    declared = spec.params.get("categorical", [])
    if not isinstance(declared, list) or not all(isinstance(c, str) for c in declared):
        raise SpecError(f"{where}: categorical must be a list of column names. Got {declared!r}.")


def _check_synthetic(params: Mapping[str, Any], where: str) -> None:
    ints = {"n_samples": 20, "n_features": 2, "n_informative": 1, "n_classes": 2, "random_state": 0}
    for name, low in ints.items():
        if name in params and (
            not isinstance(params[name], int)
            or isinstance(params[name], bool)
            or params[name] < low
        ):
            raise SpecError(f"{where}: {name} must be an int >= {low}. Got {params[name]!r}.")
    n_features = params.get("n_features", 20)
    n_informative = params.get("n_informative", min(10, n_features))
    if n_informative > n_features:
        raise SpecError(
            f"{where}: n_informative ({n_informative}) must be <= n_features ({n_features})."
        )
    n_classes = params.get("n_classes", 3)
    if n_classes > 2**n_informative:
        raise SpecError(
            f"{where}: n_classes ({n_classes}) must be <= 2**n_informative ({2**n_informative})."
        )


def load_dataset(
    spec: DatasetSpec, *, test_size: float, split_seed: int, base: Path | None = None
) -> Dataset:
    """Load ``spec`` and split it (stratified) into clean train and the fixed test set."""
    if spec.name in BUILTIN:
        params = dict(spec.params)
        if spec.name == "synthetic":
            params.setdefault("n_informative", min(10, params.get("n_features", 20)))
        X, y, features, classes, categories = BUILTIN[spec.name][1](**params)
    else:
        X, y, features, classes, categories = _load_file(spec, base)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int32)
    ids = np.arange(len(y), dtype=np.int64)
    counts = np.bincount(y, minlength=len(classes))
    stratify = y if counts.min() >= 2 else None
    try:
        tr, te = train_test_split(
            ids, test_size=test_size, random_state=split_seed, stratify=stratify
        )
    except ValueError as exc:
        raise InputError(
            f"dataset {spec.name!r}: cannot split with test_size={test_size}: {exc}"
        ) from None
    te = np.sort(te)
    tr = np.sort(tr)
    return Dataset(
        name=spec.name,
        feature_names=tuple(features),
        class_names=tuple(classes),
        X_train=X[tr],
        y_train=y[tr],
        X_test=X[te],
        y_test=y[te],
        sample_id=ids[te],
        categories=tuple(None if c is None else tuple(c) for c in categories),
    )


def _load_file(spec: DatasetSpec, base: Path | None) -> Loaded:
    path = Path(spec.params["path"]).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    target = spec.params["target"]
    where = f"dataset {spec.name!r} ({path})"
    if not path.is_file():
        raise InputError(f"{where}: file not found")
    try:
        if path.suffix.lower() in {".parquet", ".pq"}:
            frame = pl.read_parquet(path)
        elif path.suffix.lower() in {".csv", ".tsv", ".txt"}:
            frame = pl.read_csv(path, separator="\t" if path.suffix.lower() == ".tsv" else ",")
        else:
            raise InputError(
                f"{where}: unsupported file type {path.suffix!r}; use .csv, .tsv or .parquet"
            )
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"{where}: cannot read: {exc}") from None
    if frame.height == 0:
        raise InputError(f"{where}: the file has no rows")
    if target not in frame.columns:
        raise ColumnNotFoundError.from_missing_and_available(where, [target], frame.columns)
    features = list(spec.params.get("features") or [c for c in frame.columns if c != target])
    missing = [c for c in features if c not in frame.columns]
    if missing:
        raise ColumnNotFoundError.from_missing_and_available(where, missing, frame.columns)
    declared = spec.params.get("categorical", [])
    missing = [c for c in declared if c not in features]
    if missing:
        raise ColumnNotFoundError.from_missing_and_available(where, missing, features)
    # Integer-coded categories (ZIP codes, product ids) are categories too when declared.
    frame = frame.with_columns(pl.col(declared).cast(pl.String))
    return _from_frame(frame, target, features, where)


def _from_frame(frame: pl.DataFrame, target: str, features: list | None, where: str) -> Loaded:
    """Features and class codes of a table: numeric columns as floats, categorical as codes."""
    features = features or [c for c in frame.columns if c != target]
    kinds = {c: _kind(frame.schema[c]) for c in features}
    unusable = [c for c, kind in kinds.items() if kind is None]
    if unusable:
        raise InputError(
            f"{where}: feature column(s) {unusable} are neither numeric nor categorical "
            "(string, categorical, enum, boolean); convert them first or leave them out of "
            "`features`"
        )
    y_raw = frame.get_column(target)
    if y_raw.null_count():
        raise InputError(
            f"{where}: target column {target!r} has {y_raw.null_count()} missing value(s)"
        )
    classes, y = np.unique(y_raw.to_numpy(), return_inverse=True)
    if len(classes) < 2:
        raise InputError(f"{where}: target column {target!r} has fewer than two classes")
    columns, categories = [], []
    for c in features:
        if kinds[c] == "numeric":
            columns.append(frame.get_column(c).cast(pl.Float64).to_numpy())
            categories.append(None)
            continue
        values = frame.get_column(c).cast(pl.String)
        levels = values.drop_nulls().unique().sort()
        codes = values.replace_strict(levels, pl.Series(np.arange(len(levels))), default=None)
        columns.append(codes.cast(pl.Float64).fill_null(np.nan).to_numpy())
        categories.append(tuple(levels.to_list()))
    X = np.column_stack(columns) if columns else np.empty((frame.height, 0))
    return X, y, features, [str(c) for c in classes], categories


def _kind(dtype: pl.DataType) -> str | None:
    if dtype.is_numeric():
        return "numeric"
    if isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Boolean):
        return "categorical"
    return None
