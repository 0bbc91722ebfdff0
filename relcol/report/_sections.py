"""The calibration sections of the report: degradation curves, reliability diagrams, the
calibration table, and what each corruption actually did.

Each function takes the report's tables and returns its section's HTML, or None when its
table is absent, so a section appears exactly when its data exists. Formatting only: every
number is a column of a table passed in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from html import escape

import polars as pl

from relcol.analysis import MIN_BIN_SAMPLES
from relcol.metrics import labels
from relcol.report._drawing import drawn_svg
from relcol.report._figures import (
    PANELS,
    SOLID_BIN_SAMPLES,
    Styles,
    degradation_figure,
    reliability_figure,
)
from relcol.report._layout import by_dataset, figure, section
from relcol.report._tables import (
    bin_convention,
    calibration_table,
    frame_link,
    interval_columns,
    realised_rates_table,
    realised_trends_table,
    table_html,
    table_link,
    trend_table,
)

_SHORT = labels(("accuracy", "mean_confidence", "ece", "gap")) | {
    "mean_confidence": "mean confidence"
}


def single_label(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of single-label cells (``label`` null or absent)."""
    return frame.filter(pl.col("label").is_null()) if "label" in frame.columns else frame


#: Reliability diagrams and confidence distributions show clean data and at most this many
#: corruptions per dataset: those where confidence outruns accuracy the most (the rest of
#: the cells are in the tables' files).
FIGURE_CORRUPTIONS = 2


def worst_corruptions(
    part: pl.DataFrame, calibration: pl.DataFrame, limit: int = FIGURE_CORRUPTIONS
) -> list[str]:
    """The ``limit`` corruptions of ``part``'s study and dataset with the largest gap Δ of any
    model at their worst severity, largest first (ties: the study's order)."""
    row = part.row(0, named=True)
    keys = [k for k in ("study", "dataset") if k in part.columns and k in calibration.columns]
    cells = single_label(calibration).filter(*(pl.col(k) == row[k] for k in keys))
    worst = cells.filter(pl.col("severity") == pl.col("severity").max().over("corruption"))
    ranked = (
        worst.group_by("corruption", maintain_order=True)
        .agg(pl.col("gap").max())
        .sort("gap", descending=True, nulls_last=True, maintain_order=True)
    )
    return ranked.get_column("corruption").head(limit).to_list()


def figure_subset(
    part: pl.DataFrame, calibration: pl.DataFrame, what: str
) -> tuple[pl.DataFrame, str]:
    """``part`` cut to the corruptions :func:`worst_corruptions` picks, and the sentence that
    says which were drawn (empty when every one was)."""
    every = part.get_column("corruption").unique(maintain_order=True).to_list()
    shown = worst_corruptions(part, calibration)
    if len(every) <= len(shown) or not shown:
        return part, ""
    kept = part.filter(pl.col("corruption").is_in(shown))
    sentence = (
        f" Drawn for the {len(shown)} of {len(every)} corruptions where some model's gap Δ is "
        f"largest at the worst severity ({escape(', '.join(shown))}); {what}."
    )
    return kept, sentence


#: The report's figures draw at most this many models: the palette's eight colours, each in two
#: line styles. A study of more models draws the ones :func:`figure_models` picks, the same in
#: every figure (so each keeps its colour); the tables and their files keep every model.
FIGURE_MODELS = 16


def figure_models(
    worst: pl.DataFrame, models: Sequence[str], limit: int | None = None
) -> list[str]:
    """The models the report's figures draw, in the order of ``models`` (every model of the
    report, in the study's order): all of them when there are at most ``limit`` (default
    ``FIGURE_MODELS``); else the ``limit // 2`` whose largest gap Δ (``worst``: a ``model``
    and a ``gap`` column, such as the ``worst_gaps`` table; a model's largest) is the largest
    and the rest of the count whose largest gap Δ is the smallest, ties in the order of
    ``worst``; models without a gap only fill the count."""
    limit = FIGURE_MODELS if limit is None else limit
    if len(models) <= limit:
        return list(models)
    ranked = (
        worst.filter(pl.col("model").is_in(models))
        .group_by("model", maintain_order=True)
        .agg(pl.col("gap").max())
        .sort("gap", descending=True, nulls_last=True, maintain_order=True)
    )
    gapped = ranked.drop_nulls("gap").get_column("model").to_list()
    high = limit // 2
    chosen = {*gapped[:high], *gapped[high:][::-1][: limit - high]}
    chosen |= set([m for m in models if m not in chosen][: limit - len(chosen)])
    return [m for m in models if m in chosen]


def figure_rule(limit: int | None = None) -> str:
    """How :func:`figure_models` picks ``limit`` models (default ``FIGURE_MODELS``), in the
    words of a caption: true also when fewer than ``limit`` have a gap Δ, where the two sets
    overlap and the rest of the count is made up of those without one."""
    limit = FIGURE_MODELS if limit is None else limit
    return (
        f"the {limit // 2} whose largest gap Δ (at their most overconfident cell) is the "
        f"largest and the {limit - limit // 2} where it is the smallest, those without a gap Δ "
        "only filling the count"
    )


def drawn_models(
    part: pl.DataFrame, drawn: Collection[str], what: str, *, rows: str = "models", rule: str = ""
) -> tuple[pl.DataFrame, str]:
    """``part`` cut to the models ``drawn`` names (the report's styles: one per model
    ``figure_models`` picks), and the sentence that says so (empty when every model of
    ``part`` is drawn); ``what``: where the rest are; ``rows``: what a model of ``part`` is;
    ``rule``: how they were chosen (default: the report's ``figure_models`` of
    ``worst_gaps``)."""
    every = part.get_column("model").unique(maintain_order=True).to_list()
    kept = [m for m in every if m in drawn]
    if len(kept) == len(every):
        return part, ""
    rule = rule or f"the report's figures draw {figure_rule()}"
    sentence = f" Drawn for {len(kept)} of the {len(every)} {rows}: {rule}; {what}."
    return part.filter(pl.col("model").is_in(kept)), sentence


def degradation_section(
    tables: Mapping[str, pl.DataFrame],
    *,
    styles: Styles,
    meta: Mapping[str, object] | None = None,
    **_: object,
) -> str | None:
    """Accuracy, mean confidence, ECE and Δ against severity, and the trend tables."""
    calibration = tables["calibration"]
    curve = [
        k for k in ("study", "dataset", "model", "corruption", "label") if k in calibration.columns
    ]
    points = calibration.group_by(curve).agg(pl.col("severity").n_unique()).get_column("severity")
    if points.max() < 2:
        return None  # every curve has a single severity: nothing varies with d
    trends = tables.get("trends")
    with_interval = {c for c, _, _ in interval_columns(calibration)}
    banded = [_SHORT[m] for m, _ in PANELS if m in with_interval]
    level = float((meta or {}).get("level") or 0.95)
    bands = (
        f"Shaded bands: {level:.0%} intervals of {escape(', '.join(banded))}."
        if banded
        else "No intervals are drawn: the calibration table has no <code>_lo</code>/"
        "<code>_hi</code> columns."
    )
    lead = (
        "How each model's accuracy, stated confidence, ECE and gap Δ move as the data gets "
        "worse: one column per corruption, a line per model in the same colour throughout. "
        "Where the mean-confidence line stays high while accuracy falls, the model is "
        f"confidently wrong. {bands}"
    )
    colours = {m: str(s["color"]) for m, s in styles.items()}

    # with realised rates (``realised_axis``) when the study has corruption draws
    axis = tables.get("realised_axis", calibration)
    degradation = single_label(tables["degradation"])

    def render(drawn: pl.DataFrame, name: str, index: int) -> str:
        part, realised = drawn, []
        if "realised_rate" in drawn.columns:
            part = drawn.drop("realised_rate", "diverges")
            realised = drawn.filter(pl.col("diverges")).get_column("corruption").unique().to_list()
        lines, chosen = drawn_models(drawn, styles, "the trends table has every model")
        svg = drawn_svg(
            degradation_figure,
            lines,
            title=name,
            styles=styles,
            realised=realised,
            id_prefix=f"deg{index}",
            label=f"Degradation curves for {name}",
        )
        caption = (
            f"{escape(name)}: accuracy, mean confidence, ECE and the gap Δ = mean confidence − "
            f"accuracy against corruption severity d (thin lines: single labels).{chosen}"
        )
        if realised:
            caption += (
                f" Drawn against the realised rate instead, because it strays from d by more "
                f"than max(0.02, 0.1·d): {escape(', '.join(sorted(realised)))}."
            )
        curves = single_label(part)
        if curves.is_empty():
            return figure(svg, caption)
        kwargs = {"title": f"Trends: {name}", "colours": colours, "trends": trends}
        first = part.row(0, named=True)  # this part's study and dataset, as by_dataset cut it
        summary = degradation.filter(
            *(pl.col(k) == first[k] for k in ("study", "dataset") if k in part.columns)
        )
        table_id = f"relcol-trends-{index}"
        # The numbers only, as files: the figure above draws the curves, and the trends'
        # verdicts are in "Where trust breaks" (a nanoplot per cell cost great-tables
        # seconds and the page hundreds of SVGs).
        table = trend_table(curves, summary, table_id=table_id, plots=False, **kwargs)
        return figure(svg, caption, css="wide") + "\n" + (table_link(table) or table_html(table))

    body = by_dataset(axis, render)
    return section("degradation", "Degradation curves", body, lead=lead)


def reliability_section(
    tables: Mapping[str, pl.DataFrame],
    *,
    bins: int,
    styles: Styles,
    meta: Mapping[str, object] | None = None,
    **_: object,
) -> str | None:
    """Reliability diagrams at the clean and the worst severity, with bin counts and intervals."""
    table = tables.get("reliability")
    if table is None:
        return None
    rows = single_label(table.filter(pl.col("binning") == "width"))
    if rows.is_empty():
        return None
    methods = set(rows.get_column("interval").unique())
    if methods == {"bootstrap"}:
        level = float((meta or {}).get("level") or 0.95)
        intervals = f"{level:.0%} paired-bootstrap intervals of each bin's accuracy"
    else:
        intervals = (
            "95 % Wilson intervals of each bin's accuracy, counting each test sample once (a "
            "bin's distinct test samples, or without the statistical layer its rows divided "
            "by the cell's seeds × repeats per sample, since one sample's replicates are not "
            "independent draws); a bin with fewer than "
            f"{MIN_BIN_SAMPLES} samples has none (their coverage is verified by simulation "
            "from that count on)"
        )
    lead = (
        "Accuracy against confidence, bin by bin, on clean data (first column) and at each "
        "corruption's worst severity. A point on the diagonal is calibrated; below it, "
        "the model claims more than it delivers. Grey bars: the share of the cell's "
        f"predictions in each bin; vertical lines: {intervals}. A bin of fewer than "
        f"{SOLID_BIN_SAMPLES} samples is a faint hollow marker, drawn without its interval "
        "and not joined to its neighbours (<code>reliability.csv</code> has its interval from "
        f"{MIN_BIN_SAMPLES} samples on). Bins: "
        f"{bin_convention(bins)}; the equal-mass bins are in <code>reliability.csv</code> too."
    )

    calibration = tables["calibration"]

    def render(part: pl.DataFrame, name: str, index: int) -> str:
        part, drawn = figure_subset(
            part, calibration, "every cell's bins are in <code>reliability.csv</code>"
        )
        part, chosen = drawn_models(part, styles, "their bins are in <code>reliability.csv</code>")
        drawn += chosen
        models = part.get_column("model").unique(maintain_order=True).to_list()
        if part.get_column("corruption").n_unique() > 1 or len(models) < 3:
            svg = drawn_svg(
                reliability_figure,
                part,
                edges=bins,
                title=name,
                styles=styles,
                id_prefix=f"rel{index}",
                label=f"Reliability diagrams for {name}",
            )
            caption = (
                f"{escape(name)}: reliability diagrams, a row per model; n is the cell's number "
                f"of predictions (every seed and repeat).{drawn}"
            )
            return figure(svg, caption, css="wide")
        # A row per model of one or two panels is a narrow column down the page (the five
        # maps of a recalibrated study, say): a figure per model, side by side instead.
        figures = []
        for number, model in enumerate(models, start=1):
            svg = drawn_svg(
                reliability_figure,
                part.filter(pl.col("model") == model),
                edges=bins,
                title=model,
                styles=styles,
                id_prefix=f"rel{index}-{number}",
                label=f"Reliability diagrams for {name}: {model}",
            )
            figures.append(figure(svg, escape(model)))
        caption = (
            f"{escape(name)}: reliability diagrams, one per model; n is the cell's number of "
            f"predictions (every seed and repeat).{drawn}"
        )
        body = "\n".join(figures)
        return f'<div class="figures">\n{body}\n</div>\n<p class="legend">{caption}</p>'

    return section("reliability", "Reliability diagrams", by_dataset(rows, render), lead=lead)


def calibration_section(
    tables: Mapping[str, pl.DataFrame], *, bins: int, study: str, **_: object
) -> str:
    """The calibration table, one per dataset."""
    calibration = tables["calibration"]

    def render(part: pl.DataFrame, name: str, index: int) -> str:
        # Every metric of every cell is wider than any page: always a file.
        table_id, title = f"relcol-calibration-{index}", f"Calibration by cell: {name}"
        link = frame_link(part, table_id, title)
        if link is not None:
            return link
        gt = calibration_table(part, study=name, bins=bins, table_id=table_id)
        return table_html(gt, collapse=False)

    lead = (
        "Every calibration metric of every cell (all seeds and repeats pooled): relcol's docs/metrics.md. "
        "ECE₀ is the ECE a perfectly calibrated model with the same confidences would show by "
        "chance (one outcome drawn per prediction, however many repeats store it); ECE − ECE₀ "
        "is the part chance does not explain; p = (b + 1)/(R + 1), b of the R calibrated draws "
        "with an ECE at least as large, so p is never 0. MCE bin n: the rows of the bin the MCE "
        "comes from."
    )
    body = by_dataset(calibration, render, first_open=False)
    return section("calibration", "Calibration by cell", body, lead=lead)


def corruptions_section(tables: Mapping[str, pl.DataFrame], **_: object) -> str | None:
    """The realised corruption rates: what each operator actually did at each severity
    (``realised_rates``), and the curves whose trends differ against them
    (``realised_trends``)."""
    corruptions = tables.get("corruptions")
    if corruptions is None or corruptions.is_empty():
        return None
    body = table_html(realised_rates_table(tables["realised_rates"]))
    trends = tables["realised_trends"]
    if not trends.is_empty() and trends.get_column("diverges").any():
        body += "\n" + table_html(realised_trends_table(trends.filter(pl.col("diverges"))))
    lead = (
        "What each operator actually did: the mean realised rate (missing share, rows made "
        "incomplete, labels replaced, noise scale in training SDs) at each nominal severity d. "
        "A curve diverges when some mean realised rate strays from d by more than "
        "max(0.02, 0.1·d); its degradation curves are drawn against the realised rate, and "
        "its trends are tested against it too."
    )
    return section("corruptions", "Realised corruption rates", body, lead=lead)
