"""The report's consistency and robustness-scorecard sections (docs/consistency.md).

Formatting only: every number shown is a column of the ``consistency`` and ``scorecard``
tables that ``relcol.metrics.consistency`` and ``relcol.analysis.scorecard`` computed.
Consistency: per dataset (a collapsible block each), a panel of mean accuracy beside the
consistently-correct share against severity, then a table per model. Scorecard: a dot plot
of the scores per model, then the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

import polars as pl
from great_tables import GT, html

from relcol.analysis import (
    SCORECARD_MIN_CHANGE as MIN_CHANGE,
)
from relcol.analysis import (
    SCORECARD_RELIABILITY_ECE as RELIABILITY_ECE,
)
from relcol.analysis import require_columns, sort_by_appearance
from relcol.report._drawing import drawn_svg
from relcol.report._figures import (
    Styles,
    consistency_figure,
    model_styles,
    scorecard_figure,
)
from relcol.report._layout import by_dataset, figure
from relcol.report._sections import drawn_models
from relcol.report._tables import table_html

_AXES = {"seed": "across training seeds", "repeat": "across corruption repeats"}
_PER = {"seed": "training seeds per repeat", "repeat": "corruption repeats per seed"}
#: Columns of ``consistency`` on whether replicates err on the same samples, and their labels.
_OVERLAP = {"ec_l": html("EC<sub>l</sub>"), "kappa_error": html("κ<sub>e</sub>")}
_SCORES = {
    "stability": "stability S",
    "resilience": "resilience R",
    "resilience_chance": "R, chance-corrected",
    "reliability": "reliability L",
    "robustness": "robustness",
    "mean_ce": "mCE",
    "mean_relative_ce": "relative mCE",
    "mean_cce": "mCCE",
    "mean_relative_cce": "relative mCCE",
}
#: The scorecard's comparisons with the baseline model.
_CE = ("mean_ce", "mean_relative_ce", "mean_cce", "mean_relative_cce")


def consistency_section(
    tables: Mapping[str, pl.DataFrame], *, styles: Styles | None = None, **_: object
) -> str:
    """The HTML sections for the ``consistency`` and ``scorecard`` tables that are present
    (an empty string when neither is); ``styles``: the report's model styles; other keywords
    of the report's section list are ignored."""
    sections = []
    models = [
        m
        for name in ("consistency", "scorecard")
        if tables.get(name) is not None and "model" in tables[name].columns
        for m in tables[name].get_column("model").unique(maintain_order=True).to_list()
    ]
    styles = styles or model_styles(list(dict.fromkeys(models)))
    table = tables.get("consistency")
    if table is not None and not table.is_empty():
        require_columns(
            table,
            ("dataset", "model", "corruption", "severity", "axis", "replicates", "accuracy",
             "consistently_correct", "churn"),
            "consistency",
        )  # fmt: skip
        # The panels are the argument of a study of replicates (nothing varies with severity);
        # where the data degrade, the degradation curves carry it and the numbers are files.
        panels = table.get_column("severity").n_unique() == 1
        body = _consistency(table, styles, panels=panels)
        sections.append(_section("consistency", "Consistency across seeds and repeats", body))
    card = tables.get("scorecard")
    if card is not None and not card.is_empty():
        require_columns(card, ("dataset", "model", *_SCORES, "weights", "baseline"), "scorecard")
        sections.append(_section("scorecard", "Robustness scorecard", _scorecard(card, styles)))
    return "\n".join(sections)


def _section(anchor: str, heading: str, body: str) -> str:
    return f'<section id="{anchor}">\n<h2>{escape(heading)}</h2>\n{body}\n</section>'


def _consistency(table: pl.DataFrame, styles: Styles, *, panels: bool) -> str:
    """The section's body; ``panels``: draw the consistency panels per dataset."""
    axes = [a for a in _AXES if a in set(table["axis"])]
    replicates = "; ".join(
        f"{_span(table.filter(pl.col('axis') == a)['replicates'])} {_PER[a]}" for a in axes
    )
    intro = (
        "<p>Mean accuracy of the replicates beside the share of test samples that <em>every</em> "
        "replicate got right (consistently correct), and churn, the share of samples on which two "
        f"replicates predict different classes (1 − PA, averaged over replicate pairs); here "
        f"{escape(replicates)}. A model can be 80 % accurate in every run and still get a "
        "different fifth wrong each time: then accuracy stays high while the consistently "
        "correct share falls. Whether two replicates err on the same samples: EC<sub>l</sub>, "
        "the overlap of their error sets (|both wrong| / |either wrong|; 1 when neither errs), "
        "and κ<sub>e</sub>, the agreement of their right/wrong outcomes beyond what their "
        "accuracies alone would give by chance (0: errors independent of each other, 1: the "
        "same errors). Churn tells whether they also predict the same wrong class. At severity 0 every corruption is the identity, so the repeats of "
        "a seed hold the same predictions and churn across repeats is 0 there by construction.</p>"
    )
    wide = _by_axis(table, axes)
    single = table.filter(pl.col("label").is_null()) if "label" in table.columns else table

    def render(part: pl.DataFrame, name: str, block: int) -> str:
        parts = []
        curves = single.filter(
            pl.all_horizontal(
                pl.col(k) == part.row(0, named=True)[k]
                for k in ("study", "dataset")
                if k in part.columns
            )
        )
        if panels and not curves.is_empty() and set(curves["axis"]) & {"seed", "repeat"}:
            curves, drawn = drawn_models(curves, styles, "the table below has every model")
            svg = drawn_svg(
                consistency_figure,
                curves,
                title=name,
                styles=styles,
                id_prefix=f"cons{block}",
                label=f"Consistency panels for {name}",
            )
            parts.append(
                figure(
                    svg,
                    f"{escape(name)}: mean accuracy of the replicates (solid) beside the share "
                    "of samples every replicate got right (dashed), a row per axis of "
                    f"variation. The wider the gap between them, the less the errors repeat.{drawn}",
                )
            )
        # One table for every model (a file when long).
        parts.append(table_html(_model_table(part, name, str(block), axes, several=False)))
        return "\n".join(parts)

    return intro + "\n" + by_dataset(wide, render)


def _by_axis(table: pl.DataFrame, axes: list[str]) -> pl.DataFrame:
    """One row per cell, the per-axis columns side by side (accuracy from the first axis)."""
    keys = [
        k
        for k in ("study", "dataset", "model", "corruption", "severity", "label")
        if k in table.columns
    ]
    first = table.filter(pl.col("axis") == axes[0]).select(*keys, "accuracy")
    wide = first
    for axis in axes:
        wide = wide.join(
            table.filter(pl.col("axis") == axis).select(
                *keys,
                pl.col("consistently_correct").alias(f"consistently_correct_{axis}"),
                pl.col("churn").alias(f"churn_{axis}"),
                *(pl.col(c).alias(f"{c}_{axis}") for c in _OVERLAP if c in table.columns),
            ),
            on=keys,
            how="left",
            nulls_equal=True,
        )
    order = [k for k in ("study", "dataset", "model", "corruption") if k in keys]
    rest = [k for k in ("label", "severity") if k in keys]
    return sort_by_appearance(wide, order, *rest)


def _model_table(frame: pl.DataFrame, name: str, index: str, axes: list[str], several: bool) -> GT:
    """The table of ``frame``'s models (each model a row group); ``name`` titles it, ``index``
    numbers the tables (an HTML id)."""
    group = (["study"] if several else []) + ["dataset", "model", "corruption"]
    if "label" in frame.columns and frame["label"].null_count() < frame.height:
        group.append("label")
    # the keys stay in the table's files (CSV, Parquet); on the page the row groups show them
    keys = [c for c in ("study", "dataset", "model", "corruption", "label") if c in frame.columns]
    shown = frame.with_columns(
        __group=pl.concat_str([pl.col(c).cast(pl.String) for c in group], separator=" / ")
    )
    gt = (
        GT(shown, rowname_col="severity", groupname_col="__group", id=f"relcol-consistency-{index}")
        .tab_header(
            title=f"Consistency: {name}",
            subtitle=html(
                "accuracy vs consistently correct share; churn; error overlap EC<sub>l</sub>, "
                "κ<sub>e</sub>"
            ),
        )
        .tab_stubhead("d")
        .cols_label(accuracy="mean accuracy")
        .fmt_number("severity", decimals=2)
        .fmt_number(
            [c for c in shown.columns if c not in ("severity", "__group", *keys)], decimals=3
        )
        .sub_missing(missing_text="–")
        .cols_hide(keys)
    )
    for axis in axes:
        labels = {"consistently_correct": "consistently correct", "churn": "churn", **_OVERLAP}
        cols = {f"{c}_{axis}": label for c, label in labels.items() if f"{c}_{axis}" in shown}
        gt = gt.cols_label(**cols).tab_spanner(_AXES[axis], columns=list(cols))
    return gt


def _scorecard(card: pl.DataFrame, styles: Styles) -> str:
    several = "study" in card.columns and card["study"].n_unique() > 1
    group = (["study"] if several else []) + ["dataset"]
    if "label" in card.columns and card["label"].null_count() < card.height:
        group.append("label")
    weights = card["weights"][0]
    baseline = card["baseline"][0]
    # No comparison against a model the study does not have.
    compared = baseline in set(card["model"]) and card["mean_ce"].is_not_null().any()
    scores = {k: v for k, v in _SCORES.items() if compared or k not in _CE}
    shown = card.select(
        __group=pl.concat_str([pl.col(c).cast(pl.String) for c in group], separator=" / "),
        model="model",
        **{c: c for c in scores},
    )
    notes = (
        [n for n in card["note"].unique(maintain_order=True).to_list() if n]
        if "note" in card.columns
        else []
    )
    subtitle = f"robustness = weighted mean of S, chance-corrected R and L ({weights})"
    gt = (
        GT(shown, rowname_col="model", groupname_col="__group", id="relcol-scorecard")
        .tab_header(
            title="Robustness scorecard",
            subtitle=subtitle + (f"; CE against {baseline}" if compared else ""),
        )
        .tab_stubhead("model")
        .cols_label(**scores)
        .tab_spanner("stress tests", columns=[c for c in scores if c not in _CE])
        .fmt_number(list(scores), decimals=3)
        .sub_missing(missing_text="–")
        .tab_source_note(
            "S: share of (sample, seed, repeat) whose prediction under Gaussian noise of 0.05 "
            "training SDs equals the clean one. R = min(acc(0.1 SD)/acc(0), 1); chance-corrected "
            "(acc − 1/K)/(acc₀ − 1/K) clipped to [0, 1], the share of the accuracy above a "
            f"guess that survives. L = max(0, 1 − clean ECE/{RELIABILITY_ECE:g}): 0 at the ECE "
            "the traffic light calls red."
        )
    )
    if compared:
        gt = gt.tab_spanner(f"corruption error vs {baseline}", columns=list(_CE)).tab_source_note(
            "mCE: mean over corruptions of Σ_d err / Σ_d err of the baseline (d > 0); relative: "
            "the rise over clean err, max(Σ_d (err − err₀), 0) / Σ_d (err_base − err_base,₀), "
            f"only where the baseline's rise averages {MIN_CHANGE:g} or more per severity (a "
            "smaller one divides by noise); a model that improves scores 0. mCCE: the same "
            "with ECE. Below 1: degrades less than the baseline."
        )
    for note in notes:
        gt = gt.tab_source_note(f"Missing values: {note}.")
    panel = ""
    # The dot plot: one study's single-label rows (per-label scores stay in the table).
    single = card.filter(pl.col("label").is_null()) if "label" in card.columns else card
    studies = single["study"].n_unique() if "study" in single.columns else 1
    if not single.is_empty() and studies == 1:
        single, drawn = drawn_models(single, styles, "the table below has every model")
        svg = drawn_svg(
            scorecard_figure,
            single,
            styles=styles,
            id_prefix="score",
            label="Robustness scorecard per model and dataset",
        )
        panel = figure(
            svg,
            "Stability S, resilience R, reliability L and their weighted robustness per model "
            f"(1 is best), a panel per dataset.{drawn}",
        )
    return panel + "\n" + table_html(gt, collapse=False)


def _span(values: pl.Series) -> str:
    low, high = values.min(), values.max()
    return f"{low}" if low == high else f"{low}–{high}"
