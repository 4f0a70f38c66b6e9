"""LSE_τ, the contrastive potential and the shaping terms of the shaping post, on hand-made log-likelihoods."""

from __future__ import annotations

import math

import numpy as np
import pytest

from learners.contrastive.potential import contrastive_potential, lse_tau, shaping_terms, token_shaping


def test_lse_tends_to_max_as_tau_goes_to_zero():
    z = np.array([-3.0, -1.0, -7.5, -1.2])
    assert lse_tau(z, 1e-4) == pytest.approx(z.max(), abs=1e-3)
    assert lse_tau(z, 1e-9) == pytest.approx(z.max(), abs=1e-6)
    # the gap to the max shrinks monotonically with τ (it is τ·log of the mean of values ≤ 1)
    gaps = [z.max() - lse_tau(z, tau) for tau in (10.0, 1.0, 0.1, 0.01)]
    assert all(a > b for a, b in zip(gaps[:-1], gaps[1:], strict=True))


def test_lse_tends_to_mean_as_tau_goes_to_infinity():
    z = np.array([-3.0, -1.0, -7.5, -1.2])
    assert lse_tau(z, 1e6) == pytest.approx(z.mean(), abs=1e-4)
    assert lse_tau(z, math.inf) == pytest.approx(z.mean())


def test_lse_matches_the_definition_and_is_stable():
    z = np.array([-2.0, -0.5, -4.0])
    for tau in (0.3, 1.0, 2.5):
        expected = tau * math.log(np.mean(np.exp(z / tau)))
        assert lse_tau(z, tau) == pytest.approx(expected, rel=1e-12)
    # values whose exp would underflow or overflow
    assert lse_tau([-5000.0, -5001.0], 1.0) == pytest.approx(-5000.0 + math.log((1 + math.exp(-1)) / 2))
    assert lse_tau([800.0, 800.0], 0.01) == pytest.approx(800.0)
    # a single value is itself at any temperature; -inf entries are impossible answers
    assert lse_tau([-1.7], 0.2) == pytest.approx(-1.7)
    assert lse_tau([-1.0, -np.inf], 1.0) == pytest.approx(-1.0 + math.log(0.5))
    assert lse_tau([-np.inf, -np.inf], 1.0) == -np.inf


def test_lse_along_an_axis():
    z = np.array([[0.0, -1.0], [-2.0, -2.0]])
    out = lse_tau(z, 1.0, axis=1)
    assert out.shape == (2,)
    assert out[1] == pytest.approx(-2.0)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan")])
def test_lse_rejects_bad_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        lse_tau([1.0, 2.0], tau)


def test_lse_rejects_empty_and_nan():
    with pytest.raises(ValueError, match="empty"):
        lse_tau([], 1.0)
    with pytest.raises(ValueError, match="NaN"):
        lse_tau([1.0, float("nan")], 1.0)
    with pytest.raises(ValueError, match="scalar"):
        lse_tau(1.0, 1.0)


def test_potential_on_hand_made_likelihoods():
    # two prefixes; B+ = 2 answers, B- = 1 answer
    pos = np.array([[-10.0, -12.0], [-2.0, -9.0]])
    neg = np.array([[-8.0], [-6.0]])
    phi = contrastive_potential(pos, neg, tau=1.0)
    expected0 = math.log((math.exp(-10) + math.exp(-12)) / 2) - (-8.0)
    expected1 = math.log((math.exp(-2) + math.exp(-9)) / 2) - (-6.0)
    np.testing.assert_allclose(phi, [expected0, expected1], rtol=1e-12)
    # τ→∞ compares means, τ→0 compares maxima
    np.testing.assert_allclose(contrastive_potential(pos, neg, tau=math.inf), [-3.0, 0.5])
    np.testing.assert_allclose(contrastive_potential(pos, neg, tau=1e-6), [-2.0, 4.0], atol=1e-4)


def test_potential_is_clipped_to_five():
    pos = np.array([[-1.0], [-50.0], [-np.inf]])
    neg = np.array([[-40.0], [-2.0], [-3.0]])
    np.testing.assert_allclose(contrastive_potential(pos, neg), [5.0, -5.0, -5.0])
    np.testing.assert_allclose(contrastive_potential(pos, neg, clip=2.0), [2.0, -2.0, -2.0])
    # both sides impossible: no contrast
    assert contrastive_potential(np.array([[-np.inf]]), np.array([[-np.inf]]))[0] == 0.0


def test_potential_needs_both_sides():
    with pytest.raises(ValueError, match="homogeneous"):
        contrastive_potential(np.zeros((3, 2)), np.zeros((3, 0)))
    with pytest.raises(ValueError, match="same number of prefixes"):
        contrastive_potential(np.zeros((3, 2)), np.zeros((2, 1)))


def test_shaping_terms_follow_the_pbrs_difference():
    phi = np.array([0.5, 1.0, -2.0, 5.0])  # Φ̄_0 … Φ̄_3
    terms = shaping_terms(phi)  # β = 0.1, γ = 0.99
    np.testing.assert_allclose(terms, [0.1 * (0.99 * 1.0 - 0.5), 0.1 * (0.99 * -2.0 - 1.0), 0.1 * (0.99 * 5.0 + 2.0)])
    # a constant potential is mildly penalised for staying put (γ < 1), as the seed intends
    flat = shaping_terms(np.full(4, 3.0))
    np.testing.assert_allclose(flat, 0.1 * (0.99 - 1.0) * 3.0)
    np.testing.assert_allclose(shaping_terms(phi, beta=1.0, gamma=1.0), np.diff(phi))
    with pytest.raises(ValueError, match="finite"):
        shaping_terms([0.0, np.inf])


def test_every_token_of_a_paragraph_gets_the_whole_term():
    terms = np.array([0.2, -0.1])
    owner = np.array([0, 0, 0, 1, 1, -1])
    np.testing.assert_allclose(token_shaping(terms, owner), [0.2, 0.2, 0.2, -0.1, -0.1, 0.0])
    with pytest.raises(ValueError, match="paragraph indices"):
        token_shaping(terms, [0, 2])
