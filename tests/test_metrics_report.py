"""The new metric tables in the report: computed by ``report_tables``, exported, and shown in
the discrimination and selective-prediction sections (and the calibration table's new
columns with their labels)."""

from __future__ import annotations

import re

import polars as pl
import pytest

import relcol
from relcol import report_tables
from relcol.metrics import metric_tables
from relcol.report import calibration_table, render_html
from relcol.report._metric_sections import metric_sections
from relcol.store import CELL
from tests.test_metrics import assert_close, long_table

META = {"study": "s", "bins": 15}


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    frame = pl.concat(
        [
            long_table([0.9, 0.6, 0.6, 0.3], [True, True, False, False], model="a"),
            long_table([0.8, 0.7, 0.2], [True, True, True], model="b"),  # all right
            long_table([0.7, 0.6, 0.5], [True, False, False], model="a", severity=0.5),
            long_table([0.9, 0.4, 0.3], [True, False, True], model="b", severity=0.5),
        ]
    )
    lazy = metric_tables(frame, CELL)
    names = ("calibration", "discrimination", "selective")
    return dict(zip(names, pl.collect_all(lazy[n] for n in names), strict=True))


def test_report_tables_hold_every_metric_table_of_the_study(tiny_warehouse):
    tables = report_tables(tiny_warehouse, "tiny", bins=10)
    assert {"calibration", "discrimination", "selective"} <= set(tables)
    calibration = tables["calibration"]
    assert {"ace", "ece_null", "brier", "brier_within", "nll_top"} <= set(calibration.columns)
    assert (calibration["bins"] == 10).all()
    for name in ("discrimination", "selective"):
        assert tables[name].height == calibration.height  # one row per cell
        expected = getattr(relcol.metrics, name)(tiny_warehouse.predictions("tiny"), CELL).collect()
        # the same point estimates, summed in another order; the statistical layer adds
        # interval and spread columns beside them
        assert_close(in_key_order(tables[name]).select(expected.columns), expected)


STORED_BY_THE_REPORT = ("calibration", "calibration_bins", "discrimination", "selective")


def in_key_order(table: pl.DataFrame) -> pl.DataFrame:
    """A report table back in the cells' key order (the report lists them in the study's)."""
    return table.sort([k for k in CELL if k in table.columns], nulls_last=True, maintain_order=True)


def test_the_report_reads_the_stored_rows_or_computes_them(tiny_warehouse, tmp_path):
    import shutil

    from polars.testing import assert_frame_equal

    from relcol.store._warehouse import stored_file
    from relcol.workflows._report_tables import ECE_NULL_DRAWS
    from relcol.workflows._studies import consistency_table

    def tables_of(wh):
        tables = report_tables(wh, "tiny", bootstrap=0)
        tables["calibration"] = tables["calibration"].drop("bins")
        return {name: in_key_order(table) for name, table in tables.items()}

    lazy = metric_tables(tiny_warehouse.predictions("tiny"), CELL, draws=ECE_NULL_DRAWS)
    frames = pl.collect_all(lazy[name] for name in STORED_BY_THE_REPORT)
    computed = dict(zip(STORED_BY_THE_REPORT, frames, strict=True))
    computed["consistency"] = consistency_table(tiny_warehouse.predictions("tiny"))
    assert computed["consistency"].height > 0
    read = tables_of(tiny_warehouse)
    for name, expected in computed.items():
        assert tiny_warehouse.stored(name, "tiny") is not None
        # the views' SQL sums in another order: equal to the last few bits
        assert_frame_equal(read[name], expected, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)
    # a study without them (an older relcol's, a removed file) is computed from its rows
    copy = tmp_path / "warehouse"
    shutil.copytree(tiny_warehouse.root, copy)
    wh = relcol.open_warehouse(copy)
    [run] = wh.study_dir("tiny").glob("run_id=*")
    for name in ("consistency", "selective"):
        (run / stored_file(name)).unlink()
        assert wh.stored(name, "tiny") is None
    again = tables_of(wh)
    for name, expected in computed.items():
        assert_frame_equal(again[name], expected)
    # from the stored rows the curve is computed alone, sorted without the tie-break: the same
    assert_frame_equal(again["risk_coverage"], read["risk_coverage"], check_exact=True)
    with pytest.raises(ValueError, match="not a stored view"):
        wh.stored("selective_curve", "tiny")


def test_the_report_exports_and_shows_the_new_tables(tiny_warehouse, tmp_path):
    result = relcol.report(tiny_warehouse, study="tiny", out=tmp_path / "report")
    for name in ("discrimination", "selective"):
        exported = pl.read_parquet(tmp_path / "report" / f"{name}.parquet")
        assert exported.height > 0 and "score" in exported.columns
    calibration = pl.read_parquet(tmp_path / "report" / "calibration.parquet")
    assert {"ece_pvalue", "classwise_ece", "brier_resolution"} <= set(calibration.columns)
    html = result.html.read_text(encoding="utf-8")
    sections = re.findall(r'<section id="([\w-]+)"', html)
    assert sections.index("calibration") < sections.index("discrimination")
    assert sections.index("discrimination") + 1 == sections.index("selective")


def test_sections_render_labels_targets_and_dashes(tables):
    html = metric_sections(tables, bins=15)
    assert re.findall(r'<section id="([\w-]+)"', html) == ["discrimination", "selective"]
    for label in ("AUROC", "AUPR success", "FPR @ 95 % TPR", "Cohen&#x27;s d", "E-AURC"):
        assert label in html
    assert "risk @ 80% cov." in html and "coverage @ 5% risk" in html  # the targets
    assert "–" in html  # model b is always right: AUROC undefined, shown as a dash
    assert "0.875" in html  # model a's AUROC


def test_sections_are_absent_without_their_tables(tables):
    assert metric_sections({}, bins=15) == ""
    empty = {name: frame.head(0) for name, frame in tables.items()}
    assert metric_sections(empty, bins=15) == ""
    page = render_html({"calibration": tables["calibration"]}, meta=META)
    assert 'id="discrimination"' not in page


def test_the_calibration_table_labels_its_new_columns(tables):
    # the page links "Calibration by cell" as files (wider than any page); the formatted
    # table is relcol.report.calibration_table
    page = calibration_table(tables["calibration"], study="s", bins=15).as_raw_html()
    for label in ("ACE", "RMSCE", "classwise ECE", "ECE₀", "debiased CE", "Brier (top)", "NLL"):
        assert f">{label}<" in page
    assert "Murphy decomposition of Brier (top)" in page and "ECE floor" in page


def test_a_value_without_an_interval_shows_alone_and_a_missing_one_as_a_dash(tables):
    calibration = tables["calibration"].with_columns(
        ece_lo=pl.when(pl.col("model") == "a").then(pl.col("ece") - 0.01),
        ece_hi=pl.when(pl.col("model") == "a").then(pl.col("ece") + 0.01),
    )
    discrimination = tables["discrimination"].with_columns(
        auroc_lo=pl.col("auroc") - 0.1, auroc_hi=pl.col("auroc") + 0.1
    )
    page = render_html({"calibration": calibration, "discrimination": discrimination}, meta=META)
    page += calibration_table(calibration, study="s", bins=15).as_raw_html()
    shown = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    a, b = (calibration.filter(model=m, severity=0.0)["ece"].item() for m in ("a", "b"))
    assert f"{a:.3f} [{a - 0.01:.3f},\xa0{a + 0.01:.3f}]" in shown
    assert f"{b:.3f}" in shown  # no interval: the value alone, not "[–, –]"
    assert "[–" not in page and "–]" not in page
    assert "0.875 [0.775,\xa00.975]" in shown  # model a's AUROC with its interval
    assert "–" in shown  # model b's undefined AUROC (and its missing bounds) as one dash
