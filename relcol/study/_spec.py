"""The study spec: a TOML file naming the grid, validated once at the boundary.

Every key of a ``[[datasets]]``, ``[[models]]`` or ``[[corruptions]]`` entry other
than ``name``, ``id`` (and a corruption's own ``severities`` and ``repeats``) is a
parameter of that dataset loader, estimator or operator. ``id`` names the entry in the long
table (default: ``name``), so one operator or model can appear twice with
different parameters.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

from relcol.checks import is_int as _is_int
from relcol.checks import is_number as _is_number
from relcol.corruption import OPERATORS
from relcol.data import DatasetSpec, validate_dataset
from relcol.errors import RelcolError, SpecError
from relcol.models import ModelSpec, validate_model
from relcol.store import check_name

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}")
TOP = {
    "name",
    "description",
    "test_size",
    "split_seed",
    "seeds",
    "repeats",
    "severities",
    "scorecard",
    "baseline",
}
#: The ``[scorecard]`` table: which corruption and severities define stability and resilience.
SCORECARD = {"noise": "gaussian_noise", "stability_at": 0.05, "resilience_at": 0.1}
TABLES = {"datasets", "models", "corruptions"}


@dataclass(frozen=True)
class CorruptionSpec:
    """One corruption of the grid: operator ``name``, its ``id``, params and severity grid.

    ``repeats`` overrides the study's repeats for this corruption (None: the study's).
    """

    name: str
    id: str
    params: Mapping[str, Any]
    severities: tuple[float, ...]
    repeats: int | None = None


@dataclass(frozen=True)
class Study:
    """A validated study. ``text`` is the TOML it came from (kept in the ``runs`` table)."""

    name: str
    datasets: tuple[DatasetSpec, ...]
    models: tuple[ModelSpec, ...]
    corruptions: tuple[CorruptionSpec, ...]
    seeds: tuple[int, ...] = (0,)
    repeats: int = 1
    test_size: float = 0.3
    split_seed: int = 0
    description: str = ""
    text: str = ""
    base: Path | None = field(default=None, compare=False)
    scorecard: Mapping[str, Any] = field(default_factory=lambda: dict(SCORECARD))

    @property
    def spec_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def renamed(self, name: str) -> Study:
        """The same study under another name (the TOML text is kept as written)."""
        return replace(self, name=check_name(name))


def default_study_text() -> str:
    return resources.files("relcol.study").joinpath("default.toml").read_text(encoding="utf-8")


def load_study(path: str | Path | None = None, *, allow_outside_paths: bool = False) -> Study:
    """Read and validate a study TOML file; ``None`` gives the built-in default study.

    A dataset file must lie in the spec's folder unless ``allow_outside_paths``.
    """
    if path is None:
        return parse_study(default_study_text(), source="built-in default study")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read study spec: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: study spec is not UTF-8 text") from None
    return parse_study(
        text,
        source=str(path),
        base=path.resolve().parent,
        allow_outside_paths=allow_outside_paths,
    )


def parse_study(
    text: str,
    *,
    source: str = "study",
    base: Path | None = None,
    allow_outside_paths: bool = False,
) -> Study:
    """Validate TOML ``text``; every problem raises ``SpecError`` naming ``source`` and the field.

    Relative dataset paths are relative to ``base`` (default: the current directory), and
    must stay inside it unless ``allow_outside_paths``.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML: {exc}") from None
    unknown = set(raw) - TOP - TABLES
    if unknown:
        raise SpecError(
            f"{source}: unknown key(s) {sorted(unknown)}; allowed: {sorted(TOP | TABLES)}"
        )
    if "name" not in raw:
        raise SpecError(f"{source}: `name` is required (the study's name in the warehouse)")
    try:
        name = check_name(raw["name"])
    except RelcolError as exc:
        raise SpecError(f"{source}: {exc}") from None
    test_size = raw.get("test_size", 0.3)
    _check(
        _is_number(test_size) and 0 < test_size < 1,
        source,
        "test_size",
        "a number in (0, 1)",
        test_size,
    )
    split_seed = raw.get("split_seed", 0)
    _check(
        _is_int(split_seed) and 0 <= split_seed < 2**32,  # scikit-learn's random_state range
        source,
        "split_seed",
        "an int in [0, 2**32)",
        split_seed,
    )
    seeds = raw.get("seeds", [0])
    _check(
        isinstance(seeds, list)
        and seeds
        and all(_is_int(s) and 0 <= s < 2**31 for s in seeds)
        and len(set(seeds)) == len(seeds),
        source,
        "seeds",
        "a non-empty list of distinct ints in [0, 2**31)",
        seeds,
    )
    repeats = raw.get("repeats", 1)
    _check(
        _is_int(repeats) and 1 <= repeats <= 10_000,
        source,
        "repeats",
        "an int in [1, 10000]",
        repeats,
    )
    description = raw.get("description", "")
    _check(isinstance(description, str), source, "description", "a string", description)
    grid = (
        _severities(raw.get("severities"), f"{source}: severities") if "severities" in raw else None
    )

    datasets = tuple(
        _dataset(e, f"{source}: datasets[{i}]", base, allow_outside_paths)
        for i, e in enumerate(_entries(raw, "datasets", source))
    )
    models = tuple(
        _model(e, f"{source}: models[{i}]") for i, e in enumerate(_entries(raw, "models", source))
    )
    corruptions = tuple(
        _corruption(e, f"{source}: corruptions[{i}]", grid)
        for i, e in enumerate(_entries(raw, "corruptions", source))
    )
    for what, items in (("dataset", datasets), ("model", models), ("corruption", corruptions)):
        ids = [getattr(item, "id", getattr(item, "name", None)) for item in items]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise SpecError(
                f"{source}: {what} {dupes[0]!r} appears twice; give one of them another `id`"
            )
    baseline = raw.get("baseline")
    if baseline is not None and baseline not in [m.id for m in models]:
        raise SpecError(
            f"{source}: baseline {baseline!r} is not a model of the study; its models: "
            f"{', '.join(m.id for m in models)}"
        )
    card = _scorecard(raw.get("scorecard", {}), source, corruptions)
    return Study(
        name=name,
        scorecard=card,
        datasets=datasets,
        models=models,
        corruptions=corruptions,
        seeds=tuple(seeds),
        repeats=repeats,
        test_size=float(test_size),
        split_seed=split_seed,
        description=description,
        text=text,
        base=base,
    )


def _scorecard(raw: object, source: str, corruptions: tuple[CorruptionSpec, ...]) -> dict[str, Any]:
    """The ``[scorecard]`` table with defaults filled: ``noise`` names one of the study's
    corruptions (by id) when the table is given, and both severities are in its grid."""
    where = f"{source}: scorecard"
    if not isinstance(raw, dict):
        raise SpecError(f"{where} must be a table ([scorecard]). Got {raw!r}.")
    unknown = sorted(set(raw) - set(SCORECARD))
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; allowed: {sorted(SCORECARD)}")
    card = {**SCORECARD, **raw}
    _check(isinstance(card["noise"], str), where, "noise", "a corruption id", card["noise"])
    for key in ("stability_at", "resilience_at"):
        value = card[key]
        _check(_is_number(value) and 0 < value < math.inf, where, key, "a severity > 0", value)
        card[key] = float(value)
    if raw:
        grids = {c.id: c.severities for c in corruptions}
        if card["noise"] not in grids:
            raise SpecError(
                f"{where}: noise {card['noise']!r} is not one of the study's corruptions "
                f"({', '.join(grids)})"
            )
        for key in ("stability_at", "resilience_at"):
            if card[key] not in grids[card["noise"]]:
                raise SpecError(
                    f"{where}: {key} = {card[key]:g} is not a severity of {card['noise']!r} "
                    f"({list(grids[card['noise']])})"
                )
    return card


def _entries(raw: Mapping[str, Any], key: str, source: str) -> list[Mapping[str, Any]]:
    entries = raw.get(key)
    if not entries:
        raise SpecError(f"{source}: the grid is empty: give at least one [[{key}]] entry")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SpecError(f"{source}: `{key}` must be an array of tables ([[{key}]])")
    for i, e in enumerate(entries):
        if not isinstance(e.get("name"), str):
            raise SpecError(f"{source}: {key}[{i}] needs a `name` (a string)")
    return entries


def _entry_id(entry: Mapping[str, Any], where: str) -> str:
    ident = entry.get("id", entry["name"])
    if not isinstance(ident, str) or not ID.fullmatch(ident):
        raise SpecError(
            f"{where}: id must be 1-64 characters of letters, digits and '_ . : + -', starting "
            f"with a letter or digit. Got {ident!r}."
        )
    return ident


def _dataset(
    entry: Mapping[str, Any], where: str, base: Path | None, allow_outside: bool
) -> DatasetSpec:
    if "id" in entry:
        raise SpecError(f"{where}: datasets take no `id`; the `name` is their id")
    spec = DatasetSpec(
        name=_entry_id(entry, where), params={k: v for k, v in entry.items() if k != "name"}
    )
    validate_dataset(spec, where, base=base, allow_outside=allow_outside)
    return spec


def _model(entry: Mapping[str, Any], where: str) -> ModelSpec:
    spec = ModelSpec(
        name=entry["name"],
        id=_entry_id(entry, where),
        params={k: v for k, v in entry.items() if k not in {"name", "id"}},
    )
    validate_model(spec, where)
    return spec


def _corruption(
    entry: Mapping[str, Any], where: str, grid: tuple[float, ...] | None
) -> CorruptionSpec:
    name = entry["name"]
    if name not in OPERATORS:
        raise SpecError(
            f"{where}: unknown corruption {name!r}; known operators: {', '.join(sorted(OPERATORS))}"
        )
    if "severities" in entry:
        severities = _severities(entry["severities"], f"{where}: severities")
    elif grid is not None:
        severities = grid
    else:
        raise SpecError(
            f"{where}: no severities: set `severities` at the top of the study or in this entry"
        )
    repeats = entry.get("repeats")
    _check(
        repeats is None or (_is_int(repeats) and 1 <= repeats <= 10_000),
        where,
        "repeats",
        "an int in [1, 10000]",
        repeats,
    )
    params = {k: v for k, v in entry.items() if k not in {"name", "id", "severities", "repeats"}}
    operator = OPERATORS[name]
    for d in severities:
        try:
            operator.check_severity(d, params)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
    return CorruptionSpec(
        name=name, id=_entry_id(entry, where), params=params, severities=severities, repeats=repeats
    )


def _severities(values: object, where: str) -> tuple[float, ...]:
    if (
        not isinstance(values, list)
        or not values
        or not all(_is_number(v) and math.isfinite(v) for v in values)
    ):
        raise SpecError(f"{where} must be a non-empty list of finite numbers. Got {values!r}.")
    grid = tuple(float(v) for v in values)
    if any(b <= a for a, b in pairwise(grid)):
        raise SpecError(f"{where} must be strictly increasing. Got {list(grid)}.")
    if grid[0] != 0.0:
        raise SpecError(
            f"{where} must start at 0.0, the clean reference every curve starts from. Got {list(grid)}."
        )
    return grid


def _check(ok: object, source: str, field_name: str, expected: str, got: object) -> None:
    if not ok:
        raise SpecError(f"{source}: {field_name} must be {expected}. Got {got!r}.")
