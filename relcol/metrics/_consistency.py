"""Samplewise consistency across replicates (docs/consistency.md).

Within a cell, the rows of one **stratum** are τ **replicates** of the same condition on the
same test samples. Along the ``axis`` ``"repeat"`` the replicates are the corruption repeats
of one training seed (the stratum is the seed); along ``"seed"`` they are the training seeds
of one repeat (the stratum is the repeat). Every pairwise metric is the mean over the
C(τ, 2) replicate pairs of a stratum; a cell's value is the **mean over its strata**, each
stratum weighing the same (in a study every stratum has the same τ and the same samples, so
this is also the mean over all within-stratum pairs).

Which samples count: a stratum's τ is the number of distinct replicates in it, and a sample
enters only if all τ of them predicted it (in a study, all do). Strata with τ < 2 have no
pairs and give no row. At severity 0 every corruption is the identity, so the repeats of a
seed are the same predictions and the ``repeat`` axis is trivially perfect there (label
noise redraws the evaluation labels per repeat, so its errors can still differ).

Two grains, as for calibration:

- **per-sample counts** (``consistency_counts``; one row per stratum × sample): kₛ
  replicates wrong, the distinct predicted classes, Σ_c C(n_sc, 2) agreeing replicate pairs
  and the normalised entropy of the predicted classes. EC_g, EC_acc, PA, churn, the pooled
  EC_l and the always-right / always-wrong / flipping shares are closed forms of these
  counts (the ``*_from_counts`` builders), O(n·τ) instead of O(n·τ²);
- **per-pair statistics** (``consistency_pairs``; one row per stratum × replicate pair):
  the error Gram entries G_ij = |eᵢ ∧ eⱼ|, the prediction contingency table and its
  margins. EC_l (a mean of ratios), EC_corr, Cohen's κ, Cramér's V and Geirhos' κₑ need
  them (the ``*_from_pairs`` builders).

How the pairs are computed without a pair × sample self-join of every row: a sample whose
τ replicates all predict the same class and are all right or all wrong (a **constant**
sample) adds the same amount to every pair, so it is counted once per class. Only the
other (**varying**) samples are spread into pairs: their predictions are gathered into one
list per sample and, for each replicate position pair (i, j), one group-by counts the
(ŷᵢ, ŷⱼ) cells and the both-wrong samples of every stratum at once (a Python loop over the
τ(τ−1)/2 position pairs builds those group-bys; nothing loops over rows or strata). That is
O(n_varying·τ²) work in cache-sized aggregations, against O(n·τ) for the counts; the Gram
entries, agreements, κ's margins and V's χ² then come from small joins of those cells.

Every frame function returns a lazy plan and reads nothing until it is collected: the plan
selects the columns it needs and hands them, once, to one ``map_batches`` step, inside which
the steps run eagerly and keep the frames several later steps read (the replicate layout, the
per-row units, the per-sample counts). The SQL twins (``sql/macros/consistency*.sql``) do
the same steps, but join the varying samples' rows to themselves on (stratum, sample).

Conventions (docs/consistency.md), per pair:

- EC_l = |eᵢ ∧ eⱼ| / |eᵢ ∨ eⱼ|, and 1 when both error sets are empty;
- EC_corr (Pearson of the error vectors) is null when either vector is constant;
- κₑ = (c_obs − c_exp) / (1 − c_exp), and 1 when c_obs = 1 (the only case with c_exp = 1);
- PA_κ (Cohen's κ of the predictions) is 1 when the two prediction vectors are identical
  (which covers the only 0/0 case, both vectors the same constant class);
- PA_V (Cramér's V) is 1 for identical prediction vectors, and null when they differ and
  either is constant (one predicted class: there is no association to measure);
- means over pairs and over strata skip null values; a mean of only nulls is null. So that a
  mean of few pairs is not read as a mean of all, ``<metric>_pairs`` beside ``pairs`` counts
  the pairs that defined it, for the two metrics a pair can leave undefined (``PARTIAL``):
  EC_corr and PA_V. The other pairwise metrics are defined for every pair (by the
  conventions above), so their count is ``pairs``.

The normalised entropy divides by log K, K the number of classes of the cell: one plus the
largest class code among ``y_true``, ``y_clean`` and ``y_pred`` of its rows (so every class
with a test sample counts); with K < 2 it is 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import polars as pl

from relcol.checks import check_columns, check_keys
from relcol.errors import ParameterError
from relcol.metrics._exact import exact_mean, exact_sum
from relcol.store import CELL

#: The axes of variation, in output order: axis -> (stratum column, replicate column).
AXES: dict[str, tuple[str, str]] = {"repeat": ("seed", "repeat"), "seed": ("repeat", "seed")}

#: Pairwise metrics a pair can leave undefined (null): ``consistency`` counts their pairs.
PARTIAL = ("ec_corr", "pa_v")

#: Columns of ``consistency`` after the ``by`` keys (docs/warehouse.md).
CONSISTENCY_COLUMNS = (
    "axis",
    "replicates",
    "strata",
    "pairs",
    *(f"{name}_pairs" for name in PARTIAL),
    "n",
    "accuracy",
    "consistently_correct",
    "always_wrong",
    "flipping",
    "distinct_classes",
    "prediction_entropy",
    "ec_l",
    "ec_l_pooled",
    "ec_g",
    "ec_acc",
    "ec_corr",
    "pa",
    "churn",
    "pa_kappa",
    "pa_v",
    "kappa_error",
)

#: The columns of ``consistency`` that are means over strata (Float64), from ``accuracy`` on.
CONSISTENCY_MEANS = CONSISTENCY_COLUMNS[CONSISTENCY_COLUMNS.index("accuracy") :]

#: Columns of ``consistency_samples`` after the ``by`` keys.
SAMPLE_COLUMNS = (
    "axis",
    "sample_id",
    "y_clean",
    "replicates",
    "strata",
    "accuracy",
    "consistently_correct",
    "always_wrong",
    "flipping",
    "distinct_classes",
    "prediction_entropy",
    "ec_g",
    "ec_acc",
    "pa",
)

#: Columns of ``consistency_counts`` after the ``by`` keys.
COUNT_COLUMNS = (
    "axis",
    "stratum",
    "sample_id",
    "y_clean",
    "replicates",
    "wrong",
    "distinct_classes",
    "agreeing_pairs",
    "prediction_entropy",
)

#: Columns of ``consistency_pairs`` after the ``by`` keys.
PAIR_COLUMNS = (
    "axis",
    "stratum",
    "replicate_i",
    "replicate_j",
    "n",
    "wrong_i",
    "wrong_j",
    "both_wrong",
    "agree",
    "chance_agreement",
    "phi2",
    "classes_i",
    "classes_j",
    "ec_l",
    "ec_g",
    "ec_acc",
    "ec_corr",
    "pa",
    "pa_kappa",
    "pa_v",
    "kappa_error",
)

_ROW_COLUMNS = ("seed", "repeat", "sample_id", "y_true", "y_clean", "y_pred", "correct")


# Closed forms over per-sample counts: aggregate the consistency_counts rows of one stratum ----


def _choose2(x: pl.Expr) -> pl.Expr:
    """C(x, 2) in Float64 (exact for any count below 2**26)."""
    x = x.cast(pl.Float64)
    return x * (x - 1) / 2


def accuracy_from_counts(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``accuracy``: mean accuracy of the replicates, 1 − Σₛ kₛ / Σₛ τ."""
    k, tau = pl.col(wrong).cast(pl.Float64), pl.col(replicates).cast(pl.Float64)
    return (1 - k.sum() / tau.sum()).alias("accuracy")


def consistently_correct(wrong: str = "wrong") -> pl.Expr:
    """``consistently_correct``: share of samples every replicate got right (kₛ = 0).

    Examples
    --------
    The published worked example: two runs, each 80 % accurate, only 6 of 10 subjects right in
    both (errors on subjects 6 and 9, then on 7 and 8).

    >>> import polars as pl
    >>> from relcol.metrics import consistently_correct
    >>> counts = pl.DataFrame({"wrong": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]})
    >>> counts.select(consistently_correct()).item()
    0.6
    """
    return (pl.col(wrong) == 0).mean().alias("consistently_correct")


def always_wrong(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``always_wrong``: share of samples every replicate got wrong (kₛ = τ)."""
    return (pl.col(wrong) == pl.col(replicates)).mean().alias("always_wrong")


def flipping(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``flipping``: share of samples some replicates got right and some wrong (0 < kₛ < τ)."""
    k = pl.col(wrong)
    return ((k > 0) & (k < pl.col(replicates))).mean().alias("flipping")


def distinct_classes_from_counts(distinct_classes: str = "distinct_classes") -> pl.Expr:
    """``distinct_classes``: mean number of distinct classes predicted for a sample."""
    return pl.col(distinct_classes).cast(pl.Float64).mean().alias("distinct_classes")


def prediction_entropy_from_counts(prediction_entropy: str = "prediction_entropy") -> pl.Expr:
    """``prediction_entropy``: mean normalised entropy of a sample's predicted classes."""
    return exact_mean(pl.col(prediction_entropy)).alias("prediction_entropy")


def ec_g_from_counts(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``ec_g``: mean over pairs of |eᵢ ∧ eⱼ| / n = Σₛ C(kₛ, 2) / (n·C(τ, 2)).

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import ec_g_from_counts
    >>> counts = pl.DataFrame({"wrong": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1], "replicates": 2})
    >>> counts.select(ec_g_from_counts()).item()  # the two runs share no error
    0.0
    """
    both = _choose2(pl.col(wrong)).sum()
    return (both / _choose2(pl.col(replicates)).sum()).alias("ec_g")


def ec_acc_from_counts(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``ec_acc``: mean over pairs of mean(eᵢ = eⱼ) = Σₛ [C(kₛ, 2) + C(τ − kₛ, 2)] / (n·C(τ, 2))."""
    k, tau = pl.col(wrong), pl.col(replicates)
    same = (_choose2(k) + _choose2(tau - k)).sum()
    return (same / _choose2(tau).sum()).alias("ec_acc")


def pa_from_counts(
    agreeing_pairs: str = "agreeing_pairs", replicates: str = "replicates"
) -> pl.Expr:
    """``pa``: mean over pairs of mean(ŷᵢ = ŷⱼ) = Σₛ Σ_c C(n_sc, 2) / (n·C(τ, 2))."""
    agree = pl.col(agreeing_pairs).cast(pl.Float64).sum()
    return (agree / _choose2(pl.col(replicates)).sum()).alias("pa")


def churn_from_counts(
    agreeing_pairs: str = "agreeing_pairs", replicates: str = "replicates"
) -> pl.Expr:
    """``churn`` = 1 − ``pa``: mean share of samples on which two replicates disagree."""
    return (1 - pa_from_counts(agreeing_pairs, replicates)).alias("churn")


def ec_l_pooled_from_counts(wrong: str = "wrong", replicates: str = "replicates") -> pl.Expr:
    """``ec_l_pooled``: Σ_pairs |eᵢ ∧ eⱼ| / Σ_pairs |eᵢ ∨ eⱼ| = Σₛ C(kₛ,2) / Σₛ [C(τ,2) − C(τ−kₛ,2)].

    1 when no replicate makes an error (every union is empty).
    """
    k, tau = pl.col(wrong), pl.col(replicates)
    both = _choose2(k).sum()
    either = (_choose2(tau) - _choose2(tau - k)).sum()
    return pl.when(either == 0).then(1.0).otherwise(both / either).alias("ec_l_pooled")


# Per-pair metrics over consistency_pairs rows: row-level expressions, one value per pair ----


def ec_l_from_pairs(
    both_wrong: str = "both_wrong", wrong_i: str = "wrong_i", wrong_j: str = "wrong_j"
) -> pl.Expr:
    """``ec_l`` of a pair: |eᵢ ∧ eⱼ| / |eᵢ ∨ eⱼ| (Jaccard of the error sets); 1 when both are empty."""
    both = pl.col(both_wrong).cast(pl.Float64)
    union = pl.col(wrong_i) + pl.col(wrong_j) - pl.col(both_wrong)
    return pl.when(union == 0).then(1.0).otherwise(both / union).alias("ec_l")


def ec_g_from_pairs(both_wrong: str = "both_wrong", n: str = "n") -> pl.Expr:
    """``ec_g`` of a pair: |eᵢ ∧ eⱼ| / n."""
    return (pl.col(both_wrong).cast(pl.Float64) / pl.col(n)).alias("ec_g")


def ec_acc_from_pairs(
    both_wrong: str = "both_wrong", wrong_i: str = "wrong_i", wrong_j: str = "wrong_j", n: str = "n"
) -> pl.Expr:
    """``ec_acc`` of a pair: mean(eᵢ = eⱼ) = 1 − (|eᵢ| + |eⱼ| − 2|eᵢ ∧ eⱼ|) / n."""
    differ = (pl.col(wrong_i) + pl.col(wrong_j) - 2 * pl.col(both_wrong)).cast(pl.Float64)
    return (1 - differ / pl.col(n)).alias("ec_acc")


def ec_corr_from_pairs(
    both_wrong: str = "both_wrong", wrong_i: str = "wrong_i", wrong_j: str = "wrong_j", n: str = "n"
) -> pl.Expr:
    """``ec_corr`` of a pair: Pearson(eᵢ, eⱼ) (the φ coefficient); null if either is constant."""
    n_, wi, wj = (pl.col(c).cast(pl.Float64) for c in (n, wrong_i, wrong_j))
    both = pl.col(both_wrong).cast(pl.Float64)
    var_i, var_j = wi * (n_ - wi), wj * (n_ - wj)
    corr = (n_ * both - wi * wj) / (var_i * var_j).sqrt()
    return pl.when((var_i > 0) & (var_j > 0)).then(corr).otherwise(None).alias("ec_corr")


def kappa_error_from_pairs(
    both_wrong: str = "both_wrong", wrong_i: str = "wrong_i", wrong_j: str = "wrong_j", n: str = "n"
) -> pl.Expr:
    """``kappa_error`` (Geirhos κₑ) of a pair: (c_obs − c_exp)/(1 − c_exp); 1 when c_obs = 1.

    c_obs = ``ec_acc``, c_exp = aᵢaⱼ + (1 − aᵢ)(1 − aⱼ) with aᵢ the accuracy of replicate i.
    """
    n_ = pl.col(n).cast(pl.Float64)
    a_i, a_j = 1 - pl.col(wrong_i) / n_, 1 - pl.col(wrong_j) / n_
    differ = pl.col(wrong_i) + pl.col(wrong_j) - 2 * pl.col(both_wrong)
    c_obs = 1 - differ.cast(pl.Float64) / n_
    c_exp = a_i * a_j + (1 - a_i) * (1 - a_j)
    kappa = (c_obs - c_exp) / (1 - c_exp)
    return pl.when(differ == 0).then(1.0).otherwise(kappa).alias("kappa_error")


def pa_from_pairs(agree: str = "agree", n: str = "n") -> pl.Expr:
    """``pa`` of a pair: mean(ŷᵢ = ŷⱼ)."""
    return (pl.col(agree).cast(pl.Float64) / pl.col(n)).alias("pa")


def pa_kappa_from_pairs(
    agree: str = "agree", chance_agreement: str = "chance_agreement", n: str = "n"
) -> pl.Expr:
    """``pa_kappa`` of a pair: Cohen's κ = (p_o − p_e)/(1 − p_e); 1 for identical predictions.

    p_o = ``agree``/n, p_e = ``chance_agreement`` = Σ_c m_ic·m_jc / n² (m the class counts).
    """
    p_o = pl.col(agree).cast(pl.Float64) / pl.col(n)
    p_e = pl.col(chance_agreement)
    kappa = (p_o - p_e) / (1 - p_e)
    return pl.when(pl.col(agree) == pl.col(n)).then(1.0).otherwise(kappa).alias("pa_kappa")


def pa_v_from_pairs(
    phi2: str = "phi2",
    classes_i: str = "classes_i",
    classes_j: str = "classes_j",
    agree: str = "agree",
    n: str = "n",
) -> pl.Expr:
    """``pa_v`` of a pair: Cramér's V = √(φ² / (min(rᵢ, rⱼ) − 1)) of ŷᵢ against ŷⱼ.

    φ² = χ²/n = Σ_ab N_ab² / (m_ia·m_jb) − 1 over the contingency table N, rᵢ the number of
    classes replicate i predicts. 1 for identical predictions; null when they differ and
    either replicate predicts a single class.
    """
    dof = pl.min_horizontal(pl.col(classes_i), pl.col(classes_j)) - 1
    v = (pl.col(phi2).clip(lower_bound=0.0) / dof.cast(pl.Float64)).sqrt()
    return (
        pl.when(pl.col(agree) == pl.col(n))
        .then(1.0)
        .when(dof > 0)
        .then(v)
        .otherwise(None)
        .alias("pa_v")
    )


# Frames ---------------------------------------------------------------------------------------


def consistency_counts(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    axes: Sequence[str] = tuple(AXES),
) -> pl.LazyFrame:
    """Per-sample replicate counts: one row per group × axis × stratum × sample.

    Parameters
    ----------
    frame
        Prediction rows with the long table's ``seed``, ``repeat``, ``sample_id``,
        ``y_true``, ``y_clean``, ``y_pred`` and ``correct`` columns.
    by
        Grouping columns, passed through; default the cell key. They must identify the
        test set (include ``dataset``), and may not include ``seed``, ``repeat`` or
        ``sample_id``.
    axes
        Which axes to compute: ``"repeat"``, ``"seed"`` or both (the default).

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``axis`` (String), ``stratum`` (Int32: the seed for axis
        ``repeat``, the repeat for axis ``seed``), ``sample_id``, ``y_clean``,
        ``replicates`` τ, ``wrong`` kₛ, ``distinct_classes``, ``agreeing_pairs``
        Σ_c C(n_sc, 2) (Int64), ``prediction_entropy`` (Float64, normalised by log K).
        Only strata with τ ≥ 2 and samples every replicate predicted. Sorted by ``by``,
        axis, stratum and sample, nulls last. The SQL macro ``consistency_counts`` has the
        same columns.

    Examples
    --------
    >>> import polars as pl
    >>> from relcol.metrics import consistency_counts
    >>> rows = pl.DataFrame({
    ...     "model": "m", "seed": [0, 0, 1, 1], "repeat": 0, "sample_id": [0, 1, 0, 1],
    ...     "y_true": 1, "y_clean": 1, "y_pred": [1, 0, 1, 1], "correct": [True, False, True, True],
    ... })
    >>> consistency_counts(rows, "model").collect().select("axis", "sample_id", "wrong", "agreeing_pairs").rows()
    [('seed', 0, 0, 1), ('seed', 1, 1, 0)]
    """
    return _deferred(frame, by, axes, "consistency_counts", _counts, _COUNT_TYPES)


def _counts(plan: _Plan) -> pl.LazyFrame:
    keys = plan.keys
    return (
        plan.per_sample()
        .select(*keys, "axis", "stratum", *COUNT_COLUMNS[2:])
        .sort([*keys, "axis", "stratum", "sample_id"], nulls_last=True)
    )


def consistency_samples(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    axes: Sequence[str] = tuple(AXES),
) -> pl.LazyFrame:
    """Per-sample consistency: one row per group × axis × sample, averaged over strata.

    Parameters are those of :func:`consistency_counts`.

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``axis``, ``sample_id``, ``y_clean``, ``replicates`` (τ, the
        largest over strata), ``strata`` (Int64), and as means over strata (Float64):
        ``accuracy`` (share of the sample's replicates right), ``consistently_correct`` /
        ``always_wrong`` / ``flipping`` (share of strata in which every replicate was right
        / every one wrong / some of each), ``distinct_classes``, ``prediction_entropy``,
        and the sample's share of replicate pairs that are both wrong (``ec_g``), agree on
        being right or wrong (``ec_acc``) and predict the same class (``pa``). A cell's
        ``consistency`` row is the mean of these over its samples when every stratum has
        the same samples. The SQL view ``consistency_samples`` has the same columns.
    """
    return _deferred(frame, by, axes, "consistency_samples", _samples, _SAMPLE_TYPES)


def _samples(plan: _Plan) -> pl.LazyFrame:
    keys = plan.keys
    k, tau = pl.col("wrong"), pl.col("replicates")
    pairs = _choose2(tau)
    return (
        plan.per_sample()
        .group_by([*keys, "axis", "sample_id"])
        .agg(
            y_clean=pl.col("y_clean").first(),
            replicates=tau.max(),
            strata=pl.len().cast(pl.Int64),
            accuracy=exact_mean(1 - k / tau),
            consistently_correct=(k == 0).mean(),
            always_wrong=(k == tau).mean(),
            flipping=((k > 0) & (k < tau)).mean(),
            distinct_classes=pl.col("distinct_classes").cast(pl.Float64).mean(),
            prediction_entropy=exact_mean(pl.col("prediction_entropy")),
            ec_g=exact_mean(_choose2(k) / pairs),
            ec_acc=exact_mean((_choose2(k) + _choose2(tau - k)) / pairs),
            pa=exact_mean(pl.col("agreeing_pairs") / pairs),
        )
        .select(*keys, *SAMPLE_COLUMNS)
        .sort([*keys, "axis", "sample_id"], nulls_last=True)
    )


def consistency_pairs(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    axes: Sequence[str] = tuple(AXES),
) -> pl.LazyFrame:
    """Per-pair statistics and metrics: one row per group × axis × stratum × replicate pair.

    Parameters are those of :func:`consistency_counts`.

    Returns
    -------
    pl.LazyFrame
        ``by`` columns, then ``axis``, ``stratum``, ``replicate_i`` < ``replicate_j`` (the
        seeds or repeats compared), the Gram and contingency statistics ``n`` (samples),
        ``wrong_i``, ``wrong_j`` (|eᵢ|, |eⱼ|), ``both_wrong`` (|eᵢ ∧ eⱼ|), ``agree``
        (samples with ŷᵢ = ŷⱼ), ``chance_agreement`` (Σ_c m_ic·m_jc / n²), ``phi2``
        (Σ_ab N_ab²/(m_ia·m_jb) − 1), ``classes_i``, ``classes_j`` (classes predicted),
        and the pair's ``ec_l``, ``ec_g``, ``ec_acc``, ``ec_corr``, ``pa``, ``pa_kappa``,
        ``pa_v``, ``kappa_error`` (conventions in the module docstring). Sorted by ``by``,
        axis, stratum and pair. The SQL macro ``consistency_pairs`` has the same columns.
    """
    return _deferred(frame, by, axes, "consistency_pairs", _pairs, _PAIR_TYPES)


def _pairs(plan: _Plan) -> pl.LazyFrame:
    keys = plan.keys
    return (
        plan.pairs()
        .join(plan.groups.lazy(), on="_g")
        .select(*keys, *PAIR_COLUMNS)
        .sort([*keys, "axis", "stratum", "replicate_i", "replicate_j"], nulls_last=True)
    )


def consistency(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str] = CELL,
    *,
    axes: Sequence[str] = tuple(AXES),
) -> pl.LazyFrame:
    """Samplewise consistency of every group along each axis (docs/consistency.md).

    Parameters are those of :func:`consistency_counts`.

    Returns
    -------
    pl.LazyFrame
        One row per group × axis that has a stratum with τ ≥ 2: ``by`` columns, then
        ``axis``, ``replicates`` (τ; the largest over strata), ``strata`` (seeds or
        repeats averaged over), ``pairs`` (replicate pairs in all), ``ec_corr_pairs`` and
        ``pa_v_pairs`` (the pairs that define ``ec_corr`` and ``pa_v``; their means skip
        the others), ``n`` (samples; the largest over strata) (Int64), and as means over strata (Float64): ``accuracy`` (mean
        replicate accuracy), ``consistently_correct``, ``always_wrong``, ``flipping``,
        ``distinct_classes``, ``prediction_entropy`` (per sample), ``ec_l``,
        ``ec_l_pooled``, ``ec_g``, ``ec_acc``, ``ec_corr``, ``pa``, ``churn``,
        ``pa_kappa``, ``pa_v``, ``kappa_error`` (means over replicate pairs). Sorted by
        ``by`` and axis, nulls last. The SQL view ``consistency`` has the same columns.

    Examples
    --------
    The published 10-subject worked example: two runs, each 80 % accurate, 60 % consistently
    correct.

    >>> import polars as pl
    >>> from relcol.metrics import consistency
    >>> y = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    >>> runs = [[1, 1, 1, 1, 1, 1, 0, 1, 0, 1], [1, 1, 1, 1, 1, 1, 1, 0, 1, 0]]
    >>> rows = pl.DataFrame({
    ...     "model": "m", "seed": [0] * 10 + [1] * 10, "repeat": 0, "sample_id": list(range(10)) * 2,
    ...     "y_true": y * 2, "y_clean": y * 2, "y_pred": runs[0] + runs[1],
    ... }).with_columns(correct=pl.col("y_pred") == pl.col("y_true"))
    >>> out = consistency(rows, "model").collect()
    >>> out.select("axis", "accuracy", "consistently_correct", "pa", "ec_l").rows()
    [('seed', 0.8, 0.6, 0.6, 0.0)]
    """
    return _deferred(frame, by, axes, "consistency", _consistency, _CONSISTENCY_TYPES)


def _consistency(plan: _Plan) -> pl.LazyFrame:
    keys = plan.keys
    per_stratum_counts = (
        plan.complete.lazy()
        .group_by("_g")
        .agg(
            n=pl.len().cast(pl.Int64),
            accuracy=accuracy_from_counts(),
            consistently_correct=consistently_correct(),
            always_wrong=always_wrong(),
            flipping=flipping(),
            distinct_classes=distinct_classes_from_counts(),
            prediction_entropy=prediction_entropy_from_counts(),
            ec_l_pooled=ec_l_pooled_from_counts(),
            ec_g=ec_g_from_counts(),
            ec_acc=ec_acc_from_counts(),
            pa=pa_from_counts(),
        )
    )
    per_stratum_pairs = (
        plan.pairs()
        .group_by("_g")
        .agg(
            *(
                exact_mean(pl.col(name))
                for name in ("ec_l", "ec_corr", "pa_kappa", "pa_v", "kappa_error")
            ),
            *(pl.col(name).is_not_null().sum().alias(f"{name}_pairs") for name in PARTIAL),
        )
    )
    means = [c for c in CONSISTENCY_MEANS if c != "churn"]
    return (
        per_stratum_counts.join(per_stratum_pairs, on="_g")
        .join(plan.groups.lazy(), on="_g")
        .group_by([*keys, "axis"])
        .agg(
            pl.col("tau").max().alias("replicates"),
            pl.len().cast(pl.Int64).alias("strata"),
            _choose2(pl.col("tau")).sum().cast(pl.Int64).alias("pairs"),
            *(pl.col(f"{name}_pairs").sum().cast(pl.Int64) for name in PARTIAL),
            pl.col("n").max(),
            *[exact_mean(pl.col(c)) for c in means],
        )
        .with_columns(churn=1 - pl.col("pa"))
        .select(*keys, *CONSISTENCY_COLUMNS)
        .sort([*keys, "axis"], nulls_last=True)
    )


# The plan shared by the frame functions --------------------------------------------------------

#: Seeds tried for the hashed draw ids before numbering the draws exactly (see ``_draws``).
_HASH_SEEDS = (0, 1)


def _draws(rows: pl.DataFrame, key: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Number the draws (one per distinct ``key``: group × seed × repeat): ``_d`` on every row.

    A hash of the key columns is several times faster to group and join on than the columns
    themselves (strings among them), and it is checked, not trusted: within each hash value
    every key column must hold one value (min = max, and all null or none), so two draws
    sharing a hash are caught. Then another seed is tried, and at the end the draws are
    numbered exactly from the columns.
    """
    for seed in _HASH_SEEDS:
        hashed = rows.with_columns(_d=pl.struct(key).hash(seed))
        draws = hashed.group_by("_d").agg(
            pl.len().alias("_rows"),
            *[pl.col(k).min() for k in key],
            *[pl.col(k).max().alias(f"_max_{k}") for k in key],
            *[pl.col(k).null_count().alias(f"_nulls_{k}") for k in key],
            top=pl.col("top").max(),
        )
        nulls = [pl.col(f"_nulls_{k}") for k in key]
        one_value = [
            ((n == 0) & (pl.col(k) == pl.col(f"_max_{k}"))) | (n == pl.col("_rows"))
            for k, n in zip(key, nulls, strict=True)
        ]
        if draws.select(pl.all_horizontal(one_value).all()).item():
            return hashed, draws.select("_d", *key, "top")
    draws = (
        rows.group_by(key)
        .agg(top=pl.col("top").max())
        .with_row_index("_d")
        .with_columns(pl.col("_d").cast(pl.UInt64))
    )
    return rows.join(draws.select(*key, "_d"), on=key, nulls_equal=True), draws


_F = pl.Float64()
_COUNT_TYPES = {
    "axis": pl.String(),
    "stratum": pl.Int32(),
    "sample_id": pl.Int64(),
    "y_clean": pl.Int32(),
    **{c: pl.Int64() for c in ("replicates", "wrong", "distinct_classes", "agreeing_pairs")},
    "prediction_entropy": _F,
}
_SAMPLE_TYPES = {
    "axis": pl.String(),
    "sample_id": pl.Int64(),
    "y_clean": pl.Int32(),
    "replicates": pl.Int64(),
    "strata": pl.Int64(),
    **{c: _F for c in SAMPLE_COLUMNS[5:]},
}
_PAIR_TYPES = {
    "axis": pl.String(),
    "stratum": pl.Int32(),
    "replicate_i": pl.Int32(),
    "replicate_j": pl.Int32(),
    **{c: pl.Int64() for c in ("n", "wrong_i", "wrong_j", "both_wrong", "agree")},
    "chance_agreement": _F,
    "phi2": _F,
    "classes_i": pl.Int64(),
    "classes_j": pl.Int64(),
    **{c: _F for c in PAIR_COLUMNS[13:]},
}
_CONSISTENCY_TYPES = {
    "axis": pl.String(),
    **{c: pl.Int64() for c in CONSISTENCY_COLUMNS[1 : CONSISTENCY_COLUMNS.index("accuracy")]},
    **{c: _F for c in CONSISTENCY_MEANS},
}


def _deferred(
    frame: pl.DataFrame | pl.LazyFrame,
    by: str | Iterable[str],
    axes: Sequence[str],
    name: str,
    build: Callable[[_Plan], pl.LazyFrame],
    types: dict[str, pl.DataType],
) -> pl.LazyFrame:
    """``build``'s frame as a lazy plan, after the arguments of the public function ``name``
    are checked: the rows are read and the work is done at collect."""
    keys, axes = _check(frame, by, axes, name)
    lazy = frame.lazy()
    schema = lazy.collect_schema()
    out = {k: schema[k] for k in keys} | types

    def run(rows: pl.DataFrame) -> pl.DataFrame:
        return build(_Plan(rows, keys, axes)).collect()

    return lazy.select(*dict.fromkeys([*keys, *_ROW_COLUMNS])).map_batches(run, schema=out)


def _check(
    frame: pl.DataFrame | pl.LazyFrame, by: str | Iterable[str], axes: Sequence[str], name: str
) -> tuple[list[str], list[str]]:
    keys = check_keys(by)
    reserved = [k for k in keys if k in ("seed", "repeat", "sample_id", "axis", "stratum")]
    if reserved:
        raise ParameterError(
            f"by may not include {', '.join(map(repr, reserved))}: seeds and repeats are the "
            f"replicates compared, and samples what they are compared on. Got {keys!r}."
        )
    axes = [axes] if isinstance(axes, str) else list(axes)
    if not axes or any(a not in AXES for a in axes) or len(set(axes)) < len(axes):
        raise ParameterError(
            f"axes must be a non-empty selection of {', '.join(map(repr, AXES))}. Got {axes!r}."
        )
    check_columns(name, frame.lazy(), [*keys, *_ROW_COLUMNS])
    return keys, [a for a in AXES if a in axes]


class _Plan:
    """The steps every consistency frame starts from, run on the rows when the plan runs.

    Eager on purpose: the replicate layout, the per-row units and the per-sample counts are
    each read by several later steps, so each is computed once and kept (Polars' own
    subplan caching was slower or, with ``cache()``, failed on some scans). ``_g`` numbers
    the strata (group × axis × stratum) across both axes; ``_i`` is a replicate's 0-based
    position within its stratum.
    """

    def __init__(self, frame: pl.DataFrame, keys: list[str], axes: list[str]) -> None:
        self.keys = keys
        rows = frame.lazy().select(
            *keys,
            # the long table's types, so a frame typed otherwise gives the same output types
            pl.col("seed", "repeat").cast(pl.Int32),
            pl.col("sample_id").cast(pl.Int64),
            pl.col("y_clean", "y_pred").cast(pl.Int32),
            wrong=~pl.col("correct"),
            top=pl.max_horizontal("y_true", "y_clean", "y_pred"),
        )
        # One row per (group, seed, repeat): small, and every id is a rank over it.
        rows, draws = _draws(rows.collect(), [*keys, "seed", "repeat"])
        draws = draws.with_columns(
            classes=(pl.col("top").max().over(keys) if keys else pl.col("top").max()) + 1
        )
        layout, groups = draws, []
        for a, axis in enumerate(axes):
            stratum, replicate = AXES[axis]
            within = [*keys, stratum]
            tau = pl.len().over(within)
            layout = layout.with_columns(
                pl.when(tau >= 2)
                .then((pl.struct(within).rank("dense").cast(pl.Int64) - 1) * len(axes) + a)
                .alias(f"_g{a}"),
                (pl.col(replicate).rank("dense").over(within).cast(pl.Int64) - 1).alias(f"_i{a}"),
                tau.cast(pl.Int64).alias(f"_tau{a}"),
            )
        layout = layout.filter(
            pl.any_horizontal(pl.col(f"_g{a}").is_not_null() for a in range(len(axes)))
        )
        # One join of the rows with the layout, on the draw id, serves every axis.
        ids = [c for c in layout.columns if c.startswith(("_g", "_i"))]
        joined = rows.lazy().join(layout.select("_d", *ids).lazy(), on="_d")
        units, positions = [], []
        for a, axis in enumerate(axes):
            stratum, replicate = AXES[axis]
            on_axis = layout.filter(pl.col(f"_g{a}").is_not_null())
            groups.append(
                on_axis.group_by(_g=f"_g{a}").agg(
                    *[pl.col(k).first() for k in keys],
                    axis=pl.lit(axis),
                    stratum=pl.col(stratum).first(),
                    tau=pl.col(f"_tau{a}").first(),
                    classes=pl.col("classes").first(),
                )
            )
            positions.append(on_axis.select(_g=f"_g{a}", _i=f"_i{a}", rep=replicate))
            units.append(
                joined.filter(pl.col(f"_g{a}").is_not_null()).select(
                    _g=f"_g{a}",
                    _i=f"_i{a}",
                    sample_id="sample_id",
                    y_clean="y_clean",
                    y_pred="y_pred",
                    wrong="wrong",
                )
            )
        self.positions = pl.concat(positions)
        self.groups = pl.concat(groups)
        self.units = pl.concat(units).collect()
        tau = pl.col("tau")
        # Per sample × class first; each class's entropy term uses the stratum's τ (a sample
        # with fewer replicates is dropped below anyway), so the per-sample step only sums.
        n = pl.col("n")
        per_class = (
            self.units.lazy()
            .group_by("_g", "sample_id", "y_pred")
            .agg(
                n=pl.len().cast(pl.Int64),
                wrong=pl.col("wrong").sum().cast(pl.Int64),
                y_clean=pl.col("y_clean").min(),
            )
            .join(self.groups.lazy().select("_g", "tau", "classes"), on="_g")
            .with_columns(
                pairs=n * (n - 1) // 2,
                entropy=n / tau * (tau / n).log(),
            )
        )
        self.complete = (
            per_class.group_by("_g", "sample_id")
            .agg(
                y_clean=pl.col("y_clean").min(),
                replicates=n.sum(),
                wrong=pl.col("wrong").sum(),
                distinct_classes=pl.len().cast(pl.Int64),
                agreeing_pairs=pl.col("pairs").sum(),
                entropy=exact_sum(pl.col("entropy")),
                predicted=pl.col("y_pred").min(),
                tau=tau.first(),
                classes=pl.col("classes").first(),
            )
            .filter(pl.col("replicates") == tau)
            .with_columns(
                prediction_entropy=pl.when(pl.col("classes") >= 2)
                .then(pl.col("entropy") / pl.col("classes").cast(pl.Float64).log())
                .otherwise(0.0),
                constant=(pl.col("distinct_classes") == 1)
                & ((pl.col("wrong") == 0) | (pl.col("wrong") == tau)),
            )
            .collect()
        )

    def per_sample(self) -> pl.LazyFrame:
        """``complete`` (a row per stratum × sample) with each stratum's keys, axis,
        stratum, τ and classes."""
        return self.complete.lazy().join(self.groups.lazy(), on="_g")

    def pairs(self) -> pl.LazyFrame:
        """Per-pair statistics and metrics, keyed by ``_g``."""
        complete = self.complete.lazy()
        # Constant samples add to the diagonal cell of their class in every pair's table.
        constant = (
            complete.filter("constant")
            .group_by("_g", a="predicted")
            .agg(n=pl.len().cast(pl.Int64), both=(pl.col("wrong") > 0).sum().cast(pl.Int64))
        )
        varying = (
            self.units.lazy()
            .join(
                complete.filter(~pl.col("constant")).select("_g", "sample_id"),
                on=["_g", "sample_id"],
                how="semi",
            )
            .collect()
            .lazy()
        )
        positions = self.groups.lazy().select("_g", i=pl.int_ranges(0, "tau")).explode("i")
        pairs = positions.join(positions.rename({"i": "j"}), on="_g").filter(
            pl.col("i") < pl.col("j")
        )
        width = int(self.groups.get_column("tau").max() or 0)
        spread = _pair_cells(
            varying.select("_g", "sample_id", "_i", y="y_pred", e="wrong")
            .collect()
            .pivot(on="_i", index=["_g", "sample_id"], values=["y", "e"], on_columns=range(width)),
            width,
        ).lazy()
        cells = (
            pl.concat(
                [
                    spread,
                    pairs.join(constant, on="_g").select(
                        "_g", "i", "j", "a", b="a", n="n", both="both"
                    ),
                ]
            )
            .group_by("_g", "i", "j", "a", "b")
            .agg(pl.col("n").sum(), pl.col("both").sum())
        )
        # Margins of each replicate: class counts m_ic and errors |e_i|.
        margins = (
            pl.concat(
                [
                    varying.group_by("_g", i="_i", c="y_pred").agg(
                        m=pl.len().cast(pl.Int64), w=pl.col("wrong").sum().cast(pl.Int64)
                    ),
                    positions.join(constant, on="_g").select("_g", "i", c="a", m="n", w="both"),
                ]
            )
            .group_by("_g", "i", "c")
            .agg(pl.col("m").sum(), pl.col("w").sum())
        )
        per_replicate = margins.group_by("_g", "i").agg(
            wrong=pl.col("w").sum(), classes=(pl.col("m") > 0).sum().cast(pl.Int64)
        )
        chance = (
            margins.join(margins, on=["_g", "c"], suffix="_j")
            .filter(pl.col("i") < pl.col("i_j"))
            .group_by("_g", "i", j="i_j")
            .agg(mm=(pl.col("m") * pl.col("m_j")).cast(pl.Float64).sum())
        )
        m_i = margins.select("_g", "i", a="c", m_a="m")
        m_j = margins.select("_g", j="i", b="c", m_b="m")
        table = (
            cells.join(m_i, on=["_g", "i", "a"])
            .join(m_j, on=["_g", "j", "b"])
            .group_by("_g", "i", "j")
            .agg(
                both_wrong=pl.col("both").sum(),
                agree=pl.col("n").filter(pl.col("a") == pl.col("b")).sum(),
                n=pl.col("n").sum(),
                chi=exact_sum(pl.col("n").cast(pl.Float64) ** 2 / (pl.col("m_a") * pl.col("m_b"))),
            )
        )
        stats = (
            pairs.join(table, on=["_g", "i", "j"], how="left")
            .join(chance, on=["_g", "i", "j"], how="left")
            .join(
                per_replicate.select("_g", "i", wrong_i="wrong", classes_i="classes"),
                on=["_g", "i"],
            )
            .join(
                per_replicate.select("_g", j="i", wrong_j="wrong", classes_j="classes"),
                on=["_g", "j"],
            )
            .select(
                "_g",
                "i",
                "j",
                "n",
                "wrong_i",
                "wrong_j",
                "both_wrong",
                "agree",
                chance_agreement=pl.col("mm").fill_null(0.0) / pl.col("n").cast(pl.Float64) ** 2,
                phi2=pl.col("chi") - 1,
                classes_i="classes_i",
                classes_j="classes_j",
            )
        )
        positions = self.positions.lazy()
        return (
            stats.join(positions.select("_g", i="_i", replicate_i="rep"), on=["_g", "i"])
            .join(positions.select("_g", j="_i", replicate_j="rep"), on=["_g", "j"])
            .with_columns(
                ec_l_from_pairs(),
                ec_g_from_pairs(),
                ec_acc_from_pairs(),
                ec_corr_from_pairs(),
                pa_from_pairs(),
                pa_kappa_from_pairs(),
                pa_v_from_pairs(),
                kappa_error_from_pairs(),
            )
        )


_PAIR_CELLS = {
    "_g": pl.Int64(),
    "i": pl.Int64(),
    "j": pl.Int64(),
    "a": pl.Int32(),
    "b": pl.Int32(),
    "n": pl.Int64(),
    "both": pl.Int64(),
}


def _pair_cells(wide: pl.DataFrame, width: int) -> pl.DataFrame:
    """Contingency cells (ŷᵢ, ŷⱼ) of every replicate position pair i < j, varying samples only.

    ``wide`` has one row per varying sample: its stratum ``_g`` and its replicates'
    predictions ``y_<i>`` and errors ``e_<i>`` by position i < ``width`` (null beyond the
    stratum's τ). One group-by per position pair, each over every stratum at once.
    """
    if wide.is_empty():
        return pl.DataFrame(schema=_PAIR_CELLS)
    ys = [f"y_{i}" for i in range(width)]
    low = int(wide.select(pl.min_horizontal(ys).min()).item())
    high = int(wide.select(pl.max_horizontal(ys).max()).item())
    span = high - low + 1
    shifted = wide.lazy().with_columns((pl.col(ys) - low).cast(pl.Int64))
    # One integer key (stratum, ŷᵢ, ŷⱼ) is several times faster to group by than three
    # columns; fall back to the columns if it could overflow.
    packed = int(wide.get_column("_g").max() + 1) * span * span < 2**62
    frames = []
    for i in range(width):
        for j in range(i + 1, width):
            yi, yj = pl.col(f"y_{i}"), pl.col(f"y_{j}")
            key = (
                [((pl.col("_g") * span + yi) * span + yj).alias("key")]
                if packed
                else ["_g", yi.alias("a"), yj.alias("b")]
            )
            frames.append(
                shifted.filter(yj.is_not_null())  # j < τ of the sample's stratum
                .group_by(key)
                .agg(n=pl.len(), both=(pl.col(f"e_{i}") & pl.col(f"e_{j}")).sum())
                .with_columns(i=pl.lit(i, pl.Int64), j=pl.lit(j, pl.Int64))
            )
    out = pl.concat(frames).collect()
    if packed:
        key = pl.col("key")
        out = out.with_columns(_g=key // (span * span), a=key // span % span, b=key % span)
    return out.select(
        pl.col("_g").cast(pl.Int64),
        "i",
        "j",
        (pl.col("a") + low).cast(pl.Int32),
        (pl.col("b") + low).cast(pl.Int32),
        pl.col("n").cast(pl.Int64),
        pl.col("both").cast(pl.Int64),
    )
