"""``learners.pipeline.evaluation.statistics``: the joint puzzle bootstrap (a draw the seeds share counts once) and
the power of an equivalence rule at a given seed SD, each checked against a computation of its own."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t

from learners.pipeline.evaluation.statistics import (
    equivalence_power,
    mde_at,
    minimum_detectable_effect,
    paired_bootstrap_diff,
)


def test_a_joint_bootstrap_of_identical_seeds_is_the_one_seed_bootstrap_and_wider_than_independent_draws():
    rng = np.random.default_rng(3)
    end = rng.integers(0, 2, size=64).astype(float)
    start = rng.integers(0, 2, size=64).astype(float)
    three = {s: end for s in range(3)}, {s: start for s in range(3)}  # three seeds that are one draw
    _, j_low, j_high, _ = paired_bootstrap_diff(*three, joint=True, resamples=4000)
    _, i_low, i_high, _ = paired_bootstrap_diff(*three, resamples=4000)
    # the one-seed percentile bootstrap, computed here
    d = end - start
    means = d[np.random.default_rng(11).integers(0, 64, size=(4000, 64))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    assert j_low == pytest.approx(low, abs=0.02) and j_high == pytest.approx(high, abs=0.02)
    # independent draws average three copies of the same noise: about 1/sqrt(3) of the width
    assert (i_high - i_low) / (j_high - j_low) == pytest.approx(1 / np.sqrt(3), abs=0.1)


def test_a_joint_bootstrap_refuses_seeds_on_different_puzzle_counts():
    with pytest.raises(ValueError, match="same puzzles"):
        paired_bootstrap_diff({0: np.ones(3), 1: np.ones(4)}, {0: np.zeros(3), 1: np.zeros(4)}, joint=True)


def test_equivalence_power_matches_a_simulation_of_t_intervals():
    rng = np.random.default_rng(0)
    for margin, sd, n in ((0.03, 0.02, 6), (0.03, 0.03, 8), (0.03, 0.012, 3)):
        x = rng.normal(0.0, sd, size=(100_000, n))
        half = t.ppf(0.975, n - 1) * x.std(axis=1, ddof=1) / np.sqrt(n)
        simulated = float((np.abs(x.mean(axis=1)) + half < margin).mean())
        assert equivalence_power(margin, sd, n) == pytest.approx(simulated, abs=0.01)
    assert equivalence_power(0.03, 0.0, 4) == 1.0
    with pytest.raises(ValueError):
        equivalence_power(0.0, 0.01, 4)


def test_the_minimum_detectable_effect_is_t_quantiles_times_the_standard_error():
    gains = [0.0078125, 0.046875, -0.02734375]  # R1's three per-seed gains
    se = np.std(gains, ddof=1) / np.sqrt(3)
    assert minimum_detectable_effect(gains) == pytest.approx((4.302653 + 1.060660) * se, rel=1e-5)
    assert minimum_detectable_effect(gains) == pytest.approx(0.115, abs=0.001)
    assert np.isnan(minimum_detectable_effect([0.1]))


def test_the_planned_mde_matches_r3s_registered_figures():
    # PROTOCOL.md of R3: sigma_d 0.047 needs 13 seeds (MDE 0.040; 12 give 0.042), 0.033 needs 8 (t_7: 2.365, 0.896)
    assert mde_at(0.047, 13) == pytest.approx((2.178813 + 0.872609) * 0.047 / np.sqrt(13), rel=1e-5)
    assert round(mde_at(0.047, 13), 3) == 0.040 and round(mde_at(0.047, 12), 3) == 0.042
    assert mde_at(0.033, 8) <= 0.04 < mde_at(0.033, 7)
    with pytest.raises(ValueError, match="n >= 2"):
        mde_at(0.03, 1)
