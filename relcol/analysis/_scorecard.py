"""The robustness scorecard (docs/consistency.md): stability, resilience, reliability, corruption errors.

After the "Simplified Robustness Evaluator" (docs/consistency.md):

- **stability** S: the share of (sample, seed, repeat) whose prediction under Gaussian noise of
  0.05 training SDs equals the clean prediction of the same seed: PA (§7) against the clean
  run, pooled over seeds and repeats;
- **resilience** R = min(acc(0.1 SD) / acc(0), 1), and ``resilience_chance`` =
  (acc − 1/K) / (acc₀ − 1/K) clipped to [0, 1], the share of the accuracy above a guess that
  survives (K classes: 1 + the largest class code in the dataset);
- **reliability** L = max(0, 1 − ECE / 0.15) of the clean predictions: 1 for a calibrated
  model, 0 at the ECE the traffic light calls red (:data:`RELIABILITY_ECE`). (1 − ECE
  sat between 0.92 and 0.99 for nearly every model: a scale on which an ECE of 0.08, bad
  enough to act on, still looked like a 92 % score);
- **robustness** = (w_S·S + w_R·R_chance + w_L·L) / (w_S + w_R + w_L), default weights
  0.4/0.3/0.3: the chance-corrected resilience, so keeping a guess's accuracy earns nothing;
- **corruption error** (Hendrycks & Dietterich 2019) against a named baseline model:
  CE_f,c = Σ_d err_f,c,d / Σ_d err_base,c,d over the severities d > 0 both have,
  ``relative_ce`` = max(Σ_d (err − clean err), 0) / Σ_d (err_base − clean err_base), and their
  means over corruptions ``mean_ce``, ``mean_relative_ce``. The same construction with ECE in
  place of the error rate gives the corruption calibration error ``cce``, ``relative_cce`` and
  their means. A relative form needs the baseline to degrade: its change must average at least
  :data:`MIN_CHANGE` per severity, else the ratio divides by noise (a baseline that loses
  0.002 of accuracy made a model 68 times "worse") and is null. A model that improves under a
  corruption scores 0 there, not a negative ratio that reads as "better than the baseline".

Nothing here fails for a study that lacks what a number needs: the number is null and the
``note`` column says why (no Gaussian noise at 0.05 or 0.1 SD, no baseline model, a baseline
that does not degrade). Accuracy and ECE come from the calibration table (cells pool every
seed and repeat); only stability reads prediction rows, and only those of the two severities
it compares.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from relcol.analysis._frames import require_columns
from relcol.checks import is_number
from relcol.errors import ParameterError
from relcol.metrics import exact_mean, exact_sum

#: Default weights of the composite score.
WEIGHTS: Mapping[str, float] = {"stability": 0.4, "resilience": 0.3, "reliability": 0.3}
BASELINE = "logistic_regression"
NOISE = "gaussian_noise"
STABILITY_AT = 0.05
RESILIENCE_AT = 0.1
#: Reliability L reaches 0 at this clean ECE: the traffic light's red threshold (docs/statistics.md).
RELIABILITY_ECE = 0.15
#: The relative corruption errors need the baseline's error (or ECE) to rise by at least this
#: much per severity on average over clean.
MIN_CHANGE = 0.01

_MODEL = ("study", "dataset", "model", "label")
_SCORECARD_COLUMNS = (
    *_MODEL,
    "classes",
    "stability",
    "resilience",
    "resilience_chance",
    "reliability",
    "robustness",
    "mean_ce",
    "mean_relative_ce",
    "mean_cce",
    "mean_relative_cce",
    "weights",
    "baseline",
    "note",
)
_CE_COLUMNS = (
    *_MODEL,
    "corruption",
    "severities",
    "ce",
    "relative_ce",
    "cce",
    "relative_cce",
)


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """The composite's weights: the three components, each >= 0, not all 0."""
    if weights is None:
        return dict(WEIGHTS)
    if not isinstance(weights, Mapping) or set(weights) != set(WEIGHTS):
        raise ParameterError(
            f"weights must map each of {', '.join(WEIGHTS)} to a number >= 0. Got {weights!r}."
        )
    out = {k: weights[k] for k in WEIGHTS}
    if not all(is_number(w) and w >= 0 for w in out.values()) or not sum(out.values()) > 0:
        raise ParameterError(f"weights must be numbers >= 0 with a positive sum. Got {weights!r}.")
    return {k: float(w) for k, w in out.items()}


def stability(
    predictions: pl.DataFrame | pl.LazyFrame,
    *,
    noise: str = NOISE,
    severity: float = STABILITY_AT,
) -> pl.DataFrame:
    """Prediction agreement between the clean and the slightly perturbed predictions.

    Parameters
    ----------
    predictions
        Prediction rows (the long table).
    noise
        The corruption whose severity ``severity`` is the perturbation (a noise scale).
    severity
        The perturbation's severity d.

    Returns
    -------
    polars.DataFrame
        One row per (study, dataset, model, label) having rows of ``noise`` at both d = 0 and
        d = ``severity``: ``pairs`` (Int64, the (sample, seed, repeat) compared) and
        ``stability`` (Float64), the share whose prediction at ``severity`` equals the clean
        prediction of the same sample and seed (at d = 0 every repeat holds the same clean
        predictions; the smallest repeat is used).
    """
    rows = (
        predictions.lazy()
        .filter(pl.col("corruption") == noise)
        .select(*_MODEL, "severity", "seed", "repeat", "sample_id", "y_pred")
    )
    clean = (
        rows.filter(pl.col("severity") == 0.0)
        .sort("repeat")
        .group_by([*_MODEL, "seed", "sample_id"])
        .agg(clean=pl.col("y_pred").first())
    )
    perturbed = rows.filter(pl.col("severity") == severity)
    return (
        perturbed.join(clean, on=[*_MODEL, "seed", "sample_id"], nulls_equal=True)
        .group_by(_MODEL)
        .agg(
            pairs=pl.len().cast(pl.Int64),
            stability=(pl.col("y_pred") == pl.col("clean")).mean(),
        )
        .sort(_MODEL, nulls_last=True)
        .collect()
    )


def corruption_error(calibration: pl.DataFrame, *, baseline: str = BASELINE) -> pl.DataFrame:
    """Corruption error and corruption calibration error of every model against ``baseline``.

    Parameters
    ----------
    calibration
        A calibration table (one row per cell): the cell keys, ``accuracy`` and ``ece``.
    baseline
        The model every other is measured against (its own CE is 1).

    Returns
    -------
    polars.DataFrame
        One row per (study, dataset, model, label, corruption) with severities d > 0:
        ``severities`` (Int64, the d > 0 summed over: those the model and the baseline both
        have), ``ce``, ``relative_ce`` (error rates), ``cce``, ``relative_cce`` (ECE)
        (Float64). Null when the baseline lacks the dataset or corruption, when its sum is 0,
        and, for the relative forms, when the baseline's change over clean averages less than
        :data:`MIN_CHANGE` per severity; a model's negative change counts as 0.
    """
    require_columns(
        calibration,
        ("study", "dataset", "model", "corruption", "severity", "accuracy", "ece"),
        "calibration",
    )
    cells = _with_label(calibration).select(
        *_MODEL, "corruption", "severity", err=1 - pl.col("accuracy"), ece="ece"
    )
    clean = cells.filter(pl.col("severity") == 0.0).select(
        *_MODEL, "corruption", err0="err", ece0="ece"
    )
    curves = cells.filter(pl.col("severity") > 0).join(
        clean, on=[*_MODEL, "corruption"], how="left", nulls_equal=True
    )
    base = curves.filter(pl.col("model") == baseline).select(
        "study", "dataset", "label", "corruption", "severity",
        b_err="err", b_err0="err0", b_ece="ece", b_ece0="ece0",
    )  # fmt: skip
    both = curves.join(
        base, on=["study", "dataset", "label", "corruption", "severity"], nulls_equal=True
    )
    sums = both.group_by([*_MODEL, "corruption"]).agg(
        severities=pl.len().cast(pl.Int64),
        err=exact_sum(pl.col("err")),
        b_err=exact_sum(pl.col("b_err")),
        rel=_change("err", "err0"),
        b_rel=_change("b_err", "b_err0"),
        ece=exact_sum(pl.col("ece")),
        b_ece=exact_sum(pl.col("b_ece")),
        erel=_change("ece", "ece0"),
        b_erel=_change("b_ece", "b_ece0"),
    )
    curves_keys = curves.select(*_MODEL, "corruption").unique()
    return (
        curves_keys.join(sums, on=[*_MODEL, "corruption"], how="left", nulls_equal=True)
        .select(
            *_MODEL,
            "corruption",
            pl.col("severities").fill_null(0),
            ce=_ratio("err", "b_err", positive=False),
            relative_ce=_relative("rel", "b_rel"),
            cce=_ratio("ece", "b_ece", positive=False),
            relative_cce=_relative("erel", "b_erel"),
        )
        .sort([*_MODEL, "corruption"], nulls_last=True)
    )


def scorecard(
    calibration: pl.DataFrame,
    predictions: pl.DataFrame | pl.LazyFrame,
    *,
    baseline: str = BASELINE,
    weights: Mapping[str, float] | None = None,
    noise: str = NOISE,
    stability_at: float = STABILITY_AT,
    resilience_at: float = RESILIENCE_AT,
) -> pl.DataFrame:
    """The robustness scorecard of every model (docs/consistency.md).

    Parameters
    ----------
    calibration
        The study's calibration table: cell keys, ``accuracy``, ``ece``.
    predictions
        The study's prediction rows (only ``noise`` at d = 0 and ``stability_at`` are read,
        and the class codes for K).
    baseline
        The model corruption errors are measured against.
    weights
        ``{"stability": …, "resilience": …, "reliability": …}``; default 0.4/0.3/0.3. The
        composite divides by their sum.
    noise, stability_at, resilience_at
        The corruption and severities that define stability and resilience.

    Returns
    -------
    polars.DataFrame
        One row per (study, dataset, model, label): ``classes`` K, ``stability``,
        ``resilience``, ``resilience_chance``, ``reliability``, ``robustness`` (from
        stability, the chance-corrected resilience and reliability; null when one is), ``mean_ce``, ``mean_relative_ce``, ``mean_cce``,
        ``mean_relative_cce`` (means over corruptions of :func:`corruption_error`, skipping
        nulls), ``weights`` and ``baseline`` (as used, for the record), and ``note``: why a
        number is null (null when none is).
    """
    require_columns(
        calibration,
        ("study", "dataset", "model", "corruption", "severity", "accuracy", "ece"),
        "calibration",
    )
    w = check_weights(weights)
    for name, value in (("stability_at", stability_at), ("resilience_at", resilience_at)):
        if not (is_number(value) and value > 0):
            raise ParameterError(f"{name} must be a severity > 0. Got {value!r}.")
    cal = _with_label(calibration)
    models = cal.select(_MODEL).unique()

    classes = (
        predictions.lazy()
        .group_by("study", "dataset")
        .agg(classes=pl.max_horizontal("y_true", "y_clean", "y_pred").max().cast(pl.Int64) + 1)
        .collect()
    )
    noisy = cal.filter(pl.col("corruption") == noise)
    at = {
        name: noisy.filter(pl.col("severity") == d).select(*_MODEL, pl.col("accuracy").alias(name))
        for name, d in (("acc0", 0.0), ("acc_r", resilience_at))
    }
    clean = (
        cal.filter(pl.col("severity") == 0.0)
        .with_columns(own=pl.col("corruption") == noise)
        .sort("own", descending=True)
        .group_by(_MODEL)
        .agg(clean_ece=pl.col("ece").first())  # the noise's clean cell; any clean cell else
    )
    stable = stability(predictions, noise=noise, severity=stability_at).select(*_MODEL, "stability")
    ce = corruption_error(calibration, baseline=baseline)
    mean_ce = ce.group_by(_MODEL).agg(
        mean_ce=exact_mean(pl.col("ce")),
        mean_relative_ce=exact_mean(pl.col("relative_ce")),
        mean_cce=exact_mean(pl.col("cce")),
        mean_relative_cce=exact_mean(pl.col("relative_cce")),
    )
    join = {"on": list(_MODEL), "how": "left", "nulls_equal": True}
    out = (
        models.join(classes, on=["study", "dataset"], how="left")
        .join(at["acc0"], **join)
        .join(at["acc_r"], **join)
        .join(clean, **join)
        .join(stable, **join)
        .join(mean_ce, **join)
    )
    chance = 1 / pl.col("classes")
    out = out.with_columns(
        resilience=pl.when(pl.col("acc0") > 0).then(
            (pl.col("acc_r") / pl.col("acc0")).clip(upper_bound=1.0)
        ),
        resilience_chance=pl.when(pl.col("acc0") > chance).then(
            ((pl.col("acc_r") - chance) / (pl.col("acc0") - chance)).clip(0.0, 1.0)
        ),
        reliability=(1 - pl.col("clean_ece") / RELIABILITY_ECE).clip(lower_bound=0.0),
    )
    total = sum(w.values())
    out = out.with_columns(
        robustness=(
            w["stability"] * pl.col("stability")
            + w["resilience"] * pl.col("resilience_chance")
            + w["reliability"] * pl.col("reliability")
        )
        / total,
        weights=pl.lit(" · ".join(f"{k} {v:g}" for k, v in w.items())),
        baseline=pl.lit(baseline),
    )
    study_wide = _notes(cal, models, noise, stability_at, resilience_at, baseline)
    per_model = pl.when(pl.col("acc0") <= chance).then(
        pl.lit("clean accuracy at or below chance 1/K: no chance-corrected resilience")
    )
    out = out.with_columns(
        note=pl.concat_str(
            [per_model, pl.lit(study_wide, pl.String)], separator="; ", ignore_nulls=True
        ).replace("", None)
    )
    return out.select(_SCORECARD_COLUMNS).sort(_MODEL, nulls_last=True)


def _with_label(calibration: pl.DataFrame) -> pl.DataFrame:
    if "label" in calibration.columns:
        return calibration
    return calibration.with_columns(label=pl.lit(None, pl.Int32))


def _change(value: str, clean: str) -> pl.Expr:
    """Σ_d (value − clean value); null without a clean cell (or with a null value)."""
    change = pl.col(value) - pl.col(clean)
    return pl.when(change.is_not_null().all()).then(exact_sum(change))


def _relative(change: str, base_change: str) -> pl.Expr:
    """max(change, 0) / the baseline's change; null unless the baseline's change averages
    :data:`MIN_CHANGE` per severity summed over."""
    enough = pl.col(base_change) >= MIN_CHANGE * pl.col("severities")
    return pl.when(enough).then(pl.col(change).clip(lower_bound=0.0) / pl.col(base_change))


def _ratio(numerator: str, denominator: str, *, positive: bool) -> pl.Expr:
    """numerator / denominator; null when the denominator is 0 (or, if ``positive``, <= 0)."""
    den = pl.col(denominator)
    ok = den > 0 if positive else den != 0
    return pl.when(ok).then(pl.col(numerator) / den)


def _notes(
    cal: pl.DataFrame,
    models: pl.DataFrame,
    noise: str,
    stability_at: float,
    resilience_at: float,
    baseline: str,
) -> str | None:
    """Why scorecard numbers are null study-wide, one clause per reason (None: no reason)."""
    severities = set(cal.filter(pl.col("corruption") == noise)["severity"].to_list())
    reasons = []
    if not severities:
        reasons.append(f"the study has no {noise} corruption: no stability or resilience")
    else:
        for what, d in (("stability", stability_at), ("resilience", resilience_at)):
            for need in sorted({0.0, d} - severities):
                reasons.append(f"no {noise} at d = {need:g}: no {what}")
    if reasons:  # robustness needs stability and resilience, not the corruption errors
        reasons.append("robustness needs all three components")
    if baseline not in set(models["model"].to_list()):
        reasons.append(f"baseline model {baseline!r} is not in the study: no corruption errors")
    return "; ".join(reasons) if reasons else None
