"""The full report of a real (tiny) study: every section in docs/report.md order, figures with
bands and intervals when the tables carry ``_lo``/``_hi`` columns, every table exported in
four formats, byte-identical output, and the figure-ready tables of ``relcol.analysis``."""

from __future__ import annotations

import importlib.machinery
import platform
import re
import sys
import types

import numpy as np
import polars as pl
import pytest
from great_tables import GT

import relcol
import relcol.report._sections as report_sections
from relcol import report_tables
from relcol.analysis import summary_tables
from relcol.analysis._bins import (
    confidence_histograms,
    reliability_bins,
    risk_coverage,
    with_stage,
)
from relcol.analysis._bootstrap import MIN_BIN_SAMPLES
from relcol.analysis._headline import verdicts
from relcol.metrics import selective, selective_curve
from relcol.report import render_html, write_report
from relcol.report._figures import (
    OKABE_ITO,
    SOLID_BIN_SAMPLES,
    degradation_figure,
    model_styles,
    reliability_figure,
    reliability_panel,
)
from relcol.report._html import SECTIONS
from relcol.report._sections import figure_models
from relcol.report._tables import data_color, merge_intervals
from relcol.store import CELL

ORDER = [
    "summary",
    "trust",
    "degradation",
    "reliability",
    "calibration",
    "discrimination",
    "selective",
    "consistency",
    "scorecard",
    "corruptions",
    "methods",
]


@pytest.fixture(scope="module")
def tables(tiny_warehouse) -> dict[str, pl.DataFrame]:
    return report_tables(tiny_warehouse, "tiny", bins=10)


@pytest.fixture(scope="module")
def meta() -> dict:
    return {"study": "tiny", "bins": 10, "spec": 'name = "tiny"\nseeds = [0, 1]\nrepeats = 2\n'}


@pytest.fixture(scope="module")
def page(tables, meta, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-report")
    index = write_report(out, tables=tables, meta=meta)
    return out, index.read_text(encoding="utf-8")


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="([\w-]+)"', html)


def test_sections_follow_the_design_order(page):
    _, html = page
    assert _sections(html) == ORDER
    nav = html[html.index("<nav") : html.index("</nav>")]
    assert re.findall(r'href="#([\w-]+)"', nav) == ORDER
    assert "<script" not in html and "http://" not in html and "https://" not in html


def test_figures_are_there_and_labelled(page):
    _, html = page
    labels = re.findall(r'<svg role="img" aria-label="([^"]+)"', html)
    for kind in ("Degradation curves", "Reliability diagrams", "Confidence distributions",
                 "Risk–coverage curves"):  # fmt: skip
        assert sum(label.startswith(kind) for label in labels) == 2, kind  # two datasets
    assert "Robustness scorecard per model and dataset" in labels
    # Where the data degrade, the degradation curves carry the argument: no consistency
    # panels, and no nanoplot per table cell (hundreds of SVGs).
    assert not any(label.startswith("Consistency panels") for label in labels)
    assert "gt-nanoplot" not in html


def test_every_shown_table_is_exported_in_four_formats(page):
    out, html = page
    shown = re.findall(r'<div id="(relcol-[\w-]+)"', html)
    assert len(shown) == len(set(shown)) >= 12
    for table in shown:
        for suffix in ("html", "csv", "parquet", "tex"):
            path = out / "tables" / f"{table}.{suffix}"
            assert path.stat().st_size > 0, path
            assert f'href="tables/{table}.{suffix}"' in html
    # The trend tables, a row per curve, are files: a plain page, CSV and Parquet.
    assert 'id="relcol-trends-1"' not in html
    trend = pl.read_parquet(out / "tables" / "relcol-trends-1.parquet")
    assert trend.height == 3 * 4  # models × corruptions of the first dataset
    assert trend["model"].n_unique() == 3 and "worst_gap" in trend.columns
    plain = (out / "tables" / "relcol-trends-1.html").read_text()
    assert plain.count("<tr>") == 1 + trend.height and "<h1>Trends: " in plain
    first = trend.row(0, named=True)
    assert f"<td>{round(first['worst_gap'], 3)}</td>" in plain
    assert not (out / "tables" / "relcol-trends-1.tex").exists()
    for name in tables_of(out):
        assert (out / f"{name}.csv").exists() and (out / f"{name}.parquet").exists()


def tables_of(out) -> list[str]:
    return sorted(p.stem for p in out.glob("*.parquet"))


def test_the_same_warehouse_gives_the_same_bytes(tables, meta, page, tmp_path):
    out, html = page
    again = write_report(tmp_path, tables=tables, meta=meta)
    assert again.read_text(encoding="utf-8") == html
    for path in sorted((out / "tables").iterdir()):
        if path.suffix != ".parquet":
            assert (tmp_path / "tables" / path.name).read_bytes() == path.read_bytes(), path


def test_long_tables_and_datasets_collapse_without_script(page):
    _, html = page
    blocks = re.findall(
        r"<details( open=\"\")?( class=\"dataset\")?>\n<summary>(.*?)</summary>", html
    )
    datasets = [b for b in blocks if b[1]]
    assert datasets, "per-dataset blocks"
    # In each section the first dataset is open, the others closed (the calibration
    # table, which has no figure, starts closed).
    assert any(b[0] for b in datasets) and any(not b[0] for b in datasets)
    assert any("rows)" in b[2] for b in blocks)


def test_the_trust_tables_wrap_between_a_value_and_its_bound(page):
    # So that the table fits a laptop's page: the action's words wrap, and a value may put its
    # bound or p-value on a second line, never breaking inside the bracket or the parentheses.
    # The deciding metric is one short word; a minimum width there only widened the table.
    _, html = page
    cells = re.findall(r'<td ([^>]*)headers="[^"]*-(\w+)" class="gt_row[^"]*">([^<]*)</td>', html)
    expected = {
        "clean_gap": True,
        "break_change": True,
        "d_star_gap": True,
        "trend": True,
        "action": True,
        "deciding_metric": False,
    }
    wraps = {
        column: {"white-space: normal" in attributes for attributes, c, _ in cells if c == column}
        for column in expected
    }
    assert wraps == {column: {wrap} for column, wrap in expected.items()}
    for attributes, column, _ in cells:
        assert _styles_read(attributes), (column, attributes)
    bounds = [text for _, column, text in cells if column == "clean_gap" and "[" in text]
    assert bounds and all(re.fullmatch(r"[+-]\d\.\d{3} \[≥\xa0[+-]\d\.\d{3}\]", t) for t in bounds)
    trends = [text for _, column, text in cells if column == "trend" and text != "–"]
    assert trends and all(
        re.fullmatch(r"[+-]\d\.\d{2} \(p(\xa0[=<]\xa0\d\.\d{3}|\xa0–)\)", t) for t in trends
    )


def _styles_read(attributes: str) -> bool:
    """Whether a cell's styles are declarations a browser reads: great-tables joins two styles
    of a cell without a semicolon unless the first ends with one, and the browser then drops
    both."""
    return all(
        re.fullmatch(r" ?[a-z-]+: [^:;]+", declaration)
        for style in re.findall(r'style="([^"]*)"', attributes)
        for declaration in style.split(";")
        if declaration.strip()
    )


def test_intervals_appear_when_the_tables_carry_them(tables, meta):
    cal = tables["calibration"]
    banded = cal.with_columns(
        **{f"{m}_lo": pl.col(m) - 0.01 for m in ("accuracy", "mean_confidence", "ece", "gap")},
        **{f"{m}_hi": pl.col(m) + 0.01 for m in ("accuracy", "mean_confidence", "ece", "gap")},
    )
    disc = tables["discrimination"].with_columns(
        auroc_lo=pl.col("auroc") - 0.05, auroc_hi=pl.col("auroc") + 0.05
    )
    html = render_html({**tables, "calibration": banded, "discrimination": disc}, meta=meta)
    first = disc.filter(pl.col("auroc").is_not_null()).row(0, named=True)
    a = first["auroc"]
    # the interval may go below its value on a narrow page, whole: no break inside the bracket
    assert f"{a:.3f} [{a - 0.05:.3f},\xa0{a + 0.05:.3f}]" in html
    cells = [
        (attributes, column)
        for attributes, column, text in re.findall(
            r'<td ([^>]*)headers="[^"]*-(\w+)" class="gt_row[^"]*">([^<]*)</td>', html
        )
        if re.search(r"\d \[", text)
    ]
    assert {column for _, column in cells} >= {"auroc", "aurc"}
    assert all("white-space: normal" in a and _styles_read(a) for a, _ in cells), cells
    # a coloured column keeps its colour beside the wrap (the calibration table's ECE and gap,
    # when a study's table is short enough to be drawn)
    frame = pl.DataFrame({"model": ["a", "b"], "ece": [0.1, 0.3], "ece_lo": [0.05, 0.2]})
    frame = frame.with_columns(ece_hi=pl.col("ece") + 0.05)
    gt = merge_intervals(GT(frame), frame)
    coloured = re.findall(
        r"<td ([^>]*)>0\.\d+ \[",
        data_color(gt, columns="ece", palette=["white", "red"]).as_raw_html(),
    )
    assert len(coloured) == 2
    assert all("white-space: normal" in a and "background-color" in a for a in coloured)
    assert all(_styles_read(a) for a in coloured), coloured
    assert "Shaded bands: 95% intervals of accuracy, mean confidence, ECE, gap Δ." in html
    fig = degradation_figure(banded.filter(dataset="wine"))
    bands = [c for ax in fig.get_axes() for c in ax.collections]
    assert len(bands) == 4 * 4 * 3  # panels (4 metrics × 4 corruptions) × models


def _without_intervals(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop(c for c in frame.columns if c.endswith(("_lo", "_hi")) or c == "samples")


def test_reliability_uses_the_bootstrap_bins_when_present(tables):
    bins = _without_intervals(tables["calibration_bins"])
    plain = reliability_bins(bins)
    assert set(plain["interval"]) == {"wilson"}
    given = bins.with_columns(accuracy_lo=pl.lit(0.1), accuracy_hi=pl.lit(0.9))
    boot = reliability_bins(given)
    assert set(boot["interval"]) == {"bootstrap"}
    assert (boot["accuracy_lo"] == 0.1).all() and boot["effective_n"].null_count() == boot.height
    html = render_html(
        {"calibration": tables["calibration"], "reliability": boot}, meta={"bins": 10}
    )
    assert "95% paired-bootstrap intervals" in html
    # the statistical layer's: Wilson on each bin's distinct samples, none in small bins
    layer = reliability_bins(tables["calibration_bins"])
    assert set(layer["interval"]) == {"wilson"}
    small = layer.filter(pl.col("effective_n") < MIN_BIN_SAMPLES)
    assert small["accuracy_lo"].null_count() == small.height


def test_the_caption_says_which_bins_the_diagram_draws_without_their_interval(tables):
    # a bin of 5 to 9 samples has an interval in the table but is drawn hollow, without it:
    # the caption says so, with both thresholds
    assert MIN_BIN_SAMPLES < SOLID_BIN_SAMPLES
    html = render_html(
        {"calibration": tables["calibration"], "reliability": tables["reliability"]},
        meta={"bins": 10},
    )
    assert (
        f"A bin of fewer than {SOLID_BIN_SAMPLES} samples is a faint hollow marker, drawn "
        "without its interval" in html
    )
    assert f"has its interval from {MIN_BIN_SAMPLES} samples on" in html
    from matplotlib.figure import Figure

    part = pl.DataFrame(
        {"bin": [3, 8], "n": [SOLID_BIN_SAMPLES - 1, 40], "share": [0.2, 0.8],
         "mean_confidence": [0.35, 0.85], "accuracy": [0.4, 0.8],
         "accuracy_lo": [0.1, 0.65], "accuracy_hi": [0.75, 0.9]}
    )  # fmt: skip
    ax = Figure().subplots()
    reliability_panel(ax, part, model_styles(["m"])["m"])
    lines = [c for c in ax.collections if type(c).__name__ == "LineCollection"]
    assert [len(c.get_segments()) for c in lines] == [1]  # the 40-sample bin's interval only
    hollow = [c for c in ax.collections if type(c).__name__ == "PathCollection"]
    assert sorted(len(c.get_offsets()) for c in hollow) == [1, 1]  # one solid, one hollow


def test_wilson_intervals_count_each_sample_once(tiny_warehouse, tables):
    samples = (
        tiny_warehouse.predictions("tiny")
        .group_by(CELL)
        .agg(samples=pl.col("sample_id").n_unique())
        .collect()
    )
    bins = _without_intervals(tables["calibration_bins"])
    rel = reliability_bins(bins, samples).filter(pl.col("binning") == "width")
    # tiny: 2 seeds × 2 repeats per sample, so a bin's effective n is a quarter of its rows
    assert np.allclose(rel["effective_n"], rel["n"] / 4)
    inside = (rel["accuracy_lo"] <= rel["accuracy"]) & (rel["accuracy"] <= rel["accuracy_hi"])
    assert inside.all()
    # Wilson by hand: 8 of 10 right, z = 1.96 → [0.4902, 0.9433]
    one = pl.DataFrame(
        {"study": "s", "dataset": "d", "model": "m", "corruption": "c", "severity": 0.0,
         "label": pl.Series([None], dtype=pl.Int32), "binning": "width", "bin": 0,
         "bin_lower": 0.0, "bin_upper": 1.0, "n": 10, "mean_confidence": 0.9, "accuracy": 0.8}
    )  # fmt: skip
    lo, hi = reliability_bins(one).select("accuracy_lo", "accuracy_hi").row(0)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)


def test_stages_are_the_clean_and_worst_severity(tables):
    staged = with_stage(tables["calibration"])
    by_stage = staged.group_by("corruption", "stage").agg(pl.col("severity").unique())
    worst = dict(by_stage.filter(stage="worst").select("corruption", "severity").iter_rows())
    assert worst["gaussian_noise"] == [1.0] and worst["mcar"] == [0.5]
    assert set(staged.filter(stage="clean")["severity"]) == {0.0}


def test_confidence_histograms_add_up(tables):
    hist = confidence_histograms(tables["calibration_bins"])
    sums = hist.group_by(*CELL, "correct").agg(pl.col("share").sum(), some=pl.col("n").sum() > 0)
    assert np.allclose(sums.filter("some")["share"], 1.0)
    assert sums.filter(~pl.col("some"))["share"].eq(0).all()  # no such outcome: all null
    counts = hist.group_by(*CELL).agg(pl.col("n").sum())
    cal = tables["calibration"].select(*CELL, pl.col("n").alias("rows"))
    joined = counts.join(cal, on=list(CELL), nulls_equal=True)
    assert joined.height == counts.height and (joined["n"] == joined["rows"]).all()


def test_risk_coverage_reads_the_curve_like_risk_at_coverage(tiny_warehouse, tables):
    rows = tiny_warehouse.predictions("tiny")
    curve = risk_coverage(selective_curve(rows, CELL), points=10).collect()
    assert curve.group_by(CELL).len()["len"].unique().to_list() == [10]
    at = selective(rows, CELL, coverage=0.8).collect().select(*CELL, "risk_at_coverage")
    read = curve.filter(pl.col("coverage") == 0.8).select(*CELL, "risk")
    both = at.join(read, on=list(CELL), nulls_equal=True)
    assert both.height == at.height
    assert np.allclose(both["risk"], both["risk_at_coverage"])
    assert tables["risk_coverage"].group_by(CELL).len()["len"].unique().to_list() == [50]


def test_one_model_keeps_one_colour(tables):
    styles = model_styles(["logistic_regression", "lightgbm", "naive_bayes"])
    rel = reliability_bins(tables["calibration_bins"]).filter(
        (pl.col("binning") == "width") & (pl.col("dataset") == "wine")
    )
    fig = reliability_figure(rel, edges=10, title="wine", styles=styles)
    rows = {ax.get_ylabel(): ax for ax in fig.get_axes() if ax.get_ylabel()}
    for model, style in styles.items():
        assert rows[model].yaxis.label.get_color() == style["color"]
        assert {line.get_color() for line in rows[model].get_lines()[1:]} == {style["color"]}
    assert [s["color"] for s in styles.values()] == list(OKABE_ITO[:3])


def test_figures_draw_the_models_of_the_largest_and_smallest_gaps(monkeypatch):
    monkeypatch.setattr(report_sections, "FIGURE_MODELS", 4)
    models = ["a", "b", "c", "d", "e", "f", "g"]
    worst = pl.DataFrame(
        {
            "study": ["s", "t", "s", "s", "s", "s", "s", "s"],
            "model": ["b", "b", "c", "a", "d", "e", "f", "g"],
            "gap": [0.30, 0.01, 0.25, 0.20, None, 0.05, -0.10, 0.05],
        }
    )
    # largest gaps: b (0.30, its worst study), c; smallest: f (-0.10), then of e and g (0.05,
    # tied) the later in the order of ``worst``, g: the bottom is taken from the end
    assert figure_models(worst, models) == ["b", "c", "f", "g"]
    # a model without a gap only fills the count
    few = worst.filter(pl.col("model").is_in(["a", "b", "d"]))
    monkeypatch.setattr(report_sections, "FIGURE_MODELS", 2)
    assert figure_models(few, ["a", "b", "d"]) == ["a", "b"]
    assert figure_models(few.with_columns(gap=None), ["a", "b", "d"]) == ["a", "b"]
    monkeypatch.setattr(report_sections, "FIGURE_MODELS", 3)
    assert figure_models(few, ["d", "a", "b"]) == ["d", "a", "b"]


def test_a_study_of_more_models_than_figures_draw_keeps_them_in_its_tables(
    tables, meta, monkeypatch
):
    # the tiny study's three models, two drawn: the largest and the smallest worst gap
    calibration = tables["calibration"]
    worst = calibration.group_by("model").agg(pl.col("gap").max()).sort("gap")
    kept = {worst["model"][0], worst["model"][-1]}
    (left,) = set(calibration["model"]) - kept
    monkeypatch.setattr(report_sections, "FIGURE_MODELS", 2)
    html = render_html(tables, meta=meta)
    drawn = 0
    for label, svg in re.findall(r'<svg role="img" aria-label="([^"]+)"(.*?)</svg>', html, re.S):
        if label.startswith(("Degradation", "Reliability", "Confidence", "Risk", "Robustness")):
            assert left not in svg and all(model in svg for model in kept), label
            drawn += 1
    assert drawn == 9  # four kinds for each of two datasets, and the scorecard
    assert html.count("Drawn for 2 of the 3 models") == 9
    # every table keeps the model the figures leave out
    for table in ("relcol-discrimination-1", "relcol-selective-1", "relcol-scorecard"):
        body = html[html.index(f'id="{table}"') :]
        assert left in body[: body.index("</table>")], table


def test_the_summary_names_the_worst_cells_of_the_most_overconfident_models(
    tables, meta, monkeypatch
):
    import relcol.report._summary as summary

    def listed(html: str) -> list[str]:
        block = html[html.index('<ul class="headline">') :]
        return re.findall(r"<li[^>]*>(.*?)</li>", block[: block.index("</ul>")], re.S)

    every = listed(render_html(tables, meta=meta))
    assert len(every) == 3  # the tiny study's models, the most overconfident first
    monkeypatch.setattr(summary, "HEADLINE_MODELS", 2)
    cut = listed(render_html(tables, meta=meta))
    assert cut[:2] == every[:2]
    assert cut[2] == (
        "1 more model, less overconfident at their worst: every one is in "
        "<code>worst_gaps.csv</code>"
    )


def test_verdicts_and_the_trust_section_appear_with_their_data(tables, meta, monkeypatch):
    curves = (
        tables["calibration"]
        .select("study", "dataset", "model", "corruption")
        .unique(maintain_order=True)
    )
    thresholds = curves.with_columns(
        traffic_light=pl.when(pl.col("model") == "naive_bayes")
        .then(pl.lit("red"))
        .otherwise(pl.lit("green")),
        d_star=pl.when(pl.col("model") == "naive_bayes").then(pl.lit(0.25)),
    )
    counts = verdicts(thresholds)
    assert counts.filter(model="naive_bayes").select("red", "green").row(0) == (8, 0)

    module = types.ModuleType("relcol.report._trust_section")
    module.__spec__ = importlib.machinery.ModuleSpec("relcol.report._trust_section", None)

    def trust_section(tables, *, bins):
        n = tables["thresholds"].height
        return f'<section id="trust">\n<h2>Where trust breaks</h2>\n<p>{n} curves</p>\n</section>'

    module.trust_section = trust_section
    monkeypatch.setitem(sys.modules, "relcol.report._trust_section", module)
    changed = {**tables, "thresholds": thresholds}
    changed |= summary_tables(changed)  # the verdicts of these thresholds, as report_tables does
    html = render_html(changed, meta=meta)
    assert _sections(html)[:3] == ["summary", "trust", "degradation"]
    assert "<p>24 curves</p>" in html  # the section the module returned, in its place
    assert "confidently wrong from d* = 0.25" in html
    assert '<span class="light red">red</span> 8' in html


def test_report_reports_progress(tiny_warehouse, tmp_path):
    calls = []
    relcol.report(tiny_warehouse, study="tiny", out=tmp_path, progress=lambda *a: calls.append(a))
    steps = [c[0] for c in calls]
    assert steps == ["tables", "warehouse", *SECTIONS, "figures", "files"]
    assert [c[1] for c in calls] == list(range(1, len(calls) + 1))
    assert {c[2] for c in calls} == {len(calls)}


def test_methods_state_what_reproduces_the_numbers(page):
    _, html = page
    methods = html[html.index('<section id="methods"') :]
    for text in ("Training seeds", "0, 1", "Corruption repeats", "10 equal-width bins",
                 "Equal-mass bins", "Tables with intervals: calibration",
                 'href="calibration.csv"', 'href="reliability.parquet"'):  # fmt: skip
        assert text in methods, text
    with_b = render_html(
        {"calibration": page_tables_cal()}, meta={"bins": 10, "bootstrap": 200, "level": 0.9}
    )
    assert "B = 200 replicates" in with_b and "90% percentile intervals" in with_b


def test_methods_name_the_numeric_environment_a_studys_models_ran_on(tiny_warehouse, tmp_path):
    html = relcol.report(tiny_warehouse, study="tiny", out=tmp_path, bootstrap=0).html
    methods = html.read_text(encoding="utf-8").split('<section id="methods"')[1]
    assert "<h3>Package versions and numeric environment</h3>" in methods
    assert f"<td>machine</td><td>{platform.machine()}</td>" in methods
    assert re.search(r"<td>blas</td><td>[^<]*\d", methods)  # e.g. openblas 0.3.31 Haswell


def page_tables_cal() -> pl.DataFrame:
    return pl.DataFrame(
        {"study": "s", "dataset": "d", "model": "m", "corruption": "c", "severity": [0.0, 0.5],
         "n": 10, "accuracy": [0.9, 0.7], "mean_confidence": [0.9, 0.9], "gap": [0.0, 0.2],
         "ece": [0.05, 0.2]}
    )  # fmt: skip


def test_each_panel_shows_its_own_datasets_auroc(page, tables):
    _, html = page
    for dataset in ("wine", "synthetic"):
        start = html.index(f'aria-label="Confidence distributions for {dataset}"')
        svg = html[start : html.index("</svg>", start)]
        shown = sorted(float(v) for v in re.findall(r"AUROC (\d\.\d\d)", svg))
        cells = with_stage(tables["discrimination"].filter(pl.col("dataset") == dataset))
        # Drawn: the two corruptions (of four) with the largest gap at the worst severity.
        cal = tables["calibration"].filter(pl.col("dataset") == dataset)
        worst = cal.filter(pl.col("severity") == pl.col("severity").max().over("corruption"))
        gaps = {c: worst.filter(corruption=c)["gap"].max() for c in worst["corruption"].unique()}
        drawn = sorted(gaps, key=gaps.get, reverse=True)[:2]
        assert f"({', '.join(drawn)})" in html
        cells = cells.filter(pl.col("corruption").is_in(drawn))
        clean = cells.filter(stage="clean").filter(pl.col("corruption") == cells["corruption"][0])
        panels = pl.concat([clean, cells.filter(stage="worst")])
        expected = sorted(round(v, 2) for v in panels["auroc"].drop_nulls())
        assert shown == expected


def test_the_same_warehouse_gives_the_same_page_end_to_end(tiny_warehouse, tmp_path):
    # The metric tables' sums may differ in their last bits from run to run (rows summed in
    # another order); the page shows nothing at that precision. Without the bootstrap, whose
    # trends can flip on such ties, two reports are byte-identical.
    pages = [
        relcol.report(tiny_warehouse, study="tiny", out=tmp_path / k, bootstrap=0).html
        for k in ("a", "b")
    ]
    assert pages[0].read_bytes() == pages[1].read_bytes()


def test_a_curve_whose_realised_rate_diverges_is_drawn_and_tested_against_it():
    from relcol.analysis import on_realised_axis, realised_rates, realised_trends
    from relcol.report._sections import corruptions_section
    from tests.test_analysis import DIVERGING, DIVERGING_CALIBRATION

    corruptions, calibration = DIVERGING, DIVERGING_CALIBRATION
    fig = degradation_figure(on_realised_axis(calibration, corruptions), realised=["mnar"])
    labels = [ax.get_xlabel() for ax in fig.axes[2:4]]  # bottom row: mnar, mcar
    assert labels == ["realised rate", "severity d"]
    # The mnar column's accuracy line runs through the realised rates, sorted by them.
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [0.0, 0.3, 0.4, 0.5]
    assert list(line.get_ydata()) == [0.9, 0.8, 0.7, 0.6]

    def section(tables):  # the section draws the two tables report_tables computes for it
        rates = realised_rates(tables["corruptions"])
        trends = realised_trends(calibration, tables["corruptions"], ("accuracy", "gap"))
        return corruptions_section(tables | {"realised_rates": rates, "realised_trends": trends})

    html = section({"calibration": calibration, "corruptions": corruptions})
    assert "Trends against the realised rate" in html and "max |realised − d|" in html
    calm = corruptions.filter(pl.col("corruption") == "mcar")
    assert "Trends against the realised rate" not in section(
        {"calibration": calibration, "corruptions": calm}
    )
