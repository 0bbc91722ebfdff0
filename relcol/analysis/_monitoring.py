"""Monitoring predictions collected over periods (weeks, days …): per-period metrics and
alerts against a baseline period.

A **stream** is one cell of the long table without its period: (study, dataset, model,
corruption, severity, label). Its rows carry a ``period`` (the annotations side table,
``--period`` at ingest); the periods of a stream are ordered as numbers where they are
numbers, before the others in text order (ISO dates and ``2026-W03`` sort by time).

**Per-period metrics** (``period_metrics``): every metric of the calibration table computed
on one stream × period as if it were a cell; accuracy, mean confidence, the gap, Brier
(top label), NLL (top label) and AUROC get the project's paired Poisson bootstrap interval
(the metrics of ``INTERVAL_METRICS``); ECE and MCE are printed without one (``NO_INTERVAL``
says why).

**Alerts** (``alerts``), each period against the baseline (the first period unless chosen):

- ``ece_rise``: ECE(period) − ECE(baseline) > ``ece_rise`` (default 0.02, the common
  monitoring rule ΔECE > 0.02) *and* a permutation test rejects "the period's calibration is the
  baseline's" at level ``alpha``;
- ``mce_rise``: MCE(period) > MCE(baseline) + ``mce_rise`` (default 0.05) *and* the same
  kind of test on the MCE difference rejects;
- ``drift``: the two-sample Kolmogorov–Smirnov test of the confidence distribution (each
  test sample's mean confidence over its rows) rejects at level ``alpha``.

The calibration tests are **stratified permutation tests**: the units are (test sample,
equal-width bin) pairs holding their rows' counts, Σ confidence and Σ correct; within each
bin the units are shuffled between baseline and period, so each side keeps its number of
units per bin (its confidence histogram) and only the link between confidence and being
right is exchanged. The null is therefore "within every confidence bin, baseline and period
rows are alike", which a change of the confidence distribution alone (the drift test's
business) does not violate, while the binned ECE's noise floor, which depends on the bin
counts, is reproduced in every permutation. p = (1 + #{Δ* ≥ Δ})/(1 + P), never 0.

The p-values of one stream (every period × check) are adjusted together by Holm's method
(``correction="holm"``), so on a stable stream the chance that *any* alert fires in a run is
at most ``alpha``; ``correction="none"`` keeps each check's own level. The threshold of a
rule only narrows which rejections alert. ``simulate_monitoring`` measures both claims
with known truth (``tests/test_monitoring.py`` holds the false-alarm rates and power).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from relcol.analysis._bootstrap import bootstrap, with_intervals
from relcol.checks import check_bins, check_int, check_interval
from relcol.errors import InputError, ParameterError
from relcol.metrics import bin_index, stream_key
from relcol.store import ANNOTATIONS, CELL, PREDICTIONS, Warehouse

#: The columns naming a stream: a cell of the long table without its period.
STREAM = CELL
_STREAM_TYPES = {name: PREDICTIONS[name] for name in STREAM}
#: The checks, in the order they are reported.
CHECKS = ("ece_rise", "mce_rise", "drift")
#: Per-period metrics shown (those in INTERVAL_METRICS get _lo/_hi).
PERIOD_METRICS = (
    "accuracy",
    "mean_confidence",
    "gap",
    "ece",
    "mce",
    "brier_top",
    "nll_top",
    "auroc",
)
#: The metric each check compares.
CHECK_METRIC = {"ece_rise": "ece", "mce_rise": "mce", "drift": "ks_statistic"}
#: Exit status of `relcol monitor` when an alert fires.
ALERT_EXIT = 4


@dataclass(frozen=True)
class Rules:
    """Alert thresholds and the tests' settings.

    Attributes
    ----------
    ece_rise
        Alert when ECE rises by more than this over the baseline (and the test rejects).
    mce_rise
        Alert when MCE exceeds the baseline's by more than this (and the test rejects).
    alpha
        Level of the tests (family-wise per stream with Holm's correction).
    permutations
        Permutations P of each calibration test.
    correction
        ``"holm"`` (per stream, every period × check) or ``"none"``.
    bins
        Equal-width bins of ECE and MCE.
    seed
        Seed of the permutations.
    """

    ece_rise: float = 0.02
    mce_rise: float = 0.05
    alpha: float = 0.05
    permutations: int = 999
    correction: str = "holm"
    bins: int = 15
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("ece_rise", "mce_rise"):
            value = getattr(self, name)
            check_interval(name, value, "[0, 1)")
        check_interval("alpha", self.alpha, "(0, 1)")
        check_int("permutations", self.permutations, 19)
        check_bins(self.bins)
        check_int("seed", self.seed, 0)
        if self.correction not in ("holm", "none"):
            raise ParameterError(f"correction must be 'holm' or 'none'. Got {self.correction!r}.")


#: The public name of ``Rules`` (``relcol.MonitorRules``).
MonitorRules = Rules


# -- periods ----------------------------------------------------------------------------------


#: A period that is a number: plain decimal notation, no spaces (the view uses the same).
NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def period_order(periods: Sequence[str]) -> list[str]:
    """The distinct periods in monitoring order: numbers (``NUMBER``) numerically, then the
    others in text order (ties between equal numbers, ``1`` and ``1.0``, by text).

    Examples
    --------
    >>> period_order(["10", "9", "2026-W02", "2026-W01", "9"])
    ['9', '10', '2026-W01', '2026-W02']
    """

    def key(p: str) -> tuple[int, float, str]:
        return (0, float(p), p) if NUMBER.fullmatch(p) else (1, 0.0, p)

    return sorted(set(periods), key=key)


def period_rows(predictions: pl.LazyFrame, annotations: pl.LazyFrame) -> pl.DataFrame:
    """The long-table rows that have a period, with ``period`` (text) and ``period_index``
    (its position in ``period_order`` over all rows) added."""
    key = ["study", "dataset", "model", "corruption", "severity", "seed", "repeat"]
    key += ["sample_id", "label"]
    periods = annotations.filter(pl.col("period").is_not_null()).select(*key, "period")
    rows = predictions.join(periods, on=key, how="inner", nulls_equal=True).collect()
    order = period_order(rows.get_column("period").unique().to_list())
    lookup = pl.DataFrame(
        {"period": order, "period_index": np.arange(len(order), dtype=np.int32)},
        schema={"period": pl.String, "period_index": pl.Int32},
    )
    return rows.join(lookup, on="period", how="left")


# -- per-period metrics -----------------------------------------------------------------------


def _as_cells(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows with each stream × period made a cell (corruption = the stream's number,
    severity = the period's index), and the table mapping the number back to the stream."""
    streams = (
        rows.select(STREAM).unique().sort(list(STREAM), nulls_last=True).with_row_index("stream")
    )
    cells = rows.join(streams, on=list(STREAM), how="left", nulls_equal=True).with_columns(
        corruption=pl.col("stream").cast(pl.String),
        severity=pl.col("period_index").cast(pl.Float64),
    )
    return cells, streams


def period_metrics(
    rows: pl.DataFrame,
    *,
    bins: int = 15,
    replicates: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per stream × period: the stream keys, ``period``, ``period_index``, ``n``
    (rows), ``samples`` (distinct test samples) and each of ``PERIOD_METRICS``, with
    ``_lo``/``_hi`` at level 1 − ``alpha`` for those the project's coverage study verifies
    (``replicates`` = 0: no intervals)."""
    if rows.is_empty():
        return _empty_metrics()
    cells, streams = _as_cells(rows)
    reps = bootstrap(
        cells, replicates=max(replicates, 1), bins=bins, seed=seed, proba=False, bin_replicates=()
    )
    table = reps.cells.with_columns(
        pl.Series(name, reps.points[name]).fill_nan(None) for name in PERIOD_METRICS
    )
    if replicates:
        table = with_intervals(table, reps, alpha, PERIOD_METRICS, spread=())
    counts = cells.group_by("corruption", "severity").agg(
        n=pl.len().cast(pl.Int64), samples=pl.col("sample_id").n_unique().cast(pl.Int64)
    )
    labels = rows.select("period", "period_index").unique()
    out = (
        table.join(counts, on=["corruption", "severity"], how="left")
        .with_columns(
            stream=pl.col("corruption").cast(pl.UInt32),
            period_index=pl.col("severity").cast(pl.Int32),
        )
        .drop(*STREAM)
        .join(streams, on="stream", how="left")
        .join(labels, on="period_index", how="left")
    )
    metrics = [c for c in table.columns if c not in STREAM]
    return out.select(*STREAM, "period", "period_index", "n", "samples", *metrics).sort(
        [*STREAM, "period_index"], nulls_last=True
    )


def _empty_metrics() -> pl.DataFrame:
    schema = {name: pl.Float64 for name in PERIOD_METRICS}
    return pl.DataFrame(
        schema={
            **_STREAM_TYPES,
            "period": pl.String,
            "period_index": pl.Int32,
            "n": pl.Int64,
            "samples": pl.Int64,
            **schema,
        }
    )


# -- the calibration tests --------------------------------------------------------------------


@dataclass(frozen=True)
class _Units:
    """(test sample, bin) units of two groups: bin, group (0 baseline, 1 period), rows,
    Σ(correct − confidence)."""

    bin: np.ndarray
    group: np.ndarray
    n: np.ndarray
    residual: np.ndarray


def _units(baseline: pl.DataFrame, period: pl.DataFrame, bins: int) -> _Units:
    both = pl.concat(
        [
            baseline.select("sample_id", "confidence", "correct").with_columns(group=pl.lit(0)),
            period.select("sample_id", "confidence", "correct").with_columns(group=pl.lit(1)),
        ]
    )
    units = (
        both.with_columns(bin_index("confidence", bins=bins))
        .group_by("group", "sample_id", "bin")
        .agg(
            n=pl.len(),
            residual=(pl.col("correct").cast(pl.Float64) - pl.col("confidence")).sum(),
        )
        .sort("bin", "group", "sample_id")
    )
    return _Units(
        units.get_column("bin").to_numpy().astype(np.int64),
        units.get_column("group").to_numpy().astype(np.int8),
        units.get_column("n").to_numpy().astype(np.float64),
        units.get_column("residual").to_numpy(),
    )


def _ece_mce(n: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ECE and MCE from per-bin rows and Σ(z − c), (… × M) arrays: Σ|R|/Σn, max |R|/n."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ece = np.abs(residual).sum(-1) / n.sum(-1)
        gaps = np.where(n > 0, np.abs(residual) / np.where(n > 0, n, 1), -np.inf)
    return ece, gaps.max(-1)


def permutation_test(
    units: _Units, bins: int, permutations: int, rng: np.random.Generator
) -> dict[str, float]:
    """Observed ECE/MCE of both groups and the one-sided p-values of their rises (period −
    baseline), from ``permutations`` shuffles of the units within each bin."""
    m = bins
    observed_n = np.zeros((2, m))
    observed_r = np.zeros((2, m))
    np.add.at(observed_n, (units.group, units.bin), units.n)
    np.add.at(observed_r, (units.group, units.bin), units.residual)
    ece, mce = _ece_mce(observed_n, observed_r)
    delta_ece, delta_mce = ece[1] - ece[0], mce[1] - mce[0]
    # units are sorted by bin. Each permutation shuffles every bin's units (one independent
    # shuffle per permutation, the draws of Generator.permuted) and gives the baseline the first
    # of them, as many as it has in that bin; a bin whose units are all on one side stays as it is
    from relcol.analysis._compiled import baseline_sums  # numba: on first use only

    starts = np.searchsorted(units.bin, np.arange(m))
    ends = np.searchsorted(units.bin, np.arange(m), side="right")
    base_count = np.bincount(units.bin[units.group == 0], minlength=m)
    mixed = [b for b in range(m) if 0 < base_count[b] < ends[b] - starts[b]]
    fixed = np.array([b not in mixed for b in range(m)])
    exceed_ece = exceed_mce = 0
    # batches of about 4·10⁶ unit draws; the draws go batch by batch, then bin by bin, so the
    # batch size is part of what a seed gives
    batch = max(1, 4_000_000 // max(len(units.bin), 1))
    done = 0
    while done < permutations:
        size = min(batch, permutations - done)
        per = np.zeros((size, 2, m))
        per_r = np.zeros((size, 2, m))
        per[:, 0, fixed] = observed_n[0, fixed]
        per_r[:, 0, fixed] = observed_r[0, fixed]
        per[:, 0, mixed], per_r[:, 0, mixed] = baseline_sums(
            units.n, units.residual, starts, ends, base_count, mixed, size, rng
        )
        per[:, 1] = observed_n.sum(0) - per[:, 0]
        per_r[:, 1] = observed_r.sum(0) - per_r[:, 0]
        e, x = _ece_mce(per, per_r)
        exceed_ece += int(np.sum(e[:, 1] - e[:, 0] >= delta_ece - 1e-12))
        exceed_mce += int(np.sum(x[:, 1] - x[:, 0] >= delta_mce - 1e-12))
        done += size
    return {
        "baseline_ece": float(ece[0]),
        "period_ece": float(ece[1]),
        "p_ece": (exceed_ece + 1) / (permutations + 1),
        "baseline_mce": float(mce[0]),
        "period_mce": float(mce[1]),
        "p_mce": (exceed_mce + 1) / (permutations + 1),
    }


def drift_test(baseline: pl.DataFrame, period: pl.DataFrame) -> tuple[float, float]:
    """KS statistic and two-sided p-value between the two groups' per-sample mean
    confidences (a sample's rows are one observation)."""

    def means(frame: pl.DataFrame) -> np.ndarray:
        return (
            frame.group_by("sample_id").agg(pl.col("confidence").mean()).get_column("confidence")
        ).to_numpy()

    from scipy.stats import ks_2samp  # most of a second to import: monitoring alone needs it

    result = ks_2samp(means(baseline), means(period), method="auto")
    return float(result.statistic), float(result.pvalue)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family (NaN stays NaN, not counted).

    Examples
    --------
    >>> holm(np.array([0.01, 0.04, 0.03])).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    defined = np.flatnonzero(np.isfinite(p))
    order = defined[np.argsort(p[defined], kind="stable")]
    m = len(order)
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def _family(rows: pl.DataFrame, correction: str) -> int:
    """How many p-values one adjustment covers: a stream's checks with Holm, else 1."""
    periods = rows.group_by(STREAM).agg(pl.col("period").n_unique()).get_column("period")
    checks = len(CHECKS) * max(int(periods.max() or 1) - 1, 1)
    return checks if correction == "holm" else 1


def needed_permutations(rows: pl.DataFrame, alpha: float, correction: str = "holm") -> int:
    """The fewest permutations with which every calibration check can reject: the smallest
    permutation p-value is 1/(P + 1), which Holm multiplies by the stream's number of checks."""
    return int(np.ceil(_family(rows, correction) / alpha - 1e-9)) - 1


def _check_resolution(rows: pl.DataFrame, rules: Rules) -> None:
    """Refuse permutations too few for any calibration check to reject."""
    need = needed_permutations(rows, rules.alpha, rules.correction)
    if rules.permutations < need:
        raise ParameterError(
            f"permutations {rules.permutations} cannot reject: the smallest p-value is "
            f"1/{rules.permutations + 1}, and {_family(rows, rules.correction)} checks at "
            f"alpha {rules.alpha:g} need permutations >= {need}"
        )


#: Columns of ``alerts``.
ALERT_COLUMNS = (
    *STREAM,
    "baseline",
    "period",
    "period_index",
    "check",
    "baseline_value",
    "period_value",
    "change",
    "threshold",
    "p_value",
    "p_adjusted",
    "alert",
)


def alerts(
    rows: pl.DataFrame, rules: Rules = Rules(), *, baseline: str | None = None
) -> pl.DataFrame:
    """One row per stream × monitored period × check (``CHECKS``): the values compared, the
    change, the rule's threshold, the p-value, its adjustment and whether the alert fires
    (columns ``ALERT_COLUMNS``). ``baseline`` names the baseline period (default: each
    stream's first); a stream without it, or with only the baseline, has no rows."""
    _check_resolution(rows, rules)
    out = []
    for stream, part in rows.partition_by(list(STREAM), as_dict=True, maintain_order=True).items():
        order = part.select("period", "period_index").unique().sort("period_index")
        periods = order.get_column("period").to_list()
        base = periods[0] if baseline is None else baseline
        if base not in periods:
            continue
        base_rows = part.filter(pl.col("period") == base)
        found = []
        for period, index in order.iter_rows():
            if period == base:
                continue
            current = part.filter(pl.col("period") == period)
            rng = np.random.default_rng(
                [rules.seed, stream_key("monitor:" + "/".join(map(str, stream))), index]
            )
            test = permutation_test(
                _units(base_rows, current, rules.bins), rules.bins, rules.permutations, rng
            )
            ks, p_ks = drift_test(base_rows, current)
            found += [
                (period, index, "ece_rise", test["baseline_ece"], test["period_ece"],
                 rules.ece_rise, test["p_ece"]),
                (period, index, "mce_rise", test["baseline_mce"], test["period_mce"],
                 rules.mce_rise, test["p_mce"]),
                (period, index, "drift", None, ks, None, p_ks),
            ]  # fmt: skip
        if not found:
            continue
        p = np.array([f[-1] for f in found])
        adjusted = holm(p) if rules.correction == "holm" else p
        for (period, index, check, before, after, threshold, p_value), q in zip(
            found, adjusted, strict=True
        ):
            change = after if before is None else after - before  # drift: the KS distance
            fires = bool(q <= rules.alpha) and (threshold is None or change > threshold)
            out.append(
                (*stream, base, period, index, check, before, after, change, threshold,
                 p_value, float(q), fires)
            )  # fmt: skip
    schema = {
        **_STREAM_TYPES,
        "baseline": pl.String,
        "period": pl.String,
        "period_index": pl.Int32,
        "check": pl.String,
        "baseline_value": pl.Float64,
        "period_value": pl.Float64,
        "change": pl.Float64,
        "threshold": pl.Float64,
        "p_value": pl.Float64,
        "p_adjusted": pl.Float64,
        "alert": pl.Boolean,
    }
    return pl.DataFrame(out, schema=schema, orient="row")


# -- one study of a warehouse ----------------------------------------------------------------


@dataclass(frozen=True)
class MonitorResult:
    """What ``monitor`` found for one study.

    Attributes
    ----------
    study, baseline
        The study, and the baseline period asked for (None: each stream's first).
    metrics
        ``period_metrics``: one row per stream × period.
    alerts
        ``alerts``: one row per stream × monitored period × check.
    rules
        The thresholds and test settings used.
    """

    study: str
    baseline: str | None
    metrics: pl.DataFrame
    alerts: pl.DataFrame
    rules: Rules

    @property
    def fired(self) -> pl.DataFrame:
        """The alerts that fired."""
        return self.alerts.filter(pl.col("alert"))

    def to_json(self) -> dict:
        """A JSON-able summary a scheduler can act on: ``status`` (``"alert"`` or ``"ok"``),
        ``exit_code``, the rules, the fired alerts, every check and every period's metrics."""
        fired = self.fired
        return {
            "study": self.study,
            "status": "alert" if fired.height else "ok",
            "exit_code": ALERT_EXIT if fired.height else 0,
            "baseline": self.baseline,
            "rules": {
                "ece_rise": self.rules.ece_rise,
                "mce_rise": self.rules.mce_rise,
                "alpha": self.rules.alpha,
                "correction": self.rules.correction,
                "permutations": self.rules.permutations,
                "bins": self.rules.bins,
                "seed": self.rules.seed,
            },
            "alerts": fired.to_dicts(),
            "checks": self.alerts.to_dicts(),
            "periods": self.metrics.to_dicts(),
        }


def monitor_rows(wh: Warehouse, study: str) -> pl.DataFrame:
    """The study's rows that have a period (``period_rows``); an annotations file written
    before periods existed reads as having none."""
    annotations = pl.scan_parquet(
        wh.sources(study)["annotations"],
        hive_partitioning=False,
        schema=ANNOTATIONS,
        missing_columns="insert",
    )
    return period_rows(wh.predictions(study), annotations)


def monitor(
    warehouse: Warehouse | str | None = None,
    *,
    study: str | None = None,
    baseline: str | None = None,
    rules: Rules = Rules(),
    replicates: int = 1000,
) -> MonitorResult:
    """Per-period metrics and alerts of one study ingested with a period column.

    ``baseline`` names the baseline period (default: each stream's first period);
    ``rules`` sets the thresholds and tests; ``replicates`` the bootstrap replicates of the
    per-period intervals (0: none), at level 1 − ``rules.alpha``.
    """
    check_int("replicates", replicates, 0)
    if not isinstance(rules, Rules):
        raise ParameterError(f"rules must be a Rules. Got {type(rules).__name__}.")
    wh = warehouse if isinstance(warehouse, Warehouse) else Warehouse.default(warehouse)
    study = wh.require_study(study)
    rows = monitor_rows(wh, study)
    if rows.is_empty():
        raise InputError(
            f"study {study!r} has no periods: ingest its predictions with --period COLUMN "
            "(or a column named period) to monitor them"
        )
    periods = period_order(rows.get_column("period").unique().to_list())
    if len(periods) < 2:
        raise InputError(
            f"study {study!r} has one period ({periods[0]!r}): monitoring compares each "
            "period with a baseline, so it needs at least two"
        )
    if baseline is not None and baseline not in periods:
        shown = ", ".join(map(repr, periods[:8])) + (" …" if len(periods) > 8 else "")
        raise InputError(f"baseline period {baseline!r} is not in study {study!r}: {shown}")
    metrics = period_metrics(
        rows, bins=rules.bins, replicates=replicates, alpha=rules.alpha, seed=rules.seed
    )
    return MonitorResult(study, baseline, metrics, alerts(rows, rules, baseline=baseline), rules)


def monitoring_tables(
    wh: Warehouse,
    study: str,
    *,
    bins: int = 15,
    replicates: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, pl.DataFrame]:
    """The report's tables: ``monitoring`` (per-period metrics) and ``monitoring_alerts``
    (every check, default thresholds; at least 999 permutations, more when the stream's
    number of checks and ``alpha`` need them) when the study has two periods or more."""
    rows = monitor_rows(wh, study)
    if rows.is_empty() or rows.get_column("period").n_unique() < 2:
        return {}
    permutations = max(Rules.permutations, needed_permutations(rows, alpha))
    rules = Rules(alpha=alpha, bins=bins, seed=seed, permutations=permutations)
    metrics = period_metrics(rows, bins=bins, replicates=replicates, alpha=alpha, seed=seed)
    return {"monitoring": metrics, "monitoring_alerts": alerts(rows, rules)}


# -- simulation with known truth --------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    """A simulated stream of ``periods`` periods of ``samples`` predictions each.

    Sample s of period t has the latent margin xₛ ~ N(1.2, 0.8²), scaled by ``sharpen`` from
    period ``change_at`` on; its confidence is c = σ(|x|) ∈ [½, 1) and it is right with
    probability c − ``gap`` (− ``rise`` from ``change_at`` on). So the truth is known: the
    binned ECE's population value is ``gap`` (+ ``rise``) in every bin, and the confidence
    distribution changes exactly when ``sharpen`` ≠ 1.
    """

    name: str
    gap: float = 0.0
    rise: float = 0.0
    sharpen: float = 1.0
    change_at: int = 4
    periods: int = 8
    samples: int = 1000

    @property
    def calibration_changes(self) -> bool:
        return self.rise != 0.0

    @property
    def confidence_changes(self) -> bool:
        return self.sharpen != 1.0


def simulate_stream(stream: Stream, rng: np.random.Generator, study: str = "stream"):
    """The long-table rows (with ``period`` and ``period_index``) of one simulated stream."""
    frames = []
    for t in range(stream.periods):
        changed = t >= stream.change_at
        x = rng.normal(1.2, 0.8, stream.samples) * (stream.sharpen if changed else 1.0)
        c = 1.0 / (1.0 + np.exp(-np.abs(x)))
        right = rng.random(stream.samples) < c - stream.gap - (stream.rise if changed else 0.0)
        frames.append(
            pl.DataFrame(
                {
                    "study": study,
                    "dataset": "simulated",
                    "model": "model",
                    "corruption": "none",
                    "severity": 0.0,
                    "label": pl.Series([None] * stream.samples, dtype=pl.Int32),
                    "seed": np.zeros(stream.samples, dtype=np.int32),
                    "repeat": np.zeros(stream.samples, dtype=np.int32),
                    "sample_id": np.arange(stream.samples, dtype=np.int64) + t * stream.samples,
                    "y_pred": np.zeros(stream.samples, dtype=np.int32),
                    "confidence": c,
                    "correct": right,
                    "period": f"week-{t + 1:02d}",
                    "period_index": np.full(stream.samples, t, dtype=np.int32),
                }
            )
        )
    return pl.concat(frames)


def simulate_monitoring(
    stream: Stream, runs: int, rules: Rules = Rules(), *, seed: int = 0
) -> pl.DataFrame:
    """How often each check alerts over ``runs`` independent simulated streams.

    One row per check and one for ``any`` (some check alerted): ``runs``, ``run_rate`` (share of runs where the check alerted for some
    period), ``run_rate_se`` (its Monte-Carlo standard error √(r(1 − r)/runs)) and
    ``period_rate`` (share of the monitored periods after the change, or of every monitored
    period in a stable stream, where it alerted). Under a stream where a check's truth does
    not change, ``run_rate`` is its false-alarm rate over a whole run; otherwise its power.
    """
    rng = np.random.default_rng(seed)
    tables = [
        alerts(simulate_stream(stream, rng, f"run-{i}"), rules).with_columns(run=pl.lit(i))
        for i in range(runs)
    ]
    table = pl.concat(tables)
    changed = (
        pl.col("period_index") >= stream.change_at
        if stream.calibration_changes or stream.confidence_changes
        else pl.lit(True)
    )
    table = table.select("check", "run", "period_index", "alert")
    anything = table.group_by("run", "period_index").agg(pl.col("alert").any())
    table = pl.concat([table, anything.select(pl.lit("any").alias("check"), pl.all())])
    per_run = table.group_by("check", "run").agg(pl.col("alert").any())
    rates = (
        per_run.group_by("check")
        .agg(runs=pl.len(), run_rate=pl.col("alert").mean())
        .join(
            table.filter(changed).group_by("check").agg(period_rate=pl.col("alert").mean()),
            on="check",
        )
    )
    return (
        rates.with_columns(
            run_rate_se=(pl.col("run_rate") * (1 - pl.col("run_rate")) / pl.col("runs")).sqrt()
        )
        .with_columns(
            order=pl.col("check").replace_strict({c: i for i, c in enumerate((*CHECKS, "any"))})
        )
        .sort("order")
        .select("check", "runs", "run_rate", "run_rate_se", "period_rate")
    )
