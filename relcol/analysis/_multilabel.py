"""Multi-label calibration (METRICS.md §9): both modes, both targets, per label, micro, macro.

Multi-label rows (``label`` not null) hold, per (sample, label), the predicted 0/1 outcome
``y_pred`` and the confidence c in it. Two calibration modes are always named apart:

- ``prediction_confidence``: score c, outcome z = 1[y_pred = y_true];
- ``positive_class``: score p = P(label present) = c if y_pred = 1 else 1 − c, outcome y_true.

and two targets: ``binary`` (z or y) and, where the file had one, ``agreement``: the share a
of annotators agreeing with the prediction replaces z (a, or a / 1 − a for presence). Per
label metrics come from the cell key ``label``; ``micro`` pools every (sample, label) pair of
a cell, ``macro`` is the mean over labels of each per-label value (its ``n`` is the total).
brier_top and nll_top are identical in the two modes (p − y = ±(c − z) row by row); ECE and
MCE are not, because the bins see c in one mode and p in the other.

The SQL twins are the views ``multilabel_pairs``, ``multilabel_bins`` and ``multilabel``;
a test holds the two engines to 1e-9.
"""

from __future__ import annotations

import polars as pl

from relcol.analysis._scores import SCORES, binary_scores
from relcol.metrics import bin_index, exact_mean, exact_sum
from relcol.store import CELL, KEY

MODES = ("prediction_confidence", "positive_class")
TARGETS = ("binary", "agreement")
AVERAGES = ("label", "micro", "macro")
_PAIR_KEYS = (*KEY, "mode", "target")


def multilabel_pairs(
    predictions: pl.DataFrame | pl.LazyFrame,
    annotations: pl.DataFrame | pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Every multi-label prediction in both modes (and with its agreement, when it has one).

    Parameters
    ----------
    predictions
        Long-table rows; single-label rows (``label`` null) are left out.
    annotations
        The annotations side table (``agreement`` per key), or None.

    Returns
    -------
    pl.LazyFrame
        The key, ``mode``, ``target``, ``confidence`` and ``outcome`` (Float64): one row per
        multi-label prediction × mode × target, as the ``multilabel_pairs`` view.
    """
    rows = predictions.lazy().filter(pl.col("label").is_not_null())
    if annotations is not None:
        extra = annotations.lazy().select(*KEY, "agreement")
        rows = rows.join(extra, on=list(KEY), how="left")
    else:
        rows = rows.with_columns(agreement=pl.lit(None, pl.Float64))
    c = pl.col("confidence").cast(pl.Float64)
    predicted_one = pl.col("y_pred") == 1
    present = pl.when(predicted_one).then(c).otherwise(1 - c)
    a = pl.col("agreement")
    blocks = [
        ("prediction_confidence", "binary", c, pl.col("correct").cast(pl.Float64), False),
        ("positive_class", "binary", present, pl.col("y_true").cast(pl.Float64), False),
        ("prediction_confidence", "agreement", c, a, True),
        (
            "positive_class",
            "agreement",
            present,
            pl.when(predicted_one).then(a).otherwise(1 - a),
            True,
        ),
    ]
    frames = []
    for mode, target, score, outcome, needs_agreement in blocks:
        block = rows.filter(a.is_not_null()) if needs_agreement else rows
        frames.append(
            block.select(
                *KEY,
                mode=pl.lit(mode),
                target=pl.lit(target),
                confidence=score,
                outcome=outcome,
            )
        )
    return pl.concat(frames)


def multilabel_bins(pairs: pl.DataFrame | pl.LazyFrame, *, bins: int = 15) -> pl.LazyFrame:
    """The label × confidence-bin grid of each cell, mode and target (the report's heatmap).

    Returns
    -------
    pl.LazyFrame
        The cell key, ``mode``, ``target``, ``bin``, ``bin_lower``, ``bin_upper``, ``n``,
        ``sum_confidence``, ``sum_outcome``, ``mean_confidence``, ``accuracy`` (the mean
        outcome) and ``accuracy_minus_confidence``, sorted, as the ``multilabel_bins`` view.
    """
    keys = [*CELL, "mode", "target"]
    n, sum_c, sum_o = pl.col("n"), pl.col("sum_confidence"), pl.col("sum_outcome")
    k = pl.col("bin").cast(pl.Float64)
    # k / M as a column-by-column division: Polars turns a division by a scalar into a product
    # with its reciprocal, one ulp off the value DuckDB reports (see relcol.metrics._bins).
    return (
        pairs.lazy()
        .group_by([*keys, bin_index("confidence", bins=bins)])
        .agg(
            n=pl.len().cast(pl.Int64),
            sum_confidence=exact_sum(pl.col("confidence")),
            sum_outcome=exact_sum(pl.col("outcome")),
        )
        .select(
            *keys,
            "bin",
            bin_lower=k / (k * 0 + bins),
            bin_upper=(k + 1) / (k * 0 + bins),
            n=n,
            sum_confidence=sum_c,
            sum_outcome=sum_o,
            mean_confidence=sum_c / n,
            accuracy=sum_o / n,
            accuracy_minus_confidence=sum_o / n - sum_c / n,
        )
        .sort([*keys, "bin"], nulls_last=True)
    )


def multilabel_calibration(pairs: pl.DataFrame | pl.LazyFrame, *, bins: int = 15) -> pl.LazyFrame:
    """Calibration per label, micro- and macro-averaged, for each mode and target.

    Returns
    -------
    pl.LazyFrame
        The cell key (``label`` null on micro and macro rows), ``mode``, ``target``,
        ``average`` (``label``, ``micro``, ``macro``), then ``n``, ``accuracy``,
        ``mean_confidence``, ``gap``, ``abs_gap``, ``ece``, ``mce``, ``brier_top``,
        ``nll_top``; the ``multilabel`` view without ``label_name``, in its order.
    """
    cell = [k for k in CELL if k != "label"]
    pairs = pairs.lazy()
    per_label = binary_scores(pairs, [*CELL, "mode", "target"], bins=bins).with_columns(
        average=pl.lit("label")
    )
    micro = binary_scores(pairs, [*cell, "mode", "target"], bins=bins).with_columns(
        label=pl.lit(None, pl.Int32), average=pl.lit("micro")
    )
    macro = (
        per_label.group_by([*cell, "mode", "target"])
        .agg(pl.col("n").sum(), *[exact_mean(pl.col(m)) for m in SCORES if m != "n"])
        .with_columns(label=pl.lit(None, pl.Int32), average=pl.lit("macro"))
    )
    columns = [*CELL, "mode", "target", "average", *SCORES]
    order = pl.col("average").replace_strict({a: i for i, a in enumerate(AVERAGES)})
    return pl.concat([frame.select(columns) for frame in (per_label, micro, macro)]).sort(
        [*cell, "mode", "target", order, "label"], nulls_last=True
    )
