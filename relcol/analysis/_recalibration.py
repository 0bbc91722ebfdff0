"""Recalibration maps, fitted on a calibration split and judged on the disjoint rest (docs/multilabel.md).

Four maps of a stated confidence c (or probability vector p) to a recalibrated one:

- ``temperature``: with a probability vector, softmax(log p / T), T fitted by minimising the
  NLL of the true class (Guo et al. 2017; log p of a zero probability is taken at 1e−15).
  A source without a vector (top-label files such as the CIFAR predictions, multi-label
  rows) gets the **binary** variant σ(logit(c)/T), T fitted by minimising the NLL of
  z = 1[correct]: the same one-parameter family on the confidence's log-odds. Which one was
  used is recorded as the fit's ``variant`` (``softmax`` or ``binary``).
- ``platt``: σ(a·logit(c) + b), fitted by maximum likelihood on Platt's (1999) smoothed
  targets (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2), which keep the fit finite when a split has no
  errors.
- ``isotonic``: the non-decreasing step function of c closest to z in squared error
  (scikit-learn's ``IsotonicRegression``, outputs in [0, 1], clipped outside the fitted range).
- ``histogram``: equal-mass bins of the calibration confidences (M = ``bins``; ties never
  split a value across two bins), each mapped to its observed accuracy (Zadrozny & Elkan 2001).

All maps but the softmax temperature act on the top-label confidence and leave ``y_pred``
(and so ``correct``) unchanged; their output has no probability vector. logit(c) is taken
of c clipped to [1e−15, 1 − 1e−15], so confidences of exactly 0 or 1 have a finite log-odds.

**Every top-label map's output lies in [ε, 1 − ε] with ε = 1/(n_fit + 2)**, n_fit the rows
it was fitted on (``RecalibrationMap.eps``): this clipping is part of the map. n_fit rows
cannot support a probability beyond Laplace's rule of succession for n_fit straight
outcomes, (n_fit + 1)/(n_fit + 2) (the smoothing Platt applies to his targets too), and an
exact 0 or 1 makes one wrong evaluation row cost −log 10⁻¹⁵ ≈ 34.5 nats of NLL: unclipped,
isotonic steps of 0 and 1 fitted on 100 rows per label of the email example raise its NLL
from 0.32 to 0.45–1.05 while lowering its ECE and Brier score. The softmax temperature
keeps its vector (a clipped top entry would no longer sum to 1 with the rest); its output
is 0 or 1 only by float underflow.

**The split** is of ``sample_id`` per dataset: a seeded permutation of the distinct ids puts
round(fraction · n) of them in the calibration split (``calibration_split``), or the file's
own ``split`` column decides. A map is fitted per (dataset, model, seed, label), that is
per frozen model (and label), on its calibration-split rows at severity 0 (the clean
predictions), each distinct prediction of a sample once: every corruption's and every
repeat's severity-0 row is the same prediction, and n_fit counts predictions, not their
copies. The map is applied to
every evaluation-split row at every severity: calibrate on clean data, then watch the map
hold or fail under corruption. No row of an evaluation sample is ever used to fit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import special

from relcol.analysis._scores import binary_scores
from relcol.checks import check_interval
from relcol.errors import InputError, ParameterError
from relcol.metrics import CLIP_EPS
from relcol.store import CELL

METHODS = ("temperature", "platt", "isotonic", "histogram")
#: The per-frozen-model groups a map is fitted on.
GROUP = ("dataset", "model", "seed", "label")
#: Metrics the before/after table compares (``recalibration_table``).
COMPARED = ("mean_confidence", "gap", "ece", "mce", "brier_top", "nll_top")
#: Probabilities and confidences are clipped to [EPS, 1 − EPS] before a log, as nll_top's.
EPS = CLIP_EPS


@dataclass(frozen=True)
class RecalibrationMap:
    """A fitted map. ``params`` holds what defines it (T; a, b; thresholds; edges)."""

    method: str
    variant: str
    n_fit: int
    params: dict = field(default_factory=dict)

    @property
    def eps(self) -> float | None:
        """The map's output lies in [eps, 1 − eps]: 1/(n_fit + 2) (None: the softmax
        temperature, whose vector is left whole)."""
        return None if self.variant == "softmax" else 1.0 / (self.n_fit + 2)

    def apply(
        self, confidence: np.ndarray, proba: np.ndarray | None, y_pred: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The recalibrated confidence of each row (and vector, for the softmax temperature)."""
        c = np.asarray(confidence, dtype=np.float64)
        if self.method == "temperature" and self.variant == "softmax":
            scaled = _softmax(_log(proba) / self.params["T"])
            return scaled[np.arange(len(scaled)), y_pred], scaled
        if self.method == "temperature":
            out = special.expit(_logit(c) / self.params["T"])
        elif self.method == "platt":
            out = special.expit(self.params["a"] * _logit(c) + self.params["b"])
        elif self.method == "isotonic":
            out = np.interp(c, self.params["x"], self.params["y"])
        else:
            edges, values = np.asarray(self.params["edges"]), np.asarray(self.params["values"])
            out = values[np.minimum(np.searchsorted(edges, c, side="left"), len(edges) - 1)]
        return np.clip(out, self.eps, 1 - self.eps), None

    def describe(self) -> dict:
        """A small JSON-able summary for the runs table (not the full step functions)."""
        out = {"method": self.method, "variant": self.variant, "n_fit": self.n_fit}
        if self.eps is not None:
            out["eps"] = self.eps
        if self.method in ("temperature", "platt"):
            out.update({k: float(v) for k, v in self.params.items()})
        elif self.method == "isotonic":
            out["steps"] = len(self.params["x"])
        else:
            out["bins"] = len(self.params["edges"])
        return out


def fit_map(
    method: str,
    *,
    confidence: np.ndarray,
    correct: np.ndarray,
    proba: np.ndarray | None = None,
    y_true: np.ndarray | None = None,
    bins: int = 15,
) -> RecalibrationMap:
    """Fit one map on calibration rows.

    Parameters
    ----------
    method
        One of ``METHODS``.
    confidence, correct
        The stated top-label confidence and whether the prediction was right.
    proba, y_true
        The probability vectors and true class codes, for the softmax temperature; with
        ``proba`` None, temperature scaling uses its binary variant.
    bins
        Bins of the histogram map.
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}. Got {method!r}.")
    c = np.asarray(confidence, dtype=np.float64)
    z = np.asarray(correct, dtype=np.float64)
    n = len(c)
    if method == "temperature" and proba is not None:
        logp = _log(proba)
        true = logp[np.arange(n), y_true]

        def nll(log_t: float) -> float:
            scaled = logp / np.exp(log_t)
            return float(np.mean(special.logsumexp(scaled, axis=1) - true / np.exp(log_t)))

        return RecalibrationMap(method, "softmax", n, {"T": _minimise_log_t(nll)})
    if method == "temperature":
        s = _logit(c)

        def nll(log_t: float) -> float:
            return _bernoulli_nll(s / np.exp(log_t), z)

        return RecalibrationMap(method, "binary", n, {"T": _minimise_log_t(nll)})
    if method == "platt":
        positives = z.sum()
        target = np.where(z > 0.5, (positives + 1) / (positives + 2), 1 / (n - positives + 2))
        s = _logit(c)

        def loss(ab: np.ndarray) -> tuple[float, np.ndarray]:
            t = ab[0] * s + ab[1]
            q = special.expit(t)
            value = float(np.mean(np.logaddexp(0, t) - target * t))
            residual = q - target
            return value, np.array([np.mean(residual * s), np.mean(residual)])

        from scipy import optimize  # a third of a second to import: fitting a map alone needs it

        fit = optimize.minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
        return RecalibrationMap(method, "", n, {"a": float(fit.x[0]), "b": float(fit.x[1])})
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        iso.fit(c, z)
        return RecalibrationMap(
            method, "", n, {"x": iso.X_thresholds_.copy(), "y": iso.y_thresholds_.copy()}
        )
    ordered = np.sort(c)
    uppers = [chunk[-1] for chunk in np.array_split(ordered, min(bins, n)) if len(chunk)]
    edges = np.unique(uppers)
    index = np.minimum(np.searchsorted(edges, c, side="left"), len(edges) - 1)
    counts = np.bincount(index, minlength=len(edges))
    values = np.bincount(index, weights=z, minlength=len(edges)) / np.maximum(counts, 1)
    return RecalibrationMap(method, "", n, {"edges": edges, "values": values})


def calibration_split(
    samples: pl.DataFrame, *, fraction: float = 0.5, seed: int = 0
) -> pl.DataFrame:
    """Assign each (dataset, sample_id) to ``calibration`` or ``evaluation``.

    Per dataset, the distinct sample ids are sorted and permuted by a generator keyed by
    (seed, dataset) alone, and the first round(fraction · n) go to calibration: the same
    ids, fraction and seed give the same split on any machine, in any row order.

    Returns
    -------
    pl.DataFrame
        ``dataset``, ``sample_id``, ``split``.
    """
    check_interval("fraction", fraction, "(0, 1)")
    parts = []
    for (dataset,), ids in (
        samples.select("dataset", "sample_id")
        .unique()
        .partition_by("dataset", as_dict=True, maintain_order=True)
        .items()
    ):
        ids = np.sort(ids.get_column("sample_id").to_numpy())
        if len(ids) < 2:
            raise InputError(
                f"dataset {dataset!r} has {len(ids)} sample; a calibration split needs at least 2"
            )
        k = min(max(round(fraction * len(ids)), 1), len(ids) - 1)
        order = _rng(seed, dataset).permutation(len(ids))
        split = np.full(len(ids), "evaluation", dtype=object)
        split[order[:k]] = "calibration"
        parts.append(pl.DataFrame({"dataset": dataset, "sample_id": ids, "split": split}))
    return pl.concat(parts).with_columns(pl.col("split").cast(pl.String))


@dataclass(frozen=True)
class Recalibrated:
    """What ``recalibrate_rows`` made."""

    rows: pl.DataFrame
    """Evaluation-split rows, once as they were (model m) and once per method (m+method)."""
    fits: list[dict]
    """One description per fitted map (group keys plus ``RecalibrationMap.describe``)."""
    models: dict[str, tuple[str, str]]
    """Recalibrated model name -> (original model, method)."""


def recalibrate_rows(
    rows: pl.DataFrame,
    split: pl.DataFrame,
    methods: Sequence[str],
    *,
    bins: int = 15,
) -> Recalibrated:
    """Fit each method per frozen model on calibration rows; apply it to evaluation rows.

    Parameters
    ----------
    rows
        Long-table rows of one study.
    split
        ``dataset``, ``sample_id``, ``split`` (from ``calibration_split`` or the file).
    methods
        Some of ``METHODS``.
    bins
        Bins of the histogram map.
    """
    methods = _check_methods(methods)
    rows = rows.join(split, on=["dataset", "sample_id"], how="left")
    unassigned = rows.filter(pl.col("split").is_null())
    if unassigned.height:
        first = unassigned.row(0, named=True)
        raise InputError(
            f"{unassigned.height:,} rows have no split, e.g. dataset {first['dataset']!r} "
            f"sample_id {first['sample_id']}; every sample must be in the calibration or "
            "the evaluation split"
        )
    fits, blocks, models = [], [], {}
    evaluation = rows.filter(pl.col("split") == "evaluation")
    # A prediction once: every corruption's severity 0 (and every repeat's) is the same
    # prediction of the same sample, and n_fit (the clipping's ε, Platt's targets) counts
    # predictions, not their copies. Predictions that differ (a sampled LLM) all stay.
    fitting = rows.filter((pl.col("split") == "calibration") & (pl.col("severity") == 0.0))
    fitting = fitting.unique(
        [*GROUP, "sample_id", "y_true", "y_pred", "confidence", "proba"],
        keep="first",
        maintain_order=True,
    )
    groups = fitting.partition_by(list(GROUP), as_dict=True, maintain_order=True)
    for key, target in evaluation.partition_by(
        list(GROUP), as_dict=True, maintain_order=True
    ).items():
        where = dict(zip(GROUP, key, strict=True))
        calib = groups.get(key)
        if calib is None or calib.height == 0:
            raise InputError(
                f"no calibration rows at severity 0 for {_describe(where)}; recalibration is "
                "fitted on the clean (severity 0) predictions of calibration-split samples"
            )
        softmax = _vectors(calib) is not None and _vectors(target) is not None
        blocks.append(target)
        for method in methods:
            fitted = fit_map(
                method,
                confidence=calib.get_column("confidence").to_numpy(),
                correct=calib.get_column("correct").to_numpy(),
                proba=_vectors(calib) if softmax else None,
                y_true=calib.get_column("y_true").to_numpy() if softmax else None,
                bins=bins,
            )
            confidence, proba = fitted.apply(
                target.get_column("confidence").to_numpy(),
                _vectors(target) if softmax else None,
                target.get_column("y_pred").to_numpy(),
            )
            name = f"{where['model']}+{method}"
            models[name] = (where["model"], method)
            blocks.append(
                target.with_columns(
                    model=pl.lit(name),
                    confidence=pl.Series(confidence, dtype=pl.Float64),
                    proba=(
                        pl.Series(proba.astype(np.float32)).cast(pl.List(pl.Float32))
                        if proba is not None
                        else pl.lit(None, pl.List(pl.Float32))
                    ),
                )
            )
            fits.append({**where, **fitted.describe()})
    if not blocks:
        raise InputError("the evaluation split has no rows")
    return Recalibrated(pl.concat(blocks).drop("split"), fits, models)


def recalibration_table(
    rows: pl.DataFrame | pl.LazyFrame,
    models: dict[str, tuple[str, str]],
    *,
    bins: int = 15,
) -> pl.DataFrame:
    """Before vs after, per cell and method, on the evaluation split.

    Parameters
    ----------
    rows
        The rows of a recalibrated study (``recalibrate_rows``): each original model's
        evaluation rows and their recalibrated copies.
    models
        Recalibrated model -> (original model, method).

    Returns
    -------
    pl.DataFrame
        The cell key with ``model`` the original model, ``method``, ``n``, ``metric`` (one
        of ``COMPARED``), ``before``, ``after``, ``change`` = after − before. Paired
        bootstrap intervals of the change (``change_lo``, ``change_hi``) are pending the
        statistical layer.
    """
    scores = binary_scores(rows, CELL, bins=bins, outcome="correct").collect()
    long = scores.unpivot(index=[*CELL, "n"], on=list(COMPARED), variable_name="metric")
    pairs = pl.DataFrame(
        {
            "after_model": list(models),
            "model": [m for m, _ in models.values()],
            "method": [x for _, x in models.values()],
        },
        schema={"after_model": pl.String, "model": pl.String, "method": pl.String},
    )
    before = long.join(pairs.select("model").unique(), on="model").rename({"value": "before"})
    after = long.join(pairs, left_on="model", right_on="after_model").select(
        *[k for k in CELL if k != "model"],
        pl.col("model_right").alias("model"),
        "method",
        "metric",
        pl.col("value").alias("after"),
    )
    keys = [*CELL, "metric"]
    order = pl.col("metric").replace_strict({m: i for i, m in enumerate(COMPARED)})
    methods = pl.col("method").replace_strict({m: i for i, m in enumerate(METHODS)})
    return (
        after.join(before, on=keys, how="inner", nulls_equal=True)
        .select(*CELL, "method", "n", "metric", "before", "after")
        .with_columns(change=pl.col("after") - pl.col("before"))
        .sort([*CELL, methods, order], nulls_last=True)
    )


def _check_methods(methods: Sequence[str]) -> list[str]:
    methods = [methods] if isinstance(methods, str) else list(methods)
    bad = [m for m in methods if m not in METHODS]
    if not methods or bad:
        raise ParameterError(
            f"method must be one of {', '.join(METHODS)}. Got {', '.join(map(repr, bad)) or 'none'}."
        )
    return list(dict.fromkeys(methods))


def _describe(where: dict) -> str:
    label = "" if where["label"] is None else f", label {where['label']}"
    return f"dataset {where['dataset']!r}, model {where['model']!r}, seed {where['seed']}{label}"


def _vectors(frame: pl.DataFrame) -> np.ndarray | None:
    """The rows' probability vectors as a matrix, or None if any row lacks one."""
    proba = frame.get_column("proba")
    if proba.null_count() or proba.list.len().n_unique() != 1:
        return None
    k = int(proba.list.len()[0])
    return proba.cast(pl.List(pl.Float64)).explode().to_numpy().reshape(-1, k)


def _log(proba: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(np.asarray(proba, dtype=np.float64), EPS))


def _logit(c: np.ndarray) -> np.ndarray:
    return special.logit(np.clip(c, EPS, 1 - EPS))


def _softmax(scaled: np.ndarray) -> np.ndarray:
    return np.exp(scaled - special.logsumexp(scaled, axis=1, keepdims=True))


def _bernoulli_nll(t: np.ndarray, z: np.ndarray) -> float:
    """Mean −[z log σ(t) + (1 − z) log(1 − σ(t))], stable for large |t|."""
    return float(np.mean(np.logaddexp(0, t) - z * t))


def _minimise_log_t(nll) -> float:
    """T in [e^−6, e^6] minimising ``nll(log T)`` (bounded Brent; deterministic)."""
    from scipy import optimize

    fit = optimize.minimize_scalar(
        nll, bounds=(-6.0, 6.0), method="bounded", options={"xatol": 1e-10}
    )
    return float(np.exp(fit.x))


def _rng(seed: int, dataset: str) -> np.random.Generator:
    digest = hashlib.blake2b(repr(("recalibration", seed, dataset)).encode(), digest_size=16)
    return np.random.default_rng(np.random.SeedSequence(int.from_bytes(digest.digest(), "little")))
