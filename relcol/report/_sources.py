"""The report's section on confidence sources of an ingested prediction file.

Shown when the tables include ``sources`` (a file whose scores relcol derived: an LLM's
log-probabilities, ensembles) or ``agreement`` (single-label rows with a soft agreement).
The first table says, per source, whether its confidence is a probability or a score mapped
into [0, 1] (read its discrimination; recalibrate it before its calibration); the second
sets confidence against the annotators' agreement. Formatting only.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
import polars.selectors as cs
from great_tables import GT

from relcol.report._tables import table_html

_AGREEMENT = {
    "n": "n",
    "mean_agreement": "mean agreement",
    "mean_confidence": "mean conf.",
    "gap": "gap",
    "ece": "ECE vs agreement",
    "brier_top": "Brier vs agreement",
    "pearson_r": "Pearson r",
    "spearman_rho": "Spearman ρ",
    "accuracy": "accuracy",
}


def sources_section(tables: Mapping[str, pl.DataFrame], *, bins: int) -> str | None:
    """The section's HTML, or None when there is neither table."""
    parts = []
    sources = tables.get("sources")
    if sources is not None and not sources.is_empty():
        gt = (
            GT(sources.select("source", "kind", "formula", "mapping"), id="relcol-sources")
            .tab_header(
                title="Confidence sources",
                subtitle="A score is an ordering mapped into [0, 1]: compare it by "
                "discrimination (AUROC, AURC) and recalibrate it (relcol recalibrate) before "
                "reading its calibration metrics",
            )
            .cols_label(formula="score", mapping="map into [0, 1]")
        )
        parts.append(table_html(gt))
    agreement = tables.get("agreement")
    if agreement is not None and not agreement.is_empty():
        keys = ["model"] + [
            k for k in ("dataset", "corruption", "severity") if agreement[k].n_unique() > 1
        ]
        shown = agreement.with_columns(
            cell=pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator=" / ")
        ).select("cell", *_AGREEMENT)
        gt = (
            GT(shown, rowname_col="cell", id="relcol-agreement")
            .tab_header(
                title="Confidence against annotator agreement",
                subtitle="Agreement a = share of annotators agreeing with the prediction; "
                f"ECE on {bins} equal-width bins and Brier with a as the target",
            )
            .cols_label(**_AGREEMENT)
            .fmt_number(cs.float(), decimals=3)
            .fmt_integer("n", use_seps=False)
            .sub_missing(missing_text="–")
        )
        parts.append(table_html(gt))
    if not parts:
        return None
    body = "\n".join(parts)
    return f'<section id="sources">\n<h2>Confidence sources</h2>\n{body}\n</section>'
