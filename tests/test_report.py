"""relcol.report: the HTML report, its files, figures and the terminal summary."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from collections import Counter

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from relcol.errors import ColumnNotFoundError, InputError, ParameterError
from relcol.report import (
    OKABE_ITO,
    degradation_figure,
    model_styles,
    render_html,
    terminal_summary,
    write_report,
)
from relcol.report._tables import calibration_table

MODELS = ("logistic_regression", "lightgbm")
CORRUPTIONS = ("mcar", "label_noise")
DATASETS = ("digits", "breast_cancer")
SEVERITIES = (0.0, 0.25, 0.5)
WORST = ("digits", "lightgbm", "label_noise", 0.5)

META = {
    "study": "default",
    "spec": 'name = "default"\nseverities = [0.0, 0.25, 0.5]\n',
    "run_id": "run-0001",
    "versions": {"relcol": "0.1.0", "polars": "2.1.0"},
    "bins": 10,
    "created": "2025-01-01T00:00:00Z",
}


def _calibration() -> pl.DataFrame:
    """A small grid; the worst cell is known: lightgbm, label_noise, digits, d = 0.5."""
    rows = []
    for dataset in DATASETS:
        for m, model in enumerate(MODELS):
            for c, corruption in enumerate(CORRUPTIONS):
                for severity in SEVERITIES:
                    accuracy = 0.9 - severity * (0.3 + 0.2 * c + 0.1 * m)
                    confidence = 0.92 - 0.05 * severity
                    if (dataset, model, corruption, severity) == WORST:
                        accuracy, confidence = 0.52, 0.93
                    rows.append(
                        {
                            "study": "default",
                            "dataset": dataset,
                            "model": model,
                            "corruption": corruption,
                            "severity": severity,
                            "label": None,
                            "n": 300,
                            "accuracy": accuracy,
                            "mean_confidence": confidence,
                        }
                    )
    return (
        pl.DataFrame(rows, schema_overrides={"label": pl.Int32, "n": pl.UInt32})
        .with_columns(gap=pl.col("mean_confidence") - pl.col("accuracy"))
        .with_columns(
            abs_gap=pl.col("gap").abs(),
            ece=pl.col("gap").abs() + 0.01,
            mce=pl.col("gap").abs() * 2,
        )
    )


CAL = _calibration()


def _corruptions(cal: pl.DataFrame) -> pl.DataFrame:
    cells = cal.select("study", "dataset", "corruption", "severity").unique(maintain_order=True)
    repeats = pl.DataFrame({"repeat": [0, 1]}, schema={"repeat": pl.Int32})
    return cells.join(repeats, how="cross").with_columns(
        operator=pl.col("corruption"),
        # Repeats 0 and 1 realise d·0.75 and d·1.25: the mean is d exactly.
        realised_rate=pl.col("severity") * (0.75 + 0.5 * pl.col("repeat")),
        changed_share=pl.col("severity"),
        params=pl.lit("{}"),
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    index = write_report(
        out, tables={"calibration": CAL, "corruptions": _corruptions(CAL)}, meta=META
    )
    return out, index, index.read_text(encoding="utf-8")


def test_write_report_writes_the_page_and_every_table(report):
    out, index, html = report
    assert index == out / "index.html"
    assert sorted(p.name for p in out.iterdir()) == [
        "calibration.csv",
        "calibration.parquet",
        "corruptions.csv",
        "corruptions.parquet",
        "index.html",
        "tables",
    ]
    # Every table shown: HTML, CSV, Parquet, and LaTeX where great-tables can write it.
    shown = re.findall(r'<div id="(relcol-[\w-]+)"', html)
    exported = sorted(p.name for p in (out / "tables").iterdir())
    for table in shown:
        for suffix in ("html", "csv", "parquet", "tex"):
            assert f"{table}.{suffix}" in exported
    # Tables too long for the page (the trends, a row per curve) are files only.
    linked = re.findall(r'<a href="tables/([\w-]+)\.parquet">', html)
    files = [t for t in linked if t not in shown]
    assert files == [f"relcol-{t}-{i}" for t in ("trends", "calibration") for i in (1, 2)]
    for table in files:
        assert {f"{table}.{s}" for s in ("html", "csv", "parquet")} <= set(exported)
    assert len(exported) == 4 * len(shown) + 3 * len(files)
    links = re.findall(r'<a href="(tables/[^"]+)"', html)
    assert sorted(links) == sorted(f"tables/{name}" for name in exported)


def test_exports_round_trip(report):
    out, _, _ = report
    assert_frame_equal(pl.read_parquet(out / "calibration.parquet"), CAL)
    assert_frame_equal(pl.read_csv(out / "calibration.csv", schema=CAL.schema), CAL)


def test_html_content(report):
    _, _, html = report
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<figure") == len(DATASETS)  # a degradation figure per dataset
    assert "Calibration by cell: digits" in html and "Calibration by cell: breast_cancer" in html
    assert "10 equal-width bins, (m/M, (m+1)/M]" in html  # bins from meta
    for name in (*MODELS, *CORRUPTIONS, *DATASETS):
        assert name in html
    assert "Realised corruption rates" in html
    assert "run-0001" in html and "2025-01-01T00:00:00Z" in html
    assert '<pre class="spec">name = &quot;default&quot;' in html
    sections = re.findall(r'<section id="(\w+)"', html)
    assert sections == ["summary", "degradation", "calibration", "corruptions", "methods"]
    nav = html[html.index("<nav") : html.index("</nav>")]
    assert re.findall(r'href="#(\w+)"', nav) == sections


def test_summary_names_the_worst_cell(report):
    _, _, html = report
    assert (
        "lightgbm under label_noise on digits: at d = 0.5 accuracy 0.52 but mean "
        "confidence 0.93 (gap +0.41)."
    ) in html
    # logistic_regression's worst: label_noise at d = 0.5, accuracy 0.9 - 0.25 = 0.65 and
    # confidence 0.895, equal on both datasets; ties go to the first dataset by name. (The gap,
    # 0.245 in floating point, rounds down.)
    assert (
        "logistic_regression under label_noise on breast_cancer: at d = 0.5 accuracy 0.65 but "
        "mean confidence 0.90 (gap +0.24)."
    ) in html
    # The most overconfident model comes first.
    assert html.index("lightgbm under") < html.index("logistic_regression under")


def test_html_is_self_contained(report):
    _, _, html = report
    assert "http://" not in html
    assert "https://" not in html
    assert "<script" not in html
    assert "<link" not in html
    assert "@import" not in html


def test_html_ids_are_unique_and_resolve(report):
    _, _, html = report
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert [i for i, k in Counter(ids).items() if k > 1] == []
    refs = set(re.findall(r"url\(#([^)]+)\)", html)) | set(re.findall(r'href="#([^"]+)"', html))
    assert refs <= set(ids)


def test_realised_rate_table_shows_means(report):
    _, _, html = report
    rates = html[html.index('id="corruptions"') :]
    # Mean of 0.5·0.75 and 0.5·1.25 is 0.500; 0.25 gives 0.250.
    assert "d = 0.50" in rates
    assert ">0.500<" in rates and ">0.250<" in rates


def test_two_renders_are_byte_identical(report, tmp_path):
    _, index, _ = report
    again = write_report(
        tmp_path, tables={"calibration": CAL, "corruptions": _corruptions(CAL)}, meta=META
    )
    assert again.read_bytes() == index.read_bytes()


def test_plain_table_writes_each_value_as_python_does():
    """The plain page of a long table is built by Polars; each cell must read as Python's
    ``str`` of the value rounded as the page rounds it, escaped, "–" when missing."""
    import datetime as dt
    from html import escape

    from relcol.report._tables import plain_table

    frame = pl.DataFrame(
        {
            "x": [1e20, -0.0, float("inf"), float("nan"), None, 1e-5, 123456.7891, 2.5e15],
            "severity": [0.125, 0.135, 1.0, None, 2.0, 0.005, 1e17, 3.0],
            "f32": pl.Series(
                [0.1234, 1.5, None, float("nan"), 2.0, 3.25, -7.0, 0.0], dtype=pl.Float32
            ),
            "b": [True, False, None, True, False, True, True, False],
            "s": ["a&b", "<i>", '"q"', "it's", None, "", "ü", "–"],
            "i": pl.Series([1, None, -3, 2**40, 0, 5, 6, 7], dtype=pl.Int64),
            "u": pl.Series(range(8), dtype=pl.UInt32),
            "n": [None] * 8,
            "t": [dt.datetime(2026, 11, 28, 12, 0)] * 8,
            "d": [dt.date(2026, 1, 1), None] * 4,
            "nested": [[1.0]] * 8,
        }
    )

    def python(value: object) -> str:
        return "–" if value is None or value != value else escape(str(value))

    shown = frame.drop("nested").select(
        pl.col(c).round(2 if c == "severity" else 3) if frame.schema[c].is_float() else c
        for c in frame.columns
        if c != "nested"
    )
    lines = [
        "<tr>" + "".join(f"<td>{python(v)}</td>" for v in r) + "</tr>" for r in shown.iter_rows()
    ]
    page = plain_table(frame, "A & B")
    assert "<h1>A &amp; B</h1>" in page and "<th>nested</th>" not in page
    assert page.split("<tbody>\n")[1].split("\n</tbody>")[0].split("\n") == lines
    assert plain_table(frame.clear(), "empty").endswith("<tbody>\n\n</tbody>\n</table>")


def test_only_a_table_drawn_on_the_page_is_coloured():
    """great-tables colours cell by cell, each time looking through every row (100 s for a
    table of 20 000 rows); a table longer than INLINE_ROWS is only linked as files, which
    carry no colour, so it is not coloured."""
    from great_tables import GT

    from relcol.report._tables import INLINE_ROWS, data_color

    def styled(rows: int) -> int:
        frame = pl.DataFrame({"a": [0.5] * rows})
        gt = data_color(GT(frame), columns="a", palette=["#FFFFFF", "#000000"], domain=[0, 1])
        return len(gt._styles)

    assert styled(INLINE_ROWS) == INLINE_ROWS
    assert styled(INLINE_ROWS + 1) == 0


def test_extra_columns_render(tmp_path):
    extra = CAL.with_columns(
        brier=pl.col("ece") * 2,
        ece_lo=pl.col("ece") - 0.015,
        ece_hi=pl.col("ece") + 0.015,
        bins=pl.lit(10),
        engine=pl.lit("polars"),
    )
    html = write_report(tmp_path, tables={"calibration": extra}, meta=META).read_text(
        encoding="utf-8"
    )
    # The page links the table's files (every metric of every cell is wider than a page) …
    section = html[html.index('id="calibration"') : html.index('id="methods"')]
    assert 'href="tables/relcol-calibration-1.csv"' in section and "<table" not in section
    plain = (tmp_path / "tables" / "relcol-calibration-1.html").read_text(encoding="utf-8")
    assert "<th>brier</th>" in plain and f"<td>{round(CAL['ece'][0], 3)}</td>" in plain
    # … and the great-tables rendering labels, merges intervals and notes constants.
    table = calibration_table(extra, study="default", bins=10).as_raw_html()
    assert ">Brier<" in table  # a known metric column, with its label
    first = CAL.row(0, named=True)
    assert (
        f"{first['ece']:.3f} [{first['ece'] - 0.015:.3f},\xa0{first['ece'] + 0.015:.3f}]" in table
    )
    assert "bins = 10; engine = polars" in table
    assert_frame_equal(pl.read_parquet(tmp_path / "calibration.parquet"), extra)


def test_single_cell(tmp_path):
    one = CAL.head(1)
    html = write_report(tmp_path, tables={"calibration": one}, meta=META).read_text(
        encoding="utf-8"
    )
    # One severity: nothing varies with d, so no degradation curves.
    assert 'id="degradation"' not in html and "<svg" not in html
    assert "1 cells" not in html and "1 dataset, 1 model, 1 corruption" in html
    assert "never overconfident" not in html  # gap 0.02 > 0
    assert len(terminal_summary(one).splitlines()) == 4


def test_multilabel_rows_render():
    multi = pl.concat([CAL.with_columns(label=pl.lit(k, pl.Int32)) for k in (0, 1)]).filter(
        pl.col("dataset") == "digits"
    )
    html = render_html({"calibration": multi}, meta=META)
    assert "(label 1)" in html or "(label 0)" in html
    text = terminal_summary(multi)
    assert text.splitlines()[1].split()[:4] == ["dataset", "model", "corruption", "label"]


def test_bad_input_is_named():
    with pytest.raises(ColumnNotFoundError, match="'ece'"):
        render_html({"calibration": CAL.drop("ece")}, meta=META)
    with pytest.raises(InputError, match="no rows"):
        render_html({"calibration": CAL.clear()}, meta=META)
    # the same check and message as every other bins parameter (relcol.checks.check_bins)
    with pytest.raises(ParameterError, match=r"^bins must be an int in \[1, 1000\]\. Got 0\.$"):
        render_html({"calibration": CAL}, meta={**META, "bins": 0})
    with pytest.raises(ColumnNotFoundError, match="corruptions: column 'realised_rate'"):
        render_html(
            {"calibration": CAL, "corruptions": _corruptions(CAL).drop("realised_rate")}, meta=META
        )


def test_terminal_summary_values_and_alignment():
    text = terminal_summary(CAL)
    lines = text.splitlines()
    assert lines[1].split() == [
        "dataset", "model", "corruption", "acc", "ECE", "d", "acc", "conf", "gap", "ECE",
    ]  # fmt: skip
    assert len(lines) == 3 + len(DATASETS) * len(MODELS) * len(CORRUPTIONS)
    # Rows follow the study's order (digits first), numbers right-aligned in one column.
    assert lines[3].split() == [
        "digits", "logistic_regression", "mcar",
        "0.900", "0.030", "0.50", "0.750", "0.895", "+0.145", "0.155",
    ]  # fmt: skip
    assert len({len(line) for line in lines[1:]}) == 1
    assert "\x1b" not in text


def test_terminal_summary_of_many_curves_shows_the_largest_worst_gaps_in_study_order(
    monkeypatch,
):
    import relcol.report._terminal as terminal

    monkeypatch.setattr(terminal, "TERMINAL_CURVES", 5)
    models = [f"m{i:02d}" for i in range(12)]
    gaps = [0.05, 0.30, 0.10, None, 0.25, 0.02, 0.40, 0.10, 0.15, 0.01, 0.35, 0.20]
    rows = []
    for model, gap in zip(models, gaps, strict=True):
        rows.append({"model": model, "severity": 0.0, "accuracy": 0.9, "gap": 0.0})
        rows.append({"model": model, "severity": 0.5, "accuracy": 0.6, "gap": gap})
    cal = pl.DataFrame(rows).with_columns(
        study=pl.lit("s"), dataset=pl.lit("d"), corruption=pl.lit("mcar"),
        mean_confidence=pl.col("accuracy") + pl.col("gap").fill_null(0.0),
        ece=pl.col("gap").abs(),
    )  # fmt: skip
    lines = terminal_summary(cal).splitlines()
    shown = [line.split()[1] for line in lines[3:8]]
    # the five largest gaps (0.40, 0.35, 0.30, 0.25, 0.20), in the study's order
    assert shown == ["m01", "m04", "m06", "m10", "m11"]
    assert lines[8] == ""
    assert " ".join(lines[9:]) == (
        "5 of the 12 curves shown: those with the largest gap at their worst severity. Every "
        "curve is in the report's degradation table (degradation.csv)."
    )
    monkeypatch.setattr(terminal, "TERMINAL_CURVES", 12)
    assert len(terminal_summary(cal).splitlines()) == 3 + 12


def test_terminal_summary_widths_follow_names():
    long = CAL.with_columns(model=pl.col("model") + "_with_a_very_long_name")
    short, wide = terminal_summary(CAL), terminal_summary(long)
    assert len(wide.splitlines()[1]) - len(short.splitlines()[1]) == len("_with_a_very_long_name")


def test_figure_layout_and_consistent_colours():
    styles = model_styles(list(MODELS))
    assert [s["color"] for s in styles.values()] == list(OKABE_ITO[:2])
    for dataset in DATASETS:
        fig = degradation_figure(CAL.filter(dataset=dataset), styles=styles)
        axes = fig.get_axes()
        assert len(axes) == 4 * len(CORRUPTIONS)
        assert [ax.get_title() for ax in axes[: len(CORRUPTIONS)]] == list(CORRUPTIONS)
        assert [ax.get_ylabel() for ax in axes[:: len(CORRUPTIONS)]] == [
            "accuracy",
            "mean confidence",
            "ECE",
            "gap Δ = conf. − acc.",
        ]
        assert axes[-1].get_xlabel() == "severity d"
        legend = fig.legends[0]
        assert [t.get_text() for t in legend.get_texts()] == list(MODELS)
        colours = [line.get_color() for line in axes[0].get_lines()]
        assert colours == [styles[m]["color"] for m in MODELS]


def test_importing_report_does_not_import_matplotlib():
    code = "import sys, relcol.report; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_constant_and_missing_metrics_render():
    # A zero-width colour domain and null metrics must not break the table or the figure.
    flat = CAL.head(2).with_columns(
        gap=pl.lit(0.0), abs_gap=pl.lit(0.0), ece=pl.lit(None, pl.Float64)
    )
    html = render_html({"calibration": flat}, meta=META)
    assert "never overconfident" in html
    assert ">–<" in calibration_table(flat, study="default", bins=10).as_raw_html()


def test_several_studies_are_kept_apart():
    digits = CAL.filter(dataset="digits")
    both = pl.concat([digits, digits.with_columns(study=pl.lit("rerun"))])
    html = render_html({"calibration": both}, meta={**META, "study": "default + rerun"})
    assert html.count("<figure") == 2
    assert "lightgbm under label_noise in rerun: at d = 0.5" in html
    # One block per study and dataset, each named; the glance table groups by both.
    assert "<summary>default / digits</summary>" in html
    assert "<summary>rerun / digits</summary>" in html
    assert ">rerun / digits<" in html


HOSTILE = "evil\x1b[31m\x00\x07\x9b\u202e"  # ESC, NUL, BEL, C1 CSI, right-to-left override


def test_control_characters_in_names_are_shown_not_obeyed_in_the_summary_and_page(tmp_path):
    # A warehouse written before names were checked (or by hand) may hold them.
    hostile = CAL.with_columns(model=pl.col("model").replace("lightgbm", HOSTILE))
    summary = terminal_summary(hostile)
    assert "evil␛[31m␀␇\ufffd\ufffd" in summary
    assert not set(summary) & set("\x1b\x00\x07\x9b\u202e")
    lines = summary.splitlines()
    assert len({len(line) for line in lines[1:]}) == 1  # one visible character for one
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        html = write_report(tmp_path, tables={"calibration": hostile}, meta=META).read_bytes()
    assert not [w for w in caught if "Glyph" in str(w.message)]  # figures got symbols too
    assert b"\x00" not in html and b"\x1b" not in html and b"\x07" not in html
    assert "evil␛[31m␀␇".encode() in html
    pages = [p for p in (tmp_path / "tables").iterdir() if p.suffix in (".html", ".tex")]
    assert pages
    assert all(b"\x00" not in p.read_bytes() and b"\x1b" not in p.read_bytes() for p in pages)


def test_the_headline_grid_states_each_curves_break_by_hand():
    from relcol.analysis._headline import break_grid
    from relcol.report._summary import headline_grid

    thresholds = pl.DataFrame(
        {
            "study": "s",
            "dataset": "digits",
            "model": ["lightgbm", "lightgbm", "logistic_regression", "logistic_regression"],
            "corruption": ["mcar", "label_noise", "mcar", "label_noise"],
            "clean_overconfident": [False, False, True, None],
            "break_point": [0.25, None, 0.5, None],
            "d_star": [0.5, None, None, None],
            "traffic_light": ["red", "green", "amber", "amber"],
            "worst_severity": [0.5, 0.5, 0.5, 0.5],
        }
    )
    grid = break_grid(thresholds)
    assert grid.select("model", "corruption", "state").rows() == [
        ("lightgbm", "mcar", "breaks"),
        ("lightgbm", "label_noise", "holds"),
        ("logistic_regression", "mcar", "clean"),
        ("logistic_regression", "label_noise", "holds"),  # a null clean test is no verdict
    ]
    html = headline_grid(grid, CAL.filter(dataset="digits"))
    # Rows and columns in the calibration table's order (the study's), not alphabetical.
    assert html.index(">logistic_regression<") < html.index(">lightgbm<")
    assert html.index(">mcar<") < html.index(">label_noise<")
    cells = re.findall(r'<td class="(\w+) (\w+)" title="([^"]*)">(.*?)</td>', html)
    assert [(c[0], c[1], c[3]) for c in cells] == [
        ("amber", "clean", "clean <small>+0.5</small>"),
        ("amber", "holds", "holds"),
        ("red", "breaks", "0.25 <small>d* 0.5</small>"),
        ("green", "holds", "holds"),
    ]
    assert cells[2][2] == (
        "lightgbm under mcar: trust breaks at d = 0.25; confidently wrong from d* = 0.5; light red"
    )
    assert "<small>d ≤ 0.5</small>" in html


def test_compact_svg_keeps_the_drawing_text_and_references():
    from relcol.report._layout import compact_svg

    svg = (
        '<svg width="100.123456pt" height="50pt" viewBox="0 0 100.123456 50">\n'
        ' <g id="a-figure_1">\n'
        '  <path id="a-m1" d="M 1.23456 2.98765 \nL 3 4" style="fill: #d55e00; stroke: #000"/>\n'
        '  <use xlink:href="#a-m1" x="10.55555" y="3.14159" style="fill: #d55e00; stroke: #000"/>\n'
        '  <text x="1.99999" style="font-size: 9px">ECE 0.12345</text>\n'
        " </g>\n</svg>"
    )
    out = compact_svg(svg)
    assert 'd="M 1.2 2.9 L 3 4"' in out and 'x="10.5" y="3.1"' in out
    assert ">ECE 0.12345<" in out  # text is never rounded
    assert 'id="a-m1"' in out and 'xlink:href="#a-m1"' in out and 'id="a-figure_1"' not in out
    classes = re.findall(r' class="(s[0-9a-f]{8})"', out)
    assert len(classes) == 3 and classes[0] == classes[1] != classes[2]  # one class per style
    assert f".{classes[0]}{{fill: #d55e00; stroke: #000}}" in out and "style=" not in out[5:]
    assert "\n" not in out and len(out) < len(svg)


def test_the_tables_list_datasets_models_and_corruptions_in_the_study_s_order(tiny_warehouse):
    """tests/data/tiny.toml lists wine before synthetic, logistic_regression, lightgbm,
    naive_bayes, and mcar, label_noise, gaussian_noise, structural_bias: none alphabetical.
    The tables are computed in key order; the report reads them in the spec's."""
    import tomllib

    import relcol
    from tests.conftest import TINY

    spec = tomllib.loads(TINY.read_text())
    listed = {key: [entry["name"] for entry in spec[f"{key}s"]] for key in ("dataset", "model")}
    listed["corruption"] = [entry["name"] for entry in spec["corruptions"]]
    assert all(names != sorted(names) for names in listed.values())
    tables = relcol.report_tables(tiny_warehouse, "tiny", bootstrap=0)
    for name in ("calibration", "discrimination", "risk_coverage"):
        table = tables[name]
        for key, names in listed.items():
            seen = table.get_column(key).unique(maintain_order=True).to_list()
            assert seen == names, (name, key)
    lines = terminal_summary(tables["calibration"], summary=tables["degradation"]).splitlines()
    corruptions = [line.split()[2] for line in lines[3 : 3 + len(listed["corruption"])]]
    assert corruptions == listed["corruption"]
    assert lines[3].split()[:2] == ["wine", "logistic_regression"]


def test_bad_tables_write_nothing(tmp_path):
    """Tables the page cannot be made of are one error before any file or folder exists."""
    out = tmp_path / "new" / "report"
    with pytest.raises(InputError, match="calibration: the table has no rows"):
        write_report(out, tables={"calibration": CAL.clear(), "other": CAL}, meta=META)
    assert not (tmp_path / "new").exists()


def test_a_page_that_fails_changes_no_file(tmp_path, monkeypatch):
    """The tables' files are written while the page is made, beside their names: a page that
    fails midway (here its methods section) leaves an earlier report's files as they were
    and no partial file; a new folder is removed again."""
    import relcol.report._html as html_module

    tables = {"calibration": CAL, "corruptions": _corruptions(CAL)}
    write_report(tmp_path, tables=tables, meta=META)
    before = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def broken(*args, **kwargs):
        raise RuntimeError("a section failed")

    monkeypatch.setattr(html_module, "methods_section", broken)
    changed = {
        "calibration": CAL.with_columns(ece=pl.col("ece") / 2),
        "corruptions": tables["corruptions"],
    }
    with pytest.raises(RuntimeError, match="a section failed"):
        write_report(tmp_path, tables=changed, meta=META)
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError, match="a section failed"):
        write_report(fresh, tables=changed, meta=META)
    assert not fresh.exists()
