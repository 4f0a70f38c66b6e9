"""GRPO presets: every preset trains; DAPO's dynamic sampling filters on the verdict; prime-rl's loss is exact.

Expected values are computed by hand in the tests (numbers written out, or a formula written here), never with
the helpers under test.
"""

from __future__ import annotations

import math

import pytest
import torch

from learners.core.trainer import Rollout


def _varied_reward(prompts, completions, **kwargs):
    return [float(len(c[0]["content"]) % 3) for c in completions]


def _first_group_constant_reward(prompts, completions, numbers, **kwargs):
    # group of the first toy puzzle: all 1.0 (homogeneous); other groups: varied
    return [
        1.0 if list(n) == [3, 7, 11] else float(len(c[0]["content"]) % 2)
        for c, n in zip(completions, numbers, strict=True)
    ]


def _without_puzzles(dataset):
    """The dataset with its ``target`` column dropped: the rows carry no puzzle, hence no verifier verdict."""
    return dataset.remove_columns(["target"])


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["grpo", "dr_grpo", "dapo", "prime_rl"])
def test_every_preset_runs_and_updates(preset, make_trainer, cpu_grpo_kwargs, toy_prompt_dataset):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    seen = []

    class Probe(GRPOPresetTrainer):
        def shape_batch(self, batch, rollout):
            seen.append((rollout.rewards.clone(), batch["advantages"].clone()))
            return super().shape_batch(batch, rollout)

    if preset == "prime_rl":
        cpu_grpo_kwargs["num_iterations"] = 2  # π_old exists: the ratio terms run
    # no puzzles, so no verdicts: DAPO's dynamic sampling compares the rewards (the random model answers nothing
    # right, so on the verdicts every group would be dropped and nothing would update)
    dataset = _without_puzzles(toy_prompt_dataset)
    trainer = make_trainer(Probe, grpo_config(preset, **cpu_grpo_kwargs), reward_funcs=_varied_reward, dataset=dataset)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, trainer.model.parameters(), strict=True))
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    if preset == "dapo":
        assert trainer.reward_func_names[-1] == "soft_overlong_punishment_reward"
        assert any("countdown/dynamic_sampling_kept_frac" in e for e in trainer.state.log_history)
    if preset == "prime_rl":
        assert any("prime_rl/is_masked" in e for e in trainer.state.log_history)
        # prime-rl's baseline: A = r - mean of the group of 4, no std scaling (computed here by hand)
        for rewards, advantages in seen:
            groups = rewards.reshape(-1, 4)
            expected = (groups - groups.sum(dim=1, keepdim=True) / 4).reshape(-1)
            torch.testing.assert_close(advantages, expected)


# ------------------------------------------------------------------------------------------------ DPPO mask
def test_dppo_keep_mask_hand_values():
    from learners.grpo import dppo_keep_mask

    nan = float("nan")
    # (π, μ, A, kept?) with d = π - μ; dropped iff (A > 0 and d > 0.2) or (A <= 0 and d < -0.2)
    cases = [
        (0.02, 0.01, 1.0, True),  # ratio 2 (an old ratio test drops it), d = 0.01: kept
        (0.50, 0.25, 1.0, False),  # d = +0.25, A > 0: dropped
        (0.50, 0.25, -1.0, True),  # d = +0.25, A < 0: the low side only looks at d < -0.2: kept
        (0.25, 0.50, -1.0, False),  # d = -0.25, A < 0: dropped
        (0.25, 0.50, 1.0, True),  # d = -0.25, A > 0: kept
        (0.25, 0.50, 0.0, False),  # A = 0 takes the low side: dropped
        (0.59, 0.40, 1.0, True),  # d = 0.19
        (0.61, 0.40, 1.0, False),  # d = 0.21
        (0.90, 0.89, 1.0, True),  # ratio 1.011, d = 0.01
        (0.30, nan, 1.0, True),  # unknown μ: d is NaN, no comparison holds: kept
    ]
    pi = torch.log(torch.tensor([[c[0] for c in cases]]))
    mu = torch.log(torch.tensor([[c[1] for c in cases]]))
    adv = torch.tensor([[c[2] for c in cases]])
    keep = dppo_keep_mask(pi, mu, adv, mask_low=0.2, mask_high=0.2)
    assert keep.dtype == torch.bool
    assert keep[0].tolist() == [c[3] for c in cases]
    # (B,) advantages broadcast over the row; asymmetric thresholds
    keep = dppo_keep_mask(torch.log(torch.tensor([[0.5, 0.1]])), torch.log(torch.tensor([[0.2, 0.45]])),
                          torch.tensor([1.0]), mask_low=0.5, mask_high=0.4)  # fmt: skip
    assert keep.tolist() == [[True, True]]  # d = 0.3 <= 0.4; A > 0 ignores d = -0.35


def _prime_rl_trainer(make_trainer, cpu_grpo_kwargs, **overrides):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    return make_trainer(GRPOPresetTrainer, grpo_config("prime_rl", **{**cpu_grpo_kwargs, **overrides}))


def _loss_gradient(trainer, inputs, pi):
    """d loss / d log π of the trainer's whole seam-2 + TRL loss path, with log π given (a leaf)."""
    leaf = pi.clone().requires_grad_(True)

    def fake_logps(model, input_ids, attention_mask, logits_to_keep, **kwargs):
        return leaf[:, :logits_to_keep], torch.zeros_like(leaf[:, :logits_to_keep]), None

    trainer._get_per_token_logps_and_entropies = fake_logps
    trainer.model.eval()  # TRL's eval normaliser: num_items_in_batch (one process)
    loss = trainer._compute_loss(trainer.model, inputs)
    (grad,) = torch.autograd.grad(loss, leaf)
    return loss, grad


def test_prime_rl_loss_gradient_is_prime_rls(make_trainer, cpu_grpo_kwargs):
    """Gradient of the whole loss w.r.t. log π equals prime-rl's per-token loss gradient, by hand:
    d/dlogπ [(-keep·A·ρ + τ·log²ρ) / N] = (-keep·A·ρ + 2τ·log ρ) / N, τ = 1e-3, N = 5 loss tokens."""
    trainer = _prime_rl_trainer(make_trainer, cpu_grpo_kwargs)
    nan = float("nan")
    pi = torch.log(torch.tensor([[0.02, 0.50, 0.30], [0.25, 0.60, 0.10]]))
    mu = torch.log(torch.tensor([[0.01, 0.25, nan], [0.50, 0.55, 0.20]]))
    inputs = {
        "prompt_ids": torch.tensor([[5], [6]]),
        "prompt_mask": torch.ones(2, 1, dtype=torch.long),
        "completion_ids": torch.tensor([[7, 8, 9], [10, 11, 12]]),
        "completion_mask": torch.ones(2, 3, dtype=torch.long),
        "tool_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "advantages": torch.tensor([1.0, -0.5]),
        "sampling_per_token_logps": mu,
        "num_items_in_batch": torch.tensor(5),
    }
    loss, grad = _loss_gradient(trainer, inputs, pi)
    assert torch.isfinite(loss)
    log2 = math.log(2.0)
    expected = torch.tensor(
        [
            [
                (-1.0 * 2.0 + 2e-3 * log2) / 5,  # ρ = 2, d = 0.01 (A > 0): kept although ρ > 1.2
                (2e-3 * log2) / 5,  # ρ = 2, d = 0.25 > 0.2 (A > 0): dropped, its KL term stays
                (-1.0 * 1.0) / 5,  # μ unknown (NaN): ratio 1, kept, no KL
            ],
            [
                (2e-3 * -log2) / 5,  # ρ = 0.5, d = -0.25 (A < 0): dropped, KL only
                (0.5 * (0.60 / 0.55) + 2e-3 * math.log(0.60 / 0.55)) / 5,  # d = 0.05: kept, -A·ρ = +0.5ρ
                0.0,  # not a loss token
            ],
        ]
    )
    torch.testing.assert_close(grad, expected, atol=1e-6, rtol=1e-5)
    assert inputs["advantages"].shape == (2,)  # the caller's micro-batch is left alone (TRL may reuse it)

    # adv_tau scales only the policy-gradient part
    trainer = _prime_rl_trainer(make_trainer, cpu_grpo_kwargs, adv_tau=0.5)
    _, grad = _loss_gradient(trainer, inputs, pi)
    assert grad[0, 0].item() == pytest.approx((-0.5 * 2.0 + 2e-3 * log2) / 5, rel=1e-5)
    assert grad[0, 1].item() == pytest.approx((2e-3 * log2) / 5, rel=1e-5)


def test_prime_rl_on_policy_is_plain_policy_gradient(make_trainer, cpu_grpo_kwargs):
    """Without μ (one on-policy update, no vLLM) ρ ≡ 1: gradient -adv_tau·A/N on every loss token."""
    trainer = _prime_rl_trainer(make_trainer, cpu_grpo_kwargs, adv_tau=2.0)
    inputs = {
        "prompt_ids": torch.tensor([[5]]),
        "prompt_mask": torch.ones(1, 1, dtype=torch.long),
        "completion_ids": torch.tensor([[7, 8]]),
        "completion_mask": torch.ones(1, 2, dtype=torch.long),
        "advantages": torch.tensor([0.25]),
        "num_items_in_batch": torch.tensor(2),
    }
    _, grad = _loss_gradient(trainer, inputs, torch.log(torch.tensor([[0.3, 0.9]])))
    torch.testing.assert_close(grad, torch.tensor([[-0.25, -0.25]]))  # -2 · 0.25 / 2


def test_zero_advantage_tokens_leave_the_loss_and_its_normaliser(make_trainer, cpu_grpo_kwargs):
    trainer = _prime_rl_trainer(make_trainer, cpu_grpo_kwargs)
    batch = {
        "completion_ids": torch.zeros(4, 3, dtype=torch.long),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 0, 0]]),
        "advantages": torch.tensor([0.5, 0.0, -0.5, 0.0]),
    }
    rollout = Rollout(
        rewards=torch.tensor([1.0, 0.5, 0.0, 0.5]),
        rewards_per_func=torch.tensor([[1.0], [0.5], [0.0], [0.5]]),
        num_generations=2,
        process_slice=slice(0, 4),
        inputs=[{}] * 4,
    )
    out = trainer.shape_batch(batch, rollout)
    trainer.recount_items(out)
    assert trainer.loss_mask(out).tolist() == [[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 0]]
    assert int(out["num_items_in_batch"]) == 6


# ------------------------------------------------------------------------------------------------ DAPO
def test_dynamic_sampling_decides_on_the_verdict_not_the_total_reward(make_trainer, cpu_grpo_kwargs):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    trainer = make_trainer(GRPOPresetTrainer, grpo_config("dapo", **cpu_grpo_kwargs), reward_funcs=_varied_reward)
    assert trainer.reward_func_names[-1] == "soft_overlong_punishment_reward"
    # columns: (verdict, overlong penalty). Group 0: all correct, one overlong -> totals differ, accuracy 1: drop.
    # Group 1: all wrong, equal totals: drop. Group 2: one right, one wrong: keep.
    per_func = torch.tensor([[1.0, 0.0], [1.0, -0.5], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, -1.0]])
    rollout = Rollout(
        rewards=per_func.sum(dim=1),
        rewards_per_func=per_func,
        num_generations=2,
        process_slice=slice(0, 6),
        inputs=[{}] * 6,
    )
    batch = {
        "completion_ids": torch.zeros(6, 2, dtype=torch.long),
        "completion_mask": torch.ones(6, 2, dtype=torch.long),
        "advantages": torch.tensor([0.2, -0.2, 0.0, 0.0, 1.0, -1.0]),
    }
    out = trainer.shape_batch(batch, rollout)
    assert trainer.loss_mask(out).sum(dim=1).tolist() == [0, 0, 0, 0, 2, 2]


@pytest.mark.slow
def test_dynamic_sampling_zeroes_homogeneous_groups(make_trainer, cpu_grpo_kwargs, toy_prompt_dataset):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    seen = []

    class Probe(GRPOPresetTrainer):
        def shape_batch(self, batch, rollout):
            batch = super().shape_batch(batch, rollout)
            seen.append((rollout, self.loss_mask(batch).clone(), batch))  # the base recounts items afterwards
            return batch

    cpu_grpo_kwargs.update(max_steps=4, per_device_train_batch_size=8)
    args = grpo_config("dapo", **cpu_grpo_kwargs)  # the overlong penalty is on: totals vary, verdicts need not
    # rows without puzzles have no verdict: the reward column stands in for it (see learners.core.verdicts)
    trainer = make_trainer(
        Probe, args, reward_funcs=_first_group_constant_reward, dataset=_without_puzzles(toy_prompt_dataset)
    )
    trainer.train()
    found_homogeneous = False
    for rollout, mask, batch in seen:
        verdict = rollout.rewards_per_func[:, 0].reshape(-1, 4)
        homogeneous = (verdict == verdict[:, :1]).all(dim=1)
        rows = homogeneous[rollout.group_index]
        assert mask[rows].sum() == 0  # every group with one verdict is out of the loss
        assert int(batch["num_items_in_batch"]) == int(mask.sum())  # the normaliser counts kept tokens only
        found_homogeneous |= bool(rows.any())
        if (~rows).any():
            assert mask[~rows].sum() > 0
    assert found_homogeneous


def test_overlong_buffer_is_daposs_fraction(make_trainer, cpu_grpo_kwargs):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    args = grpo_config("dapo", **{**cpu_grpo_kwargs, "max_completion_length": 20480})
    trainer = make_trainer(GRPOPresetTrainer, args)
    penalty = trainer.reward_funcs[-1]
    # DAPO: L_max = 20480, L_cache = 4096: no penalty up to 16384 tokens, -1 beyond 20480, linear between
    assert penalty(completion_ids=[[0] * 16384, [0] * 18432, [0] * 20481]) == [0.0, -0.5, -1.0]


# ------------------------------------------------------------------------------------------------ configs
def test_preset_configs_and_errors(tmp_path):
    from learners.grpo import grpo_config

    base = dict(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none")
    dr = grpo_config("dr_grpo", **base)
    assert dr.loss_type == "dr_grpo" and dr.scale_rewards == "none"
    dapo = grpo_config("dapo", **base)
    assert dapo.epsilon_high == 0.28 and dapo.dynamic_sampling and dapo.loss_type == "dapo"
    assert dapo.overlong_buffer_fraction == 0.2
    prime = grpo_config("prime_rl", **base)
    assert (prime.kl_tau, prime.adv_tau, prime.dppo_mask_low, prime.dppo_mask_high) == (1e-3, 1.0, 0.2, 0.2)
    assert prime.scale_rewards == "none" and prime.loss_type == "dapo" and prime.filter_zero_advantages
    assert math.isinf(prime.epsilon) and math.isinf(prime.epsilon_high) and prime.uses_prime_rl_loss
    assert grpo_config("grpo", loss_type="bnpo", **base).loss_type == "bnpo"  # explicit keywords win
    with pytest.raises(ValueError, match="unknown GRPO preset"):
        grpo_config("ppo", **base)
    with pytest.raises(ValueError, match="no clipping"):
        grpo_config("prime_rl", epsilon=0.2, **base)
    with pytest.raises(ValueError, match="loss_type"):
        grpo_config("prime_rl", loss_type="cispo", **base)
    with pytest.raises(ValueError, match="both"):
        grpo_config("grpo", dppo_mask_low=0.2, **base)
    with pytest.raises(ValueError, match="kl_tau"):
        grpo_config("grpo", kl_tau=-1.0, **base)
    with pytest.raises(ValueError, match="adv_tau"):
        grpo_config("grpo", adv_tau=-1.0, **base)


def test_registry_lists_presets_without_importing_trl():
    import subprocess
    import sys

    code = (
        "import sys; from learners.core.registry import LEARNERS, get_learner; "
        "assert {'grpo','dr_grpo','dapo','prime_rl','contrastive','contrastive_grpo'} <= set(LEARNERS); "
        "assert 'trl' not in sys.modules and 'torch' not in sys.modules; "
        "get_learner('nope')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "unknown learner 'nope'" in out.stderr
    assert "AssertionError" not in out.stderr


def test_overlong_weight_leaves_the_callers_config_alone(make_trainer, cpu_grpo_kwargs):
    from learners.grpo import GRPOPresetTrainer, grpo_config

    args = grpo_config("dapo", overlong_penalty_weight=0.5, **cpu_grpo_kwargs)
    for _ in range(2):  # a second trainer from the same config must see the same, unextended weights
        trainer = make_trainer(GRPOPresetTrainer, args, reward_funcs=None)
        assert trainer.reward_weights.tolist() == [1.0, 0.5]
    assert args.reward_weights is None


@pytest.mark.parametrize("learner", ["s_grpo", "t_spmo", "ps_ppo"])
def test_every_learner_takes_the_overlong_penalty(make_trainer, cpu_grpo_kwargs, learner):
    """The overlong penalty is a reward setting of the base config: a learner compared with GRPO under one reward
    (R3) takes it as its last reward function, with the env reward untouched before it."""
    from learners.core.registry import get_learner

    spec = get_learner(learner)
    args = spec.make_config(**{**cpu_grpo_kwargs, "overlong_buffer_fraction": 0.25, "max_completion_length": 16})
    trainer = make_trainer(spec.load()[1], args, reward_funcs=None)
    assert trainer.reward_func_names[-1] == "soft_overlong_punishment_reward" and trainer.uses_env_reward
    assert trainer.reward_funcs[-1](completion_ids=[[0] * 12, [0] * 14, [0] * 16]) == [0.0, -0.5, -1.0]
    assert len(trainer.reward_funcs) == 2 and trainer._overlong_column == 1
