"""False-alarm rates of the trends and verdicts under simulated nulls, and their power in
degrading worlds (docs/statistics.md; relcol.analysis._nulls).

200 independent curves per world (300 test samples, 3 seeds, 2 repeats, 6 severities),
B = 1000, α = 0.05. Every rate a null should keep at α must be ≤ α + 2 Monte-Carlo standard
errors (0.081). ``python tests/benchmarks/null_rates.py`` prints the full table.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from relcol.analysis import DEGRADING, NULLS, simulate_curves, world_study


@pytest.mark.slow
@pytest.mark.parametrize("world", NULLS, ids=lambda w: w.name)
def test_no_verdict_raises_false_alarms_under_a_null(world):
    result = world_study(world, curves=200, replicates=1000, seed=11)
    print(world.name, {k: round(v, 3) for k, v in result.rates.items()})
    bound = result.bound()
    assert bound == pytest.approx(0.05 + 2 * np.sqrt(0.05 * 0.95 / 200))
    for verdict, rate in result.rates.items():
        assert rate <= bound, (verdict, rate)
    assert result.rates["break_point"] <= result.rates["break_point@0"]  # the margin only helps


@pytest.mark.slow
@pytest.mark.parametrize("world", DEGRADING, ids=lambda w: w.name)
def test_a_real_degradation_is_found(world):
    result = world_study(world, curves=100, replicates=1000, seed=12)
    print(world.name, {k: round(v, 3) for k, v in result.rates.items()})
    assert result.rates["break_point"] >= 0.9 and result.rates["d_star"] >= 0.9
    assert result.rates["trend:gap"] >= 0.9
    # the break point sits where the rise Δ(d) − Δ(0) = 0.4·d first clearly exceeds 0.02
    assert result.thresholds["break_point"].median() <= 0.3


def test_the_simulated_worlds_hold_their_truth():
    """The gap is the world's at every severity; shared uniforms make seeds agree ~90 %."""
    rows = simulate_curves(NULLS[3], curves=6, seed=1)
    gaps = rows.group_by("severity").agg(
        gap=pl.col("confidence").mean() - pl.col("correct").cast(pl.Float64).mean()
    )
    # 6 curves × 300 samples × 3 seeds × 2 repeats per severity: SE of the gap ≈ 0.01
    assert (gaps["gap"] - 0.05).abs().max() < 0.04
    falling = simulate_curves(NULLS[1], curves=2, seed=2)
    confidence = falling.group_by("severity").agg(pl.col("confidence").mean()).sort("severity")
    assert confidence["confidence"].is_sorted(descending=True)  # confidence falls with d
    clean = rows.filter(pl.col("severity") == 0.0)
    copies = clean.group_by("study", "sample_id", "seed").agg(pl.col("confidence").n_unique())
    assert (copies["confidence"] == 1).all()  # clean rows: one prediction, copied per repeat


def test_a_small_world_study_runs_and_reports_rates():
    result = world_study(NULLS[0], curves=3, replicates=50)
    assert {"break_point", "d_star", "clean_overconfident", "trend:gap"} <= set(result.rates)
    assert result.thresholds.height == 3 and 0.5 < result.agreement < 0.8


@pytest.mark.slow
def test_training_intervals_cover_the_recipe_where_seeds_vary():
    """Each seed's model is off by δ ~ N(0, 0.03²): intervals over test samples alone hold
    the trained models' gap, not the recipe's; ``intervals="training"`` covers the recipe."""
    from relcol.analysis._nulls import World, gap_coverage

    world = World("seeds vary", seed_gap=0.03, seeds=5, repeats=1, shared=True, seed_noise=0.15)
    samples = gap_coverage(world, curves=150, replicates=1000, seed=3)
    training = gap_coverage(world, curves=150, replicates=1000, seed=3, intervals="training")
    print({"samples": samples, "training": training})
    assert training >= 0.93 and training > samples
