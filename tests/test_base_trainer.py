"""The base trainer: seams are called, weights move, group statistics and loss masks behave."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.slow


def _length_reward(prompts, completions, **kwargs):
    """Test-only reward: varies within groups so that advantages are non-zero."""
    return [float(len(c[0]["content"]) % 3) for c in completions]


def _constant_reward(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


def _trainer(cls, model_dir, dataset, kwargs, reward_funcs=_length_reward, **extra):
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from learners.tiny import load_tokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    return cls(
        model=model,
        reward_funcs=reward_funcs,
        args=GRPOConfig(**kwargs),
        train_dataset=dataset,
        processing_class=load_tokenizer(model_dir),
        **extra,
    )


def test_two_grpo_steps_change_the_weights(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.base import CountdownGRPOTrainer

    trainer = _trainer(CountdownGRPOTrainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(changed) == len(before)
    logs = trainer.state.log_history
    assert any("countdown/homogeneous_group_frac" in entry for entry in logs)
    assert all(torch.isfinite(torch.tensor(e["loss"])) for e in logs if "loss" in e)


def test_seams_see_rollout_and_micro_batches(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.base import CountdownGRPOTrainer

    seen = {"shape": [], "select": 0}

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            seen["shape"].append(rollout)
            # drop every second row from the loss
            mask = self.loss_mask(batch).clone()
            mask[1::2] = 0
            self.set_loss_mask(batch, mask)
            return batch

        def select_loss_tokens(self, inputs):
            seen["select"] += 1
            assert "tool_mask" in inputs
            return inputs

    trainer = _trainer(Probe, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs)
    trainer.train()
    assert len(seen["shape"]) == 2 and seen["select"] == 2
    rollout = seen["shape"][0]
    assert rollout.rewards.shape == (8,) and rollout.num_generations == 4 and rollout.num_groups == 2
    # rows of one group share a prompt
    numbers = [tuple(row["numbers"]) for row in rollout.inputs]
    assert numbers[:4] == [numbers[0]] * 4 and numbers[4:] == [numbers[4]] * 4
    assert rollout.puzzles is not None and rollout.puzzles[0].numbers == numbers[0]
    # rewards are the test reward's values
    assert set(rollout.rewards.tolist()) <= {0.0, 1.0, 2.0}


def test_recount_items_follows_the_loss_mask(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.base import CountdownGRPOTrainer

    counts = []

    class Drop(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            full = int(self.loss_mask(batch).sum())
            self.set_loss_mask(batch, torch.zeros_like(batch["completion_mask"]))
            counts.append(full)
            return batch

    cpu_grpo_kwargs.update(loss_type="dapo", max_steps=1)
    trainer = _trainer(Drop, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert counts[0] > 0
    # no loss tokens: zero gradient, finite loss; weight decay is 0 by default, so nothing moves
    logs = [e for e in trainer.state.log_history if "loss" in e]
    assert logs and logs[0]["loss"] == 0.0
    assert all(torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())


def test_all_equal_rewards_give_zero_advantage_and_finite_loss(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.base import CountdownGRPOTrainer

    advantages = []

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            advantages.append(batch["advantages"].clone())
            assert bool(rollout.homogeneous_groups().all())
            return batch

    trainer = _trainer(Probe, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, reward_funcs=_constant_reward)
    trainer.train()
    assert all(torch.count_nonzero(a) == 0 for a in advantages)
    logs = [e for e in trainer.state.log_history if "loss" in e]
    assert logs and all(torch.isfinite(torch.tensor(e["loss"])) for e in logs)
    assert any(e.get("countdown/homogeneous_group_frac") == 1.0 for e in trainer.state.log_history)
