"""Samplewise consistency (docs/consistency.md): closed forms against brute-force pair enumeration.

``brute_force`` is written from the definitions, not from relcol's code: it loops over
strata, builds each stratum's replicate × sample matrices, and for every pair of replicates
computes every metric directly (scikit-learn's Cohen's κ, scipy's Cramér's V, numpy's
Pearson r), with the edge conventions applied on top. relcol's Polars closed forms and the
SQL views must equal it to 1e-9, on crafted edge cases and on random frames.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy.stats.contingency import association
from sklearn.metrics import cohen_kappa_score

from relcol.errors import ColumnNotFoundError, ParameterError
from relcol.metrics import (
    REGISTRY,
    consistency,
    consistency_counts,
    consistency_pairs,
    consistency_samples,
)
from relcol.metrics._consistency import (
    CONSISTENCY_COLUMNS,
    CONSISTENCY_MEANS,
    COUNT_COLUMNS,
    PAIR_COLUMNS,
    PARTIAL,
    SAMPLE_COLUMNS,
)
from relcol.store import CELL, PREDICTIONS, connect_frame

TOL = 1e-9
KEYS = list(CELL)
AXES = {"repeat": ("seed", "repeat"), "seed": ("repeat", "seed")}
PAIR_METRICS = ("ec_l", "ec_g", "ec_acc", "ec_corr", "pa", "pa_kappa", "pa_v", "kappa_error")


# The reference: every pair, from the definitions ----------------------------------------------


def _mean(values) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def pair_metrics(y_i, y_j, e_i, e_j) -> dict[str, float | None]:
    """Every pairwise metric of two replicates, straight from docs/consistency.md."""
    n = len(y_i)
    both, either = int(np.sum(e_i & e_j)), int(np.sum(e_i | e_j))
    c_obs = float(np.mean(e_i == e_j))
    a_i, a_j = 1 - e_i.mean(), 1 - e_j.mean()
    c_exp = a_i * a_j + (1 - a_i) * (1 - a_j)
    identical = bool(np.all(y_i == y_j))
    constant = len(set(y_i)) == 1 or len(set(y_j)) == 1
    if identical:
        kappa = v = 1.0
    else:
        kappa = float(cohen_kappa_score(y_i, y_j))
        if constant:
            v = None
        else:
            labels_i, labels_j = np.unique(y_i), np.unique(y_j)
            table = np.array(
                [[np.sum((y_i == a) & (y_j == b)) for b in labels_j] for a in labels_i]
            )
            v = float(association(table, method="cramer", correction=False))
    if e_i.std() == 0 or e_j.std() == 0:
        corr = None
    else:
        corr = float(np.corrcoef(e_i.astype(float), e_j.astype(float))[0, 1])
    return {
        "n": n,
        "wrong_i": int(e_i.sum()),
        "wrong_j": int(e_j.sum()),
        "both_wrong": both,
        "agree": int(np.sum(y_i == y_j)),
        "ec_l": 1.0 if either == 0 else both / either,
        "ec_g": both / n,
        "ec_acc": c_obs,
        "ec_corr": corr,
        "pa": float(np.mean(y_i == y_j)),
        "pa_kappa": kappa,
        "pa_v": v,
        "kappa_error": 1.0 if c_obs == 1 else (c_obs - c_exp) / (1 - c_exp),
    }


def brute_force(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """``consistency``, ``consistency_pairs``, ``consistency_samples`` by enumerating pairs."""
    top = frame.group_by(KEYS).agg(top=pl.max_horizontal("y_true", "y_clean", "y_pred").max())
    classes = {tuple(r[:-1]): r[-1] + 1 for r in top.rows()}
    cells, pairs, samples = [], [], []
    for axis, (stratum, replicate) in AXES.items():
        per_sample: dict[tuple, list[dict]] = {}
        per_cell: dict[tuple, list[dict]] = {}
        for key, part in frame.partition_by([*KEYS, stratum], as_dict=True).items():
            cell = key[:-1]
            reps = sorted(part[replicate].unique().to_list())
            tau = len(reps)
            if tau < 2:
                continue
            y = part.pivot(on=replicate, index="sample_id", values="y_pred", on_columns=reps)
            e = part.with_columns(wrong=~pl.col("correct")).pivot(
                on=replicate, index="sample_id", values="wrong", on_columns=reps
            )
            clean = part.group_by("sample_id").agg(pl.col("y_clean").min())
            y = y.drop_nulls().sort("sample_id")  # samples every replicate predicted
            e = e.join(y.select("sample_id"), on="sample_id").sort("sample_id")
            n = y.height
            if n == 0:
                continue
            Y = y.drop("sample_id").to_numpy()
            E = e.drop("sample_id").to_numpy().astype(bool)
            k = E.sum(axis=1)
            K = classes[cell]
            entropies, agreeing = [], []
            for row in Y:
                counts = np.unique(row, return_counts=True)[1]
                share = counts / tau
                h = float(-(share * np.log(share)).sum())
                entropies.append(h / math.log(K) if K >= 2 else 0.0)
                agreeing.append(sum(c * (c - 1) // 2 for c in counts))
            distinct = np.array([len(set(row)) for row in Y])
            both_total = sum(math.comb(int(x), 2) for x in k)
            either_total = sum(math.comb(tau, 2) - math.comb(tau - int(x), 2) for x in k)
            stratum_pairs = []
            for i, j in itertools.combinations(range(tau), 2):
                metrics = pair_metrics(Y[:, i], Y[:, j], E[:, i], E[:, j])
                stratum_pairs.append(metrics)
                pairs.append(
                    dict(zip(KEYS, cell, strict=True))
                    | {
                        "axis": axis,
                        "stratum": key[-1],
                        "replicate_i": reps[i],
                        "replicate_j": reps[j],
                    }
                    | metrics
                )
            per_cell.setdefault(cell, []).append(
                {
                    "tau": tau,
                    "n": n,
                    "accuracy": 1 - k.sum() / (n * tau),
                    "consistently_correct": float(np.mean(k == 0)),
                    "always_wrong": float(np.mean(k == tau)),
                    "flipping": float(np.mean((k > 0) & (k < tau))),
                    "distinct_classes": float(distinct.mean()),
                    "prediction_entropy": float(np.mean(entropies)),
                    "ec_l_pooled": 1.0 if either_total == 0 else both_total / either_total,
                    **{m: _mean(p[m] for p in stratum_pairs) for m in PAIR_METRICS},
                    **{f"{m}_pairs": sum(p[m] is not None for p in stratum_pairs) for m in PARTIAL},
                }
            )
            y_clean = dict(clean.rows())
            for sid, row_k, d, h, a in zip(
                y["sample_id"], k, distinct, entropies, agreeing, strict=True
            ):
                per_sample.setdefault((*cell, sid), []).append(
                    {
                        "y_clean": y_clean[sid],
                        "tau": tau,
                        "accuracy": 1 - row_k / tau,
                        "consistently_correct": float(row_k == 0),
                        "always_wrong": float(row_k == tau),
                        "flipping": float(0 < row_k < tau),
                        "distinct_classes": float(d),
                        "prediction_entropy": h,
                        "ec_g": math.comb(int(row_k), 2) / math.comb(tau, 2),
                        "ec_acc": (math.comb(int(row_k), 2) + math.comb(tau - int(row_k), 2))
                        / math.comb(tau, 2),
                        "pa": a / math.comb(tau, 2),
                    }
                )
        for cell, strata in per_cell.items():
            cells.append(
                dict(zip(KEYS, cell, strict=True))
                | {
                    "axis": axis,
                    "replicates": max(s["tau"] for s in strata),
                    "strata": len(strata),
                    "pairs": sum(math.comb(s["tau"], 2) for s in strata),
                    **{f"{m}_pairs": sum(s[f"{m}_pairs"] for s in strata) for m in PARTIAL},
                    "n": max(s["n"] for s in strata),
                    **{m: _mean(s[m] for s in strata) for m in CONSISTENCY_MEANS if m != "churn"},
                }
            )
            cells[-1]["churn"] = 1 - cells[-1]["pa"]
        for key, strata in per_sample.items():
            samples.append(
                dict(zip(KEYS, key[:-1], strict=True))
                | {
                    "axis": axis,
                    "sample_id": key[-1],
                    "y_clean": strata[0]["y_clean"],
                    "replicates": max(s["tau"] for s in strata),
                    "strata": len(strata),
                    **{m: _mean(s[m] for s in strata) for m in SAMPLE_COLUMNS[5:]},
                }
            )
    return {
        "consistency": _typed(cells, frame, CONSISTENCY_COLUMNS, ["axis"]),
        "pairs": _typed(
            pairs,
            frame,
            [
                c
                for c in PAIR_COLUMNS
                if c not in ("chance_agreement", "phi2", "classes_i", "classes_j")
            ],
            ["axis", "stratum", "replicate_i", "replicate_j"],
        ),
        "samples": _typed(samples, frame, SAMPLE_COLUMNS, ["axis", "sample_id"]),
    }


INTS = {
    "replicates": pl.Int64,
    "strata": pl.Int64,
    "pairs": pl.Int64,
    **{f"{m}_pairs": pl.Int64 for m in PARTIAL},
    "n": pl.Int64,
    "stratum": pl.Int32,
    "replicate_i": pl.Int32,
    "replicate_j": pl.Int32,
    "wrong_i": pl.Int64,
    "wrong_j": pl.Int64,
    "both_wrong": pl.Int64,
    "agree": pl.Int64,
    "sample_id": pl.Int64,
    "y_clean": pl.Int32,
}


def _typed(rows: list[dict], frame: pl.DataFrame, columns, order: list[str]) -> pl.DataFrame:
    schema = {k: frame.schema[k] for k in KEYS} | {"axis": pl.String}
    schema |= {c: INTS.get(c, pl.Float64) for c in columns if c != "axis"}
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return out.select(*KEYS, *columns).sort([*KEYS, *order], nulls_last=True)


# Data -----------------------------------------------------------------------------------------


def long_rows(**columns) -> pl.DataFrame:
    """Prediction rows with the long table's schema; missing columns get harmless defaults."""
    n = len(columns["y_pred"])
    defaults = {
        "study": "s",
        "dataset": "d",
        "model": "m",
        "corruption": "c",
        "severity": 0.0,
        "seed": 0,
        "repeat": 0,
        "sample_id": list(range(n)),
        "label": None,
        "y_true": 0,
        "y_clean": None,
        "confidence": 0.9,
        "proba": None,
        "run_id": "r",
    }
    merged = defaults | columns
    frame = pl.DataFrame(
        {k: v if isinstance(v, list | np.ndarray) else [v] * n for k, v in merged.items()},
        strict=False,
    )
    frame = frame.with_columns(
        y_clean=pl.coalesce(pl.col("y_clean").cast(pl.Int32), pl.col("y_true").cast(pl.Int32)),
        correct=pl.col("y_pred") == pl.col("y_true"),
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in PREDICTIONS.items())


def worked_example() -> pl.DataFrame:
    """10 subjects, two runs (seeds) each 80 % accurate, 6 subjects right in both."""
    y = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    run_1 = [1, 1, 1, 1, 1, 1, 0, 1, 0, 1]  # wrong on 6 and 9
    run_2 = [1, 1, 1, 1, 1, 1, 1, 0, 1, 0]  # wrong on 7 and 8
    return long_rows(
        seed=[0] * 10 + [1] * 10,
        sample_id=list(range(10)) * 2,
        y_true=y * 2,
        y_pred=run_1 + run_2,
    )


def random_rows(seed: int, *, cells: int = 3, n: int = 12) -> pl.DataFrame:
    """Random replicates with every edge a grid can hold: constant and flipping samples, label
    noise (y_true varying by repeat), strata of one replicate, missing rows, null labels."""
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(cells):
        classes = int(rng.integers(2, 5))
        seeds = int(rng.integers(1, 4))
        repeats = int(rng.integers(1, 4))
        y = rng.integers(0, classes, n)
        base = np.where(rng.random(n) < 0.3, rng.integers(0, classes, n), y)
        for s, r in itertools.product(range(seeds), range(repeats)):
            flip = rng.random(n) < rng.choice([0.0, 0.2, 0.6])
            pred = np.where(flip, rng.integers(0, classes, n), base)
            truth = np.where(rng.random(n) < 0.1 * (c == 1), rng.integers(0, classes, n), y)
            keep = rng.random(n) > 0.05 * (c == 2)  # a few samples missing in one cell
            parts.append(
                long_rows(
                    model=f"m{c % 2}",
                    corruption=["mcar", "label_noise", "mcar"][c],
                    severity=[0.0, 0.1, 0.2][c],
                    label=None if c != 2 else 1,
                    seed=[s + 3] * int(keep.sum()),
                    repeat=[r] * int(keep.sum()),
                    sample_id=np.flatnonzero(keep) * 7,
                    y_true=truth[keep],
                    y_clean=y[keep],
                    y_pred=pred[keep],
                )
            )
    return pl.concat(parts)


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    return pl.concat(
        random_rows(seed, cells=3, n=15).with_columns(dataset=pl.lit(f"d{seed}"))
        for seed in range(4)
    )


def assert_close(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert_frame_equal(left, right, check_exact=False, abs_tol=TOL, rel_tol=0)


def sql(frame: pl.DataFrame, relation: str, tmp_path) -> pl.DataFrame:
    con = connect_frame(tmp_path, frame)
    try:
        return con.sql(f"FROM {relation}").pl()
    finally:
        con.close()


# The worked example, exactly ------------------------------------------------------------------


def test_worked_example_80_percent_accurate_60_percent_consistently_correct(tmp_path):
    frame = worked_example()
    for out in (consistency(frame).collect(), sql(frame, "consistency", tmp_path)):
        row = out.row(0, named=True)
        assert out.height == 1 and row["axis"] == "seed" and row["replicates"] == 2
        assert row["accuracy"] == 0.8
        assert row["consistently_correct"] == 0.6
        assert row["always_wrong"] == 0.0 and row["flipping"] == 0.4
        assert row["pa"] == 0.6 and row["churn"] == 0.4  # subjects 6-9 predicted differently
        assert row["ec_l"] == 0.0 and row["ec_l_pooled"] == 0.0 and row["ec_g"] == 0.0
        assert row["ec_acc"] == 0.6
        # the confusion matrices are identical, the errors anti-correlated:
        # φ = (n·|e₁∧e₂| − |e₁||e₂|)/√(|e₁|(n−|e₁|)|e₂|(n−|e₂|)) = (0 − 4)/16
        assert row["ec_corr"] == -0.25
        assert math.isclose(row["kappa_error"], -0.25, abs_tol=1e-15)
        assert math.isclose(row["pa_kappa"], -0.25, abs_tol=1e-15)
        assert row["pa_v"] == 0.25


# Closed forms = brute force, both engines -----------------------------------------------------


def test_polars_equals_brute_force_pair_enumeration(rows):
    expected = brute_force(rows)
    assert expected["consistency"].height > 10
    assert_close(consistency(rows).collect(), expected["consistency"])
    pairs = consistency_pairs(rows).collect()
    assert_close(pairs.select(expected["pairs"].columns), expected["pairs"])
    assert_close(consistency_samples(rows).collect(), expected["samples"])


@pytest.mark.parametrize(
    ("relation", "function"),
    [
        ("consistency", consistency),
        ("consistency_samples", consistency_samples),
        ("consistency_counts", consistency_counts),
        ("consistency_pairs", consistency_pairs),
    ],
)
def test_sql_equals_polars(rows, tmp_path, relation, function):
    polars = function(rows).collect()
    assert polars.height > 0
    assert_close(sql(rows, f"{relation}('predictions')", tmp_path), polars)


def test_views_are_the_macros_over_predictions(rows, tmp_path):
    con = connect_frame(tmp_path, rows)
    try:
        for view in ("consistency", "consistency_samples"):
            assert_close(con.sql(f"FROM {view}").pl(), con.sql(f"FROM {view}('predictions')").pl())
    finally:
        con.close()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_closed_forms_equal_brute_force_on_random_grids(seed):
    frame = random_rows(seed, cells=3, n=int(seed % 9) + 1)
    expected = brute_force(frame)
    assert_close(consistency(frame).collect(), expected["consistency"])
    assert_close(consistency_samples(frame).collect(), expected["samples"])


def test_closed_forms_from_counts_equal_the_means_over_pairs(rows):
    """ec_g, ec_acc and pa come from per-sample counts; the pair table has them per pair."""
    pairs = (
        consistency_pairs(rows)
        .group_by([*KEYS, "axis", "stratum"])
        .agg(pl.col("ec_g", "ec_acc", "pa").mean())
        .group_by([*KEYS, "axis"])
        .agg(pl.col("ec_g", "ec_acc", "pa").mean())
        .sort([*KEYS, "axis"], nulls_last=True)
        .collect()
    )
    closed = consistency(rows).select(*KEYS, "axis", "ec_g", "ec_acc", "pa").collect()
    assert_close(closed, pairs)


def test_cell_values_are_the_means_of_the_per_sample_values(rows):
    """With every stratum on the same samples, a cell is the mean of its samples."""
    complete = rows.filter(pl.col("model") == "m1")  # cells 1: no sample missing
    means = (
        consistency_samples(complete)
        .group_by([*KEYS, "axis"])
        .agg(pl.col("accuracy", "consistently_correct", "flipping", "ec_g", "ec_acc", "pa").mean())
        .sort([*KEYS, "axis"], nulls_last=True)
        .collect()
    )
    cells = consistency(complete).select(means.columns).collect()
    assert_close(cells, means)


def test_draws_numbered_exactly_when_hashes_are_not_trusted(rows, monkeypatch):
    """The hashed draw ids are checked; with no seed left, draws are numbered from the keys."""
    from relcol.metrics import _consistency

    hashed = consistency(rows).collect()
    monkeypatch.setattr(_consistency, "_HASH_SEEDS", ())
    assert_close(consistency(rows).collect(), hashed)


def test_invariant_to_row_order(rows):
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=11)
    assert_close(consistency(shuffled).collect(), consistency(rows).collect())


# Edge conventions -----------------------------------------------------------------------------


def pair_row(y_1, y_2, truth) -> dict:
    frame = long_rows(
        seed=[0] * len(y_1) + [1] * len(y_2),
        sample_id=list(range(len(y_1))) * 2,
        y_true=list(truth) * 2,
        y_pred=list(y_1) + list(y_2),
    )
    return consistency_pairs(frame).collect().row(0, named=True)


def test_both_error_sets_empty_is_perfect_consistency_and_no_correlation():
    row = pair_row([0, 1, 2], [0, 1, 2], [0, 1, 2])
    assert row["ec_l"] == 1.0  # |∅ ∩ ∅| / |∅ ∪ ∅| := 1
    assert row["ec_corr"] is None  # both error vectors constant
    assert row["kappa_error"] == 1.0  # c_obs = 1
    assert row["pa_kappa"] == 1.0 and row["pa_v"] == 1.0


def test_identical_constant_predictions_agree_perfectly():
    row = pair_row([2, 2, 2], [2, 2, 2], [2, 0, 2])
    assert row["pa"] == 1.0 and row["pa_kappa"] == 1.0 and row["pa_v"] == 1.0
    assert row["ec_l"] == 1.0 and row["kappa_error"] == 1.0
    assert row["ec_corr"] == 1.0  # same non-constant error vector


def test_a_constant_prediction_against_a_varying_one():
    row = pair_row([1, 1, 1, 1], [1, 0, 1, 0], [1, 0, 1, 0])
    assert row["pa_v"] is None  # one class predicted: no association to measure
    assert row["pa_kappa"] == 0.0  # p_o = p_e = 1/2
    assert row["ec_corr"] is None  # replicate 2 is always right: constant error vector


def test_different_constant_predictions_disagree_completely():
    row = pair_row([0, 0, 0], [1, 1, 1], [0, 1, 0])
    assert row["pa"] == 0.0 and row["pa_kappa"] == 0.0 and row["pa_v"] is None
    assert row["ec_acc"] == 0.0 and row["ec_l"] == 0.0


def test_all_wrong_both_times_is_consistent_but_uncorrelated():
    row = pair_row([1, 1], [1, 1], [0, 0])
    assert row["ec_l"] == 1.0 and row["ec_g"] == 1.0 and row["ec_corr"] is None
    assert row["kappa_error"] == 1.0


def test_pair_means_carry_the_count_of_pairs_that_define_them(tmp_path):
    # four seeds of one repeat, y = 0 1 0 1; six pairs. Seed 0 is always right (constant
    # error vector: EC_corr undefined with every other seed), seed 3 always predicts 1
    # (constant prediction, different from each other seed's: PA_V undefined in its pairs).
    preds = {0: [0, 1, 0, 1], 1: [1, 1, 0, 1], 2: [1, 0, 0, 1], 3: [1, 1, 1, 1]}
    frame = pl.concat(
        long_rows(seed=[s] * 4, y_true=[0, 1, 0, 1], y_pred=p) for s, p in preds.items()
    )
    # errors: seed 1 = 1000, seed 2 = 1100, seed 3 = 1010; φ(1000, 1100) = φ(1000, 1010) =
    # (4·1 − 1·2)/√(1·3·2·2) = 1/√3, φ(1100, 1010) = (4·1 − 2·2)/(2·2) = 0
    for out in (consistency(frame).collect(), sql(frame, "consistency", tmp_path)):
        row = out.row(0, named=True)
        assert (row["axis"], row["pairs"]) == ("seed", 6)
        assert row["ec_corr_pairs"] == 3 and row["ec_corr"] == pytest.approx(2 / 3 / math.sqrt(3))
        assert row["pa_v_pairs"] == 3  # the pairs of seeds 0, 1, 2
        assert row["pa"] == pytest.approx(15 / 24)  # PA is defined for every pair


def test_repeat_axis_at_severity_zero_is_trivially_perfect():
    """At d = 0 every corruption is the identity: all repeats of a seed are the same rows."""
    y = [0, 1, 2, 1]
    preds = {0: [0, 1, 1, 1], 1: [0, 2, 2, 1]}
    frame = pl.concat(
        long_rows(seed=[s] * 4, repeat=[r] * 4, y_true=y, y_pred=preds[s])
        for s in (0, 1)
        for r in (0, 1, 2)
    )
    out = {r["axis"]: r for r in consistency(frame).collect().iter_rows(named=True)}
    assert out["repeat"]["replicates"] == 3 and out["repeat"]["strata"] == 2
    assert out["repeat"]["pa"] == 1.0 and out["repeat"]["ec_l"] == 1.0
    assert out["seed"]["replicates"] == 2 and out["seed"]["strata"] == 3
    assert out["seed"]["pa"] == 0.5 and out["seed"]["consistently_correct"] == 0.5


def test_samples_not_predicted_by_every_replicate_are_left_out():
    frame = long_rows(
        seed=[0, 0, 0, 1, 1],
        sample_id=[0, 1, 2, 0, 1],
        y_true=[0, 0, 0, 0, 0],
        y_pred=[0, 1, 1, 0, 1],
    )
    row = consistency(frame).collect().row(0, named=True)
    assert row["n"] == 2 and row["pa"] == 1.0 and row["accuracy"] == 0.5
    counts = consistency_counts(frame).collect()
    assert counts["sample_id"].to_list() == [0, 1]


def test_a_single_replicate_gives_no_row():
    frame = long_rows(y_pred=[0, 1], y_true=[0, 0])
    assert consistency(frame).collect().is_empty()
    assert consistency_samples(frame).collect().is_empty()


def test_an_empty_table_gives_empty_frames_in_both_engines(rows, tmp_path):
    empty = rows.clear()
    con = connect_frame(tmp_path, empty)
    try:
        for relation, function in (
            ("consistency", consistency),
            ("consistency_samples", consistency_samples),
            ("consistency_counts", consistency_counts),
            ("consistency_pairs", consistency_pairs),
        ):
            polars = function(empty).collect()
            sql_out = con.sql(f"FROM {relation}('predictions')").pl()
            assert polars.is_empty() and sql_out.is_empty()
            assert polars.schema == function(rows).collect().schema
    finally:
        con.close()


def test_output_columns_and_types(rows, tmp_path):
    out = consistency(rows).collect()
    assert out.columns == [*KEYS, *CONSISTENCY_COLUMNS]
    assert out.schema["replicates"] == pl.Int64 and out.schema["ec_l"] == pl.Float64
    assert consistency_counts(rows).collect().columns == [*KEYS, *COUNT_COLUMNS]
    assert consistency_pairs(rows).collect().columns == [*KEYS, *PAIR_COLUMNS]
    assert sql(rows, "consistency", tmp_path).schema == out.schema


def test_the_entropy_is_normalised_by_the_classes_of_the_cell():
    # K = 4 (class 3 appears as a label); two replicates split 1:1 -> ln 2 / ln 4 = 1/2
    frame = long_rows(seed=[0, 1], sample_id=[0, 0], y_true=[3, 3], y_pred=[0, 1])
    assert consistency_counts(frame).collect()["prediction_entropy"].item() == pytest.approx(0.5)


# Parameters, registry, the warehouse ---------------------------------------------------------


def test_by_and_axes_are_checked():
    frame = worked_example()
    with pytest.raises(ParameterError, match="by may not include 'seed'"):
        consistency(frame, ["model", "seed"])
    with pytest.raises(ParameterError, match="axes must be"):
        consistency(frame, axes=["runs"])
    with pytest.raises(ColumnNotFoundError, match="y_clean"):
        consistency(frame.drop("y_clean"))


def test_one_axis_and_other_keys():
    frame = worked_example()
    assert consistency(frame, "model", axes="repeat").collect().is_empty()
    out = consistency(frame, ["dataset"], axes=["seed"]).collect()
    assert out.columns[:2] == ["dataset", "axis"] and out["consistently_correct"].item() == 0.6


CONSISTENCY_METRICS = [name for name, m in REGISTRY.items() if m.view == "consistency"]


def test_registry_lists_every_consistency_metric():
    assert set(CONSISTENCY_METRICS) == set(CONSISTENCY_MEANS[1:])  # accuracy is a basic
    assert all(REGISTRY[m].keys == ("axis",) for m in CONSISTENCY_METRICS)


@pytest.mark.parametrize("name", CONSISTENCY_METRICS)
def test_registry_metric_polars_equals_sql(rows, tmp_path, name):
    metric = REGISTRY[name]
    polars = metric.compute(rows, CELL).collect()
    assert polars.columns == [*KEYS, "axis", name]
    view = sql(rows, metric.view, tmp_path).select(*KEYS, "axis", metric.column)
    assert_close(polars, view)


def test_the_tiny_study_in_the_warehouse(tiny_warehouse):
    study = "tiny"
    polars = consistency(tiny_warehouse.predictions(study)).collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view = tiny_warehouse.sql("SELECT * FROM consistency WHERE study = ?", [study])
    assert_close(view, polars)
    # 2 seeds x 2 repeats: both axes for every cell
    assert polars.group_by("axis").len().sort("axis")["len"].to_list() == [72, 72]
    clean = polars.filter((pl.col("axis") == "repeat") & (pl.col("severity") == 0))
    assert (clean["pa"] == 1.0).all() and (clean["ec_l"] == 1.0).all()


def test_the_chunked_table_equals_one_pass(rows, monkeypatch):
    from relcol.metrics import chunk_spans
    from relcol.workflows import _studies

    whole = consistency(rows.lazy(), CELL).collect().sort([*CELL, "axis"], nulls_last=True)
    monkeypatch.setattr(_studies, "CONSISTENCY_CHUNK_ROWS", 60)  # a few cells per chunk
    chunks = chunk_spans(_studies.cells_of(rows.lazy())["n"].to_list(), 60)
    assert len(list(chunks)) >= 5
    assert_frame_equal(_studies.consistency_table(rows.lazy()), whole)


def test_a_stopped_table_ends_before_its_next_chunk(rows, monkeypatch):
    import threading

    from relcol.workflows import _studies
    from relcol.workflows._beside import Stopped

    monkeypatch.setattr(_studies, "CONSISTENCY_CHUNK_ROWS", 60)
    stop, planned = threading.Event(), []

    def plans(chunk):
        planned.append(chunk)
        if len(planned) == 2:
            stop.set()  # asked to stop while the second chunk is computed
        return [consistency(chunk, CELL)]

    monkeypatch.setattr(_studies, "_consistency_plans", plans)
    with pytest.raises(Stopped):
        _studies.consistency_table(rows.lazy(), stop=stop)
    assert len(planned) == 2  # of five or more
