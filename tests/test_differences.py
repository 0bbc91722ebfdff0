"""Model-vs-model differences against reference models: the default baseline, a chosen
list (``compare``), every pair on request; the study spec's ``baseline``; ``--compare``."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from scipy import stats

from relcol.analysis import bootstrap, paired_differences
from relcol.analysis._bootstrap import NO_INTERVAL, model_references
from relcol.errors import ParameterError, SpecError
from relcol.study import parse_study
from tests.conftest import TINY
from tests.test_bootstrap import frame_of, suite
from tests.test_cli import relcol

MODELS = ("c", "a", "b")


@pytest.fixture(scope="module")
def layer():
    rows = frame_of(np.random.default_rng(3), models=MODELS, severities=(0.0, 0.4))
    return bootstrap(rows, replicates=120), suite(rows, 15)


def model_rows(table: pl.DataFrame, metric: str = "gap") -> pl.DataFrame:
    return table.filter(pl.col("contrast") == "model", pl.col("metric") == metric)


def pairs(table: pl.DataFrame) -> set[tuple[str, str]]:
    return set(model_rows(table).select("model", "reference_model").iter_rows())


def test_default_is_one_baseline_the_first_model_alphabetically(layer):
    result, points = layer
    table = paired_differences(result, points)
    assert pairs(table) == {("b", "a"), ("c", "a")}
    assert set(model_rows(table)["reference_rule"]) == {"first model"}
    assert set(table.filter(pl.col("contrast") == "clean")["reference_rule"]) == {"severity 0"}
    # each row: the percentile interval of the replicate differences, on the same weights
    cells = result.cells.with_row_index("i")
    for row in model_rows(table).iter_rows(named=True):

        def index(model: str, severity: float = row["severity"]) -> int:
            found = cells.filter(pl.col("model") == model, pl.col("severity") == severity)
            return found["i"].item()

        diff = result.values["gap"][index(row["model"])] - result.values["gap"][index("a")]
        assert row["difference_lo"] == pytest.approx(np.quantile(diff, 0.025), abs=1e-15)
        assert row["difference_hi"] == pytest.approx(np.quantile(diff, 0.975), abs=1e-15)
    # a named baseline replaces the first model
    named = paired_differences(result, points, baseline="c")
    assert pairs(named) == {("a", "c"), ("b", "c")}
    assert set(model_rows(named)["reference_rule"]) == {"baseline"}


def test_compare_chooses_references_and_all_gives_every_ordered_pair(layer):
    result, points = layer
    chosen = paired_differences(result, points, compare="b,c")
    assert pairs(chosen) == {("a", "b"), ("c", "b"), ("a", "c"), ("b", "c")}
    assert set(model_rows(chosen)["reference_rule"]) == {"compare"}
    every = paired_differences(result, points, compare="all")
    assert pairs(every) == {(m, r) for m in MODELS for r in MODELS if m != r}
    assert model_rows(every).height == 6 * 2  # ordered pairs × severities
    # a pair of two references both ways: mirrored intervals, one p- and q-value
    bc = model_rows(chosen).filter(pl.col("model") == "b", pl.col("reference_model") == "c")
    cb = model_rows(chosen).filter(pl.col("model") == "c", pl.col("reference_model") == "b")
    np.testing.assert_allclose(bc["difference_lo"], -cb["difference_hi"], atol=1e-12)
    assert bc["q_value"].to_list() == cb["q_value"].to_list()
    # the family: each unordered pair once (a−b, a−c, b−c per severity), BH over them
    once = model_rows(chosen).filter(
        (pl.col("model") < pl.col("reference_model")) | (pl.col("model") == "a")
    )
    assert once.height == 3 * 2
    expected = stats.false_discovery_control(once["p_value"].to_numpy(), method="bh")
    assert once["q_value"].to_numpy() == pytest.approx(expected)
    # the rows of "all" against one reference are the default's rows (but for the q-values:
    # BH adjusts within a larger family)
    default = model_rows(paired_differences(result, points)).sort("model", "severity")
    from_all = model_rows(every).filter(pl.col("reference_model") == "a")
    from_all = from_all.sort("model", "severity").drop("reference_rule", "q_value")
    assert default.drop("reference_rule", "q_value").equals(from_all)


def test_unknown_references_are_named():
    with pytest.raises(ParameterError, match="compare names 'x', which is not a model"):
        model_references(["a", "b"], "a,x")
    with pytest.raises(ParameterError, match="'all' or model names"):
        model_references(["a", "b"], "a,,b")
    with pytest.raises(ParameterError, match="baseline names 'z'"):
        model_references(["a", "b"], None, "z")
    assert model_references(["a", "b"], " all ") == (None, "all pairs")


def test_a_study_names_its_baseline():
    text = TINY.read_text()
    assert parse_study('baseline = "naive_bayes"\n' + text).models[2].id == "naive_bayes"
    with pytest.raises(SpecError, match="baseline 'svm' is not a model of the study"):
        parse_study('baseline = "svm"\n' + text)


def differences(cwd) -> pl.DataFrame:
    done = relcol(
        "sql",
        "--format",
        "csv",
        "SELECT DISTINCT reference_model, reference_rule FROM report_differences "
        "WHERE contrast = 'model' ORDER BY ALL",
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return pl.read_csv(io.StringIO(done.stdout))


def test_report_compares_with_the_first_listed_model_or_those_chosen(tmp_path):
    assert relcol("ingest", "--study", str(TINY), "--quiet", cwd=tmp_path).returncode == 0
    done = relcol("report", "--bootstrap", "30", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the spec lists logistic_regression first (alphabetically it would be lightgbm)
    assert differences(tmp_path).rows() == [("logistic_regression", "baseline")]
    done = relcol(
        "report", "--bootstrap", "30", "--compare", "naive_bayes,lightgbm", "-q", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    chosen = [("lightgbm", "compare"), ("naive_bayes", "compare")]
    assert differences(tmp_path).rows() == chosen
    # a model the study does not have: one line, exit 2, the last report's tables kept
    done = relcol("report", "--bootstrap", "30", "--compare", "svm", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "compare names 'svm'" in done.stderr
    assert differences(tmp_path).rows() == chosen
    # checked before any work, also when no interval is asked for
    done = relcol("report", "--bootstrap", "0", "--compare", "svm", cwd=tmp_path)
    assert done.returncode == 2 and "compare names 'svm'" in done.stderr


def test_corruption_errors_are_against_the_same_reference_as_the_differences(tmp_path):
    import relcol

    spec = tmp_path / "named.toml"
    spec.write_text('baseline = "naive_bayes"\n' + TINY.read_text())
    wh = relcol.open_warehouse(tmp_path / "wh")
    relcol.ingest(spec, wh)
    card = relcol.scorecard(wh)
    assert set(card["baseline"]) == {"naive_bayes"}
    tables = relcol.report_tables(wh, "tiny", bootstrap=0)
    assert set(tables["scorecard"]["baseline"]) == {"naive_bayes"}
    errors = tables["corruption_error"].filter(pl.col("ce").is_not_null())
    own = errors.filter(pl.col("model") == "naive_bayes")
    # a model's error over its own error is 1; every other model's is not
    assert not own.is_empty() and own["ce"].to_list() == [1.0] * own.height
    assert (errors.filter(pl.col("model") != "naive_bayes")["ce"] != 1.0).all()
    # without the key: the first model the spec lists, as for the differences
    plain = relcol.open_warehouse(tmp_path / "plain")
    relcol.ingest(TINY, plain)
    assert set(relcol.scorecard(plain)["baseline"]) == {"logistic_regression"}


def test_a_metric_without_an_interval_gets_no_difference_interval_or_test(layer):
    result, points = layer
    table = paired_differences(result, points)
    for metric, rows in table.group_by("metric"):
        (name,) = metric
        filled = rows.select("difference_lo", "difference_hi", "p_value", "q_value").null_count()
        if name in NO_INTERVAL:
            assert filled.row(0) == (rows.height,) * 4, name
        else:
            assert filled.row(0) == (0,) * 4, name
        # the point difference is kept either way: the cell's value minus its reference's
        np.testing.assert_allclose(
            rows["difference"], rows["value"] - rows["reference_value"], equal_nan=True
        )
    assert set(table["metric"]) & set(NO_INTERVAL) and set(table["metric"]) - set(NO_INTERVAL)


def test_the_tests_taken_a_block_of_pairs_at_a_time_are_the_same_bits(layer, monkeypatch):
    import relcol.analysis._bootstrap as layer_module

    result, points = layer
    whole = paired_differences(result, points, compare="all")
    # one pair per block (B = 120 entries), where the default takes every pair in one
    monkeypatch.setattr(layer_module, "ROW_BLOCK_ENTRIES", result.replicates)
    blocked = paired_differences(result, points, compare="all")
    assert blocked.height == whole.height > 12
    assert blocked.equals(whole)
