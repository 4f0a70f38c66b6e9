"""PS-PPO's survival design problem: hand-computed PAV cases, edge cases, and a generic convex solver."""

import numpy as np
import pytest
from scipy.optimize import minimize

from learners.ps_ppo.survival import pool_adjacent_violators, survival_objective, survival_probabilities


def test_worked_example_without_merging_matches_seed():
    # Seed 001, "A Fully Worked Numeric Example": T = 6, B = 3, scores already non-increasing.
    xi = survival_probabilities([4.0, 3.6, 3.0, 0.4, 0.3, 0.2], 3)
    expected = 3 * np.sqrt([4.0, 3.6, 3.0, 0.4, 0.3, 0.2]) / np.sqrt([4.0, 3.6, 3.0, 0.4, 0.3, 0.2]).sum()
    np.testing.assert_allclose(xi, expected, rtol=1e-12)
    # The seed prints these rounded from rounded square roots.
    np.testing.assert_allclose(xi, [0.826, 0.785, 0.715, 0.260, 0.227, 0.186], atol=2e-3)


def test_worked_pav_merge_matches_seed():
    # Seed 001, "A Worked PAV Example": w = (1, 9, 4, 1); steps 1-2 merge into score √5.
    np.testing.assert_allclose(pool_adjacent_violators([1, 9, 4, 1]), [np.sqrt(5), np.sqrt(5), 2.0, 1.0])
    xi = survival_probabilities([1, 9, 4, 1], 2)
    denominator = 2 * np.sqrt(5) + 2 + 1
    np.testing.assert_allclose(xi, 2 * np.array([np.sqrt(5), np.sqrt(5), 2, 1]) / denominator, rtol=1e-12)
    assert xi.sum() == pytest.approx(2.0)


def test_pav_cascading_merge():
    # (1, 1, 16): 16 beats 1 → merge (1, 17)/2 = 8.5 > 1 → merge all: 18/3 = 6.
    np.testing.assert_allclose(pool_adjacent_violators([1, 1, 16]), np.full(3, np.sqrt(6)))
    # Equal scores are not violations and stay separate.
    np.testing.assert_allclose(pool_adjacent_violators([4, 4, 1]), [2, 2, 1])


def test_saturation_redistributes_remaining_budget():
    # √-allocation would give ξ_1 = 2·10/12 > 1: it saturates and the rest share B − 1 equally.
    np.testing.assert_allclose(survival_probabilities([100, 1, 1], 2), [1.0, 0.5, 0.5])
    # Two saturated steps, then √-allocation of 0.5 between weights 4 and 1 (scores 2 and 1).
    np.testing.assert_allclose(survival_probabilities([900, 400, 4, 1], 2.5), [1, 1, 1 / 3, 1 / 6])


def test_budget_at_least_length_keeps_everything():
    np.testing.assert_array_equal(survival_probabilities([3, 0, 1], 3), np.ones(3))
    np.testing.assert_array_equal(survival_probabilities([3, 0, 1], 7.5), np.ones(3))


def test_zero_weights_stay_positive_and_budget_is_spent():
    xi = survival_probabilities([0, 5, 0, 0], 2, floor=1e-3)
    assert np.all(xi > 0) and xi.sum() == pytest.approx(2)
    np.testing.assert_allclose(xi, [0.999, 0.999, 1e-3, 1e-3])
    # All weights zero: any feasible ξ is optimal; the solver spends the budget evenly.
    np.testing.assert_allclose(survival_probabilities(np.zeros(4), 1), np.full(4, 0.25))
    # Positive steps saturate and cannot spend the budget: the zero tail takes the leftover.
    np.testing.assert_allclose(survival_probabilities([5, 0, 0, 0], 2.5), [1, 0.5, 0.5, 0.5])


def test_first_token_always_convention():
    xi = survival_probabilities([1, 2, 3], 1.5, first_token_always=True)
    assert xi[0] == 1.0
    # PAV on (2, 3) merges them to one block with 0.5 budget → 0.25 each.
    np.testing.assert_allclose(xi, [1.0, 0.25, 0.25])
    with pytest.raises(ValueError, match="budget >= 1"):
        survival_probabilities([1, 2], 0.5, first_token_always=True)


@pytest.mark.parametrize(
    "weights, budget, kwargs, message",
    [
        ([], 1, {}, "non-empty"),
        ([[1, 2]], 1, {}, "1-D"),
        ([1, -1], 1, {}, "non-negative"),
        ([1, np.nan], 1, {}, "finite"),
        ([1, 2], 0, {}, "budget"),
        ([1, 2], float("inf"), {}, "budget"),
        ([1, 2], "3", {}, "budget"),
        ([1, 2], 1, {"floor": 0.0}, "floor"),
        ([1, 2], 1, {"floor": 1.0}, "floor"),
        ([1] * 10, 0.05, {"floor": 0.01}, "below floor"),
    ],
)
def test_bad_input_raises_clear_errors(weights, budget, kwargs, message):
    with pytest.raises(ValueError, match=message):
        survival_probabilities(weights, budget, **kwargs)


def _generic_solution(weights, budget, floor):
    """The same convex program handed to scipy's SLSQP from the uniform feasible point."""
    n = len(weights)
    scale = weights.sum()  # an O(1) objective keeps SLSQP's line search well conditioned
    order = np.eye(n)[:-1] - np.eye(n)[1:]  # ξ_t − ξ_{t+1} ≥ 0
    result = minimize(
        lambda x: np.sum(weights / x) / scale,
        np.full(n, budget / n),
        jac=lambda x: -weights / x**2 / scale,
        bounds=[(floor, 1.0)] * n,
        constraints=[
            {"type": "eq", "fun": lambda x: x.sum() - budget, "jac": lambda x: np.ones(n)},
            {"type": "ineq", "fun": lambda x: order @ x, "jac": lambda x: order},
        ],
        method="SLSQP",
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    return result.x


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_generic_constrained_solver(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    weights = rng.lognormal(0.0, 1.5, size=n)
    if seed % 4 == 0:
        weights = weights[::-1].copy()  # increasing weights force large PAV merges
    if seed % 5 == 0:
        weights[rng.random(n) < 0.3] = 0.0
    budget = float(rng.uniform(0.05, 0.95) * n)
    floor = 1e-3
    xi = survival_probabilities(weights, budget, floor=floor)

    # Feasibility.
    assert xi.sum() == pytest.approx(budget, rel=1e-10)
    assert np.all(np.diff(xi) <= 1e-12) and xi.min() >= floor - 1e-12 and xi.max() <= 1 + 1e-12

    reference = _generic_solution(weights, budget, floor)
    assert reference.sum() == pytest.approx(budget, rel=1e-6)
    assert np.all(np.diff(reference) <= 1e-6) and reference.min() >= floor - 1e-9 and reference.max() <= 1 + 1e-9
    ours, theirs = survival_objective(weights, xi), survival_objective(weights, reference)
    # Ours is the exact optimum: the generic solver never does better (beyond its own tolerance).
    assert ours <= theirs * (1 + 1e-6)
    assert theirs <= ours * (1 + 1e-3)
    if np.all(weights > 0):  # strictly convex: the minimiser is unique
        np.testing.assert_allclose(xi, reference, atol=2e-3)


def test_long_sequence_is_fast_and_exact():
    rng = np.random.default_rng(0)
    weights = rng.lognormal(size=8192) * np.exp(-np.arange(8192) / 1000)
    xi = survival_probabilities(weights, 128)
    assert xi.sum() == pytest.approx(128)
    assert np.all(np.diff(xi) <= 1e-15)
    # KKT: inside each unsaturated, unfloored block, w-weighted stationarity gives ξ ∝ block score.
    scores = pool_adjacent_violators(weights)
    free = (xi < 1) & (xi > 1e-3)
    ratio = xi[free] / scores[free]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)
