"""Multi-label calibration (docs/multilabel.md): both modes, both targets, per label, micro, macro.

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

**Intervals** (``multilabel_intervals``, the 0/1 target): the paired Poisson bootstrap of
``relcol.analysis.bootstrap`` over test samples, so a sample's weight is shared by all its
labels (the labels of one email are not independent draws). A label's replicate is the
metric on that label's rows; micro's on every pair of the cell; macro's the mean over
labels of the labels' replicates (the same weights in each). Each is a percentile interval
(|Δ| the image of Δ's, as for single-label cells). Printed only for ``INTERVALS`` whose
coverage ``multilabel_coverage_study`` verifies (per label, micro and macro, both modes);
``NO_MACRO_INTERVAL`` says which macro values print none and why, and ECE and MCE print
none at all (``NO_INTERVAL``). The agreement target (a share, not a 0/1 outcome) has no
interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from relcol.analysis._bootstrap import (
    ALPHA,
    INTERVAL_METRICS,
    MIN_BIN_SAMPLES,
    REPLICATES,
    TABLES,
    Replicates,
    bootstrap,
    combined,
    draws_of,
    metric_interval,
    percentile_interval,
    proportion_interval,
)
from relcol.analysis._scores import SCORES, binary_scores
from relcol.metrics import bin_index, exact_mean, exact_sum
from relcol.store import CELL, KEY

MODES = ("prediction_confidence", "positive_class")
TARGETS = ("binary", "agreement")
AVERAGES = ("label", "micro", "macro")
_PAIR_KEYS = (*KEY, "mode", "target")
#: Metrics of the ``multilabel`` table with an interval: per label, micro and macro (but see
#: ``NO_MACRO_INTERVAL``), each realised coverage verified by ``multilabel_coverage_study``.
INTERVALS = tuple(m for m in SCORES if m in INTERVAL_METRICS)
#: Discrimination and selective metrics with an interval per label, micro and macro, in the
#: prediction-confidence mode (the one the discrimination tables use), each realised
#: coverage verified by ``multilabel_coverage_study`` too.
RANK_INTERVALS = tuple(m for m in (*TABLES["discrimination"], *TABLES["selective"])
                       if m in INTERVAL_METRICS)  # fmt: skip
#: Macro values printed without an interval, and why.
NO_MACRO_INTERVAL: dict[str, str] = {
    "abs_gap": "the mean over labels of |Δₖ| adds each label's noise with a positive sign, "
    "like ECE's bins: biased upwards where some Δₖ is near 0",
}


def named_labels(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its ``label`` codes replaced by their ``label_name`` where it has one
    (as a String column ``label``; ``label_name`` dropped); unchanged without ``label_name``.

    Examples
    --------
    >>> frame = pl.DataFrame({"label": [0, 1, None], "label_name": ["spam", None, None]})
    >>> named_labels(frame)["label"].to_list()
    ['spam', '1', None]
    """
    if "label_name" not in frame.columns:
        return frame
    name = pl.coalesce("label_name", pl.col("label").cast(pl.String))
    return frame.with_columns(label=name).drop("label_name")


def name_label_codes(frame: pl.DataFrame, multilabel: pl.DataFrame | None) -> pl.DataFrame:
    """``frame`` (a per-cell table) with each ``label`` code replaced by its name from the
    ``multilabel`` table's ``label_name`` (a String ``label``; a code without a name as
    text), for tables and sentences that print the label. Unchanged without either.

    Examples
    --------
    >>> cells = pl.DataFrame({"dataset": "d", "label": [0, 1, None]})
    >>> ml = pl.DataFrame({"dataset": "d", "label": [0], "label_name": ["spam"]})
    >>> name_label_codes(cells, ml)["label"].to_list()
    ['spam', '1', None]
    """
    if multilabel is None or multilabel.is_empty() or "label" not in frame.columns:
        return frame
    if frame.schema["label"] == pl.String:  # named already
        return frame
    names = (
        multilabel.filter(pl.col("label").is_not_null())
        .select("dataset", "label", "label_name")
        .unique(["dataset", "label"])
    )
    joined = frame.join(names, on=["dataset", "label"], how="left", maintain_order="left")
    return named_labels(joined).select(frame.columns)


def name_labels_in(tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Every per-cell table of a report with its label codes replaced by names
    (``name_label_codes``), for showing; ``multilabel`` and ``multilabel_bins`` keep their
    codes beside ``label_name``."""
    multilabel = tables.get("multilabel")
    return {
        name: frame if name.startswith("multilabel") else name_label_codes(frame, multilabel)
        for name, frame in tables.items()
    }


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


def multilabel_intervals(
    pairs: pl.DataFrame | pl.LazyFrame,
    *,
    replicates: int = REPLICATES,
    alpha: float = ALPHA,
    bins: int = 15,
    seed: int = 0,
    withheld: Iterable[str] = tuple(NO_MACRO_INTERVAL),
    drawn: Sequence[Replicates] = (),
) -> pl.DataFrame:
    """Bootstrap intervals of the ``multilabel`` table's metrics, 0/1 target.

    Parameters
    ----------
    pairs
        ``multilabel_pairs`` rows (those of the ``agreement`` target are ignored).
    replicates, alpha, bins, seed
        B, the level 1 − α, the bins M, and the generator offset, as for
        ``relcol.analysis.bootstrap``. No metric with an interval here depends on the bins
        (ECE and MCE have none): M is that of the prediction-confidence mode's replicates,
        so that they can be the statistical layer's (``drawn``), and the positive-class
        mode, drawn for these intervals alone, is drawn with one bin (18 statistics per cell
        in the bootstrap's product instead of 144 at M = 15; the same values but for the
        last bits of sums over the bins).
    withheld
        Macro metrics given no interval (default ``NO_MACRO_INTERVAL``; the coverage study
        passes none, to measure the interval they would get).
    drawn
        Replicates of the study's per-label cells drawn before from its prediction rows (the
        statistical layer's, ``statistical_tables``' ``on_replicates``). A per-label cell in
        the prediction-confidence mode has those very rows (the confidence c against z), so
        where a part has the draws this function makes (B, ``seed``, ``bins``, the default
        level cap and targets), its cells' replicates are taken as they are (``combined``),
        the same bits as drawing them again, and only the others (the micro cells) are
        drawn here.

    Returns
    -------
    pl.DataFrame
        The cell key (``label`` null on micro and macro rows), ``mode``, ``target``
        (``binary``), ``average``, then ``<metric>_lo`` and ``<metric>_hi`` for each metric
        of ``INTERVALS`` (null for a macro metric of ``NO_MACRO_INTERVAL``) and of
        ``RANK_INTERVALS`` (null in the positive-class mode). Join it to the ``multilabel``
        table on those keys (``with_multilabel_intervals``), or to the micro and macro
        discrimination and selective tables (``rank_tables_with_intervals``).
    """
    withheld = frozenset(withheld)
    binary = pairs.lazy().filter(pl.col("target") == "binary")
    frames = []
    for mode in MODES:
        rows = binary.filter(pl.col("mode") == mode).select(
            *KEY, "confidence", correct=pl.col("outcome") > 0.5
        )
        # the same rows twice: per label, and pooled into one micro cell (label null)
        both = pl.concat([rows, rows.with_columns(label=pl.lit(None, pl.Int32))])
        if mode == "prediction_confidence":
            result = _replicates(both, drawn, replicates=replicates, bins=bins, seed=seed)
        else:  # no interval printed here depends on the bins: one bin, 18 statistics a cell
            result = _replicates(both, (), replicates=replicates, bins=1, seed=seed)
        frames += _mode_bounds(result, mode, alpha, withheld)
        del result  # let go of before the next mode draws its own
    columns = [*CELL, "mode", "target", "average"]
    bounds = [f"{m}_{end}" for m in (*INTERVALS, *RANK_INTERVALS) for end in ("lo", "hi")]
    if not frames:
        return pl.DataFrame(
            schema={**dict.fromkeys(columns, pl.String), **dict.fromkeys(bounds, pl.Float64)}
        )
    return pl.concat(frames, how="diagonal_relaxed").select(*columns, *bounds)


def interval_metrics(mode: str) -> tuple[str, ...]:
    """The metrics with an interval in ``mode``: ``INTERVALS``, and ``RANK_INTERVALS`` in the
    prediction-confidence mode."""
    return (*INTERVALS, *RANK_INTERVALS) if mode == "prediction_confidence" else INTERVALS


def _mode_bounds(
    result: Replicates, mode: str, alpha: float, withheld: frozenset[str]
) -> list[pl.DataFrame]:
    """The bounds of one mode's replicates: per label and micro, then macro (none without
    cells)."""
    if result.cells.is_empty():
        return []
    metrics = interval_metrics(mode)
    bounds = {}
    for metric in metrics:
        lo, hi = metric_interval(result, metric, alpha)
        bounds |= {f"{metric}_lo": lo, f"{metric}_hi": hi}
    table = result.cells.with_columns(
        mode=pl.lit(mode),
        target=pl.lit("binary"),
        average=pl.when(pl.col("label").is_null()).then(pl.lit("micro")).otherwise(pl.lit("label")),
        **{name: pl.Series(values).fill_nan(None) for name, values in bounds.items()},
    )
    cell = [k for k in CELL if k != "label"]
    macro = _macro(result, cell, alpha, withheld, metrics)
    return [table, macro.with_columns(mode=pl.lit(mode))]


def _replicates(
    rows: pl.LazyFrame, known: Sequence[Replicates], *, replicates: int, bins: int, seed: int
) -> Replicates:
    """``bootstrap`` of ``rows``' cells, each cell that a part of ``known`` with the same draws
    holds taken from it (the caller vouches for its rows) and only the others drawn."""
    options = {"replicates": replicates, "bins": bins, "seed": seed}
    known = [part for part in known if part.draws == draws_of(replicates, seed, bins=bins)]
    if not known:
        return bootstrap(rows, proba=False, bin_replicates=(), **options)
    cells = rows.group_by(CELL).agg(n=pl.len()).collect()
    rest = cells
    for part in known:
        rest = rest.join(part.cells, on=list(CELL), how="anti", nulls_equal=True)
    if rest.height:
        rest_rows = rows.join(rest.lazy().select(CELL), on=list(CELL), how="semi", nulls_equal=True)
        fresh = bootstrap(rest_rows, proba=False, bin_replicates=(), cells=rest, **options)
        known = [*known, fresh]
    return combined(known, cells)


def _macro(
    result, cell: list[str], alpha: float, withheld: frozenset[str], metrics: tuple[str, ...]
) -> pl.DataFrame:
    """Macro intervals: percentile intervals of the mean over labels of each replicate."""
    labelled = result.cells.with_row_index("row").filter(pl.col("label").is_not_null())
    groups = labelled.group_by(cell, maintain_order=True).agg(pl.col("row"))
    values = result.values
    columns: dict[str, list[float]] = {f"{m}_{e}": [] for m in metrics for e in ("lo", "hi")}
    for rows in groups.get_column("row").to_list():
        for metric in metrics:
            if metric in withheld:
                lo = hi = np.array([np.nan])
            else:
                mean = values[metric][rows].mean(axis=0, keepdims=True)
                lo, hi = percentile_interval(mean, alpha)
            columns[f"{metric}_lo"].append(float(lo[0]))
            columns[f"{metric}_hi"].append(float(hi[0]))
    return groups.drop("row").with_columns(
        label=pl.lit(None, pl.Int32),
        target=pl.lit("binary"),
        average=pl.lit("macro"),
        **{name: pl.Series(v, dtype=pl.Float64).fill_nan(None) for name, v in columns.items()},
    )


def with_multilabel_intervals(table: pl.DataFrame, bounds: pl.DataFrame) -> pl.DataFrame:
    """The ``multilabel`` table with ``<metric>_lo``/``<metric>_hi`` of ``bounds``
    (``multilabel_intervals``) after each metric; rows without one (the agreement target)
    get nulls."""
    return _attach(table, bounds, [*CELL, "mode", "target", "average"], INTERVALS)


def rank_tables_with_intervals(
    tables: Mapping[str, pl.DataFrame], bounds: pl.DataFrame
) -> dict[str, pl.DataFrame]:
    """The micro and macro discrimination and selective tables with their intervals.

    ``multilabel_micro_discrimination`` and ``multilabel_micro_selective`` (of
    ``multilabel_micro_tables``) get the micro rows' bounds; ``multilabel_macro_discrimination``
    and ``multilabel_macro_selective`` are ``macro_rows`` of the report's per-label
    ``discrimination`` and ``selective`` tables with the macro rows' bounds. ``bounds``: the
    prediction-confidence rows of ``multilabel_intervals``.
    """
    chosen = bounds.filter(pl.col("mode") == "prediction_confidence")
    out = {}
    for table in ("discrimination", "selective"):
        metrics = [m for m in RANK_INTERVALS if m in TABLES[table]]
        keys = [*CELL]
        micro = tables.get(f"multilabel_micro_{table}")
        if micro is not None:
            rows = chosen.filter(pl.col("average") == "micro")
            out[f"multilabel_micro_{table}"] = _attach(micro, rows, keys, metrics)
        macro = macro_tables(tables).get(f"multilabel_macro_{table}")
        if macro is not None:
            rows = chosen.filter(pl.col("average") == "macro")
            out[f"multilabel_macro_{table}"] = _attach(macro, rows, keys, metrics)
    return out


def macro_tables(tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """``multilabel_macro_discrimination`` and ``multilabel_macro_selective``: the
    ``macro_rows`` of the per-label ``discrimination`` and ``selective`` tables (each metric
    of the table and the selective targets), for each that has rows."""
    out = {}
    for table in ("discrimination", "selective"):
        per_label = tables.get(table)
        if per_label is not None and not per_label.is_empty():
            macro = macro_rows(per_label, [*TABLES[table], *_SELECTIVE_TARGETS])
            out[f"multilabel_macro_{table}"] = macro
    return out


#: The selective table's targets, carried by its macro rows (the same in every cell).
_SELECTIVE_TARGETS = ("target_coverage", "target_risk")


def _attach(
    table: pl.DataFrame, bounds: pl.DataFrame, keys: list[str], metrics: Iterable[str]
) -> pl.DataFrame:
    """``table`` with ``<metric>_lo``/``<metric>_hi`` of ``bounds`` after each metric."""
    metrics = [m for m in metrics if m in table.columns]
    columns = [f"{m}_{end}" for m in metrics for end in ("lo", "hi")]
    out = table.join(
        bounds.select(*keys, *columns), on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    order = []
    for name in table.columns:
        order.append(name)
        if name in metrics:
            order += [f"{name}_lo", f"{name}_hi"]
    return out.select(order)


#: The micro tables of ``multilabel_micro_tables``, by report table name.
MICRO_TABLES = (
    "multilabel_micro",
    "multilabel_micro_discrimination",
    "multilabel_micro_selective",
    "multilabel_micro_reliability",
    "multilabel_micro_confidence_histogram",
    "multilabel_micro_risk_coverage",
)


def multilabel_micro_tables(
    predictions: pl.DataFrame | pl.LazyFrame, *, bins: int = 15
) -> dict[str, pl.DataFrame]:
    """The single-label report's tables for the micro average of each multi-label cell.

    Micro pools every (sample, label) pair of a cell in the prediction-confidence mode (the
    stated c against whether the decision was right): the cell with ``label`` null. Its
    calibration, discrimination and selective metrics and its figure tables come from the
    same code as a single-label cell's, so micro gets every figure a label gets; the
    reliability diagram's Wilson intervals count each test sample once (a bin's rows divided
    on the bin's distinct test samples, since one sample's labels are not independent draws
    (none below ``MIN_BIN_SAMPLES``), and only for the equal-width bins the diagram draws.

    Returns
    -------
    dict of str to pl.DataFrame
        The tables of ``MICRO_TABLES`` (empty without multi-label rows): ``calibration``,
        ``discrimination``, ``selective``, ``reliability``, ``confidence_histogram`` and
        ``risk_coverage`` of the micro cells, in the single-label tables' columns.
    """
    from relcol.analysis._bins import confidence_histograms, reliability_bins, risk_coverage
    from relcol.metrics import metric_tables

    pooled = (
        predictions.lazy()
        .filter(pl.col("label").is_not_null())
        .with_columns(label=pl.lit(None, pl.Int32))
    )
    names = ("calibration", "calibration_bins", "discrimination", "selective")
    lazy = metric_tables(pooled, CELL, bins=bins, events=())
    plans = [*(lazy[name] for name in names), risk_coverage(lazy["selective_curve"])]
    # a bin's distinct test samples: its accuracy's Wilson interval counts each once
    samples = pooled.group_by([*CELL, bin_index("confidence", bins=bins)]).agg(
        samples=pl.col("sample_id").n_unique().cast(pl.Int64)
    )
    frames = dict(
        zip((*names, "risk_coverage", "samples"), pl.collect_all([*plans, samples]), strict=True)
    )
    if frames["calibration"].is_empty():
        return {}
    width = frames["calibration_bins"].filter(pl.col("binning") == "width")
    width = width.join(frames["samples"], on=[*CELL, "bin"], how="left", nulls_equal=True)
    lo, hi = proportion_interval(width["accuracy"].to_numpy(), width["samples"].to_numpy())
    enough = width["samples"].to_numpy() >= MIN_BIN_SAMPLES
    width = width.with_columns(
        accuracy_lo=pl.Series(np.where(enough, lo, np.nan)).fill_nan(None),
        accuracy_hi=pl.Series(np.where(enough, hi, np.nan)).fill_nan(None),
    )
    return {
        "multilabel_micro": frames["calibration"],
        "multilabel_micro_discrimination": frames["discrimination"],
        "multilabel_micro_selective": frames["selective"],
        "multilabel_micro_reliability": reliability_bins(width),
        "multilabel_micro_confidence_histogram": confidence_histograms(frames["calibration_bins"]),
        "multilabel_micro_risk_coverage": frames["risk_coverage"],
    }


def macro_rows(table: pl.DataFrame, metrics: Iterable[str]) -> pl.DataFrame:
    """Macro averages of a per-cell table's label rows: per cell without its label, the mean
    over labels of each of ``metrics`` (``n`` the total), ``label`` null, ``average`` macro.
    Any other column (intervals among them) is left out."""
    keys = [k for k in (*CELL, "score") if k in table.columns and k != "label"]
    metrics = [m for m in metrics if m in table.columns and m not in ("n", *keys)]
    total = [pl.col("n").sum()] if "n" in table.columns else []
    return (
        table.filter(pl.col("label").is_not_null())
        .group_by(keys, maintain_order=True)
        .agg(*total, *[exact_mean(pl.col(m).cast(pl.Float64)) for m in metrics])
        .with_columns(label=pl.lit(None, table.schema["label"]), average=pl.lit("macro"))
    )
