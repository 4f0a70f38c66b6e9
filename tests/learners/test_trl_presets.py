"""The TRL-loss presets (GSPO, CISPO, SAPO, LUSPO, VESPO, δ-clipping, top-entropy, off-policy masking, truncated and
masked vLLM importance sampling) and the two advantage estimators (RLOO, REINFORCE++-baseline).

Each loss test differentiates the trainer's whole loss path (seam 2, then TRL's ``_compute_loss``) with respect to
log π given as a leaf, and compares it with the gradient of the paper's per-token objective written out here by hand
(plain ``math`` on the numbers of the test), never with TRL's or the project's helpers. The model is in eval mode, so
TRL's normalisers are those of one micro-batch without gradient accumulation.
"""

from __future__ import annotations

import math

import pytest
import torch

from learners.core.trainer import Rollout

NEW_PRESETS = ("gspo", "cispo", "sapo", "luspo", "vespo", "grpo_delta", "grpo_top_entropy", "grpo_opsm",
               "grpo_tis", "grpo_mis", "rloo", "reinforce_pp")  # fmt: skip


def _trainer(make_trainer, cpu_grpo_kwargs, preset, **overrides):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    return make_trainer(GRPOPresetTrainer, grpo_config(preset, **{**cpu_grpo_kwargs, **overrides}))


def _gradient(trainer, inputs, log_pi, entropies=None):
    """(loss, d loss / d log π) of the trainer's seam 2 + TRL loss, with log π (and the entropies) given."""
    leaf = log_pi.clone().requires_grad_(True)
    ent = torch.zeros_like(log_pi) if entropies is None else entropies

    def fake_logps(model, input_ids, attention_mask, logits_to_keep, **kwargs):
        return leaf[:, :logits_to_keep], ent[:, :logits_to_keep], None

    trainer._get_per_token_logps_and_entropies = fake_logps
    trainer.model.eval()
    loss = trainer._compute_loss(trainer.model, inputs)
    (grad,) = torch.autograd.grad(loss, leaf)
    return loss, grad


def _inputs(advantages, old, mask, **extra):
    rows, width = len(mask), len(mask[0])
    return {
        "prompt_ids": torch.arange(rows).unsqueeze(1) + 5,
        "prompt_mask": torch.ones(rows, 1, dtype=torch.long),
        "completion_ids": torch.arange(rows * width).reshape(rows, width) + 7,
        "completion_mask": torch.ones(rows, width, dtype=torch.long),
        "tool_mask": torch.tensor(mask),
        "advantages": torch.tensor(advantages),
        "old_per_token_logps": torch.tensor(old),
        "num_items_in_batch": torch.tensor(sum(map(sum, mask))),
        **extra,
    }


# Two rows of three tokens; row 1's last token is not a loss token (n = [3, 2], N = 5 loss tokens, B = 2 rows).
MASK = [[1, 1, 1], [1, 1, 0]]
LOG_PI = [[-1.0, -2.0, -0.5], [-1.5, -0.7, -3.0]]


def _old(log_ratios):
    """log π_old = log π - log ρ per token."""
    return [[p - r for p, r in zip(pr, rr, strict=True)] for pr, rr in zip(LOG_PI, log_ratios, strict=True)]


# ------------------------------------------------------------------------------------------- sequence ratio
def test_gspo_sequence_ratio_and_its_clip(make_trainer, cpu_grpo_kwargs):
    """GSPO: s_i = exp(mean over row i's loss tokens of log π/π_old); loss = (1/B) Σ_i -min(s_i A_i, clip(s_i, 1 -
    3e-4, 1 + 4e-4) A_i). d/dlog π_it = -A_i s_i / n_i / B where the unclipped term is the min, else 0."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "gspo")
    ratios = [[1e-4, 2e-4, 3e-4], [-1e-3, -1e-3, 5.0]]  # the masked 5.0 must not enter s_1
    inputs = _inputs([1.0, -0.5], _old(ratios), MASK)
    loss, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    s0, s1 = math.exp(2e-4), math.exp(-1e-3)
    assert 1 - 3e-4 < s0 < 1 + 4e-4 and s1 < 1 - 3e-4  # row 0 inside the clip range, row 1 below it
    expected = [[-1.0 * s0 / 3 / 2] * 3, [0.0, 0.0, 0.0]]  # A_1 < 0 and s_1 < 1 - ε: the clipped term is the min
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)
    clipped_1 = (1 - 3e-4) * -0.5
    assert loss.item() == pytest.approx((-(s0 * 1.0) - clipped_1) / 2, rel=1e-6)


def test_luspo_sums_each_sequence_over_its_tokens(make_trainer, cpu_grpo_kwargs):
    """LUSPO: GSPO's ratio and clip, each sequence's loss times its length: loss = (1/B) Σ_i n_i ℓ_i, so
    d/dlog π_it = -A_i s_i / B (unclipped)."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "luspo")
    ratios = [[1e-4, 2e-4, 3e-4], [1e-4, -1e-4, 9.0]]
    inputs = _inputs([1.0, 2.0], _old(ratios), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    s0, s1 = math.exp(2e-4), math.exp(0.0)
    expected = [[-1.0 * s0 / 2] * 3, [-2.0 * s1 / 2, -2.0 * s1 / 2, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


# ------------------------------------------------------------------------------------------- token weights
def test_cispo_clips_the_detached_weight(make_trainer, cpu_grpo_kwargs):
    """CISPO: ℓ_t = -sg(min(ρ_t, 5))·A·log π_t, normalised by the N = 5 loss tokens: d/dlog π = -min(ρ, 5)·A / N."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "cispo")
    ratios = [[math.log(8.0), math.log(0.5), 0.0], [math.log(1.5), math.log(6.0), 0.0]]
    inputs = _inputs([1.0, -0.5], _old(ratios), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    expected = [[-5.0 * 1.0 / 5, -0.5 * 1.0 / 5, -1.0 * 1.0 / 5], [1.5 * 0.5 / 5, 5.0 * 0.5 / 5, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


def test_sapo_soft_gate(make_trainer, cpu_grpo_kwargs):
    """SAPO: ℓ_t = -(4/τ)·σ(τ(ρ_t - 1))·A with τ = 1.0 for A > 0 and 1.05 otherwise, averaged per sequence then over
    rows: d/dlog π_t = -4 σ(x)(1 - σ(x)) ρ_t A / n_i / B, x = τ(ρ_t - 1)."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "sapo")
    ratios = [[math.log(1.5), 0.0, math.log(0.7)], [math.log(2.0), math.log(0.9), 0.0]]
    inputs = _inputs([1.0, -0.5], _old(ratios), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))

    def g(rho, a, n):
        tau = 1.0 if a > 0 else 1.05
        sig = 1 / (1 + math.exp(-tau * (rho - 1)))
        return -4 * sig * (1 - sig) * rho * a / n / 2

    expected = [[g(1.5, 1.0, 3), g(1.0, 1.0, 3), g(0.7, 1.0, 3)], [g(2.0, -0.5, 2), g(0.9, -0.5, 2), 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


def test_vespo_gamma_weight_of_the_sequence_ratio(make_trainer, cpu_grpo_kwargs):
    """VESPO: ℓ_t = -sg(φ_i)·A_i·log π_t over N = 5 tokens, φ(w) = exp(λ + k log w - λ w), w = exp(Σ_t log ρ_t) over
    the row's loss tokens, (k, λ) = (2, 3) for A >= 0 and (3, 2) for A < 0: d/dlog π_t = -φ_i A_i / N."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "vespo")
    ratios = [[0.1, -0.3, 0.05], [0.2, 0.1, 4.0]]
    inputs = _inputs([1.0, -0.5], _old(ratios), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))

    def phi(log_w, a):
        k, lam = (2.0, 3.0) if a >= 0 else (3.0, 2.0)
        return math.exp(lam + k * log_w - lam * math.exp(log_w))

    phi0, phi1 = phi(0.1 - 0.3 + 0.05, 1.0), phi(0.2 + 0.1, -0.5)
    expected = [[-phi0 * 1.0 / 5] * 3, [phi1 * 0.5 / 5, phi1 * 0.5 / 5, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


# ------------------------------------------------------------------------------------------- GRPO + mechanism
def test_grpo_delta_caps_the_ratio_of_negative_advantages(make_trainer, cpu_grpo_kwargs):
    """INTELLECT-2: ℓ_t = -min(min(ρ, δ) A, clip(ρ, 0.8, 1.2) A), δ = 4. For A < 0 and ρ > δ the capped ratio is a
    constant: no gradient (plain GRPO would push with -ρA = 3). Otherwise -ρA / n_i / B where unclipped."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "grpo_delta")
    ratios = [[0.0, math.log(1.1), math.log(1.5)], [math.log(6.0), math.log(2.0), 0.0]]
    inputs = _inputs([1.0, -0.5], _old(ratios), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    # row 0 (A = 1 > 0): ρ = 1, 1.1 unclipped; ρ = 1.5 > 1.2 takes the clipped constant. Row 1 (A = -0.5): ρ = 6 > δ
    # is capped (0), ρ = 2 keeps -ρA (the min picks the more negative 2·(-0.5) over 1.2·(-0.5)).
    expected = [[-1.0 / 3 / 2, -1.1 / 3 / 2, 0.0], [0.0, 2.0 * 0.5 / 2 / 2, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)

    plain = _trainer(make_trainer, cpu_grpo_kwargs, "grpo")  # the same micro-batch without δ: ρ = 6 does push
    _, grad = _gradient(plain, inputs, torch.tensor(LOG_PI))
    assert grad[1, 0].item() == pytest.approx(6.0 * 0.5 / 2 / 2, rel=1e-5)


def test_grpo_top_entropy_keeps_the_top_fifth_by_entropy(make_trainer, cpu_grpo_kwargs):
    """80/20 rule: only loss tokens whose entropy is in the top 20 % of the batch's loss tokens carry the policy
    gradient; the normaliser is unchanged (n_i per row). Of the 5 loss tokens (entropies 0.1, 2.0, 0.5 | 1.0, 3.0)
    the top fifth is the one with 3.0 (the masked token's 9.0 does not count): on-policy, its gradient is -A/n_1/B."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "grpo_top_entropy")
    inputs = _inputs([1.0, -0.5], _old([[0.0] * 3, [0.0] * 3]), MASK)
    entropies = torch.tensor([[0.1, 2.0, 0.5], [1.0, 3.0, 9.0]])
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI), entropies)
    expected = [[0.0, 0.0, 0.0], [0.0, 0.5 / 2 / 2, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


def test_grpo_opsm_drops_stale_negative_sequences(make_trainer, cpu_grpo_kwargs):
    """Off-policy sequence masking (δ = 0.5): a row with A < 0 whose mean over its loss tokens of log μ - log π
    exceeds δ leaves the loss; μ is the sampling policy (here the old policy). Three rows of two tokens."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "grpo_opsm", epsilon=10.0)  # no PPO clip in the way
    log_pi = [[-1.0, -2.0], [-1.0, -2.0], [-1.0, -2.0]]
    kl = [0.7, 0.7, 0.3]  # mean log μ - log π per row
    old = [[p + k for p in row] for row, k in zip(log_pi, kl, strict=True)]
    inputs = _inputs([1.0, -0.5, -0.5], old, [[1, 1]] * 3)
    _, grad = _gradient(trainer, inputs, torch.tensor(log_pi))
    rho = [math.exp(-k) for k in kl]  # π / μ
    expected = [
        [-1.0 * rho[0] / 2 / 3] * 2,  # A > 0: kept whatever the KL
        [0.0, 0.0],  # A < 0 and KL 0.7 > 0.5: masked
        [0.5 * rho[2] / 2 / 3] * 2,  # A < 0, KL 0.3 <= 0.5: kept
    ]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("preset", ["grpo_tis", "grpo_mis"])
def test_vllm_importance_sampling_presets(preset, make_trainer, cpu_grpo_kwargs):
    """Truncated (min(r, 2)) and masked (r outside [0.5, 2] -> 0) token-level IS weights r = π_old/μ multiply each
    token's loss. TRL computes r at generation (tests/integration/test_vllm.py trains both presets with vLLM); here
    the weights
    are built by hand from the preset's rule and the gradient checked: -w_t A / n_i / B on-policy."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, preset)
    args = trainer.args
    assert args.vllm_importance_sampling_correction and args.vllm_importance_sampling_clip_max == 2.0
    raw = [[3.0, 1.5, 0.4], [0.6, 2.5, 1.0]]
    if preset == "grpo_tis":
        assert args.vllm_importance_sampling_mode == "token_truncate"
        weights = [[min(r, 2.0) for r in row] for row in raw]
    else:
        assert args.vllm_importance_sampling_mode == "token_mask" and args.vllm_importance_sampling_clip_min == 0.5
        weights = [[r if 0.5 <= r <= 2.0 else 0.0 for r in row] for row in raw]
    inputs = _inputs([1.0, -0.5], _old([[0.0] * 3, [0.0] * 3]), MASK, importance_sampling_ratio=torch.tensor(weights))
    trainer.use_vllm = True  # what the loss reads to apply the weights (generation with vLLM is not run here)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    expected = [[-w * 1.0 / 3 / 2 for w in weights[0]], [w * 0.5 / 2 / 2 for w in weights[1][:2]] + [0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-7, rtol=1e-5)


# ------------------------------------------------------------------------------------------- advantages (seam 1)
def _seam1(trainer, rewards, group, mask):
    rows = len(rewards)
    batch = {
        "completion_ids": torch.zeros(rows, len(mask[0]), dtype=torch.long),
        "completion_mask": torch.tensor(mask),
        "advantages": torch.full((rows,), 99.0),  # TRL's, to be replaced
    }
    rollout = Rollout(
        rewards=torch.tensor(rewards),
        rewards_per_func=torch.tensor(rewards).unsqueeze(1),
        num_generations=group,
        process_slice=slice(0, rows),
        inputs=[{}] * rows,
    )
    return trainer.shape_batch(batch, rollout)["advantages"]


def test_rloo_leave_one_out_advantage_and_gradient(make_trainer, cpu_grpo_kwargs):
    """A_i = r_i - mean of the other scorable rewards of the group = G/(G-1)(r_i - mean r) when all are scorable;
    the loss is the sequence-sum REINFORCE with the constant normaliser B·L_max: d/dlog π_t = -A_i / (B L_max)."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "rloo")
    nan = float("nan")
    advantages = _seam1(trainer, [1.0, 0.0, 0.0, 1.0, 0.5, nan, 0.0, 1.0], 4, [[1, 1]] * 8)
    g = 4 / 3
    expected = [g * 0.5, -g * 0.5, -g * 0.5, g * 0.5,  # group 0: mean 0.5
                0.5 - (0.0 + 1.0) / 2, 0.0, 0.0 - (0.5 + 1.0) / 2, 1.0 - (0.5 + 0.0) / 2]  # fmt: skip
    torch.testing.assert_close(advantages, torch.tensor(expected), atol=1e-7, rtol=1e-6)

    inputs = _inputs([2 / 3, -0.75], _old([[0.0] * 3, [0.0] * 3]), MASK)
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    budget = cpu_grpo_kwargs["max_completion_length"]
    expected = [[-(2 / 3) / (2 * budget)] * 3, [0.75 / (2 * budget)] * 2 + [0.0]]
    torch.testing.assert_close(grad, torch.tensor(expected), atol=1e-8, rtol=1e-5)


def test_reinforce_pp_baseline_whitens_over_loss_tokens(make_trainer, cpu_grpo_kwargs):
    """A'_i = r_i - mean(group); A_i = (A'_i - μ) / σ with μ, σ² the mean and variance of A' over every loss token of
    the batch (row i counted n_i times). Groups of 2: r = (1, 0 | 1, 1), n = (3, 1, 2, 2)."""
    trainer = _trainer(make_trainer, cpu_grpo_kwargs, "reinforce_pp")
    mask = [[1, 1, 1], [1, 0, 0], [1, 1, 0], [1, 1, 0]]
    advantages = _seam1(trainer, [1.0, 0.0, 1.0, 1.0], 2, mask)
    centered, counts = [0.5, -0.5, 0.0, 0.0], [3, 1, 2, 2]
    mu = sum(c * n for c, n in zip(centered, counts, strict=True)) / 8  # 0.125
    var = sum(n * (c - mu) ** 2 for c, n in zip(centered, counts, strict=True)) / 8  # 0.109375
    expected = [(c - mu) / math.sqrt(var) for c in centered]
    torch.testing.assert_close(advantages, torch.tensor(expected), atol=1e-6, rtol=1e-6)
    # over the tokens the whitened advantages have mean 0 and variance 1
    assert sum(a * n for a, n in zip(expected, counts, strict=True)) == pytest.approx(0.0, abs=1e-12)

    inputs = _inputs([1.0, -0.5], _old([[0.0] * 3, [0.0] * 3]), MASK)  # token-level loss: -A / N, N = 5
    _, grad = _gradient(trainer, inputs, torch.tensor(LOG_PI))
    torch.testing.assert_close(grad, torch.tensor([[-1.0 / 5] * 3, [0.5 / 5, 0.5 / 5, 0.0]]), atol=1e-7, rtol=1e-5)


# ------------------------------------------------------------------------------------------- registry, runs
def test_every_new_preset_is_a_registered_learner_with_a_description():
    from learners.core.registry import LEARNERS
    from learners.grpo.presets import ADVANTAGE_PRESETS, PRESETS, TRL_LOSS_PRESETS
    from learners.grpo.spec import DESCRIPTIONS

    assert set(NEW_PRESETS) == set(TRL_LOSS_PRESETS) | set(ADVANTAGE_PRESETS)
    assert set(DESCRIPTIONS) == set(PRESETS)  # one learner per preset, the four classic ones included
    for name in NEW_PRESETS:
        assert name in PRESETS and LEARNERS[name].defaults == PRESETS[name] and LEARNERS[name].description


def test_unknown_advantage_estimator_is_refused(tmp_path):
    from learners.grpo import grpo_config

    with pytest.raises(ValueError, match="advantage_estimator must be one of"):
        grpo_config("grpo", advantage_estimator="ppo", output_dir=str(tmp_path), use_cpu=True, bf16=False)


@pytest.mark.slow
def test_every_new_preset_trains_off_policy(make_trainer, cpu_grpo_kwargs):
    """Two steps of each preset with num_iterations=2 (π_old exists, so ratios, clips and masks run), one model
    update at least, finite losses."""
    from learners.grpo import GRPOPresetTrainer, grpo_config

    for preset in NEW_PRESETS:
        kwargs = dict(cpu_grpo_kwargs, num_iterations=2, max_steps=2)
        trainer = make_trainer(GRPOPresetTrainer, grpo_config(preset, **kwargs))
        before = [p.detach().clone() for p in trainer.model.parameters()]
        trainer.train()
        assert trainer.state.global_step == 2, preset
        changed = any(not torch.equal(b, p.detach()) for b, p in zip(before, trainer.model.parameters(), strict=True))
        losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
        assert changed and losses and all(math.isfinite(x) for x in losses), preset
