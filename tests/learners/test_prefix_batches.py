"""Bucketed prefix batches: optimal bucket plans, row/column cuts, and loss equivalence with TRL's full loss."""

from __future__ import annotations

import itertools

import pytest
import torch

from learners.core.prefix_batches import bucket_weight, cut_batch, kept_lengths, plan_buckets, prefix_loss


def test_kept_lengths_is_one_past_last_nonzero():
    mask = torch.tensor([[1, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
    assert kept_lengths(mask).tolist() == [4, 0, 5]
    assert kept_lengths(torch.tensor([[0.0, 0.5, 0.0]])).tolist() == [2]


def test_plan_buckets_hand_case():
    assert plan_buckets([5, 0, 100, 6, 98], prompt_width=0, max_buckets=2) == [([0, 3], 6), ([4, 2], 100)]
    assert plan_buckets([5, 0, 100, 6, 98], prompt_width=0, max_buckets=1) == [([0, 3, 4, 2], 100)]
    assert plan_buckets([0, 0], prompt_width=3, max_buckets=4) == []
    # Equal-rows plans (several processes): sizes depend only on the row count; empty rows stay in.
    assert plan_buckets([5, 0, 100, 6, 98], 0, 2, equal_rows=True) == [([1, 0], 5), ([3, 4, 2], 100)]
    assert plan_buckets([0, 0, 0], 0, 4, equal_rows=True) == [([0], 1), ([1], 1), ([2], 1)]
    with pytest.raises(ValueError, match="max_buckets"):
        plan_buckets([1], 0, 0)


def _cost(buckets, prompt_width):
    return sum(len(rows) * (prompt_width + width) for rows, width in buckets)


@pytest.mark.parametrize("seed", range(6))
def test_plan_buckets_is_optimal_against_enumeration(seed):
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 40, (7,), generator=gen).tolist()
    prompt_width, max_buckets = 5, 3
    plan = plan_buckets(lengths, prompt_width, max_buckets)
    rows = sorted(i for i, n in enumerate(lengths) if n > 0)
    assert sorted(i for bucket, _ in plan for i in bucket) == rows
    assert all(width == max(lengths[i] for i in bucket) for bucket, width in plan)
    # Brute force over every assignment of rows to ≤ max_buckets labelled buckets.
    best = float("inf")
    for labels in itertools.product(range(max_buckets), repeat=len(rows)):
        cost = 0
        for b in range(max_buckets):
            members = [r for r, label in zip(rows, labels, strict=True) if label == b]
            if members:
                cost += len(members) * (prompt_width + max(lengths[r] for r in members))
        best = min(best, cost)
    assert _cost(plan, prompt_width) == best


def test_cut_batch_slices_rows_and_completion_columns_only():
    inputs = {
        "prompt_ids": torch.arange(12).view(3, 4),
        "completion_ids": torch.arange(15).view(3, 5),
        "completion_mask": torch.ones(3, 5),
        "advantages": torch.tensor([1.0, 2.0, 3.0]),
        "old_per_token_logps": torch.zeros(3, 5),
        "num_items_in_batch": torch.tensor(15),
        "extra": torch.zeros(3, 5),
    }
    part = cut_batch(inputs, [2, 0], 2)
    assert part["prompt_ids"].tolist() == [[8, 9, 10, 11], [0, 1, 2, 3]]
    assert part["completion_ids"].tolist() == [[10, 11], [0, 1]]
    assert part["old_per_token_logps"].shape == (2, 2)
    assert part["advantages"].tolist() == [3.0, 1.0]
    assert part["extra"].shape == (2, 5)  # unknown per-row tensors keep their columns
    assert part["num_items_in_batch"] is inputs["num_items_in_batch"]


def test_bucket_weight_rules():
    assert bucket_weight("dapo", 2, 8, 3.0, 10.0) == 1.0
    assert bucket_weight("grpo", 2, 8, 3.0, 10.0) == 0.25
    assert bucket_weight("bnpo", 2, 8, 3.0, 10.0) == 0.3
    with pytest.raises(ValueError, match="does not support"):
        bucket_weight("mystery", 1, 1, 1.0, 1.0)


def _build_trainer(tiny_model_dir, dataset, kwargs):
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from learners.core.trainer import CountdownGRPOTrainer
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    return CountdownGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        reward_funcs=lambda prompts, completions, **kw: [0.0] * len(prompts),
        args=GRPOConfig(**kwargs),
        train_dataset=dataset,
        processing_class=load_tokenizer(tiny_model_dir),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "loss_type, equal_rows",
    [("dapo", False), ("grpo", False), ("bnpo", False), ("dr_grpo", False), ("luspo", False), ("bnpo", True)],
)
def test_prefix_loss_equals_full_loss_and_gradient(
    tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, synthetic_loss_batch, loss_type, equal_rows
):
    from trl import GRPOTrainer

    cpu_grpo_kwargs.update(loss_type=loss_type, epsilon=0.1)
    trainer = _build_trainer(tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs)
    trainer.current_gradient_accumulation_steps = 1
    model = trainer.model
    inputs = synthetic_loss_batch()
    inputs["tool_mask"][3] = 0  # one row without loss tokens
    with torch.no_grad():
        logps = trainer.per_token_logps(model, inputs)
    inputs["old_per_token_logps"] = logps + 0.2 * torch.randn(logps.shape, generator=torch.Generator().manual_seed(1))

    def loss_and_grad(fn):
        model.zero_grad()
        loss = fn()
        loss.backward()
        return loss.detach(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    full_loss, full_grad = loss_and_grad(lambda: GRPOTrainer._compute_loss(trainer, model, dict(inputs)))
    stats = {}

    def bucketed():
        loss, s = prefix_loss(
            lambda m, part: GRPOTrainer._compute_loss(trainer, m, part), model, inputs, loss_type, 3, equal_rows
        )
        stats.update(s)
        return loss

    cut_loss, cut_grad = loss_and_grad(bucketed)
    torch.testing.assert_close(cut_loss, full_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(cut_grad, full_grad, rtol=1e-4, atol=1e-6)
    assert stats["tokens"] < stats["full_tokens"] and 1 <= stats["buckets"] <= 3
