"""The report's figures on one matplotlib axes, for notebooks (public as ``relcol.plot``).

Each function draws with the report's own drawing code (``relcol.report._figures``) and
returns the :class:`matplotlib.axes.Axes` it drew on (``ax.figure`` is the figure), in the
spirit of scikit-learn's ``CalibrationDisplay``: pass ``ax=`` to draw into a figure of
your own, call twice on one axes or give ``by=`` to compare models, datasets, corruptions
or confidences before and after recalibration.

Every function takes either

- **prediction rows**: a Polars (eager or lazy) or pandas frame with a ``confidence``
  column in [0, 1] and a boolean ``correct`` column (or ``y_true`` and ``y_pred``, from
  which ``correct`` is derived), such as ``Warehouse.predictions()`` or
  ``relcol.read_predictions()``; the numbers are computed with ``relcol.metrics``; or
- **the table the report draws**, as ``relcol.report_tables()`` and the warehouse's views
  return it: ``reliability``, ``risk_coverage``, ``confidence_histogram`` or
  ``calibration``, filtered to the cells wanted.

A series is one value of the ``by`` columns; by default, the cell keys that vary in the
frame. Drawing needs matplotlib, imported on first use.

>>> import polars as pl, relcol.plot
>>> rows = pl.DataFrame({"confidence": [0.95, 0.9, 0.8, 0.6], "correct": [True, True, False, True]})
>>> ax = relcol.plot.reliability_diagram(rows, bins=5)
>>> ax.get_legend().get_texts()[0].get_text()
'all rows (n = 4) ECE 0.338 · MCE 0.800'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from relcol.analysis import CELL
from relcol.checks import check_bins, check_choice, check_int
from relcol.errors import ColumnNotFoundError, InputError, ParameterError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "confidence_by_correctness",
    "degradation_curve",
    "reliability_diagram",
    "risk_coverage",
]

#: The keys of a cell (docs/metrics.md's cell plus ``label``); a series is one value of some.
_KEYS = CELL
_SERIES = "model"  # the column the drawing code reads a series from


def reliability_diagram(
    data: Any,
    *,
    by: str | Sequence[str] | None = None,
    bins: int = 15,
    binning: str = "width",
    confidence: str = "confidence",
    correct: str = "correct",
    min_samples: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Accuracy against confidence per bin, a line per series, ECE and MCE in the legend.

    Parameters
    ----------
    data
        Prediction rows, or rows of the ``reliability`` table (one cell per series).
    by
        Columns whose values make the series; default: the cell keys that vary.
    bins
        Equal-width bins M for prediction rows (a table brings its own).
    binning
        For the table: ``"width"`` or ``"mass"`` rows.
    confidence, correct
        Column names in prediction rows.
    min_samples
        Bins with fewer samples are faint hollow markers without interval or line
        (default 10, the report's).
    ax
        Axes to draw on; default a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        Markers sit at (mean confidence, accuracy) of each bin, their area by the bin's
        share of rows, whiskers the 95 % Wilson interval (rows as draws) or the table's
        interval; grey bars are the share of rows per bin when there is one series.
    """
    from relcol.report import _figures as draw

    frame = _frame(data)
    if "binning" in frame.columns:
        frame = frame.filter(
            pl.col("binning") == check_choice("binning", binning, ("width", "mass"))
        )
    table, edges = _binned(
        frame, by, bins, "reliability", {"bin", "accuracy", "share"}, confidence, correct
    )
    _require(table, ("cell_ece", "cell_mce"), "reliability")
    solid = draw.SOLID_BIN_SAMPLES if min_samples is None else check_int("min_samples", min_samples)
    names, styles, ax = _canvas(table, ax)
    errors = {r[_SERIES]: (r["cell_ece"], r["cell_mce"]) for r in table.iter_rows(named=True)}
    handles = []
    with _style():
        draw._unit_square(ax)
        for name in names:
            part = table.filter(pl.col(_SERIES) == name)
            n = int(part.get_column("n").sum())
            label = f"{name} (n = {n:,}) {draw.error_text(*errors[name])}"
            draw.reliability_panel(
                ax, part, styles[name], edges=edges if len(names) == 1 else None,
                min_samples=solid,
            )  # fmt: skip
            handles.append(draw._legend_handle(styles[name], label))
        ax.set_xlabel("confidence (mean in bin)")
        ax.set_ylabel("accuracy in bin")
        ax.legend(handles=handles, loc="best", fontsize=7, frameon=False)
    return ax


def degradation_curve(
    calibration: Any,
    *,
    metric: str = "accuracy",
    by: str | Sequence[str] | None = None,
    x: str = "severity",
    ax: Axes | None = None,
) -> Axes:
    """One metric of the ``calibration`` table against severity, a line per series.

    Parameters
    ----------
    calibration
        Rows of the ``calibration`` table (``relcol.calibration()``, ``report_tables()``),
        e.g. one dataset and corruption; ``<metric>_lo``/``_hi`` columns become bands.
    metric
        A column of it: ``accuracy``, ``mean_confidence``, ``ece``, ``gap``, ``brier`` …
    by
        Columns whose values make the series; default: the keys other than severity
        that vary.
    x
        ``"severity"`` or ``"realised_rate"`` (after ``relcol.analysis.on_realised_axis``).
    ax
        Axes to draw on; default a new figure.
    """
    from relcol.report import _figures as draw

    frame = _frame(calibration)
    _require(frame, ("severity", metric, x), "calibration")
    table = _series(frame, by, within="severity")
    names, styles, ax = _canvas(table, ax)
    with _style():
        if metric == "gap":
            ax.axhline(0.0, color=draw.GREY, lw=0.8, zorder=1)
        draw._degradation_panel(ax, table, metric, names, styles, x=x)
        ax.set_xlabel("realised rate" if x == "realised_rate" else "severity d")
        ax.set_ylabel(dict(draw.PANELS).get(metric, metric))
        ax.legend(handles=draw._model_handles(styles, names), fontsize=7, frameon=False)
    return ax


def risk_coverage(
    data: Any,
    *,
    by: str | Sequence[str] | None = None,
    oracle: bool = True,
    confidence: str = "confidence",
    correct: str = "correct",
    ax: Axes | None = None,
) -> Axes:
    """Selective risk against coverage, a line per series, with the oracle curve dotted.

    Parameters
    ----------
    data
        Prediction rows, or rows of the ``risk_coverage`` table (one cell per series).
    by, confidence, correct, ax
        As in :func:`reliability_diagram`.
    oracle
        Draw each series' best possible curve: its errors rejected first.
    """
    from relcol.analysis import risk_coverage as on_grid
    from relcol.metrics import selective_curve
    from relcol.report import _figures as draw

    def compute(cells: pl.DataFrame) -> pl.DataFrame:
        return on_grid(selective_curve(cells, list(_KEYS)), points=100).collect()

    table, _ = _table(_frame(data), by, {"coverage", "risk"}, compute, confidence, correct)
    if oracle:
        _require(table, ("oracle_risk",), "risk_coverage")
    if "score" in table.columns and table.get_column("score").n_unique() > 1:
        scores = ", ".join(table.get_column("score").unique().sort())
        raise ParameterError(
            f"risk_coverage: the table holds several scores ({scores}); filter one"
        )
    names, styles, ax = _canvas(table, ax)
    with _style():
        for name in names:
            part = table.filter(pl.col(_SERIES) == name)
            draw.risk_coverage_panel(ax, part, styles[name], oracle=oracle, label=name)
        ax.set_xlim(0, 1)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("coverage")
        ax.set_ylabel("selective risk (error rate of accepted)")
        handles = draw._model_handles(styles, names)
        if oracle:
            handles.append(draw._oracle_handle())
        ax.legend(handles=handles, fontsize=7, frameon=False, loc="best")
    return ax


def confidence_by_correctness(
    data: Any,
    *,
    by: str | Sequence[str] | None = None,
    bins: int = 15,
    confidence: str = "confidence",
    correct: str = "correct",
    ax: Axes | None = None,
) -> Axes:
    """Confidence of right vs wrong predictions: a split violin per series.

    Parameters
    ----------
    data
        Prediction rows, or rows of the ``confidence_histogram`` table (one cell per
        series).
    by, bins, confidence, correct, ax
        As in :func:`reliability_diagram`.

    Returns
    -------
    matplotlib.axes.Axes
        Left half: the histogram of right predictions' confidence (series colour), right
        half: wrong predictions' (grey), each scaled to its own peak; bars across mark each
        half's median bin.
    """
    from relcol.report import _figures as draw

    table, edges = _binned(
        _frame(data), by, bins, "confidence_histogram", {"bin", "correct", "share"},
        confidence, correct,
    )  # fmt: skip
    names, styles, ax = _canvas(table, ax)
    with _style():
        draw.correctness_panel(ax, table, names, styles, edges=edges, key=_SERIES)
        ax.set_ylabel("confidence")
        ax.legend(handles=draw._violin_handles(), fontsize=7, frameon=False,
                  loc="lower left")  # fmt: skip
    return ax


# Inputs ------------------------------------------------------------------------------------


def _frame(data: Any) -> pl.DataFrame:
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, pl.DataFrame):
        return data
    if type(data).__module__.startswith("pandas"):
        return pl.from_pandas(data)
    raise InputError(
        f"data must be a polars or pandas DataFrame (or a polars LazyFrame). "
        f"Got {type(data).__name__}."
    )


def _require(frame: pl.DataFrame, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ColumnNotFoundError.from_missing_and_available(source, missing, frame.columns)


def _by(frame: pl.DataFrame, by: str | Sequence[str] | None, within: str | None) -> list[str]:
    if by is None:
        keys = [k for k in _KEYS if k in frame.columns and k != within]
        return [k for k in keys if frame.get_column(k).n_unique() > 1]
    by = [by] if isinstance(by, str) else list(by)
    _require(frame, by, "by")
    return by


def _label(by: Sequence[str]) -> pl.Expr:
    """A series' name: its values of ``by``, joined (severity as d = …)."""
    if not by:
        return pl.lit("all rows")
    parts = []
    for key in by:
        value = pl.col(key).cast(pl.String).fill_null("–")
        if key == "severity":
            value = pl.lit("d = ") + value
        elif key == "label":
            value = pl.lit("label ") + value
        parts.append(value)
    return pl.concat_str(parts, separator=", ")


def _series(
    frame: pl.DataFrame, by: str | Sequence[str] | None, *, within: str | None = None
) -> pl.DataFrame:
    """A relcol table with ``model`` replaced by the series name; one cell per series."""
    keys = _by(frame, by, within)
    if frame.is_empty():
        raise InputError("the table has no rows to draw")
    table = frame.with_columns(_label(keys).alias(_SERIES))
    cell = [k for k in _KEYS if k in frame.columns and k not in keys and k != within]
    for key in cell:
        if table.get_column(key).n_unique() > 1:
            raise ParameterError(
                f"several {key} values in one series ({', '.join(map(str, _first(table, key)))}"
                f"…): filter the table to one, or pass by=[…, {key!r}]"
            )
    return table


def _first(frame: pl.DataFrame, key: str) -> list:
    return frame.get_column(key).unique(maintain_order=True).head(3).to_list()


def _prediction_cells(
    frame: pl.DataFrame, by: str | Sequence[str] | None, confidence: str, correct: str
) -> pl.DataFrame:
    """Prediction rows as one cell per series, with checked confidence and correctness."""
    if correct not in frame.columns and {"y_true", "y_pred"} <= set(frame.columns):
        frame = frame.with_columns((pl.col("y_true") == pl.col("y_pred")).alias(correct))
    _require(frame, (confidence, correct), "prediction rows")
    keys = _by(frame, [] if by is None else by, None)
    if frame.is_empty():
        raise InputError("prediction rows: no rows to draw")
    values = frame.get_column(confidence)
    if not values.dtype.is_numeric():
        raise InputError(f"prediction rows: {confidence!r} must be numeric. Got {values.dtype}.")
    values = values.cast(pl.Float64)
    bad = values.is_null() | values.is_nan() | (values < 0) | (values > 1)
    if bad.any():
        first = values.filter(bad)[0]
        raise InputError(
            f"prediction rows: {confidence!r} must be in [0, 1] without nulls; "
            f"{int(bad.sum()):,} rows are not, e.g. {first}"
        )
    outcome = frame.get_column(correct)
    if outcome.dtype != pl.Boolean or outcome.null_count():
        raise InputError(
            f"prediction rows: {correct!r} must be boolean without nulls. Got {outcome.dtype}"
            f" with {outcome.null_count():,} nulls."
        )
    return frame.select(
        study=pl.lit(""),
        dataset=pl.lit(""),
        model=_label(keys),
        corruption=pl.lit(""),
        severity=pl.lit(0.0),
        label=pl.lit(None, pl.Int32),
        confidence=pl.col(confidence).cast(pl.Float64),
        correct=pl.col(correct),
    )


def _edges(table: pl.DataFrame) -> int | None:
    """M of an equal-width table (bin widths 1/M), None for equal-mass bins."""
    if "binning" in table.columns and set(table.get_column("binning")) != {"width"}:
        return None
    width = (table.get_column("bin_upper") - table.get_column("bin_lower")).min()
    return round(1 / width) if width else None


def _table(
    frame: pl.DataFrame,
    by: str | Sequence[str] | None,
    columns: set[str],
    compute: Callable[[pl.DataFrame], pl.DataFrame],
    confidence: str,
    correct: str,
) -> tuple[pl.DataFrame, bool]:
    """The figure-ready table: ``frame`` itself when it has ``columns`` (a relcol table),
    else ``compute`` of its prediction rows, one cell per series. True when given."""
    if columns <= set(frame.columns) and confidence not in frame.columns:
        return _series(frame, by), True
    cells = _prediction_cells(frame, by, confidence, correct)
    return _in_order(compute(cells), cells), False


def _binned(
    frame: pl.DataFrame,
    by: str | Sequence[str] | None,
    bins: object,
    name: str,
    columns: set[str],
    confidence: str,
    correct: str,
) -> tuple[pl.DataFrame, int | None]:
    """The report's figure table ``name`` (``relcol.analysis.figure_tables`` of the series'
    ``bins`` equal-width calibration bins, or ``frame`` itself when it is that table) and
    its number of equal-width bins M (None for equal-mass bins)."""
    from relcol.analysis import figure_tables
    from relcol.metrics import calibration_bins

    edges = check_bins(bins)

    def compute(cells: pl.DataFrame) -> pl.DataFrame:
        binned = calibration_bins(cells, list(_KEYS), bins=edges).collect()
        return figure_tables({"calibration_bins": binned})[name]

    table, given = _table(frame, by, columns, compute, confidence, correct)
    return table, _edges(table) if given else edges


def _canvas(
    table: pl.DataFrame, ax: Axes | None
) -> tuple[list[str], dict[str, dict[str, object]], Axes]:
    """The series in order of first appearance, a style for each, and the axes to draw on
    (``ax``, or a new figure's)."""
    from relcol.report._figures import model_styles

    names = table.get_column(_SERIES).unique(maintain_order=True).to_list()
    return names, model_styles(names), _axes(ax)


def _in_order(table: pl.DataFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """``table`` sorted by each series' first appearance in ``cells``."""
    order = cells.get_column(_SERIES).unique(maintain_order=True)
    rank = pl.col(_SERIES).replace_strict(order, range(len(order)))
    return table.sort(rank, maintain_order=True)


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    with _style():
        _, ax = plt.subplots(figsize=(4.8, 4.2), layout="constrained")
    return ax


def _style():
    from matplotlib import rc_context

    from relcol.report._figures import _RC

    return rc_context(_RC)
