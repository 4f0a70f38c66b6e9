r"""The survival design problem of PS-PPO: budgeted, monotone inclusion probabilities.

Seed 001 (PS-PPO, Sections 3.2-3.3, Appendices C and F) truncates each completion at a random cutoff ``H`` and
reweights the kept tokens by ``1/ξ_t`` where ``ξ_t = P(H ≥ t)`` is the survival function of the cutoff. The
cutoff-induced variance (diagonal surrogate, Appendix C) is ``Σ_t w_t (1/ξ_t − 1)``, and the expected number of
backpropagated tokens is ``E[H] = Σ_t ξ_t``. The design problem is therefore

    minimise   Σ_t w_t / ξ_t
    subject to Σ_t ξ_t = B,   1 ≥ ξ_1 ≥ ξ_2 ≥ … ≥ ξ_T ≥ ε > 0.

Solution (exact, O(T log T)):

1. Without the order and box constraints, the Lagrangian stationarity condition ``−w_t/ξ_t² + λ = 0`` gives the
   square-root allocation ``ξ_t ∝ √w_t`` (Neyman allocation).
2. Monotonicity: Pool-Adjacent-Violators on the scores. A block of ``n`` steps with total weight ``W`` has the
   block score ``√(W/n)``; adjacent blocks whose scores increase are merged until the block scores are
   non-increasing. The block partition does not depend on λ (every score scales by the same ``1/√λ``).
3. The box ``[ε, 1]``: for a separable convex objective with chain constraints, the bounded solution is the clip
   of the unbounded one, so ``ξ_t = clip(c·s_t, ε, 1)`` where ``s_t`` is the block score of step ``t``. The
   constant ``c`` is the unique value whose clipped sum equals ``B`` (a non-decreasing piecewise-linear equation,
   solved exactly between its breakpoints). This is the seed's "saturation at 1, redistribute the remaining
   budget" (FAQ on Appendix F's KKT conditions).

Edge cases: ``B ≥ T`` keeps every token (all ones). Zero weights have score 0 and sit at the floor ``ε`` (which
keeps ``ξ > 0``, needed for the ``1/ξ`` reweighting); when even saturating every positive-weight step cannot spend
the budget, the leftover goes to the zero-weight tail, evenly (any split is optimal there, since those steps add
nothing to the objective). ``first_token_always=True`` applies the seed's Section 3.2 convention ``ξ_1 = 1`` (every
completion keeps at least its first token) and solves the rest with budget ``B − 1``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "pool_adjacent_violators",
    "sample_cutoff_weights",
    "survival_floor",
    "survival_objective",
    "survival_probabilities",
]


def pool_adjacent_violators(weights: np.ndarray) -> np.ndarray:
    """Return the non-increasing PAV block score ``√(W_b/n_b)`` of each step's block.

    ``weights`` is a 1-D array of non-negative design weights. Adjacent blocks are merged while a later block's
    score exceeds an earlier one's; the result is the per-step score of the final block partition.
    """
    w = np.asarray(weights, dtype=np.float64)
    # Stack of blocks: total weight, length. Scores are compared through W/n (√ is monotone).
    block_weight: list[float] = []
    block_length: list[int] = []
    for value in w:
        block_weight.append(float(value))
        block_length.append(1)
        while len(block_weight) > 1 and (block_weight[-2] * block_length[-1] < block_weight[-1] * block_length[-2]):
            weight, length = block_weight.pop(), block_length.pop()
            block_weight[-1] += weight
            block_length[-1] += length
    means = np.asarray(block_weight) / np.asarray(block_length)
    return np.repeat(np.sqrt(means), block_length)


def _scale_to_budget(scores: np.ndarray, budget: float, floor: float) -> np.ndarray:
    """Solve ``Σ_t clip(c·s_t, floor, 1) = budget`` for ``c`` and return the clipped vector.

    ``scores`` is non-increasing and non-negative; ``floor·T ≤ budget ≤ T`` is guaranteed by the caller.
    """
    n = scores.size
    positive = scores[scores > 0]
    n_pos, n_zero = positive.size, n - positive.size
    if n_pos == 0 or n_pos + floor * n_zero <= budget:
        # Saturating every positive-score step does not spend the budget: the zero-weight tail takes the rest.
        out = np.ones(n)
        if n_zero:
            out[n_pos:] = (budget - n_pos) / n_zero
        return out

    # f(c) = n_sat(c) + c·S_mid(c) + floor·n_floor(c), non-decreasing and piecewise linear in c.
    # Breakpoints: c = floor/s (a step leaves the floor) and c = 1/s (a step saturates).
    breakpoints = np.unique(np.concatenate([floor / positive, 1.0 / positive]))
    prefix = np.concatenate([[0.0], np.cumsum(positive)])
    ascending = positive[::-1]

    def pieces(c: np.ndarray):
        # Steps with c·s ≥ 1 saturate (a prefix, as scores are non-increasing); c·s ≤ floor sit at the floor.
        n_sat = n_pos - np.searchsorted(ascending, 1.0 / c, side="left")
        n_low = np.searchsorted(ascending, floor / c, side="right")
        mid_sum = prefix[n_pos - n_low] - prefix[n_sat]
        return n_sat, n_low + n_zero, mid_sum

    n_sat, n_floor, mid_sum = pieces(breakpoints)
    values = n_sat + breakpoints * mid_sum + floor * n_floor
    j = int(np.searchsorted(values, budget, side="left"))
    if j >= values.size:  # only through rounding: the budget equals f at the last breakpoint
        c = breakpoints[-1]
    elif values[j] == budget:
        c = breakpoints[j]
    else:
        # budget lies strictly between values[j-1] and values[j]; f is linear on that interval.
        lo = breakpoints[j - 1] if j > 0 else 0.0
        hi = breakpoints[j] if j < breakpoints.size else 2.0 * breakpoints[-1]
        n_sat, n_floor, mid_sum = pieces(np.asarray([0.5 * (lo + hi)]))
        c = (budget - n_sat[0] - floor * n_floor[0]) / mid_sum[0]
    return np.clip(c * scores, floor, 1.0)


def survival_probabilities(
    weights,
    budget: float,
    *,
    floor: float = 1e-3,
    first_token_always: bool = False,
) -> np.ndarray:
    """Optimal survival probabilities ``ξ_1 ≥ … ≥ ξ_T`` for design weights ``w`` and budget ``B = E[H]``.

    Args:
        weights: 1-D array-like of non-negative finite design weights ``w_t`` (length ``T ≥ 1``).
        budget: expected number of kept tokens ``B = Σ_t ξ_t`` (> 0). ``B ≥ T`` returns all ones.
        floor: lower bound ``ε`` on every ``ξ_t`` (0 < ε < 1); keeps zero-weight steps reachable.
        first_token_always: fix ``ξ_1 = 1`` (PS-PPO paper, Section 3.2) and spend ``B − 1`` on the rest.

    Returns:
        float64 array of shape ``(T,)``, non-increasing, in ``[floor, 1]``, summing to ``min(B, T)``.

    Raises:
        ValueError: on a non-1-D, empty, negative or non-finite weight vector, a non-positive or non-finite
            budget, a floor outside (0, 1), or a budget too small to give every step at least the floor.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"weights must be a non-empty 1-D array, got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    if not (isinstance(budget, (int, float, np.floating, np.integer)) and math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be a finite positive number, got {budget!r}")
    if not (0.0 < floor < 1.0):
        raise ValueError(f"floor must lie in (0, 1), got {floor!r}")

    n = w.size
    if budget >= n:
        return np.ones(n)
    if first_token_always:
        if budget < 1:
            raise ValueError(f"first_token_always needs budget >= 1, got {budget}")
        if n == 1:
            return np.ones(1)
        rest = survival_probabilities(w[1:], budget - 1.0, floor=floor)
        return np.concatenate([[1.0], rest])
    if budget < floor * n:
        raise ValueError(f"budget {budget} is below floor * T = {floor * n}: lower the floor or raise the budget")
    return _scale_to_budget(pool_adjacent_violators(w), float(budget), floor)


def survival_floor(budget: float, length: int, min_survival: float, first_token_always: bool) -> float:
    """The floor ε a group of longest completion ``length`` is solved with: ``min_survival``, lowered to half the
    mean survival of the steps the budget is spread over (``B/(2T)``, or ``(B−1)/(2(T−1))`` with ξ_1 = 1) so that
    ``ε·T ≤ B`` stays feasible for very long completions."""
    spread, steps = (budget - 1, length - 1) if first_token_always else (budget, length)
    return min(min_survival, 0.5 * spread / max(steps, 1))


def survival_objective(weights, xi) -> float:
    """The design objective ``Σ_t w_t / ξ_t`` (the variance surrogate up to the constant ``−Σ_t w_t``)."""
    w = np.asarray(weights, dtype=np.float64)
    x = np.asarray(xi, dtype=np.float64)
    return float(np.sum(w / x))


def sample_cutoff_weights(
    survival: torch.Tensor, lengths: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Draw ``H_i`` from each row's survival function and return the (B,T) weights ``1[t ≤ H_i]/ξ_t``.

    ``survival`` is (B,T), non-increasing over each row's first ``lengths[i]`` columns; columns at or after
    ``lengths[i]`` get weight 0. ``P(H ≥ t) = P(U ≤ ξ_t) = ξ_t`` with one uniform ``U`` per row.
    """
    import torch

    rows, width = survival.shape
    u = torch.rand(rows, 1, generator=generator).to(survival.device)
    valid = torch.arange(width, device=survival.device).unsqueeze(0) < lengths.to(survival.device).unsqueeze(1)
    keep = (survival >= u) & valid
    return torch.where(keep, 1.0 / survival.clamp(min=1e-30), torch.zeros_like(survival))
