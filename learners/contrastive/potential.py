"""The contrastive potential of the shaping post and the per-paragraph shaping term built from it.

Pure numpy; no model, no tokenizer. Notation follows the shaping post (docs/references.md):

    LSE_τ({z_i}_{i=1..N}) = τ · log( (1/N) · Σ_i exp(z_i / τ) )                (→ max as τ→0⁺, → mean as τ→∞)

    Φ_n = LSE_τ({ℓ(a | x, s_1:n) : a ∈ B+}) − LSE_τ({ℓ(a | x, s_1:n) : a ∈ B−})
    Φ̄_n = clip(Φ_n, −5, 5)
    A_n^shape = β · (γ · Φ̄_n − Φ̄_{n−1})            β = 0.1, γ = 0.99, n = 1 … |S|

Reading of the seed (stated because the text leaves room):

- Φ̄_n is the *clipped* potential, nothing more: the seed writes "we clip it to Φ̄_n ∈ [−5, 5]". It is not
  normalised or centred over the group; the group baseline comes from the GRPO advantage it is added to.
- Φ_0 is the potential of the empty prefix s_1:0 = ∅, scored like every other prefix (prompt plus the reasoning
  opening tag, then the answer), so the first paragraph gets β(γΦ̄_1 − Φ̄_0). The seed notes that this baseline
  is shared by all rollouts of a group (same prompt), so it is scored once per group.
- τ is not given in the seed; the default here is τ = 1, where LSE_τ is the log of the mean probability of the
  set — a plain "how likely is a correct (incorrect) answer" reading. τ must be > 0; ``math.inf`` gives the mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DEFAULT_TAU = 1.0
DEFAULT_CLIP = 5.0
DEFAULT_BETA = 0.1
DEFAULT_GAMMA = 0.99


def _check_tau(tau: float) -> float:
    tau = float(tau)
    if math.isnan(tau) or tau <= 0.0:
        raise ValueError(f"tau must be > 0 (math.inf for the mean), got {tau!r}")
    return tau


def lse_tau(values: Sequence[float] | np.ndarray, tau: float = DEFAULT_TAU, axis: int = -1) -> np.ndarray | float:
    """Temperature log-mean-exp ``τ·log(mean(exp(z/τ)))`` along ``axis``, computed stably.

    The maximum is factored out before exponentiating, so neither tiny τ nor large |z| overflows:
    ``LSE_τ(z) = m + τ·log(mean(exp((z − m)/τ)))`` with ``m = max(z)``. ``tau=math.inf`` returns the mean.
    Entries of −inf (impossible answers) are allowed; a set that is all −inf gives −inf. NaN and +inf raise.

    Returns a float for 1-D input, else an array with ``axis`` removed.
    """
    tau = _check_tau(tau)
    z = np.asarray(values, dtype=np.float64)
    if z.ndim == 0:
        raise ValueError("lse_tau needs a set of values (at least 1-D), got a scalar")
    if z.shape[axis] == 0:
        raise ValueError("lse_tau of an empty set is undefined")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise ValueError("lse_tau values must be finite or -inf (no NaN, no +inf)")
    if math.isinf(tau):
        out = z.mean(axis=axis)
    else:
        m = z.max(axis=axis, keepdims=True)
        safe_m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.squeeze(safe_m, axis=axis) + tau * np.log(np.mean(np.exp((z - safe_m) / tau), axis=axis))
    return float(out) if np.ndim(out) == 0 else out


def contrastive_potential(
    positive: np.ndarray,
    negative: np.ndarray,
    *,
    tau: float = DEFAULT_TAU,
    clip: float = DEFAULT_CLIP,
) -> np.ndarray:
    """Clipped potentials Φ̄ at a sequence of prefixes.

    Args:
        positive: log-likelihoods ℓ(a | x, s_1:n), shape (n_prefixes, |B+|).
        negative: the same for B−, shape (n_prefixes, |B−|).
        tau: LSE temperature.
        clip: Φ̄ = clip(Φ, −clip, clip); the seed uses 5.

    Returns:
        Φ̄, shape (n_prefixes,). A prefix where every answer of one side is impossible (−inf) still gets a finite
        value: the difference saturates at ±clip (and −inf − −inf, which carries no contrast, gives 0).
    """
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    if pos.ndim != 2 or neg.ndim != 2 or pos.shape[0] != neg.shape[0]:
        raise ValueError(
            f"positive and negative must be 2-D with the same number of prefixes, got {pos.shape} and {neg.shape}"
        )
    if pos.shape[1] == 0 or neg.shape[1] == 0:
        raise ValueError("both B+ and B- must be non-empty (a homogeneous group has no contrastive potential)")
    if not clip > 0:
        raise ValueError(f"clip must be > 0, got {clip!r}")
    lp = np.atleast_1d(lse_tau(pos, tau, axis=1))
    ln = np.atleast_1d(lse_tau(neg, tau, axis=1))
    with np.errstate(invalid="ignore"):
        phi = lp - ln
    phi = np.where(np.isnan(phi), 0.0, phi)
    return np.clip(phi, -clip, clip)


def shaping_terms(
    clipped_potentials: Sequence[float] | np.ndarray,
    *,
    beta: float = DEFAULT_BETA,
    gamma: float = DEFAULT_GAMMA,
) -> np.ndarray:
    """A_n^shape = β(γΦ̄_n − Φ̄_{n−1}) for n = 1 … N, given Φ̄_0 … Φ̄_N (length N+1); returns length N."""
    phi = np.asarray(clipped_potentials, dtype=np.float64)
    if phi.ndim != 1 or phi.size < 1:
        raise ValueError(f"expected the potentials Φ̄_0 … Φ̄_N as a 1-D array, got shape {phi.shape}")
    if not np.isfinite(phi).all():
        raise ValueError("potentials must be finite (clip them first)")
    return beta * (gamma * phi[1:] - phi[:-1])


def token_shaping(
    terms: Sequence[float] | np.ndarray,
    paragraph_of_token: Sequence[int] | np.ndarray,
) -> np.ndarray:
    """Spread A_n^shape over tokens: every token of paragraph n gets the whole A_n (not divided by its length).

    ``paragraph_of_token[t]`` is the 0-based paragraph index of completion token t, or −1 for a token that
    belongs to no paragraph (it gets 0).
    """
    a = np.asarray(terms, dtype=np.float64)
    idx = np.asarray(paragraph_of_token, dtype=np.int64)
    if idx.size and (idx.max() >= a.size or idx.min() < -1):
        raise ValueError(f"paragraph indices must lie in [-1, {a.size - 1}], got [{idx.min()}, {idx.max()}]")
    out = np.zeros(idx.shape, dtype=np.float64)
    inside = idx >= 0
    out[inside] = a[idx[inside]]
    return out
