"""PS-PPO (PS-PPO paper): cutoff sampling, strategies, Monte-Carlo unbiasedness on the tiny model, training steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from learners.ps_ppo import CUTOFF_STRATEGIES, PSPPOConfig, PSPPOTrainer, sample_cutoff_weights, strategy_weights
from learners.ps_ppo.survival import survival_probabilities


def test_cutoff_inclusion_frequency_is_survival_probability():
    xi = torch.tensor(survival_probabilities([4.0, 3.6, 3.0, 0.4, 0.3, 0.2], 3), dtype=torch.float32)
    n = 20000
    survival = xi.expand(n, 6).clone()
    weights = sample_cutoff_weights(survival, torch.full((n,), 6), torch.Generator().manual_seed(0))
    kept = weights > 0
    # kept tokens form a prefix and carry 1/ξ_t
    assert (kept[:, 1:] <= kept[:, :-1]).all()
    torch.testing.assert_close(weights[kept], (1 / survival)[kept])
    freq = kept.float().mean(0)
    tolerance = 5 * torch.sqrt(xi * (1 - xi) / n) + 1e-6  # 5 binomial standard deviations
    assert ((freq - xi).abs() <= tolerance).all()
    # the Horvitz-Thompson weights average to one per position
    assert ((weights.mean(0) - 1).abs() < 5 * torch.sqrt((1 / xi - 1) / n) + 1e-6).all()


def test_cutoff_never_reaches_padding():
    survival = torch.ones(3, 5)
    weights = sample_cutoff_weights(survival, torch.tensor([5, 2, 0]))
    assert weights.tolist() == [[1] * 5, [1, 1, 0, 0, 0], [0] * 5]


def test_uniform_strategy_is_uniform_cutoff_at_matched_budget():
    length = 255
    xi = survival_probabilities(strategy_weights("uniform", length), (length + 1) / 2, first_token_always=True)
    t = np.arange(1, length + 1)
    np.testing.assert_allclose(xi, (length - t + 1) / length, rtol=1e-10)


def test_strategies_spend_the_same_budget():
    rng = np.random.default_rng(0)
    proxy = rng.lognormal(size=300) * np.exp(-np.arange(300) / 60)
    for strategy in CUTOFF_STRATEGIES:
        xi = survival_probabilities(strategy_weights(strategy, 300, proxy), 40, first_token_always=True)
        assert xi.sum() == pytest.approx(40) and xi[0] == 1 and np.all(np.diff(xi) <= 1e-12)
    with pytest.raises(ValueError, match="needs the proxy"):
        strategy_weights("optimized", 10)
    with pytest.raises(ValueError, match="unknown cutoff strategy"):
        strategy_weights("median", 10, proxy)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"budget": 0.5}, "budget"),
        ({"budget": 1.0}, "first_token_always"),
        ({"cutoff_strategy": "oracle"}, "cutoff_strategy"),
        ({"min_survival": 0.0}, "min_survival"),
        ({"uncertainty_top_k": 0}, "uncertainty_top_k"),
        ({"loss_type": "vespo"}, "supports loss_type"),
        ({"loss_type": "grpo", "beta": 0.04}, "beta=0"),
        ({"importance_sampling_level": "sequence"}, "token-level"),
        ({"top_entropy_quantile": 0.2}, "token-level"),
    ],
)
def test_config_validation(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        PSPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **kwargs)


def test_config_defaults_follow_the_seed(tmp_path):
    config = PSPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none")
    assert (config.budget, config.uncertainty_top_k, config.epsilon) == (128.0, 16, 0.1)
    assert config.cutoff_strategy == "optimized" and config.loss_type == "dapo"


def _projected_gradients(trainer, make_loss, directions, repeats):
    """Projections of ``repeats`` gradients of ``make_loss()`` on fixed unit directions, shape (repeats, D)."""
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    out = []
    for _ in range(repeats):
        trainer.model.zero_grad()
        make_loss().backward()
        grad = torch.cat([p.grad.flatten() for p in params]).double()
        out.append(directions @ grad)
    return torch.stack(out)


@pytest.mark.slow
@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "bnpo"])
def test_truncated_reweighted_gradient_is_unbiased(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, synthetic_loss_batch, loss_type, monkeypatch
):
    """Mean of many truncated, 1/ξ-weighted gradients ≈ the full-sequence gradient.

    Tolerance: each projection of the sample mean onto a fixed direction is, by the CLT, normal around its
    expectation with standard error s/√N (s the sample std of the projections). Unbiasedness means every z-score
    (mean − full)/(s/√N) is N(0, 1); |z| < 4.5 over 3 directions fails by chance with probability < 2e-5.
    The same test on the naive estimator (truncation without 1/ξ) must fail: it is the negative control.
    """
    from trl import GRPOTrainer

    cpu_grpo_kwargs.update(loss_type=loss_type, budget=5, seed=11)
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    trainer.current_gradient_accumulation_steps = 1
    model = trainer.model
    inputs = synthetic_loss_batch(rows=6, width=18, seed=5)
    inputs.pop("tool_mask")
    gen = torch.Generator().manual_seed(2)
    logps = trainer.per_token_logps(model, inputs)
    inputs["old_per_token_logps"] = logps + 0.15 * torch.randn(logps.shape, generator=gen)  # some ratios clip
    lengths = inputs["completion_mask"].sum(1)
    survival = torch.ones(6, 18)
    rng = np.random.default_rng(3)
    for i, length in enumerate(lengths.tolist()):
        w = rng.lognormal(size=length) * np.exp(-np.arange(length) / 6)
        survival[i, :length] = torch.tensor(survival_probabilities(w, min(5, length), first_token_always=True))
    inputs["cutoff_survival"] = survival

    params = [p for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    GRPOTrainer._compute_loss(trainer, model, {k: v for k, v in inputs.items() if k != "cutoff_survival"}).backward()
    full = torch.cat([p.grad.flatten() for p in params]).double()
    directions = torch.randn(3, full.numel(), generator=gen, dtype=torch.float64)
    directions[0] = full
    directions = directions / directions.norm(dim=1, keepdim=True)
    target = directions @ full

    repeats = 80
    samples = _projected_gradients(trainer, lambda: trainer._compute_loss(model, dict(inputs)), directions, repeats)
    z = (samples.mean(0) - target) / (samples.std(0) / math.sqrt(repeats))
    assert z.abs().max() < 4.5, z

    import learners.ps_ppo.trainer as ps_ppo

    original = ps_ppo.sample_cutoff_weights
    monkeypatch.setattr(ps_ppo, "sample_cutoff_weights", lambda *a: (original(*a) > 0).float())
    naive = _projected_gradients(trainer, lambda: trainer._compute_loss(model, dict(inputs)), directions, 20)
    z_naive = (naive.mean(0) - target) / (naive.std(0) / math.sqrt(20))
    assert z_naive.abs().max() > 4.5, z_naive


@pytest.mark.slow
@pytest.mark.parametrize(
    "strategy, loss_type", [("optimized", "dapo"), ("uniform", "grpo"), ("time_prior", "bnpo"), ("heuristic", "dapo")]
)
def test_two_training_steps(make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, strategy, loss_type):
    cpu_grpo_kwargs.update(max_completion_length=24, budget=4, cutoff_strategy=strategy, loss_type=loss_type)
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    logs = [e for e in trainer.state.log_history if "loss/forward_token_frac" in e]
    assert len(logs) == 2
    for entry in logs:
        assert math.isfinite(entry["loss"])
        assert 0 < entry["ps_ppo/expected_kept_frac"] < 1
        assert entry["loss/forward_token_frac"] < 1


@pytest.mark.slow
def test_no_truncation_when_budget_covers_the_completions(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs
):
    cpu_grpo_kwargs.update(max_completion_length=12, budget=128, skip_zero_advantage=False)
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    trainer.train()
    logs = [e for e in trainer.state.log_history if "ps_ppo/expected_kept_frac" in e]
    assert logs and all(e["ps_ppo/expected_kept_frac"] == 1 and e["ps_ppo/kept_token_frac"] == 1 for e in logs)


@pytest.mark.slow
def test_shape_batch_survival_matches_the_design_pipeline(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, monkeypatch
):
    """Seam 1's ξ = solver(γ̄·ū) for a mixed group; a homogeneous group is not even run through the proxy pass."""
    import learners.ps_ppo.trainer as ps_ppo
    from learners.core.trainer import Rollout
    from learners.ps_ppo.design_weights import design_weights, head_statistics, reward_uncertainty_bound

    cpu_grpo_kwargs.update(budget=4, min_survival=1e-3)
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    gen = torch.Generator().manual_seed(0)
    rows, width = 8, 16
    lengths = torch.tensor([16, 12, 9, 16, 14, 16, 10, 7])
    completion_mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
    batch = {
        "prompt_ids": torch.randint(3, 80, (rows, 5), generator=gen),
        "prompt_mask": torch.ones(rows, 5, dtype=torch.long),
        "completion_ids": torch.randint(3, 80, (rows, width), generator=gen) * completion_mask,
        "completion_mask": completion_mask,
        "advantages": torch.randn(rows, generator=gen),
    }
    rewards = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])  # group 0 all failed, group 1 mixed
    rollout = Rollout(rewards, rewards[:, None], 4, slice(0, rows), [{}] * rows)
    seen_rows = []
    original = ps_ppo.head_statistics
    monkeypatch.setattr(
        ps_ppo, "head_statistics", lambda *a, **kw: seen_rows.append(a[1].size(0)) or original(*a, **kw)
    )
    survival = trainer.shape_batch(dict(batch), rollout)["cutoff_survival"]
    assert seen_rows == [4]  # only the mixed group's rows

    stats = head_statistics(
        trainer.model,
        batch["prompt_ids"][4:],
        batch["prompt_mask"][4:],
        batch["completion_ids"][4:],
        completion_mask[4:],
        temperature=trainer.temperature,
        top_k=16,
    )
    alive = completion_mask[4:].float()
    bound = reward_uncertainty_bound(stats[1], stats[2], rewards[4:] >= 1, alive, 4)
    w = design_weights(stats[0], bound, alive, 4)[0].double().numpy()
    expected = survival_probabilities(w, 4, floor=1e-3, first_token_always=True)
    np.testing.assert_allclose(survival[4].numpy(), expected, rtol=1e-4, atol=1e-6)
    assert (survival[4:] == survival[4]).all()
    # Homogeneous group: zero weights, the budget spread evenly after the first token.
    np.testing.assert_allclose(survival[0].numpy(), [1.0] + [3 / 15] * 15, rtol=1e-6)

    # No mixed group at all: no proxy pass, every group spreads its budget evenly.
    seen_rows.clear()
    homogeneous = Rollout(rewards * 0, rewards[:, None] * 0, 4, slice(0, rows), [{}] * rows)
    survival = trainer.shape_batch(dict(batch), homogeneous)["cutoff_survival"]
    assert seen_rows == []
    np.testing.assert_allclose(survival[4].numpy(), [1.0] + [3 / 15] * 15, rtol=1e-6)

    # Two mixed groups, the second within the budget (not truncated): only the first is run through the proxies.
    seen_rows.clear()
    short = dict(batch, completion_mask=completion_mask.clone())
    short["completion_mask"][4:, 10:] = 0
    both_mixed = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    trainer.args.budget = 10
    rollout = Rollout(both_mixed, both_mixed[:, None], 4, slice(0, rows), [{}] * rows)
    survival = trainer.shape_batch(short, rollout)["cutoff_survival"]
    assert seen_rows == [4]
    assert (survival[4:] == 1).all()

    # A budget just above ξ_1 = 1 with a floor too high for it: the floor is lowered to fit what is left.
    trainer.args.budget, trainer.args.min_survival = 1.5, 0.1
    survival = trainer.shape_batch(dict(batch), rollout)["cutoff_survival"]
    torch.testing.assert_close(survival.sum(1), torch.full((rows,), 1.5))


@pytest.mark.slow
def test_floor_token_share_counts_gradient_tokens_at_the_floor(make_trainer, cpu_grpo_kwargs, monkeypatch):
    """``ps_ppo/floor_token_frac``: the share of gradient-carrying tokens (rows with A ≠ 0) whose ξ sits at the
    floor. Planted weights: positive on the first 6 steps of a group, 0 after, so (budget 4, ξ_1 = 1) steps 6-15 sit
    at ε = 1e-3 (the 3 left after ξ_1 spread over the 5 positive steps, each ≈ 0.6 < 1)."""
    import learners.ps_ppo.trainer as ps_ppo
    from learners.core.trainer import Rollout

    cpu_grpo_kwargs.update(budget=4, min_survival=1e-3, cutoff_strategy="uniform")
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    planted = np.array([1.0] * 6 + [0.0] * 10)
    monkeypatch.setattr(ps_ppo, "strategy_weights", lambda strategy, length, proxy: planted[:length])
    rows, width = 8, 16
    lengths = torch.tensor([16, 12, 9, 16, 14, 16, 10, 7])
    completion_mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
    batch = {
        "prompt_ids": torch.full((rows, 5), 3),
        "prompt_mask": torch.ones(rows, 5, dtype=torch.long),
        "completion_ids": torch.full((rows, width), 5) * completion_mask,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([0.0, 0.0, 0.0, 0.0, 1.2, -0.4, 0.3, -1.1]),  # group 0 carries no gradient
    }
    rewards = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    rollout = Rollout(rewards, rewards[:, None], 4, slice(0, rows), [{}] * rows)
    survival = trainer.shape_batch(batch, rollout)["cutoff_survival"]
    assert torch.allclose(survival[4, 6:], torch.full((10,), 1e-3))
    # rows 4-7 (lengths 14, 16, 10, 7) have 8 + 10 + 4 + 1 tokens at or after step 6, of 47 valid tokens
    assert trainer._metrics["train"]["ps_ppo/floor_token_frac"][-1] == pytest.approx(23 / 47)

    # A budget that covers every completion: no floor, no token at it.
    trainer.args.budget = 32
    trainer.shape_batch(batch, rollout)
    assert trainer._metrics["train"]["ps_ppo/floor_token_frac"][-1] == 0.0
