"""Running a study: fit each model once on clean data, corrupt the fixed test set, store rows.

The order of work makes every number reproducible and every comparison paired:

- each dataset is split once (``split_seed``), so ``sample_id`` is shared by all rows;
- each (dataset, model, seed) is fitted once on a bootstrap resample of clean
  training data and then frozen;
- each corruption draw comes from a generator keyed by (study, dataset,
  corruption, severity, repeat), deliberately *not* by model or seed: every
  model and every training seed sees the same corrupted test set, so model
  differences and seed-to-seed consistency are measured on identical inputs;
- severity 0 is the identity, so its rows are the clean predictions, predicted once;
- a draw that repeats the first draw of its severity byte for byte (an operator that drew
  nothing, such as ``mnar``'s quantile rule on continuous features) is not an independent
  draw: when every repeat of a severity equals the first, that severity is stored once
  (repeat 0) rather than as identical copies counted as replicates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from relcol.corruption import OPERATORS, Corrupted, TrainingStats, resolve_names
from relcol.data import Dataset, load_dataset
from relcol.errors import InputError, SpecError
from relcol.models import FrozenModel, ModelSpec, fit_frozen
from relcol.store import IngestResult, Staging, Warehouse, content_id, write_part_file
from relcol.study._numerics import numerics, versions
from relcol.study._parallel import check_backend, run_tasks
from relcol.study._spec import CorruptionSpec, Study


@dataclass(frozen=True)
class _Draws:
    """One corruption's draws at every non-zero severity and repeat, stacked row-wise: each
    draw a block of the test set's rows in their order, ``changed`` telling the rows whose
    features differ from their clean test row (in any byte) and ``X`` holding those rows'
    features alone. The others (every row of a label-noise draw, the rows an amputation
    spared) are the clean input, whose prediction every model has already made."""

    X: np.ndarray
    changed: np.ndarray
    y: np.ndarray
    severity: np.ndarray
    repeat: np.ndarray
    log: list[dict]


def rng_for(*key: object) -> np.random.Generator:
    """A generator derived from ``key`` alone: the same key gives the same draws anywhere."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=16).digest()
    return np.random.default_rng(np.random.SeedSequence(int.from_bytes(digest, "little")))


#: The most rows a study may write unless the caller raises the bound (``max_rows``):
#: about 18 times the built-in study.
MAX_ROWS = 50_000_000


def n_fits(study: Study) -> int:
    """How many (dataset, model, seed) fits the study makes: the unit of progress."""
    return len(study.datasets) * len(study.models) * len(study.seeds)


def n_rows(study: Study, test_sizes: list[int]) -> int:
    """How many long-table rows the study writes, given each dataset's test-set size: every
    test sample × model × seed × severity of every corruption × repeat (severity 0 included)."""
    levels = sum(len(c.severities) for c in study.corruptions)
    return sum(test_sizes) * len(study.models) * len(study.seeds) * levels * study.repeats


def check_cost(study: Study, test_sizes: list[int], max_rows: int | None) -> None:
    """Refuse, before any fit, a study that would write more than ``max_rows`` rows."""
    if max_rows is None:
        return
    rows = n_rows(study, test_sizes)
    if rows > max_rows:
        levels = sum(len(c.severities) for c in study.corruptions)
        raise SpecError(
            f"study {study.name!r} would write {rows:,} rows ({sum(test_sizes):,} test samples "
            f"× {len(study.models)} models × {len(study.seeds)} seeds × {levels} severities × "
            f"{study.repeats} repeats) in {n_fits(study):,} fits, above the bound of "
            f"{max_rows:,} rows; raise it to run the study anyway (--max-rows {rows}, or "
            "max_rows=None)"
        )


def run_study(
    study: Study,
    warehouse: Warehouse,
    *,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int | None = 1,
    backend: str = "local",
    max_rows: int | None = MAX_ROWS,
) -> IngestResult:
    """Run ``study`` into ``warehouse`` and commit it atomically.

    A study that would write more than ``max_rows`` rows (None: no bound) is refused
    after its datasets are loaded and before any fit.

    All loading and validation happens before anything is written; any error
    afterwards discards the staged files, so the warehouse is left as it was.
    The (dataset, model, seed) fits run on ``jobs`` local processes (None: one per
    available core), or on an existing Dask cluster (``backend``); each writes its own
    part file and the commit publishes them together. The rows do not depend on either.
    """
    jobs = check_backend(backend, jobs)
    warehouse.refuse_existing(study.name, replace)  # before the work, not after it
    started = datetime.now(UTC)
    datasets = [
        load_dataset(spec, test_size=study.test_size, split_seed=study.split_seed, base=study.base)
        for spec in study.datasets
    ]
    check_cost(study, [len(ds.y_test) for ds in datasets], max_rows)
    params = {(ds.name, c.id): _validated(c, ds) for ds in datasets for c in study.corruptions}
    packages = versions()
    run_id = content_id("s", study.text, packages)
    classes, logs, tasks = [], [], []
    for ds in datasets:
        stats = TrainingStats.fit(
            ds.X_train, ds.n_classes, labels=ds.y_train, categorical=ds.categorical
        )
        draws = {c.id: _draw(study, ds, c, params[ds.name, c.id], stats) for c in study.corruptions}
        logs += [row for d in draws.values() for row in d.log]
        classes.append(
            pl.DataFrame(
                {"code": np.arange(ds.n_classes, dtype=np.int32), "name": ds.class_names}
            ).with_columns(dataset=pl.lit(ds.name))
        )
        shared = _Shared(study.name, study.corruptions, study.repeats, run_id, ds, draws)
        tasks += [(shared, model, seed) for model in study.models for seed in study.seeds]
    environments = []  # the numerics of every process the models ran in

    def write_parts(staging: Staging) -> None:
        """Each (dataset, model, seed) task writes its own part where staging says."""
        paths = [staging.part_path(i) for i in range(len(tasks))]
        for rows, environment in run_tasks(
            _fit_predict_write, tasks, paths, jobs=jobs, backend=backend
        ):
            staging.record_part(rows)
            environments.append(environment)
            if progress is not None:
                progress(1)

    return warehouse.commit(
        study.name,
        kind="study",
        spec=study.text,
        versions=packages,
        cells=(
            len(study.datasets)
            * len(study.models)
            * sum(len(c.severities) for c in study.corruptions)
        ),
        parts=write_parts,
        sides={"classes": pl.concat(classes), "corruptions": pl.DataFrame(logs)},
        prefix="s",
        started_at=started,
        replace=replace,
        environment=lambda: _merged(environments),
    )


@dataclass(frozen=True)
class _Shared:
    """What every (model, seed) task of one dataset needs: sent to a worker once."""

    study: str
    corruptions: tuple[CorruptionSpec, ...]
    repeats: int
    run_id: str
    dataset: Dataset
    draws: dict[str, _Draws]


def _fit_predict_write(
    shared: _Shared, model: ModelSpec, seed: int, path: Path
) -> tuple[int, dict[str, str]]:
    """One unit of work: fit (dataset, model, seed) once, predict every draw, write one part.
    Returns the rows written and the ``numerics`` of the process it ran in (a Dask worker
    may be another machine)."""
    ds = shared.dataset
    # One BLAS/OpenMP thread per fit: on a small machine shared with other work, OpenMP's
    # busy-waiting threads made one HistGradientBoosting fit 40x slower (50 s vs 1.2 s).
    with threadpool_limits(limits=1):
        frozen = fit_frozen(
            model,
            ds.X_train,
            ds.y_train,
            seed=seed,
            n_classes=ds.n_classes,
            categorical=ds.categorical,
        )
        clean = frozen.predict_proba(ds.X_test)
        parts = []
        for c in shared.corruptions:
            parts.append(
                _rows(ds, c, clean, c.repeats or shared.repeats, y=ds.y_test, severity=0.0)
            )
            d = shared.draws[c.id]
            if len(d.y):
                proba = _predicted(frozen, d, clean)
                parts.append(_rows(ds, c, proba, 1, y=d.y, severity=d.severity, repeat=d.repeat))
    frame = pl.concat(parts).with_columns(
        study=pl.lit(shared.study),
        model=pl.lit(model.id),
        seed=pl.lit(seed, pl.Int32),
        run_id=pl.lit(shared.run_id),
    )
    return write_part_file(frame, path), numerics()


def _predicted(frozen: FrozenModel, d: _Draws, clean: np.ndarray) -> np.ndarray:
    """The model's probabilities for every row of the draws ``d``: its prediction of the
    clean test set (``clean``) where a row is its clean test row, and a prediction of the
    changed rows alone elsewhere. Predicting an unchanged row again could give other last
    bits (a BLAS product's summation order depends on the shape of the batch): its clean
    prediction is the model's answer to that input."""
    proba = clean[np.arange(len(d.changed)) % len(clean)]
    if len(d.X):
        proba[d.changed] = frozen.predict_proba(d.X)
    return proba


def _merged(environments: list[dict[str, str]]) -> dict[str, str]:
    """One ``numerics`` record for every process the fits ran in: per key, the distinct
    values joined by " | " (one value when every worker was alike)."""
    keys = sorted({key for environment in environments for key in environment})
    return {key: " | ".join(sorted({e.get(key, "") for e in environments})) for key in keys}


def _validated(c: CorruptionSpec, ds: Dataset) -> dict:
    """The corruption's parameters for this dataset: feature names turned into indices,
    then checked by the operator."""
    where = f"corruption {c.id!r} on dataset {ds.name!r}"
    params = resolve_names(c.params, ds.feature_names, where)
    try:
        return OPERATORS[c.name].validate(
            params, n_features=ds.X_train.shape[1], n_classes=ds.n_classes
        )
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _draw(
    study: Study, ds: Dataset, c: CorruptionSpec, params: dict, stats: TrainingStats
) -> _Draws:
    operator = OPERATORS[c.name]
    blocks_X, blocks_y, sev, rep = [], [], [], []
    log = []
    n = len(ds.y_test)
    repeats = c.repeats or study.repeats
    for d in c.severities:
        if d == 0.0:
            outs = [None] * repeats
        else:
            try:
                outs = [
                    operator(
                        ds.X_test,
                        ds.y_test,
                        d,
                        rng_for(study.name, ds.name, c.id, d, r),
                        stats,
                        **params,
                    )
                    for r in range(repeats)
                ]
            except (SpecError, InputError) as exc:  # a driver without spread, no categorical
                raise type(exc)(f"corruption {c.id!r} on dataset {ds.name!r}: {exc}") from None
            if all(_same(out, outs[0]) for out in outs[1:]):
                outs = outs[:1]  # the operator drew nothing: one draw, not identical copies
        for r, out in enumerate(outs):
            if out is None:
                hit = changed = 0.0
            else:
                blocks_X.append(out.X)
                blocks_y.append(out.y)
                sev.append(np.full(n, d))
                rep.append(np.full(n, r, dtype=np.int32))
                hit, changed = out.realised_rate, out.changed_share
            log.append(
                {
                    "dataset": ds.name,
                    "corruption": c.id,
                    "operator": c.name,
                    "severity": d,
                    "repeat": r,
                    "realised_rate": hit,
                    "changed_share": changed,
                    "params": json.dumps(params, sort_keys=True, default=str),
                }
            )
    p = ds.X_test.shape[1]
    X = np.concatenate(blocks_X) if blocks_X else np.empty((0, p), dtype=ds.X_test.dtype)
    changed = _changed_rows(X, ds.X_test)
    return _Draws(
        X=X[changed],
        changed=changed,
        y=np.concatenate(blocks_y) if blocks_y else np.empty(0, dtype=np.int32),
        severity=np.concatenate(sev) if sev else np.empty(0),
        repeat=np.concatenate(rep) if rep else np.empty(0, dtype=np.int32),
        log=log,
    )


def _changed_rows(X: np.ndarray, clean: np.ndarray) -> np.ndarray:
    """Which rows of ``X`` (blocks of the clean test set's rows, in its order) differ from
    their clean row in any byte: a NaN where the clean row has one is unchanged, a −0.0
    where it has 0.0 changed."""
    if X.dtype != clean.dtype or X.shape[1:] != clean.shape[1:] or not X.size:
        return np.ones(len(X), dtype=bool)
    row = np.dtype((np.void, X.dtype.itemsize * X.shape[1]))
    blocks = np.ascontiguousarray(X).view(row).reshape(-1, len(clean))
    return (blocks != np.ascontiguousarray(clean).view(row).reshape(1, -1)).ravel()


def _same(a: Corrupted, b: Corrupted) -> bool:
    """Whether two draws are byte-identical (NaN cells compare equal)."""
    return a.X.tobytes() == b.X.tobytes() and a.y.tobytes() == b.y.tobytes()


def _rows(
    ds: Dataset,
    c: CorruptionSpec,
    proba: np.ndarray,
    tile: int,
    *,
    y: np.ndarray,
    severity: float | np.ndarray,
    repeat: np.ndarray | None = None,
) -> pl.DataFrame:
    """Long-table rows for one block of predictions; ``tile`` repeats a block over repeats."""
    n = len(ds.y_test)
    if repeat is None:  # the clean block, one copy per repeat
        repeat = np.repeat(np.arange(tile, dtype=np.int32), n)
        proba, y = np.tile(proba, (tile, 1)), np.tile(y, tile)
    reps = len(y) // n
    y_pred = proba.argmax(axis=1).astype(np.int32)
    return pl.DataFrame(
        {
            "dataset": ds.name,
            "corruption": c.id,
            "severity": np.broadcast_to(np.asarray(severity, dtype=np.float64), len(y)),
            "repeat": repeat,
            "sample_id": np.tile(ds.sample_id, reps),
            "label": pl.Series(values=[None] * len(y), dtype=pl.Int32),
            "y_true": y.astype(np.int32),
            "y_clean": np.tile(ds.y_test, reps).astype(np.int32),
            "y_pred": y_pred,
            "confidence": proba[np.arange(len(y)), y_pred],
            "correct": y_pred == y,
            "proba": pl.Series(proba.astype(np.float32)).cast(pl.List(pl.Float32)),
        }
    )
