"""GRPO presets: every preset trains, dynamic sampling drops homogeneous groups, the prime-rl terms are exact."""

from __future__ import annotations

import pytest
import torch


def _varied_reward(prompts, completions, **kwargs):
    return [float(len(c[0]["content"]) % 3) for c in completions]


def _first_group_constant_reward(prompts, completions, numbers, **kwargs):
    # group of the first toy puzzle: all 1.0 (homogeneous); other groups: varied
    return [
        1.0 if list(n) == [3, 7, 11] else float(len(c[0]["content"]) % 2)
        for c, n in zip(completions, numbers, strict=True)
    ]


def _build(preset, model_dir, dataset, kwargs, reward_funcs=_varied_reward):
    from transformers import AutoModelForCausalLM

    from learners.grpo import GRPOLearner, grpo_config
    from learners.pipeline.tiny import load_tokenizer

    return GRPOLearner(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=reward_funcs,
        args=grpo_config(preset, **kwargs),
        train_dataset=dataset,
        processing_class=load_tokenizer(model_dir),
    )


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["grpo", "dr_grpo", "dapo", "prime_rl"])
def test_every_preset_runs_and_updates(preset, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    if preset == "prime_rl":
        cpu_grpo_kwargs["num_iterations"] = 2  # π_old exists: the ratio terms run
    trainer = _build(preset, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, trainer.model.parameters(), strict=True))
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    names = trainer.reward_func_names
    if preset == "dapo":
        assert names[-1] == "soft_overlong_punishment_reward"
        assert any("countdown/dynamic_sampling_kept_frac" in e for e in trainer.state.log_history)
    if preset == "prime_rl":
        assert any("countdown/dppo_masked_frac" in e for e in trainer.state.log_history)


@pytest.mark.slow
def test_dynamic_sampling_zeroes_homogeneous_groups(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.grpo import GRPOLearner

    seen = []

    class Probe(GRPOLearner):
        def shape_batch(self, batch, rollout):
            batch = super().shape_batch(batch, rollout)
            seen.append((rollout, self.loss_mask(batch).clone(), batch))  # the base recounts items afterwards
            return batch

    from transformers import AutoModelForCausalLM

    from learners.grpo import grpo_config
    from learners.pipeline.tiny import load_tokenizer

    cpu_grpo_kwargs.update(max_steps=4, per_device_train_batch_size=8)
    trainer = Probe(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        reward_funcs=_first_group_constant_reward,
        args=grpo_config("dapo", overlong_buffer_fraction=0.0, **cpu_grpo_kwargs),
        train_dataset=toy_prompt_dataset,
        processing_class=load_tokenizer(tiny_model_dir),
    )
    trainer.train()
    found_homogeneous = False
    for rollout, mask, batch in seen:
        items = batch["num_items_in_batch"]
        homogeneous = rollout.homogeneous_groups()
        rows = homogeneous[rollout.group_index]
        assert mask[rows].sum() == 0  # every homogeneous group is out of the loss
        assert int(items) == int(mask.sum())  # the normaliser counts kept tokens only
        found_homogeneous |= bool(rows.any())
        if (~rows).any():
            assert mask[~rows].sum() > 0
    assert found_homogeneous


def test_dppo_mask_bounds():
    from learners.grpo import dppo_keep_mask

    ratio = torch.tensor([[0.79, 0.8, 1.0, 1.2, 1.21, float("nan")]])
    keep = dppo_keep_mask(torch.log(ratio), 0.2, 0.2)
    assert keep.tolist() == [[False, True, True, True, False, False]]


def test_kl_adjusted_advantage_has_the_gradient_of_the_squared_log_ratio_penalty():
    from learners.grpo import kl_adjusted_advantages

    torch.manual_seed(0)
    logp = torch.randn(3, 5, requires_grad=True)
    mu = torch.randn(3, 5) * 0.1 + logp.detach()
    adv = torch.tensor([1.0, -0.5, 0.0])
    tau = 0.3
    ratio = torch.exp(logp - mu)
    target = (ratio * adv[:, None] - tau * (logp - mu) ** 2).sum()
    (grad_target,) = torch.autograd.grad(target, logp)
    adjusted = kl_adjusted_advantages(adv, logp - mu, tau)
    surrogate = (torch.exp(logp - mu) * adjusted).sum()
    (grad_surrogate,) = torch.autograd.grad(surrogate, logp)
    assert torch.allclose(grad_target, grad_surrogate, atol=1e-6)
    assert torch.equal(kl_adjusted_advantages(adv, torch.zeros(3, 5), tau), adv[:, None].expand(3, 5))


def test_preset_configs_and_errors(tmp_path):
    from learners.grpo import grpo_config

    base = dict(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none")
    dr = grpo_config("dr_grpo", **base)
    assert dr.loss_type == "dr_grpo" and dr.scale_rewards == "none"
    dapo = grpo_config("dapo", **base)
    assert dapo.epsilon_high == 0.28 and dapo.dynamic_sampling and dapo.loss_type == "dapo"
    prime = grpo_config("prime_rl", **base)
    assert prime.kl_tau == 1e-3 and prime.dppo_mask_low == prime.dppo_mask_high == 0.2 and prime.uses_ratio_terms
    assert grpo_config("grpo", loss_type="bnpo", **base).loss_type == "bnpo"  # explicit keywords win
    with pytest.raises(ValueError, match="unknown GRPO preset"):
        grpo_config("ppo", **base)
    with pytest.raises(ValueError, match="epsilon"):
        grpo_config("prime_rl", epsilon=0.1, **base)
    with pytest.raises(ValueError, match="both"):
        grpo_config("grpo", dppo_mask_low=0.2, **base)
    with pytest.raises(ValueError, match="kl_tau"):
        grpo_config("grpo", kl_tau=-1.0, **base)


def test_registry_lists_presets_without_importing_trl():
    import subprocess
    import sys

    code = (
        "import sys; from learners.core.registry import LEARNERS, get_learner; "
        "assert {'grpo','dr_grpo','dapo','prime_rl'} <= set(LEARNERS); "
        "assert 'trl' not in sys.modules and 'torch' not in sys.modules; "
        "get_learner('nope')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "unknown learner 'nope'" in out.stderr
    assert "AssertionError" not in out.stderr


def test_overlong_weight_leaves_the_callers_config_alone(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from transformers import AutoModelForCausalLM

    from learners.grpo import GRPOLearner, grpo_config
    from learners.pipeline.tiny import load_tokenizer

    args = grpo_config("dapo", overlong_penalty_weight=0.5, **cpu_grpo_kwargs)
    for _ in range(2):  # a second trainer from the same config must see the same, unextended weights
        trainer = GRPOLearner(
            model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
            args=args,
            train_dataset=toy_prompt_dataset,
            processing_class=load_tokenizer(tiny_model_dir),
        )
        assert trainer.reward_weights.tolist() == [1.0, 0.5]
    assert args.reward_weights is None
