"""S-GRPO (arXiv 2504.20834): token selection, the corrected ratio's gradient, the truncating variant, training."""

from __future__ import annotations

import math

import pytest
import torch

from learners.s_grpo import SGRPOConfig, SGRPOTrainer, s_grpo_token_mask


def _mod3_reward(prompts, completions, **kwargs):
    return [float(len(c[0]["content"]) % 3) for c in completions]


def _mask(lengths, width):
    return (torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).long()


def test_first_alpha_always_then_budget():
    completion_mask = _mask([30, 5, 0, 12], 30)
    gen = torch.Generator().manual_seed(0)
    selected = s_grpo_token_mask(completion_mask, always_keep=4, max_tokens=10, keep_probability=0.5, generator=gen)
    assert selected.dtype == completion_mask.dtype
    assert (selected <= completion_mask).all()  # never a padding token
    assert (selected[:, :4] == completion_mask[:, :4]).all()  # first α real tokens
    assert (selected.sum(1) <= 10).all()
    assert 4 <= selected[1].sum() <= 5
    assert selected[2].sum() == 0


def test_extreme_probabilities_are_deterministic():
    completion_mask = _mask([30, 7], 30)
    none = s_grpo_token_mask(completion_mask, always_keep=5, max_tokens=20, keep_probability=0.0)
    assert none.sum(1).tolist() == [5, 5] and none[0, :5].all()
    every = s_grpo_token_mask(completion_mask, always_keep=5, max_tokens=20, keep_probability=1.0)
    assert every.sum(1).tolist() == [20, 7] and every[0, :20].all()
    # k < α: the budget wins
    assert s_grpo_token_mask(completion_mask, 10, 3, 1.0).sum(1).tolist() == [3, 3]


def test_later_tokens_are_kept_at_rate_p():
    completion_mask = _mask([1000] * 200, 1000)
    gen = torch.Generator().manual_seed(1)
    selected = s_grpo_token_mask(
        completion_mask, always_keep=10, max_tokens=10_000, keep_probability=0.3, generator=gen
    )
    later = selected[:, 10:].float()
    n = later.numel()
    # Binomial(n, 0.3): 5 standard deviations.
    assert abs(later.mean().item() - 0.3) < 5 * math.sqrt(0.3 * 0.7 / n)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"always_keep": -1, "max_tokens": 5, "keep_probability": 0.5}, "always_keep"),
        ({"always_keep": 1, "max_tokens": 0, "keep_probability": 0.5}, "max_tokens"),
        ({"always_keep": 1, "max_tokens": 5, "keep_probability": 1.5}, "keep_probability"),
    ],
)
def test_bad_selection_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        s_grpo_token_mask(_mask([3], 3), **kwargs)


@pytest.mark.parametrize(
    "field, value",
    [("always_keep_tokens", -1), ("max_loss_tokens", 0), ("keep_probability", 2.0), ("max_buckets", 0)],
)
def test_config_validation(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        SGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **{field: value})


@pytest.mark.slow
def test_corrected_ratio_gives_the_policy_gradient(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, synthetic_loss_batch
):
    """With π_old frozen at the sampling policy, the loss gradient is −(1/G)Σ_i A_i/|S_i| Σ_{t∈S_i} ∇log π.

    The printed Eq. 5 (ratio π_θ/π_θ, no grad) would give a zero gradient at beta = 0.
    """
    trainer = make_trainer(SGRPOTrainer, SGRPOConfig(**cpu_grpo_kwargs), reward_funcs=_mod3_reward)
    trainer.current_gradient_accumulation_steps = 1
    model = trainer.model
    inputs = synthetic_loss_batch(seed=3)
    params = [p for p in model.parameters() if p.requires_grad]

    model.zero_grad()
    trainer._compute_loss(model, dict(inputs)).backward()
    loss_grad = torch.cat([p.grad.flatten() for p in params])

    model.zero_grad()
    input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    logits = model(input_ids=input_ids, attention_mask=attention).logits[:, 4:-1] / trainer.temperature
    logps = torch.log_softmax(logits, -1).gather(-1, inputs["completion_ids"].unsqueeze(-1)).squeeze(-1)
    mask = (inputs["completion_mask"] * inputs["tool_mask"]).float()
    per_row = (logps * mask).sum(1) / mask.sum(1).clamp(min=1)
    (-(inputs["advantages"] * per_row).mean()).backward()
    reference = torch.cat([p.grad.flatten() for p in params])
    assert reference.abs().max() > 1e-4
    torch.testing.assert_close(loss_grad, reference, rtol=1e-4, atol=1e-7)


@pytest.mark.slow
def test_truncating_variant_matches_mask_variant(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, synthetic_loss_batch
):
    results = []
    for truncate in (False, True):
        kwargs = dict(cpu_grpo_kwargs, truncate_after_last_selected=truncate)
        trainer = make_trainer(SGRPOTrainer, SGRPOConfig(**kwargs), reward_funcs=_mod3_reward)
        trainer.current_gradient_accumulation_steps = 1
        inputs = synthetic_loss_batch(seed=4)
        inputs["tool_mask"][:, 12:] = 0  # selected tokens end early: the tail is cut
        trainer.model.zero_grad()
        loss = trainer._compute_loss(trainer.model, inputs)
        loss.backward()
        results.append((loss.detach(), torch.cat([p.grad.flatten() for p in trainer.model.parameters()])))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("truncate", [False, True])
def test_two_training_steps(make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, truncate):
    cpu_grpo_kwargs.update(
        max_completion_length=24,
        always_keep_tokens=3,
        max_loss_tokens=8,
        keep_probability=0.3,
        truncate_after_last_selected=truncate,
    )
    trainer = make_trainer(SGRPOTrainer, SGRPOConfig(**cpu_grpo_kwargs), reward_funcs=_mod3_reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    logs = [e for e in trainer.state.log_history if "s_grpo/loss_token_frac" in e]
    assert logs and all(0 < e["s_grpo/loss_token_frac"] < 1 for e in logs)
    assert all(math.isfinite(e["loss"]) for e in trainer.state.log_history if "loss" in e)
    if truncate:
        assert all(e["loss/forward_token_frac"] < 1 for e in logs)
